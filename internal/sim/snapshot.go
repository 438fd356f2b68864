package sim

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Snapshot is what can be observed of a cloud at one moment, one entry a
// thing: each host's files (type, mode, owner, content hash), packages
// (version, hold), units (state and job counts), kernel modules, mounts,
// host name, disks (formats, file system), and each cluster's objects
// (kind, namespace, name, resourceVersion) and etcd members. Two
// snapshots taken around something that must change nothing (a plan)
// are equal; [Snapshot.Diff] says how they are not.
type Snapshot map[string]string

// Snapshot takes a snapshot of every live host and every cluster.
func (c *Cloud) Snapshot(ctx context.Context) (Snapshot, error) {
	s := Snapshot{}
	for _, h := range c.Hosts() {
		if err := h.snapshot(s); err != nil {
			return nil, err
		}
	}
	for i, cl := range c.kube.Clusters() {
		if err := snapshotCluster(ctx, s, fmt.Sprintf("cluster%d", i), cl.API); err != nil {
			return nil, err
		}
		members, err := cl.EtcdMembers(ctx)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			s[fmt.Sprintf("cluster%d etcd %v", i, m.Name)] = fmt.Sprintf("%+v", m)
		}
	}
	return s, nil
}

// Diff returns the differences from s to after, sorted: "+ KEY: VALUE" for
// what after has and s had not, "- KEY: VALUE" for what s had and after
// has not, "~ KEY: OLD -> NEW" for what changed.
func (s Snapshot) Diff(after Snapshot) []string {
	var out []string
	for k, v := range after {
		old, ok := s[k]
		switch {
		case !ok:
			out = append(out, "+ "+k+": "+v)
		case old != v:
			out = append(out, "~ "+k+": "+old+" -> "+v)
		}
	}
	for k, v := range s {
		if _, ok := after[k]; !ok {
			out = append(out, "- "+k+": "+v)
		}
	}
	sort.Strings(out)
	return out
}

// snapshot adds h's state to s, under keys that start with its name.
func (h *Host) snapshot(s Snapshot) error {
	name := h.Resource
	if err := snapshotFS(s, name, h.FS(), "/"); err != nil {
		return fmt.Errorf("sim: snapshot of %s: %w", name, err)
	}
	m := h.Machine
	for _, p := range m.Packages() {
		s[name+" package "+p] = fmt.Sprintf("%s held=%v", m.Version(p), m.Held(p))
	}
	for unit, st := range m.Services() {
		s[name+" unit "+unit] = fmt.Sprintf("%+v", st)
	}
	s[name+" modules"] = strings.Join(m.LoadedModules(), " ")
	for _, mt := range m.Mounts() {
		s[name+" mount "+mt.Target] = fmt.Sprintf("%+v", mt)
	}
	s[name+" hostname"] = m.Hostname()
	s[name+" daemon-reloads"] = fmt.Sprint(m.DaemonReloads())
	s[name+" apt-updates"] = fmt.Sprint(m.AptUpdates())
	for dev, d := range h.Disks {
		s[name+" disk "+dev] = fmt.Sprintf("formats=%d fs=%s", d.Formats(), d.FSType())
	}
	return nil
}

// snapshotFS adds every file under dir of f to s.
func snapshotFS(s Snapshot, host string, f *sshtest.FS, dir string) error {
	entries, err := f.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		fi, err := f.Lstat(p)
		if err != nil {
			return err
		}
		uid, gid := sshtest.Owner(fi)
		desc := fmt.Sprintf("%v %d:%d", fi.Mode(), uid, gid)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := f.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := f.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		s[host+" file "+p] = desc
		if fi.IsDir() {
			if err := snapshotFS(s, host, f, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// snapshotKinds are the kinds of objects a snapshot lists: those the
// SDK's steps create, change or delete (nodes and their labels and
// taints, the VIM's service account, secret and binding, bootstrap
// tokens, the kubeadm-certs secret, the CNI's and the PVs' objects).
var snapshotKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Node"),
	corev1.SchemeGroupVersion.WithKind("Namespace"),
	corev1.SchemeGroupVersion.WithKind("Pod"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	corev1.SchemeGroupVersion.WithKind("PersistentVolume"),
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
}

// snapshotCluster adds the objects of api to s under prefix.
func snapshotCluster(ctx context.Context, s Snapshot, prefix string, api kube.API) error {
	for _, gvk := range snapshotKinds {
		objs, err := api.List(ctx, gvk, "")
		if err != nil {
			return fmt.Errorf("sim: snapshot of %s: listing %s: %w", prefix, gvk.Kind, err)
		}
		for _, o := range objs {
			key := strings.Join(slices.DeleteFunc([]string{prefix, gvk.Kind, o.GetNamespace(), o.GetName()}, func(x string) bool { return x == "" }), " ")
			s[key] = o.GetResourceVersion()
		}
	}
	return nil
}

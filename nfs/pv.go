package nfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/system"
)

// OwnerAnnotation is the annotation [RegisterPV] puts on each
// PersistentVolume it registers: the VNF instance's ID. [CheckPVsNotInUse]
// and [DeletePVs] act only on PersistentVolumes that carry it with the
// instance's ID, and RegisterPV refuses to take over one of the same name
// that does not: the cluster's other PersistentVolumes are never touched.
const OwnerAnnotation = "mgmtkit.io/vnf-instance"

// PV is a PersistentVolume manifest of pv_registration_params, read from
// the VNF package and checked by [ReadPV].
type PV struct {
	// Name is the PersistentVolume's metadata.name.
	Name string
	// Path is its spec.nfs.path, clean: the exported directory it mounts.
	Path string
	// File is the manifest's path in the VNF package.
	File string
	// object is the manifest as decoded, every field kept.
	object map[string]any
}

// ReadPV reads the PersistentVolume manifest file from the VNF package and
// checks it: one YAML (or JSON) document, a v1 PersistentVolume with a
// metadata.name Kubernetes accepts, and an spec.nfs volume whose path is
// absolute. spec.nfs.server may be anything (the spec's samples hold the
// placeholder 0.0.0.0): [PV.Manifest] replaces it. Its error says what is
// wrong with the manifest, without the file's name (the caller knows it).
func ReadPV(pkg *lcm.Package, file string) (PV, error) {
	if pkg == nil {
		return PV{}, errors.New("no VNF package to read it from")
	}
	data, err := pkg.ReadFile(file)
	if err != nil {
		return PV{}, err
	}
	docs, err := yamlDocuments(data)
	switch {
	case err != nil:
		return PV{}, err
	case len(docs) == 0:
		return PV{}, errors.New("holds no object: want one PersistentVolume")
	case len(docs) > 1:
		return PV{}, fmt.Errorf("holds %d YAML documents: want one PersistentVolume", len(docs))
	}
	var obj map[string]any
	if err := yaml.Unmarshal(docs[0], &obj); err != nil {
		return PV{}, fmt.Errorf("is not a YAML object: %v", err)
	}
	var pv corev1.PersistentVolume
	if err := yaml.Unmarshal(docs[0], &pv); err != nil {
		return PV{}, fmt.Errorf("is not a PersistentVolume: %v", err)
	}
	if pv.APIVersion != "v1" || pv.Kind != "PersistentVolume" {
		return PV{}, fmt.Errorf("is a %s: want apiVersion v1, kind PersistentVolume", describeKind(pv.APIVersion, pv.Kind))
	}
	if err := kubeapi.CheckObjectName("metadata.name", pv.Name); err != nil {
		return PV{}, err
	}
	if pv.Namespace != "" {
		return PV{}, fmt.Errorf("sets metadata.namespace %q: a PersistentVolume belongs to no namespace", pv.Namespace)
	}
	src := pv.Spec.NFS
	if src == nil {
		return PV{}, errors.New("has no spec.nfs: want an NFS PersistentVolume on the storage server's exports")
	}
	if !path.IsAbs(src.Path) {
		return PV{}, fmt.Errorf("spec.nfs.path must be an absolute directory, got %q", src.Path)
	}
	return PV{Name: pv.Name, Path: path.Clean(src.Path), File: file, object: obj}, nil
}

// describeKind names what a manifest is, for an error.
func describeKind(apiVersion, kind string) string {
	switch {
	case kind == "":
		return "object without kind"
	case apiVersion == "":
		return kind + " without apiVersion"
	}
	return apiVersion + " " + kind
}

// yamlDocuments splits a YAML stream as kubectl does
// (k8s.io/apimachinery/pkg/util/yaml's YAMLReader) and drops the
// documents that hold nothing (empty, or comments only).
func yamlDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("document %d is not YAML: %v", len(docs)+1, err)
		}
		if v != nil {
			docs = append(docs, b)
		}
	}
}

// Manifest returns the PersistentVolume to apply, as JSON: the package's
// manifest with spec.nfs.server set to server (the first fixed IP of
// nfs_server_cp) and [OwnerAnnotation] set to instance. The manifest is
// changed as data, never as text: a host name in spec.nfs.server is
// replaced like an address (Tacker's sed rewrites dotted quads only), and
// nothing else of it moves.
func (p PV) Manifest(server, instance string) ([]byte, error) {
	if p.object == nil {
		return nil, errors.New("nfs: PV not read with ReadPV")
	}
	obj := deepCopy(p.object)
	spec, _ := obj["spec"].(map[string]any)
	src, _ := spec["nfs"].(map[string]any)
	if src == nil {
		return nil, fmt.Errorf("nfs: %s has no spec.nfs", p.File)
	}
	src["server"] = server
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[OwnerAnnotation] = instance
	return json.Marshal(obj)
}

// deepCopy copies a decoded JSON value.
func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m) // a decoded object always encodes
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// PVOptions say which VNF the PersistentVolumes belong to and how long to
// wait for them.
type PVOptions struct {
	// Instance is the VNF instance's ID, recorded in [OwnerAnnotation].
	// Required.
	Instance string
	// Timeout bounds each wait: for a registered PersistentVolume to be
	// Available or Bound, for a deleted one to be gone;
	// [DefaultPVTimeout] when zero.
	Timeout time.Duration
}

// DefaultPVTimeout is how long [RegisterPV] waits for a PersistentVolume
// to become Available and [DeletePVs] for one to be gone, unless
// [PVOptions.Timeout] says otherwise. The persistentvolume-binder syncs
// a new volume at once; a minute leaves room for a busy controller
// manager.
const DefaultPVTimeout = time.Minute

// pvPollInterval is how often the waits read the PersistentVolume.
const pvPollInterval = time.Second

// RegisterPV makes the cluster hold the PersistentVolume pv on the NFS
// server at address server (its spec.nfs.server replaced, see
// [PV.Manifest]), through k (kubectl on a control-plane node, as apply
// and diff), and waits, at most opts.Timeout, until its phase is
// Available or Bound (the persistentvolume-binder sets Available at
// once; a claim that was waiting for it binds it).
//
// Run again, it changes nothing. A PersistentVolume of that name that
// this VNF did not register (no [OwnerAnnotation] with opts.Instance) is
// an error and stays as it is. One of ours that points at another
// server (the storage server was healed at a new address and its
// heal_start did not delete it) cannot be changed in place, its source
// being immutable: unless it is Bound, it is deleted and registered
// again; Bound, it is an error naming its claim. One that is Released
// (its claim was deleted under the Retain policy) stays Released, and
// the result says so: the data on it is the claim owner's, and making
// it Available again (deleting spec.claimRef) is theirs to decide.
func RegisterPV(ctx context.Context, k kubeapi.Kubectl, pv PV, server string, opts PVOptions) (lcm.Result, error) {
	if opts.Instance == "" {
		return lcm.Unchanged, errors.New("nfs: RegisterPV: PVOptions.Instance is required")
	}
	manifest, err := pv.Manifest(server, opts.Instance)
	if err != nil {
		return lcm.Unchanged, err
	}
	res := lcm.Unchanged
	cur, err := getPV(ctx, k, pv.Name)
	if err != nil {
		return lcm.Unchanged, err
	}
	if cur != nil {
		if owner := cur.Annotations[OwnerAnnotation]; owner != opts.Instance {
			return lcm.Unchanged, fmt.Errorf("nfs: PersistentVolume %s exists and was not registered by this VNF (annotation %s is %q): it is left as it is", pv.Name, OwnerAnnotation, owner)
		}
		if src := cur.Spec.NFS; src == nil || src.Server != server || path.Clean(src.Path) != pv.Path {
			if cur.Status.Phase == corev1.VolumeBound {
				return lcm.Unchanged, fmt.Errorf("nfs: PersistentVolume %s points at %s and is Bound to %s: it cannot be moved to %s:%s while in use", pv.Name, nfsSource(cur), claimOf(cur), server, pv.Path)
			}
			r, err := deletePV(ctx, k, pv.Name, opts.timeout())
			if err != nil {
				return lcm.Unchanged, err
			}
			res = res.And(r)
		}
	}
	r, err := k.Apply(ctx, manifest)
	if err != nil {
		return res, fmt.Errorf("nfs: PersistentVolume %s: %w", pv.Name, err)
	}
	res = res.And(r)
	var phase corev1.PersistentVolumePhase
	if !res.Changed && cur != nil {
		// Nothing changed: the phase read before is the phase now.
		phase = cur.Status.Phase
	}
	switch phase {
	case corev1.VolumeAvailable, corev1.VolumeBound:
		return res, nil
	case corev1.VolumeReleased:
		return res.And(releasedNote(pv.Name)), nil
	}
	err = system.Wait(ctx, "PersistentVolume "+pv.Name+" to be Available", opts.timeout(), pvPollInterval, func(ctx context.Context) (bool, error) {
		cur, err := getPV(ctx, k, pv.Name)
		switch {
		case err != nil:
			return false, err
		case cur == nil:
			return false, fmt.Errorf("PersistentVolume %s is not there", pv.Name)
		}
		phase = cur.Status.Phase
		switch phase {
		case corev1.VolumeAvailable, corev1.VolumeBound, corev1.VolumeReleased:
			return true, nil
		case corev1.VolumeFailed:
			return false, fmt.Errorf("PersistentVolume %s is Failed: %s", pv.Name, cur.Status.Message)
		}
		return false, fmt.Errorf("PersistentVolume %s is %q", pv.Name, phase)
	})
	if err != nil {
		return res, fmt.Errorf("nfs: %w", err)
	}
	if phase == corev1.VolumeReleased {
		res = res.And(releasedNote(pv.Name))
	}
	return res, nil
}

// releasedNote says, in a result, why a PersistentVolume stays Released.
func releasedNote(name string) lcm.Result {
	return lcm.Result{Detail: "PersistentVolume " + name + " is Released: its claim was deleted and its data kept (Retain); delete its spec.claimRef to make it Available again"}
}

// timeout returns the waits' bound.
func (o PVOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultPVTimeout
}

// getPV returns the PersistentVolume called name, nil when there is none.
func getPV(ctx context.Context, k kubeapi.Kubectl, name string) (*corev1.PersistentVolume, error) {
	var pv corev1.PersistentVolume
	found, err := k.Get(ctx, &pv, "persistentvolume", "", name)
	if err != nil || !found {
		return nil, err
	}
	return &pv, nil
}

// nfsSource returns "server:path" of a PersistentVolume, or what it is
// instead.
func nfsSource(pv *corev1.PersistentVolume) string {
	if pv.Spec.NFS == nil {
		return "no NFS server"
	}
	return pv.Spec.NFS.Server + ":" + pv.Spec.NFS.Path
}

// claimOf names the claim a PersistentVolume is bound to, as
// "namespace/name".
func claimOf(pv *corev1.PersistentVolume) string {
	if ref := pv.Spec.ClaimRef; ref != nil {
		return "claim " + ref.Namespace + "/" + ref.Name
	}
	return "no claim"
}

// InUseError is [CheckPVsNotInUse]'s refusal: PersistentVolumes of the VNF
// that claims hold.
type InUseError struct {
	// Bound maps each PersistentVolume in use to its claim
	// ("namespace/name").
	Bound map[string]string
}

// Error names every PersistentVolume in use and its claim.
func (e *InUseError) Error() string {
	var parts []string
	for _, pv := range slices.Sorted(maps.Keys(e.Bound)) {
		parts = append(parts, fmt.Sprintf("PersistentVolume %s is in use (Bound to claim %s)", pv, e.Bound[pv]))
	}
	return "nfs: " + strings.Join(parts, "; ") + ": delete the pods and the claims that use them first"
}

// CheckPVsNotInUse reads the PersistentVolumes called names through k and
// fails with an [*InUseError] naming each that is Bound, with its claim,
// among those this VNF registered (opts.Instance in [OwnerAnnotation]);
// it changes nothing. Others of the same names, and names the cluster
// does not hold, are not its business. A PersistentVolume that is being
// deleted but still Bound counts as in use: the pv-protection finalizer
// (StorageObjectInUseProtection) keeps it until its claim is gone.
func CheckPVsNotInUse(ctx context.Context, k kubeapi.Kubectl, names []string, opts PVOptions) error {
	ours, err := ownPVs(ctx, k, names, opts)
	if err != nil {
		return err
	}
	bound := map[string]string{}
	for _, pv := range ours {
		if pv.Status.Phase == corev1.VolumeBound {
			claim := "?"
			if ref := pv.Spec.ClaimRef; ref != nil {
				claim = ref.Namespace + "/" + ref.Name
			}
			bound[pv.Name] = claim
		}
	}
	if len(bound) > 0 {
		return &InUseError{Bound: bound}
	}
	return nil
}

// ownPVs reads the PersistentVolumes called names (one kubectl call) and
// returns those this VNF registered.
func ownPVs(ctx context.Context, k kubeapi.Kubectl, names []string, opts PVOptions) ([]corev1.PersistentVolume, error) {
	if opts.Instance == "" {
		return nil, errors.New("nfs: PVOptions.Instance is required")
	}
	var list corev1.PersistentVolumeList
	if err := k.List(ctx, &list, "persistentvolume", "", kubeapi.ListOptions{}); err != nil {
		return nil, fmt.Errorf("nfs: listing PersistentVolumes: %w", err)
	}
	var ours []corev1.PersistentVolume
	for _, pv := range list.Items {
		if slices.Contains(names, pv.Name) && pv.Annotations[OwnerAnnotation] == opts.Instance {
			ours = append(ours, pv)
		}
	}
	return ours, nil
}

// DeletePVs deletes the PersistentVolumes called names that this VNF
// registered, each waited for until it is gone (at most opts.Timeout),
// after checking, as [CheckPVsNotInUse] does, that none is Bound: a Bound
// one would wait on its pv-protection finalizer until its claim is
// deleted, so it is refused up front, naming it and its claim. Names
// the cluster does not hold, or whose PersistentVolume another
// registered, are left alone. Released and Available ones go: the data
// stays on the storage server's volume.
func DeletePVs(ctx context.Context, k kubeapi.Kubectl, names []string, opts PVOptions) (lcm.Result, error) {
	if err := CheckPVsNotInUse(ctx, k, names, opts); err != nil {
		return lcm.Unchanged, err
	}
	ours, err := ownPVs(ctx, k, names, opts)
	if err != nil {
		return lcm.Unchanged, err
	}
	res := lcm.Unchanged
	for _, pv := range ours {
		r, err := deletePV(ctx, k, pv.Name, opts.timeout())
		res = res.And(r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// deletePV deletes one PersistentVolume and waits, at most timeout, for
// it to be gone.
func deletePV(ctx context.Context, k kubeapi.Kubectl, name string, timeout time.Duration) (lcm.Result, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := k.Delete(dctx, "persistentvolume", "", name)
	if err != nil {
		if dctx.Err() != nil && ctx.Err() == nil {
			return r, fmt.Errorf("nfs: PersistentVolume %s was not gone after %s (a finalizer holds it: is it still bound?): %w", name, timeout, err)
		}
		return r, fmt.Errorf("nfs: deleting PersistentVolume %s: %w", name, err)
	}
	return r, nil
}

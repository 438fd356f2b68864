package drivers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

// pvWorld is the pv-k8s-cluster spec's world: a Kubernetes cluster VNF
// with a storage server and its Cinder volume, managed by the cluster
// driver.
type pvWorld struct {
	t       *testing.T
	ctx     context.Context
	cloud   *sim.Cloud
	pkg     *lcm.Package
	cluster *sim.VNF
	req     *lcm.InstantiateVnfRequest
	driver  *drivers.ClusterDriver
	log     *bytes.Buffer
}

// newPV builds the world from req (the spec's sample made to work when
// nil) with pkg (the sample VNF package when nil); nothing runs on the
// VMs.
func newPV(t *testing.T, req *lcm.InstantiateVnfRequest, pkg *lcm.Package, shape sim.ClusterShape) *pvWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	log := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx = lcm.WithLogger(ctx, logger)
	cloud := sim.Start(t, sim.Options{})
	if req == nil {
		req = request(t, samples.InstantiatePVCluster)
	}
	if pkg == nil {
		pkg = lcm.NewPackage(samples.VNFPackage())
	}
	// The topology comes from the request's parameters (its logins),
	// or the sample's for a request under test that the driver refuses.
	topoReq := req
	if _, err := drivers.DecodeClusterParams(req.AdditionalParams, lcm.NewPackage(samples.VNFPackage())); err != nil {
		topoReq = request(t, samples.InstantiatePVCluster)
	}
	cluster := buildCluster(t, cloud, topoReq, shape)
	return &pvWorld{t: t, ctx: ctx, cloud: cloud, pkg: pkg, cluster: cluster, req: req, log: log,
		driver: &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(logger)}}}}
}

func (w *pvWorld) instantiate() (*lcm.HookResult, error) {
	return lcm.Invoke(w.ctx, w.driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: w.cluster.Instance(), Request: w.req, Package: w.pkg})
}

func (w *pvWorld) storage() *sim.Host { return w.cluster.HostsWithRole(lcm.RoleStorage)[0] }

// pvs returns the cluster's PersistentVolumes, read through the first
// master's kubectl.
func (w *pvWorld) pvs() map[string]corev1.PersistentVolume {
	w.t.Helper()
	m := w.cluster.HostsWithRole(lcm.RoleMaster)[0]
	h, err := w.cloud.Connect(w.ctx, m.Node(), m.Login.User, m.Login.Password)
	if err != nil {
		w.t.Fatal(err)
	}
	defer h.Close()
	var list corev1.PersistentVolumeList
	if err := (kubeapi.Kubectl{Host: h}).List(w.ctx, &list, "persistentvolume", "", kubeapi.ListOptions{}); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]corev1.PersistentVolume{}
	for _, pv := range list.Items {
		out[pv.Name] = pv
	}
	return out
}

// assertStorage checks the outcome of a storage setup: the volume
// formatted exactly once and mounted, the three exports listed by the
// storage server's exportfs, the three PersistentVolumes Available on
// its address, every node with the NFS client.
func (w *pvWorld) assertStorage() {
	w.t.Helper()
	s := w.storage()
	if d := s.Disks["/dev/vdb"]; d.Formats() != 1 || d.FSType() != "ext4" {
		w.t.Errorf("the volume: %d formats, %q", d.Formats(), d.FSType())
	}
	pvs := w.pvs()
	for _, name := range []string{"nfs-pv1", "nfs-pv2", "nfs-pv3"} {
		pv, ok := pvs[name]
		if !ok || pv.Status.Phase != corev1.VolumeAvailable || pv.Spec.NFS == nil || pv.Spec.NFS.Server != s.NICAddress {
			w.t.Errorf("PersistentVolume %s: present %v, %q, %+v; want Available on %s", name, ok, pv.Status.Phase, pv.Spec.NFS, s.NICAddress)
		}
	}
	for _, h := range append(w.cluster.HostsWithRole(lcm.RoleMaster), w.cluster.HostsWithRole(lcm.RoleWorker)...) {
		if !h.Machine.Installed(nfs.ClientPackage) {
			w.t.Errorf("%s has no %s", h.Resource, nfs.ClientPackage)
		}
	}
}

// TestThePVSampleGivesThreeAvailableVolumes: the spec's sample body
// (placeholders filled, export_to on the simulated network) through the
// cluster driver: three PersistentVolumes Available on the storage
// server's address; run again, the storage steps change nothing.
func TestThePVSampleGivesThreeAvailableVolumes(t *testing.T) {
	t.Parallel()
	w := newPV(t, nil, nil, sim.ClusterShape{Masters: 1, Workers: 1})
	if _, err := w.instantiate(); err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, w.log)
	}
	w.assertStorage()
	res, err := w.instantiate()
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{nfs.StepStorage, nfs.StepRegisterPV, nfs.StepClient} {
		for _, h := range stepHosts(res, step) {
			if h.Result.Changed {
				t.Errorf("rerun: %s changed %s: %s", step, h.Host, h.Result.Detail)
			}
		}
	}
	w.assertStorage()
}

// patched returns req with the values at the paths of edits replaced
// (samples.Patch).
func patched(t *testing.T, req *lcm.InstantiateVnfRequest, edits map[string]any) *lcm.InstantiateVnfRequest {
	t.Helper()
	body, err := json.Marshal(req)
	if err == nil {
		body, err = samples.Patch(body, edits)
	}
	var out lcm.InstantiateVnfRequest
	if err == nil {
		err = json.Unmarshal(body, &out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &out
}

// overlay returns the sample VNF package with files added.
func overlay(t *testing.T, files map[string]string) *lcm.Package {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(samples.VNFPackage(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(samples.VNFPackage(), p)
		m[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		m[name] = &fstest.MapFile{Data: []byte(content)}
	}
	return lcm.NewPackage(m)
}

// TestBadStorageInputRunsNothing: each mistake is a field error with its
// path, and no VM runs a command: what only Heat knows (a volume the
// stack does not hold) is checked before the first command too.
func TestBadStorageInputRunsNothing(t *testing.T) {
	t.Parallel()
	const k = "additionalParams.k8s_cluster_installation_param."
	pkg := overlay(t, map[string]string{
		"Files/kubernetes/web.yaml":   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec: {}\n",
		"Files/kubernetes/other.yaml": "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: other\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  nfs: {server: 0.0.0.0, path: /volume/nfs/other}\n",
	})
	w := newPV(t, nil, pkg, sim.ClusterShape{Masters: 1, Workers: 1})
	base := w.req
	for _, tc := range []struct {
		edit  map[string]any
		field string
	}{
		{map[string]any{k + "storage_server.nfs_server_setup_params[0].export_dir": "/srv/nfs/pv1"}, "storage_server.nfs_server_setup_params[0].export_dir"},
		{map[string]any{k + "storage_server.nfs_server_setup_params[1].export_to": "*; reboot"}, "storage_server.nfs_server_setup_params[1].export_to"},
		{map[string]any{k + "pv_registration_params[0].pv_manifest_file_path": "Files/kubernetes/web.yaml"}, "pv_registration_params[0].pv_manifest_file_path"},
		{map[string]any{k + "pv_registration_params[1].pv_manifest_file_path": "../../etc/passwd"}, "pv_registration_params[1].pv_manifest_file_path"},
		{map[string]any{k + "pv_registration_params[2].pv_manifest_file_path": "Files/kubernetes/other.yaml"}, "pv_registration_params[2].pv_manifest_file_path"},
		{map[string]any{k + "storage_server.cinder_volume_setup_params[0].volume_resource_id": "no_such_volume"}, "storage_server.cinder_volume_setup_params[0].volume_resource_id"},
		{map[string]any{k + "pv_registration_params[0].nfs_server_cp": "no_such_port"}, "pv_registration_params[0].nfs_server_cp"},
		{map[string]any{k + "storage_server.nfs_server_setup_params[2].export_to": "192.0.2.0/24"}, "storage_server.nfs_server_setup_params[2].export_to"},
	} {
		w.req = patched(t, base, tc.edit)
		_, err := w.instantiate()
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "k8s_cluster_installation_param."+tc.field+": ") {
			t.Errorf("%v: err = %v, want a field error at %s", tc.edit, err, tc.field)
		}
		for _, h := range w.cluster.Hosts() {
			if n := len(h.SSH.Transcript()); n != 0 {
				t.Errorf("%v: %d commands ran on %s", tc.edit, n, h.Resource)
			}
		}
	}
}

// TestStorageStepsConvergeAfterAFault: a fault in each storage step
// fails instantiate_end in that step (a dropped connection is ridden out
// by a redial instead); run again, it converges: the volume formatted
// once, the exports and PersistentVolumes there, every node a client.
func TestStorageStepsConvergeAfterAFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		inject func(w *pvWorld)
		// failsIn is the step the first run fails in; "" when it rides
		// the fault out.
		failsIn string
	}{
		{"mkfs fails", func(w *pvWorld) {
			w.storage().SSH.FailProgram("mkfs.ext4", 1, 1, "mkfs.ext4: Device or resource busy while setting up superblock")
		}, nfs.StepStorage},
		{"mount fails", func(w *pvWorld) { w.storage().SSH.FailProgram("mount", 1, 32, "mount: /volume: wrong fs type") }, nfs.StepStorage},
		{"the NFS server's install fails", func(w *pvWorld) {
			w.storage().SSH.FailProgram("apt-get", 1, 100, "E: Failed to fetch http://archive.ubuntu.com/ubuntu/pool/main/n/nfs-utils/nfs-kernel-server.deb  Connection timed out")
		}, nfs.StepStorage},
		{"exportfs hangs", func(w *pvWorld) { w.storage().SSH.HangProgram("exportfs", 1) }, nfs.StepStorage},
		{"the connection drops during the exports", func(w *pvWorld) { w.storage().SSH.DropConnectionDuring(12) }, ""},
		{"a worker's client install fails", func(w *pvWorld) {
			// containerd is there (the shape below), so the worker's
			// first apt-get is the NFS client's.
			w.cluster.HostsWithRole(lcm.RoleWorker)[0].SSH.FailProgram("apt-get", 1, 100, "E: Failed to fetch http://archive.ubuntu.com/ubuntu/dists/jammy/InRelease  Connection timed out")
		}, nfs.StepClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newPV(t, nil, nil, sim.ClusterShape{Masters: 1, Workers: 1, Packages: []string{"containerd"}})
			tc.inject(w)
			// A hung command holds the hook until the VNFM's deadline:
			// here, once it has hung.
			ctx := w.ctx
			var cancel context.CancelFunc
			w.ctx, cancel = context.WithCancel(ctx)
			go cancelWhenHung(w.ctx, cancel, w.storage().SSH, "exportfs")
			_, err := w.instantiate()
			cancel()
			w.ctx = ctx
			var he *lcm.HostError
			switch {
			case tc.failsIn == "" && err != nil:
				t.Fatalf("the first run: %v", err)
			case tc.failsIn == "" && w.storage().SSH.Dials() < 2:
				t.Fatalf("the storage server was dialed %d times: the connection did not drop", w.storage().SSH.Dials())
			case tc.failsIn != "" && (!errors.As(err, &he) || he.Step != tc.failsIn):
				t.Fatalf("the first run: %v, want it to fail in %s", err, tc.failsIn)
			}
			if _, err := w.instantiate(); err != nil {
				t.Fatalf("the second run: %v\n%s", err, w.log)
			}
			w.assertStorage()
		})
	}
}

// cancelWhenHung calls cancel once a run of program on srv has started
// and not finished for a while: the VNFM's deadline for a hook that hangs.
func cancelWhenHung(ctx context.Context, cancel context.CancelFunc, srv *sshtest.Server, program string) {
	for {
		for _, c := range srv.Calls() {
			if len(c.Args) > 0 && path.Base(c.Args[0]) == program && c.Exit == -1 {
				time.Sleep(200 * time.Millisecond)
				cancel()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRegistrationLeavesAnotherOwnersVolume: a PersistentVolume of one of
// the manifests' names that this VNF did not register stops the
// registration, naming it, and is left as it is; once its owner removed
// it, the hook converges.
func TestRegistrationLeavesAnotherOwnersVolume(t *testing.T) {
	t.Parallel()
	w := newPV(t, nil, nil, sim.ClusterShape{Masters: 1, Workers: 1})
	if _, err := w.instantiate(); err != nil {
		t.Fatal(err)
	}
	m := w.cluster.HostsWithRole(lcm.RoleMaster)[0]
	h, err := w.cloud.Connect(w.ctx, m.Node(), m.Login.User, m.Login.Password)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	k := kubeapi.Kubectl{Host: h}
	if _, err := k.Delete(w.ctx, "persistentvolume", "", "nfs-pv2"); err != nil {
		t.Fatal(err)
	}
	foreign := "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: nfs-pv2\n  annotations: {" + nfs.OwnerAnnotation + ": another-vnf}\nspec:\n  capacity: {storage: 2Gi}\n  accessModes: [ReadWriteMany]\n  nfs: {server: 192.0.2.9, path: /elsewhere}\n"
	if _, err := k.Apply(w.ctx, []byte(foreign)); err != nil {
		t.Fatal(err)
	}
	_, err = w.instantiate()
	var he *lcm.HostError
	if !errors.As(err, &he) || he.Step != nfs.StepRegisterPV || !strings.Contains(err.Error(), "PersistentVolume nfs-pv2 exists and was not registered by this VNF") {
		t.Fatalf("err = %v, want the registration refused naming nfs-pv2", err)
	}
	if pv := w.pvs()["nfs-pv2"]; pv.Spec.NFS == nil || pv.Spec.NFS.Server != "192.0.2.9" {
		t.Fatalf("the other owner's volume was changed: %+v", pv.Spec.NFS)
	}
	if _, err := k.Delete(w.ctx, "persistentvolume", "", "nfs-pv2"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.instantiate(); err != nil {
		t.Fatal(err)
	}
	w.assertStorage()
}

// TestTheStoragePasswordNeverLeaves: the storage server's login password
// is in no command line, argv, log line or error, also when a step fails.
func TestTheStoragePasswordNeverLeaves(t *testing.T) {
	t.Parallel()
	const secret = "St0rage-Pa55-w0rd"
	withSecret := patched(t, request(t, samples.InstantiatePVCluster), map[string]any{"additionalParams.k8s_cluster_installation_param.storage_server.password": secret})
	w := newPV(t, withSecret, nil, sim.ClusterShape{Masters: 1, Workers: 1})
	if w.storage().Login.Password != secret {
		t.Fatal("the storage server's VM does not take the request's password")
	}
	w.storage().SSH.FailProgram("exportfs", 1, 1, "exportfs: /etc/exports.d/mgmtkit.exports:1: unknown keyword \"bogus\"")
	_, err := w.instantiate()
	if err == nil {
		t.Fatal("the injected exportfs failure went unnoticed")
	}
	if _, err := w.instantiate(); err != nil {
		t.Fatalf("the second run: %v", err)
	}
	w.assertStorage()
	if strings.Contains(err.Error(), secret) || strings.Contains(w.log.String(), secret) {
		t.Errorf("the error or the log shows the password")
	}
	for _, h := range w.cloud.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, secret) {
				t.Errorf("%s: command %q shows the password", h.Resource, e.Command)
			}
		}
		for _, c := range h.SSH.Calls() {
			if strings.Contains(strings.Join(c.Args, " "), secret) {
				t.Errorf("%s: argv %q shows the password", h.Resource, c.Args)
			}
		}
	}
}

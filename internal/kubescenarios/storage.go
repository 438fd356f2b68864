package kubescenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

// RunStorage runs the storage scenarios (the pv-k8s-cluster spec) as
// subtests, as [Run] runs the cluster's.
func RunStorage(t *testing.T, opts sim.Options) {
	for _, s := range []struct {
		name string
		run  func(*testing.T, sim.Options)
	}{
		{"StorageLifecycle", StorageLifecycle},
		{"StorageHealEntire", StorageHealEntire},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, opts) })
	}
}

// NewStorageCluster builds the VMs of the pv sample's cluster (its
// storage server with its Cinder volume, the three exports and the three
// PersistentVolume manifests of the sample package) with shape, and the
// hooks with the storage extension, as the cluster driver composes them.
func NewStorageCluster(t testing.TB, shape sim.ClusterShape, opts sim.Options) *Cluster {
	t.Helper()
	c := NewClusterFrom(t, opts, func(cl *sim.Cloud) (*lcm.InstantiateVnfRequest, sim.Topology, error) {
		return cl.SampleCluster(samples.InstantiatePVCluster, shape)
	})
	c.Op.Extensions = c.Params.Extensions(c.Op.Package, c.Op.Instance)
	return c
}

// Storage returns the storage server's VM.
func (c *Cluster) Storage() *sim.Host {
	c.T.Helper()
	hs := c.VNF.HostsWithRole(lcm.RoleStorage)
	if len(hs) != 1 {
		c.T.Fatalf("%d storage servers", len(hs))
	}
	return hs[0]
}

// PVs returns the cluster's PersistentVolumes by name.
func (c *Cluster) PVs(k kubeapi.Kubectl) map[string]corev1.PersistentVolume {
	c.T.Helper()
	var list corev1.PersistentVolumeList
	if err := k.List(c.Ctx, &list, "persistentvolume", "", kubeapi.ListOptions{}); err != nil {
		c.T.Fatal(err)
	}
	out := map[string]corev1.PersistentVolume{}
	for _, pv := range list.Items {
		out[pv.Name] = pv
	}
	return out
}

// AssertPVs checks that the sample's three PersistentVolumes are on the
// storage server at server, each in one of phases.
func (c *Cluster) AssertPVs(k kubeapi.Kubectl, server string, phases ...corev1.PersistentVolumePhase) {
	c.T.Helper()
	Eventually(c.T, func() error {
		pvs := c.PVs(k)
		for name, dir := range sim.SamplePVs() {
			pv, ok := pvs[name]
			switch {
			case !ok:
				return fmt.Errorf("PersistentVolume %s is missing", name)
			case pv.Spec.NFS == nil || pv.Spec.NFS.Server != server || pv.Spec.NFS.Path != dir:
				return fmt.Errorf("PersistentVolume %s mounts %+v, want %s:%s", name, pv.Spec.NFS, server, dir)
			case !slices.Contains(phases, pv.Status.Phase):
				return fmt.Errorf("PersistentVolume %s is %q, want one of %v", name, pv.Status.Phase, phases)
			case pv.Annotations[nfs.OwnerAnnotation] != c.VNF.ID():
				return fmt.Errorf("PersistentVolume %s is owned by %q", name, pv.Annotations[nfs.OwnerAnnotation])
			}
		}
		return nil
	})
}

// AssertPodRunsWithClaim waits for the pod of [sim.ClaimPodManifest] called
// name to run, on node when it is not "", and returns its node and the
// PersistentVolume its claim is bound to.
func (c *Cluster) AssertPodRunsWithClaim(k kubeapi.Kubectl, name, node string) (string, string) {
	c.T.Helper()
	var on, volume string
	Eventually(c.T, func() error {
		var pod corev1.Pod
		if found, err := k.Get(c.Ctx, &pod, "pod", "default", name); err != nil || !found {
			return fmt.Errorf("pod %s: found %v, %v", name, found, err)
		}
		var pvc corev1.PersistentVolumeClaim
		if found, err := k.Get(c.Ctx, &pvc, "persistentvolumeclaim", "default", name); err != nil || !found {
			return fmt.Errorf("claim %s: found %v, %v", name, found, err)
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim %s is %q", name, pvc.Status.Phase)
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s is %q on %q: %s", name, pod.Status.Phase, pod.Spec.NodeName, waitingReason(pod))
		}
		if node != "" && pod.Spec.NodeName != node {
			return fmt.Errorf("pod %s runs on %s, want %s", name, pod.Spec.NodeName, node)
		}
		on, volume = pod.Spec.NodeName, pvc.Spec.VolumeName
		return nil
	})
	return on, volume
}

// waitingReason says why a pod's containers wait, as kubectl describe
// would.
func waitingReason(pod corev1.Pod) string {
	var why []string
	for _, s := range pod.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil {
			why = append(why, w.Reason+": "+w.Message)
		}
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && cond.Message != "" {
			why = append(why, string(cond.Type)+": "+cond.Message)
		}
	}
	return strings.Join(why, "; ")
}

// deleteClaim deletes the pod and the claim of [sim.ClaimPodManifest] called
// name.
func (c *Cluster) deleteClaim(k kubeapi.Kubectl, name string) {
	c.T.Helper()
	for _, kind := range []string{"pod", "persistentvolumeclaim"} {
		if _, err := k.Delete(c.Ctx, kind, "default", name); err != nil {
			c.T.Fatal(err)
		}
	}
}

// storageCommands counts the storage server's commands since mark that
// contain each of subs.
func storageCommands(h *sim.Host, mark int, subs ...string) int {
	n := 0
	for _, e := range h.SSH.Transcript()[mark:] {
		for _, s := range subs {
			if strings.Contains(e.Command, s) {
				n++
			}
		}
	}
	return n
}

// StorageLifecycle: the pv sample's cluster (one master, one worker).
// instantiate_end sets up the storage server and registers the three
// PersistentVolumes, Available on the storage server's address; run
// again, it formats and exports nothing. A pod's claim binds one and the
// pod runs on the worker, which can mount it. The storage server's heal
// is refused while the volume is Bound, naming it and its claim; once
// the pod and claim are gone (the volume Released: Retain) it proceeds,
// Heat giving the new VM new addresses and the old volume: the
// PersistentVolumes are registered again at the new address, and the
// data written before the heal is there. A worker added by scale-out
// gets the NFS client and a pod on it mounts.
func StorageLifecycle(t *testing.T, opts sim.Options) {
	c := NewStorageCluster(t, sim.ClusterShape{Masters: 1, Workers: 1, MinWorkers: 1}, opts)
	c.Instantiate()
	k := c.Kubectl()
	storage := c.Storage()
	c.AssertPVs(k, storage.NICAddress, corev1.VolumeAvailable)
	for _, h := range append(c.VNF.HostsWithRole(lcm.RoleMaster), c.VNF.HostsWithRole(lcm.RoleWorker)...) {
		if !h.Machine.Installed(nfs.ClientPackage) {
			t.Errorf("%s has no %s", h.Resource, nfs.ClientPackage)
		}
	}

	mark := len(storage.SSH.Transcript())
	res := c.Instantiate()
	if n := storageCommands(storage, mark, "mkfs", "exportfs -ra", "apt-get install"); n != 0 {
		t.Errorf("the second instantiate_end ran %d mkfs, exportfs -ra or apt-get install on the storage server", n)
	}
	for _, s := range res.Steps {
		for _, h := range s.Hosts {
			if (s.Step == nfs.StepStorage || s.Step == nfs.StepRegisterPV) && h.Result.Changed {
				t.Errorf("the second instantiate_end changed %s on %s: %s", s.Step, h.Host, h.Result.Detail)
			}
		}
	}

	workers := c.VNF.HostsWithRole(lcm.RoleWorker)
	worker := kubeadm.NodeName(lcm.RoleWorker, workers[0].NICAddress)
	if _, err := k.Apply(c.Ctx, []byte(sim.ClaimPodManifest("data", ""))); err != nil {
		t.Fatal(err)
	}
	on, bound := c.AssertPodRunsWithClaim(k, "data", "")
	if on != worker {
		t.Errorf("the pod runs on %s, want the worker %s", on, worker)
	}
	dir := sim.SamplePVs()[bound]
	// The pod's write, as a non-root user through the worker's NFS
	// mount: the export squashes it to nobody, who owns the directory.
	export, err := c.Cloud.OpenNFS(c.Ctx, workers[0].Machine, storage.NICAddress, dir, "/mnt")
	if err != nil {
		t.Fatal(err)
	}
	if err := export.WriteFile("kept.txt", []byte("written before the heal\n"), 1000, 1000); err != nil {
		t.Fatalf("a non-root pod's write: %v", err)
	}
	if fi, err := storage.FS().Stat(dir + "/kept.txt"); err != nil {
		t.Fatal(err)
	} else if uid, gid := sshtest.Owner(fi); uid != 65534 || gid != 65534 {
		t.Errorf("the pod's file is owned by %d:%d on the server, want nobody:nogroup (all_squash)", uid, gid)
	}

	// The storage server's heal is refused while the volume is Bound.
	inst := c.VNF.Instance()
	req := lcm.HealVnfRequest{VnfcInstanceID: []string{VnfcOf(inst, storage.ServerID)}}
	c.Op.Instance = inst
	_, err = c.Hooks.HealStart(c.Ctx, lcm.HealStart, c.Op, req)
	var inUse *nfs.InUseError
	if !errors.As(err, &inUse) || inUse.Bound[bound] != "default/data" || !strings.Contains(err.Error(), bound) || !strings.Contains(err.Error(), "default/data") {
		t.Fatalf("heal_start of the storage server with %s Bound: %v, want an InUseError naming it and default/data", bound, err)
	}
	c.AssertPVs(k, storage.NICAddress, corev1.VolumeAvailable, corev1.VolumeBound)

	// Released, the heal proceeds.
	c.deleteClaim(k, "data")
	Eventually(t, func() error {
		if pv := c.PVs(k)[bound]; pv.Status.Phase != corev1.VolumeReleased {
			return fmt.Errorf("%s is %q after its claim's deletion, want Released (Retain)", bound, pv.Status.Phase)
		}
		return nil
	})
	disk := storage.Disks["/dev/vdb"]
	formats := disk.Formats()
	if err := c.Heal(storage); err != nil {
		t.Fatal(err)
	}
	healed := c.Storage()
	if healed.NICAddress == storage.NICAddress {
		t.Fatalf("the healed storage server kept its address %s", storage.NICAddress)
	}
	c.AssertPVs(k, healed.NICAddress, corev1.VolumeAvailable)
	if disk.Formats() != formats {
		t.Errorf("the heal formatted the volume: %d formats, were %d", disk.Formats(), formats)
	}
	if got, err := healed.FS().ReadFile(dir + "/kept.txt"); err != nil || string(got) != "written before the heal\n" {
		t.Errorf("%s/kept.txt on the healed storage server: %q, %v", dir, got, err)
	}

	// A worker added by scale-out mounts.
	aspect := c.Op.Params.WorkerNode.AspectID
	before := c.VNF.Instance()
	added, err := c.VNF.ScaleOut(aspect, 1)
	if err != nil {
		t.Fatal(err)
	}
	op := c.Op
	op.Instance = before
	if _, err := c.Hooks.ScaleOut(c.Ctx, lcm.ScaleEnd, op, lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: aspect, NumberOfSteps: 1}); err != nil {
		t.Fatal(err)
	}
	if !added[0].Machine.Installed(nfs.ClientPackage) {
		t.Errorf("the new worker %s has no %s", added[0].Resource, nfs.ClientPackage)
	}
	newNode := kubeadm.NodeName(lcm.RoleWorker, added[0].NICAddress)
	if _, err := k.Apply(c.Ctx, []byte(sim.ClaimPodManifest("more", newNode))); err != nil {
		t.Fatal(err)
	}
	c.AssertPodRunsWithClaim(k, "more", newNode)
}

// StorageHealEntire: the entire VNF healed with every volume kept (Heat
// re-creates the VMs, not the volume): heal_end builds the cluster again
// from the stored parameters, the storage server mounts the volume as it
// is, and the PersistentVolumes are registered in the new cluster; the
// data is still there.
func StorageHealEntire(t *testing.T, opts sim.Options) {
	c := NewStorageCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, opts)
	c.Instantiate()
	storage := c.Storage()
	if err := storage.FS().WriteFile("/volume/nfs/pv2/kept.txt", []byte("across the heal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	disk := storage.Disks["/dev/vdb"]
	formats := disk.Formats()
	c.HealEntire()
	c.AssertNodes()
	healed := c.Storage()
	c.AssertPVs(c.Kubectl(), healed.NICAddress, corev1.VolumeAvailable)
	if disk.Formats() != formats {
		t.Errorf("the entire heal formatted the volume: %d formats, were %d", disk.Formats(), formats)
	}
	if got, err := healed.FS().ReadFile("/volume/nfs/pv2/kept.txt"); err != nil || string(got) != "across the heal\n" {
		t.Errorf("kept.txt after the entire heal: %q, %v", got, err)
	}
}

package nfs_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/samples"
)

// TestRegisterPVFollowsTheServer: a PersistentVolume of the VNF that
// points at another address (a storage heal whose heal_start did not
// run) is re-created at the new one while it is not in use, and refused,
// naming its claim, while it is Bound; a Released one stays Released,
// said in the result.
func TestRegisterPVFollowsTheServer(t *testing.T) {
	t.Parallel()
	c := kubescenarios.NewStorageCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	c.Instantiate()
	k := c.Kubectl()
	pv, err := nfs.ReadPV(lcm.NewPackage(samples.VNFPackage()), "Files/kubernetes/nfs-pv1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts := nfs.PVOptions{Instance: c.VNF.ID()}
	server := c.Storage().NICAddress

	res, err := nfs.RegisterPV(c.Ctx, k, pv, "127.0.9.9", opts)
	if err != nil || !res.Changed {
		t.Fatalf("moving an Available volume: %v, %v", res, err)
	}
	if got := c.PVs(k)["nfs-pv1"]; got.Spec.NFS.Server != "127.0.9.9" || got.Status.Phase != corev1.VolumeAvailable {
		t.Fatalf("nfs-pv1 after the move: %+v, %q", got.Spec.NFS, got.Status.Phase)
	}
	if res, err = nfs.RegisterPV(c.Ctx, k, pv, server, opts); err != nil || !res.Changed {
		t.Fatalf("moving it back: %v, %v", res, err)
	}

	if _, err := k.Apply(c.Ctx, []byte(sim.ClaimPodManifest("data", ""))); err != nil {
		t.Fatal(err)
	}
	_, bound := c.AssertPodRunsWithClaim(k, "data", "")
	if pv, err = nfs.ReadPV(lcm.NewPackage(samples.VNFPackage()), "Files/kubernetes/"+bound+".yaml"); err != nil {
		t.Fatal(err)
	}
	_, err = nfs.RegisterPV(c.Ctx, k, pv, "127.0.9.9", opts)
	if err == nil || !strings.Contains(err.Error(), "is Bound to claim default/data") {
		t.Fatalf("moving a Bound volume: %v", err)
	}
	if got := c.PVs(k)[bound]; got.Spec.NFS.Server != server {
		t.Errorf("the Bound volume moved to %s", got.Spec.NFS.Server)
	}

	for _, kind := range []string{"pod", "persistentvolumeclaim"} {
		if _, err := k.Delete(c.Ctx, kind, "default", "data"); err != nil {
			t.Fatal(err)
		}
	}
	res, err = nfs.RegisterPV(c.Ctx, k, pv, server, opts)
	if err != nil || res.Changed || !strings.Contains(res.Detail, bound+" is Released") {
		t.Errorf("a Released volume: %v, %v", res, err)
	}
	if got := c.PVs(k)[bound]; got.Status.Phase != corev1.VolumeReleased {
		t.Errorf("%s is %q", bound, got.Status.Phase)
	}
}

package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/nfsd"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

// nfsCluster is the PV sample's cluster with an NFS server on the storage
// server exporting /srv/nfs/pv1 to the first worker's address only.
type nfsCluster struct {
	*world
	vnf              *sim.VNF
	storage          *sim.Host
	worker1, worker2 *sim.Host
}

func newNFSCluster(t *testing.T) *nfsCluster {
	w := newWorld(t)
	v := w.build(samples.InstantiatePVCluster, sim.ClusterShape{Masters: 1, Workers: 2})
	c := &nfsCluster{world: w, vnf: v, storage: v.HostsWithRole(lcm.RoleStorage)[0]}
	ws := v.HostsWithRole(lcm.RoleWorker)
	c.worker1, c.worker2 = ws[0], ws[1]
	st := w.connect(c.storage.Node())
	c.sudo(st, "apt-get", "update")
	c.sudo(st, "apt-get", "install", "-y", "nfs-kernel-server")
	c.sudo(st, "mkdir", "-p", "/srv/nfs/pv1", "/etc/exports.d")
	if _, err := st.WriteFile(w.ctx, "/etc/exports.d/pv.exports", strings.NewReader("/srv/nfs/pv1 "+c.worker1.NICAddress+"(rw,sync,no_subtree_check,all_squash)\n"), remote.FileOptions{Mode: 0o644, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	c.sudo(st, "exportfs", "-ra")
	return c
}

func (c *nfsCluster) sudo(h remote.Host, args ...string) string {
	c.t.Helper()
	out, err := h.Run(c.ctx, remote.Cmd{Args: args, Sudo: true})
	if err != nil {
		c.t.Fatalf("%s %v: %v", h.Name(), args, err)
	}
	return string(out.Stdout)
}

// wantMountError checks that err is mount's error with exactly this
// output and status 32.
func wantMountError(t *testing.T, what string, err error, output string) {
	t.Helper()
	var me *nfsd.MountError
	if !errors.As(err, &me) || me.Output != output || me.Status != 32 {
		t.Errorf("%s: %v (%#v), want status 32 and %q", what, err, me, output)
	}
}

func TestMountNFS(t *testing.T) {
	c := newNFSCluster(t)
	srv := c.storage.NICAddress
	target := "/var/lib/kubelet/pods/p1/volumes/kubernetes.io~nfs/pv1"

	wantMountError(t, "a worker without nfs-common", c.cloud.MountNFS(c.ctx, c.worker1.Machine, srv, "/srv/nfs/pv1", target),
		"mount: "+target+": bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.")
	for _, h := range []*sim.Host{c.worker1, c.worker2} {
		if err := h.Machine.InstallPackages("nfs-common"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.cloud.MountNFS(c.ctx, c.worker1.Machine, srv, "/srv/nfs/pv1", target); err != nil {
		t.Errorf("the admitted worker: %v", err)
	}
	if len(c.worker1.Machine.Mounts()) != len(c.worker2.Machine.Mounts()) {
		t.Error("MountNFS recorded a mount on the client")
	}
	wantMountError(t, "the other worker", c.cloud.MountNFS(c.ctx, c.worker2.Machine, srv, "/srv/nfs/pv1", target),
		"mount.nfs: access denied by server while mounting "+srv+":/srv/nfs/pv1")
	wantMountError(t, "a path nobody exports", c.cloud.MountNFS(c.ctx, c.worker1.Machine, srv, "/srv/nfs", target),
		"mount.nfs: access denied by server while mounting "+srv+":/srv/nfs")
	wantMountError(t, "an address without NFS server", c.cloud.MountNFS(c.ctx, c.worker1.Machine, c.worker2.NICAddress, "/srv/nfs/pv1", target),
		"mount.nfs: Connection refused")

	// all_squash: what the pod writes belongs to nobody on the server, and
	// the export directory is root's: permission denied until it is
	// nobody's.
	x, err := c.cloud.OpenNFS(c.ctx, c.worker1.Machine, srv, "/srv/nfs/pv1", target)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WriteFile("a.txt", []byte("x"), 1000, 1000); err == nil {
		t.Error("a squashed write into a root-owned export succeeded")
	}
	if err := c.storage.FS().Chown("/srv/nfs/pv1", 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := x.WriteFile("a.txt", []byte("x"), 0, 0); err != nil {
		t.Fatal(err)
	}
	fi, err := c.storage.FS().Stat("/srv/nfs/pv1/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := sshtest.Owner(fi); uid != 65534 || gid != 65534 {
		t.Errorf("a file root wrote through an all_squash export is %d:%d on the server, want 65534:65534", uid, gid)
	}

	// mount -t nfs over SSH records the mount; umount removes it.
	w1 := c.connect(c.worker1.Node())
	c.sudo(w1, "mkdir", "-p", "/mnt/pv1")
	c.sudo(w1, "mount", "-t", "nfs", srv+":/srv/nfs/pv1", "/mnt/pv1")
	if got := c.sudo(w1, "findmnt", "-n", "-o", "SOURCE,FSTYPE", "/mnt/pv1"); strings.Fields(got)[0] != srv+":/srv/nfs/pv1" || strings.Fields(got)[1] != "nfs4" {
		t.Errorf("findmnt after mount: %q", got)
	}
	c.sudo(w1, "umount", "/mnt/pv1")
	if out, err := w1.Run(c.ctx, remote.Cmd{Args: []string{"mountpoint", "-q", "/mnt/pv1"}}); err == nil {
		t.Errorf("still a mount point after umount: %s", out.Stdout)
	}
	w2 := c.connect(c.worker2.Node())
	c.sudo(w2, "mkdir", "-p", "/mnt/pv1")
	out, err := w2.Run(c.ctx, remote.Cmd{Args: []string{"mount", "-t", "nfs", srv + ":/srv/nfs/pv1", "/mnt/pv1"}, Sudo: true})
	if err == nil || out.ExitCode != 32 || !strings.Contains(string(out.Stderr), "mount.nfs: access denied by server while mounting "+srv+":/srv/nfs/pv1") {
		t.Errorf("mount on the denied worker: %v, %q", err, out.Stderr)
	}

	// The NFS server stopped: connection refused; started again, its
	// exports are back (exportfs -r in the unit's ExecStartPre).
	st := c.connect(c.storage.Node())
	c.sudo(st, "systemctl", "stop", "nfs-kernel-server")
	wantMountError(t, "a stopped server", c.cloud.MountNFS(c.ctx, c.worker1.Machine, srv, "/srv/nfs/pv1", target), "mount.nfs: Connection refused")
	if got := c.sudo(st, "exportfs", "-s"); got != "" {
		t.Errorf("exports of a stopped server: %q", got)
	}
	c.sudo(st, "systemctl", "start", "nfs-server")
	if err := c.cloud.MountNFS(c.ctx, c.worker1.Machine, srv, "/srv/nfs/pv1", target); err != nil {
		t.Errorf("after the server's restart: %v", err)
	}
}

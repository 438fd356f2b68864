package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/nfsd"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
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

// exportedPV1 prepares the storage server as SetupVolume and ExportNFS
// would: the volume formatted and mounted at /volume, a file of the
// application on it, /volume/nfs/pv1 exported to the cluster network.
func exportedPV1(t *testing.T, c *nfsCluster, h *sim.Host) {
	t.Helper()
	if err := h.Machine.InstallPackages("nfs-kernel-server"); err != nil {
		t.Fatal(err)
	}
	st := c.connect(h.Node())
	c.sudo(st, "sh", "-c", "mkdir -p /volume /etc/exports.d && mount /dev/vdb /volume && mkdir -p /volume/nfs/pv1 && chown nobody:nogroup /volume/nfs/pv1")
	if _, err := st.WriteFile(c.ctx, "/etc/exports.d/pv.exports", strings.NewReader("/volume/nfs/pv1 127.0.0.0/8(rw,sync,no_subtree_check,all_squash)\n"), remote.FileOptions{Mode: 0o644, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	c.sudo(st, "exportfs", "-ra")
}

func TestHealKeepsOrRecreatesTheVolume(t *testing.T) {
	c := newNFSCluster(t)
	vol, err := c.heat.Volume(c.ctx, c.vnf.StackID(), "storage_server_volume")
	if err != nil {
		t.Fatal(err)
	}
	disk := c.storage.Disks["/dev/vdb"]
	if disk.Serial() != vol.ID {
		t.Fatalf("the disk's serial %q is not the volume ID %s", disk.Serial(), vol.ID)
	}
	st := c.connect(c.storage.Node())
	byID := "/dev/disk/by-id/virtio-" + vol.ID[:20]
	if got := strings.TrimSpace(c.sudo(st, "readlink", "-f", byID)); got != "/dev/vdb" {
		t.Fatalf("%s -> %q", byID, got)
	}
	c.sudo(st, "mkfs.ext4", "-q", "/dev/vdb")
	if err := disk.WriteFile("nfs/pv1/kept.txt", []byte("kept\n")); err != nil {
		t.Fatal(err)
	}
	exportedPV1(t, c, c.storage)

	// The default heal keeps the volume: same ID, same filesystem and data.
	healed, err := c.vnf.Heal(c.storage.ServerID, sim.HealOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := c.heat.Volume(c.ctx, c.vnf.StackID(), "storage_server_volume")
	if err != nil || after.ID != vol.ID || after.ServerID != healed.ServerID {
		t.Fatalf("volume after a heal %+v, %v", after, err)
	}
	if healed.Disks["/dev/vdb"] != disk {
		t.Fatal("the healed server has another disk")
	}
	h := c.connect(healed.Node())
	if got := c.sudo(h, "blkid", "-p", "-o", "value", "-s", "TYPE", byID); got != "ext4\n" {
		t.Errorf("blkid -p after a heal: %q", got)
	}
	if data, err := disk.ReadFile("nfs/pv1/kept.txt"); err != nil || string(data) != "kept\n" {
		t.Errorf("the file after a heal: %q, %v", data, err)
	}
	// Exported again, it is what clients mount.
	exportedPV1(t, c, healed)
	if err := c.worker1.Machine.InstallPackages("nfs-common"); err != nil {
		t.Fatal(err)
	}
	x, err := c.cloud.OpenNFS(c.ctx, c.worker1.Machine, healed.NICAddress, "/volume/nfs/pv1", "/mnt")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := x.ReadFile("kept.txt", 1000, 1000); err != nil || string(data) != "kept\n" {
		t.Errorf("the file through NFS after a heal: %q, %v", data, err)
	}

	// A heal that re-creates the volume: new ID, new serial, blank disk,
	// and Heat's attachments (both attributes) name the new volume.
	renewed, err := c.vnf.Heal(healed.ServerID, sim.HealOptions{NewVolumes: true})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := c.heat.Volume(c.ctx, c.vnf.StackID(), "storage_server_volume")
	if err != nil || fresh.ID == vol.ID || fresh.ServerID != renewed.ServerID || fresh.Device != "/dev/vdb" {
		t.Fatalf("volume after a heal with new volumes %+v, %v", fresh, err)
	}
	res := c.vnf.Stack().Resource("storage_server_volume")
	for _, key := range []string{"attachments", "attachments_list"} {
		att, _ := res.Attributes()[key].([]any)
		if len(att) != 1 || att[0].(map[string]any)["volume_id"] != fresh.ID || att[0].(map[string]any)["server_id"] != renewed.ServerID {
			t.Errorf("%s after a heal with new volumes: %v", key, res.Attributes()[key])
		}
	}
	nd := renewed.Disks["/dev/vdb"]
	if nd == disk || nd.FSType() != "" || nd.Serial() != fresh.ID || nd.Formats() != 0 {
		t.Fatalf("the new volume's disk: fs %q, serial %q, %d formats", nd.FSType(), nd.Serial(), nd.Formats())
	}
	r := c.connect(renewed.Node())
	out, err := r.Run(c.ctx, remote.Cmd{Args: []string{"blkid", "-p", "/dev/disk/by-id/virtio-" + fresh.ID[:20]}, Sudo: true})
	if err == nil || out.ExitCode != 2 {
		t.Errorf("blkid -p of the new volume: %v, exit %d, %q", err, out.ExitCode, out.Stdout)
	}
	if r, _ := c.connect(renewed.Node()).Run(c.ctx, remote.Cmd{Args: []string{"test", "-e", byID}}); r.ExitCode != 1 {
		t.Errorf("the old volume's by-id link on the new server: exit %d", r.ExitCode)
	}
}

func TestSCSIVolumeWithALateUdev(t *testing.T) {
	w := newWorld(t)
	v, err := w.cloud.Build(sim.Topology{Servers: []sim.ServerSpec{{
		Role: lcm.RoleStorage, Name: "storage_server", SSHCP: "storage_server_CP", Login: sim.Login{User: "ubuntu", Password: "ubuntu"},
		Volumes: []sim.VolumeSpec{{Resource: "storage_server_volume", Bus: ubuntu.BusSCSI, WWN: true, ReportedDevice: "/dev/vdb"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	h := v.Hosts()[0]
	vol, err := w.heat.Volume(w.ctx, v.StackID(), "storage_server_volume")
	if err != nil || vol.Device != "/dev/vdb" {
		t.Fatalf("volume %+v, %v; want Nova's hint /dev/vdb", vol, err)
	}
	h.Disks["/dev/sda"].DelayUdev(1)
	s := w.connect(h.Node())
	scsi := "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_" + vol.ID
	wwn := "/dev/disk/by-id/wwn-0x" + strings.ReplaceAll(vol.ID, "-", "")
	if out, _ := s.Run(w.ctx, remote.Cmd{Args: []string{"test", "-e", scsi}}); out.ExitCode != 1 {
		t.Errorf("the late disk's link exists before udevadm trigger")
	}
	if _, err := s.Run(w.ctx, remote.Cmd{Args: []string{"udevadm", "trigger", "--subsystem-match=block"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	out := w.run(s, "readlink", "-f", scsi, wwn)
	if out != "/dev/sda\n/dev/sda" {
		t.Errorf("links after udevadm trigger: %q", out)
	}
	if out, _ := s.Run(w.ctx, remote.Cmd{Args: []string{"test", "-e", "/dev/vdb"}}); out.ExitCode != 1 {
		t.Errorf("Nova's hint /dev/vdb exists on the VM")
	}
}

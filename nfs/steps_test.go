package nfs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

// storageVM is the pv sample's storage server in a simulated cloud, its
// Cinder volume as Heat reports it, and an SDK connection to it.
type storageVM struct {
	t     testing.TB
	ctx   context.Context
	cloud *sim.Cloud
	vnf   *sim.VNF
	host  *sim.Host
	h     *remote.SSHHost
	vol   nfs.Volume
}

func newStorageVM(t testing.TB) *storageVM {
	t.Helper()
	return buildStorageVM(t, func(cloud *sim.Cloud) (sim.Topology, error) {
		_, topo, err := cloud.SampleCluster(samples.InstantiatePVCluster, sim.ClusterShape{Masters: 1})
		return topo, err
	})
}

// buildStorageVM builds the VNF plan makes in a new cloud, connects to its
// storage server and resolves its volume storage_server_volume.
func buildStorageVM(t testing.TB, plan func(cloud *sim.Cloud) (sim.Topology, error)) *storageVM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, sim.Options{})
	topo, err := plan(cloud)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	s := &storageVM{t: t, ctx: ctx, cloud: cloud, vnf: v, host: v.HostsWithRole(lcm.RoleStorage)[0], vol: nfs.Volume{MountTo: "/volume"}}
	s.connect()
	s.resolveVolume()
	return s
}

// resolveVolume reads the volume's ID and device from Heat, as the hooks
// do.
func (s *storageVM) resolveVolume() {
	s.t.Helper()
	hc, err := s.cloud.HeatClient(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	hv, err := hc.Volume(s.ctx, s.vnf.StackName(), "storage_server_volume")
	if err != nil {
		s.t.Fatal(err)
	}
	s.vol.ID, s.vol.Device = hv.ID, hv.Device
}

// connect connects to the storage server's current VM.
func (s *storageVM) connect() {
	s.t.Helper()
	h, err := s.cloud.Connect(s.ctx, s.host.Node(), s.host.Login.User, s.host.Login.Password)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { h.Close() })
	// The connection's sudo probe, out of the way of command counts.
	if _, err := h.Run(s.ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
		s.t.Fatal(err)
	}
	s.h = h
}

// step runs a step and returns its result, the commands it ran, and its
// error.
func (s *storageVM) step(fn func(ctx context.Context, h remote.Host) (lcm.Result, error)) (lcm.Result, []string, error) {
	s.t.Helper()
	before := len(s.host.SSH.Transcript())
	res, err := fn(s.ctx, s.h)
	var cmds []string
	for _, e := range s.host.SSH.Transcript()[before:] {
		cmds = append(cmds, e.Command)
	}
	return res, cmds, err
}

// setup runs SetupVolume.
func (s *storageVM) setup() (lcm.Result, []string, error) {
	return s.step(func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return nfs.SetupVolume(ctx, h, s.vol, nfs.VolumeOptions{})
	})
}

// count counts the commands that run the program of words (its name,
// maybe followed by arguments), as a word of the command line.
func count(cmds []string, words string) int {
	n := 0
	for _, c := range cmds {
		if strings.HasPrefix(c, words+" ") || strings.Contains(c, " "+words+" ") || strings.HasSuffix(c, " "+words) {
			n++
		}
	}
	return n
}

// TestSetupVolumeFormatsABlankVolumeOnce: a blank volume is formatted,
// mounted and in fstab by UUID; run again, nothing changes in three
// read-only commands, and a file written on it stays.
func TestSetupVolumeFormatsABlankVolumeOnce(t *testing.T) {
	t.Parallel()
	s := newStorageVM(t)
	disk := s.host.Disks[s.vol.Device]
	res, cmds, err := s.setup()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || disk.Formats() != 1 || disk.FSType() != "ext4" {
		t.Fatalf("result %v, %d formats, fs %q; commands %q", res, disk.Formats(), disk.FSType(), cmds)
	}
	mounted := false
	for _, m := range s.host.Machine.Mounts() {
		mounted = mounted || (m.Target == "/volume" && m.FSType == "ext4")
	}
	if !mounted {
		t.Fatalf("/volume is not mounted: %v", s.host.Machine.Mounts())
	}
	fstab, err := s.host.FS().ReadFile("/etc/fstab")
	if err != nil {
		t.Fatal(err)
	}
	if want := "UUID=" + disk.UUID() + " /volume ext4 defaults,nofail 0 2\n"; !strings.Contains(string(fstab), want) {
		t.Errorf("fstab:\n%s\nwant the line %q", fstab, want)
	}
	if err := s.host.FS().WriteFile("/volume/data.txt", []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	res, cmds, err = s.setup()
	if err != nil || res.Changed || len(cmds) != 3 || count(cmds, "mkfs.ext4") > 0 {
		t.Fatalf("second run: %v, %v, commands %q; want unchanged in 3 commands, no mkfs", res, err, cmds)
	}
	if got, err := disk.ReadFile("data.txt"); err != nil || string(got) != "kept\n" {
		t.Errorf("data.txt on the volume: %q, %v", got, err)
	}
}

// TestSetupVolumeNeverFormatsAFileSystem: a volume that already holds an
// ext4 file system with data (a heal that kept the volume) is mounted as
// it is, by its own UUID, its data there.
func TestSetupVolumeNeverFormatsAFileSystem(t *testing.T) {
	t.Parallel()
	s := newStorageVM(t)
	disk := s.host.Disks[s.vol.Device]
	if _, _, err := s.setup(); err != nil {
		t.Fatal(err)
	}
	if err := s.host.FS().WriteFile("/volume/nfs-data.txt", []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	uuid := disk.UUID()
	// Heat replaces the VM and re-attaches the volume.
	healed, err := s.vnf.Heal(s.host.ServerID, sim.HealOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.host = healed
	s.connect()
	res, cmds, err := s.setup()
	if err != nil {
		t.Fatal(err)
	}
	if count(cmds, "mkfs.ext4") != 0 || disk.Formats() != 1 || disk.UUID() != uuid {
		t.Fatalf("the healed VM's setup formatted the volume: %d formats, commands %q", disk.Formats(), cmds)
	}
	if !strings.Contains(res.Detail, "mounted") {
		t.Errorf("result %v, want the mount reported", res)
	}
	got, err := s.host.FS().ReadFile("/volume/nfs-data.txt")
	if err != nil || string(got) != "precious\n" {
		t.Errorf("/volume/nfs-data.txt on the healed VM: %q, %v", got, err)
	}
}

// TestSetupVolumeFindsTheDiskByItsID: Heat's device name is a hint; the
// device is the one the volume's ID names, and one the ID does not name
// is never touched.
func TestSetupVolumeFindsTheDiskByItsID(t *testing.T) {
	t.Parallel()
	s := newStorageVM(t)
	disk := s.host.Disks[s.vol.Device]
	wrong := s.vol
	wrong.Device = "/dev/vdz"
	if _, _, err := s.step(func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return nfs.SetupVolume(ctx, h, wrong, nfs.VolumeOptions{})
	}); err != nil {
		t.Fatal(err)
	}
	if disk.Formats() != 1 {
		t.Fatalf("%d formats of the volume's disk", disk.Formats())
	}

	stranger := s.vol
	stranger.ID = "0b7f3c8e-1111-2222-3333-444455556666"
	stranger.MountTo = "/other"
	_, cmds, err := s.step(func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return nfs.SetupVolume(ctx, h, stranger, nfs.VolumeOptions{DeviceTimeout: time.Second})
	})
	if err == nil || !strings.Contains(err.Error(), "no device under /dev/disk/by-id names volume "+stranger.ID) {
		t.Fatalf("a volume the VM does not have: %v", err)
	}
	if count(cmds, "mkfs.ext4") != 0 || count(cmds, "mount") != 0 {
		t.Errorf("commands %q", cmds)
	}
}

// TestExportNFS: the exports file is ours, the directories are owned by
// nobody:nogroup, exportfs -ra runs once, exportfs -s lists every export;
// run again, three read-only commands.
func TestExportNFS(t *testing.T) {
	t.Parallel()
	s := newStorageVM(t)
	if _, _, err := s.setup(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.step(func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return nfs.InstallNFSServer(ctx, h, nfs.ServerOptions{})
	}); err != nil {
		t.Fatal(err)
	}
	exports := []nfs.Export{
		{ExportDir: "/volume/nfs/pv1", ExportTo: mustNetwork(t, "127.0.0.0/8")},
		{ExportDir: "/volume/nfs/pv2", ExportTo: mustNetwork(t, "127.0.1.7")},
	}
	export := func() (lcm.Result, []string, error) {
		return s.step(func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return nfs.ExportNFS(ctx, h, exports, nfs.ExportsOptions{})
		})
	}
	res, cmds, err := export()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || count(cmds, "exportfs -ra") != 1 {
		t.Fatalf("first run: %v, commands %q", res, cmds)
	}
	content, err := s.host.FS().ReadFile("/etc/exports.d/mgmtkit.exports")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"/volume/nfs/pv1 127.0.0.0/8(", "/volume/nfs/pv2 127.0.1.7/32("} {
		if !strings.Contains(string(content), line) {
			t.Errorf("exports file:\n%s\nwant a line starting %q", content, line)
		}
	}
	for _, d := range []string{"/volume/nfs/pv1", "/volume/nfs/pv2"} {
		fi, err := s.host.FS().Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if uid, gid := sshtest.Owner(fi); uid != 65534 || gid != 65534 || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: owner %d:%d mode %v, want 65534:65534 0755", d, uid, gid, fi.Mode().Perm())
		}
	}

	res, cmds, err = export()
	if err != nil || res.Changed || len(cmds) != 3 || count(cmds, "exportfs -ra") != 0 {
		t.Fatalf("second run: %v, %v, commands %q; want unchanged in 3 commands", res, err, cmds)
	}
}

// mustNetwork parses an export_to.
func mustNetwork(t *testing.T, s string) nfs.Network {
	t.Helper()
	n, err := nfs.ParseNetwork(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSetupVolumeRefusesWhatItWouldOverwrite: a partition table, another
// file system or a swap area on the volume is refused, naming the device
// and what blkid saw; nothing is formatted, mounted or written.
func TestSetupVolumeRefusesWhatItWouldOverwrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mark func(d *ubuntu.Disk) error
		want string
	}{
		{"gpt", func(d *ubuntu.Disk) error { return d.WriteGPT() }, "holds a gpt partition table"},
		{"xfs", func(d *ubuntu.Disk) error { return d.FormatXFS("data") }, "holds an xfs filesystem"},
		{"swap", func(d *ubuntu.Disk) error { return d.MakeSwap("") }, "holds a swap signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStorageVM(t)
			disk := s.host.Disks[s.vol.Device]
			if err := tc.mark(disk); err != nil {
				t.Fatal(err)
			}
			fstab, _ := s.host.FS().ReadFile("/etc/fstab")
			_, cmds, err := s.setup()
			if err == nil || !strings.Contains(err.Error(), s.vol.Device+" "+tc.want) {
				t.Fatalf("err = %v, want %q naming %s", err, tc.want, s.vol.Device)
			}
			if disk.Formats() != 0 || count(cmds, "mkfs.ext4") != 0 || count(cmds, "mount") != 0 {
				t.Errorf("%d formats; commands %q", disk.Formats(), cmds)
			}
			if after, _ := s.host.FS().ReadFile("/etc/fstab"); string(after) != string(fstab) {
				t.Errorf("fstab changed:\n%s", after)
			}
		})
	}
}

// TestSetupVolumeWaitsForALateSCSIDisk: a virtio-scsi volume whose udev
// link is late (the event lost) is found after `udevadm trigger`, under
// its SCSI name, though Nova reports another device; a volume Heat
// re-created for the healed VM is blank and formatted, the old one's
// data gone with it.
func TestSetupVolumeWaitsForALateSCSIDisk(t *testing.T) {
	t.Parallel()
	s := buildStorageVM(t, func(*sim.Cloud) (sim.Topology, error) {
		return sim.Topology{Servers: []sim.ServerSpec{{
			Role: lcm.RoleStorage, Name: "storage_server", SSHCP: "storage_server_CP", Login: sim.Login{User: "ubuntu", Password: "ubuntu"},
			Volumes: []sim.VolumeSpec{{Resource: "storage_server_volume", Bus: ubuntu.BusSCSI, ReportedDevice: "/dev/vdb"}},
		}}}, nil
	})
	disk := s.host.Disks["/dev/sda"]
	disk.DelayUdev(1)
	res, cmds, err := s.setup()
	if err != nil {
		t.Fatal(err)
	}
	if count(cmds, "udevadm trigger") != 1 || disk.Formats() != 1 || !strings.Contains(res.Detail, "/dev/sda") {
		t.Fatalf("result %v, %d formats; commands %q", res, disk.Formats(), cmds)
	}
	if err := s.host.FS().WriteFile("/volume/old.txt", []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	healed, err := s.vnf.Heal(s.host.ServerID, sim.HealOptions{NewVolumes: true})
	if err != nil {
		t.Fatal(err)
	}
	s.host = healed
	s.connect()
	s.resolveVolume()
	if _, _, err := s.setup(); err != nil {
		t.Fatal(err)
	}
	fresh := healed.Disks["/dev/sda"]
	if fresh == disk || fresh.Formats() != 1 {
		t.Fatalf("the new volume: same disk %v, %d formats", fresh == disk, fresh.Formats())
	}
	if healed.FS().Exists("/volume/old.txt") {
		t.Error("the new volume holds the old one's file")
	}
}

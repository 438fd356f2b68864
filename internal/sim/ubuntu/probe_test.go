package ubuntu

import (
	"strings"
	"testing"
)

// The outputs below are real blkid's (util-linux 2.38.1) on sparse image
// files made by mkfs.ext4 (e2fsprogs 1.47.0), sfdisk ("label: gpt"),
// mkfs.xfs (xfsprogs 6.1) and mkswap, with the device name and UUIDs
// replaced.

func TestBlkidProbeSignatures(t *testing.T) {
	v := newVM(t, Options{})
	blank, ext, small, gpt, xfs, swap := NewDisk(10<<30), NewDisk(10<<30), NewDisk(16<<20), NewDisk(1<<30), NewDisk(1<<30), NewDisk(64<<20)
	for dev, d := range map[string]*Disk{"/dev/vdb": blank, "/dev/vdc": ext, "/dev/vdd": small, "/dev/vde": gpt, "/dev/vdf": xfs, "/dev/vdg": swap} {
		v.AttachDisk(dev, d)
	}
	v.mustOK("mkfs.ext4 -q /dev/vdc && mkfs.ext4 -q -L data /dev/vdd")
	if err := gpt.WriteGPT(); err != nil {
		t.Fatal(err)
	}
	if err := xfs.FormatXFS(""); err != nil {
		t.Fatal(err)
	}
	if err := swap.MakeSwap("sw1"); err != nil {
		t.Fatal(err)
	}

	want(t, "blank", v.root("blkid -p -o export /dev/vdb"), "", "", 2)
	want(t, "blank, full output", v.root("blkid -p /dev/vdb"), "", "", 2)
	want(t, "ext4", v.root("blkid -p -o export /dev/vdc"),
		"DEVNAME=/dev/vdc\nUUID="+ext.UUID()+"\nVERSION=1.0\nBLOCK_SIZE=4096\nTYPE=ext4\nUSAGE=filesystem\n", "", 0)
	want(t, "a small ext4 with a label", v.root("blkid -p /dev/vdd"),
		`/dev/vdd: LABEL="data" UUID="`+small.UUID()+`" VERSION="1.0" BLOCK_SIZE="1024" TYPE="ext4" USAGE="filesystem"`+"\n", "", 0)
	ptuuid := strings.TrimPrefix(strings.Fields(v.root("blkid -p -o export -s PTUUID /dev/vde").stdout)[1], "PTUUID=")
	want(t, "gpt", v.root("blkid -p -o export /dev/vde"), "DEVNAME=/dev/vde\nPTUUID="+ptuuid+"\nPTTYPE=gpt\n", "", 0)
	want(t, "gpt in the cache mode", v.root("blkid /dev/vde"), `/dev/vde: PTUUID="`+ptuuid+`" PTTYPE="gpt"`+"\n", "", 0)
	want(t, "xfs", v.root("blkid -p -o export /dev/vdf"),
		"DEVNAME=/dev/vdf\nUUID="+xfs.UUID()+"\nBLOCK_SIZE=512\nTYPE=xfs\nUSAGE=filesystem\n", "", 0)
	want(t, "xfs in the cache mode", v.root("blkid /dev/vdf"), `/dev/vdf: UUID="`+xfs.UUID()+`" BLOCK_SIZE="512" TYPE="xfs"`+"\n", "", 0)
	want(t, "swap", v.root("blkid -p -o export /dev/vdg"),
		"DEVNAME=/dev/vdg\nLABEL=sw1\nUUID="+swap.UUID()+"\nVERSION=1\nTYPE=swap\nUSAGE=other\n", "", 0)
	want(t, "swap in the cache mode", v.root("blkid /dev/vdg"), `/dev/vdg: LABEL="sw1" UUID="`+swap.UUID()+`" TYPE="swap"`+"\n", "", 0)

	// Several devices: an empty line between them in export format; the
	// first that holds nothing stops the probe.
	want(t, "two devices", v.root("blkid -p -o export /dev/vdc /dev/vdf"),
		"DEVNAME=/dev/vdc\nUUID="+ext.UUID()+"\nVERSION=1.0\nBLOCK_SIZE=4096\nTYPE=ext4\nUSAGE=filesystem\n\nDEVNAME=/dev/vdf\nUUID="+xfs.UUID()+"\nBLOCK_SIZE=512\nTYPE=xfs\nUSAGE=filesystem\n", "", 0)
	want(t, "a blank device first", v.root("blkid -p -o export /dev/vdb /dev/vdc"), "", "", 2)
	want(t, "a blank device second", v.root("blkid -p -o export /dev/vdc /dev/vdb"),
		"DEVNAME=/dev/vdc\nUUID="+ext.UUID()+"\nVERSION=1.0\nBLOCK_SIZE=4096\nTYPE=ext4\nUSAGE=filesystem\n", "", 2)
	want(t, "values", v.root("blkid -p -s TYPE -o value /dev/vdc /dev/vdf"), "ext4\nxfs\n", "", 0)
	want(t, "export of one tag keeps DEVNAME", v.root("blkid -p -s TYPE -s PTTYPE -o export /dev/vde"), "DEVNAME=/dev/vde\nPTTYPE=gpt\n", "", 0)
	want(t, "udev", v.root("blkid -p -o udev /dev/vdd"),
		"ID_FS_LABEL=data\nID_FS_LABEL_ENC=data\nID_FS_UUID="+small.UUID()+"\nID_FS_UUID_ENC="+small.UUID()+"\nID_FS_VERSION=1.0\nID_FS_BLOCK_SIZE=1024\nID_FS_TYPE=ext4\nID_FS_USAGE=filesystem\n", "", 0)
	want(t, "the device as named", v.root("ln -s /dev/vdc /dev/mydisk && blkid -p -o export -s TYPE /dev/mydisk"), "DEVNAME=/dev/mydisk\nTYPE=ext4\n", "", 0)
	want(t, "no device", v.root("blkid -p"), "", "blkid: The low-level probing mode requires a device\n", 4)
	want(t, "a missing device", v.root("blkid -p /dev/vdz"), "", "", 2)
	want(t, "a user may not read the disk", v.user("blkid -p -o export /dev/vdc"), "", "blkid: error: /dev/vdc: Permission denied\n", 2)
	want(t, "the root disk", v.root("blkid -p -o export /dev/vda"), "DEVNAME=/dev/vda\nPTUUID="+rootPTUUID+"\nPTTYPE=gpt\n", "", 0)
	if r := v.root("blkid -p /dev/vda1"); r.code != 2 || !strings.Contains(r.stderr, "not modelled") {
		t.Errorf("blkid -p of a partition: %v, want a loud failure", r)
	}

	// mkfs.ext4 without a terminal replaces whatever is there: a GPT
	// label and an XFS go, and every format counts.
	v.mustOK("mkfs.ext4 -q /dev/vde && mkfs.ext4 -q /dev/vdf")
	if gpt.PartitionTable() != "" || gpt.FSType() != "ext4" || gpt.Formats() != 1 || xfs.FSType() != "ext4" || xfs.Formats() != 1 {
		t.Errorf("after mkfs: gpt disk %q/%q %d formats, xfs disk %q %d formats", gpt.PartitionTable(), gpt.FSType(), gpt.Formats(), xfs.FSType(), xfs.Formats())
	}
	want(t, "the former GPT disk", v.root("blkid -p -o value -s TYPE /dev/vde"), "ext4\n", "", 0)

	// Mounting what the simulation does not model fails loudly or as mount does.
	v.mustOK("mkdir -p /x")
	want(t, "mount swap", v.root("mount /dev/vdg /x"), "", "mount: /x: unknown filesystem type 'swap'.\n", 32)
	if err := xfs.FormatXFS("x"); err != nil {
		t.Fatal(err)
	}
	if r := v.root("mount /dev/vdf /x"); r.code != 2 || !strings.Contains(r.stderr, "not modelled") {
		t.Errorf("mount of an xfs: %v, want a loud failure", r)
	}
	want(t, "mount -t ext4 of an xfs", v.root("mount -t ext4 /dev/vdf /x"), "",
		"mount: /x: wrong fs type, bad option, bad superblock on /dev/vdf, missing codepage or helper program, or other error.\n", 32)
	if _, err := xfs.ReadFile("a"); err == nil || xfs.Files() != nil {
		t.Error("files of an xfs disk are modelled")
	}
}

func TestDiskWriteFile(t *testing.T) {
	v := newVM(t, Options{})
	d := NewDisk(1 << 30)
	if err := d.WriteFile("a", []byte("x")); err == nil {
		t.Error("WriteFile on a blank disk succeeded")
	}
	v.AttachDisk("/dev/vdb", d)
	v.mustOK("mkfs.ext4 -q /dev/vdb")
	if err := d.WriteFile("data/pv1/kept.txt", []byte("kept\n")); err != nil {
		t.Fatal(err)
	}
	want(t, "the file on the mounted disk", v.root("mkdir /vol && mount /dev/vdb /vol && cat /vol/data/pv1/kept.txt && stat -c '%a %U' /vol/data/pv1 /vol/data/pv1/kept.txt"), "kept\n755 root\n644 root\n", "", 0)
	if err := d.WriteFile("data/pv1/second.txt", []byte("2")); err != nil {
		t.Fatal(err)
	}
	want(t, "written while mounted", v.root("cat /vol/data/pv1/second.txt"), "2", "", 0)
	if got := strings.Join(d.Files(), ","); got != "data/pv1/kept.txt,data/pv1/second.txt" {
		t.Errorf("Files: %s", got)
	}
	if err := d.WriteFile("data/pv1/kept.txt/x", nil); err == nil {
		t.Error("a file under a file")
	}
}

func TestDiskLinksByBus(t *testing.T) {
	v := newVM(t, Options{})
	const id = "4a6b3f0e-8d2c-4e1a-9f7b-2c3d4e5f6a7b"
	virtio, scsi := NewDisk(1<<30), NewDisk(1<<30)
	virtio.SetSerial(id)
	scsi.SetSerial(id)
	scsi.SetBus(BusSCSI)
	scsi.SetWWN(strings.ReplaceAll(id, "-", ""))
	v.AttachDisk("/dev/vdb", virtio)
	v.AttachDisk("/dev/sdb", scsi)
	want(t, "by-id", v.user("ls /dev/disk/by-id"),
		"scsi-0QEMU_QEMU_HARDDISK_"+id+"\nvirtio-4a6b3f0e-8d2c-4e1a-9\nwwn-0x"+strings.ReplaceAll(id, "-", "")+"\n", "", 0)
	want(t, "links", v.user("readlink -f /dev/disk/by-id/virtio-4a6b3f0e-8d2c-4e1a-9 /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_"+id), "/dev/vdb\n/dev/sdb\n", "", 0)
	want(t, "lsblk serials", v.user("lsblk -dn -o NAME,SERIAL /dev/vdb /dev/sdb"), "vdb 4a6b3f0e-8d2c-4e1a-9\nsdb "+id+"\n", "", 0)
}

func TestLateUdev(t *testing.T) {
	v := newVM(t, Options{})
	d := NewDisk(1 << 30)
	d.SetSerial("0b6a8f2e-5c3d-4e1f-9a7b-3c2d1e0f9a8b")
	d.DelayUdev(2)
	v.AttachDisk("/dev/vdb", d)
	link := "/dev/disk/by-id/virtio-0b6a8f2e-5c3d-4e1f-9"
	want(t, "no link at first", v.user("test -e "+link), "", "", 1)
	want(t, "settle does not bring it", v.root("udevadm settle --timeout=10 && test -e "+link), "", "", 1)
	want(t, "a user cannot trigger", v.user("udevadm trigger --subsystem-match=block"), "",
		"Failed to write 'change' to '/sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda/uevent': Permission denied\n", 1)
	want(t, "a trigger of other subsystems", v.root("udevadm trigger --subsystem-match=net && test -e "+link), "", "", 1)
	want(t, "the first trigger's event is lost too", v.root("udevadm trigger --action=add --subsystem-match=block && test -e "+link), "", "", 1)
	want(t, "the second brings it", v.root("udevadm trigger && udevadm settle && readlink -f "+link), "/dev/vdb\n", "", 0)

	// A disk udev misses again after it moves to another machine.
	d.DelayUdev(1)
	want(t, "DelayUdev takes the links away", v.user("test -e "+link), "", "", 1)
	other := newVM(t, Options{})
	other.AttachDisk("/dev/vdc", d)
	want(t, "late on the other machine", other.user("test -e "+link), "", "", 1)
	want(t, "triggering one device", other.root("udevadm trigger /dev/vdc && readlink -f "+link), "/dev/vdc\n", "", 0)
	want(t, "unknown action", other.root("udevadm trigger --action=bogus"), "", "Unknown action 'bogus'\n", 1)
	if r := other.root("udevadm info /dev/vdc"); r.code != 2 || !strings.Contains(r.stderr, "not modelled") {
		t.Errorf("udevadm info: %v, want a loud failure", r)
	}
}

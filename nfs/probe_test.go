package nfs_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/nfs"
)

// ParseProbe reads the real blkid -p -o export outputs realtest captured
// (util-linux 2.38.1 on sparse files named vdb), and Decide judges them.
func TestParseProbeReal(t *testing.T) {
	for _, c := range []struct {
		file string
		want nfs.Probe
		// action is Decide's answer; err, when set, its error instead.
		action nfs.Action
		err    string
	}{
		{"blkid-ext4.golden", nfs.Probe{Device: "vdb", Type: "ext4", UUID: "2f1c1f6e-6d1f-4f8e-9a51-0c1d7b3c5e01", Usage: "filesystem"}, nfs.MountExt4, ""},
		{"blkid-gpt.golden", nfs.Probe{Device: "vdb", PTType: "gpt"}, 0, "vdb holds a gpt partition table (blkid PTTYPE=gpt)"},
		{"blkid-xfs.golden", nfs.Probe{Device: "vdb", Type: "xfs", UUID: "9c8b7a6d-5e4f-4321-8fed-cba987654303", Usage: "filesystem"}, 0, "vdb holds an xfs filesystem (blkid TYPE=xfs USAGE=filesystem)"},
		{"blkid-swap.golden", nfs.Probe{Device: "vdb", Type: "swap", UUID: "0a1b2c3d-4e5f-4607-8819-2a3b4c5d6e04", Usage: "other"}, 0, "vdb holds a swap signature (blkid TYPE=swap USAGE=other)"},
	} {
		p, err := nfs.ParseProbe("vdb", 0, readReal(t, c.file))
		if err != nil || p != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.file, p, err, c.want)
			continue
		}
		a, err := p.Decide()
		switch {
		case c.err == "" && (err != nil || a != c.action):
			t.Errorf("%s: Decide() = %v, %v; want %v", c.file, a, err, c.action)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: Decide() = %v, %v; want an error saying %q", c.file, a, err, c.err)
		}
	}
}

func TestParseProbe(t *testing.T) {
	for _, c := range []struct {
		name   string
		exit   int
		stdout string
		want   nfs.Probe
		err    string
	}{
		{"nothing", 2, "", nfs.Probe{Device: "/dev/vdb", Nothing: true}, ""},
		{"escaped_label", 0, "DEVNAME=/dev/vdb\nLABEL=a\\ b\\\"\\$c\\\\d\nUUID=2f1c1f6e-6d1f-4f8e-9a51-0c1d7b3c5e01\nTYPE=ext4\nUSAGE=filesystem\n",
			nfs.Probe{Device: "/dev/vdb", Type: "ext4", UUID: "2f1c1f6e-6d1f-4f8e-9a51-0c1d7b3c5e01", Usage: "filesystem"}, ""},
		{"label_with_equals", 0, "LABEL=a=b\nTYPE=ext4\n", nfs.Probe{Device: "/dev/vdb", Type: "ext4"}, ""},
		{"no_trailing_newline", 0, "PTTYPE=dos", nfs.Probe{Device: "/dev/vdb", PTType: "dos"}, ""},
		{"nothing_but_output", 2, "TYPE=ext4\n", nfs.Probe{}, "exited 2 (nothing found) but printed"},
		{"ambivalent", 8, "", nfs.Probe{}, "blkid -p /dev/vdb exited 8: an ambivalent probe"},
		{"usage_error", 4, "", nfs.Probe{}, "blkid -p /dev/vdb exited 4"},
		{"undefined_status", 1, "", nfs.Probe{}, "blkid -p /dev/vdb exited 1"},
		{"killed", -1, "", nfs.Probe{}, "exited -1"},
		{"found_but_no_type", 0, "DEVNAME=/dev/vdb\nUUID=2f1c1f6e-6d1f-4f8e-9a51-0c1d7b3c5e01\n", nfs.Probe{}, "neither TYPE nor PTTYPE"},
		{"found_but_empty", 0, "", nfs.Probe{}, "neither TYPE nor PTTYPE"},
		{"not_export_format", 0, "/dev/vdb: UUID=\"x\" TYPE=\"ext4\"\n", nfs.Probe{}, "want KEY=value"},
		{"empty_key", 0, "=ext4\nTYPE=ext4\n", nfs.Probe{}, "line 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := nfs.ParseProbe("/dev/vdb", c.exit, []byte(c.stdout))
			if c.err == "" {
				if err != nil || p != c.want {
					t.Errorf("ParseProbe = %+v, %v; want %+v", p, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseProbe = %+v, %v; want an error saying %q", p, err, c.err)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	const uuid = "2f1c1f6e-6d1f-4f8e-9a51-0c1d7b3c5e01"
	for _, c := range []struct {
		name   string
		p      nfs.Probe
		action nfs.Action
		err    string
	}{
		{"nothing_formats", nfs.Probe{Device: "/dev/vdb", Nothing: true}, nfs.FormatExt4, ""},
		{"ext4_mounts", nfs.Probe{Device: "/dev/vdb", Type: "ext4", UUID: uuid, Usage: "filesystem"}, nfs.MountExt4, ""},
		{"ext4_without_uuid", nfs.Probe{Device: "/dev/vdb", Type: "ext4"}, 0, `/dev/vdb holds an ext4 filesystem whose UUID blkid reports as ""`},
		{"ext4_odd_uuid", nfs.Probe{Device: "/dev/vdb", Type: "ext4", UUID: uuid + " x"}, 0, "not a UUID"},
		{"ext4_upper_case_uuid", nfs.Probe{Device: "/dev/vdb", Type: "ext4", UUID: strings.ToUpper(uuid)}, 0, "not a UUID"},
		{"ext4_beside_partition_table", nfs.Probe{Device: "/dev/vdb", Type: "ext4", UUID: uuid, PTType: "dos"}, 0, "/dev/vdb holds a dos partition table"},
		{"gpt", nfs.Probe{Device: "/dev/vdb", PTType: "gpt"}, 0, "/dev/vdb holds a gpt partition table"},
		{"xfs", nfs.Probe{Device: "/dev/vdb", Type: "xfs", Usage: "filesystem"}, 0, "/dev/vdb holds an xfs filesystem"},
		{"ext3", nfs.Probe{Device: "/dev/vdb", Type: "ext3", Usage: "filesystem"}, 0, "/dev/vdb holds an ext3 filesystem"},
		{"btrfs", nfs.Probe{Device: "/dev/vdb", Type: "btrfs", Usage: "filesystem"}, 0, "/dev/vdb holds a btrfs filesystem"},
		{"swap", nfs.Probe{Device: "/dev/vdb", Type: "swap", Usage: "other"}, 0, "/dev/vdb holds a swap signature"},
		{"luks", nfs.Probe{Device: "/dev/vdb", Type: "crypto_LUKS", Usage: "crypto"}, 0, "/dev/vdb holds a crypto_LUKS encrypted volume"},
		{"raid", nfs.Probe{Device: "/dev/vdb", Type: "linux_raid_member", Usage: "raid"}, 0, "/dev/vdb holds a linux_raid_member RAID member"},
		{"lvm", nfs.Probe{Device: "/dev/vdb", Type: "LVM2_member", Usage: "raid"}, 0, "/dev/vdb holds a LVM2_member RAID member"},
		{"zero", nfs.Probe{Device: "/dev/vdb"}, 0, "/dev/vdb: blkid reported neither"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := c.p.Decide()
			if c.err == "" {
				if err != nil || a != c.action {
					t.Errorf("Decide() = %v, %v; want %v", a, err, c.action)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || a != 0 {
				t.Errorf("Decide() = %v, %v; want 0 and an error saying %q", a, err, c.err)
			}
			if !strings.Contains(err.Error(), "/dev/vdb") {
				t.Errorf("the error %q does not name the device", err)
			}
		})
	}
}

func TestActionString(t *testing.T) {
	for a, want := range map[nfs.Action]string{nfs.FormatExt4: "format ext4", nfs.MountExt4: "mount ext4", 0: "Action(0)"} {
		if got := a.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(a), got, want)
		}
	}
}

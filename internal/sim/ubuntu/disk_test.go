package ubuntu

import (
	"context"
	"encoding/json"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"io"
	"strings"
	"testing"

	"github.com/pkg/sftp"
)

func TestBlankDisk(t *testing.T) {
	v := newVM(t, Options{})
	d := NewDisk(10 << 30)
	v.AttachDisk("/dev/vdb", d)
	wantStr(t, "device node", v.user("test -b /dev/vdb && stat -c '%U:%G' /dev/vdb"), "root:disk\n", "", 0)
	wantStr(t, "blkid on a blank disk", v.root("blkid /dev/vdb"), "", "", 2)
	wantStr(t, "blkid -s TYPE on a blank disk", v.root("blkid -o value -s TYPE /dev/vdb"), "", "", 2)
	wantStr(t, "lsblk sizes", v.user("lsblk -dn -o NAME,SIZE"), "vda 20G\nvdb 10G\n", "", 0)
	wantStr(t, "lsblk one device", v.user("lsblk -n -o NAME,FSTYPE,MOUNTPOINT /dev/vdb"), "vdb\n", "", 0)
	wantStr(t, "lsblk bytes", v.user("lsblk -bdno SIZE /dev/vdb"), "10737418240\n", "", 0)
	wantStr(t, "lsblk unknown device", v.user("lsblk /dev/vdz"), "", "lsblk: /dev/vdz: not a block device\n", 32)
	wantStr(t, "mount unformatted", v.root("mkdir -p /data && mount /dev/vdb /data"), "",
		"mount: /data: wrong fs type, bad option, bad superblock on /dev/vdb, missing codepage or helper program, or other error.\n", 32)
	if d.FSType() != "" || d.Formats() != 0 || len(v.Mounts()) != 8 {
		t.Errorf("blank disk changed: %q, %d formats, %d mounts", d.FSType(), d.Formats(), len(v.Mounts()))
	}
	v.DetachDisk("/dev/vdb")
	wantStr(t, "detached", v.user("test -e /dev/vdb"), "", "", 1)
	if m, dev := d.Attachment(); m != nil || dev != "" {
		t.Errorf("still attached to %v %s", m, dev)
	}
}

func TestMkfsFormatsOnce(t *testing.T) {
	v := newVM(t, Options{})
	d := NewDisk(10 << 30)
	v.AttachDisk("/dev/vdb", d)
	wantStr(t, "mkfs as a user", v.user("mkfs.ext4 /dev/vdb"), "", "mke2fs 1.46.5 (30-Dec-2021)\nmkfs.ext4: Permission denied while trying to determine filesystem size\n", 1)

	r := v.user("sudo mkfs.ext4 -L data /dev/vdb")
	wantCode(t, "mkfs", r, 0, "Creating filesystem with 2621440 4k blocks and 655360 inodes\nFilesystem UUID: "+d.UUID()+"\n", "mke2fs 1.46.5 (30-Dec-2021)\n")
	if d.FSType() != "ext4" || d.Formats() != 1 || d.Label() != "data" || len(d.UUID()) != 36 {
		t.Fatalf("after mkfs: %q %d %q %q", d.FSType(), d.Formats(), d.Label(), d.UUID())
	}
	wantStr(t, "blkid", v.root("blkid /dev/vdb"), `/dev/vdb: LABEL="data" UUID="`+d.UUID()+`" BLOCK_SIZE="4096" TYPE="ext4"`+"\n", "", 0)
	wantStr(t, "blkid TYPE", v.root("blkid -o value -s TYPE /dev/vdb"), "ext4\n", "", 0)
	wantStr(t, "blkid UUID", v.root("blkid -s UUID -o value /dev/vdb"), d.UUID()+"\n", "", 0)
	wantStr(t, "blkid -U", v.root("blkid -U "+d.UUID()), "/dev/vdb\n", "", 0)
	wantStr(t, "blkid as a user", v.user("blkid /dev/vdb"), "", "", 2)
	wantStr(t, "by-uuid link", v.user("readlink -f /dev/disk/by-uuid/"+d.UUID()+" /dev/disk/by-label/data"), "/dev/vdb\n/dev/vdb\n", "", 0)
	wantStr(t, "lsblk fs", v.user("lsblk -n -o NAME,FSTYPE,UUID /dev/vdb"), "vdb ext4 "+d.UUID()+"\n", "", 0)

	// Without a terminal (an SSH exec session has none) mkfs does not ask:
	// it replaces the filesystem, data and all (e2fsprogs misc/mke2fs.c
	// checks for one only when isatty(0) && isatty(1)).
	uuid := d.UUID()
	wantStr(t, "mkfs over a filesystem", v.root("mkfs.ext4 -q /dev/vdb"), "", "", 0)
	if d.Formats() != 2 || d.UUID() == uuid || d.Label() != "" {
		t.Fatalf("mkfs over a filesystem: %d formats, uuid %s (was %s), label %q", d.Formats(), d.UUID(), uuid, d.Label())
	}
	wantStr(t, "mkfs -F", v.root("mkfs -t ext4 -F -q /dev/vdb"), "", "", 0)
	if d.Formats() != 3 {
		t.Errorf("after mkfs -F: %d formats", d.Formats())
	}
	wantStr(t, "mkfs of a missing device", v.root("mkfs.ext4 -q /dev/vdz"), "", "The file /dev/vdz does not exist and no size was specified.\n", 1)
	wantStr(t, "mkfs of the root disk", v.root("mkfs.ext4 -F -q /dev/vda1"), "", "/dev/vda1 is mounted; will not make a filesystem here!\n", 1)
	wantStr(t, "mkfs of an absent type", v.root("mkfs -t xfs /dev/vdb"), "", "mkfs: failed to execute mkfs.xfs: No such file or directory\n", 1)
	wantStr(t, "mkfs defaults to ext2", v.root("mkfs -F -q /dev/vdb && blkid -o value -s TYPE /dev/vdb"), "ext2\n", "", 0)
}

func TestMountUmountAndData(t *testing.T) {
	v := newVM(t, Options{})
	d := NewDisk(10 << 30)
	v.AttachDisk("/dev/vdb", d)
	v.mustOK("mkfs.ext4 -q /dev/vdb")

	wantStr(t, "missing mount point", v.root("mount /dev/vdb /data"), "", "mount: /data: mount point does not exist.\n", 32)
	v.mustOK("mkdir -p /data && echo underneath > /data/before.txt")
	wantStr(t, "mount as a user", v.user("mount /dev/vdb /data"), "", "mount: /data: must be superuser to use mount.\n", 32)
	wantStr(t, "not yet a mountpoint", v.user("mountpoint /data"), "/data is not a mountpoint\n", "", 32)
	wantStr(t, "missing device", v.root("mount /dev/vdc /data"), "", "mount: /data: special device /dev/vdc does not exist.\n", 32)
	wantStr(t, "mount", v.user("sudo mount /dev/vdb /data -t ext4"), "", "", 0)
	wantStr(t, "mountpoint", v.user("mountpoint /data; mountpoint -q /data && echo yes"), "/data is a mountpoint\nyes\n", "", 0)
	wantStr(t, "mountpoint of a missing dir", v.user("mountpoint /nowhere"), "", "mountpoint: /nowhere: No such file or directory\n", 1)
	wantStr(t, "already mounted", v.root("mount /dev/vdb /data"), "", "mount: /data: /dev/vdb already mounted on /data.\n", 32)
	wantStr(t, "mounted twice", v.root("mkdir -p /other && mount /dev/vdb /other"), "", "mount: /other: /dev/vdb already mounted or mount point busy.\n", 32)
	wantStr(t, "mounted content", v.user("ls -a /data"), ".\n..\nlost+found\n", "", 0)
	wantStr(t, "findmnt", v.user("findmnt -n -o SOURCE,TARGET,FSTYPE /data"), "/dev/vdb /data ext4\n", "", 0)
	wantStr(t, "findmnt missing", v.user("findmnt /other"), "", "", 1)
	wantStr(t, "df", v.user("df | grep -c /dev/vdb"), "1\n", "", 0)
	wantStr(t, "lsblk mountpoint", v.user("lsblk -n -o NAME,MOUNTPOINT /dev/vdb"), "vdb /data\n", "", 0)
	wantStr(t, "/proc/mounts", v.user("grep /data /proc/mounts"), "/dev/vdb /data ext4 rw,relatime 0 0\n", "", 0)
	wantStr(t, "mount lists it", v.user("mount | grep vdb"), "/dev/vdb on /data type ext4 (rw,relatime)\n", "", 0)
	wantStr(t, "mkfs of a mounted disk", v.root("mkfs.ext4 -F /dev/vdb"), "", "mke2fs 1.46.5 (30-Dec-2021)\n/dev/vdb is mounted; will not make a filesystem here!\n", 1)
	if got := v.Mounts(); got[len(got)-1].Source != "/dev/vdb" || got[len(got)-1].Target != "/data" || got[len(got)-1].FSType != "ext4" {
		t.Errorf("Mounts: %+v", got)
	}

	// Files written under the mount point belong to the disk.
	v.mustOK("mkdir -p /data/exports/a && echo payload > /data/exports/a/file.txt && chown -R nobody:nogroup /data/exports && chmod 2775 /data/exports && ln -s a/file.txt /data/exports/link")
	if data, err := d.ReadFile("exports/a/file.txt"); err != nil || string(data) != "payload\n" {
		t.Errorf("Disk.ReadFile while mounted: %q, %v", data, err)
	}
	// SFTP sees them too.
	sc, err := sftp.NewClient(v.client("ubuntu"))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if f, err := sc.Open("/data/exports/a/file.txt"); err != nil {
		t.Errorf("SFTP open: %v", err)
	} else {
		data, _ := io.ReadAll(f)
		f.Close()
		if string(data) != "payload\n" {
			t.Errorf("SFTP read %q", data)
		}
	}

	wantStr(t, "umount as a user", v.user("umount /data"), "", "umount: /data: must be superuser to unmount.\n", 32)
	wantStr(t, "umount busy", v.root("cd /data/exports && umount /data"), "", "umount: /data: target is busy.\n", 32)
	wantStr(t, "umount", v.root("umount /data"), "", "", 0)
	wantStr(t, "umount again", v.root("umount /data"), "", "umount: /data: not mounted.\n", 32)
	wantStr(t, "umount of a missing dir", v.root("umount /nowhere"), "", "umount: /nowhere: no mount point specified.\n", 32)
	wantStr(t, "umount /", v.root("umount /"), "", "umount: /: target is busy.\n", 32)
	wantStr(t, "the directory's own content is back", v.user("ls /data"), "before.txt\n", "", 0)
	if data, err := d.ReadFile("exports/a/file.txt"); err != nil || string(data) != "payload\n" {
		t.Errorf("Disk.ReadFile unmounted: %q, %v", data, err)
	}
	if files := d.Files(); strings.Join(files, ",") != "exports/a/file.txt" {
		t.Errorf("Files: %v", files)
	}

	wantStr(t, "remount by device link", v.root("mount /dev/disk/by-uuid/"+d.UUID()+" /data"), "", "", 0)
	wantStr(t, "data survived", v.user("cat /data/exports/link; stat -c '%U:%G %a' /data/exports; ls /data"), "payload\nnobody:nogroup 2775\nexports\nlost+found\n", "", 0)
	wantStr(t, "umount by device", v.root("umount /dev/vdb"), "", "", 0)

	// mkfs -F wipes the disk.
	v.mustOK("mkfs.ext4 -F -q /dev/vdb && mount /dev/vdb /data")
	wantStr(t, "wiped", v.user("ls /data"), "lost+found\n", "", 0)
	if _, err := d.ReadFile("exports/a/file.txt"); err == nil {
		t.Error("the file survived mkfs")
	}
}

func TestFstabAndMountAll(t *testing.T) {
	v := newVM(t, Options{})
	d := NewDisk(5 << 30)
	v.AttachDisk("/dev/vdb", d)
	v.mustOK("mkfs.ext4 -q -L nfsdata /dev/vdb && mkdir -p /srv/nfs")
	v.mustOK("echo 'UUID=" + d.UUID() + " /srv/nfs ext4 defaults,nofail 0 2' >> /etc/fstab")
	wantStr(t, "mount -a", v.root("mount -a"), "", "", 0)
	wantStr(t, "mounted from fstab", v.user("findmnt -n -o SOURCE,TARGET /srv/nfs"), "/dev/vdb /srv/nfs\n", "", 0)
	wantStr(t, "mount -a again is a no-op", v.root("mount -a"), "", "", 0)
	if n := len(v.Mounts()); n != 9 {
		t.Errorf("%d mounts after two mount -a", n)
	}
	v.mustOK("umount /srv/nfs")
	wantStr(t, "mount DIR from fstab", v.root("mount /srv/nfs && mountpoint -q /srv/nfs"), "", "", 0)
	v.mustOK("umount /srv/nfs")
	wantStr(t, "mount LABEL=", v.root("mount LABEL=nfsdata /srv/nfs && mountpoint -q /srv/nfs && umount /srv/nfs"), "", "", 0)
	wantStr(t, "not in fstab", v.root("mount /mnt"), "", "mount: /mnt: can't find in /etc/fstab.\n", 1)

	// A nofail entry whose disk is absent is skipped; one without nofail fails.
	v.mustOK("echo '/dev/vdc /mnt ext4 defaults,nofail 0 2' >> /etc/fstab")
	wantStr(t, "nofail", v.root("mount -a && mountpoint -q /srv/nfs"), "", "", 0)
	v.mustOK("echo '/dev/vdd /opt ext4 defaults 0 2' >> /etc/fstab")
	wantStr(t, "missing device", v.root("mount -a"), "", "mount: /opt: special device /dev/vdd does not exist.\n", 32)

	// NFS without a helper, and with the default nfs-common's.
	wantStr(t, "nfs without nfs-common", v.root("mount -t nfs 10.0.0.5:/exports /mnt"), "",
		"mount: /mnt: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.\n", 32)
	v.mustOK("apt-get update -qq && apt-get install -y -qq nfs-common")
	wantCode(t, "nfs helper of the default catalog", v.root("mount -t nfs 10.0.0.5:/exports /mnt"), 32, "", "mount.nfs: NFS mounts are not modelled")
}

func TestAddMountForHelpers(t *testing.T) {
	c := DefaultCatalog()
	c.Add(Package{Name: "nfs-common", Version: "1:2.6.1-1ubuntu1.2", Tools: map[string]Tool{
		"/usr/sbin/mount.nfs": func(_ context.Context, m *Machine, p *sshtest.Process) int {
			if err := m.AddMount(Mount{Source: p.Args[1], Target: p.Args[2], FSType: "nfs4", Options: []string{"rw", "relatime", "vers=4.2"}}); err != nil {
				return p.Fail(32, "%v", err)
			}
			return 0
		},
	}})
	v := newVM(t, Options{Catalog: c, Packages: []string{"nfs-common"}})
	wantStr(t, "nfs mount through the helper", v.root("mkdir -p /mnt/pv && mount 10.0.0.5:/exports/pv /mnt/pv && mountpoint /mnt/pv"), "/mnt/pv is a mountpoint\n", "", 0)
	wantStr(t, "findmnt", v.user("findmnt -n -o SOURCE,FSTYPE /mnt/pv"), "10.0.0.5:/exports/pv nfs4\n", "", 0)
	wantStr(t, "umount", v.root("umount /mnt/pv && mountpoint -q /mnt/pv"), "", "", 32)
	if v.RemoveMount("/mnt/pv") {
		t.Error("RemoveMount found a mount umount removed")
	}
}

func TestDiskMovesToAHealedMachine(t *testing.T) {
	old := newVM(t, Options{})
	d := NewDisk(10 << 30)
	d.SetSerial("0b6a8f2e-5c3d-4e1f-9a7b-3c2d1e0f9a8b")
	old.AttachDisk("/dev/vdb", d)
	old.mustOK("mkfs.ext4 -q /dev/vdb && mkdir -p /data && mount /dev/vdb /data && echo keep > /data/state.txt")
	wantStr(t, "by-id", old.user("readlink /dev/disk/by-id/virtio-0b6a8f2e-5c3d-4e1f-9"), "../../vdb\n", "", 0)

	// Heal: a new VM gets the volume while the old one still has it
	// mounted, as when Nova deletes the old server.
	healed := newVM(t, Options{})
	healed.AttachDisk("/dev/vdc", d)
	if m, dev := d.Attachment(); m != healed.Machine || dev != "/dev/vdc" {
		t.Fatalf("attachment: %s", dev)
	}
	if len(old.Mounts()) != 8 || old.Disk("/dev/vdb") != nil {
		t.Errorf("the old machine still has the disk: %+v", old.Mounts())
	}
	wantCode(t, "same filesystem", healed.root("blkid -o value -s UUID /dev/vdc"), 0, d.UUID(), "")
	wantStr(t, "data is there", healed.root("mkdir -p /data && mount /dev/vdc /data && cat /data/state.txt"), "keep\n", "", 0)
	if d.Formats() != 1 {
		t.Errorf("formats: %d", d.Formats())
	}
	healed.DetachDisk("/dev/vdc")
	if data, err := d.ReadFile("state.txt"); err != nil || string(data) != "keep\n" {
		t.Errorf("after a detach while mounted: %q %v", data, err)
	}
	wantStr(t, "the mount went with the disk", healed.user("mountpoint -q /data"), "", "", 32)
}

func TestNestedMounts(t *testing.T) {
	v := newVM(t, Options{})
	outer, inner := NewDisk(1<<30), NewDisk(1<<30)
	v.AttachDisk("/dev/vdb", outer)
	v.AttachDisk("/dev/vdc", inner)
	v.mustOK("mkfs.ext4 -q /dev/vdb && mkfs.ext4 -q /dev/vdc && mkdir -p /a && mount /dev/vdb /a && mkdir /a/b && echo outer > /a/b/hidden && mount /dev/vdc /a/b && echo inner > /a/b/x")
	if files := outer.Files(); strings.Join(files, ",") != "b/hidden" {
		t.Errorf("outer files while a disk is mounted inside: %v", files)
	}
	wantStr(t, "umount busy", v.root("umount /a"), "", "umount: /a: target is busy.\n", 32)
	v.DetachDisk("/dev/vdb") // forced: the inner mount goes first
	if files := inner.Files(); strings.Join(files, ",") != "x" {
		t.Errorf("inner files: %v", files)
	}
	if files := outer.Files(); strings.Join(files, ",") != "b/hidden" {
		t.Errorf("outer files: %v", files)
	}
	if n := len(v.Mounts()); n != 8 {
		t.Errorf("%d mounts left", n)
	}
}

func TestLsblkFormats(t *testing.T) {
	v := newVM(t, Options{})
	d := NewDisk(10 << 30)
	v.AttachDisk("/dev/vdb", d)
	v.mustOK("mkfs.ext4 -q -L data /dev/vdb && mkdir /data && mount /dev/vdb /data")

	r := v.user("lsblk -J -o NAME,SIZE,FSTYPE,MOUNTPOINT")
	var doc struct {
		Blockdevices []struct {
			Name       string  `json:"name"`
			Size       string  `json:"size"`
			FSType     *string `json:"fstype"`
			Mountpoint *string `json:"mountpoint"`
			Children   []struct {
				Name       string  `json:"name"`
				Mountpoint *string `json:"mountpoint"`
			} `json:"children"`
		} `json:"blockdevices"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("lsblk -J: %v\n%s", err, r.stdout)
	}
	if len(doc.Blockdevices) != 2 || doc.Blockdevices[1].Name != "vdb" || doc.Blockdevices[1].Size != "10G" ||
		doc.Blockdevices[1].Mountpoint == nil || *doc.Blockdevices[1].Mountpoint != "/data" ||
		len(doc.Blockdevices[0].Children) != 3 || *doc.Blockdevices[0].Children[0].Mountpoint != "/" || doc.Blockdevices[0].FSType != nil {
		t.Errorf("lsblk -J:\n%s", r.stdout)
	}
	wantStr(t, "pairs", v.user("lsblk -P -o NAME,FSTYPE,LABEL /dev/vdb"), `NAME="vdb" FSTYPE="ext4" LABEL="data"`+"\n", "", 0)
	wantStr(t, "raw", v.user("lsblk -rn -o NAME,MOUNTPOINT"), "vda \nvda1 /\nvda14 \nvda15 /boot/efi\nvdb /data\n", "", 0)
	wantStr(t, "paths, list", v.user("lsblk -lpn -o NAME"), "/dev/vda\n/dev/vda1\n/dev/vda14\n/dev/vda15\n/dev/vdb\n", "", 0)
	wantCode(t, "-f", v.user("lsblk -f /dev/vdb"), 0, "NAME FSTYPE FSVER LABEL UUID", "")
	wantStr(t, "unknown column", v.user("lsblk -o NAME,BOGUS"), "", "lsblk: unknown column: BOGUS\n", 1)
	wantStr(t, "df -hT", v.user("df -hT /data"), "Filesystem Type Size Used Avail Use% Mounted on\n/dev/vdb   ext4 9.7G  24K  9.2G   1% /data\n", "", 0)
}

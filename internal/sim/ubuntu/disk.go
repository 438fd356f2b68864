package ubuntu

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Disk is a block device's content: size, filesystem and files. It
// belongs to the caller, not to a machine, and outlives the machines it is
// attached to, as a Cinder volume outlives the VM a heal replaces: attach
// it to one [Machine] with [Machine.AttachDisk], later to another, and the
// files written under its mount point are still there.
//
// A disk holds at most one signature, as blkid -p sees it: the filesystem
// a simulated mkfs made (ext2, ext3, ext4), or one a test put there to
// stand for what some other program wrote ([Disk.WriteGPT],
// [Disk.FormatXFS], [Disk.MakeSwap]); mkfs replaces any of them.
//
// A Disk is safe for concurrent use. It is attached to at most one machine
// at a time (attaching it elsewhere detaches it first, as when the VM that
// had it was deleted).
type Disk struct {
	mu       sync.Mutex
	size     int64
	serial   string
	bus      DiskBus
	wwn      string
	fs       *filesystem // nil when the disk holds no filesystem
	pt       *partTable  // a partition table on the whole disk, nil if none
	formats  int
	udevLost int      // DelayUdev: triggers still needed before udev links it
	holder   *Machine // the machine it is attached to
	dev      string   // its device there ("/dev/vdb")
}

// DiskBus is how a disk is attached to its VM, which decides its
// /dev/disk/by-id names (udev's 60-persistent-storage.rules names a disk
// ID_BUS-ID_SERIAL).
type DiskBus int

const (
	// BusVirtio is a virtio-blk disk, Nova's default (/dev/vdX): udev links
	// it as /dev/disk/by-id/virtio-SERIAL with the serial cut to 20
	// characters, all a virtio-blk device reports (VIRTIO_BLK_ID_BYTES).
	BusVirtio DiskBus = iota
	// BusSCSI is a disk on virtio-scsi (the image property
	// hw_disk_bus=scsi, /dev/sdX): udev links it as
	// /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL, QEMU's scsi-hd
	// keeping 36 characters of the serial (hw/scsi/scsi-disk.c), and as
	// wwn-0xWWN when the disk has a WWN ([Disk.SetWWN]).
	BusSCSI
)

// partTable is a partition table written on a whole disk.
type partTable struct{ pttype, ptuuid string }

// filesystem is the filesystem mkfs made on a disk.
type filesystem struct {
	fstype, uuid, label string
	blockSize           int // BLOCK_SIZE as blkid reports it
	created             time.Time
	lastMount           string
	root                *node // the content while not mounted; nil for xfs and swap
	mount               *mountEntry
}

// isExt reports whether the filesystem is one whose files the simulation
// models: ext2, ext3 or ext4.
func (f *filesystem) isExt() bool { return strings.HasPrefix(f.fstype, "ext") }

// NewDisk returns a blank disk (no filesystem) of the given size.
func NewDisk(sizeBytes int64) *Disk { return &Disk{size: sizeBytes} }

// Size returns the disk's size in bytes.
func (d *Disk) Size() int64 { return d.size }

// FSType returns the type of the filesystem on the disk ("ext4"), "" when
// it has none.
func (d *Disk) FSType() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs == nil {
		return ""
	}
	return d.fs.fstype
}

// UUID returns the filesystem's UUID, "" when the disk has no filesystem.
func (d *Disk) UUID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs == nil {
		return ""
	}
	return d.fs.uuid
}

// Label returns the filesystem's label (mkfs -L), "" if none.
func (d *Disk) Label() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs == nil {
		return ""
	}
	return d.fs.label
}

// Formats returns how many times mkfs made a filesystem on the disk.
func (d *Disk) Formats() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.formats
}

// SetSerial sets the disk's serial number; Nova gives a volume's disk the
// volume ID. An attached disk with a serial appears under
// /dev/disk/by-id as its bus names it ([DiskBus]).
func (d *Disk) SetSerial(serial string) {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	d.serial = serial
	if h != nil {
		h.updateDiskLinksLocked(d)
	}
}

// Serial returns the disk's serial number.
func (d *Disk) Serial() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.serial
}

// SetBus sets how the disk is attached ([BusVirtio] by default), which
// decides its /dev/disk/by-id names; attach it under a name of that bus
// (/dev/sdb for SCSI).
func (d *Disk) SetBus(b DiskBus) {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	d.bus = b
	if h != nil {
		h.updateDiskLinksLocked(d)
	}
}

// Bus returns how the disk is attached.
func (d *Disk) Bus() DiskBus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bus
}

// SetWWN gives a SCSI disk a World Wide Name (hex digits, without 0x):
// udev then also links it as /dev/disk/by-id/wwn-0xWWN
// (60-persistent-storage.rules, ID_WWN_WITH_EXTENSION). Some Cinder
// backends report the volume ID without dashes, which is why
// cloud-provider-openstack looks for wwn-0x<id without dashes>
// (pkg/util/mount/mount.go).
func (d *Disk) SetWWN(wwn string) {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	d.wwn = wwn
	if h != nil {
		h.updateDiskLinksLocked(d)
	}
}

// DelayUdev makes udev miss the disk: its /dev/disk links (by-id, by-uuid,
// by-label) vanish now, and stay missing after any later attachment,
// until the triggers-th `udevadm trigger` covering block devices on the
// machine it is attached to, which replays the event udev lost. That is
// what cloud-provider-openstack's mount util works around when a volume's
// by-id link is late: it retries after `udevadm trigger`
// (pkg/util/mount/mount.go, getDevicePathBySerialID and its callers).
// DelayUdev(0) makes udev see the disk again at once.
func (d *Disk) DelayUdev(triggers int) {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	d.udevLost = max(triggers, 0)
	if h != nil {
		h.updateDiskLinksLocked(d)
	}
}

// PartitionTable returns the type of the partition table written on the
// whole disk ("gpt"), "" if none.
func (d *Disk) PartitionTable() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pt == nil {
		return ""
	}
	return d.pt.pttype
}

// WriteGPT writes an empty GPT partition table on the disk, as `sfdisk`
// with "label: gpt" or `parted mklabel gpt` do: its first sectors are
// the protective MBR, the GPT header and the partition entries, so an
// ext4 superblock (at byte 1024) is gone, and blkid -p reports PTUUID and
// PTTYPE="gpt". It fails on a mounted disk.
func (d *Disk) WriteGPT() error {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	if d.fs != nil && d.fs.mount != nil {
		return errors.New("ubuntu: the disk is mounted")
	}
	d.fs = nil
	d.pt = &partTable{pttype: "gpt", ptuuid: newUUID()}
	if h != nil {
		h.updateDiskLinksLocked(d)
	}
	return nil
}

// FormatXFS puts an XFS filesystem on the disk, as mkfs.xfs does (label
// may be empty): blkid -p reports it as real blkid does an XFS made by
// mkfs.xfs (xfsprogs 6.1) on a 512-byte-sector device, UUID,
// BLOCK_SIZE="512", TYPE="xfs", USAGE="filesystem" and no VERSION. Its
// files are not modelled, nor is mounting it. It fails on a mounted disk.
func (d *Disk) FormatXFS(label string) error {
	return d.foreignFS("xfs", label, 512)
}

// MakeSwap makes the disk a swap area, as mkswap does (label may be
// empty): blkid -p reports UUID, VERSION="1", TYPE="swap" and
// USAGE="other". It fails on a mounted disk.
func (d *Disk) MakeSwap(label string) error {
	return d.foreignFS("swap", label, 0)
}

func (d *Disk) foreignFS(fstype, label string, blockSize int) error {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	if d.fs != nil && d.fs.mount != nil {
		return errors.New("ubuntu: the disk is mounted")
	}
	d.pt = nil
	d.fs = &filesystem{fstype: fstype, uuid: newUUID(), label: label, blockSize: blockSize, created: time.Now()}
	if h != nil {
		h.updateDiskLinksLocked(d)
	}
	return nil
}

// Attachment returns the machine and device the disk is attached to, or
// nil and "".
func (d *Disk) Attachment() (*Machine, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.holder, d.dev
}

// lockWithHolder locks the machine the disk is attached to (if any) and
// then the disk, in that order, and returns the machine.
func (d *Disk) lockWithHolder() *Machine {
	for {
		d.mu.Lock()
		h := d.holder
		d.mu.Unlock()
		if h != nil {
			h.mu.Lock()
		}
		d.mu.Lock()
		if d.holder == h {
			return h
		}
		d.mu.Unlock()
		if h != nil {
			h.mu.Unlock()
		}
	}
}

func (d *Disk) unlockWithHolder(h *Machine) {
	d.mu.Unlock()
	if h != nil {
		h.mu.Unlock()
	}
}

// ReadFile returns the content of a file on the disk's filesystem; name is
// relative to the filesystem's root ("exports/a.txt"). While the disk is
// mounted, it reads what the machine sees under the mount point.
func (d *Disk) ReadFile(name string) ([]byte, error) {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	if err := d.extLocked(); err != nil {
		return nil, err
	}
	clean := path.Clean("/" + name)
	if mt := d.fs.mount; mt != nil && h != nil {
		return h.fs().ReadFile(path.Join(mt.Target, clean))
	}
	n := d.fs.root.lookup(clean)
	if n == nil || !n.mode.IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return slices.Clone(n.data), nil
}

// WriteFile writes a file (mode 0644, owned by root) on the disk's
// filesystem, creating its parent directories (0755), as a test's
// stand-in for data an application left on the volume; name is relative
// to the filesystem's root. While the disk is mounted, the file appears
// under the mount point.
func (d *Disk) WriteFile(name string, data []byte) error {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	if err := d.extLocked(); err != nil {
		return err
	}
	clean := path.Clean("/" + name)
	if clean == "/" {
		return errors.New("ubuntu: WriteFile needs a file name")
	}
	if mt := d.fs.mount; mt != nil && h != nil {
		return h.fs().WriteFile(path.Join(mt.Target, clean), data, 0o644)
	}
	dir := d.fs.root
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for _, part := range parts[:len(parts)-1] {
		next := dir.kids[part]
		if next == nil {
			next = &node{mode: fs.ModeDir | 0o755, mtime: time.Now(), kids: map[string]*node{}}
			dir.kids[part] = next
		}
		if !next.mode.IsDir() {
			return &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
		}
		dir = next
	}
	last := parts[len(parts)-1]
	if old := dir.kids[last]; old != nil && !old.mode.IsRegular() {
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	dir.kids[last] = &node{mode: 0o644, mtime: time.Now(), data: slices.Clone(data)}
	return nil
}

// extLocked fails unless the disk holds a filesystem whose files the
// simulation models.
func (d *Disk) extLocked() error {
	switch {
	case d.fs == nil:
		return errors.New("ubuntu: the disk has no filesystem")
	case !d.fs.isExt():
		return fmt.Errorf("ubuntu: files on %s are not modelled", d.fs.fstype)
	}
	return nil
}

// Files returns the paths of the regular files on the disk's filesystem,
// relative to its root and sorted (nil without a filesystem whose files
// are modelled).
func (d *Disk) Files() []string {
	h := d.lockWithHolder()
	defer d.unlockWithHolder(h)
	if d.extLocked() != nil {
		return nil
	}
	root := d.fs.root
	if mt := d.fs.mount; mt != nil && h != nil {
		root = h.snapshotLocked(mt.Target, mt)
	}
	var out []string
	root.walk("", func(rel string, n *node) {
		if n.mode.IsRegular() {
			out = append(out, strings.TrimPrefix(rel, "/"))
		}
	})
	slices.Sort(out)
	return out
}

// formatLocked makes a fresh filesystem on the disk, replacing whatever
// signature it had; the caller holds d.mu.
func (d *Disk) formatLocked(fstype, label string, blockSize int) {
	d.pt = nil
	d.fs = &filesystem{
		fstype: fstype, uuid: newUUID(), label: label, blockSize: blockSize, created: time.Now(),
		root: &node{mode: fs.ModeDir | 0o755, mtime: time.Now(), kids: map[string]*node{
			"lost+found": {mode: fs.ModeDir | 0o700, mtime: time.Now(), kids: map[string]*node{}},
		}},
	}
	d.formats++
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// --- file trees -------------------------------------------------------------------

// node is a file held outside a machine's filesystem: the content of an
// unmounted disk, or what a mount hides.
type node struct {
	mode     fs.FileMode
	uid, gid int
	mtime    time.Time
	data     []byte
	target   string
	kids     map[string]*node
}

func (n *node) lookup(clean string) *node {
	cur := n
	for _, part := range strings.Split(strings.TrimPrefix(clean, "/"), "/") {
		if part == "" {
			continue
		}
		if cur == nil || cur.kids == nil {
			return nil
		}
		cur = cur.kids[part]
	}
	return cur
}

func (n *node) walk(rel string, fn func(rel string, n *node)) {
	fn(rel, n)
	for _, name := range sortedKeys(n.kids) {
		n.kids[name].walk(rel+"/"+name, fn)
	}
}

func (n *node) clone() *node {
	c := *n
	c.data = slices.Clone(n.data)
	if n.kids != nil {
		c.kids = map[string]*node{}
		for k, v := range n.kids {
			c.kids[k] = v.clone()
		}
	}
	return &c
}

// bytes is the size of the files in the tree.
func (n *node) bytes() int64 {
	var total int64
	n.walk("", func(_ string, x *node) { total += int64(len(x.data)) })
	return total
}

func sortedKeys(m map[string]*node) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// snapshotLocked copies the tree at dir out of the machine's filesystem.
// Below it, the targets of other mounts contribute what those mounts hide
// (the content of the filesystem being copied), not the mounted content.
func (m *Machine) snapshotLocked(dir string, self *mountEntry) *node {
	hidden := map[string]*node{}
	for _, mt := range m.mounts {
		if mt != self && strings.HasPrefix(mt.Target, strings.TrimSuffix(dir, "/")+"/") && mt.hidden != nil {
			hidden[mt.Target] = mt.hidden
		}
	}
	var copyTree func(p string) *node
	copyTree = func(p string) *node {
		if h, ok := hidden[p]; ok {
			return h.clone()
		}
		fi, err := m.fs().Lstat(p)
		if err != nil {
			return nil
		}
		uid, gid := sshtest.Owner(fi)
		n := &node{mode: fi.Mode(), uid: uid, gid: gid, mtime: fi.ModTime()}
		switch {
		case fi.IsDir():
			n.kids = map[string]*node{}
			entries, _ := m.fs().ReadDir(p)
			for _, e := range entries {
				if k := copyTree(path.Join(p, e.Name())); k != nil {
					n.kids[e.Name()] = k
				}
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			n.target, _ = m.fs().Readlink(p)
		case fi.Mode().IsRegular():
			n.data, _ = m.fs().ReadFile(p)
		default:
			return nil // devices and the like are not kept
		}
		return n
	}
	return copyTree(dir)
}

// clearDirLocked removes everything inside dir.
func (m *Machine) clearDirLocked(dir string) error {
	entries, err := m.fs().ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		if fi, err := m.fs().Lstat(p); err == nil && fi.IsDir() {
			if err := m.clearDirLocked(p); err != nil {
				return err
			}
		}
		if err := m.fs().Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// restoreLocked gives the existing directory dir the attributes and the
// content of the tree n.
func (m *Machine) restoreLocked(dir string, n *node) error {
	root := m.fs().As(sshtest.Root, "/")
	var create func(p string, n *node) error
	create = func(p string, n *node) error {
		perm := n.mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		switch {
		case n.mode.IsDir():
			if p != dir {
				if err := m.fs().Mkdir(p, perm.Perm()); err != nil {
					return err
				}
			}
			for _, name := range sortedKeys(n.kids) {
				if err := create(path.Join(p, name), n.kids[name]); err != nil {
					return err
				}
			}
			if err := m.fs().Chmod(p, perm); err != nil {
				return err
			}
		case n.mode&fs.ModeSymlink != 0:
			return m.fs().Symlink(n.target, p)
		default:
			if err := m.fs().WriteFile(p, n.data, perm); err != nil {
				return err
			}
		}
		if err := m.fs().Chown(p, n.uid, n.gid); err != nil {
			return err
		}
		return root.Chtimes(p, n.mtime)
	}
	return create(dir, n)
}

// --- attaching disks ------------------------------------------------------------

// AttachDisk attaches a disk to the machine as dev ("/dev/vdb"), as Nova
// attaches a volume: the device node appears (block device, root:disk
// 0660), lsblk and blkid see it, and /dev/disk/by-uuid, by-label and by-id
// links point at it. A disk attached to another machine is detached from
// it first, as if that VM had been deleted (anything mounted from it there
// is unmounted, its files kept on the disk). AttachDisk panics if dev is
// not a /dev path or already has a disk.
func (m *Machine) AttachDisk(dev string, d *Disk) {
	if !strings.HasPrefix(dev, "/dev/") || path.Clean(dev) != dev {
		panic("ubuntu: AttachDisk: device must be a clean /dev path: " + dev)
	}
	for {
		old, oldDev := d.Attachment()
		if old == nil || old == m {
			break
		}
		old.DetachDisk(oldDev)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.holder == m && d.dev == dev {
		return
	}
	if d.holder != nil {
		panic("ubuntu: AttachDisk: the disk is already attached as " + d.dev)
	}
	if m.disks[dev] != nil {
		panic("ubuntu: AttachDisk: " + dev + " already has a disk")
	}
	m.disks[dev] = d
	d.holder, d.dev = m, dev
	m.fs().Mknod(dev, fs.ModeDevice|0o660)
	m.fs().Chown(dev, 0, gidDisk)
	m.updateDiskLinksLocked(d)
}

// DetachDisk detaches the disk attached as dev, unmounting it first if it
// is mounted (the files written under the mount point stay on the disk).
// Detaching a device that has no disk does nothing.
func (m *Machine) DetachDisk(dev string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.disks[dev]
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs != nil && d.fs.mount != nil {
		m.forceUnmountLocked(d.fs.mount)
	}
	delete(m.disks, dev)
	d.holder, d.dev = nil, ""
	m.fs().Remove(dev)
	m.updateDiskLinksLocked(d)
}

// Disk returns the disk attached as dev, nil if none.
func (m *Machine) Disk(dev string) *Disk {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.disks[dev]
}

// forceUnmountLocked unmounts a disk's mount and any mount below it,
// deepest first, whatever is busy. The caller holds m.mu and the disk's
// lock.
func (m *Machine) forceUnmountLocked(mt *mountEntry) {
	for _, other := range slices.Clone(m.mounts) {
		if other != mt && strings.HasPrefix(other.Target, mt.Target+"/") && other.disk != nil {
			other.disk.mu.Lock()
			m.forceUnmountLocked(other)
			other.disk.mu.Unlock()
		}
	}
	m.unmountLocked(mt)
}

// gidDisk is the "disk" group that owns block devices.
const gidDisk = 6

// updateDiskLinksLocked rewrites /dev/disk/by-uuid, by-label and by-id for
// the attached disks and the root disk's partitions, as udev does. The
// caller holds m.mu and the lock of held (nil if none); the other disks'
// locks are taken here, which cannot deadlock: every path that locks two
// disks does it under the lock of the machine they are attached to.
func (m *Machine) updateDiskLinksLocked(held *Disk) {
	for _, dir := range []string{"/dev/disk/by-uuid", "/dev/disk/by-label", "/dev/disk/by-id"} {
		m.fs().MkdirAll(dir, 0o755)
		m.clearDirLocked(dir)
	}
	link := func(dir, name, dev string) {
		if name != "" {
			m.fs().Symlink("../../"+path.Base(dev), dir+"/"+strings.ReplaceAll(name, "/", "\\x2f"))
		}
	}
	for _, part := range m.rootParts {
		link("/dev/disk/by-uuid", part.uuid, "/dev/"+part.name)
		link("/dev/disk/by-label", part.label, "/dev/"+part.name)
	}
	for dev, d := range m.disks {
		if d != held {
			d.mu.Lock()
		}
		if d.udevLost == 0 {
			if d.fs != nil {
				link("/dev/disk/by-uuid", d.fs.uuid, dev)
				link("/dev/disk/by-label", d.fs.label, dev)
			}
			for _, id := range d.byIDLocked() {
				link("/dev/disk/by-id", id, dev)
			}
		}
		if d != held {
			d.mu.Unlock()
		}
	}
}

// byIDLocked returns the disk's /dev/disk/by-id names.
func (d *Disk) byIDLocked() []string {
	if d.serial == "" {
		return nil
	}
	if d.bus == BusSCSI {
		ids := []string{"scsi-0QEMU_QEMU_HARDDISK_" + d.serial[:min(len(d.serial), 36)]}
		if d.wwn != "" {
			ids = append(ids, "wwn-0x"+d.wwn)
		}
		return ids
	}
	return []string{"virtio-" + d.serial[:min(len(d.serial), 20)]}
}

// udevTrigger is what udevd does with the events `udevadm trigger`
// replays for block devices (only, when given, those devices): a disk
// whose events it missed ([Disk.DelayUdev]) needs one trigger fewer, and
// the links are rewritten.
func (m *Machine) udevTrigger(only []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for dev, d := range m.disks {
		if only != nil && !slices.Contains(only, dev) {
			continue
		}
		d.mu.Lock()
		if d.udevLost > 0 {
			d.udevLost--
		}
		d.mu.Unlock()
	}
	m.updateDiskLinksLocked(nil)
}

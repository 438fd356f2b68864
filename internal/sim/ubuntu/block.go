package ubuntu

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The root disk of the cloud image: /dev/vda with the root filesystem on
// vda1, the BIOS boot partition vda14 and the EFI system partition vda15.
const (
	rootDiskName = "vda"
	rootDiskSize = 20 << 30
)

// rootPTUUID is the root disk's GPT identifier.
const rootPTUUID = "6f2a8e5b-7b67-4a5d-a1c1-0f5f1e2c3d4e"

// rootPart is a partition of the root disk.
type rootPart struct {
	name, fstype, fsver, uuid, label string
	size                             int64
}

func newRootParts() []rootPart {
	vfat := strings.ToUpper(newUUID()[:9])
	vfat = vfat[:4] + "-" + vfat[4:8]
	return []rootPart{
		{name: "vda1", fstype: "ext4", fsver: "1.0", uuid: newUUID(), label: "cloudimg-rootfs", size: rootDiskSize - 110<<20},
		{name: "vda14", size: 4 << 20},
		{name: "vda15", fstype: "vfat", fsver: "FAT32", uuid: vfat, label: "UEFI", size: 106 << 20},
	}
}

// blockDev is a row of lsblk and blkid.
type blockDev struct {
	name, path, majmin, typ    string
	size                       int64
	fstype, fsver, uuid, label string
	blockSize                  int    // blkid's BLOCK_SIZE
	pttype, ptuuid             string // a partition table's
	serial                     string
	mountpoint                 string
	fsavail, fsuse             string
	children                   []blockDev
}

// majMin returns a plausible major:minor for a device name: virtio disks
// are 252:16n, SCSI disks 8:16n, Xen disks 202:16n.
func majMin(name string) string {
	for _, d := range []struct {
		prefix string
		major  int
	}{{"vd", 252}, {"sd", 8}, {"xvd", 202}} {
		if rest, ok := strings.CutPrefix(name, d.prefix); ok && len(rest) == 1 && rest[0] >= 'a' && rest[0] <= 'z' {
			return fmt.Sprintf("%d:%d", d.major, int(rest[0]-'a')*16)
		}
	}
	return "259:" + strconv.Itoa(len(name))
}

// blockDevsLocked lists the machine's block devices: the root disk with its
// partitions, then the attached disks by name.
func (m *Machine) blockDevsLocked() []blockDev {
	mountOf := func(dev string) *mountEntry { return m.mountContainingDeviceLocked(dev) }
	usage := func(mt *mountEntry, size int64) (string, string) {
		if mt == nil {
			return "", ""
		}
		_, used, avail := m.usageLocked(mt)
		return humanSize(avail * 1024), fmt.Sprintf("%d%%", (used*100+used+avail-1)/max(used+avail, 1))
	}
	root := blockDev{name: rootDiskName, path: "/dev/" + rootDiskName, majmin: "252:0", typ: "disk", size: rootDiskSize,
		pttype: "gpt", ptuuid: rootPTUUID}
	for i, part := range m.rootParts {
		minor := []int{1, 14, 15}[i]
		b := blockDev{name: part.name, path: "/dev/" + part.name, majmin: fmt.Sprintf("252:%d", minor), typ: "part",
			size: part.size, fstype: part.fstype, fsver: part.fsver, uuid: part.uuid, label: part.label}
		if part.fstype == "ext4" {
			b.blockSize = 4096
		}
		if mt := mountOf(b.path); mt != nil {
			b.mountpoint = mt.Target
			b.fsavail, b.fsuse = usage(mt, part.size)
		}
		root.children = append(root.children, b)
	}
	out := []blockDev{root}
	for _, dev := range slices.Sorted(maps.Keys(m.disks)) {
		d := m.disks[dev]
		d.mu.Lock()
		name := strings.TrimPrefix(dev, "/dev/")
		b := blockDev{name: name, path: dev, majmin: majMin(name), typ: "disk", size: d.size, serial: d.serial}
		if d.bus == BusVirtio && len(b.serial) > 20 {
			b.serial = b.serial[:20] // VIRTIO_BLK_ID_BYTES
		}
		if d.pt != nil {
			b.pttype, b.ptuuid = d.pt.pttype, d.pt.ptuuid
		}
		if d.fs != nil {
			b.fstype, b.uuid, b.label, b.blockSize = d.fs.fstype, d.fs.uuid, d.fs.label, d.fs.blockSize
			switch {
			case d.fs.isExt():
				b.fsver = "1.0"
			case d.fs.fstype == "swap":
				b.fsver = "1"
			}
			if mt := d.fs.mount; mt != nil {
				b.mountpoint = mt.Target
				b.fsavail, b.fsuse = usage(mt, d.size)
			}
		}
		d.mu.Unlock()
		out = append(out, b)
	}
	return out
}

// humanSize formats a size as lsblk and df -h do: 20G, 19.9G, 106M.
func humanSize(b int64) string {
	const units = "BKMGTPE"
	v, i := float64(b), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", b)
	}
	s := strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
	return s + string(units[i])
}

// --- lsblk ----------------------------------------------------------------------

var lsblkColumns = []string{"NAME", "KNAME", "PATH", "MAJ:MIN", "RM", "SIZE", "RO", "TYPE", "MOUNTPOINT", "MOUNTPOINTS", "FSTYPE", "FSVER", "UUID", "LABEL", "SERIAL", "FSAVAIL", "FSUSE%"}

// lsblkTool: lsblk [-n] [-d] [-b] [-p] [-f] [-l|-r|-P|-J] [-o COLUMNS]
// [-e LIST] [DEVICE...].
func lsblkTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "ndbpflrPJo:e:a", long: []string{"noheadings", "nodeps", "bytes", "paths", "fs", "list", "raw", "pairs", "json", "output=", "exclude=", "all"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	cols := []string{"NAME", "MAJ:MIN", "RM", "SIZE", "RO", "TYPE", "MOUNTPOINTS"}
	if c.Has("-f", "--fs") {
		cols = []string{"NAME", "FSTYPE", "FSVER", "LABEL", "UUID", "FSAVAIL", "FSUSE%", "MOUNTPOINTS"}
	}
	if o, ok := c.Value("-o", "--output"); ok {
		o = strings.ToUpper(o)
		if rest, ok := strings.CutPrefix(o, "+"); ok {
			cols = append(cols, strings.Split(rest, ",")...)
		} else {
			cols = strings.Split(o, ",")
		}
	}
	for _, col := range cols {
		if !slices.Contains(lsblkColumns, col) {
			return p.Fail(1, "unknown column: %s", col)
		}
	}
	m.mu.Lock()
	devs := m.blockDevsLocked()
	m.mu.Unlock()
	if c.Has("-d", "--nodeps") {
		for i := range devs {
			devs[i].children = nil
		}
	}
	if len(c.Operands) > 0 {
		var chosen []blockDev
		missing := 0
		for _, a := range c.Operands {
			real, err := p.FS.Realpath(a)
			found := false
			for _, d := range devs {
				if err == nil && d.path == real {
					chosen, found = append(chosen, d), true
				}
				for _, ch := range d.children {
					if err == nil && ch.path == real {
						chosen, found = append(chosen, ch), true
					}
				}
			}
			if !found {
				p.Errorf("%s: not a block device", a)
				missing++
			}
		}
		if missing == len(c.Operands) {
			return 32
		}
		devs = chosen
		if missing > 0 {
			code = 64
		}
	}
	bytes := c.Has("-b", "--bytes")
	paths := c.Has("-p", "--paths")
	value := func(d blockDev, col string) (string, bool) {
		switch col {
		case "NAME":
			if paths {
				return d.path, true
			}
			return d.name, true
		case "KNAME":
			return d.name, true
		case "PATH":
			return d.path, true
		case "MAJ:MIN":
			return d.majmin, true
		case "RM", "RO":
			return "0", true
		case "SIZE":
			if bytes {
				return strconv.FormatInt(d.size, 10), true
			}
			return humanSize(d.size), true
		case "TYPE":
			return d.typ, true
		case "MOUNTPOINT", "MOUNTPOINTS":
			return d.mountpoint, d.mountpoint != ""
		case "FSTYPE":
			return d.fstype, d.fstype != ""
		case "FSVER":
			return d.fsver, d.fsver != ""
		case "UUID":
			return d.uuid, d.uuid != ""
		case "LABEL":
			return d.label, d.label != ""
		case "SERIAL":
			return d.serial, d.serial != ""
		case "FSAVAIL":
			return d.fsavail, d.fsavail != ""
		case "FSUSE%":
			return d.fsuse, d.fsuse != ""
		}
		return "", false
	}
	switch {
	case c.Has("-J", "--json"):
		var enc func(d blockDev, indent string) string
		enc = func(d blockDev, indent string) string {
			var fields []string
			for _, col := range cols {
				v, set := value(d, col)
				key, _ := json.Marshal(strings.ToLower(col))
				var js []byte
				switch {
				case col == "RM" || col == "RO":
					js = []byte("false")
				case col == "SIZE" && bytes:
					js = []byte(v)
				case col == "MOUNTPOINTS":
					js = []byte("[null]")
					if set {
						q, _ := json.Marshal(v)
						js = []byte("[" + string(q) + "]")
					}
				case !set:
					js = []byte("null")
				default:
					js, _ = json.Marshal(v)
				}
				fields = append(fields, string(key)+":"+string(js))
			}
			s := indent + "{" + strings.Join(fields, ", ")
			if len(d.children) > 0 && !c.Has("-l", "--list") {
				var kids []string
				for _, ch := range d.children {
					kids = append(kids, enc(ch, indent+"   "))
				}
				s += ",\n" + indent + "   \"children\": [\n" + strings.Join(kids, ",\n") + "\n" + indent + "   ]"
			}
			return s + "}"
		}
		var all []string
		for _, d := range flatten(devs, c.Has("-l", "--list")) {
			all = append(all, enc(d, "      "))
		}
		outf(p, "{\n   \"blockdevices\": [\n%s\n   ]\n}", strings.Join(all, ",\n"))
	case c.Has("-P", "--pairs"):
		for _, d := range flatten(devs, true) {
			var kv []string
			for _, col := range cols {
				v, _ := value(d, col)
				kv = append(kv, fmt.Sprintf("%s=%q", col, v))
			}
			outf(p, "%s", strings.Join(kv, " "))
		}
	case c.Has("-r", "--raw"):
		if !c.Has("-n", "--noheadings") {
			outf(p, "%s", strings.Join(cols, " "))
		}
		for _, d := range flatten(devs, true) {
			var vs []string
			for _, col := range cols {
				v, _ := value(d, col)
				vs = append(vs, strings.ReplaceAll(v, " ", `\x20`))
			}
			outf(p, "%s", strings.Join(vs, " "))
		}
	default:
		table := [][]string{}
		if !c.Has("-n", "--noheadings") {
			table = append(table, cols)
		}
		list := c.Has("-l", "--list")
		var add func(d blockDev, prefix string)
		add = func(d blockDev, prefix string) {
			var row []string
			for _, col := range cols {
				v, _ := value(d, col)
				if col == "NAME" {
					v = prefix + v
				}
				row = append(row, v)
			}
			table = append(table, row)
			if list {
				return
			}
			for i, ch := range d.children {
				branch := "├─"
				if i == len(d.children)-1 {
					branch = "└─"
				}
				add(ch, branch)
			}
		}
		for _, d := range flatten(devs, list) {
			add(d, "")
		}
		var right []int
		for i, col := range cols {
			if col == "MAJ:MIN" || col == "RM" || col == "SIZE" || col == "RO" || col == "FSAVAIL" || col == "FSUSE%" {
				right = append(right, i)
			}
		}
		printTable(p, table, right)
	}
	return code
}

// flatten lists devices and, in list mode, their children after each.
func flatten(devs []blockDev, list bool) []blockDev {
	if !list {
		return devs
	}
	var out []blockDev
	for _, d := range devs {
		kids := d.children
		d.children = nil
		out = append(out, d)
		out = append(out, flatten(kids, true)...)
	}
	return out
}

// --- blkid ----------------------------------------------------------------------

// blkidTags returns what blkid finds on a device, in its order (util-linux
// 2.38 blkid on ext2/3/4, xfs, swap and GPT images, local experiment):
// LABEL, UUID, SEC_TYPE (ext3), VERSION, BLOCK_SIZE, TYPE and USAGE for a
// filesystem, PTUUID and PTTYPE for a partition table. The cache mode
// (without -p) leaves VERSION and USAGE out. A device with nothing on it
// has no tags.
func (d blockDev) blkidTags(probe bool) [][2]string {
	if d.pttype != "" {
		return [][2]string{{"PTUUID", d.ptuuid}, {"PTTYPE", d.pttype}}
	}
	if d.fstype == "" {
		return nil
	}
	var kv [][2]string
	if d.label != "" {
		kv = append(kv, [2]string{"LABEL", d.label})
	}
	kv = append(kv, [2]string{"UUID", d.uuid})
	if d.fstype == "ext3" {
		kv = append(kv, [2]string{"SEC_TYPE", "ext2"})
	}
	if probe && d.fsver != "" {
		kv = append(kv, [2]string{"VERSION", d.fsver})
	}
	if d.blockSize > 0 {
		kv = append(kv, [2]string{"BLOCK_SIZE", strconv.Itoa(d.blockSize)})
	}
	kv = append(kv, [2]string{"TYPE", d.fstype})
	if probe {
		usage := "filesystem"
		if d.fstype == "swap" {
			usage = "other"
		}
		kv = append(kv, [2]string{"USAGE", usage})
	}
	return kv
}

// udevTag is blkid -o udev's name of a tag: ID_FS_* for a filesystem's,
// ID_PART_TABLE_* for a partition table's (LABEL and UUID also get an _ENC
// twin).
func udevTags(kv [][2]string) []string {
	var out []string
	for _, x := range kv {
		switch x[0] {
		case "PTUUID":
			out = append(out, "ID_PART_TABLE_UUID="+x[1])
		case "PTTYPE":
			out = append(out, "ID_PART_TABLE_TYPE="+x[1])
		case "LABEL", "UUID":
			out = append(out, "ID_FS_"+x[0]+"="+x[1], "ID_FS_"+x[0]+"_ENC="+x[1])
		default:
			out = append(out, "ID_FS_"+x[0]+"="+x[1])
		}
	}
	return out
}

// blkidTool: blkid [-p] [-c FILE] [-o value|export|full|device|udev] [-s
// TAG]... [DEVICE...], blkid -U UUID, blkid -L LABEL.
//
// The cache mode (without -p) reports what the devices hold and exits 2
// when nothing is identified; only root can probe devices, other users
// get nothing, as when blkid cannot open them and its cache is empty.
//
// The low-level probe (-p) is util-linux's lowprobe mode, as blkid 2.37
// and 2.38 behave (misc-utils/blkid.c; blkid(8) EXIT STATUS; local
// experiments on ext4, GPT, XFS and swap images): the devices are probed
// in order and the first that cannot be opened or holds nothing stops it
// with exit status 2 ("blkid: error: DEV: Permission denied" for one it
// may not read, silence for one that does not exist or is blank); the
// device is named as given; -o export separates devices with an empty
// line; without a device it exits 4. A disk never holds two signatures
// here, so the exit status 8 of an ambivalent probe does not occur.
func blkidTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "pc:o:s:U:L:", long: []string{"probe", "cache-file=", "output=", "match-tag=", "uuid=", "label="}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	format, _ := c.Value("-o", "--output")
	if format == "" {
		format = "full"
	}
	if !slices.Contains([]string{"full", "value", "export", "device", "udev"}, format) {
		return notModelled(p, "blkid -o %s", format)
	}
	tags := c.Values("-s", "--match-tag")
	m.mu.Lock()
	devs := flatten(m.blockDevsLocked(), true)
	m.mu.Unlock()
	if c.Has("-p", "--probe") {
		return blkidProbe(p, devs, c.Operands, format, tags)
	}
	if !isRoot(p) {
		return 2
	}
	if v, ok := c.Value("-U", "--uuid"); ok {
		return findTag(p, devs, func(d blockDev) bool { return d.uuid == v })
	}
	if v, ok := c.Value("-L", "--label"); ok {
		return findTag(p, devs, func(d blockDev) bool { return d.label == v })
	}
	var chosen []blockDev
	if len(c.Operands) == 0 {
		for _, d := range devs {
			if d.fstype != "" || d.pttype != "" {
				chosen = append(chosen, d)
			}
		}
	}
	for _, a := range c.Operands {
		real, err := p.FS.Realpath(a)
		for _, d := range devs {
			if err == nil && d.path == real && (d.fstype != "" || d.pttype != "") {
				chosen = append(chosen, d)
			}
		}
	}
	if len(chosen) == 0 {
		return 2
	}
	for i, d := range chosen {
		printBlkid(p, d.path, selectTags(d.blkidTags(false), tags), format, i > 0)
	}
	return 0
}

// blkidProbe is blkid -p.
func blkidProbe(p *sshtest.Process, devs []blockDev, operands []string, format string, tags []string) int {
	if len(operands) == 0 {
		errf(p, "blkid: The low-level probing mode requires a device")
		return 4
	}
	for i, a := range operands {
		real, err := p.FS.Realpath(a)
		if err != nil {
			return 2
		}
		if p.FS.Access(real, 4) != nil {
			errf(p, "blkid: error: %s: Permission denied", a)
			return 2
		}
		j := slices.IndexFunc(devs, func(d blockDev) bool { return d.path == real })
		if j < 0 {
			return notModelled(p, "blkid -p on %s, which is not a simulated disk", a)
		}
		d := devs[j]
		if d.typ == "part" {
			return notModelled(p, "blkid -p on the partition %s (its PART_ENTRY_* tags)", a)
		}
		kv := d.blkidTags(true)
		if len(kv) == 0 {
			return 2
		}
		printBlkid(p, a, selectTags(kv, tags), format, i > 0)
	}
	return 0
}

// selectTags keeps the tags -s names, in the device's order.
func selectTags(kv [][2]string, tags []string) [][2]string {
	if len(tags) == 0 {
		return kv
	}
	var sel [][2]string
	for _, x := range kv {
		if slices.Contains(tags, x[0]) {
			sel = append(sel, x)
		}
	}
	return sel
}

// printBlkid prints one device's tags in a blkid output format; later
// marks a device after the first (export and udev separate devices with
// an empty line).
func printBlkid(p *sshtest.Process, name string, kv [][2]string, format string, later bool) {
	switch format {
	case "value":
		for _, x := range kv {
			outf(p, "%s", x[1])
		}
	case "device":
		outf(p, "%s", name)
	case "export":
		if later {
			outf(p, "")
		}
		outf(p, "DEVNAME=%s", name)
		for _, x := range kv {
			outf(p, "%s=%s", x[0], x[1])
		}
	case "udev":
		if later {
			outf(p, "")
		}
		for _, t := range udevTags(kv) {
			outf(p, "%s", t)
		}
	default:
		var parts []string
		for _, x := range kv {
			parts = append(parts, fmt.Sprintf("%s=%q", x[0], x[1]))
		}
		outf(p, "%s: %s", name, strings.Join(parts, " "))
	}
}

func findTag(p *sshtest.Process, devs []blockDev, match func(blockDev) bool) int {
	for _, d := range devs {
		if d.fstype != "" && match(d) {
			outf(p, "%s", d.path)
			return 0
		}
	}
	return 2
}

// --- mkfs ---------------------------------------------------------------------------

// mkfsTool: mkfs [-t TYPE] [FS-OPTIONS] DEVICE: runs mkfs.TYPE (ext2 by
// default, as util-linux does).
func mkfsTool(ctx context.Context, _ *Machine, p *sshtest.Process) int {
	fstype := "ext2"
	var rest []string
	args := p.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-t" || a == "--type":
			if i+1 >= len(args) {
				return p.Fail(1, "option requires an argument -- 't'")
			}
			i++
			fstype = args[i]
		case strings.HasPrefix(a, "--type="):
			fstype = strings.TrimPrefix(a, "--type=")
		case strings.HasPrefix(a, "-t") && len(a) > 2:
			fstype = a[2:]
		case a == "-V" || a == "--verbose":
		default:
			rest = append(rest, a)
		}
	}
	prog := "/sbin/mkfs." + fstype
	if fi, err := p.FS.Stat(prog); err != nil || !fi.Mode().IsRegular() {
		return p.Fail(1, "failed to execute mkfs.%s: No such file or directory", fstype)
	}
	return p.Exec(ctx, append([]string{prog}, rest...)...)
}

// mke2fsTool: mke2fs / mkfs.ext4 / mkfs.ext3 / mkfs.ext2 [-F] [-q] [-L
// LABEL] [-t TYPE] [-m PCT] [-E OPTS] [-O FEATURES] [-T USAGE] [-U UUID]
// [-b SIZE] [-i BYTES] [-N N] [-j] DEVICE.
//
// It formats a device that holds a filesystem or a partition table
// without asking, as mke2fs does when standard input and output are not
// a terminal: it only checks for an existing filesystem (and asks
// "Proceed anyway? (y,N)") "if (isatty(0) && isatty(1) && !offset)" --
// "The isatty() test is so we don't break existing scripts" (e2fsprogs
// misc/mke2fs.c, PRS) -- and the simulated SSH sessions have no
// terminal. A local experiment with mke2fs 1.47.0 confirms it: an ext4,
// an XFS and a GPT label are all silently replaced (exit 0, a new
// UUID). It never formats a mounted device. The block size is -b's, or
// what mke2fs.conf gives for the size: 1024 below 512 MiB ("small"), 4096
// above.
func mke2fsTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "FqL:m:E:O:t:T:U:b:i:N:j"}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	fstype := "ext2"
	if t, ok := strings.CutPrefix(p.Name(), "mkfs."); ok {
		fstype = t
	}
	if t, ok := c.Value("-t"); ok {
		fstype = t
	}
	if c.Has("-j") && fstype == "ext2" {
		fstype = "ext3"
	}
	if !slices.Contains([]string{"ext2", "ext3", "ext4"}, fstype) {
		return p.Fail(1, "invalid fs type '%s'", fstype)
	}
	quiet := c.Has("-q")
	label, _ := c.Value("-L")
	blockSize := 0
	if b, ok := c.Value("-b"); ok {
		n, err := strconv.Atoi(b)
		if err != nil || (n != 1024 && n != 2048 && n != 4096) {
			return p.Fail(1, "invalid block size - %s", b)
		}
		blockSize = n
	}
	if len(label) > 16 {
		if !quiet {
			errf(p, "mke2fs 1.46.5 (30-Dec-2021)")
		}
		errf(p, "Warning: label too long; will be truncated to '%s'", label[:16])
		label = label[:16]
	}
	uuid, hasUUID := c.Value("-U")
	if !quiet {
		errf(p, "mke2fs 1.46.5 (30-Dec-2021)")
	}
	if len(c.Operands) == 0 {
		errf(p, "Usage: %s [-c|-l filename] [-b block-size] [-C cluster-size]\n\t[-i bytes-per-inode] [-I inode-size] [-J journal-options]\n\t[-G flex-group-size] [-N number-of-inodes] [-d root-directory]\n\t[-m reserved-blocks-percentage] [-o creator-os]\n\t[-g blocks-per-group] [-L volume-label] [-M last-mounted-directory]\n\t[-O feature[,...]] [-r fs-revision] [-E extended-option[,...]]\n\t[-t fs-type] [-T usage-type ] [-U UUID] [-e errors_behavior][-z undo_file]\n\t[-jnqvDFSV] device [blocks-count]", p.Name())
		return 1
	}
	devArg := c.Operands[0]
	if !isRoot(p) {
		if p.FS.Access(devArg, 2) != nil || !m.fs().Exists(devArg) {
			if !m.fs().Exists(devArg) {
				errf(p, "The file %s does not exist and no size was specified.", devArg)
				return 1
			}
			errf(p, "%s: Permission denied while trying to determine filesystem size", p.Name())
			return 1
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	real, err := m.fs().As(sshtest.Root, "/").Realpath(p.FS.Abs(devArg))
	if err != nil {
		errf(p, "The file %s does not exist and no size was specified.", devArg)
		return 1
	}
	d := m.disks[real]
	if d == nil {
		for _, part := range m.rootParts {
			if "/dev/"+part.name == real && m.mountContainingDeviceLocked(real) != nil {
				errf(p, "%s is mounted; will not make a filesystem here!", devArg)
				return 1
			}
		}
		if strings.HasPrefix(real, "/dev/"+rootDiskName) {
			errf(p, "%s is apparently in use by the system; will not make a filesystem here!", devArg)
			return 1
		}
		return notModelled(p, "mke2fs on %s, which is not a simulated disk", devArg)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs != nil && d.fs.mount != nil {
		errf(p, "%s is mounted; will not make a filesystem here!", devArg)
		return 1
	}
	if hasUUID && !validUUID(uuid) {
		errf(p, "Invalid UUID format")
		return 1
	}
	if blockSize == 0 {
		blockSize = 4096
		if d.size < 512<<20 {
			blockSize = 1024 // mke2fs.conf's "small" (and "floppy") type
		}
	}
	d.formatLocked(fstype, label, blockSize)
	if hasUUID {
		d.fs.uuid = strings.ToLower(uuid)
	}
	if d.holder == m {
		m.updateDiskLinksLocked(d)
	}
	if !quiet {
		blocks := d.size / int64(blockSize)
		outf(p, "Discarding device blocks: done")
		outf(p, "Creating filesystem with %d %dk blocks and %d inodes", blocks, blockSize/1024, d.size/16384)
		outf(p, "Filesystem UUID: %s", d.fs.uuid)
		if backups := superblockBackups(blocks, int64(blockSize)*8); backups != "" {
			outf(p, "Superblock backups stored on blocks: \n\t%s", backups)
		}
		outf(p, "")
		outf(p, "Allocating group tables: done")
		outf(p, "Writing inode tables: done")
		if fstype != "ext2" {
			outf(p, "Creating journal (%d blocks): done", journalBlocks(blocks))
		}
		outf(p, "Writing superblocks and filesystem accounting information: done")
		outf(p, "")
	}
	return 0
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if r != '-' {
				return false
			}
		} else if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// superblockBackups lists the blocks holding superblock backups of an ext4
// filesystem with sparse_super: groups 1 and the powers of 3, 5 and 7, a
// group being 8 blocks per byte of a block.
func superblockBackups(blocks, perGroup int64) string {
	groups := (blocks + perGroup - 1) / perGroup
	var gs []int64
	for _, base := range []int64{3, 5, 7} {
		for g := base; g < groups; g *= base {
			gs = append(gs, g)
		}
	}
	if groups > 1 {
		gs = append(gs, 1)
	}
	slices.Sort(gs)
	var out []string
	for _, g := range gs {
		first := int64(0)
		if perGroup == 8192 {
			first = 1 // a 1k-block filesystem's first data block
		}
		out = append(out, strconv.FormatInt(g*perGroup+first, 10))
	}
	return strings.Join(out, ", ")
}

// journalBlocks is mke2fs's default journal size for a filesystem size.
func journalBlocks(blocks int64) int64 {
	switch {
	case blocks < 32768:
		return 1024
	case blocks < 256*1024:
		return 4096
	case blocks < 512*1024:
		return 8192
	case blocks < 4096*1024:
		return 16384
	case blocks < 8192*1024:
		return 32768
	case blocks < 16384*1024:
		return 65536
	case blocks < 32768*1024:
		return 131072
	}
	return 262144
}

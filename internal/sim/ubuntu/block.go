package ubuntu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The root disk of the cloud image: /dev/vda with the root filesystem on
// vda1, the BIOS boot partition vda14 and the EFI system partition vda15.
const (
	rootDiskName = "vda"
	rootDiskSize = 20 << 30
)

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
	root := blockDev{name: rootDiskName, path: "/dev/" + rootDiskName, majmin: "252:0", typ: "disk", size: rootDiskSize}
	for i, part := range m.rootParts {
		minor := []int{1, 14, 15}[i]
		b := blockDev{name: part.name, path: "/dev/" + part.name, majmin: fmt.Sprintf("252:%d", minor), typ: "part",
			size: part.size, fstype: part.fstype, fsver: part.fsver, uuid: part.uuid, label: part.label}
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
		if d.fs != nil {
			b.fstype, b.fsver, b.uuid, b.label = d.fs.fstype, "1.0", d.fs.uuid, d.fs.label
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

// blkidTool: blkid [-p] [-c FILE] [-o value|export|full|device] [-s TAG]...
// [DEVICE...], blkid -U UUID, blkid -L LABEL. It exits 2 when nothing is
// identified: a blank disk has no filesystem to report. Only root can
// probe devices; other users get nothing, as when blkid cannot open them.
func blkidTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "pc:o:s:U:L:", long: []string{"probe", "cache-file=", "output=", "match-tag=", "uuid=", "label="}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	format, _ := c.Value("-o", "--output")
	if format == "" {
		format = "full"
	}
	if !slices.Contains([]string{"full", "value", "export", "device"}, format) {
		return notModelled(p, "blkid -o %s", format)
	}
	tags := c.Values("-s", "--match-tag")
	m.mu.Lock()
	devs := flatten(m.blockDevsLocked(), true)
	m.mu.Unlock()
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
			if d.fstype != "" {
				chosen = append(chosen, d)
			}
		}
	}
	for _, a := range c.Operands {
		real, err := p.FS.Realpath(a)
		for _, d := range devs {
			if err == nil && d.path == real && (d.fstype != "" || d.name == rootDiskName) {
				chosen = append(chosen, d)
			}
		}
	}
	if len(chosen) == 0 {
		return 2
	}
	for _, d := range chosen {
		var kv [][2]string
		if d.name == rootDiskName {
			kv = [][2]string{{"PTUUID", "6f2a8e5b-7b67-4a5d-a1c1-0f5f1e2c3d4e"}, {"PTTYPE", "gpt"}}
		} else {
			if d.label != "" {
				kv = append(kv, [2]string{"LABEL", d.label})
			}
			kv = append(kv, [2]string{"UUID", d.uuid})
			if d.fstype != "vfat" {
				kv = append(kv, [2]string{"BLOCK_SIZE", "4096"})
			}
			kv = append(kv, [2]string{"TYPE", d.fstype})
		}
		if len(tags) > 0 {
			var sel [][2]string
			for _, t := range tags {
				for _, x := range kv {
					if x[0] == t {
						sel = append(sel, x)
					}
				}
			}
			kv = sel
		}
		switch format {
		case "value":
			for _, x := range kv {
				outf(p, "%s", x[1])
			}
		case "device":
			outf(p, "%s", d.path)
		case "export":
			outf(p, "DEVNAME=%s", d.path)
			for _, x := range kv {
				outf(p, "%s=%s", x[0], x[1])
			}
			outf(p, "")
		default:
			var parts []string
			for _, x := range kv {
				parts = append(parts, fmt.Sprintf("%s=%q", x[0], x[1]))
			}
			outf(p, "%s: %s", d.path, strings.Join(parts, " "))
		}
	}
	return 0
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
// [-b SIZE] [-i BYTES] [-N N] [-j] DEVICE. Without -F it refuses a device
// that already holds a filesystem unless "y" is read from standard input,
// as mke2fs's "Proceed anyway? (y,N)" question does; it never formats a
// mounted device.
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
	force := c.Count("-F")
	label, _ := c.Value("-L")
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
	if d.fs != nil && force == 0 {
		if d.fs.label != "" {
			outf(p, "%s contains a %s file system labelled '%s'", devArg, d.fs.fstype, d.fs.label)
		} else {
			outf(p, "%s contains a %s file system", devArg, d.fs.fstype)
		}
		if d.fs.lastMount != "" {
			outf(p, "\tlast mounted on %s on %s", d.fs.lastMount, d.fs.created.Format(time.ANSIC))
		} else {
			outf(p, "\tcreated on %s", d.fs.created.Format(time.ANSIC))
		}
		fmt.Fprint(p.Stdout, "Proceed anyway? (y,N) ")
		line, _ := bufio.NewReader(p.Stdin).ReadString('\n')
		if !strings.HasPrefix(strings.TrimSpace(line), "y") && !strings.HasPrefix(strings.TrimSpace(line), "Y") {
			outf(p, "")
			return 1
		}
	}
	if hasUUID && !validUUID(uuid) {
		errf(p, "Invalid UUID format")
		return 1
	}
	d.formatLocked(fstype, label)
	if hasUUID {
		d.fs.uuid = strings.ToLower(uuid)
	}
	if d.holder == m {
		m.updateDiskLinksLocked(d)
	}
	if !quiet {
		blocks := d.size / 4096
		outf(p, "Discarding device blocks: done")
		outf(p, "Creating filesystem with %d 4k blocks and %d inodes", blocks, d.size/16384)
		outf(p, "Filesystem UUID: %s", d.fs.uuid)
		if backups := superblockBackups(blocks); backups != "" {
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
// filesystem with sparse_super: groups 1 and the powers of 3, 5 and 7.
func superblockBackups(blocks int64) string {
	groups := (blocks + 32767) / 32768
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
		out = append(out, strconv.FormatInt(g*32768, 10))
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

package ubuntu

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Mount is one entry of the machine's mount table, as /proc/mounts shows
// it.
type Mount struct {
	// Source is the device or remote filesystem ("/dev/vdb",
	// "10.0.0.5:/exports/a").
	Source string
	// Target is the mount point.
	Target string
	// FSType is the filesystem type ("ext4").
	FSType string
	// Options are the mount options as the kernel reports them ("rw",
	// "relatime").
	Options []string
}

// mountEntry is a mount in the machine's table.
type mountEntry struct {
	Mount
	disk   *Disk // the disk mounted; nil for the image's mounts and AddMount's
	hidden *node // what the mount point held before, restored on umount
	system bool  // a mount of the image that cannot be unmounted
}

// Mounts returns the mount table, in mount order.
func (m *Machine) Mounts() []Mount {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Mount, len(m.mounts))
	for i, mt := range m.mounts {
		out[i] = mt.Mount
		out[i].Options = slices.Clone(mt.Options)
	}
	return out
}

// AddMount records a mount that a helper program made (a fake mount.nfs of
// the simulated cloud): mount, findmnt, mountpoint, df and /proc/mounts
// show it, and umount removes it (running /sbin/umount.TYPE first when
// that program exists). The helper owns what the mount point shows; the
// machine does not move files for it. It fails if the target is already a
// mount point.
func (m *Machine) AddMount(mt Mount) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt.Target = path.Clean(mt.Target)
	if m.mountAtLocked(mt.Target) != nil {
		return fmt.Errorf("ubuntu: %s is already a mount point", mt.Target)
	}
	mt.Options = slices.Clone(mt.Options)
	m.mounts = append(m.mounts, &mountEntry{Mount: mt})
	m.writeProcMountsLocked()
	return nil
}

// RemoveMount removes a mount that AddMount recorded. It reports whether
// there was one at target.
func (m *Machine) RemoveMount(target string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := m.mountAtLocked(path.Clean(target))
	if mt == nil || mt.disk != nil || mt.system {
		return false
	}
	m.dropMountLocked(mt)
	return true
}

// mountAtLocked returns the mount whose target is dir (the last one
// mounted there), nil if dir is not a mount point.
func (m *Machine) mountAtLocked(dir string) *mountEntry {
	for i := len(m.mounts) - 1; i >= 0; i-- {
		if m.mounts[i].Target == dir {
			return m.mounts[i]
		}
	}
	return nil
}

// mountContainingLocked returns the mount holding the file at abs path p.
func (m *Machine) mountContainingLocked(p string) *mountEntry {
	var best *mountEntry
	for _, mt := range m.mounts {
		if mt.Target == p || mt.Target == "/" || strings.HasPrefix(p, mt.Target+"/") {
			if best == nil || len(mt.Target) >= len(best.Target) {
				best = mt
			}
		}
	}
	return best
}

// busyLocked reports whether a mount has other mounts below it.
func (m *Machine) busyLocked(target string) bool {
	prefix := strings.TrimSuffix(target, "/") + "/"
	return slices.ContainsFunc(m.mounts, func(o *mountEntry) bool { return strings.HasPrefix(o.Target, prefix) })
}

func (m *Machine) dropMountLocked(mt *mountEntry) {
	m.mounts = slices.DeleteFunc(m.mounts, func(o *mountEntry) bool { return o == mt })
	m.writeProcMountsLocked()
}

func (m *Machine) writeProcMountsLocked() {
	var b strings.Builder
	for _, mt := range m.mounts {
		fmt.Fprintf(&b, "%s %s %s %s 0 0\n", mt.Source, mt.Target, mt.FSType, strings.Join(mt.Options, ","))
	}
	m.writeFile("/proc/mounts", b.String(), 0o444)
}

// mountDiskLocked mounts a disk's filesystem at target: what target held is
// put aside and the disk's files appear there. The caller holds m.mu and
// d.mu.
func (m *Machine) mountDiskLocked(d *Disk, source, target string, opts []string) error {
	hidden := m.snapshotLocked(target, nil)
	if hidden == nil {
		return fs.ErrNotExist
	}
	if err := m.clearDirLocked(target); err != nil {
		return err
	}
	if err := m.restoreLocked(target, d.fs.root); err != nil {
		return err
	}
	mt := &mountEntry{Mount: Mount{Source: source, Target: target, FSType: d.fs.fstype, Options: opts}, disk: d, hidden: hidden}
	d.fs.root = nil // the files live in the machine's filesystem while mounted
	d.fs.mount = mt
	d.fs.lastMount = target
	m.mounts = append(m.mounts, mt)
	m.writeProcMountsLocked()
	return nil
}

// unmountLocked unmounts a disk: the files under the mount point go back to
// the disk and what the mount point held before reappears. The caller holds
// m.mu and the disk's lock.
func (m *Machine) unmountLocked(mt *mountEntry) {
	d := mt.disk
	content := m.snapshotLocked(mt.Target, mt)
	if content == nil || !content.mode.IsDir() {
		// The mount point vanished under us (a dead VM's FS): keep
		// what the disk had when it was mounted... which is gone;
		// an empty root is the best there is.
		content = &node{mode: fs.ModeDir | 0o755, kids: map[string]*node{}}
		m.fs().MkdirAll(mt.Target, 0o755)
	}
	m.clearDirLocked(mt.Target)
	if mt.hidden != nil {
		m.restoreLocked(mt.Target, mt.hidden)
	}
	if d != nil && d.fs != nil {
		d.fs.root = content
		d.fs.mount = nil
	}
	m.dropMountLocked(mt)
}

// --- mount options and fstab --------------------------------------------------

// kernelOptions turns mount options into what /proc/mounts shows, or
// reports an option the simulation does not model.
func kernelOptions(opts []string) ([]string, error) {
	rw, atime := "rw", "relatime"
	var flags, extra []string
	for _, o := range opts {
		switch {
		case o == "" || o == "defaults" || o == "auto" || o == "noauto" || o == "nofail" || o == "_netdev" ||
			o == "user" || o == "nouser" || o == "users" || o == "async" || o == "exec" || o == "suid" || o == "dev" ||
			strings.HasPrefix(o, "x-") || strings.HasPrefix(o, "comment="):
		case o == "ro" || o == "rw":
			rw = o
		case o == "noatime" || o == "relatime" || o == "strictatime":
			atime = o
		case o == "nosuid" || o == "nodev" || o == "noexec" || o == "sync" || o == "nodiratime":
			if !slices.Contains(flags, o) {
				flags = append(flags, o)
			}
		case o == "discard" || strings.HasPrefix(o, "errors=") || strings.HasPrefix(o, "commit=") ||
			strings.HasPrefix(o, "data=") || o == "nobarrier" || o == "barrier":
			extra = append(extra, o)
		default:
			return nil, fmt.Errorf("mount option %q", o)
		}
	}
	return append(append(append([]string{rw}, flags...), atime), extra...), nil
}

// fstabEntry is one line of /etc/fstab.
type fstabEntry struct {
	spec, file, vfstype string
	opts                []string
}

func (m *Machine) readFstab() []fstabEntry {
	data, _ := m.fs().ReadFile("/etc/fstab")
	var out []fstabEntry
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		e := fstabEntry{spec: f[0], file: f[1], vfstype: f[2]}
		if len(f) > 3 {
			e.opts = strings.Split(f[3], ",")
		}
		out = append(out, e)
	}
	return out
}

// --- device lookup ------------------------------------------------------------------

// resolveDeviceLocked finds the block device a mount source names:
// /dev/vdb, a link to it (/dev/disk/by-uuid/...), UUID=... or LABEL=....
// It returns the device path and its disk (nil for a root partition).
func (m *Machine) resolveDeviceLocked(spec, dir string) (dev string, d *Disk, ok bool) {
	if v, found := strings.CutPrefix(spec, "UUID="); found {
		spec = "/dev/disk/by-uuid/" + strings.Trim(v, `"`)
	} else if v, found := strings.CutPrefix(spec, "LABEL="); found {
		spec = "/dev/disk/by-label/" + strings.Trim(v, `"`)
	}
	if !path.IsAbs(spec) {
		spec = path.Join(dir, spec)
	}
	real, err := m.fs().As(sshtest.Root, "/").Realpath(spec)
	if err != nil {
		return "", nil, false
	}
	if d := m.disks[real]; d != nil {
		return real, d, true
	}
	for _, part := range m.rootParts {
		if "/dev/"+part.name == real {
			return real, nil, true
		}
	}
	if real == "/dev/"+rootDiskName {
		return real, nil, true
	}
	return "", nil, false
}

// --- mount ------------------------------------------------------------------

// mountTool: mount [-t TYPE] [-o OPTIONS] DEVICE DIR; mount DIR|DEVICE (from
// /etc/fstab); mount -a; mount [-t TYPE] (list). Filesystems other than
// the ext family go to /sbin/mount.TYPE, as util-linux does.
func mountTool(ctx context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "t:o:avlnrw", long: []string{"types=", "options=", "all", "verbose", "show-labels", "no-mtab", "read-only", "rw", "read-write"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	fstype, _ := c.Value("-t", "--types")
	var opts []string
	for _, o := range c.Values("-o", "--options") {
		opts = append(opts, strings.Split(o, ",")...)
	}
	if c.Has("-r", "--read-only") {
		opts = append(opts, "ro")
	}
	switch {
	case c.Has("-a", "--all"):
		if !isRoot(p) {
			errf(p, "mount: only root can use \"--all\" option")
			return 1
		}
		return m.mountAll(ctx, p, c.Has("-v", "--verbose"))
	case len(c.Operands) == 0:
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, mt := range m.mounts {
			if fstype == "" || mt.FSType == fstype {
				outf(p, "%s on %s type %s (%s)", mt.Source, mt.Target, mt.FSType, strings.Join(mt.Options, ","))
			}
		}
		return 0
	case len(c.Operands) == 1:
		arg := c.Operands[0]
		abs := p.FS.Abs(arg)
		for _, e := range m.readFstab() {
			if e.file == abs || e.spec == arg || e.spec == abs {
				if fstype == "" {
					fstype = e.vfstype
				}
				if !isRoot(p) {
					errf(p, "mount: %s: must be superuser to use mount.", e.file)
					return 32
				}
				return m.mount(ctx, p, e.spec, e.file, fstype, append(slices.Clone(e.opts), opts...), c.Has("-v", "--verbose"))
			}
		}
		errf(p, "mount: %s: can't find in /etc/fstab.", arg)
		return 1
	case len(c.Operands) == 2:
		if !isRoot(p) {
			errf(p, "mount: %s: must be superuser to use mount.", p.FS.Abs(c.Operands[1]))
			return 32
		}
		return m.mount(ctx, p, c.Operands[0], c.Operands[1], fstype, opts, c.Has("-v", "--verbose"))
	}
	return p.Fail(1, "bad usage")
}

// mountAll mounts the /etc/fstab entries that are not mounted (mount -a).
func (m *Machine) mountAll(ctx context.Context, p *sshtest.Process, verbose bool) int {
	var ok, failed int
	for _, e := range m.readFstab() {
		if e.vfstype == "swap" || e.file == "none" || slices.Contains(e.opts, "noauto") {
			continue
		}
		m.mu.Lock()
		mounted := m.mountAtLocked(path.Clean(e.file)) != nil
		_, _, exists := m.resolveDeviceLocked(e.spec, "/")
		m.mu.Unlock()
		if mounted {
			continue
		}
		if !exists && slices.Contains(e.opts, "nofail") && !strings.Contains(e.spec, ":") {
			continue
		}
		if m.mount(ctx, p, e.spec, e.file, e.vfstype, e.opts, verbose) == 0 {
			ok++
		} else {
			failed++
		}
	}
	switch {
	case failed == 0:
		return 0
	case ok == 0:
		return 32
	}
	return 64
}

// isHelperType reports whether a filesystem is mounted through
// /sbin/mount.TYPE: anything but the ext family (an nfs source without -t
// too).
func isHelperType(fstype, source string) bool {
	switch fstype {
	case "", "auto", "ext4", "ext3", "ext2", "xfs":
		return fstype == "" && strings.Contains(source, ":/")
	}
	return true
}

// mount mounts source on target, printing mount's errors.
func (m *Machine) mount(ctx context.Context, p *sshtest.Process, source, target, fstype string, opts []string, verbose bool) int {
	abs := p.FS.Abs(target)
	fi, err := m.fs().Stat(abs)
	switch {
	case err != nil:
		errf(p, "mount: %s: mount point does not exist.", abs)
		return 32
	case !fi.IsDir():
		errf(p, "mount: %s: mount point is not a directory.", abs)
		return 32
	}
	if real, err := m.fs().As(sshtest.Root, "/").Realpath(abs); err == nil {
		abs = real
	}
	if isHelperType(fstype, source) {
		if fstype == "" {
			fstype = "nfs"
		}
		helper := "/sbin/mount." + fstype
		if !m.fs().Exists(helper) {
			errf(p, "mount: %s: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.", abs)
			return 32
		}
		args := []string{helper, source, abs}
		if len(opts) > 0 {
			args = append(args, "-o", strings.Join(opts, ","))
		}
		return p.Exec(ctx, args...)
	}
	kopts, err := kernelOptions(opts)
	if err != nil {
		return notModelled(p, "%v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dev, d, ok := m.resolveDeviceLocked(source, p.Dir)
	if !ok {
		if strings.HasPrefix(source, "UUID=") || strings.HasPrefix(source, "LABEL=") {
			errf(p, "mount: %s: can't find %s.", abs, source)
		} else {
			errf(p, "mount: %s: special device %s does not exist.", abs, source)
		}
		return 32
	}
	if d == nil {
		if mt := m.mountContainingDeviceLocked(dev); mt != nil {
			errf(p, "mount: %s: %s already mounted on %s.", abs, dev, mt.Target)
		} else {
			errf(p, "mount: %s: wrong fs type, bad option, bad superblock on %s, missing codepage or helper program, or other error.", abs, dev)
		}
		return 32
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs != nil && !d.fs.isExt() && (fstype == "" || fstype == "auto" || fstype == d.fs.fstype) {
		if d.fs.fstype == "swap" {
			errf(p, "mount: %s: unknown filesystem type 'swap'.", abs)
			return 32
		}
		return notModelled(p, "mounting the %s filesystem of %s", d.fs.fstype, dev)
	}
	switch {
	case d.fs == nil || (fstype != "" && fstype != "auto" && fstype != d.fs.fstype):
		errf(p, "mount: %s: wrong fs type, bad option, bad superblock on %s, missing codepage or helper program, or other error.", abs, dev)
		return 32
	case d.fs.mount != nil && d.fs.mount.Target == abs:
		errf(p, "mount: %s: %s already mounted on %s.", abs, dev, abs)
		return 32
	case d.fs.mount != nil, m.mountAtLocked(abs) != nil, m.busyLocked(abs):
		errf(p, "mount: %s: %s already mounted or mount point busy.", abs, dev)
		return 32
	}
	if err := m.mountDiskLocked(d, dev, abs, kopts); err != nil {
		return p.Fail(32, "%s: %s", abs, sshtest.ErrMessage(err))
	}
	if verbose {
		outf(p, "mount: %s mounted on %s.", dev, abs)
	}
	return 0
}

func (m *Machine) mountContainingDeviceLocked(dev string) *mountEntry {
	for _, mt := range m.mounts {
		if mt.Source == dev {
			return mt
		}
	}
	return nil
}

// --- umount, mountpoint, findmnt, df --------------------------------------------

// umountTool: umount [-l] [-f] [-v] DIR|DEVICE....
func umountTool(ctx context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "lfvn", long: []string{"lazy", "force", "verbose", "no-mtab"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return notModelled(p, "umount without a mount point")
	}
	code = 0
	for _, arg := range c.Operands {
		if c := m.umount(ctx, p, arg, c.Has("-v", "--verbose")); c != 0 {
			code = c
		}
	}
	return code
}

func (m *Machine) umount(ctx context.Context, p *sshtest.Process, arg string, verbose bool) int {
	abs := p.FS.Abs(arg)
	if real, err := m.fs().As(sshtest.Root, "/").Realpath(abs); err == nil {
		abs = real
	}
	if !isRoot(p) {
		errf(p, "umount: %s: must be superuser to unmount.", abs)
		return 32
	}
	m.mu.Lock()
	mt := m.mountAtLocked(abs)
	if mt == nil {
		for i := len(m.mounts) - 1; i >= 0; i-- {
			if m.mounts[i].Source == abs || m.mounts[i].Source == arg {
				mt = m.mounts[i]
				break
			}
		}
	}
	switch {
	case mt == nil && m.fs().Exists(abs):
		m.mu.Unlock()
		errf(p, "umount: %s: not mounted.", abs)
		return 32
	case mt == nil:
		m.mu.Unlock()
		errf(p, "umount: %s: no mount point specified.", abs)
		return 32
	case mt.system, m.busyLocked(mt.Target), p.Dir == mt.Target || strings.HasPrefix(p.Dir, mt.Target+"/"):
		m.mu.Unlock()
		errf(p, "umount: %s: target is busy.", mt.Target)
		return 32
	case mt.disk == nil:
		helper := "/sbin/umount." + mt.FSType
		m.mu.Unlock()
		if m.fs().Exists(helper) {
			if code := p.Exec(ctx, helper, mt.Target); code != 0 {
				return code
			}
		}
		m.mu.Lock()
		m.dropMountLocked(mt)
		m.mu.Unlock()
	default:
		mt.disk.mu.Lock()
		m.unmountLocked(mt)
		mt.disk.mu.Unlock()
		m.mu.Unlock()
	}
	if verbose {
		outf(p, "umount: %s unmounted", mt.Target)
	}
	return 0
}

// mountpointTool: mountpoint [-q] DIR.
func mountpointTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "q", long: []string{"quiet"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) != 1 {
		return p.Fail(1, "bad usage\nTry 'mountpoint --help' for more information.")
	}
	quiet := c.Has("-q", "--quiet")
	arg := c.Operands[0]
	real, err := p.FS.Realpath(arg)
	if err != nil {
		if !quiet {
			p.Errorf("%s: %s", arg, sshtest.ErrMessage(err))
		}
		return 1
	}
	m.mu.Lock()
	is := m.mountAtLocked(real) != nil
	m.mu.Unlock()
	if !is {
		if !quiet {
			outf(p, "%s is not a mountpoint", arg)
		}
		return 32
	}
	if !quiet {
		outf(p, "%s is a mountpoint", arg)
	}
	return 0
}

// findmntTool: findmnt [-n] [-l|-r|-P] [-o COLUMNS] [-t TYPE] [-S SOURCE]
// [-T PATH] [-M DIR] [TARGET|SOURCE].
func findmntTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "nlrPo:t:S:T:M:", long: []string{"noheadings", "list", "raw", "pairs", "output=", "types=", "source=", "target=", "mountpoint="}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	cols := []string{"TARGET", "SOURCE", "FSTYPE", "OPTIONS"}
	if o, ok := c.Value("-o", "--output"); ok {
		cols = strings.Split(strings.ToUpper(o), ",")
	}
	for _, col := range cols {
		if !slices.Contains([]string{"TARGET", "SOURCE", "FSTYPE", "OPTIONS", "UUID", "LABEL"}, col) {
			return notModelled(p, "findmnt column %s", col)
		}
	}
	if len(c.Operands) > 1 {
		return notModelled(p, "findmnt with several operands")
	}
	real := func(s string) string {
		if r, err := m.fs().As(sshtest.Root, "/").Realpath(p.FS.Abs(s)); err == nil {
			return r
		}
		return path.Clean(p.FS.Abs(s))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var rows []*mountEntry
	for _, mt := range m.mounts {
		if t, ok := c.Value("-t", "--types"); ok && !slices.Contains(strings.Split(t, ","), mt.FSType) {
			continue
		}
		if s, ok := c.Value("-S", "--source"); ok && mt.Source != s && mt.Source != real(s) {
			continue
		}
		if d, ok := c.Value("-M", "--mountpoint"); ok && mt.Target != real(d) {
			continue
		}
		if len(c.Operands) == 1 {
			a := c.Operands[0]
			if mt.Target != real(a) && mt.Source != a && mt.Source != real(a) {
				continue
			}
		}
		rows = append(rows, mt)
	}
	if t, ok := c.Value("-T", "--target"); ok {
		rows = nil
		if mt := m.mountContainingLocked(real(t)); mt != nil {
			rows = append(rows, mt)
		}
	}
	if len(rows) == 0 {
		return 1
	}
	value := func(mt *mountEntry, col string) string {
		switch col {
		case "TARGET":
			return mt.Target
		case "SOURCE":
			return mt.Source
		case "FSTYPE":
			return mt.FSType
		case "OPTIONS":
			return strings.Join(mt.Options, ",")
		}
		if mt.disk != nil {
			lockedRead := func() string {
				mt.disk.mu.Lock()
				defer mt.disk.mu.Unlock()
				if mt.disk.fs == nil {
					return ""
				}
				if col == "UUID" {
					return mt.disk.fs.uuid
				}
				return mt.disk.fs.label
			}
			return lockedRead()
		}
		for _, part := range m.rootParts {
			if "/dev/"+part.name == mt.Source {
				if col == "UUID" {
					return part.uuid
				}
				return part.label
			}
		}
		return ""
	}
	table := [][]string{}
	if !c.Has("-n", "--noheadings") {
		table = append(table, cols)
	}
	for _, mt := range rows {
		var row []string
		for _, col := range cols {
			row = append(row, value(mt, col))
		}
		table = append(table, row)
	}
	switch {
	case c.Has("-P", "--pairs"):
		for i, row := range table {
			if i == 0 && !c.Has("-n", "--noheadings") {
				continue
			}
			var kv []string
			for j, v := range row {
				kv = append(kv, fmt.Sprintf("%s=%q", cols[j], v))
			}
			outf(p, "%s", strings.Join(kv, " "))
		}
	case c.Has("-r", "--raw"):
		for _, row := range table {
			outf(p, "%s", strings.Join(row, " "))
		}
	default:
		printTable(p, table, nil)
	}
	return 0
}

// printTable prints left-aligned columns separated by a space, the last
// one unpadded, as util-linux's libsmartcols does; right lists columns to
// align right.
func printTable(p *sshtest.Process, table [][]string, right []int) {
	if len(table) == 0 {
		return
	}
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for i, v := range row {
			widths[i] = max(widths[i], len([]rune(v)))
		}
	}
	for _, row := range table {
		var b strings.Builder
		for i, v := range row {
			pad := widths[i] - len([]rune(v))
			switch {
			case slices.Contains(right, i):
				b.WriteString(strings.Repeat(" ", pad) + v)
			case i == len(row)-1:
				b.WriteString(v)
			default:
				b.WriteString(v + strings.Repeat(" ", pad))
			}
			if i < len(row)-1 {
				b.WriteByte(' ')
			}
		}
		outf(p, "%s", strings.TrimRight(b.String(), " "))
	}
}

// dfTool: df [-h] [-T] [-P] [PATH...].
func dfTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "hTPkl", long: []string{"human-readable", "print-type", "portability", "local"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	human := c.Has("-h", "--human-readable")
	m.mu.Lock()
	defer m.mu.Unlock()
	var rows []*mountEntry
	code = 0
	if len(c.Operands) == 0 {
		for _, mt := range m.mounts {
			if mt.FSType != "proc" && mt.FSType != "sysfs" && mt.FSType != "devtmpfs" {
				rows = append(rows, mt)
			}
		}
	}
	for _, a := range c.Operands {
		real, err := p.FS.Realpath(a)
		if err != nil {
			p.Errorf("%s: %s", a, sshtest.ErrMessage(err))
			code = 1
			continue
		}
		if mt := m.mountContainingLocked(real); mt != nil {
			rows = append(rows, mt)
		}
	}
	head := []string{"Filesystem", "1K-blocks", "Used", "Available", "Use%", "Mounted on"}
	if human {
		head[1], head[3] = "Size", "Avail"
	}
	if c.Has("-P", "--portability") {
		head[4] = "Capacity"
	}
	if c.Has("-T", "--print-type") {
		head = slices.Insert(head, 1, "Type")
	}
	table := [][]string{head}
	for _, mt := range rows {
		total, used, avail := m.usageLocked(mt)
		pct := "-"
		if total > 0 {
			pct = fmt.Sprintf("%d%%", (used*100+used+avail-1)/max(used+avail, 1)) // rounded up, as df does
		}
		num := func(kb int64) string {
			if human {
				if kb == 0 {
					return "0"
				}
				return humanSize(kb * 1024)
			}
			return fmt.Sprint(kb)
		}
		row := []string{mt.Source, num(total), num(used), num(avail), pct, mt.Target}
		if c.Has("-T", "--print-type") {
			row = slices.Insert(row, 1, mt.FSType)
		}
		table = append(table, row)
	}
	right := []int{1, 2, 3, 4}
	if c.Has("-T", "--print-type") {
		right = []int{2, 3, 4, 5}
	}
	printTable(p, table, right)
	return code
}

// usageLocked returns plausible 1K-block figures for a mounted filesystem:
// an ext4 filesystem's overhead and 5% reserve, and the bytes of its files.
func (m *Machine) usageLocked(mt *mountEntry) (total, used, avail int64) {
	var size int64
	switch {
	case mt.disk != nil:
		size = mt.disk.size
		content := m.snapshotLocked(mt.Target, mt)
		var files int64
		if content != nil {
			files = content.bytes()
		}
		total = size / 1024 * 9746 / 10000
		used = 24 + (files+4095)/4096*4
		avail = max(total-used-size/1024/20-16384, 0)
		return total, used, avail
	case mt.Source == "/dev/"+rootDiskName+"1":
		return 20134592, 1633924, 18484284
	case mt.Source == "/dev/"+rootDiskName+"15":
		return 106858, 6182, 100676
	case mt.FSType == "tmpfs":
		return 2008772, 0, 2008772
	}
	return 0, 0, 0
}

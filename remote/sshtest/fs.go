package sshtest

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cred is the identity a fake program or an SFTP request acts as.
type Cred struct {
	UID    int   // user ID, 0 for root
	GID    int   // primary group ID
	Groups []int // supplementary groups
}

// Root is the superuser's identity.
var Root = Cred{UID: 0, GID: 0}

func (c Cred) inGroup(gid int) bool { return c.GID == gid || slices.Contains(c.Groups, gid) }

// Access bits, as for access(2).
const (
	accessRead  = 4
	accessWrite = 2
	accessExec  = 1
)

// FS is an in-memory POSIX-like filesystem: directories, regular files,
// symbolic and hard links and a /dev/null device, with owners, groups,
// permission bits and the setuid, setgid and sticky bits. A fake host's shell and its SFTP server share one FS, so
// a file uploaded over SFTP is what `cat` prints and what `sha256sum` hashes.
//
// The methods on FS act as root and skip permission checks: tests use them to
// seed and inspect a host. Fake programs and SFTP requests use the
// permission-checked view returned by [FS.As].
//
// Names are absolute slash-separated paths; they are cleaned lexically (so
// "link/.." is the directory holding link, where the kernel would take the
// parent of link's target), and symbolic links are followed as the kernel
// does (at most 40 per lookup). FS is safe for concurrent use.
type FS struct {
	mu   sync.RWMutex
	root *inode
	now  func() time.Time
}

type inode struct {
	mode    fs.FileMode // type bits and permission bits
	uid     int
	gid     int
	mtime   time.Time
	data    []byte            // regular file content
	entries map[string]*inode // directory entries
	target  string            // symbolic link target
	null    bool              // /dev/null: discards writes, reads EOF
}

// NewFS returns a filesystem with the skeleton every fake host has: /, /etc,
// /tmp (mode 1777), /root, /home, /usr/bin, /usr/sbin, /var, /run,
// /dev/null, and /bin and /sbin as links into /usr as on a merged-/usr
// Ubuntu.
func NewFS() *FS {
	f := &FS{now: time.Now}
	f.root = &inode{mode: fs.ModeDir | 0o755, entries: map[string]*inode{}, mtime: f.now()}
	for _, d := range []struct {
		name string
		perm fs.FileMode
	}{
		{"/etc", 0o755}, {"/tmp", fs.ModeSticky | 0o777}, {"/root", 0o700}, {"/home", 0o755},
		{"/usr", 0o755}, {"/usr/bin", 0o755}, {"/usr/sbin", 0o755}, {"/usr/local", 0o755},
		{"/usr/local/bin", 0o755}, {"/usr/local/sbin", 0o755}, {"/var", 0o755},
		{"/var/lib", 0o755}, {"/var/log", 0o755}, {"/run", 0o755}, {"/dev", 0o755},
	} {
		must(f.Mkdir(d.name, d.perm))
	}
	must(f.Symlink("usr/bin", "/bin"))
	must(f.Symlink("usr/sbin", "/sbin"))
	f.mu.Lock()
	dev := f.root.entries["dev"]
	dev.entries["null"] = &inode{mode: fs.ModeDevice | fs.ModeCharDevice | 0o666, null: true, mtime: f.now()}
	f.mu.Unlock()
	return f
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// As returns a view of the filesystem that acts as cred, resolves relative
// names against dir and applies umask 022 to files and directories it
// creates (see [UserFS.WithUmask]).
func (f *FS) As(cred Cred, dir string) *UserFS {
	return &UserFS{fs: f, cred: cred, dir: path.Clean("/" + dir), umask: 0o022}
}

// --- root helpers for tests -------------------------------------------------

// ReadFile returns the content of a file.
func (f *FS) ReadFile(name string) ([]byte, error) { return f.As(Root, "/").ReadFile(name) }

// WriteFile creates or replaces a file with the given content and permission
// bits (no umask), creating missing parent directories (mode 0755). A new
// file is owned by root (change it with [FS.Chown]); an existing one keeps
// its owner.
func (f *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	u := f.As(Root, "/")
	u.umask = 0
	if err := u.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	if err := u.WriteFile(name, data, perm); err != nil {
		return err
	}
	return u.Chmod(name, perm)
}

// Mkdir creates one directory owned by root with exactly perm.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	u := f.As(Root, "/")
	u.umask = 0
	return u.Mkdir(name, perm)
}

// MkdirAll creates a directory and its missing parents, owned by root with
// exactly perm.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	u := f.As(Root, "/")
	u.umask = 0
	return u.MkdirAll(name, perm)
}

// Stat returns information about a file, following symbolic links.
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.As(Root, "/").Stat(name) }

// Lstat returns information about a file without following a final
// symbolic link.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return f.As(Root, "/").Lstat(name) }

// Readlink returns the target of a symbolic link.
func (f *FS) Readlink(name string) (string, error) { return f.As(Root, "/").Readlink(name) }

// ReadDir lists a directory sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) { return f.As(Root, "/").ReadDir(name) }

// Chmod changes the permission bits (and the setuid, setgid and sticky
// bits) of a file.
func (f *FS) Chmod(name string, mode fs.FileMode) error { return f.As(Root, "/").Chmod(name, mode) }

// Chown changes the owner and group of a file; -1 leaves one unchanged.
func (f *FS) Chown(name string, uid, gid int) error { return f.As(Root, "/").Chown(name, uid, gid) }

// Remove removes a file or an empty directory.
func (f *FS) Remove(name string) error { return f.As(Root, "/").Remove(name) }

// Symlink creates a symbolic link newname pointing at oldname.
func (f *FS) Symlink(oldname, newname string) error {
	return f.As(Root, "/").Symlink(oldname, newname)
}

// Mknod creates a device node owned by root with the type and permission
// bits of mode: a block device when mode has fs.ModeDevice, a character
// device when it also has fs.ModeCharDevice. Missing parent directories are
// created (mode 0755). The node is seen by stat, `test -b`, ls and rm, but
// it has no driver: opening it fails with ENXIO ("No such device or
// address"), as for a node whose device is absent. A simulation that models
// a device (the filesystem on a block device) does so in its fake programs.
func (f *FS) Mknod(name string, mode fs.FileMode) error {
	if mode&fs.ModeDevice == 0 {
		return pathErr("mknod", name, syscall.EINVAL)
	}
	if err := f.MkdirAll(path.Dir(path.Clean("/"+name)), 0o755); err != nil {
		return err
	}
	u := f.As(Root, "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := u.walk("mknod", name, false)
	switch {
	case err != nil:
		return err
	case r.node != nil:
		return pathErr("mknod", name, syscall.EEXIST)
	}
	keep := fs.ModeDevice | fs.ModeCharDevice | fs.ModePerm
	r.parent.entries[r.name] = &inode{mode: mode & keep, mtime: f.now()}
	r.parent.mtime = f.now()
	return nil
}

// Exists reports whether name exists (following symbolic links).
func (f *FS) Exists(name string) bool {
	_, err := f.Stat(name)
	return err == nil
}

// LookupUser returns the UID and primary GID of a user named in /etc/passwd.
func (f *FS) LookupUser(name string) (uid, gid int, ok bool) {
	for _, fields := range f.dbEntries("/etc/passwd", 4) {
		if fields[0] == name {
			uid, err1 := strconv.Atoi(fields[2])
			gid, err2 := strconv.Atoi(fields[3])
			return uid, gid, err1 == nil && err2 == nil
		}
	}
	return 0, 0, false
}

// homeDir returns a user's home directory from /etc/passwd ("/" when the
// user has none).
func (f *FS) homeDir(name string) string {
	for _, fields := range f.dbEntries("/etc/passwd", 6) {
		if fields[0] == name && fields[5] != "" {
			return fields[5]
		}
	}
	return "/"
}

// LookupGroup returns the GID of a group named in /etc/group.
func (f *FS) LookupGroup(name string) (gid int, ok bool) {
	for _, fields := range f.dbEntries("/etc/group", 3) {
		if fields[0] == name {
			gid, err := strconv.Atoi(fields[2])
			return gid, err == nil
		}
	}
	return 0, false
}

// UserName returns the name of the user with the given UID, or the number.
func (f *FS) UserName(uid int) string { return f.idName("/etc/passwd", uid, 4) }

// GroupName returns the name of the group with the given GID, or the number.
func (f *FS) GroupName(gid int) string { return f.idName("/etc/group", gid, 3) }

// SupplementaryGroups returns the GIDs of the groups in /etc/group that list
// user as a member.
func (f *FS) SupplementaryGroups(user string) []int {
	var gids []int
	for _, fields := range f.dbEntries("/etc/group", 4) {
		if slices.Contains(strings.Split(fields[3], ","), user) {
			if gid, err := strconv.Atoi(fields[2]); err == nil {
				gids = append(gids, gid)
			}
		}
	}
	return gids
}

func (f *FS) idName(db string, id, minFields int) string {
	for _, fields := range f.dbEntries(db, minFields) {
		if fields[2] == strconv.Itoa(id) {
			return fields[0]
		}
	}
	return strconv.Itoa(id)
}

// dbEntries parses a colon-separated account database such as /etc/passwd:
// its lines of at least minFields fields. The result is shared (see
// accountDBs) and must not be modified.
func (f *FS) dbEntries(name string, minFields int) [][]string {
	data, err := f.ReadFile(name)
	if err != nil {
		return nil
	}
	accountDBs.mu.Lock()
	out, ok := accountDBs.m[string(data)][minFields]
	accountDBs.mu.Unlock()
	if ok {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= minFields {
			out = append(out, fields)
		}
	}
	accountDBs.mu.Lock()
	if accountDBs.m == nil || len(accountDBs.m) >= 256 {
		accountDBs.m = map[string]map[int][][]string{}
	}
	byMin := accountDBs.m[string(data)]
	if byMin == nil {
		byMin = map[int][][]string{}
		accountDBs.m[string(data)] = byMin
	}
	byMin[minFields] = out
	accountDBs.mu.Unlock()
	return out
}

// accountDBs remembers parsed account databases by content: every
// command looks its user up in /etc/passwd and /etc/group, which rarely
// change and are alike on every host. It forgets everything at 256
// contents.
var accountDBs struct {
	mu sync.Mutex
	m  map[string]map[int][][]string // content → minFields → entries
}

// --- the permission-checked view ---------------------------------------------

// UserFS is a view of an [FS] that acts as one identity, like a process: it
// checks permissions, resolves relative names against its directory and
// applies its umask. Fake programs receive one in [Process.FS].
type UserFS struct {
	fs    *FS
	cred  Cred
	dir   string
	umask fs.FileMode
}

// Cred returns the identity the view acts as.
func (u *UserFS) Cred() Cred { return u.cred }

// Umask returns the permission bits the view clears from the modes of the
// files and directories it creates.
func (u *UserFS) Umask() fs.FileMode { return u.umask }

// WithUmask returns a copy of the view that applies mask (permission bits
// only) instead, as after the umask(2) system call.
func (u *UserFS) WithUmask(mask fs.FileMode) *UserFS {
	c := *u
	c.umask = mask & fs.ModePerm
	return &c
}

// Dir returns the directory relative names are resolved against.
func (u *UserFS) Dir() string { return u.dir }

// Abs returns name as an absolute, cleaned path.
func (u *UserFS) Abs(name string) string {
	if path.IsAbs(name) {
		return path.Clean(name)
	}
	return path.Join(u.dir, name)
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

func (u *UserFS) can(n *inode, want int) bool {
	if u.cred.UID == 0 {
		if want&accessExec != 0 && n.mode.IsRegular() {
			return n.mode&0o111 != 0
		}
		return true
	}
	perm := int(n.mode.Perm())
	var bits int
	switch {
	case u.cred.UID == n.uid:
		bits = perm >> 6
	case u.cred.inGroup(n.gid):
		bits = perm >> 3
	default:
		bits = perm
	}
	return bits&7&want == want
}

// resolved is the result of a path walk.
type resolved struct {
	parent *inode // directory holding the final element (nil for "/")
	name   string // final element
	node   *inode // nil when the final element does not exist
	path   string // the path with symbolic links resolved
}

// walk resolves name. It follows symbolic links in every element but the
// last, and in the last too when follow is set. Callers hold f.mu.
func (u *UserFS) walk(op, name string, follow bool) (resolved, error) {
	if name == "" {
		return resolved{}, pathErr(op, name, syscall.ENOENT)
	}
	orig := name
	name = u.Abs(name)
	links := 0
	for {
		r, link, err := u.walkOnce(op, orig, name, follow)
		if err != nil || link == "" {
			return r, err
		}
		if links++; links > 40 {
			return resolved{}, pathErr(op, orig, syscall.ELOOP)
		}
		name = link
	}
}

// walkOnce walks name; if it meets a symbolic link it must follow, it returns
// the path to restart with. name is absolute and clean (walk makes it so,
// and so is every restart path), which lets the walk slice it instead of
// splitting and joining: the path of the elements walked so far is a
// prefix of name.
func (u *UserFS) walkOnce(op, orig, name string, follow bool) (resolved, string, error) {
	if name == "/" {
		return resolved{node: u.fs.root, path: "/", name: "/"}, "", nil
	}
	dir := u.fs.root
	cur := "/"
	for start := 1; ; {
		end := strings.IndexByte(name[start:], '/')
		last := end < 0
		if last {
			end = len(name)
		} else {
			end += start
		}
		p := name[start:end]
		if !dir.mode.IsDir() {
			return resolved{}, "", pathErr(op, orig, syscall.ENOTDIR)
		}
		if !u.can(dir, accessExec) {
			return resolved{}, "", pathErr(op, orig, syscall.EACCES)
		}
		child := dir.entries[p]
		if child != nil && child.mode&fs.ModeSymlink != 0 && (!last || follow) {
			target := child.target
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			rest := ""
			if !last {
				rest = name[end+1:]
			}
			return resolved{}, path.Clean(target + "/" + rest), nil
		}
		if last {
			return resolved{parent: dir, name: p, node: child, path: name}, "", nil
		}
		if child == nil {
			return resolved{}, "", pathErr(op, orig, syscall.ENOENT)
		}
		dir = child
		cur = name[:end]
		start = end + 1
	}
}

// Stat returns information about a file, following symbolic links.
func (u *UserFS) Stat(name string) (fs.FileInfo, error) { return u.stat("stat", name, true) }

// Lstat returns information about a file without following a final symbolic
// link.
func (u *UserFS) Lstat(name string) (fs.FileInfo, error) { return u.stat("lstat", name, false) }

func (u *UserFS) stat(op, name string, follow bool) (fs.FileInfo, error) {
	u.fs.mu.RLock()
	defer u.fs.mu.RUnlock()
	r, err := u.walk(op, name, follow)
	if err != nil {
		return nil, err
	}
	if r.node == nil {
		return nil, pathErr(op, name, syscall.ENOENT)
	}
	// Like os.Stat, name the file as asked, not as the link target.
	return newInfo(path.Base(u.Abs(name)), r.node), nil
}

// Access checks the permission bits (a combination of 4 read, 2 write,
// 1 execute) the view's identity has on name, as access(2) does.
func (u *UserFS) Access(name string, mode int) error {
	u.fs.mu.RLock()
	defer u.fs.mu.RUnlock()
	r, err := u.walk("access", name, true)
	if err != nil {
		return err
	}
	if r.node == nil {
		return pathErr("access", name, syscall.ENOENT)
	}
	if !u.can(r.node, mode) {
		return pathErr("access", name, syscall.EACCES)
	}
	return nil
}

// ReadDir lists a directory sorted by name.
func (u *UserFS) ReadDir(name string) ([]fs.DirEntry, error) {
	u.fs.mu.RLock()
	defer u.fs.mu.RUnlock()
	r, err := u.walk("readdir", name, true)
	if err != nil {
		return nil, err
	}
	switch {
	case r.node == nil:
		return nil, pathErr("readdir", name, syscall.ENOENT)
	case !r.node.mode.IsDir():
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	case !u.can(r.node, accessRead):
		return nil, pathErr("readdir", name, syscall.EACCES)
	}
	out := make([]fs.DirEntry, 0, len(r.node.entries))
	for n, child := range r.node.entries {
		out = append(out, fs.FileInfoToDirEntry(newInfo(n, child)))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// ReadFile returns a file's content.
func (u *UserFS) ReadFile(name string) ([]byte, error) {
	f, err := u.OpenFile(name, syscall.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.readAll()
}

// WriteFile creates or truncates a file and writes data to it; perm (less the
// umask) applies only when the file is created.
func (u *UserFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := u.OpenFile(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// OpenFile opens a file with open(2) flags (O_RDONLY, O_WRONLY, O_RDWR,
// O_CREAT, O_EXCL, O_TRUNC, O_APPEND).
func (u *UserFS) OpenFile(name string, flag int, perm fs.FileMode) (*File, error) {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	r, err := u.walk("open", name, flag&syscall.O_EXCL == 0 || flag&syscall.O_CREAT == 0)
	if err != nil {
		return nil, err
	}
	acc := flag & (syscall.O_RDONLY | syscall.O_WRONLY | syscall.O_RDWR)
	read := acc == syscall.O_RDONLY || acc == syscall.O_RDWR
	write := acc == syscall.O_WRONLY || acc == syscall.O_RDWR
	n := r.node
	switch {
	case n == nil && flag&syscall.O_CREAT == 0:
		return nil, pathErr("open", name, syscall.ENOENT)
	case n == nil:
		if !u.can(r.parent, accessWrite|accessExec) {
			return nil, pathErr("open", name, syscall.EACCES)
		}
		n = &inode{mode: perm.Perm() &^ u.umask, uid: u.cred.UID, gid: u.newGID(r.parent), mtime: u.fs.now()}
		r.parent.entries[r.name] = n
		r.parent.mtime = n.mtime
	case flag&syscall.O_EXCL != 0 && flag&syscall.O_CREAT != 0:
		return nil, pathErr("open", name, syscall.EEXIST)
	case n.mode&fs.ModeSymlink != 0:
		return nil, pathErr("open", name, syscall.ELOOP)
	case n.mode.IsDir() && write:
		return nil, pathErr("open", name, syscall.EISDIR)
	default:
		want := 0
		if read {
			want |= accessRead
		}
		if write {
			want |= accessWrite
		}
		if !u.can(n, want) {
			return nil, pathErr("open", name, syscall.EACCES)
		}
	}
	if n.mode&fs.ModeDevice != 0 && !n.null {
		return nil, pathErr("open", name, syscall.ENXIO) // a device with no driver
	}
	if flag&syscall.O_TRUNC != 0 && write && n.mode.IsRegular() {
		n.data = nil
		n.mtime = u.fs.now()
	}
	return &File{fs: u.fs, n: n, name: r.path, read: read, write: write, append: flag&syscall.O_APPEND != 0}, nil
}

// Mkdir creates a directory with perm less the umask.
func (u *UserFS) Mkdir(name string, perm fs.FileMode) error {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	return u.mkdir(name, perm)
}

func (u *UserFS) mkdir(name string, perm fs.FileMode) error {
	r, err := u.walk("mkdir", name, false)
	switch {
	case err != nil:
		return err
	case r.node != nil:
		return pathErr("mkdir", name, syscall.EEXIST)
	case !u.can(r.parent, accessWrite|accessExec):
		return pathErr("mkdir", name, syscall.EACCES)
	}
	mode := fs.ModeDir | (perm&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid))&^u.umask
	if r.parent.mode&fs.ModeSetgid != 0 {
		mode |= fs.ModeSetgid // a setgid directory passes the bit on
	}
	now := u.fs.now()
	r.parent.entries[r.name] = &inode{mode: mode, uid: u.cred.UID, gid: u.newGID(r.parent), entries: map[string]*inode{}, mtime: now}
	r.parent.mtime = now
	return nil
}

// newGID is the group of a new file in dir: the directory's group when it
// has the setgid bit, the creator's primary group otherwise.
func (u *UserFS) newGID(dir *inode) int {
	if dir.mode&fs.ModeSetgid != 0 {
		return dir.gid
	}
	return u.cred.GID
}

// MkdirAll creates a directory and any missing parents, as mkdir -p does.
// It fails with EEXIST when name exists but is not a directory, and with
// ENOTDIR when one of its parents is not.
func (u *UserFS) MkdirAll(name string, perm fs.FileMode) error {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	abs := u.Abs(name)
	parts := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	cur := "/"
	for i, p := range parts {
		if p == "" {
			continue
		}
		cur = path.Join(cur, p)
		r, err := u.walk("mkdir", cur, true)
		if err != nil {
			return err
		}
		if r.node != nil {
			switch {
			case r.node.mode.IsDir():
				continue
			case i == len(parts)-1:
				return pathErr("mkdir", cur, syscall.EEXIST)
			default:
				return pathErr("mkdir", cur, syscall.ENOTDIR)
			}
		}
		if err := u.mkdir(cur, perm); err != nil {
			return err
		}
	}
	return nil
}

// Remove removes a file, a symbolic link or an empty directory.
func (u *UserFS) Remove(name string) error {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	r, err := u.walk("remove", name, false)
	if err != nil {
		return err
	}
	if err := u.canUnlink("remove", name, r); err != nil {
		return err
	}
	if r.node.mode.IsDir() && len(r.node.entries) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(r.parent.entries, r.name)
	r.parent.mtime = u.fs.now()
	return nil
}

// canUnlink checks that the entry exists and may be removed from its
// directory, honouring the sticky bit.
func (u *UserFS) canUnlink(op, name string, r resolved) error {
	switch {
	case r.node == nil:
		return pathErr(op, name, syscall.ENOENT)
	case r.parent == nil:
		return pathErr(op, name, syscall.EBUSY)
	case !u.can(r.parent, accessWrite|accessExec):
		return pathErr(op, name, syscall.EACCES)
	case r.parent.mode&fs.ModeSticky != 0 && u.cred.UID != 0 && u.cred.UID != r.node.uid && u.cred.UID != r.parent.uid:
		return pathErr(op, name, syscall.EPERM)
	}
	return nil
}

// Rename moves oldname to newname, atomically replacing a file (or an empty
// directory) at newname, as rename(2) does.
func (u *UserFS) Rename(oldname, newname string) error {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	from, err := u.walk("rename", oldname, false)
	if err != nil {
		return err
	}
	if err := u.canUnlink("rename", oldname, from); err != nil {
		return err
	}
	to, err := u.walk("rename", newname, false)
	if err != nil {
		return err
	}
	if to.parent == nil {
		return pathErr("rename", newname, syscall.EBUSY)
	}
	if !u.can(to.parent, accessWrite|accessExec) {
		return pathErr("rename", newname, syscall.EACCES)
	}
	if to.node == from.node {
		return nil
	}
	if from.node.mode.IsDir() && strings.HasPrefix(to.path+"/", from.path+"/") {
		return pathErr("rename", newname, syscall.EINVAL)
	}
	if to.node != nil {
		if err := u.canUnlink("rename", newname, to); err != nil {
			return err
		}
		switch {
		case to.node.mode.IsDir() && !from.node.mode.IsDir():
			return pathErr("rename", newname, syscall.EISDIR)
		case !to.node.mode.IsDir() && from.node.mode.IsDir():
			return pathErr("rename", newname, syscall.ENOTDIR)
		case to.node.mode.IsDir() && len(to.node.entries) > 0:
			return pathErr("rename", newname, syscall.ENOTEMPTY)
		}
	}
	delete(from.parent.entries, from.name)
	to.parent.entries[to.name] = from.node
	now := u.fs.now()
	from.parent.mtime, to.parent.mtime = now, now
	return nil
}

// Symlink creates newname as a symbolic link to oldname.
func (u *UserFS) Symlink(oldname, newname string) error {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	r, err := u.walk("symlink", newname, false)
	switch {
	case err != nil:
		return err
	case oldname == "":
		return pathErr("symlink", newname, syscall.ENOENT)
	case r.node != nil:
		return pathErr("symlink", newname, syscall.EEXIST)
	case !u.can(r.parent, accessWrite|accessExec):
		return pathErr("symlink", newname, syscall.EACCES)
	}
	r.parent.entries[r.name] = &inode{mode: fs.ModeSymlink | 0o777, uid: u.cred.UID, gid: u.cred.GID, target: oldname, mtime: u.fs.now()}
	return nil
}

// Realpath returns the absolute path of name with every symbolic link
// resolved and no "." or ".." elements, as realpath(3) does. The file must
// exist.
func (u *UserFS) Realpath(name string) (string, error) {
	return u.canonical(name, true)
}

// canonical resolves name like Realpath; when mustExist is false the last
// element may be missing, as for readlink -f.
func (u *UserFS) canonical(name string, mustExist bool) (string, error) {
	u.fs.mu.RLock()
	defer u.fs.mu.RUnlock()
	r, err := u.walk("realpath", name, true)
	switch {
	case err != nil:
		return "", err
	case r.node == nil && mustExist:
		return "", pathErr("realpath", name, syscall.ENOENT)
	}
	return r.path, nil
}

// Link creates newname as a hard link to oldname, as link(2) does: both
// names then refer to the same file (a symbolic link oldname is not
// followed). Directories cannot be linked. As with Ubuntu's
// fs.protected_hardlinks, a user may only link a file they own or may read
// and write. Link counts are not kept: ls -l and stat show 1.
func (u *UserFS) Link(oldname, newname string) error {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	from, err := u.walk("link", oldname, false)
	switch {
	case err != nil:
		return err
	case from.node == nil:
		return pathErr("link", oldname, syscall.ENOENT)
	case from.node.mode.IsDir():
		return pathErr("link", oldname, syscall.EPERM)
	case u.cred.UID != 0 && u.cred.UID != from.node.uid && !u.can(from.node, accessRead|accessWrite):
		return pathErr("link", oldname, syscall.EPERM)
	}
	to, err := u.walk("link", newname, false)
	switch {
	case err != nil:
		return err
	case to.node != nil:
		return pathErr("link", newname, syscall.EEXIST)
	case !u.can(to.parent, accessWrite|accessExec):
		return pathErr("link", newname, syscall.EACCES)
	}
	to.parent.entries[to.name] = from.node
	to.parent.mtime = u.fs.now()
	return nil
}

// Readlink returns the target of a symbolic link.
func (u *UserFS) Readlink(name string) (string, error) {
	u.fs.mu.RLock()
	defer u.fs.mu.RUnlock()
	r, err := u.walk("readlink", name, false)
	switch {
	case err != nil:
		return "", err
	case r.node == nil:
		return "", pathErr("readlink", name, syscall.ENOENT)
	case r.node.mode&fs.ModeSymlink == 0:
		return "", pathErr("readlink", name, syscall.EINVAL)
	}
	return r.node.target, nil
}

// Chmod changes the permission bits (and the setuid, setgid and sticky
// bits) of a file, following symbolic links. Only the owner or root may do
// it.
func (u *UserFS) Chmod(name string, mode fs.FileMode) error {
	return u.modify("chmod", name, func(n *inode) error {
		if u.cred.UID != 0 && u.cred.UID != n.uid {
			return syscall.EPERM
		}
		keep := n.mode.Type()
		n.mode = keep | mode&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid|fs.ModeSetuid)
		return nil
	})
}

// Chown changes the owner and group of a file; -1 leaves one unchanged. Only
// root may change the owner; the owner may change the group to one of its
// own groups.
func (u *UserFS) Chown(name string, uid, gid int) error {
	return u.modify("chown", name, func(n *inode) error {
		if u.cred.UID != 0 {
			if (uid != -1 && uid != n.uid) || u.cred.UID != n.uid || (gid != -1 && !u.cred.inGroup(gid)) {
				return syscall.EPERM
			}
		}
		if uid != -1 {
			n.uid = uid
		}
		if gid != -1 {
			n.gid = gid
		}
		return nil
	})
}

// Chtimes sets a file's modification time. The owner and root may; so may
// anyone with write access, as for setting it to now with touch.
func (u *UserFS) Chtimes(name string, mtime time.Time) error {
	return u.modify("chtimes", name, func(n *inode) error {
		if u.cred.UID != 0 && u.cred.UID != n.uid && !u.can(n, accessWrite) {
			return syscall.EPERM
		}
		n.mtime = mtime
		return nil
	})
}

// Truncate changes the size of a regular file.
func (u *UserFS) Truncate(name string, size int64) error {
	return u.modify("truncate", name, func(n *inode) error {
		switch {
		case size < 0:
			return syscall.EINVAL
		case n.mode.IsDir():
			return syscall.EISDIR
		case !u.can(n, accessWrite):
			return syscall.EACCES
		}
		n.truncate(size)
		n.mtime = u.fs.now()
		return nil
	})
}

func (u *UserFS) modify(op, name string, fn func(*inode) error) error {
	u.fs.mu.Lock()
	defer u.fs.mu.Unlock()
	r, err := u.walk(op, name, true)
	if err != nil {
		return err
	}
	if r.node == nil {
		return pathErr(op, name, syscall.ENOENT)
	}
	if err := fn(r.node); err != nil {
		return pathErr(op, name, err)
	}
	return nil
}

func (n *inode) truncate(size int64) {
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
		return
	}
	if size <= int64(cap(n.data)) {
		old := len(n.data)
		n.data = n.data[:size]
		clear(n.data[old:])
		return
	}
	n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
}

// --- open files ----------------------------------------------------------------

// File is an open file of an [FS]. It supports sequential and positioned
// reads and writes, so the SFTP server can serve concurrent out-of-order
// writes into it.
type File struct {
	fs     *FS
	n      *inode
	name   string
	read   bool
	write  bool
	append bool
	closed bool // guarded by fs.mu

	mu  sync.Mutex // guards off; taken before fs.mu
	off int64
}

// Name returns the file's resolved path.
func (f *File) Name() string { return f.name }

// Read reads from the current offset.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// WriteTo writes the file from the current offset to its end to w,
// advancing the offset, as a loop of Read and w.Write does. It makes File
// an io.WriterTo, so that io.Copy from a File (a shell's `< file`) reuses
// a pooled buffer instead of allocating one per copy.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	var total int64
	for {
		n, err := f.Read(*buf)
		if n > 0 {
			m, werr := w.Write((*buf)[:n])
			total += int64(m)
			switch {
			case werr != nil:
				return total, werr
			case m != n:
				return total, io.ErrShortWrite
			}
		}
		switch {
		case err == io.EOF:
			return total, nil
		case err != nil:
			return total, err
		}
	}
}

// readAll reads the file from the current offset to its end into a
// buffer of the file's size.
func (f *File) readAll() ([]byte, error) {
	f.fs.mu.RLock()
	size := len(f.n.data)
	f.fs.mu.RUnlock()
	b := make([]byte, 0, size+1) // one byte more for the read at EOF, as os.ReadFile
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// ReadAt reads from an absolute offset.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	switch {
	case f.closed:
		return 0, fs.ErrClosed
	case !f.read:
		return 0, pathErr("read", f.name, syscall.EBADF)
	case f.n.mode.IsDir():
		return 0, pathErr("read", f.name, syscall.EISDIR)
	case off < 0:
		return 0, pathErr("read", f.name, syscall.EINVAL)
	case f.n.null || off >= int64(len(f.n.data)):
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write writes at the current offset. With O_APPEND it writes at the end
// of the file, atomically, so concurrent appenders never overwrite each
// other.
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	off := f.off
	if f.append {
		off = int64(len(f.n.data))
	}
	n, err := f.writeAt(p, off)
	f.off = off + int64(n)
	return n, err
}

// WriteAt writes at an absolute offset, growing the file as needed; a gap
// between the old end and off reads as zeros.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.writeAt(p, off)
}

func (f *File) writeAt(p []byte, off int64) (int, error) {
	switch {
	case f.closed:
		return 0, fs.ErrClosed
	case !f.write:
		return 0, pathErr("write", f.name, syscall.EBADF)
	case off < 0:
		return 0, pathErr("write", f.name, syscall.EINVAL)
	case f.n.null:
		return len(p), nil
	}
	size := int64(len(f.n.data))
	end := off + int64(len(p))
	if end > size {
		if end > int64(cap(f.n.data)) {
			grown := make([]byte, end, max(end, 2*int64(cap(f.n.data))))
			copy(grown, f.n.data)
			f.n.data = grown
		} else {
			// Bytes past the old end may be left over from before a
			// truncation: a hole must read as zeros.
			f.n.data = f.n.data[:end]
			clear(f.n.data[size:end])
		}
	}
	copy(f.n.data[off:], p)
	f.n.mtime = f.fs.now()
	return len(p), nil
}

// Seek sets the offset for the next Read or Write.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fs.mu.RLock()
	size := int64(len(f.n.data))
	f.fs.mu.RUnlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += size
	default:
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	if offset < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.off = offset
	return offset, nil
}

// Stat describes the open file.
func (f *File) Stat() (fs.FileInfo, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	return newInfo(path.Base(f.name), f.n), nil
}

// Close closes the file. Closing twice is an error, as for *os.File.
func (f *File) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	f.closed = true
	return nil
}

// --- file information ------------------------------------------------------

// info is a snapshot of an inode taken under the lock.
type info struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	sys   *syscall.Stat_t
}

func newInfo(name string, n *inode) *info {
	size := int64(len(n.data))
	switch {
	case n.mode&fs.ModeSymlink != 0:
		size = int64(len(n.target))
	case n.mode.IsDir():
		size = 4096 // one ext4 block, as stat and ls -l show
	}
	return &info{
		name: name, size: size, mode: n.mode, mtime: n.mtime,
		sys: &syscall.Stat_t{Uid: uint32(n.uid), Gid: uint32(n.gid), Size: size, Mode: unixMode(n.mode)},
	}
}

func (i *info) Name() string       { return i.name }
func (i *info) Size() int64        { return i.size }
func (i *info) Mode() fs.FileMode  { return i.mode }
func (i *info) ModTime() time.Time { return i.mtime }
func (i *info) IsDir() bool        { return i.mode.IsDir() }

// Sys returns a *syscall.Stat_t carrying the owner, group and mode, which is
// where pkg/sftp and the shell interpreter look for them.
func (i *info) Sys() any { return i.sys }

// Owner returns the UID and GID of a file described by info from this
// package, or -1, -1 for any other fs.FileInfo.
func Owner(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	switch {
	case m.IsDir():
		u |= syscall.S_IFDIR
	case m&fs.ModeSymlink != 0:
		u |= syscall.S_IFLNK
	case m&fs.ModeCharDevice != 0:
		u |= syscall.S_IFCHR
	default:
		u |= syscall.S_IFREG
	}
	if m&fs.ModeSticky != 0 {
		u |= syscall.S_ISVTX
	}
	if m&fs.ModeSetgid != 0 {
		u |= syscall.S_ISGID
	}
	if m&fs.ModeSetuid != 0 {
		u |= syscall.S_ISUID
	}
	return u
}

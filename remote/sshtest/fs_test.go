package sshtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fsWithUsers returns a filesystem with /etc/passwd and /etc/group for root,
// alice (1000) and bob (1001), and homes for both.
func fsWithUsers(t *testing.T) (*FS, *UserFS, *UserFS) {
	t.Helper()
	f := NewFS()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.WriteFile("/etc/passwd", []byte("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\nbob:x:1001:1001::/home/bob:/bin/bash\n"), 0o644))
	must(f.WriteFile("/etc/group", []byte("root:x:0:\nalice:x:1000:\nbob:x:1001:\nops:x:2000:alice\n"), 0o644))
	for _, u := range []struct {
		name string
		id   int
	}{{"alice", 1000}, {"bob", 1001}} {
		must(f.MkdirAll("/home/"+u.name, 0o750))
		must(f.Chown("/home/"+u.name, u.id, u.id))
	}
	alice := f.As(Cred{UID: 1000, GID: 1000, Groups: f.SupplementaryGroups("alice")}, "/home/alice")
	bob := f.As(Cred{UID: 1001, GID: 1001}, "/home/bob")
	return f, alice, bob
}

func wantErrno(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Errorf("%s: error %v, want %v", what, err, errno)
	}
}

func wantNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestFSPermissions(t *testing.T) {
	f, alice, bob := fsWithUsers(t)

	wantErrno(t, "alice creates in /etc", alice.WriteFile("/etc/x", nil, 0o644), syscall.EACCES)
	wantErrno(t, "alice mkdir in /etc", alice.Mkdir("/etc/d", 0o755), syscall.EACCES)
	wantErrno(t, "alice overwrites /etc/passwd", alice.WriteFile("/etc/passwd", nil, 0o644), syscall.EACCES)
	wantErrno(t, "alice removes /etc/passwd", alice.Remove("/etc/passwd"), syscall.EACCES)
	wantNoErr(t, "alice creates in her home", alice.WriteFile("notes", []byte("n"), 0o644))
	wantNoErr(t, "alice creates in /tmp", alice.WriteFile("/tmp/a", []byte("a"), 0o644))
	wantNoErr(t, "bob creates in /tmp", bob.WriteFile("/tmp/b", []byte("b"), 0o666))
	wantNoErr(t, "bob lets all write it", bob.Chmod("/tmp/b", 0o666))

	// Homes are 0750: bob cannot even look into alice's.
	_, err := bob.Stat("/home/alice/notes")
	wantErrno(t, "bob stats a file in alice's home", err, syscall.EACCES)
	_, err = bob.ReadDir("/home/alice")
	wantErrno(t, "bob lists alice's home", err, syscall.EACCES)
	_, err = alice.ReadFile("/root/.bashrc")
	wantErrno(t, "alice reads in /root", err, syscall.EACCES)

	// Sticky /tmp: bob's file is writable by all, yet alice may not
	// remove or rename it; bob and root may.
	wantErrno(t, "alice removes bob's file in /tmp", alice.Remove("/tmp/b"), syscall.EPERM)
	wantErrno(t, "alice renames bob's file in /tmp", alice.Rename("/tmp/b", "/tmp/c"), syscall.EPERM)
	wantErrno(t, "alice renames over bob's file in /tmp", alice.Rename("/tmp/a", "/tmp/b"), syscall.EPERM)
	wantNoErr(t, "alice writes bob's 0666 file", alice.WriteFile("/tmp/b", []byte("by alice"), 0))
	wantNoErr(t, "bob removes his file", bob.Remove("/tmp/b"))
	wantNoErr(t, "root removes alice's file", f.Remove("/tmp/a"))

	// Read and write bits of a file, and of its group.
	wantNoErr(t, "seed", f.WriteFile("/srv/secret", []byte("s"), 0o640))
	wantNoErr(t, "chgrp", f.Chown("/srv/secret", 0, 2000))
	if data, err := alice.ReadFile("/srv/secret"); err != nil || string(data) != "s" {
		t.Errorf("alice (group ops) reads a 0640 file of group ops: %q, %v", data, err)
	}
	_, err = bob.ReadFile("/srv/secret")
	wantErrno(t, "bob reads a 0640 file", err, syscall.EACCES)
	wantErrno(t, "alice writes a 0640 file", alice.WriteFile("/srv/secret", nil, 0), syscall.EACCES)
	wantErrno(t, "access w", alice.Access("/srv/secret", accessWrite), syscall.EACCES)
	wantNoErr(t, "access r", alice.Access("/srv/secret", accessRead))

	// Root bypasses read and write bits, but runs only executable files.
	wantNoErr(t, "root writes a 0400 file", f.As(Root, "/").WriteFile("/srv/secret", []byte("r"), 0))
	wantErrno(t, "root execs a 0644 file", f.As(Root, "/").Access("/etc/passwd", accessExec), syscall.EACCES)
	wantNoErr(t, "root searches a 0700 directory", f.As(Root, "/").Access("/root", accessExec))
}

func TestFSRename(t *testing.T) {
	f, alice, _ := fsWithUsers(t)
	u := f.As(Root, "/")
	wantNoErr(t, "seed", f.WriteFile("/d/file", []byte("old"), 0o644))
	wantNoErr(t, "seed", f.WriteFile("/d/new", []byte("new"), 0o600))
	wantNoErr(t, "seed", f.MkdirAll("/d/dir/sub", 0o755))
	wantNoErr(t, "seed", f.MkdirAll("/d/empty", 0o755))

	wantErrno(t, "dir over file", u.Rename("/d/dir", "/d/file"), syscall.ENOTDIR)
	wantErrno(t, "file over dir", u.Rename("/d/file", "/d/empty"), syscall.EISDIR)
	wantErrno(t, "dir over non-empty dir", u.Rename("/d/empty", "/d/dir"), syscall.ENOTEMPTY)
	wantErrno(t, "dir into itself", u.Rename("/d/dir", "/d/dir/sub/x"), syscall.EINVAL)
	wantErrno(t, "missing source", u.Rename("/d/nope", "/d/x"), syscall.ENOENT)
	wantErrno(t, "into a missing directory", u.Rename("/d/file", "/nope/x"), syscall.ENOENT)
	wantErrno(t, "alice out of /d", alice.Rename("/d/file", "/tmp/file"), syscall.EACCES)
	wantNoErr(t, "same file", u.Rename("/d/file", "/d/file"))

	wantNoErr(t, "file over file", u.Rename("/d/new", "/d/file"))
	if data, _ := f.ReadFile("/d/file"); string(data) != "new" {
		t.Errorf("after rename the target holds %q", data)
	}
	if fi, _ := f.Stat("/d/file"); fi.Mode().Perm() != 0o600 {
		t.Errorf("after rename the target has mode %v, want the source's 0600", fi.Mode())
	}
	if f.Exists("/d/new") {
		t.Error("the source still exists")
	}
	wantNoErr(t, "dir over empty dir", u.Rename("/d/dir", "/d/empty"))
	if !f.Exists("/d/empty/sub") || f.Exists("/d/dir") {
		t.Error("the directory did not move")
	}
}

// TestFSRenameAtomic replaces a file again and again while readers read
// it: a reader sees one whole version or another, never a missing or
// partial file.
func TestFSRenameAtomic(t *testing.T) {
	f := NewFS()
	u := f.As(Root, "/")
	version := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 4096) }
	if err := f.WriteFile("/srv/conf", version(0), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				data, err := u.ReadFile("/srv/conf")
				if err != nil || len(data) != 4096 || bytes.Count(data, data[:1]) != 4096 {
					errs <- fmt.Errorf("a reader saw %d bytes, %v", len(data), err)
					return
				}
			}
		})
	}
	for i := 1; i <= 200; i++ {
		tmp := fmt.Sprintf("/srv/.conf.%d", i)
		if err := u.WriteFile(tmp, version(i), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := u.Rename(tmp, "/srv/conf"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestFSSymlinks(t *testing.T) {
	f := NewFS()
	u := f.As(Root, "/")
	wantNoErr(t, "seed", f.WriteFile("/usr/bin/tool", []byte("tool"), 0o755))

	// /bin is a relative link to usr/bin, as on merged-/usr Ubuntu.
	if target, err := u.Readlink("/bin"); err != nil || target != "usr/bin" {
		t.Errorf("readlink /bin = %q, %v", target, err)
	}
	if data, err := u.ReadFile("/bin/tool"); err != nil || string(data) != "tool" {
		t.Errorf("read /bin/tool: %q, %v", data, err)
	}
	fi, err := u.Stat("/bin/tool")
	if err != nil || fi.Name() != "tool" || !fi.Mode().IsRegular() {
		t.Errorf("stat /bin/tool: %v, %v", fi, err)
	}
	if fi, _ := u.Lstat("/bin"); fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("lstat /bin: mode %v, want a link", fi.Mode())
	}
	if fi, _ := u.Stat("/bin"); !fi.IsDir() || fi.Name() != "bin" {
		t.Errorf("stat /bin: %v %q, want the directory named bin", fi.Mode(), fi.Name())
	}
	if real, err := u.Realpath("/bin/../bin/./tool"); err != nil || real != "/usr/bin/tool" {
		t.Errorf("realpath = %q, %v", real, err)
	}

	// A chain of relative and absolute links, through a directory link.
	wantNoErr(t, "link", u.Symlink("../usr/bin/tool", "/etc/tool"))
	wantNoErr(t, "link", u.Symlink("/etc/tool", "/etc/tool2"))
	wantNoErr(t, "link", u.Symlink("/etc", "/srvlink"))
	if data, err := u.ReadFile("/srvlink/tool2"); err != nil || string(data) != "tool" {
		t.Errorf("read through a chain: %q, %v", data, err)
	}

	// A dangling link: stat fails, lstat works, creating through it
	// creates the target (but not with O_EXCL).
	wantNoErr(t, "link", u.Symlink("/tmp/target", "/tmp/dangling"))
	_, err = u.Stat("/tmp/dangling")
	wantErrno(t, "stat dangling", err, syscall.ENOENT)
	if _, err := u.Lstat("/tmp/dangling"); err != nil {
		t.Errorf("lstat dangling: %v", err)
	}
	_, err = u.OpenFile("/tmp/dangling", syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, 0o644)
	wantErrno(t, "O_EXCL through a dangling link", err, syscall.EEXIST)
	wantNoErr(t, "write through a dangling link", u.WriteFile("/tmp/dangling", []byte("t"), 0o644))
	if data, _ := f.ReadFile("/tmp/target"); string(data) != "t" {
		t.Errorf("the target holds %q", data)
	}
	if resolved, err := u.canonical("/tmp/dangling", false); err != nil || resolved != "/tmp/target" {
		t.Errorf("canonical = %q, %v", resolved, err)
	}

	// Loops.
	wantNoErr(t, "link", u.Symlink("loop-b", "/tmp/loop-a"))
	wantNoErr(t, "link", u.Symlink("loop-a", "/tmp/loop-b"))
	_, err = u.Stat("/tmp/loop-a")
	wantErrno(t, "stat a loop", err, syscall.ELOOP)
	_, err = u.ReadFile("/tmp/loop-a/x")
	wantErrno(t, "walk through a loop", err, syscall.ELOOP)
	_, err = u.Realpath("/tmp/loop-b")
	wantErrno(t, "realpath of a loop", err, syscall.ELOOP)

	// Removing a link removes the link, not the target.
	wantNoErr(t, "remove link", u.Remove("/etc/tool"))
	if !f.Exists("/usr/bin/tool") {
		t.Error("removing a link removed its target")
	}
	wantErrno(t, "symlink over a file", u.Symlink("x", "/usr/bin/tool"), syscall.EEXIST)
	_, err = u.Readlink("/usr/bin/tool")
	wantErrno(t, "readlink of a file", err, syscall.EINVAL)
}

func TestFSUmaskAndModes(t *testing.T) {
	f, alice, _ := fsWithUsers(t)
	if alice.Umask() != 0o022 {
		t.Errorf("default umask %o", alice.Umask())
	}
	wantNoErr(t, "create", alice.WriteFile("a", nil, 0o666))
	wantNoErr(t, "mkdir", alice.Mkdir("d", 0o777))
	strict := alice.WithUmask(0o077)
	wantNoErr(t, "create", strict.WriteFile("b", nil, 0o666))
	wantNoErr(t, "mkdir", strict.Mkdir("e", 0o777))
	for name, want := range map[string]fs.FileMode{"a": 0o644, "d": fs.ModeDir | 0o755, "b": 0o600, "e": fs.ModeDir | 0o700} {
		fi, err := alice.Stat(name)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, %v, want %v", name, fi.Mode(), err, want)
		}
		if uid, gid := Owner(fi); uid != 1000 || gid != 1000 {
			t.Errorf("%s: owner %d:%d, want 1000:1000", name, uid, gid)
		}
	}
	if alice.Umask() != 0o022 {
		t.Error("WithUmask changed the original view")
	}
	// Replacing a file's content keeps its mode.
	wantNoErr(t, "rewrite", strict.WriteFile("a", []byte("x"), 0o600))
	if fi, _ := alice.Stat("a"); fi.Mode() != 0o644 {
		t.Errorf("rewritten file has mode %v", fi.Mode())
	}
	// FS.WriteFile (root, for seeding) sets exactly the mode given.
	wantNoErr(t, "seed", f.WriteFile("/srv/x", nil, fs.ModeSetuid|0o751))
	if fi, _ := f.Stat("/srv/x"); fi.Mode() != fs.ModeSetuid|0o751 {
		t.Errorf("seeded file has mode %v", fi.Mode())
	}
	// A setgid directory passes its group and the bit on.
	wantNoErr(t, "seed", f.MkdirAll("/srv/shared", 0o777))
	wantNoErr(t, "chown", f.Chown("/srv/shared", 0, 2000))
	wantNoErr(t, "chmod", f.As(Root, "/").Chmod("/srv/shared", fs.ModeSetgid|0o777))
	wantNoErr(t, "create", alice.WriteFile("/srv/shared/f", nil, 0o644))
	wantNoErr(t, "mkdir", alice.Mkdir("/srv/shared/sub", 0o755))
	for _, name := range []string{"/srv/shared/f", "/srv/shared/sub"} {
		fi, _ := alice.Stat(name)
		if _, gid := Owner(fi); gid != 2000 {
			t.Errorf("%s: group %d, want the directory's 2000", name, gid)
		}
	}
	if fi, _ := alice.Stat("/srv/shared/sub"); fi.Mode()&fs.ModeSetgid == 0 {
		t.Error("a subdirectory of a setgid directory lacks the setgid bit")
	}
}

func TestFSChmodChown(t *testing.T) {
	f, alice, bob := fsWithUsers(t)
	root := f.As(Root, "/")
	wantNoErr(t, "seed", alice.WriteFile("/tmp/a", nil, 0o644))

	wantNoErr(t, "owner chmods", alice.Chmod("/tmp/a", 0o600))
	wantErrno(t, "other chmods", bob.Chmod("/tmp/a", 0o666), syscall.EPERM)
	wantNoErr(t, "root chmods", root.Chmod("/tmp/a", fs.ModeSticky|0o640))
	if fi, _ := f.Stat("/tmp/a"); fi.Mode() != fs.ModeSticky|0o640 {
		t.Errorf("mode %v", fi.Mode())
	}

	wantErrno(t, "owner gives the file away", alice.Chown("/tmp/a", 1001, -1), syscall.EPERM)
	wantErrno(t, "other takes the file", bob.Chown("/tmp/a", 1001, 1001), syscall.EPERM)
	wantErrno(t, "owner chgrps to a group she is not in", alice.Chown("/tmp/a", -1, 1001), syscall.EPERM)
	wantNoErr(t, "owner chgrps to her group ops", alice.Chown("/tmp/a", -1, 2000))
	wantNoErr(t, "owner 'changes' owner to herself", alice.Chown("/tmp/a", 1000, -1))
	wantNoErr(t, "root chowns", root.Chown("/tmp/a", 1001, 1001))
	fi, _ := f.Stat("/tmp/a")
	if uid, gid := Owner(fi); uid != 1001 || gid != 1001 {
		t.Errorf("owner %d:%d after root's chown", uid, gid)
	}
	wantErrno(t, "chmod a missing file", root.Chmod("/tmp/nope", 0o644), syscall.ENOENT)
	if uid, gid := Owner(fakeInfo{}); uid != -1 || gid != -1 {
		t.Errorf("Owner of a foreign FileInfo = %d, %d", uid, gid)
	}
}

type fakeInfo struct{ fs.FileInfo }

func (fakeInfo) Sys() any { return nil }

func TestFSOpenFlags(t *testing.T) {
	f := NewFS()
	u := f.As(Root, "/")
	excl := syscall.O_WRONLY | syscall.O_CREAT | syscall.O_EXCL
	w, err := u.OpenFile("/tmp/x", excl, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, err = u.OpenFile("/tmp/x", excl, 0o600)
	wantErrno(t, "O_EXCL on an existing file", err, syscall.EEXIST)
	_, err = u.OpenFile("/tmp/none", syscall.O_RDONLY, 0)
	wantErrno(t, "open a missing file", err, syscall.ENOENT)
	_, err = u.OpenFile("/tmp", syscall.O_WRONLY, 0)
	wantErrno(t, "open a directory for writing", err, syscall.EISDIR)
	_, err = u.OpenFile("/etc/passwd/x", syscall.O_RDONLY, 0)
	wantErrno(t, "a file as a directory", err, syscall.ENOENT)
	wantNoErr(t, "seed", f.WriteFile("/tmp/file", []byte("x"), 0o644))
	_, err = u.OpenFile("/tmp/file/x", syscall.O_RDONLY, 0)
	wantErrno(t, "a file as a directory", err, syscall.ENOTDIR)

	// O_APPEND writes at the end whatever the offset, and O_TRUNC empties.
	wantNoErr(t, "seed", f.WriteFile("/tmp/log", []byte("one\n"), 0o644))
	a1, _ := u.OpenFile("/tmp/log", syscall.O_WRONLY|syscall.O_APPEND, 0)
	a2, _ := u.OpenFile("/tmp/log", syscall.O_WRONLY|syscall.O_APPEND, 0)
	a1.Write([]byte("two\n"))
	a2.Write([]byte("three\n"))
	a1.Write([]byte("four\n"))
	a1.Close()
	a2.Close()
	if data, _ := f.ReadFile("/tmp/log"); string(data) != "one\ntwo\nthree\nfour\n" {
		t.Errorf("appended log %q", data)
	}
	tr, _ := u.OpenFile("/tmp/log", syscall.O_WRONLY|syscall.O_TRUNC, 0)
	tr.Close()
	if data, _ := f.ReadFile("/tmp/log"); len(data) != 0 {
		t.Errorf("truncated log %q", data)
	}

	// Access modes are enforced on the open file.
	r, _ := u.OpenFile("/tmp/file", syscall.O_RDONLY, 0)
	_, err = r.Write([]byte("x"))
	wantErrno(t, "write to a read-only file", err, syscall.EBADF)
	wo, _ := u.OpenFile("/tmp/file", syscall.O_WRONLY, 0)
	_, err = wo.Read(make([]byte, 1))
	wantErrno(t, "read from a write-only file", err, syscall.EBADF)
	r.Close()
	if err := r.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second close: %v", err)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
	_, err = wo.WriteAt([]byte("x"), -1)
	wantErrno(t, "write at a negative offset", err, syscall.EINVAL)

	// /dev/null swallows writes and reads empty.
	null, err := u.OpenFile("/dev/null", syscall.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := null.Write([]byte("gone")); n != 4 || err != nil {
		t.Errorf("write /dev/null: %d, %v", n, err)
	}
	if n, err := null.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Errorf("read /dev/null: %d, %v", n, err)
	}
}

func TestFSWriteAtAndSeek(t *testing.T) {
	f := NewFS()
	u := f.As(Root, "/")
	w, err := u.OpenFile("/tmp/sparse", syscall.O_RDWR|syscall.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt([]byte("end"), 10)
	if data, _ := f.ReadFile("/tmp/sparse"); string(data) != "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00end" {
		t.Errorf("after WriteAt past the end: %q", data)
	}
	// Shrink, then grow again within the old capacity: the hole must
	// read as zeros, not as the old bytes.
	wantNoErr(t, "fill", u.WriteFile("/tmp/sparse", bytes.Repeat([]byte("x"), 64), 0))
	wantNoErr(t, "truncate", u.Truncate("/tmp/sparse", 2))
	w.WriteAt([]byte("y"), 8)
	if data, _ := f.ReadFile("/tmp/sparse"); string(data) != "xx\x00\x00\x00\x00\x00\x00y" {
		t.Errorf("after truncate and WriteAt: %q", data)
	}
	wantNoErr(t, "truncate up", u.Truncate("/tmp/sparse", 12))
	if data, _ := f.ReadFile("/tmp/sparse"); string(data) != "xx\x00\x00\x00\x00\x00\x00y\x00\x00\x00" {
		t.Errorf("after growing with Truncate: %q", data)
	}
	wantErrno(t, "negative truncate", u.Truncate("/tmp/sparse", -1), syscall.EINVAL)

	if off, err := w.Seek(-3, io.SeekEnd); off != 9 || err != nil {
		t.Errorf("seek from end: %d, %v", off, err)
	}
	buf := make([]byte, 8)
	n, _ := w.Read(buf)
	if string(buf[:n]) != "\x00\x00\x00" {
		t.Errorf("read after seek: %q", buf[:n])
	}
	if _, err := w.Seek(-1, io.SeekStart); err == nil {
		t.Error("seek before the start succeeded")
	}
	fi, _ := w.Stat()
	if fi.Size() != 12 || fi.Name() != "sparse" {
		t.Errorf("stat of the open file: %d %q", fi.Size(), fi.Name())
	}
}

// TestFSConcurrentWriteAt writes one file from many goroutines at once, as
// the SFTP server does with concurrent writes. Run with -race.
func TestFSConcurrentWriteAt(t *testing.T) {
	f := NewFS()
	u := f.As(Root, "/")
	w, err := u.OpenFile("/tmp/upload", syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	const chunks, size = 64, 1000
	want := make([]byte, chunks*size)
	for i := range want {
		want[i] = byte(i * 7)
	}
	var wg sync.WaitGroup
	for i := chunks - 1; i >= 0; i-- { // last chunk first: the file grows out of order
		wg.Go(func() {
			if _, err := w.WriteAt(want[i*size:(i+1)*size], int64(i*size)); err != nil {
				t.Error(err)
			}
		})
	}
	// Appenders to another file at the same time: nothing is lost.
	log, _ := u.OpenFile("/tmp/log", syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND, 0o644)
	for range 16 {
		wg.Go(func() {
			for range 10 {
				log.Write([]byte("0123456789"))
			}
		})
	}
	wg.Wait()
	w.Close()
	log.Close()
	if got, _ := f.ReadFile("/tmp/upload"); !bytes.Equal(got, want) {
		t.Errorf("concurrent WriteAt: %d bytes, not the %d written", len(got), len(want))
	}
	if got, _ := f.ReadFile("/tmp/log"); len(got) != 16*10*10 || bytes.Count(got, []byte("0123456789")) != 160 {
		t.Errorf("concurrent appends: %d bytes", len(got))
	}
}

func TestFSDirectoriesAndLinks(t *testing.T) {
	f, alice, bob := fsWithUsers(t)
	u := f.As(Root, "/")
	wantNoErr(t, "mkdir -p", alice.MkdirAll("a/b/c", 0o755))
	wantNoErr(t, "mkdir -p again", alice.MkdirAll("a/b/c", 0o755))
	wantNoErr(t, "file", alice.WriteFile("a/f", nil, 0o644))
	wantErrno(t, "mkdir -p over a file", alice.MkdirAll("a/f", 0o755), syscall.EEXIST)
	wantErrno(t, "mkdir -p through a file", alice.MkdirAll("a/f/g", 0o755), syscall.ENOTDIR)
	wantErrno(t, "mkdir over a directory", alice.Mkdir("a", 0o755), syscall.EEXIST)
	wantErrno(t, "remove a non-empty directory", alice.Remove("a/b"), syscall.ENOTEMPTY)
	wantErrno(t, "remove /", u.Remove("/"), syscall.EBUSY)

	entries, err := alice.ReadDir("a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"b", "f"}) || !entries[0].IsDir() {
		t.Errorf("readdir: %v", names)
	}
	if fi, _ := alice.Stat("a"); fi.Size() != 4096 {
		t.Errorf("a directory's size is %d, want 4096 as on ext4", fi.Size())
	}

	// Hard links share the file.
	wantNoErr(t, "write", alice.WriteFile("orig", []byte("v1"), 0o644))
	wantNoErr(t, "link", alice.Link("orig", "/tmp/hard"))
	wantNoErr(t, "write through the link", alice.WriteFile("/tmp/hard", []byte("v2"), 0))
	if data, _ := alice.ReadFile("orig"); string(data) != "v2" {
		t.Errorf("through a hard link: %q", data)
	}
	wantErrno(t, "link a directory", alice.Link("a", "/tmp/dirlink"), syscall.EPERM)
	wantErrno(t, "link onto a file", alice.Link("orig", "/tmp/hard"), syscall.EEXIST)
	wantNoErr(t, "seed", f.WriteFile("/srv/rootfile", nil, 0o600))
	wantErrno(t, "link someone else's unreadable file", bob.Link("/srv/rootfile", "/tmp/stolen"), syscall.EPERM)

	wantNoErr(t, "chtimes", alice.Chtimes("orig", time.Unix(1e9, 0)))
	if fi, _ := alice.Stat("orig"); fi.ModTime().Unix() != 1e9 {
		t.Errorf("mtime %v", fi.ModTime())
	}
	wantErrno(t, "chtimes of a file one may not write", bob.Chtimes("/etc/passwd", time.Now()), syscall.EPERM)
}

func TestFSAccounts(t *testing.T) {
	f, _, _ := fsWithUsers(t)
	if uid, gid, ok := f.LookupUser("bob"); !ok || uid != 1001 || gid != 1001 {
		t.Errorf("LookupUser(bob) = %d, %d, %v", uid, gid, ok)
	}
	if _, _, ok := f.LookupUser("mallory"); ok {
		t.Error("LookupUser found mallory")
	}
	if gid, ok := f.LookupGroup("ops"); !ok || gid != 2000 {
		t.Errorf("LookupGroup(ops) = %d, %v", gid, ok)
	}
	if f.UserName(1000) != "alice" || f.UserName(4242) != "4242" || f.GroupName(2000) != "ops" {
		t.Error("UserName/GroupName")
	}
	if g := f.SupplementaryGroups("alice"); !slices.Equal(g, []int{2000}) {
		t.Errorf("SupplementaryGroups(alice) = %v", g)
	}
	if f.homeDir("bob") != "/home/bob" || f.homeDir("root") != "/root" || f.homeDir("nobody") != "/" {
		t.Error("homeDir")
	}
}

func TestFSRootHelpers(t *testing.T) {
	f := NewFS()
	wantNoErr(t, "write", f.WriteFile("/srv/a", []byte("a"), 0o600))
	wantNoErr(t, "chmod", f.Chmod("/srv/a", fs.ModeSticky|0o640))
	wantNoErr(t, "symlink", f.Symlink("a", "/srv/l"))
	if fi, err := f.Lstat("/srv/l"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat: %v, %v", fi, err)
	}
	if fi, err := f.Stat("/srv/l"); err != nil || fi.Mode() != fs.ModeSticky|0o640 {
		t.Errorf("Stat: %v, %v", fi, err)
	}
	if target, err := f.Readlink("/srv/l"); err != nil || target != "a" {
		t.Errorf("Readlink: %q, %v", target, err)
	}
	entries, err := f.ReadDir("/srv")
	if err != nil || len(entries) != 2 || entries[0].Name() != "a" || entries[1].Name() != "l" {
		t.Errorf("ReadDir: %v, %v", entries, err)
	}
	wantNoErr(t, "chown", f.Chown("/srv/a", 7, -1))
	if fi, _ := f.Stat("/srv/a"); fi != nil {
		if uid, gid := Owner(fi); uid != 7 || gid != 0 {
			t.Errorf("owner %d:%d", uid, gid)
		}
	}
	wantNoErr(t, "remove", f.Remove("/srv/l"))
	if f.Exists("/srv/l") || !f.Exists("/srv/a") {
		t.Error("Remove")
	}
}

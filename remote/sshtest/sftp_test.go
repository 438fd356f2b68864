package sshtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/pkg/sftp"
)

func sftpClient(t *testing.T, h *testHost, user string, opts ...sftp.ClientOption) *sftp.Client {
	t.Helper()
	c, err := sftp.NewClient(h.client(user), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSFTPConcurrentUpload(t *testing.T) {
	h := newHost(t)
	c := sftpClient(t, h, "alice", sftp.UseConcurrentWrites(true), sftp.MaxConcurrentRequestsPerFile(16))
	data := make([]byte, 3<<20+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	f, err := c.Create("upload.bin")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.ReadFrom(bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("ReadFrom: %d, %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	wantOK(t, "sha256sum of the upload", h.sh("sha256sum upload.bin"), hex.EncodeToString(sum[:])+"  upload.bin\n")
	got := h.sh("cat /home/alice/upload.bin")
	if got.stdout != string(data) || got.code != 0 {
		t.Errorf("cat returned %d bytes, exit %d", len(got.stdout), got.code)
	}
	wantOK(t, "the upload's attributes", h.sh("stat -c '%s %a %U %G' upload.bin"), strconv.Itoa(len(data))+" 644 alice alice\n")

	// And back, with concurrent reads.
	r, err := c.Open("upload.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var back bytes.Buffer
	if _, err := r.WriteTo(&back); err != nil || !bytes.Equal(back.Bytes(), data) {
		t.Errorf("download: %d bytes, %v", back.Len(), err)
	}
}

func TestSFTPFileOperations(t *testing.T) {
	h := newHost(t)
	c := sftpClient(t, h, "alice")
	if wd, err := c.Getwd(); err != nil || wd != "/home/alice" {
		t.Errorf("working directory %q, %v", wd, err)
	}
	write := func(name, content string) {
		t.Helper()
		f, err := c.Create(name)
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if _, err := f.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "first\n")
	write("b.txt", "second\n")

	// Chmod, and what the shell sees.
	if err := c.Chmod("a.txt", 0o600); err != nil {
		t.Fatal(err)
	}
	wantOK(t, "mode after chmod", h.sh("stat -c %a a.txt"), "600\n")

	// Stat shows ownership.
	fi, err := c.Stat("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*sftp.FileStat)
	if st.UID != 1000 || st.GID != 1000 || fi.Mode() != 0o600 || fi.Size() != 6 {
		t.Errorf("stat: uid %d gid %d mode %v size %d", st.UID, st.GID, fi.Mode(), fi.Size())
	}
	fi, err = c.Stat("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*sftp.FileStat); st.UID != 0 || st.GID != 0 {
		t.Errorf("/etc/passwd owned by %d:%d", st.UID, st.GID)
	}

	// PosixRename replaces; plain Rename does not.
	if err := c.Rename("a.txt", "b.txt"); err == nil {
		t.Error("SSH_FXP_RENAME replaced an existing file")
	}
	if err := c.PosixRename("a.txt", "b.txt"); err != nil {
		t.Fatal(err)
	}
	wantOK(t, "after posix-rename", h.sh("cat b.txt; test -e a.txt || echo gone"), "first\ngone\n")
	if err := c.Rename("b.txt", "c.txt"); err != nil {
		t.Fatal(err)
	}

	// Directories, links, listing.
	if err := c.Mkdir("dir"); err != nil {
		t.Fatal(err)
	}
	if err := c.MkdirAll("dir/x/y"); err != nil {
		t.Fatal(err)
	}
	if err := c.Symlink("c.txt", "link"); err != nil {
		t.Fatal(err)
	}
	if target, err := c.ReadLink("link"); err != nil || target != "c.txt" {
		t.Errorf("readlink: %q, %v", target, err)
	}
	if fi, err := c.Lstat("link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("lstat link: %v, %v", fi, err)
	}
	wantOK(t, "the link in the shell", h.sh("cat link; stat -c %a dir"), "first\n755\n")
	entries, err := c.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"c.txt", "dir", "link"}) {
		t.Errorf("readdir: %v", names)
	}

	// A hard link shares the content.
	if err := c.Link("c.txt", "hard"); err != nil {
		t.Fatal(err)
	}
	wantOK(t, "through the hard link", h.sh("echo more >> hard; cat c.txt"), "first\nmore\n")

	// Truncate, remove, rmdir.
	if err := c.Truncate("c.txt", 2); err != nil {
		t.Fatal(err)
	}
	wantOK(t, "after truncate", h.sh("cat c.txt"), "fi")
	if err := c.Remove("dir"); err == nil {
		t.Error("Remove removed a directory")
	}
	if err := c.RemoveDirectory("dir/x/y"); err != nil {
		t.Error(err)
	}
	if err := c.RemoveDirectory("c.txt"); err == nil {
		t.Error("RemoveDirectory removed a file")
	}
	if err := c.Remove("c.txt"); err != nil {
		t.Error(err)
	}
	if _, err := c.Stat("c.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat after remove: %v", err)
	}

	// Exclusive create.
	if _, err := c.OpenFile("excl", os.O_WRONLY|os.O_CREATE|os.O_EXCL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenFile("excl", os.O_WRONLY|os.O_CREATE|os.O_EXCL); err == nil {
		t.Error("O_EXCL opened an existing file")
	}
}

func TestSFTPPermissions(t *testing.T) {
	h := newHost(t)
	c := sftpClient(t, h, "alice")
	if _, err := c.Create("/etc/evil"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("create in /etc: %v", err)
	}
	if err := c.Mkdir("/etc/evil.d"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("mkdir in /etc: %v", err)
	}
	if err := c.Remove("/etc/hostname"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("remove in /etc: %v", err)
	}
	if err := c.Chmod("/etc/hostname", 0o666); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("chmod of root's file: %v", err)
	}
	if _, err := c.Open("/root/.profile"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("open in /root: %v", err)
	}
	f, err := c.Create("mine")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := c.Chown("mine", 0, 0); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("chown to root: %v", err)
	}
	if h.FS().Exists("/etc/evil") || h.FS().Exists("/etc/evil.d") || !h.FS().Exists("/etc/hostname") {
		t.Error("a denied operation changed the filesystem")
	}

	// Root may, and sees what it wrote with the shell.
	rc := sftpClient(t, h, "root")
	w, err := rc.Create("/etc/app.conf")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "k=v\n")
	w.Close()
	if err := rc.Chown("/etc/app.conf", 1000, 1000); err != nil {
		t.Fatal(err)
	}
	wantOK(t, "root's upload", h.sh("cat /etc/app.conf; stat -c '%U %a' /etc/app.conf"), "k=v\nalice 644\n")
}

package remote_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// onlyReader hides everything but Read, like a network stream.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func fileState(t *testing.T, srv *sshtest.Server, name string) (content string, mode fs.FileMode, uid, gid int) {
	t.Helper()
	data, err := srv.FS().ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := srv.FS().Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid = sshtest.Owner(fi)
	return string(data), fi.Mode().Perm(), uid, gid
}

func TestWriteFileAsRoot(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	const path = "/etc/containerd/certs.d/registry.example.com/hosts.toml"
	opts := remote.FileOptions{Sudo: true, Mode: 0o600}

	changed, err := h.WriteFile(ctx, path, strings.NewReader("server = \"https://registry.example.com\"\n"), opts)
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	content, mode, uid, gid := fileState(t, srv, path)
	if content != "server = \"https://registry.example.com\"\n" || mode != 0o600 || uid != 0 || gid != 0 {
		t.Fatalf("file is %q mode %v owner %d:%d", content, mode, uid, gid)
	}

	// The same content again: one probe, nothing written.
	srv.ResetTranscript()
	changed, err = h.WriteFile(ctx, path, strings.NewReader("server = \"https://registry.example.com\"\n"), opts)
	if err != nil || changed {
		t.Fatalf("second write: changed=%v err=%v", changed, err)
	}
	if n := len(srv.Transcript()); n != 1 {
		t.Errorf("an unchanged write ran %d commands, want 1 probe", n)
	}
	if len(srv.CallsTo("mv")) != 0 || len(srv.CallsTo("chmod")) != 0 {
		t.Error("an unchanged write touched the file")
	}

	// Same content, different mode: only chmod.
	srv.ResetTranscript()
	changed, err = h.WriteFile(ctx, path, strings.NewReader("server = \"https://registry.example.com\"\n"), remote.FileOptions{Sudo: true, Mode: 0o640, Group: "ubuntu"})
	if err != nil || !changed {
		t.Fatalf("mode change: changed=%v err=%v", changed, err)
	}
	if _, mode, _, gid := fileState(t, srv, path); mode != 0o640 || gid != 1000 {
		t.Errorf("mode %v gid %d, want 0640 and ubuntu's group", mode, gid)
	}
	if len(srv.CallsTo("mv")) != 0 {
		t.Error("an attribute change rewrote the content")
	}

	// New content: replaced, mode and group of the existing file kept.
	changed, err = h.WriteFile(ctx, path, strings.NewReader("new\n"), remote.FileOptions{Sudo: true})
	if err != nil || !changed {
		t.Fatalf("rewrite: changed=%v err=%v", changed, err)
	}
	if content, mode, _, gid := fileState(t, srv, path); content != "new\n" || mode != 0o640 || gid != 1000 {
		t.Errorf("rewrite gave %q mode %v gid %d, want the old mode and group kept", content, mode, gid)
	}

	assertNoStaged(t, srv, "/etc/containerd/certs.d/registry.example.com")
}

func TestWriteFileStreamsUnseekableContent(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB, many SFTP packets
	const path = "/home/ubuntu/images/registry.tar"

	changed, err := h.WriteFile(ctx, path, onlyReader{bytes.NewReader(data)}, remote.FileOptions{})
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	got, err := srv.FS().ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("uploaded %d bytes, want %d identical bytes (err %v)", len(got), len(data), err)
	}
	// The host agrees on the checksum.
	out, err := h.Run(ctx, remote.Command("sha256sum", path))
	sum := sha256.Sum256(data)
	if err != nil || !strings.HasPrefix(out.String(), hex.EncodeToString(sum[:])) {
		t.Fatalf("remote sha256sum %q, err %v", out.String(), err)
	}
	// Streamed again: transferred to compare, but reported unchanged and
	// the file is not replaced.
	srv.ResetTranscript()
	changed, err = h.WriteFile(ctx, path, onlyReader{bytes.NewReader(data)}, remote.FileOptions{})
	if err != nil || changed {
		t.Fatalf("second write: changed=%v err=%v", changed, err)
	}
	if len(srv.CallsTo("mv")) != 0 {
		t.Error("an identical stream replaced the file")
	}
}

func TestWriteFilePermissions(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)

	// Without Sudo a root-owned directory cannot be written.
	_, err := h.WriteFile(ctx, "/etc/motd", strings.NewReader("hi\n"), remote.FileOptions{})
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want permission denied", err)
	}
	if srv.FS().Exists("/etc/motd") {
		t.Fatal("the file was written anyway")
	}
	// Another owner needs Sudo, and the request is refused before anything runs.
	srv.ResetTranscript()
	if _, err := h.WriteFile(ctx, "/home/ubuntu/x", strings.NewReader("x"), remote.FileOptions{Owner: "root"}); err == nil {
		t.Fatal("Owner without Sudo accepted")
	}
	if len(srv.Transcript()) != 0 {
		t.Error("commands ran for a request that was invalid")
	}
	// Relative and unclean paths are refused.
	for _, p := range []string{"etc/x", "/etc/../etc/x", "/etc/x/", "/"} {
		if _, err := h.WriteFile(ctx, p, strings.NewReader("x"), remote.FileOptions{Sudo: true}); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

func TestReadFile(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	if err := srv.FS().WriteFile("/etc/shadow-like", []byte("root-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadFile(ctx, "/etc/shadow-like", remote.FileOptions{}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("without sudo: err = %v, want permission denied", err)
	}
	data, err := h.ReadFile(ctx, "/etc/shadow-like", remote.FileOptions{Sudo: true})
	if err != nil || string(data) != "root-only\n" {
		t.Fatalf("with sudo: %q, %v", data, err)
	}
	for _, sudo := range []bool{false, true} {
		if _, err := h.ReadFile(ctx, "/etc/missing", remote.FileOptions{Sudo: sudo}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("sudo=%v: err = %v, want fs.ErrNotExist", sudo, err)
		}
	}
}

func TestEditBlockOnHost(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	if err := srv.FS().WriteFile("/etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := remote.FileOptions{Sudo: true}
	lines := []string{"192.168.0.20 registry.example.com"}
	for i, want := range []bool{true, false} {
		changed, err := remote.EditBlock(ctx, h, "/etc/hosts", "registries", lines, opts)
		if err != nil || changed != want {
			t.Fatalf("run %d: changed=%v err=%v, want changed=%v", i+1, changed, err, want)
		}
	}
	content, mode, _, _ := fileState(t, srv, "/etc/hosts")
	want := "127.0.0.1 localhost\n# BEGIN mgmtkit registries\n192.168.0.20 registry.example.com\n# END mgmtkit registries\n"
	if content != want || mode != 0o644 {
		t.Fatalf("/etc/hosts = %q (mode %v), want %q", content, mode, want)
	}
	// Removing the block restores the original file.
	if changed, err := remote.EditBlock(ctx, h, "/etc/hosts", "registries", nil, opts); err != nil || !changed {
		t.Fatalf("removal: changed=%v err=%v", changed, err)
	}
	if content, _, _, _ := fileState(t, srv, "/etc/hosts"); content != "127.0.0.1 localhost\n" {
		t.Fatalf("after removal /etc/hosts = %q", content)
	}
	// Removing a block from a missing file creates nothing.
	if changed, err := remote.EditBlock(ctx, h, "/etc/missing.conf", "x", nil, opts); err != nil || changed || srv.FS().Exists("/etc/missing.conf") {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
}

func TestUploadFileFromFS(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	pkg := fstest.MapFS{
		"Files/images/registry.tar": {Data: []byte("layer data\n")},
		"Files/images":              {Mode: fs.ModeDir | 0o755},
	}
	for i, want := range []bool{true, false} {
		changed, err := remote.UploadFile(ctx, h, pkg, "Files/images/registry.tar", "/var/lib/mgmtkit/registry.tar", remote.FileOptions{Sudo: true, Mode: 0o600})
		if err != nil || changed != want {
			t.Fatalf("upload %d: changed=%v err=%v, want changed=%v", i+1, changed, err, want)
		}
	}
	if content, mode, uid, _ := fileState(t, srv, "/var/lib/mgmtkit/registry.tar"); content != "layer data\n" || mode != 0o600 || uid != 0 {
		t.Fatalf("uploaded %q mode %v uid %d", content, mode, uid)
	}
	if _, err := remote.UploadFile(ctx, h, pkg, "Files/images", "/tmp/x", remote.FileOptions{}); err == nil {
		t.Error("a directory was uploaded")
	}
	if _, err := remote.UploadFile(ctx, h, pkg, "Files/missing.tar", "/tmp/x", remote.FileOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestReadFiles(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	binary := []byte("line 1\n\x00\xff\nno newline at the end")
	if err := srv.FS().WriteFile("/etc/secret.conf", binary, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.FS().WriteFile("/etc/empty.conf", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{"/etc/secret.conf", "/etc/missing.conf", "/etc/empty.conf", "/etc/hostname"}
	got, err := remote.ReadFiles(ctx, h, files, remote.FileOptions{Sudo: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got["/etc/secret.conf"], binary) {
		t.Errorf("secret.conf = %q", got["/etc/secret.conf"])
	}
	if v, ok := got["/etc/empty.conf"]; !ok || len(v) != 0 {
		t.Errorf("empty.conf = %q, %v", v, ok)
	}
	if _, ok := got["/etc/missing.conf"]; ok || len(got) != 3 {
		t.Errorf("got %d files, missing.conf present %v", len(got), ok)
	}
	if n := len(srv.Transcript()); n > 3 { // the sudo probes and one read
		t.Errorf("%d commands, want one read", n)
	}
	// Without sudo, a root-only file is an error, not an absent file.
	if _, err := remote.ReadFiles(ctx, h, files, remote.FileOptions{}); err == nil {
		t.Error("reading a root-only file without sudo succeeded")
	}
	if _, err := remote.ReadFiles(ctx, h, []string{"relative"}, remote.FileOptions{}); err == nil {
		t.Error("a relative path was accepted")
	}
}

// CheckPath accepts what the file operations accept and refuses the rest
// in remote's words.
func TestCheckPath(t *testing.T) {
	for _, p := range []string{"/etc/hosts", "/a", "/home/ubuntu/.kube/config"} {
		if err := remote.CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		}
	}
	for p, want := range map[string]string{
		"etc/hosts":   `remote: path "etc/hosts" must be absolute`,
		"":            `remote: path "" must be absolute`,
		"/etc/../etc": `remote: path "/etc/../etc" is not clean (want "/etc")`,
		"/etc/":       `remote: path "/etc/" is not clean (want "/etc")`,
		"/a\nb":       `remote: path "/a\nb" contains a NUL or newline`,
		"/a\x00b":     `remote: path "/a\x00b" contains a NUL or newline`,
		"/":           `remote: path "/" is not a file`,
	} {
		if err := remote.CheckPath(p); err == nil || err.Error() != want {
			t.Errorf("CheckPath(%q) = %v, want %s", p, err, want)
		}
	}
}

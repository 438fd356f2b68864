package remote_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
)

func TestRemoveFilesAsRoot(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	const ours, theirs = "/etc/certs.d/ours it's", "/etc/certs.d/theirs"
	for _, f := range []string{ours + "/hosts.toml", ours + "/ca.crt", theirs + "/ca.crt", theirs + "/extra.crt"} {
		if _, err := h.WriteFile(ctx, f, strings.NewReader("x\n"), remote.FileOptions{Sudo: true}); err != nil {
			t.Fatal(err)
		}
	}
	srv.ResetTranscript()
	files := []string{ours + "/hosts.toml", ours + "/ca.crt", theirs + "/ca.crt", "/etc/certs.d/missing/ca.crt"}
	removed, err := remote.RemoveFiles(ctx, h, files, []string{ours, theirs, "/etc/certs.d/missing"}, remote.FileOptions{Sudo: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, true, false}; !slices.Equal(removed, want) {
		t.Errorf("removed = %v, want %v", removed, want)
	}
	if n := len(srv.Transcript()); n != 1 {
		t.Errorf("%d commands ran, want 1", n)
	}
	for _, f := range files {
		if srv.FS().Exists(f) {
			t.Errorf("%s is still there", f)
		}
	}
	if srv.FS().Exists(ours) {
		t.Error("the emptied directory is still there")
	}
	if !srv.FS().Exists(theirs + "/extra.crt") {
		t.Error("a directory holding someone else's file was removed")
	}

	// Again: nothing left to remove, no error.
	removed, err = remote.RemoveFiles(ctx, h, files[:1], []string{ours}, remote.FileOptions{Sudo: true})
	if err != nil || removed[0] {
		t.Errorf("second removal: %v, %v", removed, err)
	}
}

func TestRemoveFilesRefusesBadPathsAndDirectories(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	for _, bad := range []string{"relative", "/etc/../etc/x", "/"} {
		if _, err := remote.RemoveFiles(ctx, h, []string{bad}, nil, remote.FileOptions{Sudo: true}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if len(srv.Transcript()) != 0 {
		t.Error("a refused path ran a command")
	}
	if _, err := h.WriteFile(ctx, "/etc/d/f", strings.NewReader("x"), remote.FileOptions{Sudo: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.RemoveFiles(ctx, h, []string{"/etc/d"}, nil, remote.FileOptions{Sudo: true}); err == nil {
		t.Error("a directory given as a file was removed without an error")
	}
	if !srv.FS().Exists("/etc/d/f") {
		t.Error("the directory's file is gone")
	}
}

package remote_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

func TestWriteFilesInThreeRoundTrips(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil { // learn sudo first
		t.Fatal(err)
	}
	if err := srv.FS().WriteFile("/etc/same.conf", []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.FS().WriteFile("/etc/mode.conf", []byte("mode\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []remote.FileWrite{
		{Path: "/etc/app/new.conf", Content: []byte("new\n"), Options: remote.FileOptions{Sudo: true}},
		{Path: "/etc/same.conf", Content: []byte("same\n"), Options: remote.FileOptions{Sudo: true}},
		{Path: "/etc/mode.conf", Content: []byte("mode\n"), Options: remote.FileOptions{Sudo: true, Mode: 0o600}},
		{Path: "/etc/secret.json", Content: []byte("{}\n"), Options: remote.FileOptions{Sudo: true, Mode: 0o600, Owner: "root", Group: "root"}},
	}
	srv.ResetTranscript()
	changed, err := remote.WriteFiles(ctx, h, files)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(changed) != "[true false true true]" {
		t.Errorf("changed %v", changed)
	}
	if n := len(srv.Transcript()); n != 2 {
		t.Errorf("%d commands, want 2 (one probe, one commit)", n)
	}
	for _, f := range files {
		got, err := srv.FS().ReadFile(f.Path)
		fi, _ := srv.FS().Stat(f.Path)
		uid, gid := sshtest.Owner(fi)
		want := f.Options.Mode
		if want == 0 {
			want = 0o644
		}
		if err != nil || !bytes.Equal(got, f.Content) || fi.Mode().Perm() != want || uid != 0 || gid != 0 {
			t.Errorf("%s: %q %v uid %d gid %d, %v", f.Path, got, fi.Mode(), uid, gid, err)
		}
	}
	assertNoStaged(t, srv, "/etc/app")
	// Converged: one command, nothing changed.
	srv.ResetTranscript()
	changed, err = remote.WriteFiles(ctx, h, files)
	if err != nil || fmt.Sprint(changed) != "[false false false false]" || len(srv.Transcript()) != 1 {
		t.Errorf("second run: %v, %v, %d commands", changed, err, len(srv.Transcript()))
	}

	// A commit lost with the connection is checked on a new one.
	files[0].Content = []byte("newer\n")
	srv.DropConnectionDuring(2)
	if changed, err := remote.WriteFiles(ctx, h, files); err != nil || !changed[0] {
		t.Fatalf("after a dropped commit: %v, %v", changed, err)
	}
	if got, _ := srv.FS().ReadFile("/etc/app/new.conf"); string(got) != "newer\n" {
		t.Errorf("new.conf = %q", got)
	}

	// Without sudo, into the user's own directory.
	own := []remote.FileWrite{{Path: "/home/ubuntu/a/b.txt", Content: []byte("b")}, {Path: "/home/ubuntu/c.txt", Content: []byte("c")}}
	if changed, err := remote.WriteFiles(ctx, h, own); err != nil || !changed[0] || !changed[1] {
		t.Fatalf("own files: %v, %v", changed, err)
	}
	if got, _ := srv.FS().ReadFile("/home/ubuntu/a/b.txt"); string(got) != "b" {
		t.Errorf("b.txt = %q", got)
	}

	for _, bad := range [][]remote.FileWrite{
		{{Path: "/etc/x", Options: remote.FileOptions{Sudo: true}}, {Path: "/home/ubuntu/y"}},
		{{Path: "/home/ubuntu/x"}, {Path: "/home/ubuntu/x"}},
		{{Path: "relative"}},
	} {
		if _, err := remote.WriteFiles(ctx, h, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// A commit that fails as the connection drops leaves the host unchanged:
// the write starts over once when the content can be read again, and
// fails otherwise, leaving no staged file behind.
func TestWriteStartsOverAfterALostCommit(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil { // learn sudo first
		t.Fatal(err)
	}
	// The commit's final rename fails, and the connection drops before
	// its exit status arrives.
	lose := func(program string) {
		srv.FailProgram(program, 1, 1, program+": simulated failure\n")
		srv.DropConnectionDuring(2) // the probe is the 1st command, the commit the 2nd
	}

	lose("mv")
	srv.ResetTranscript()
	changed, err := h.WriteFile(ctx, "/etc/app.conf", strings.NewReader("one\n"), remote.FileOptions{Sudo: true})
	if err != nil || !changed {
		t.Fatalf("seekable content: changed %v, %v", changed, err)
	}
	if got, _, uid, _ := fileState(t, srv, "/etc/app.conf"); got != "one\n" || uid != 0 {
		t.Errorf("app.conf = %q, uid %d", got, uid)
	}
	// probe, lost commit, probe to check it, then probe and commit again.
	if n := len(srv.Transcript()); n != 5 {
		t.Errorf("%d commands, want 5", n)
	}

	lose("mv")
	srv.ResetTranscript()
	if _, err := h.WriteFile(ctx, "/etc/app.conf", onlyReader{strings.NewReader("two\n")}, remote.FileOptions{Sudo: true}); !errors.Is(err, remote.ErrConnectionLost) {
		t.Fatalf("a stream cannot be written again: err = %v, want ErrConnectionLost", err)
	}
	if got, _, _, _ := fileState(t, srv, "/etc/app.conf"); got != "one\n" {
		t.Errorf("app.conf = %q after a failed write", got)
	}
	if n := len(srv.Transcript()); n != 3 {
		t.Errorf("%d commands, want 3 (probe, lost commit, probe)", n)
	}

	// Several files: the first one's mode is fixed before the second
	// one's chown fails. Both count as changed.
	lose("chown")
	srv.ResetTranscript()
	files := []remote.FileWrite{
		{Path: "/etc/app.conf", Content: []byte("one\n"), Options: remote.FileOptions{Sudo: true, Mode: 0o600}},
		{Path: "/etc/other.conf", Content: []byte("other\n"), Options: remote.FileOptions{Sudo: true}},
	}
	if changed, err := remote.WriteFiles(ctx, h, files); err != nil || fmt.Sprint(changed) != "[true true]" {
		t.Fatalf("WriteFiles: %v, %v", changed, err)
	}
	if n := len(srv.Transcript()); n != 5 {
		t.Errorf("%d commands, want 5", n)
	}
	if got, mode, _, _ := fileState(t, srv, "/etc/app.conf"); got != "one\n" || mode != 0o600 {
		t.Errorf("app.conf = %q mode %v", got, mode)
	}
	if got, _, uid, _ := fileState(t, srv, "/etc/other.conf"); got != "other\n" || uid != 0 {
		t.Errorf("other.conf = %q uid %d", got, uid)
	}
	assertNoStaged(t, srv, "/etc")

	// A lost commit that was to move one file into place and change only
	// the owner of another: the write starts over and both end right.
	lose("chown")
	srv.ResetTranscript()
	files = []remote.FileWrite{
		{Path: "/etc/app.conf", Content: []byte("three\n"), Options: remote.FileOptions{Sudo: true, Mode: 0o600}},
		{Path: "/etc/other.conf", Content: []byte("other\n"), Options: remote.FileOptions{Sudo: true, Owner: "ubuntu"}},
	}
	if changed, err := remote.WriteFiles(ctx, h, files); err != nil || fmt.Sprint(changed) != "[true true]" {
		t.Fatalf("WriteFiles, owner only: %v, %v", changed, err)
	}
	if _, _, uid, _ := fileState(t, srv, "/etc/other.conf"); uid == 0 {
		t.Error("other.conf still belongs to root")
	}
	if n := len(srv.Transcript()); n != 5 {
		t.Errorf("%d commands, want 5 (probe, lost commit, probe, probe, commit)", n)
	}
}

// Requests the engine cannot carry out are refused before any command:
// files that disagree on Sudo, a path given twice, an owner that needs
// sudo, an owner or group chown would misread.
func TestWritesRefusedBeforeAnyCommand(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	for _, tc := range []struct {
		files []remote.FileWrite
		want  string
	}{
		{[]remote.FileWrite{{Path: "/etc/a", Options: remote.FileOptions{Sudo: true}}, {Path: "/etc/b"}}, "differs from the other files in FileOptions.Sudo"},
		{[]remote.FileWrite{{Path: "/tmp/a"}, {Path: "/tmp/a"}}, "is given twice"},
		{[]remote.FileWrite{{Path: "/tmp/a", Options: remote.FileOptions{Owner: "root"}}}, "needs FileOptions.Sudo"},
		{[]remote.FileWrite{{Path: "/etc/a", Options: remote.FileOptions{Sudo: true, Owner: "root:staff"}}}, `Owner "root:staff"`},
		{[]remote.FileWrite{{Path: "/etc/a", Options: remote.FileOptions{Sudo: true, Group: "staff\n"}}}, "is not a user or group name"},
	} {
		srv.ResetTranscript()
		if _, err := remote.WriteFiles(ctx, h, tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.files, err, tc.want)
		}
		if n := len(srv.Transcript()); n != 0 {
			t.Errorf("%+v: %d commands ran", tc.files, n)
		}
	}
}

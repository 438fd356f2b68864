package remote_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// fsState describes every file of a fake host's filesystem: type, mode,
// owner and a hash of the content or link target, by path.
func fsState(t *testing.T, f *sshtest.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := f.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			fi, err := f.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			uid, gid := sshtest.Owner(fi)
			desc := fmt.Sprintf("%v %d:%d", fi.Mode(), uid, gid)
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := f.Readlink(p)
				desc += " -> " + target
			case fi.Mode().IsRegular():
				data, err := f.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				desc += fmt.Sprintf(" %x", sha256.Sum256(data))
			}
			out[p] = desc
			if fi.IsDir() {
				walk(p)
			}
		}
	}
	walk("/")
	return out
}

// assertSameFS fails the test for every difference between two states.
func assertSameFS(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, d := range after {
		if before[p] != d {
			t.Errorf("%s changed: %q, was %q", p, d, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s was removed", p)
		}
	}
}

// withheld returns err's *remote.WithheldError or fails the test.
func withheld(t *testing.T, err error) *remote.WithheldError {
	t.Helper()
	var we *remote.WithheldError
	if !errors.As(err, &we) || !errors.Is(err, remote.ErrWithheld) {
		t.Fatalf("err = %v, want a *remote.WithheldError", err)
	}
	return we
}

func TestDryRunRunsOnlyReadOnlyCommands(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	if remote.IsDryRun(ctx) || remote.AnyWithheld(ctx) {
		t.Fatal("a plain context is a dry run's")
	}
	dry := remote.WithDryRun(ctx)
	if !remote.IsDryRun(dry) || remote.AnyWithheld(dry) || remote.WithDryRun(dry) != dry {
		t.Fatal("WithDryRun: not a fresh dry run, or not kept when nested")
	}
	before := fsState(t, srv.FS())

	out, err := h.Run(dry, remote.Cmd{Args: []string{"cat", "/etc/passwd"}, ReadOnly: true})
	if err != nil || !strings.Contains(out.String(), "ubuntu") || remote.AnyWithheld(dry) {
		t.Fatalf("read-only command: %q, %v (withheld %v)", out.String(), err, remote.AnyWithheld(dry))
	}
	// A command that names the login's password (a mistake, but one a
	// dry run must not spread) is withheld with the password scrubbed.
	_, err = h.Run(dry, remote.Cmd{Args: []string{"touch", "/etc/made " + ubuntuPassword}, Sudo: true})
	we := withheld(t, err)
	if we.Host != h.Name() || !we.Sudo || len(we.Args) != 2 || we.Args[0] != "touch" || we.Args[1] != "/etc/made "+ubuntuPassword {
		t.Errorf("withheld %+v", we)
	}
	assertNoSecrets(t, "the withheld error", err.Error()+we.What(), ubuntuPassword)
	// A script shows as its name and arguments.
	_, err = h.Run(dry, remote.Cmd{Args: []string{"sh", "-c", "echo long script text", "my-script", "arg 1"}})
	if what := withheld(t, err).What(); what != `run script "my-script 'arg 1'"` {
		t.Errorf("script withheld as %s", what)
	}
	if !strings.Contains(err.Error(), "dry run: would run") || !remote.AnyWithheld(dry) {
		t.Errorf("error %q, AnyWithheld %v", err, remote.AnyWithheld(dry))
	}
	for _, c := range srv.Calls() {
		if c.Args[0] != "cat" && c.Args[0] != "timeout" {
			t.Errorf("the dry run ran %q", c.Args)
		}
	}
	assertSameFS(t, before, fsState(t, srv.FS()))
	// The plain context still runs it.
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"touch", "/etc/made"}, Sudo: true}); err != nil || !srv.FS().Exists("/etc/made") {
		t.Fatalf("real run: %v", err)
	}
}

func TestDryRunWritesNothingAndReportsWhatDiffers(t *testing.T) {
	srv, _ := fakeHost(t)
	for _, tc := range []struct {
		name string
		opts remote.FileOptions
		dir  string
	}{
		{"sudo", remote.FileOptions{Sudo: true, Mode: 0o640}, "/etc/app"},
		{"login user over sftp", remote.FileOptions{}, "/home/ubuntu/app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
			ctx := testContext(t)
			dry := remote.WithDryRun(ctx)
			file := tc.dir + "/app.conf"
			content := "key = value\n"
			snapshot := fsState(t, srv.FS())

			// Missing: withheld, nothing staged.
			_, err := h.WriteFile(dry, file, strings.NewReader(content), tc.opts)
			if we := withheld(t, err); !slices.Equal(we.Write, []string{file}) || we.Args != nil {
				t.Errorf("withheld %+v", we)
			}
			assertSameFS(t, snapshot, fsState(t, srv.FS()))

			if _, err := h.WriteFile(ctx, file, strings.NewReader(content), tc.opts); err != nil {
				t.Fatal(err)
			}
			snapshot = fsState(t, srv.FS())
			calls := len(srv.Calls())
			// The same bytes, seekable or streamed: unchanged.
			for _, r := range []io.Reader{strings.NewReader(content), io.MultiReader(strings.NewReader(content))} {
				changed, err := h.WriteFile(dry, file, r, tc.opts)
				if changed || err != nil {
					t.Errorf("same content %T: changed %v, %v", r, changed, err)
				}
			}
			// Other bytes, streamed or not, or another mode: withheld.
			for _, w := range []struct {
				r    io.Reader
				opts remote.FileOptions
			}{
				{strings.NewReader("key = other\n"), tc.opts},
				{io.MultiReader(strings.NewReader("key = value\n")), remote.FileOptions{Sudo: tc.opts.Sudo, Mode: 0o600}},
				{io.MultiReader(strings.NewReader("key = valuE\n")), tc.opts},
			} {
				if _, err := h.WriteFile(dry, file, w.r, w.opts); !slices.Equal(withheld(t, err).Write, []string{file}) {
					t.Errorf("withheld %v", err)
				}
			}
			changed, err := remote.WriteFiles(dry, h, []remote.FileWrite{
				{Path: file, Content: []byte(content), Options: tc.opts},
				{Path: tc.dir + "/new.conf", Content: []byte("x"), Options: tc.opts},
			})
			if we := withheld(t, err); !slices.Equal(we.Write, []string{tc.dir + "/new.conf"}) || slices.Contains(changed, true) {
				t.Errorf("WriteFiles: %v, withheld %+v", changed, we)
			}
			if changed, err := remote.EditBlock(dry, h, file, "b", nil, tc.opts); changed || err != nil {
				t.Errorf("EditBlock without the block: %v, %v", changed, err)
			}
			if _, err := remote.EditBlock(dry, h, file, "b", []string{"line"}, tc.opts); !slices.Equal(withheld(t, err).Write, []string{file}) {
				t.Errorf("EditBlock: %v", err)
			}
			assertSameFS(t, snapshot, fsState(t, srv.FS()))
			for _, c := range srv.Calls()[calls:] {
				if name := path.Base(c.Args[0]); name != "sh" && name != "stat" && name != "openssl" && name != "sha256sum" && name != "cat" && name != "sudo" && name != "timeout" {
					t.Errorf("the dry run ran %q", c.Args)
				}
			}
		})
	}
}

func TestDryRunRemovesNothing(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	dry := remote.WithDryRun(ctx)
	const ours, theirs = "/etc/certs.d/ours", "/etc/certs.d/theirs"
	for _, f := range []string{ours + "/a.toml", ours + "/.hidden", ours + "/sub/b", theirs + "/ca.crt", theirs + "/extra.crt"} {
		if _, err := h.WriteFile(ctx, f, strings.NewReader("x\n"), remote.FileOptions{Sudo: true}); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := fsState(t, srv.FS())
	files := []string{ours + "/a.toml", ours + "/.hidden", ours + "/sub/b", theirs + "/ca.crt", "/etc/certs.d/missing"}
	removed, err := remote.RemoveFiles(dry, h, files, []string{ours + "/sub", ours, theirs, "/etc/nowhere"}, remote.FileOptions{Sudo: true})
	we := withheld(t, err)
	want := []string{ours + "/a.toml", ours + "/.hidden", ours + "/sub/b", theirs + "/ca.crt", ours + "/sub", ours}
	if !slices.Equal(we.Remove, want) || slices.Contains(removed, true) {
		t.Errorf("removed %v, withheld %q, want %q", removed, we.Remove, want)
	}
	assertSameFS(t, snapshot, fsState(t, srv.FS()))
	if removed, err := remote.RemoveFiles(dry, h, []string{"/etc/certs.d/missing"}, []string{theirs}, remote.FileOptions{Sudo: true}); err != nil || removed[0] {
		t.Errorf("nothing to remove: %v, %v", removed, err)
	}
	// The real removal removes exactly what the dry run said.
	if _, err := remote.RemoveFiles(ctx, h, files, []string{ours + "/sub", ours, theirs, "/etc/nowhere"}, remote.FileOptions{Sudo: true}); err != nil {
		t.Fatal(err)
	}
	after := fsState(t, srv.FS())
	var gone []string
	for p := range snapshot {
		if _, ok := after[p]; !ok {
			gone = append(gone, p)
		}
	}
	slices.Sort(gone)
	slices.Sort(want)
	if !slices.Equal(gone, want) {
		t.Errorf("the removal removed %q, the dry run said %q", gone, want)
	}
}

// plainHost hides an *SSHHost's type, as a host of a caller's own would.
type plainHost struct{ remote.Host }

func TestGuardDryRun(t *testing.T) {
	srv, _ := fakeHost(t)
	ssh := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	if remote.GuardDryRun(ssh) != remote.Host(ssh) {
		t.Error("an *SSHHost is guarded again")
	}
	h := remote.GuardDryRun(plainHost{ssh})
	if remote.GuardDryRun(h) != h {
		t.Error("a guarded host is guarded again")
	}
	ctx := testContext(t)
	dry := remote.WithDryRun(ctx)
	file := "/etc/guarded.conf"
	if _, err := h.WriteFile(ctx, file, strings.NewReader("a\n"), remote.FileOptions{Sudo: true, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	snapshot := fsState(t, srv.FS())
	if _, err := h.Run(dry, remote.Cmd{Args: []string{"rm", file}, Sudo: true}); !slices.Equal(withheld(t, err).Args, []string{"rm", file}) {
		t.Errorf("Run: %v", err)
	}
	if out, err := h.Run(dry, remote.Cmd{Args: []string{"cat", "/etc/hostname"}, ReadOnly: true}); err != nil || out.String() == "" {
		t.Errorf("read-only Run: %q, %v", out.String(), err)
	}
	for _, w := range []struct {
		content string
		opts    remote.FileOptions
		same    bool
	}{
		{"a\n", remote.FileOptions{Sudo: true}, true},
		{"a\n", remote.FileOptions{Sudo: true, Mode: 0o600, Owner: "root"}, true},
		{"a\n", remote.FileOptions{Sudo: true, Mode: 0o644}, false},
		{"a\n", remote.FileOptions{Sudo: true, Owner: "ubuntu"}, false},
		{"b\n", remote.FileOptions{Sudo: true}, false},
	} {
		changed, err := h.WriteFile(dry, file, strings.NewReader(w.content), w.opts)
		switch {
		case w.same && (changed || err != nil):
			t.Errorf("%q %+v: %v, %v; want unchanged", w.content, w.opts, changed, err)
		case !w.same && !slices.Equal(withheld(t, err).Write, []string{file}):
			t.Errorf("%q %+v: %v", w.content, w.opts, err)
		}
	}
	if _, err := remote.WriteFiles(dry, h, []remote.FileWrite{{Path: "/etc/new", Content: []byte("n"), Options: remote.FileOptions{Sudo: true}}}); !slices.Equal(withheld(t, err).Write, []string{"/etc/new"}) {
		t.Errorf("WriteFiles: %v", err)
	}
	assertSameFS(t, snapshot, fsState(t, srv.FS()))
	// Outside a dry run it is the host.
	if changed, err := remote.WriteFiles(ctx, h, []remote.FileWrite{{Path: "/etc/new", Content: []byte("n"), Options: remote.FileOptions{Sudo: true}}}); err != nil || !changed[0] {
		t.Errorf("real WriteFiles: %v, %v", changed, err)
	}
	if data, err := srv.FS().ReadFile("/etc/new"); err != nil || !bytes.Equal(data, []byte("n")) {
		t.Errorf("/etc/new: %q, %v", data, err)
	}
}

// Withhold counts a host's own withheld change in the dry run, and
// scrubs the secrets it is given from the command; the guard passes a
// command's Cmd.Secrets to it, as SSHHost scrubs them.
func TestWithhold(t *testing.T) {
	ctx := testContext(t)
	const token = "abcdef.0123456789abcdef"
	e := &remote.WithheldError{Host: "node-1", Args: []string{"kubeadm", "join", "--token", token}, Sudo: true}
	if err := remote.Withhold(ctx, e, remote.NewSecret(token)); err != error(e) || remote.AnyWithheld(ctx) {
		t.Fatalf("outside a dry run: %v, AnyWithheld %v", err, remote.AnyWithheld(ctx))
	}
	if want := `run "sudo kubeadm join --token [REDACTED]"`; e.What() != want {
		t.Errorf("What() = %s, want %s", e.What(), want)
	}
	if e.Args[3] != token {
		t.Errorf("Args = %q: the argv is the command's as it is", e.Args)
	}
	dry := remote.WithDryRun(ctx)
	err := remote.Withhold(dry, &remote.WithheldError{Host: "node-1", Write: []string{"/etc/hosts"}})
	if we := withheld(t, err); we.What() != "write /etc/hosts" || !remote.AnyWithheld(dry) {
		t.Errorf("withheld %v, AnyWithheld %v", err, remote.AnyWithheld(dry))
	}

	srv, _ := fakeHost(t)
	h := remote.GuardDryRun(plainHost{dialAs(t, srv, "ubuntu", ubuntuPassword, nil)})
	_, err = h.Run(dry, remote.Cmd{Args: []string{"kubeadm", "join", "--token", token}, Secrets: []remote.Secret{remote.NewSecret(token)}})
	assertNoSecrets(t, "the guard's withheld error", err.Error(), token)
}

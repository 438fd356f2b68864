package remotetest_test

import (
	"context"
	"errors"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/remotetest"
)

// withheld returns the *remote.WithheldError err is, failing the test
// otherwise.
func withheld(t *testing.T, err error) *remote.WithheldError {
	t.Helper()
	var we *remote.WithheldError
	if !errors.As(err, &we) || !errors.Is(err, remote.ErrWithheld) {
		t.Fatalf("err = %v, want a *remote.WithheldError", err)
	}
	return we
}

// In a dry run, a command not marked ReadOnly is neither answered nor
// run, and its standard input is not read; it is withheld as SSHHost
// withholds it, and recorded as withheld, not as run.
func TestDryRunWithholdsCommands(t *testing.T) {
	answered := 0
	h := remotetest.NewHost("worker-1").
		On(remotetest.Equal("systemctl", "is-active", "kubelet"), remotetest.Reply{Stdout: "inactive\n", Exit: 3}).
		OnFunc(remotetest.Program("kubeadm"), func(_ context.Context, _ remote.Cmd, _ []byte) remotetest.Reply {
			answered++
			return remotetest.Reply{}
		})
	ctx := t.Context()
	dry := remote.WithDryRun(ctx)

	out, err := h.Run(dry, remote.Cmd{Args: []string{"systemctl", "is-active", "kubelet"}, OKExit: []int{3}, ReadOnly: true})
	if err != nil || out.String() != "inactive" || remote.AnyWithheld(dry) {
		t.Fatalf("a read-only command in a dry run: %q, %v (withheld %v)", out.String(), err, remote.AnyWithheld(dry))
	}

	const token = "abcdef.0123456789abcdef"
	stdin := strings.NewReader("a secret config")
	cmd := remote.Cmd{Args: []string{"kubeadm", "join", "--token", token}, Sudo: true, Stdin: stdin, Secrets: []remote.Secret{remote.NewSecret(token)}}
	out, err = h.Run(dry, cmd)
	we := withheld(t, err)
	if we.Host != "worker-1" || !we.Sudo || !slices.Equal(we.Args, cmd.Args) || we.Write != nil || we.Remove != nil {
		t.Errorf("withheld %+v", we)
	}
	if out.ExitCode != -1 || answered != 0 || stdin.Len() != len("a secret config") || !remote.AnyWithheld(dry) {
		t.Errorf("exit %d, answered %d times, stdin left %d, AnyWithheld %v", out.ExitCode, answered, stdin.Len(), remote.AnyWithheld(dry))
	}
	if want := `worker-1: dry run: would run "sudo kubeadm join --token [REDACTED]"`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	// A script shows as its name and arguments, as SSHHost shows it.
	_, err = h.Run(dry, remote.Cmd{Args: []string{"sh", "-c", "echo long script", "my-script", "arg 1"}})
	if what := withheld(t, err).What(); what != `run script "my-script 'arg 1'"` {
		t.Errorf("script withheld as %s", what)
	}

	if got, want := h.Commands(), []string{"systemctl is-active kubelet"}; !slices.Equal(got, want) {
		t.Errorf("Commands() = %q, want %q: a withheld command did not run", got, want)
	}
	if got, want := h.Withheld(), []string{"sudo kubeadm join --token " + token, "sh -c ... my-script 'arg 1'"}; !slices.Equal(got, want) {
		t.Errorf("Withheld() = %q, want %q", got, want)
	}
	calls := h.Calls()
	if c := calls[1]; !c.Withheld || c.Unmatched || c.Exit != -1 || c.Stdin != "" || !errors.Is(c.Err, remote.ErrWithheld) {
		t.Errorf("the withheld call is recorded as %+v", c)
	}
	if len(h.Unmatched()) != 0 {
		t.Errorf("unmatched: %q", h.Unmatched())
	}

	// Outside the dry run the rule answers it.
	if _, err := h.Run(ctx, cmd); err != nil || answered != 1 {
		t.Errorf("real run: %v, answered %d times", err, answered)
	}
}

// In a dry run WriteFile and WriteFiles write nothing: a file that holds
// its bytes, mode and owner is unchanged, the others are withheld.
func TestDryRunWithholdsWrites(t *testing.T) {
	h := remotetest.NewHost("worker-1")
	h.SetFile("/etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644)
	h.SetFile("/etc/kubernetes/admin.conf", []byte("apiVersion: v1\n"), 0o600)
	dry := remote.WithDryRun(t.Context())
	sudo := remote.FileOptions{Sudo: true}

	for _, w := range []struct {
		path, content string
		opts          remote.FileOptions
		same          bool
	}{
		{"/etc/hosts", "127.0.0.1 localhost\n", sudo, true},
		{"/etc/hosts", "127.0.0.1 localhost\n", remote.FileOptions{Sudo: true, Mode: 0o644, Owner: "root", Group: "root"}, true},
		{"/etc/hosts", "127.0.0.1 localhost\n", remote.FileOptions{Sudo: true, Mode: 0o600}, false},
		{"/etc/hosts", "127.0.0.1 localhost\n", remote.FileOptions{Sudo: true, Owner: "ubuntu"}, false},
		{"/etc/hosts", "127.0.0.1 localhost\n", remote.FileOptions{Sudo: true, Group: "adm"}, false},
		{"/etc/hosts", "10.0.0.5 master-0\n", sudo, false},
		{"/etc/new.conf", "", sudo, false},
		// Where the login user may not create the file shows when it is
		// staged, which a dry run does not do: SSHHost withholds it too.
		{"/etc/new.conf", "x", remote.FileOptions{}, false},
		// The login user may read /etc/hosts: the probe compares it.
		{"/etc/hosts", "127.0.0.1 localhost\n", remote.FileOptions{}, true},
	} {
		changed, err := h.WriteFile(dry, w.path, strings.NewReader(w.content), w.opts)
		switch {
		case w.same && (changed || err != nil):
			t.Errorf("%s %q %+v: %v, %v; want unchanged", w.path, w.content, w.opts, changed, err)
		case !w.same:
			if we := withheld(t, err); changed || !slices.Equal(we.Write, []string{w.path}) || we.Host != "worker-1" || we.Args != nil {
				t.Errorf("%s %q %+v: %v, %+v", w.path, w.content, w.opts, changed, we)
			}
		}
	}
	// The probe must hash a file of the content's size, which the login
	// user cannot read without Sudo.
	if _, err := h.WriteFile(dry, "/etc/kubernetes/admin.conf", strings.NewReader("apiVersion: v2\n"), remote.FileOptions{}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("probing root's 0600 file without Sudo: %v, want fs.ErrPermission", err)
	}

	changed, err := h.WriteFiles(dry, []remote.FileWrite{
		{Path: "/etc/hosts", Content: []byte("127.0.0.1 localhost\n"), Options: sudo},
		{Path: "/etc/a.conf", Content: []byte("a"), Options: sudo},
		{Path: "/etc/kubernetes/admin.conf", Content: []byte("apiVersion: v2\n"), Options: sudo},
	})
	if we := withheld(t, err); !slices.Equal(changed, []bool{false, false, false}) || !slices.Equal(we.Write, []string{"/etc/a.conf", "/etc/kubernetes/admin.conf"}) {
		t.Errorf("WriteFiles: %v, %v", changed, err)
	}
	if got, want := h.Paths(), []string{"/etc/hosts", "/etc/kubernetes/admin.conf"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q: the dry run wrote", got, want)
	}
	if f, _ := h.Stat("/etc/hosts"); string(f.Data) != "127.0.0.1 localhost\n" || f.Mode != 0o644 || f.Owner != "root" || f.Group != "root" {
		t.Errorf("/etc/hosts is now %+v", f)
	}
	calls := h.Calls()
	last := calls[len(calls)-3:]
	if last[0].Withheld || last[0].Err != nil || !last[1].Withheld || !last[2].Withheld || !errors.Is(last[2].Err, remote.ErrWithheld) || last[1].Changed {
		t.Errorf("WriteFiles recorded as %+v", last)
	}
	if got := h.Withheld(); len(got) != 8 || got[7] != "WriteFile /etc/kubernetes/admin.conf (sudo)" {
		t.Errorf("Withheld() = %q", got)
	}
}

// RemoveFiles' read-only probe and GuardDryRun's stat are answered from
// the files, so a dry run of steps built on them needs no rules. If
// remote renames the probe's $0 or changes the stat, this fails.
func TestDryRunProbes(t *testing.T) {
	h := remotetest.NewHost("worker-1")
	h.SetFile("/etc/kubernetes/admin.conf", []byte("apiVersion: v1\n"), 0o600)
	h.SetFile("/etc/kubernetes/pki/ca.crt", []byte("CA\n"), 0o644)
	h.SetFile("/etc/kubernetes/manifests/etcd.yaml", []byte("kind: Pod\n"), 0o600)
	h.SetFile("/etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644)
	before := h.Paths()
	dry := remote.WithDryRun(t.Context())

	removed, err := remote.RemoveFiles(dry, h, []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/pki/ca.crt"},
		[]string{"/etc/kubernetes/pki", "/etc/kubernetes/manifests", "/etc/kubernetes"}, remote.FileOptions{Sudo: true})
	we := withheld(t, err)
	if want := []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki"}; !slices.Equal(we.Remove, want) || slices.Contains(removed, true) {
		t.Errorf("RemoveFiles: %v, remove %q; want %q", removed, we.Remove, want)
	}
	// With manifests emptied too, /etc/kubernetes goes.
	_, err = remote.RemoveFiles(dry, h, []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/manifests/etcd.yaml"},
		[]string{"/etc/kubernetes/pki", "/etc/kubernetes/manifests", "/etc/kubernetes"}, remote.FileOptions{Sudo: true})
	if got, want := withheld(t, err).Remove, []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/pki", "/etc/kubernetes/manifests", "/etc/kubernetes"}; !slices.Equal(got, want) {
		t.Errorf("remove %q, want %q", got, want)
	}
	if removed, err := remote.RemoveFiles(dry, h, []string{"/etc/nosuch"}, []string{"/etc/kubernetes"}, remote.FileOptions{}); err != nil || removed[0] {
		t.Errorf("nothing to remove: %v, %v", removed, err)
	}

	g := remote.GuardDryRun(h)
	for _, w := range []struct {
		opts remote.FileOptions
		same bool
	}{
		{remote.FileOptions{Sudo: true, Mode: 0o644, Owner: "root", Group: "root"}, true},
		{remote.FileOptions{Sudo: true, Mode: 0o600}, false},
		{remote.FileOptions{Sudo: true, Owner: "ubuntu"}, false},
	} {
		changed, err := g.WriteFile(dry, "/etc/hosts", strings.NewReader("127.0.0.1 localhost\n"), w.opts)
		if w.same != (err == nil) || changed {
			t.Errorf("guarded WriteFile %+v: %v, %v; want same %v", w.opts, changed, err, w.same)
		}
	}
	out, err := h.Run(dry, remote.Cmd{Args: []string{"stat", "-L", "-c", "%a %U %G", "--", "/etc/nosuch"}, ReadOnly: true})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 1 || ce.Stderr != "stat: cannot statx '/etc/nosuch': No such file or directory\n" || out.ExitCode != 1 {
		t.Errorf("stat of a missing file: %v, want coreutils' refusal", err)
	}
	// A directory's mode is not modelled: it takes a rule.
	if _, err := h.Run(dry, remote.Cmd{Args: []string{"stat", "-L", "-c", "%a %U %G", "--", "/etc/kubernetes"}, ReadOnly: true}); !errors.Is(err, remotetest.ErrUnmatched) {
		t.Errorf("stat of a directory: %v, want ErrUnmatched", err)
	}

	if got := h.Paths(); !reflect.DeepEqual(got, before) {
		t.Errorf("files %q, want %q: the dry run changed them", got, before)
	}
	for _, c := range h.Commands() {
		if !strings.Contains(c, "mgmtkit-remove-probe") && !strings.HasPrefix(c, "stat ") && !strings.HasPrefix(c, "sudo stat ") {
			t.Errorf("the dry run ran %q", c)
		}
	}
	if got := h.Withheld(); len(got) != 0 {
		t.Errorf("Withheld() = %q; RemoveFiles withholds in its error, and the guard before the host", got)
	}
}

package remotetest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/remotetest"
)

func TestFirstMatchingRuleAnswers(t *testing.T) {
	h := remotetest.NewHost("worker-1").
		On(remotetest.Equal("systemctl", "is-active", "kubelet"), remotetest.Reply{Stdout: "active\n"}).
		On(remotetest.HasPrefix("systemctl", "is-active"), remotetest.Reply{Stdout: "inactive\n", Exit: 3}).
		On(remotetest.Program("systemctl"), remotetest.Reply{Stdout: "never\n"})
	ctx := t.Context()
	for _, tc := range []struct {
		args []string
		out  string
		exit int
	}{
		{[]string{"systemctl", "is-active", "kubelet"}, "active", 0},
		{[]string{"systemctl", "is-active", "containerd"}, "inactive", 3},
		{[]string{"/usr/bin/systemctl", "is-enabled", "x"}, "never", 0},
	} {
		out, err := h.Run(ctx, remote.Cmd{Args: tc.args, OKExit: []int{3}})
		if err != nil || out.String() != tc.out || out.ExitCode != tc.exit {
			t.Errorf("%q: %q exit %d, %v; want %q exit %d", tc.args, out.String(), out.ExitCode, err, tc.out, tc.exit)
		}
	}
}

func TestUnmatchedCommandFailsLoudly(t *testing.T) {
	h := remotetest.NewHost("worker-1").On(remotetest.Program("systemctl"), remotetest.Reply{})
	out, err := h.Run(t.Context(), remote.Cmd{Args: []string{"apt-get", "install", "-y", "a b"}, Sudo: true})
	if !errors.Is(err, remotetest.ErrUnmatched) || out.ExitCode != -1 {
		t.Fatalf("Run of an unmatched command = %+v, %v; want remotetest.ErrUnmatched and no exit status", out, err)
	}
	if want := `worker-1: command "sudo apt-get install -y 'a b'": remotetest: no rule answers the command`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	// OKExit cannot turn it into an answer, and it stays on record.
	if _, err := h.Run(t.Context(), remote.Cmd{Args: []string{"grep", "-q", "x", "/etc/hosts"}, OKExit: []int{1, 2, 127}}); !errors.Is(err, remotetest.ErrUnmatched) {
		t.Errorf("unmatched grep with OKExit: %v, want ErrUnmatched", err)
	}
	if got, want := h.Unmatched(), []string{"sudo apt-get install -y 'a b'", "grep -q x /etc/hosts"}; !slices.Equal(got, want) {
		t.Errorf("Unmatched() = %q, want %q", got, want)
	}
	if c := h.Calls()[0]; !c.Unmatched || c.Exit != -1 || !errors.Is(c.Err, remotetest.ErrUnmatched) {
		t.Errorf("the call is recorded as %+v", c)
	}
}

func TestExitStatusAndOKExit(t *testing.T) {
	h := remotetest.NewHost("worker-1").
		On(remotetest.Equal("systemctl", "is-active", "containerd"), remotetest.Reply{Stdout: "inactive\n", Exit: 3}).
		On(remotetest.Equal("apt-get", "update"), remotetest.Reply{Stdout: "Hit:1\n", Stderr: "W: a warning\n"}).
		On(remotetest.Program("systemctl"), remotetest.Reply{Stderr: "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n", Exit: 1})
	ctx := t.Context()

	out, err := h.Run(ctx, remote.Cmd{Args: []string{"systemctl", "is-active", "containerd"}, OKExit: []int{3}})
	if err != nil || out.ExitCode != 3 || out.String() != "inactive" {
		t.Errorf("a status OKExit lists: %+v, %v; want an answer", out, err)
	}
	out, err = h.Run(ctx, remote.Command("systemctl", "is-active", "containerd"))
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 3 || ce.Host != "worker-1" || ce.Command != "systemctl is-active containerd" || out.ExitCode != 3 {
		t.Fatalf("a status OKExit does not list: %+v, %v; want a *remote.CommandError with status 3", out, err)
	}
	if want := `worker-1: command "systemctl is-active containerd" exited with status 3`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	// Stderr alone is no failure.
	out, err = h.Run(ctx, remote.Cmd{Args: []string{"apt-get", "update"}, Sudo: true})
	if err != nil || string(out.Stderr) != "W: a warning\n" {
		t.Errorf("stderr with status 0: %+v, %v; want success with stderr kept", out, err)
	}
	_, err = h.Run(ctx, remote.Cmd{Args: []string{"systemctl", "restart", "kubelet"}, Sudo: true})
	if !errors.As(err, &ce) || ce.ExitCode != 1 || !strings.HasSuffix(err.Error(), "exited with status 1: System has not been booted with systemd as init system (PID 1). Can't operate. | Failed to connect to bus: Host is down") {
		t.Errorf("a failure's error carries its stderr: %v", err)
	}
}

func TestReplyErr(t *testing.T) {
	sudoErr := &remote.SudoError{Host: "worker-1", User: "ubuntu", Reason: "a password is required"}
	h := remotetest.NewHost("worker-1").
		On(remotetest.Program("kubeadm"), remotetest.Reply{Err: remote.ErrConnectionLost}).
		On(remotetest.Program("apt-get"), remotetest.Reply{Err: sudoErr}).
		On(remotetest.Program("bad"), remotetest.Reply{Exit: 256})
	ctx := t.Context()

	out, err := h.Run(ctx, remote.Cmd{Args: []string{"kubeadm", "join"}, Sudo: true})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != -1 || !errors.Is(err, remote.ErrConnectionLost) || ce.Command != "sudo kubeadm join" || out.ExitCode != -1 {
		t.Errorf("connection lost: %+v, %v; want a *remote.CommandError wrapping it", out, err)
	}
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"apt-get", "update"}, Sudo: true}); err != sudoErr {
		t.Errorf("a *remote.SudoError reply: %v, want it as it is", err)
	}
	if _, err := h.Run(ctx, remote.Command("bad")); err == nil || !strings.Contains(err.Error(), "exit status 256") {
		t.Errorf("exit status 256: %v, want the test's mistake named", err)
	}
}

func TestSecretsAreScrubbed(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	var got []byte
	h := remotetest.NewHost("master-1").OnFunc(remotetest.Program("kubeadm"), func(_ context.Context, _ remote.Cmd, stdin []byte) remotetest.Reply {
		got = stdin
		return remotetest.Reply{Stderr: "error: token " + token + " is invalid\n", Exit: 1}
	})
	_, err := h.Run(t.Context(), remote.Cmd{
		Args: []string{"kubeadm", "join", "--config", "/dev/stdin"}, Sudo: true,
		Stdin: strings.NewReader("token: " + token + "\n"), Secrets: []remote.Secret{remote.NewSecret(token)},
	})
	if string(got) != "token: "+token+"\n" {
		t.Errorf("the reply got stdin %q, want it whole", got)
	}
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), remote.Redacted) {
		t.Errorf("error %v: want the token redacted", err)
	}
	if c := h.Calls()[0]; c.Stdin != "token: "+remote.Redacted+"\n" {
		t.Errorf("transcript stdin = %q, want the token redacted", c.Stdin)
	}
}

func TestStreamsAndEnv(t *testing.T) {
	h := remotetest.NewHost("worker-1").OnFunc(remotetest.Program("printenv"), func(_ context.Context, c remote.Cmd, _ []byte) remotetest.Reply {
		return remotetest.Reply{Stdout: c.Env["HTTP_PROXY"] + "\n", Stderr: "note\n"}
	})
	var stdout, stderr bytes.Buffer
	out, err := h.Run(t.Context(), remote.Cmd{Args: []string{"printenv", "HTTP_PROXY"}, Env: map[string]string{"HTTP_PROXY": "http://proxy:3128"}, Stdout: &stdout, Stderr: &stderr})
	if err != nil || stdout.String() != "http://proxy:3128\n" || stderr.String() != "note\n" || len(out.Stdout) != 0 || string(out.Stderr) != "note\n" {
		t.Errorf("streams: stdout %q stderr %q output %+v, %v", stdout.String(), stderr.String(), out, err)
	}
	if got := h.Commands(); !slices.Equal(got, []string{"env HTTP_PROXY=http://proxy:3128 printenv HTTP_PROXY"}) {
		t.Errorf("Commands() = %q", got)
	}
}

func TestRefusedBeforeSending(t *testing.T) {
	h := remotetest.NewHost("worker-1").On(remotetest.All(), remotetest.Reply{})
	ctx := t.Context()
	for _, c := range []remote.Cmd{
		{},
		{Args: []string{"echo", "a\x00b"}},
		{Args: []string{"true"}, Env: map[string]string{"A;B": "x"}},
	} {
		if _, err := h.Run(ctx, c); err == nil || !strings.HasPrefix(err.Error(), "remote: ") {
			t.Errorf("Run(%q): %v, want remote's refusal", c.Args, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.Run(cancelled, remote.Command("true")); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v", err)
	}
	if n := len(h.Calls()); n != 0 {
		t.Errorf("%d calls recorded, want none: nothing was sent", n)
	}
	h.Close()
	if _, err := h.Run(ctx, remote.Command("true")); !errors.Is(err, remote.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := h.WriteFile(ctx, "/tmp/x", strings.NewReader("x"), remote.FileOptions{}); !errors.Is(err, remote.ErrClosed) {
		t.Errorf("WriteFile after Close: %v", err)
	}
	if _, err := h.ReadFile(ctx, "/tmp/x", remote.FileOptions{}); !errors.Is(err, remote.ErrClosed) {
		t.Errorf("ReadFile after Close: %v", err)
	}
}

func TestMatchers(t *testing.T) {
	script := remote.Cmd{Args: []string{"sh", "-c", "hostnamectl set-hostname \"$1\"", "mgmtkit-hostname", "web-1"}, Sudo: true}
	apt := remote.Cmd{Args: []string{"/usr/bin/apt-get", "install", "-y", "--no-install-recommends", "nginx"}}
	for _, tc := range []struct {
		name   string
		m      remotetest.Matcher
		script bool
		apt    bool
	}{
		{"Equal", remotetest.Equal("/usr/bin/apt-get", "install", "-y", "--no-install-recommends", "nginx"), false, true},
		{"remotetest.Equal prefix only", remotetest.Equal("/usr/bin/apt-get", "install"), false, false},
		{"HasPrefix", remotetest.HasPrefix("/usr/bin/apt-get", "install"), false, true},
		{"remotetest.HasPrefix by word", remotetest.HasPrefix("/usr/bin/apt-get", "inst"), false, false},
		{"remotetest.Program by base name", remotetest.Program("apt-get"), false, true},
		{"remotetest.Program sh", remotetest.Program("sh"), true, false},
		{"HasArg", remotetest.HasArg("nginx"), false, true},
		{"remotetest.HasArg not the program", remotetest.HasArg("sh"), false, false},
		{"Contains", remotetest.Contains("-y --no-install"), false, true},
		{"Matches", remotetest.Matches(`^sh -c .* web-\d$`), true, false},
		{"Script", remotetest.Script("mgmtkit-hostname"), true, false},
		{"remotetest.Script other", remotetest.Script("mgmtkit-other"), false, false},
		{"Sudo", remotetest.Sudo(), true, false},
		{"Not", remotetest.Not(remotetest.Sudo()), false, true},
		{"All", remotetest.All(remotetest.Program("sh"), remotetest.Sudo()), true, false},
		{"remotetest.All empty", remotetest.All(), true, true},
		{"Any", remotetest.Any(remotetest.Program("apt-get"), remotetest.Script("mgmtkit-hostname")), true, true},
		{"remotetest.Any empty", remotetest.Any(), false, false},
	} {
		if got := tc.m(script); got != tc.script {
			t.Errorf("%s on the script = %v, want %v", tc.name, got, tc.script)
		}
		if got := tc.m(apt); got != tc.apt {
			t.Errorf("%s on apt-get = %v, want %v", tc.name, got, tc.apt)
		}
	}
	h := remotetest.NewHost("web-1").On(remotetest.Script("mgmtkit-hostname"), remotetest.Reply{Stdout: "changed\n"})
	if _, err := h.Run(t.Context(), script); err != nil {
		t.Fatal(err)
	}
	if got := h.Commands(); !slices.Equal(got, []string{"sudo sh -c ... mgmtkit-hostname web-1"}) {
		t.Errorf("Commands() = %q: the script's text is shown as ...", got)
	}
	if got := h.Calls()[0].Args[2]; got != script.Args[2] {
		t.Errorf("Calls() has the script %q, want it whole", got)
	}
}

func TestWriteFile(t *testing.T) {
	h := remotetest.NewHost("worker-1")
	ctx := t.Context()
	write := func(data string, opts remote.FileOptions) bool {
		t.Helper()
		changed, err := h.WriteFile(ctx, "/etc/containerd/config.toml", strings.NewReader(data), opts)
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	sudo := remote.FileOptions{Sudo: true}
	if !write("version = 2\n", sudo) {
		t.Error("a new file: unchanged")
	}
	if f, _ := h.Stat("/etc/containerd/config.toml"); f.Mode != 0o644 || f.Owner != "root" || f.Group != "root" || string(f.Data) != "version = 2\n" {
		t.Errorf("new file = %+v, want root's, 0644", f)
	}
	if write("version = 2\n", sudo) {
		t.Error("the same bytes again: changed")
	}
	if write("version = 2\n", remote.FileOptions{Sudo: true, Mode: 0o644, Owner: "root"}) {
		t.Error("the same bytes, mode and owner spelled out: changed")
	}
	if !write("version = 2\n", remote.FileOptions{Sudo: true, Mode: 0o600}) {
		t.Error("a new mode: unchanged")
	}
	if !write("version = 2\n", remote.FileOptions{Sudo: true, Group: "adm"}) {
		t.Error("a new group: unchanged")
	}
	if f, _ := h.Stat("/etc/containerd/config.toml"); f.Mode != 0o600 || f.Group != "adm" {
		t.Errorf("after mode and group changes: %+v; a zero Mode keeps the mode", f)
	}
	if !write("version = 3\n", sudo) {
		t.Error("new bytes: unchanged")
	}
	if data, _ := h.File("/etc/containerd/config.toml"); string(data) != "version = 3\n" {
		t.Errorf("content = %q", data)
	}
	var changes []bool
	for _, c := range h.Calls() {
		if c.Op != remotetest.OpWriteFile || c.Path != "/etc/containerd/config.toml" || !c.Sudo {
			t.Errorf("transcript: %+v", c)
		}
		changes = append(changes, c.Changed)
	}
	if want := []bool{true, false, false, true, true, true}; !slices.Equal(changes, want) {
		t.Errorf("recorded changes %v, want %v", changes, want)
	}
	for _, p := range []string{"etc/x", "/etc/../x", "/", "/a\nb"} {
		if _, err := h.WriteFile(ctx, p, strings.NewReader(""), sudo); err == nil {
			t.Errorf("WriteFile(%q) accepted", p)
		}
	}
}

func TestReadFile(t *testing.T) {
	h := remotetest.NewHost("worker-1")
	h.SetFile("/etc/hostname", []byte("worker-1\n"), 0o644)
	ctx := t.Context()
	data, err := h.ReadFile(ctx, "/etc/hostname", remote.FileOptions{})
	if err != nil || string(data) != "worker-1\n" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}
	data[0] = 'X' // the caller's copy
	if again, _ := h.File("/etc/hostname"); string(again) != "worker-1\n" {
		t.Errorf("the host's file changed with the caller's copy: %q", again)
	}
	_, err = h.ReadFile(ctx, "/etc/nosuch", remote.FileOptions{Sudo: true})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	if c := h.Calls(); len(c) != 2 || c[1].Op != remotetest.OpReadFile || c[1].Path != "/etc/nosuch" || !errors.Is(c[1].Err, fs.ErrNotExist) {
		t.Errorf("transcript: %+v", c)
	}
	if _, err := h.ReadFile(ctx, "/etc", remote.FileOptions{Sudo: true}); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a directory: %v, want an error other than not found", err)
	}
}

// The login user (ubuntu) needs remotetest.Sudo for root's files, as on Ubuntu.
func TestPermissionsWithoutSudo(t *testing.T) {
	h := remotetest.NewHost("worker-1")
	h.SetFile("/etc/shadow", []byte("root:*:19000:0:99999:7:::\n"), 0o640)
	h.Chown("/etc/shadow", "root", "shadow")
	h.SetFile("/home/ubuntu/.bashrc", []byte("# root's\n"), 0o644)
	ctx := t.Context()
	user := remote.FileOptions{}

	for _, p := range []string{"/etc/x.conf", "/usr/local/bin/tool", "/home/other/x", "/home/ubuntu/.bashrc"} {
		if _, err := h.WriteFile(ctx, p, strings.NewReader("x"), user); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("WriteFile(%s) without Sudo: %v, want fs.ErrPermission", p, err)
		}
	}
	if _, err := h.WriteFile(ctx, "/home/ubuntu/x", strings.NewReader("x"), remote.FileOptions{Group: "adm"}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("a group not the user's without Sudo: %v, want fs.ErrPermission", err)
	}
	if _, err := h.WriteFile(ctx, "/home/ubuntu/x", strings.NewReader("x"), remote.FileOptions{Owner: "root"}); err == nil || !strings.Contains(err.Error(), "needs FileOptions.Sudo") {
		t.Errorf("Owner root without Sudo: %v, want remote's refusal", err)
	}
	for _, p := range []string{"/home/ubuntu/.kube/config", "/tmp/x", "/var/tmp/y"} {
		if changed, err := h.WriteFile(ctx, p, strings.NewReader("x"), user); err != nil || !changed {
			t.Errorf("WriteFile(%s) without Sudo: %v, %v", p, changed, err)
		}
		if f, _ := h.Stat(p); f.Owner != "ubuntu" || f.Group != "ubuntu" {
			t.Errorf("%s belongs to %s:%s, want the login user", p, f.Owner, f.Group)
		}
	}
	if _, err := h.ReadFile(ctx, "/etc/shadow", user); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("ReadFile(/etc/shadow) without Sudo: %v, want fs.ErrPermission", err)
	}
	if _, err := h.ReadFile(ctx, "/etc/shadow", remote.FileOptions{Sudo: true}); err != nil {
		t.Errorf("ReadFile(/etc/shadow) with Sudo: %v", err)
	}
	h.SetUser("root")
	if _, err := h.WriteFile(ctx, "/etc/x.conf", strings.NewReader("x"), user); err != nil {
		t.Errorf("WriteFile as root without Sudo: %v", err)
	}
	if f, _ := h.Stat("/etc/x.conf"); f.Owner != "root" {
		t.Errorf("root's new file belongs to %s", f.Owner)
	}
}

func TestWriteFiles(t *testing.T) {
	h := remotetest.NewHost("worker-1")
	h.SetFile("/etc/a", []byte("a\n"), 0o644)
	ctx := t.Context()
	sudo := remote.FileOptions{Sudo: true}
	changed, err := remote.WriteFiles(ctx, h, []remote.FileWrite{{Path: "/etc/a", Content: []byte("a\n"), Options: sudo}, {Path: "/etc/b", Content: []byte("b\n"), Options: sudo}})
	if err != nil || !slices.Equal(changed, []bool{false, true}) {
		t.Fatalf("WriteFiles = %v, %v; want [false true]", changed, err)
	}
	// Refused before anything is written.
	for name, ws := range map[string][]remote.FileWrite{
		"mixed Sudo":     {{Path: "/etc/c", Options: sudo}, {Path: "/home/ubuntu/d"}},
		"the same twice": {{Path: "/etc/c", Options: sudo}, {Path: "/etc/c", Options: sudo}},
		"a bad owner":    {{Path: "/etc/c", Options: sudo}, {Path: "/etc/d", Options: remote.FileOptions{Sudo: true, Owner: "a:b"}}},
		"no permission":  {{Path: "/tmp/c"}, {Path: "/etc/d"}},
	} {
		if _, err := h.WriteFiles(ctx, ws); err == nil {
			t.Errorf("%s: accepted", name)
		}
		for _, p := range []string{"/etc/c", "/tmp/c"} {
			if _, ok := h.File(p); ok {
				t.Errorf("%s: %s was written", name, p)
			}
		}
	}
}

// remote's helpers that run scripts need no rules: the host runs them on
// its files.
func TestRemoteHelpers(t *testing.T) {
	h := remotetest.NewHost("worker-1")
	h.SetFile("/etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644)
	h.SetFile("/etc/kubernetes/admin.conf", []byte("apiVersion: v1\n"), 0o600)
	h.SetFile("/etc/kubernetes/pki/ca.crt", []byte("CA\n"), 0o644)
	ctx := t.Context()

	got, err := remote.ReadFiles(ctx, h, []string{"/etc/hosts", "/etc/nosuch", "/etc/kubernetes/admin.conf"}, remote.FileOptions{Sudo: true})
	if err != nil || len(got) != 2 || string(got["/etc/hosts"]) != "127.0.0.1 localhost\n" || string(got["/etc/kubernetes/admin.conf"]) != "apiVersion: v1\n" {
		t.Errorf("ReadFiles = %q, %v", got, err)
	}
	_, err = remote.ReadFiles(ctx, h, []string{"/etc/hosts", "/etc/kubernetes/admin.conf"}, remote.FileOptions{})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 2 || ce.Stderr != "mgmtkit-read-files: 3: cannot open /etc/kubernetes/admin.conf: Permission denied\n" {
		t.Errorf("ReadFiles of root's 0600 file without Sudo: %v, want dash's refusal", err)
	}

	removed, err := remote.RemoveFiles(ctx, h, []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf"}, []string{"/etc/kubernetes"}, remote.FileOptions{Sudo: true})
	if err != nil || !slices.Equal(removed, []bool{true, false}) {
		t.Errorf("RemoveFiles = %v, %v; want [true false]", removed, err)
	}
	if _, ok := h.File("/etc/kubernetes/admin.conf"); ok {
		t.Error("admin.conf is still there")
	}
	if _, err := remote.RemoveFiles(ctx, h, []string{"/etc/hosts"}, nil, remote.FileOptions{}); !errors.As(err, &ce) || ce.Stderr != "rm: cannot remove '/etc/hosts': Permission denied\n" {
		t.Errorf("RemoveFiles of /etc/hosts without Sudo: %v, want rm's refusal", err)
	}
	if _, err := remote.RemoveFiles(ctx, h, []string{"/etc/kubernetes/pki"}, nil, remote.FileOptions{Sudo: true}); !errors.As(err, &ce) || !strings.Contains(ce.Stderr, "Is a directory") {
		t.Errorf("RemoveFiles of a directory among files: %v", err)
	}

	// EditBlock and UploadFile go through ReadFile and WriteFile.
	if changed, err := remote.EditBlock(ctx, h, "/etc/hosts", "registry", []string{"10.0.0.9 registry"}, remote.FileOptions{Sudo: true}); err != nil || !changed {
		t.Errorf("EditBlock = %v, %v", changed, err)
	}
	hosts, _ := h.File("/etc/hosts")
	if want := "127.0.0.1 localhost\n# BEGIN mgmtkit registry\n10.0.0.9 registry\n# END mgmtkit registry\n"; string(hosts) != want {
		t.Errorf("/etc/hosts = %q, want %q", hosts, want)
	}
	pkg := fstest.MapFS{"Files/kubernetes/helm.tar.gz": {Data: []byte("tgz")}}
	for _, want := range []bool{true, false} {
		if changed, err := remote.UploadFile(ctx, h, pkg, "Files/kubernetes/helm.tar.gz", "/tmp/helm.tar.gz", remote.FileOptions{}); err != nil || changed != want {
			t.Errorf("UploadFile = %v, %v; want %v", changed, err, want)
		}
	}
	if len(h.Unmatched()) != 0 {
		t.Errorf("unmatched: %q", h.Unmatched())
	}
}

// Commands, files and the transcript from many goroutines (run with
// -race); every call lands in the transcript.
func TestConcurrentUse(t *testing.T) {
	h := remotetest.NewHost("worker-1").On(remotetest.Program("true"), remotetest.Reply{})
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 10 {
				if _, err := h.Run(ctx, remote.Command("true")); err != nil {
					t.Error(err)
				}
				p := fmt.Sprintf("/tmp/f%d-%d", i, j)
				if _, err := h.WriteFile(ctx, p, strings.NewReader(p), remote.FileOptions{}); err != nil {
					t.Error(err)
				}
				h.Calls()
			}
		})
	}
	wg.Wait()
	if n := len(h.Calls()); n != 160 {
		t.Errorf("%d calls recorded, want 160", n)
	}
	if n := len(h.Paths()); n != 80 {
		t.Errorf("%d files, want 80", n)
	}
}

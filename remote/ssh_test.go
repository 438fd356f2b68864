package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

func TestAuthentication(t *testing.T) {
	srv, key := fakeHost(t)
	ctx := testContext(t)
	for _, tc := range []struct {
		name string
		cfg  remote.Config
		want string
	}{
		{"password", remote.Config{User: "ubuntu", Password: remote.NewSecret(ubuntuPassword)}, "ubuntu"},
		{"private key", remote.Config{User: "ops", PrivateKey: remote.NewSecret(key)}, "ops"},
		{"root key", remote.Config{User: "root", PrivateKey: remote.NewSecret(key)}, "root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Addr, tc.cfg.HostKey = srv.Addr(), srv.HostKeyPolicy()
			h := dial(t, tc.cfg)
			out, err := h.Run(ctx, remote.Command("id", "-un"))
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("id -un = %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestWrongPasswordGivesUpAtDeadline(t *testing.T) {
	srv, _ := fakeHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := remote.Dial(ctx, remote.Config{Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret("not-the-Password-x1"), HostKey: srv.HostKeyPolicy()})
	var de *remote.DialError
	if !errors.As(err, &de) || de.Attempts < 2 {
		t.Fatalf("err = %v, want a DialError after several attempts", err)
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("error does not say why: %v", err)
	}
	assertNoSecrets(t, "error", err.Error(), "not-the-Password-x1")
}

func TestHostKeyPolicies(t *testing.T) {
	srv, _ := fakeHost(t)
	other, _ := fakeHost(t)
	ctx := testContext(t)
	cfg := func(p remote.HostKeyPolicy) remote.Config {
		return remote.Config{Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret(ubuntuPassword), HostKey: p}
	}

	t.Run("no policy is refused", func(t *testing.T) {
		if _, err := remote.NewSSHHost(cfg(nil)); err == nil || !strings.Contains(err.Error(), "HostKey") {
			t.Fatalf("err = %v, want a complaint about Config.HostKey", err)
		}
	})

	t.Run("pinned mismatch fails at once", func(t *testing.T) {
		p, err := remote.PinnedHostKey(string(ssh.MarshalAuthorizedKey(other.HostKey())))
		if err != nil {
			t.Fatal(err)
		}
		before := srv.Dials()
		_, err = remote.Dial(ctx, cfg(p))
		var hke *remote.HostKeyError
		if !errors.As(err, &hke) {
			t.Fatalf("err = %v, want *HostKeyError", err)
		}
		if hke.Got != ssh.FingerprintSHA256(srv.HostKey()) {
			t.Errorf("HostKeyError.Got = %s, want the presented key", hke.Got)
		}
		if n := srv.Dials() - before; n != 1 {
			t.Errorf("dialed %d times, want exactly 1: a rejected host key must not be retried", n)
		}
	})

	t.Run("trust on first use", func(t *testing.T) {
		var learned []string
		p, err := remote.TrustOnFirstUse("", func(k string) { learned = append(learned, k) })
		if err != nil {
			t.Fatal(err)
		}
		h := dial(t, cfg(p))
		if len(learned) != 1 || learned[0] != h.HostKey() {
			t.Fatalf("learned %q, want exactly the presented key %q", learned, h.HostKey())
		}
		// The learned key pins the next connection: another host is refused.
		p2, err := remote.TrustOnFirstUse(learned[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg(p2)
		c.Addr = other.Addr()
		if _, err := remote.Dial(ctx, c); !errors.As(err, new(*remote.HostKeyError)) {
			t.Fatalf("err = %v, want *HostKeyError for a different host", err)
		}
	})

	t.Run("callback", func(t *testing.T) {
		var got []string
		p := remote.HostKeyCallback(func(hostport string, _ net.Addr, key ssh.PublicKey) error {
			got = append(got, hostport)
			if ssh.FingerprintSHA256(key) != ssh.FingerprintSHA256(srv.HostKey()) {
				return errors.New("not the key of the server under test")
			}
			return nil
		})
		dial(t, cfg(p))
		if len(got) != 1 || got[0] != srv.Addr() {
			t.Errorf("the callback saw %q, want the dialed address %s once", got, srv.Addr())
		}
		c := cfg(p)
		c.Addr = other.Addr()
		_, err := remote.Dial(ctx, c)
		var hke *remote.HostKeyError
		if !errors.As(err, &hke) || hke.Reason != "not the key of the server under test" {
			t.Fatalf("err = %v, want a HostKeyError with the callback's reason", err)
		}
		c.HostKey = remote.HostKeyCallback(nil)
		if _, err := remote.Dial(ctx, c); !errors.As(err, new(*remote.HostKeyError)) {
			t.Fatalf("a nil callback: err = %v, want every key rejected", err)
		}
	})

	t.Run("known_hosts", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "known_hosts")
		line := knownhosts.Line([]string{knownhosts.Normalize(srv.Addr())}, srv.HostKey())
		if err := os.WriteFile(file, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := remote.KnownHosts(file)
		if err != nil {
			t.Fatal(err)
		}
		h := dial(t, cfg(p))
		if _, err := h.Run(ctx, remote.Command("true")); err != nil {
			t.Fatal(err)
		}
		c := cfg(p)
		c.Addr = other.Addr()
		_, err = remote.Dial(ctx, c)
		if !errors.As(err, new(*remote.HostKeyError)) || !strings.Contains(err.Error(), "not in known_hosts") {
			t.Fatalf("err = %v, want a HostKeyError saying the host is unknown", err)
		}
	})
}

func TestQuotingKeepsArgumentsWhole(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	args := []string{"a b", "; rm -rf /", "$(id)", "`id`", "it's", `"q"`, "*", "", "new\nline", "tab\t", "~", "#c", "ü"}
	if _, err := h.Run(ctx, remote.Command("printf", append([]string{"[%s]"}, args...)...)); err != nil {
		t.Fatal(err)
	}
	calls := srv.CallsTo("printf")
	if len(calls) != 1 {
		t.Fatalf("printf ran %d times", len(calls))
	}
	got := calls[0].Args[2:]
	if strings.Join(got, "\x00") != strings.Join(args, "\x00") {
		t.Fatalf("printf received %q, want %q", got, args)
	}
	if srv.FS().Exists("/home/ubuntu/rm") || len(srv.CallsTo("id")) != 0 || len(srv.CallsTo("rm")) != 0 {
		t.Fatal("an argument was interpreted by the shell")
	}
}

func TestEnvironmentIsPassedAsArgv(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	out, err := h.Run(testContext(t), remote.Cmd{Args: []string{"sh", "-c", `printf '%s|%s' "$A" "$B"`}, Env: map[string]string{"A": "x y", "B": "$(id)"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "x y|$(id)" {
		t.Fatalf("got %q", out.String())
	}
	if _, err := h.Run(testContext(t), remote.Cmd{Args: []string{"true"}, Env: map[string]string{"A;B": "x"}}); err == nil {
		t.Fatal("an invalid variable name was accepted")
	}
}

func TestExitStatusJudgesSuccess(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)

	// Output on stderr with exit status 0 is success.
	out, err := h.Run(ctx, remote.Command("sh", "-c", "echo warning: noisy >&2; echo ok"))
	if err != nil || out.String() != "ok" || !strings.Contains(string(out.Stderr), "noisy") {
		t.Fatalf("Run = %q, %q, %v; want success with stderr kept", out.Stdout, out.Stderr, err)
	}

	// With writers set (Cmd.Stdout, Cmd.Stderr), standard output goes
	// to its writer only; standard error goes to its writer and its tail
	// stays in Output.Stderr.
	var stdout, stderr bytes.Buffer
	out, err = h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", "echo warning: noisy >&2; echo ok"}, Stdout: &stdout, Stderr: &stderr})
	if err != nil || len(out.Stdout) != 0 || stdout.String() != "ok\n" || stderr.String() != "warning: noisy\n" || string(out.Stderr) != "warning: noisy\n" {
		t.Fatalf("Run with writers = %q, %q, %v; writers got %q, %q", out.Stdout, out.Stderr, err, stdout.String(), stderr.String())
	}

	// A non-zero exit is a CommandError carrying host, command, status and stderr.
	_, err = h.Run(ctx, remote.Command("sh", "-c", "echo E: broken >&2; exit 100"))
	var ce *remote.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *CommandError", err)
	}
	if ce.ExitCode != 100 || ce.Host != h.Name() || !strings.Contains(ce.Stderr, "E: broken") || !strings.Contains(ce.Command, "exit 100") {
		t.Fatalf("CommandError = %+v", ce)
	}
	if !strings.Contains(err.Error(), "exited with status 100") || !strings.Contains(err.Error(), "E: broken") {
		t.Errorf("error text lacks status or stderr: %v", err)
	}

	// OKExit turns an answer into a result.
	out, err = h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", "exit 1"}, OKExit: []int{1}})
	if err != nil || out.ExitCode != 1 {
		t.Fatalf("OKExit: exit %d, err %v", out.ExitCode, err)
	}

	// An unknown program fails loudly.
	_, err = h.Run(ctx, remote.Command("no-such-program"))
	if !errors.As(err, &ce) || ce.ExitCode != 127 {
		t.Fatalf("err = %v, want exit 127", err)
	}
}

func TestSudo(t *testing.T) {
	srv, key := fakeHost(t)
	ctx := testContext(t)
	logs := &logBuffer{}
	for _, tc := range []struct {
		name    string
		cfg     remote.Config
		wantCmd string // how the command line starts
	}{
		{"root runs unwrapped", remote.Config{User: "root", PrivateKey: remote.NewSecret(key)}, "timeout "},
		{"passwordless uses sudo -n", remote.Config{User: "ops", PrivateKey: remote.NewSecret(key)}, "sudo -n -- "},
		{"password goes to sudo -S on stdin", remote.Config{User: "ubuntu", Password: remote.NewSecret(ubuntuPassword)}, "sudo -S -k -p '' -- "},
		{"separate sudo password", remote.Config{User: "ubuntu", Password: remote.NewSecret(ubuntuPassword), SudoPassword: remote.NewSecret(ubuntuPassword)}, "sudo -S -k -p '' -- "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Addr, tc.cfg.HostKey, tc.cfg.Logger = srv.Addr(), srv.HostKeyPolicy(), logs.logger()
			h := dial(t, tc.cfg)
			srv.ResetTranscript()
			// Standard input still reaches the command after sudo's password.
			out, err := h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", `id -u; cat`}, Sudo: true, Stdin: strings.NewReader("payload\n")})
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != "0\npayload" {
				t.Fatalf("got %q, want uid 0 and the payload", out.String())
			}
			tr := srv.Transcript()
			last := tr[len(tr)-1].Command
			if !strings.HasPrefix(last, tc.wantCmd) {
				t.Errorf("command %q does not start with %q", last, tc.wantCmd)
			}
			if calls := srv.CallsTo("sh"); len(calls) == 0 || calls[len(calls)-1].User != "root" {
				t.Errorf("the command did not run as root: %+v", calls)
			}
		})
	}
	assertNoSecrets(t, "transcript", transcriptText(srv), ubuntuPassword)
	assertNoSecrets(t, "logs", logs.String(), ubuntuPassword)

	t.Run("no sudo rights", func(t *testing.T) {
		h := dialAs(t, srv, "guest", guestPassword, logs)
		_, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true})
		var se *remote.SudoError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "not in the sudoers file") {
			t.Fatalf("err = %v, want a SudoError quoting sudo", err)
		}
		assertNoSecrets(t, "error", err.Error(), guestPassword)
	})

	t.Run("wrong sudo password", func(t *testing.T) {
		h := dial(t, remote.Config{Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret(ubuntuPassword), SudoPassword: remote.NewSecret("wrong-Sudo-Pass-55"), HostKey: srv.HostKeyPolicy()})
		_, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true})
		if !errors.As(err, new(*remote.SudoError)) {
			t.Fatalf("err = %v, want *SudoError", err)
		}
		assertNoSecrets(t, "error", err.Error(), ubuntuPassword, "wrong-Sudo-Pass-55")
	})

	t.Run("password needed but not configured", func(t *testing.T) {
		h := dial(t, remote.Config{Addr: srv.Addr(), User: "ops", PrivateKey: remote.NewSecret(key), HostKey: srv.HostKeyPolicy()})
		// Take ops' NOPASSWD rule away: sudo now wants a password ops never gave.
		if err := srv.FS().WriteFile("/etc/sudoers.d/ops", []byte("ops ALL=(ALL:ALL) ALL\n"), 0o440); err != nil {
			t.Fatal(err)
		}
		_, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true})
		if !errors.As(err, new(*remote.SudoError)) || !strings.Contains(err.Error(), "none is configured") {
			t.Fatalf("err = %v, want a SudoError about the missing password", err)
		}
	})
}

func TestConcurrentCommandsShareOneConnection(t *testing.T) {
	srv, _ := fakeHost(t)
	var open, peak atomic.Int32
	srv.Handle("/usr/bin/probe", func(ctx context.Context, p *sshtest.Process) int {
		n := open.Add(1)
		defer open.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		fmt.Fprintln(p.Stdout, p.Args[1])
		return 0
	})
	h := dial(t, remote.Config{Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret(ubuntuPassword), HostKey: srv.HostKeyPolicy(), MaxSessions: 3})
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := h.Run(ctx, remote.Command("probe", fmt.Sprint(i)))
			if err == nil && out.String() != fmt.Sprint(i) {
				err = fmt.Errorf("command %d got output %q", i, out.String())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if srv.Dials() != 1 {
		t.Errorf("%d connections, want 1 shared connection", srv.Dials())
	}
	if p := peak.Load(); p > 3 {
		t.Errorf("%d commands ran at once, want at most MaxSessions=3", p)
	}
}

func TestDialRetriesWhileHostBoots(t *testing.T) {
	srv, _ := fakeHost(t)
	srv.RefuseDials(3)
	srv.RejectAuth(2) // the password and the keyboard-interactive attempt of one connection
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	if _, err := h.Run(testContext(t), remote.Command("true")); err != nil {
		t.Fatal(err)
	}
	// Three refused, one whose authentication failed, one that worked.
	if got := srv.Dials(); got != 5 {
		t.Errorf("server saw %d connections, want 5", got)
	}
}

func TestHungCommandTimesOut(t *testing.T) {
	srv, _ := fakeHost(t)
	srv.HangProgram("kubeadm", 1)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
	defer cancel()
	_, err := h.Run(ctx, remote.Command("kubeadm", "join", "10.0.0.1:6443"))
	var ce *remote.CommandError
	if !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a CommandError wrapping DeadlineExceeded", err)
	}
	for _, want := range []string{h.Name(), "kubeadm join 10.0.0.1:6443", "did not finish"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// The remote side ended too, and the connection is still usable.
	waitFor(t, func() bool {
		calls := srv.CallsTo("kubeadm")
		return len(calls) == 1 && calls[0].Exit != -1
	})
	if _, err := h.Run(testContext(t), remote.Command("true")); err != nil {
		t.Fatalf("connection unusable after a cancelled command: %v", err)
	}
	if srv.Dials() != 1 {
		t.Errorf("%d connections, want 1", srv.Dials())
	}
}

func TestCancelledSudoCommandEndsOnHost(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		_, err := h.Run(ctx, remote.Cmd{Args: []string{"bash", "-c", "sleep 60; echo finished"}, Sudo: true})
		done <- err
	}()
	waitFor(t, func() bool { return len(srv.CallsTo("sleep")) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	waitFor(t, func() bool { return srv.CallsTo("sleep")[0].Exit != -1 })
	if len(srv.CallsTo("echo")) != 0 {
		t.Error("the script went on after its command was cancelled")
	}
}

func TestDroppedConnectionIsRedialedOnce(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)

	srv.DropConnectionDuring(1)
	_, err := h.Run(ctx, remote.Command("touch-me"))
	if !errors.Is(err, remote.ErrConnectionLost) {
		t.Fatalf("err = %v, want ErrConnectionLost", err)
	}
	// The next command redials transparently.
	if _, err := h.Run(ctx, remote.Command("true")); err != nil {
		t.Fatal(err)
	}
	if srv.Dials() != 2 {
		t.Errorf("%d connections, want 2 (one redial)", srv.Dials())
	}

	// An idempotent command is run again on the new connection.
	srv.DropConnectionDuring(1)
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"echo", "again"}, Idempotent: true})
	if err != nil || out.String() != "again" {
		t.Fatalf("idempotent command: %q, %v", out.String(), err)
	}
	if n := len(srv.CallsTo("echo")); n != 2 {
		t.Errorf("echo ran %d times, want 2 (once per connection)", n)
	}
}

func TestClosedHost(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	h.Close()
	if _, err := h.Run(testContext(t), remote.Command("true")); !errors.Is(err, remote.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// waitFor polls cond until it holds or the test's generous deadline passes.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// freezableConn stops delivering data once frozen, like a VM that was paused
// or a link that silently drops packets: no RST, no FIN.
type freezableConn struct {
	net.Conn
	frozen chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (c *freezableConn) Read(p []byte) (int, error) {
	select {
	case <-c.frozen:
		<-c.closed
		return 0, net.ErrClosed
	default:
		return c.Conn.Read(p)
	}
}

func (c *freezableConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func TestKeepAliveDetectsSilentlyDeadConnection(t *testing.T) {
	srv, _ := fakeHost(t)
	var mu sync.Mutex
	var conns []*freezableConn
	var d net.Dialer
	h := dial(t, remote.Config{
		Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret(ubuntuPassword), HostKey: srv.HostKeyPolicy(),
		KeepAlive: 20 * time.Millisecond,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			fc := &freezableConn{Conn: c, frozen: make(chan struct{}), closed: make(chan struct{})}
			mu.Lock()
			conns = append(conns, fc)
			mu.Unlock()
			return fc, nil
		},
	})
	ctx := testContext(t)
	if _, err := h.Run(ctx, remote.Command("true")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	close(conns[0].frozen)
	mu.Unlock()
	// Keepalive notices that the connection stopped answering and closes it.
	waitFor(t, func() bool {
		select {
		case <-conns[0].closed:
			return true
		default:
			return false
		}
	})
	if _, err := h.Run(ctx, remote.Command("true")); err != nil {
		t.Fatalf("the next command did not redial: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 2 {
		t.Errorf("%d connections, want 2", len(conns))
	}
}

func TestWriteFileSurvivesAConnectionLostDuringTheCommit(t *testing.T) {
	srv, _ := fakeHost(t)
	h := dialAs(t, srv, "ubuntu", ubuntuPassword, nil)
	ctx := testContext(t)
	// Learning how to sudo takes two commands; losing the second is harmless.
	srv.DropConnectionDuring(2)
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
		t.Fatalf("sudo after a dropped sudo check: %v", err)
	}
	for i, file := range []string{"/etc/mgmtkit-test.conf", "/home/ubuntu/notes.txt"} {
		srv.DropConnectionDuring(2) // the probe is the 1st command, the commit the 2nd
		content := fmt.Sprintf("version %d\n", i)
		// A group, even the login user's own, takes the write without sudo
		// through the probe and commit commands (a write that keeps its
		// owner and group runs none: TestWriteCommandCounts).
		opts := remote.FileOptions{Sudo: i == 0, Mode: 0o640}
		if !opts.Sudo {
			opts.Group = "ubuntu"
		}
		changed, err := h.WriteFile(ctx, file, strings.NewReader(content), opts)
		if err != nil || !changed {
			t.Fatalf("%s: changed %v, %v", file, changed, err)
		}
		got, err := srv.FS().ReadFile(file)
		if err != nil || string(got) != content {
			t.Errorf("%s holds %q, %v", file, got, err)
		}
		if fi, _ := srv.FS().Stat(file); fi == nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v", file, fi)
		}
	}
	if srv.Dials() != 4 {
		t.Errorf("%d connections, want 4 (one redial per drop)", srv.Dials())
	}
}

// A host that answers but refuses the login is not unreachable: the
// error is an AuthError inside the DialError, without the password; a
// host that does not answer at all is unreachable.
func TestAuthFailureIsNotUnreachable(t *testing.T) {
	srv, _ := fakeHost(t)
	_, err := remote.Dial(testContext(t), remote.Config{Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret("Wrong-Pass-77"), HostKey: srv.HostKeyPolicy(), WaitTimeout: 300 * time.Millisecond, Logger: suite.logs.logger()})
	var ae *remote.AuthError
	if !errors.As(err, &ae) || ae.User != "ubuntu" {
		t.Fatalf("err = %v, want an AuthError of ubuntu", err)
	}
	if remote.IsUnreachable(err) {
		t.Errorf("a refused login counts as unreachable: %v", err)
	}
	assertNoSecrets(t, "error", err.Error(), "Wrong-Pass-77")

	l, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more: connection refused
	_, err = remote.Dial(testContext(t), remote.Config{Addr: addr, User: "ubuntu", Password: remote.NewSecret(ubuntuPassword), HostKey: srv.HostKeyPolicy(), WaitTimeout: 300 * time.Millisecond, Logger: suite.logs.logger()})
	if !remote.IsUnreachable(err) {
		t.Errorf("a refused connection: IsUnreachable(%v) = false", err)
	}
	if remote.IsUnreachable(errors.New("other")) {
		t.Error("an error that is no DialError counts as unreachable")
	}
}

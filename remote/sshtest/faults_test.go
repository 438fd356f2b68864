package sshtest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestRefuseDials(t *testing.T) {
	h := newHost(t)
	h.RefuseDials(3)
	cfg := clientConfig(h.Server, "alice", alicePW)
	for i := 1; i <= 3; i++ {
		if c, err := ssh.Dial("tcp", h.Addr(), cfg); err == nil {
			c.Close()
			t.Fatalf("dial %d succeeded", i)
		}
	}
	c, err := ssh.Dial("tcp", h.Addr(), cfg)
	if err != nil {
		t.Fatalf("dial 4: %v", err)
	}
	defer c.Close()
	wantOK(t, "after the refusals", runOn(t, c, "echo up", ""), "up\n")
	if n := h.Dials(); n != 4 {
		t.Errorf("Dials() = %d, want 4", n)
	}
}

func TestRejectAuth(t *testing.T) {
	h := newHost(t)
	h.RejectAuth(2)
	cfg := clientConfig(h.Server, "alice", alicePW)
	for i := 1; i <= 2; i++ {
		_, err := ssh.Dial("tcp", h.Addr(), cfg)
		if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Fatalf("dial %d: %v, want an authentication failure", i, err)
		}
	}
	c, err := ssh.Dial("tcp", h.Addr(), cfg)
	if err != nil {
		t.Fatalf("dial 3: %v", err)
	}
	c.Close()
	// Wrong credentials fail on their own, and a key works.
	if _, err := ssh.Dial("tcp", h.Addr(), clientConfig(h.Server, "alice", "wrong")); err == nil {
		t.Error("a wrong password was accepted")
	}
	if _, err := ssh.Dial("tcp", h.Addr(), clientConfig(h.Server, "mallory", alicePW)); err == nil {
		t.Error("an unknown user was accepted")
	}
}

func TestPublicKeyAuth(t *testing.T) {
	signer := testSigner(t)
	s := Start(t, Config{Users: []User{{Name: "ops", AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()}}}})
	cfg := &ssh.ClientConfig{User: "ops", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(s.HostKey())}
	c, err := ssh.Dial("tcp", s.Addr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantOK(t, "as ops", runOn(t, c, "id -un; pwd", ""), "ops\n/home/ops\n")
	other := testSigner(t)
	cfg.Auth = []ssh.AuthMethod{ssh.PublicKeys(other), ssh.Password("")}
	if _, err := ssh.Dial("tcp", s.Addr(), cfg); err == nil {
		t.Error("an unknown key was accepted")
	}
}

func TestDelayAccept(t *testing.T) {
	h := newHost(t)
	h.DelayAccept(time.Hour)
	// The client gives up long before the server starts the handshake.
	conn, err := net.Dial("tcp", h.Addr())
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(50 * time.Millisecond))
	_, _, _, err = ssh.NewClientConn(conn, h.Addr(), clientConfig(h.Server, "alice", alicePW))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("handshake with a delayed server: %v, want a timeout", err)
	}
	conn.Close()
	h.DelayAccept(0)
	c, err := ssh.Dial("tcp", h.Addr(), clientConfig(h.Server, "alice", alicePW))
	if err != nil {
		t.Fatalf("dial without delay: %v", err)
	}
	c.Close()
}

func TestDropConnectionDuring(t *testing.T) {
	h := newHost(t)
	c := dial(t, h.Server, "alice")
	h.DropConnectionDuring(2)
	wantOK(t, "first command", runOn(t, c, "echo one", ""), "one\n")

	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	err = sess.Run("touch /tmp/side-effect && echo two")
	var exit *ssh.ExitError
	if err == nil || errors.As(err, &exit) {
		t.Errorf("the dropped command returned %v, want no exit status", err)
	}
	if !h.FS().Exists("/tmp/side-effect") {
		t.Error("the dropped command did not run")
	}
	if err := c.Wait(); err == nil {
		t.Error("the connection is still up")
	}
	tr := h.Transcript()
	if len(tr) != 2 || tr[0].Exit != 0 || tr[1].Exit != -1 || tr[1].User != "alice" {
		t.Errorf("transcript %+v", tr)
	}
	// The fault is used up: a new connection works.
	wantOK(t, "after the drop", runOn(t, dial(t, h.Server, "alice"), "echo three", ""), "three\n")
}

func TestFailProgram(t *testing.T) {
	h := newHost(t)
	h.Handle("/usr/bin/apt-get", func(ctx context.Context, p *Process) int {
		p.Stdout.Write([]byte("installed\n"))
		return 0
	})
	h.FailProgram("apt-get", 2, 100, "E: Could not get lock /var/lib/dpkg/lock-frontend\n")
	for i := 0; i < 2; i++ {
		want(t, "failing apt-get", h.sh("sudo apt-get install -y nfs-common"), "", "E: Could not get lock /var/lib/dpkg/lock-frontend\n", 100)
	}
	wantOK(t, "apt-get after the faults", h.sh("sudo apt-get install -y nfs-common"), "installed\n")
	// A fault applies even to a program that does not exist.
	h.FailProgram("nosuch", 1, 3, "")
	want(t, "failing nosuch", h.sh("nosuch"), "", "", 3)
	want(t, "nosuch after the fault", h.sh("nosuch"), "", "bash: line 1: nosuch: command not found\n", 127)
	var exits []int
	for _, c := range h.CallsTo("apt-get") {
		exits = append(exits, c.Exit)
		if c.User != "root" {
			t.Errorf("apt-get ran as %s", c.User)
		}
	}
	if !slices.Equal(exits, []int{100, 100, 0}) {
		t.Errorf("apt-get exits %v", exits)
	}
}

// startHung starts `kubeadm init` with HangProgram on a new session and
// waits until the hung program runs.
func startHung(t *testing.T, h *testHost, c *ssh.Client) (*ssh.Session, *bytes.Buffer, chan error) {
	t.Helper()
	h.HangProgram("kubeadm", 1)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	sess.Stdout = &stdout
	if err := sess.Start("echo before; sudo kubeadm init; echo after"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	waitFor(t, "kubeadm to start", func() bool { return len(h.CallsTo("kubeadm")) == 1 })
	return sess, &stdout, done
}

func TestHangProgramSignal(t *testing.T) {
	h := newHost(t)
	sess, stdout, done := startHung(t, h, h.client("alice"))
	if err := sess.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := waitDone(t, done)
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.Signal() != "TERM" {
		t.Errorf("Wait after SIGTERM: %v, want exit-signal TERM", err)
	}
	if stdout.String() != "before\n" {
		t.Errorf("stdout %q: the script went on after the signal", stdout)
	}
	calls := h.CallsTo("kubeadm")
	if len(calls) != 1 || calls[0].Exit != 143 || calls[0].User != "root" {
		t.Errorf("kubeadm calls %+v", calls)
	}
	if tr := h.Transcript(); tr[len(tr)-1].Exit != -1 {
		t.Errorf("transcript %+v: a signalled command has no exit status", tr)
	}
	// The fault is used up: kubeadm is not installed.
	want(t, "kubeadm after the hang", h.sh("sudo kubeadm init"), "", "sudo: kubeadm: command not found\n", 1)
}

func TestHangProgramClose(t *testing.T) {
	h := newHost(t)
	c := h.client("alice")
	sess, _, done := startHung(t, h, c)
	sess.Close()
	waitDone(t, done)
	waitFor(t, "kubeadm to end", func() bool { return h.CallsTo("kubeadm")[0].Exit != -1 })
	if got := h.CallsTo("kubeadm")[0].Exit; got != 143 {
		t.Errorf("kubeadm ended with %d, want 143", got)
	}
	if len(h.CallsTo("echo")) != 0 {
		t.Error("a builtin was recorded")
	}
	waitFor(t, "the exec to end", func() bool { return len(h.CallsTo("sudo")) == 1 && h.CallsTo("sudo")[0].Exit != -1 })
	// The connection stays usable.
	wantOK(t, "after closing a session", runOn(t, c, "echo still here", ""), "still here\n")
}

// TestSignalEndsBlockedRead signals a command blocked reading standard
// input that the client never closes.
func TestSignalEndsBlockedRead(t *testing.T) {
	h := newHost(t)
	sess, err := h.client("alice").NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	stdin, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	sess.Stdout = &stdout
	if err := sess.Start("sudo cat; echo after"); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("partial"))
	waitFor(t, "cat to start", func() bool { return len(h.CallsTo("cat")) == 1 })
	if err := sess.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	err = waitDone(t, done)
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.Signal() != "TERM" {
		t.Errorf("Wait: %v, want exit-signal TERM", err)
	}
	if c := h.CallsTo("cat"); c[0].Exit == -1 || c[0].Exit == 0 {
		t.Errorf("cat ended with %d", c[0].Exit)
	}
}

// TestTimeoutEndsBlockedRead lets `timeout` end a program blocked reading
// standard input that the client keeps open; the script goes on.
func TestTimeoutEndsBlockedRead(t *testing.T) {
	h := newHost(t)
	sess, err := h.client("alice").NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	stdin, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	sess.Stdout = &stdout
	if err := sess.Start("timeout 0.05 cat; echo status $?; read -r line; echo \"read $line\""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the timeout", func() bool { c := h.CallsTo("timeout"); return len(c) == 1 && c[0].Exit != -1 })
	stdin.Write([]byte("more\n"))
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	if err := waitDone(t, done); err != nil || stdout.String() != "status 124\nread more\n" {
		t.Errorf("Wait: %v, stdout %q", err, stdout.String())
	}
}

func TestHangProgramTimeout(t *testing.T) {
	h := newHost(t)
	h.HangProgram("kubeadm", 1)
	want(t, "timeout ends a hung program", h.sh("timeout 0.05 kubeadm init"), "", "", 124)
	if c := h.CallsTo("kubeadm"); len(c) != 1 || c[0].Exit != 143 {
		t.Errorf("kubeadm calls %+v", c)
	}
}

func TestTranscript(t *testing.T) {
	h := newHost(t)
	h.sh("echo hi")
	h.run("bob", "sudo -S -p '' id -u; ls /nope", bobPW+"\n")
	h.run("root", "exit 4")
	tr := h.Transcript()
	want := []Exec{
		{User: "alice", Command: "echo hi", Exit: 0},
		{User: "bob", Command: "sudo -S -p '' id -u; ls /nope", Exit: 2},
		{User: "root", Command: "exit 4", Exit: 4},
	}
	if !slices.Equal(tr, want) {
		t.Errorf("transcript\n got %+v\nwant %+v", tr, want)
	}
	calls := h.Calls()
	wantCalls := []Call{
		{User: "bob", Args: []string{"sudo", "-S", "-p", "", "id", "-u"}, Exit: 0},
		{User: "root", Args: []string{"id", "-u"}, Exit: 0},
		{User: "bob", Args: []string{"ls", "/nope"}, Exit: 2},
	}
	if !slices.EqualFunc(calls, wantCalls, func(a, b Call) bool {
		return a.User == b.User && a.Exit == b.Exit && slices.Equal(a.Args, b.Args)
	}) {
		t.Errorf("calls\n got %+v\nwant %+v", calls, wantCalls)
	}
	// The slices are copies.
	calls[0].Args[0] = "changed"
	if h.Calls()[0].Args[0] != "sudo" {
		t.Error("Calls returned the server's own slice")
	}
	h.ResetTranscript()
	if len(h.Transcript()) != 0 || len(h.Calls()) != 0 {
		t.Error("ResetTranscript kept entries")
	}
}

func TestMaxSessions(t *testing.T) {
	s := Start(t, Config{Users: []User{{Name: "root", Password: rootPW}}, MaxSessions: 3})
	c := dial(t, s, "root")
	release := make(chan struct{})
	s.Handle("/usr/local/bin/hold", func(ctx context.Context, p *Process) int {
		<-release
		return 0
	})
	var open []*ssh.Session
	for range 3 {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.Start("hold"); err != nil {
			t.Fatal(err)
		}
		open = append(open, sess)
	}
	_, err := c.NewSession()
	var oce *ssh.OpenChannelError
	if !errors.As(err, &oce) || oce.Reason != ssh.Prohibited || oce.Message != "open failed" {
		t.Errorf("a fourth session: %v, want administratively prohibited (open failed)", err)
	}
	// Another connection has its own sessions.
	wantOK(t, "another connection", runOn(t, dial(t, s, "root"), "echo ok", ""), "ok\n")
	close(release)
	for _, sess := range open {
		done := make(chan error, 1)
		go func() { done <- sess.Wait() }()
		if err := waitDone(t, done); err != nil {
			t.Error(err)
		}
	}
	waitFor(t, "the slots to be free", func() bool {
		sess, err := c.NewSession()
		if err != nil {
			return false
		}
		sess.Close()
		return true
	})
}

func TestListenOnASecondAddress(t *testing.T) {
	h := newHost(t)
	addr, err := h.Listen("127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	h.RefuseDials(1)
	cfg := clientConfig(h.Server, "alice", alicePW)
	if c, err := ssh.Dial("tcp", addr, cfg); err == nil {
		c.Close()
		t.Fatal("RefuseDials did not apply to the second address")
	}
	c, err := ssh.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantOK(t, "on the second address", runOn(t, c, "hostname", ""), "node-1\n")
	h.Close()
	if c, err := ssh.Dial("tcp", addr, cfg); err == nil {
		c.Close()
		t.Fatal("the second address still answers after Close")
	}
}

func TestDelayCommands(t *testing.T) {
	h := newHost(t)
	c := h.client("alice")
	const d = 40 * time.Millisecond
	h.DelayCommands(d)
	start := time.Now()
	wantOK(t, "a delayed command", runOn(t, c, "echo late", ""), "late\n")
	if el := time.Since(start); el < d {
		t.Errorf("the command took %v, want at least the %v delay", el, d)
	}

	// Closing the session during the delay cancels the command: it never
	// runs and the transcript has no exit status for it.
	h.DelayCommands(time.Hour)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("touch /tmp/never"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exec request", func() bool { return len(h.Transcript()) == 2 })
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	sess.Close()
	if err := waitDone(t, done); err == nil {
		t.Error("a command cancelled during the delay succeeded")
	}
	waitFor(t, "the cancelled exec to end", func() bool { return !h.FS().Exists("/tmp/never") && len(h.Transcript()) == 2 })
	if tr := h.Transcript(); tr[1].Exit != -1 || len(h.CallsTo("touch")) != 0 {
		t.Errorf("transcript %+v, touch calls %+v: the cancelled command ran", tr, h.CallsTo("touch"))
	}

	// A signal during the delay ends it as well.
	sess, err = c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Start("touch /tmp/never"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second exec request", func() bool { return len(h.Transcript()) == 3 })
	go func() { done <- sess.Wait() }()
	if err := sess.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exit *ssh.ExitError
	if err := waitDone(t, done); !errors.As(err, &exit) || exit.Signal() != "TERM" {
		t.Errorf("Wait after SIGTERM during the delay: %v, want exit-signal TERM", err)
	}

	// Back to no delay: commands run at once again.
	h.DelayCommands(0)
	wantOK(t, "without delay", runOn(t, c, "echo now", ""), "now\n")
	if h.FS().Exists("/tmp/never") {
		t.Error("a cancelled command ran")
	}
}

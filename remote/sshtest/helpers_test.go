package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Passwords of the test users. Each is distinct so that a test can look
// for it in transcripts.
const (
	rootPW  = "root-Secret-1"
	alicePW = "alice-Secret-2" // sudo without a password
	bobPW   = "bob-Secret-3"   // sudo with his password
	carolPW = "carol-Secret-4" // not in sudoers
)

// testHost is a fake host with four users, and SSH clients for them.
type testHost struct {
	*Server
	t       testing.TB
	mu      sync.Mutex
	clients map[string]*ssh.Client
}

func newHost(t testing.TB) *testHost {
	t.Helper()
	return newHostFS(t, nil)
}

// newHostFS is newHost with a filesystem made by the test.
func newHostFS(t testing.TB, fsys *FS) *testHost {
	t.Helper()
	s := Start(t, Config{
		FS:       fsys,
		Hostname: "node-1",
		Users: []User{
			{Name: "root", Password: rootPW},
			{Name: "alice", Password: alicePW, Sudo: SudoNoPassword},
			{Name: "bob", Password: bobPW, Sudo: SudoPassword},
			{Name: "carol", Password: carolPW},
		},
	})
	return &testHost{Server: s, t: t, clients: map[string]*ssh.Client{}}
}

func passwordOf(user string) string {
	return map[string]string{"root": rootPW, "alice": alicePW, "bob": bobPW, "carol": carolPW}[user]
}

func clientConfig(s *Server, user, password string) *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.Password(password)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey()),
		Timeout:         10 * time.Second,
	}
}

func dial(t testing.TB, s *Server, user string) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial("tcp", s.Addr(), clientConfig(s, user, passwordOf(user)))
	if err != nil {
		t.Fatalf("dial as %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// client returns a connection as user, shared by the test.
func (h *testHost) client(user string) *ssh.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.clients[user]; c != nil {
		return c
	}
	c := dial(h.t, h.Server, user)
	h.clients[user] = c
	return c
}

// result is what one exec request gave.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// run executes command as user with stdin and returns the outcome.
func (h *testHost) run(user, command string, stdin ...string) result {
	h.t.Helper()
	return runOn(h.t, h.client(user), command, strings.Join(stdin, ""))
}

// sh runs command as alice, who may sudo without a password.
func (h *testHost) sh(command string, stdin ...string) result {
	h.t.Helper()
	return h.run("alice", command, stdin...)
}

func runOn(t testing.TB, c *ssh.Client, command, stdin string) result {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, &stderr
	sess.Stdin = strings.NewReader(stdin)
	err = sess.Run(command)
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitStatus()
	default:
		t.Fatalf("run %q: %v", command, err)
	}
	return r
}

// want checks a result against the expected stdout, stderr and status.
func want(t testing.TB, what string, got result, stdout, stderr string, code int) {
	t.Helper()
	if got.stdout != stdout || got.stderr != stderr || got.code != code {
		t.Errorf("%s:\n got %v\nwant %v", what, got, result{stdout, stderr, code})
	}
}

// wantOK checks that a command succeeded with the given output and
// nothing on stderr.
func wantOK(t testing.TB, what string, got result, stdout string) {
	t.Helper()
	want(t, what, got, stdout, "", 0)
}

// waitDone waits for the result of a session's Wait, failing the test
// after a generous deadline rather than hanging.
func waitDone(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
		return nil
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline. It is for waiting on events in other goroutines, never for
// timing.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func testSigner(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

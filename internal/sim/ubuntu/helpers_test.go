package ubuntu

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"golang.org/x/crypto/ssh"
)

const (
	rootPW   = "root-pw-7"
	ubuntuPW = "ubuntu-pw-8"
)

// vm is a simulated Ubuntu machine with SSH clients for root and ubuntu
// (who may sudo without a password).
type vm struct {
	*Machine
	t       testing.TB
	mu      sync.Mutex
	clients map[string]*ssh.Client
}

// newVM starts a fake host and makes it an Ubuntu machine.
func newVM(t testing.TB, opts Options) *vm {
	t.Helper()
	srv := sshtest.Start(t, sshtest.Config{
		Hostname: "node-1",
		Users: []sshtest.User{
			{Name: "root", Password: rootPW},
			{Name: "ubuntu", Password: ubuntuPW, Sudo: sshtest.SudoNoPassword},
		},
	})
	return &vm{Machine: Install(srv, opts), t: t, clients: map[string]*ssh.Client{}}
}

func (v *vm) client(user string) *ssh.Client {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c := v.clients[user]; c != nil {
		return c
	}
	pw := map[string]string{"root": rootPW, "ubuntu": ubuntuPW}[user]
	c, err := ssh.Dial("tcp", v.Server().Addr(), &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.Password(pw)},
		HostKeyCallback: ssh.FixedHostKey(v.Server().HostKey()),
		Timeout:         10 * time.Second,
	})
	if err != nil {
		v.t.Fatalf("dial as %s: %v", user, err)
	}
	v.t.Cleanup(func() { c.Close() })
	v.clients[user] = c
	return c
}

// result is what one command gave.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// runAs runs a command as user with the given standard input.
func (v *vm) runAs(user, command string, stdin ...string) result {
	v.t.Helper()
	sess, err := v.client(user).NewSession()
	if err != nil {
		v.t.Fatalf("session: %v", err)
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, &stderr
	sess.Stdin = strings.NewReader(strings.Join(stdin, ""))
	err = sess.Run(command)
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitStatus()
	default:
		v.t.Fatalf("run %q: %v", command, err)
	}
	return r
}

// root runs a command as root.
func (v *vm) root(command string, stdin ...string) result {
	v.t.Helper()
	return v.runAs("root", command, stdin...)
}

// user runs a command as ubuntu.
func (v *vm) user(command string, stdin ...string) result {
	v.t.Helper()
	return v.runAs("ubuntu", command, stdin...)
}

// mustOK runs a command as root and fails the test unless it succeeds.
func (v *vm) mustOK(command string) result {
	v.t.Helper()
	r := v.root(command)
	if r.code != 0 {
		v.t.Fatalf("%s: %v", command, r)
	}
	return r
}

// want checks a result exactly.
func want(t testing.TB, what string, got result, stdout, stderr string, code int) {
	t.Helper()
	if got.stdout != stdout || got.stderr != stderr || got.code != code {
		t.Errorf("%s:\n got %v\nwant %v", what, got, result{stdout, stderr, code})
	}
}

// wantCode checks the exit status and that stdout and stderr contain the
// given strings.
func wantCode(t testing.TB, what string, got result, code int, stdoutHas, stderrHas string) {
	t.Helper()
	if got.code != code || !strings.Contains(got.stdout, stdoutHas) || !strings.Contains(got.stderr, stderrHas) {
		t.Errorf("%s:\n got %v\nwant exit %d, stdout containing %q, stderr containing %q", what, got, code, stdoutHas, stderrHas)
	}
}

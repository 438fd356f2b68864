package remote_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Credentials of the fake host's accounts. The passwords are long and
// distinctive so that a leak is easy to find in any text.
const (
	ubuntuPassword = "ubuntu-Pa55word-7f3c"
	opsPassword    = "ops-Pa55word-91aa"
	guestPassword  = "guest-Pa55word-0b2e"
)

// suite collects every fake host and every log line of the package's tests,
// so that TestMain can check, after all tests ran, that no password reached
// any transcript or log.
var suite struct {
	mu    sync.Mutex
	hosts []*sshtest.Server
	logs  logBuffer
}

// allPasswords are the passwords the tests use, right and wrong.
var allPasswords = []string{ubuntuPassword, opsPassword, guestPassword, "not-the-Password-x1", "wrong-Sudo-Pass-55"}

func TestMain(m *testing.M) {
	code := m.Run()
	suite.mu.Lock()
	defer suite.mu.Unlock()
	texts := []string{suite.logs.String()}
	for _, srv := range suite.hosts {
		texts = append(texts, transcriptText(srv))
	}
	for _, text := range texts {
		for _, pw := range allPasswords {
			if strings.Contains(text, pw) {
				fmt.Fprintf(os.Stderr, "FAIL: password %s... appears in a transcript or log of the remote tests\n", pw[:4])
				code = 1
			}
		}
	}
	os.Exit(code)
}

// fakeHost starts a fake host with four accounts: root (key only), ubuntu
// (password, sudo with password), ops (key, passwordless sudo) and guest
// (password, no sudo). It returns the server and the ops account's private
// key in PEM.
func fakeHost(t testing.TB) (*sshtest.Server, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Config{Users: []sshtest.User{
		{Name: "root", AuthorizedKeys: []ssh.PublicKey{sshPub}},
		{Name: "ubuntu", Password: ubuntuPassword, Sudo: sshtest.SudoPassword},
		{Name: "ops", AuthorizedKeys: []ssh.PublicKey{sshPub}, Sudo: sshtest.SudoNoPassword},
		{Name: "guest", Password: guestPassword},
	}})
	suite.mu.Lock()
	suite.hosts = append(suite.hosts, srv)
	suite.mu.Unlock()
	return srv, string(pem.EncodeToMemory(block))
}

// logBuffer is a slog handler target that keeps every record as text.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// logger returns a debug-level logger that writes to l and to the suite's
// log.
func (l *logBuffer) logger() *slog.Logger {
	var w io.Writer = l
	if l != &suite.logs {
		w = io.MultiWriter(l, &suite.logs)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// dialAs connects to srv as user with the password of that account, logging
// into logs when it is not nil.
func dialAs(t testing.TB, srv *sshtest.Server, user, password string, logs *logBuffer) *remote.SSHHost {
	t.Helper()
	cfg := remote.Config{Addr: srv.Addr(), User: user, Password: remote.NewSecret(password), HostKey: srv.HostKeyPolicy()}
	if logs != nil {
		cfg.Logger = logs.logger()
	}
	return dial(t, cfg)
}

// dial connects with cfg; without a logger of its own, the host logs at
// debug level into the suite's log, which TestMain scans for passwords.
func dial(t testing.TB, cfg remote.Config) *remote.SSHHost {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = suite.logs.logger()
	}
	h, err := remote.Dial(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// testContext returns a context that ends with the test, with a generous
// deadline so that a hung test fails instead of blocking the suite.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// assertNoSecrets fails if any of the texts contains any secret.
func assertNoSecrets(t testing.TB, where string, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("secret %q leaked into %s:\n%s", s[:4]+"...", where, text)
		}
	}
}

// transcriptText joins everything a fake host recorded: exec requests and
// the argv of every program call.
func transcriptText(srv *sshtest.Server) string {
	var b strings.Builder
	for _, e := range srv.Transcript() {
		b.WriteString(e.Command)
		b.WriteByte('\n')
	}
	for _, c := range srv.Calls() {
		b.WriteString(strings.Join(c.Args, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

package kubeapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// reply is what a scripted program answers.
type reply struct {
	stdout, stderr string
	code           int
}

// ok answers stdout with status 0.
func ok(stdout string) reply { return reply{stdout: stdout} }

// notFound is kubectl's answer for a missing object (exit status 1 and
// "Error from server (NotFound): ..." from StandardErrorMessage in
// staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go).
func notFound(kind, name string) reply {
	return reply{stderr: `Error from server (NotFound): ` + kind + ` "` + name + `" not found` + "\n", code: 1}
}

// invocation is one run of a scripted program: its arguments after the
// program name (for kubectl, after --kubeconfig=...), its standard
// input, and the user it ran as.
type invocation struct {
	args  []string
	stdin string
	user  string
}

// line is the invocation's arguments joined by spaces.
func (i invocation) line() string { return strings.Join(i.args, " ") }

// script answers one invocation; fs is the host's filesystem as root.
type script func(inv invocation, fs *sshtest.FS) reply

// node is a fake host with a scripted kubectl, and an SDK connection to
// it as "ubuntu", who may sudo without a password.
type node struct {
	t   *testing.T
	ctx context.Context
	srv *sshtest.Server
	h   *remote.SSHHost

	mu      sync.Mutex
	kubectl script
	runs    map[string][]invocation // by program
}

func newNode(t *testing.T, name string) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	srv := sshtest.Start(t, sshtest.Config{
		Hostname: name,
		Users:    []sshtest.User{{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword}},
	})
	policy, err := remote.PinnedHostKey(string(ssh.MarshalAuthorizedKey(srv.HostKey())))
	if err != nil {
		t.Fatal(err)
	}
	h, err := remote.NewSSHHost(remote.Config{Name: name, Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	n := &node{t: t, ctx: ctx, srv: srv, h: h, runs: map[string][]invocation{}}
	srv.Handle("/usr/bin/kubectl", n.program("kubectl"))
	// The connection's sudo probe, out of the way of the transcript.
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	srv.ResetTranscript()
	return n
}

// program is the fake of prog: it records the invocation and answers
// with the test's script; without one, or for kubectl without the admin
// kubeconfig, it fails loudly.
func (n *node) program(prog string) sshtest.Program {
	return func(ctx context.Context, p *sshtest.Process) int {
		in, _ := io.ReadAll(p.Stdin)
		args := p.Args[1:]
		if prog == "kubectl" {
			if len(args) == 0 || args[0] != "--kubeconfig="+kubeapi.AdminKubeconfig {
				return p.Fail(2, "test kubectl: called without --kubeconfig=%s first: %q", kubeapi.AdminKubeconfig, args)
			}
			args = args[1:]
		}
		inv := invocation{args: slices.Clone(args), stdin: string(in), user: p.User}
		n.mu.Lock()
		n.runs[prog] = append(n.runs[prog], inv)
		s := n.kubectl
		n.mu.Unlock()
		if s == nil {
			return p.Fail(99, "test %s: no script for %q", prog, inv.line())
		}
		r := s(inv, p.Host.FS())
		io.WriteString(p.Stdout, r.stdout)
		io.WriteString(p.Stderr, r.stderr)
		return r.code
	}
}

// set installs kubectl's script.
func (n *node) set(kubectl script) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kubectl = kubectl
}

// invocations returns the runs of prog so far.
func (n *node) invocations(prog string) []invocation {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.runs[prog])
}

// lines returns the argument lines of prog's runs.
func (n *node) lines(prog string) []string {
	var out []string
	for _, inv := range n.invocations(prog) {
		out = append(out, inv.line())
	}
	return out
}

// reset forgets the runs and the transcript.
func (n *node) reset() {
	n.mu.Lock()
	n.runs = map[string][]invocation{}
	n.mu.Unlock()
	n.srv.ResetTranscript()
}

// kc returns a Kubectl on the node.
func (n *node) kc() kubeapi.Kubectl { return kubeapi.Kubectl{Host: n.h} }

// commands returns the command lines the server received.
func (n *node) commands() []string {
	var out []string
	for _, e := range n.srv.Transcript() {
		out = append(out, e.Command)
	}
	return out
}

// assertNoSecret fails when secret shows in any command line, any
// program's argv, or any of texts.
func (n *node) assertNoSecret(secret string, texts ...string) {
	n.t.Helper()
	if secret == "" {
		n.t.Fatal("assertNoSecret: empty secret")
	}
	for _, c := range n.commands() {
		if strings.Contains(c, secret) {
			n.t.Errorf("secret in command line %q", c)
		}
	}
	for _, c := range n.srv.Calls() {
		if strings.Contains(strings.Join(c.Args, " "), secret) {
			n.t.Errorf("secret in argv %q", c.Args)
		}
	}
	for _, s := range texts {
		if strings.Contains(s, secret) {
			n.t.Errorf("secret in %q", s)
		}
	}
}

// must fails the test on err.
func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// asJSON encodes v for a kubectl answer.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readyNode returns a Node with the given Ready status.
func readyNode(name string, ready corev1.ConditionStatus, reason, message string) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready, Reason: reason, Message: message},
		}},
	}
}

// paramsError checks that err is an *lcm.ParamsError with a problem at
// path.
func paramsError(t *testing.T, err error, path string) {
	t.Helper()
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v (%T), want an *lcm.ParamsError", err, err)
	}
	for _, p := range pe.Problems {
		if p.Path == path {
			return
		}
	}
	t.Fatalf("ParamsError %q has no problem at %s", pe, path)
}

// testCA returns a self-signed CA certificate in PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

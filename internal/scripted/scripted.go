// Package scripted is a fake host for unit tests of steps that run
// kubectl, kubeadm and the like: an sshtest server whose named programs
// (/usr/bin/kubectl, /usr/bin/kubeadm, ...) answer from Go scripts the
// test installs and record their invocations, with an SDK connection to
// it as "ubuntu", who may sudo without a password.
//
// It also holds the small helpers those tests share: answers ([OK],
// [NotFound], [AsJSON], [ReadyNode]), a CA ([TestCA]) and checks
// ([Must], [ParamsError]).
//
// It is test infrastructure: only _test.go files import it.
package scripted

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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Reply is what a scripted program answers.
type Reply struct {
	Stdout, Stderr string
	Code           int // the exit status
}

// OK answers stdout with status 0.
func OK(stdout string) Reply { return Reply{Stdout: stdout} }

// NotFound is kubectl's answer for a missing object (exit status 1 and
// "Error from server (NotFound): ..." from StandardErrorMessage in
// staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go).
func NotFound(kind, name string) Reply {
	return Reply{Stderr: `Error from server (NotFound): ` + kind + ` "` + name + `" not found` + "\n", Code: 1}
}

// Invocation is one run of a scripted program.
type Invocation struct {
	// Args are the arguments after the program name; for kubectl,
	// after --kubeconfig=[kubeapi.AdminKubeconfig].
	Args  []string
	Stdin string // the standard input, read whole
	User  string // the user it ran as
}

// Line is the invocation's arguments joined by spaces.
func (i Invocation) Line() string { return strings.Join(i.Args, " ") }

// Script answers one invocation; fs is the host's filesystem as root.
type Script func(inv Invocation, fs *sshtest.FS) Reply

// Host is a fake host with scripted programs, and an SDK connection to
// it as "ubuntu", who may sudo without a password.
type Host struct {
	T      *testing.T      // the test the host belongs to
	Ctx    context.Context // ends with the test, or after a minute
	Server *sshtest.Server // the fake host, with its filesystem and transcript
	Host   *remote.SSHHost // the SDK's connection to Server

	mu      sync.Mutex
	scripts map[string]Script       // by program; nil until Set
	runs    map[string][]Invocation // by program
}

// New starts a host named name whose programs (as "kubectl", installed
// as /usr/bin/kubectl) answer from the scripts [Host.Set] installs, and
// connects to it. Its transcript starts empty.
func New(t *testing.T, name string, programs ...string) *Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	srv := sshtest.Start(t, sshtest.Config{
		Hostname: name,
		Users:    []sshtest.User{{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword}},
	})
	h, err := remote.NewSSHHost(remote.Config{Name: name, Addr: srv.Addr(), User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	n := &Host{T: t, Ctx: ctx, Server: srv, Host: h, scripts: map[string]Script{}, runs: map[string][]Invocation{}}
	for _, prog := range programs {
		n.scripts[prog] = nil
		srv.Handle("/usr/bin/"+prog, n.program(prog))
	}
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
func (n *Host) program(prog string) sshtest.Program {
	return func(ctx context.Context, p *sshtest.Process) int {
		in, _ := io.ReadAll(p.Stdin)
		args := p.Args[1:]
		if prog == "kubectl" {
			if len(args) == 0 || args[0] != "--kubeconfig="+kubeapi.AdminKubeconfig {
				return p.Fail(2, "test kubectl: called without --kubeconfig=%s first: %q", kubeapi.AdminKubeconfig, args)
			}
			args = args[1:]
		}
		inv := Invocation{Args: slices.Clone(args), Stdin: string(in), User: p.User}
		n.mu.Lock()
		n.runs[prog] = append(n.runs[prog], inv)
		s := n.scripts[prog]
		n.mu.Unlock()
		if s == nil {
			return p.Fail(99, "test %s: no script for %q", prog, inv.Line())
		}
		r := s(inv, p.Host.FS())
		io.WriteString(p.Stdout, r.Stdout)
		io.WriteString(p.Stderr, r.Stderr)
		return r.Code
	}
}

// Set installs prog's script, replacing the one before; prog must be
// one of the programs [New] was given.
func (n *Host) Set(prog string, s Script) {
	n.T.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.scripts[prog]; !ok {
		n.T.Fatalf("scripted: Set(%q): the host has no such program", prog)
	}
	n.scripts[prog] = s
}

// Invocations returns the runs of prog so far.
func (n *Host) Invocations(prog string) []Invocation {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.runs[prog])
}

// Lines returns the argument lines of prog's runs.
func (n *Host) Lines(prog string) []string {
	var out []string
	for _, inv := range n.Invocations(prog) {
		out = append(out, inv.Line())
	}
	return out
}

// Reset forgets the runs and the transcript; the scripts stay.
func (n *Host) Reset() {
	n.mu.Lock()
	n.runs = map[string][]Invocation{}
	n.mu.Unlock()
	n.Server.ResetTranscript()
}

// Kubectl returns a Kubectl on the host.
func (n *Host) Kubectl() kubeapi.Kubectl { return kubeapi.Kubectl{Host: n.Host} }

// Commands returns the command lines the server received.
func (n *Host) Commands() []string {
	var out []string
	for _, e := range n.Server.Transcript() {
		out = append(out, e.Command)
	}
	return out
}

// AssertNoSecret fails the test when secret shows in any command line,
// any program's argv, or any of texts.
func (n *Host) AssertNoSecret(secret string, texts ...string) {
	n.T.Helper()
	if secret == "" {
		n.T.Fatal("AssertNoSecret: empty secret")
	}
	for _, c := range n.Commands() {
		if strings.Contains(c, secret) {
			n.T.Errorf("secret in command line %q", c)
		}
	}
	for _, c := range n.Server.Calls() {
		if strings.Contains(strings.Join(c.Args, " "), secret) {
			n.T.Errorf("secret in argv %q", c.Args)
		}
	}
	for _, s := range texts {
		if strings.Contains(s, secret) {
			n.T.Errorf("secret in %q", s)
		}
	}
}

// Must returns a function that fails the test on err and returns v
// otherwise: Must[T](t)(f()).
func Must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// AsJSON encodes v for a kubectl answer.
func AsJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ReadyNode returns a Node with the given Ready status.
func ReadyNode(name string, ready corev1.ConditionStatus, reason, message string) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready, Reason: reason, Message: message},
		}},
	}
}

// ParamsError fails the test unless err is an *lcm.ParamsError with a
// problem at path.
func ParamsError(t *testing.T, err error, path string) {
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

// TestCA returns a self-signed CA certificate in PEM, valid for an hour
// either side of now, and its key.
func TestCA(t *testing.T) (certPEM []byte, key *ecdsa.PrivateKey) {
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
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key
}

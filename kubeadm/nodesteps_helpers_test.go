package kubeadm_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// simNode is one simulated cluster VM and a connection to it as the
// drivers make it (login ubuntu, sudo with a password).
type simNode struct {
	t     *testing.T
	ctx   context.Context
	cloud *sim.Cloud
	host  *sim.Host
	ssh   *remote.SSHHost
}

// newSimNode starts a cloud made with opts holding a one-master cluster
// whose master has packages, and connects to the master.
func newSimNode(t *testing.T, opts sim.Options, packages ...string) *simNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, opts)
	h, c, err := cloud.SampleNode(ctx, packages...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &simNode{t: t, ctx: ctx, cloud: cloud, host: h, ssh: c}
}

// write puts a file on the node, creating its directory.
func (n *simNode) write(file, content string) {
	n.t.Helper()
	if err := n.host.FS().MkdirAll(file[:strings.LastIndex(file, "/")], 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := n.host.FS().WriteFile(file, []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// read returns a file of the node, "" when it is missing.
func (n *simNode) read(file string) string {
	b, _ := n.host.FS().ReadFile(file)
	return string(b)
}

// commands returns the SSH exec requests since the last reset, and
// resets the transcript.
func (n *simNode) commands() []string {
	var out []string
	for _, e := range n.host.SSH.Transcript() {
		out = append(out, e.Command)
	}
	n.host.SSH.ResetTranscript()
	return out
}

// twice runs step, checks that it changed the node and that a second run
// changes nothing, and returns the first result.
func (n *simNode) twice(name string, step func() (lcm.Result, error)) lcm.Result {
	n.t.Helper()
	first, err := step()
	if err != nil {
		n.t.Fatalf("%s: %v", name, err)
	}
	if !first.Changed {
		n.t.Errorf("%s: first run changed nothing", name)
	}
	n.commands()
	second, err := step()
	if err != nil {
		n.t.Fatalf("%s, second run: %v", name, err)
	}
	if second.Changed {
		n.t.Errorf("%s, second run: %v; commands:\n%s", name, second, strings.Join(n.commands(), "\n"))
	}
	return first
}

// noSecretIn fails when a secret shows in the node's transcripts (exec
// requests and program argv) or in s.
func (n *simNode) noSecretIn(secret string, s ...string) {
	n.t.Helper()
	for _, e := range n.host.SSH.Transcript() {
		if strings.Contains(e.Command, secret) {
			n.t.Errorf("secret in an exec request: %s", e.Command)
		}
	}
	for _, c := range n.host.SSH.Calls() {
		if strings.Contains(strings.Join(c.Args, " "), secret) {
			n.t.Errorf("secret in argv: %q", c.Args)
		}
	}
	for _, x := range s {
		if strings.Contains(x, secret) {
			n.t.Errorf("secret in %q", x)
		}
	}
}

// mode returns a file's permission bits and owner uid as "0600 0".
func (n *simNode) mode(file string) string {
	n.t.Helper()
	fi, err := n.host.FS().Stat(file)
	if err != nil {
		n.t.Fatal(err)
	}
	uid, _ := sshtest.Owner(fi)
	return fmt.Sprintf("%04o %d", fi.Mode().Perm(), uid)
}

// remoteCmd is a root command.
func remoteCmd(args ...string) remote.Cmd { return remote.Cmd{Args: args, Sudo: true} }

// failingHost is a host whose first command with argv prefix fails with a
// lost connection (remote.ErrConnectionLost), as a run cut short there
// would; every other command runs.
type failingHost struct {
	remote.Host
	prefix []string
	failed bool
}

// failFirst returns h with its first command whose argv starts with
// prefix failing.
func failFirst(h remote.Host, prefix ...string) *failingHost {
	return &failingHost{Host: h, prefix: prefix}
}

// Run runs cmd, or fails it.
func (f *failingHost) Run(ctx context.Context, cmd remote.Cmd) (remote.Output, error) {
	if !f.failed && len(cmd.Args) >= len(f.prefix) && slices.Equal(cmd.Args[:len(f.prefix)], f.prefix) {
		f.failed = true
		return remote.Output{ExitCode: -1}, &remote.CommandError{Host: f.Name(), Command: strings.Join(cmd.Args, " "), ExitCode: -1, Err: remote.ErrConnectionLost}
	}
	return f.Host.Run(ctx, cmd)
}

// WriteFiles writes as the host does.
func (f *failingHost) WriteFiles(ctx context.Context, files []remote.FileWrite) ([]bool, error) {
	return remote.WriteFiles(ctx, f.Host, files)
}

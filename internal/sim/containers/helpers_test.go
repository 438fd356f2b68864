package containers_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

const ubuntuPW = "ubuntu-pw-9"

// world is a few machines on a StaticNetwork.
type world struct {
	t   *testing.T
	ctx context.Context
	net *containers.StaticNetwork
	// containerd2 adds containerd.io 2.x to the catalogs of new nodes.
	containerd2 bool
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &world{t: t, ctx: ctx, net: &containers.StaticNetwork{}}
}

// node is a machine reached over SSH by the SDK's client as ubuntu, who
// may sudo without a password.
type node struct {
	*ubuntu.Machine
	w  *world
	h  *remote.SSHHost
	ip string
}

// node starts a machine at ip with packages installed.
func (w *world) node(hostname, ip string, pkgs ...string) *node {
	w.t.Helper()
	srv := sshtest.Start(w.t, sshtest.Config{
		Hostname: hostname,
		Users: []sshtest.User{
			{Name: "root", Password: "root-pw"},
			{Name: "ubuntu", Password: ubuntuPW, Sudo: sshtest.SudoNoPassword},
		},
	})
	cat := ubuntu.DefaultCatalog()
	containers.AddPackages(cat, w.net)
	if w.containerd2 {
		containers.AddContainerd2(cat)
	}
	m := ubuntu.Install(srv, ubuntu.Options{Catalog: cat, Packages: pkgs, UpdatedLists: true})
	w.net.AddMachine(ip, m)
	h, err := remote.NewSSHHost(remote.Config{Addr: srv.Addr(), Name: hostname, User: "ubuntu", Password: remote.NewSecret(ubuntuPW), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { h.Close() })
	return &node{Machine: m, w: w, h: h, ip: ip}
}

// result is what one command gave.
type result struct {
	stdout, stderr string
	code           int
}

var anyExit = func() []int {
	var out []int
	for i := 1; i < 256; i++ {
		out = append(out, i)
	}
	return out
}()

// run runs a shell command line, as root when sudo is set, with stdin.
func (n *node) run(sudo bool, command string, stdin ...string) result {
	n.w.t.Helper()
	cmd := remote.Cmd{Args: []string{"bash", "-c", command}, Sudo: sudo, OKExit: anyExit}
	if len(stdin) > 0 {
		cmd.Stdin = strings.NewReader(strings.Join(stdin, ""))
	}
	out, err := n.h.Run(n.w.ctx, cmd)
	if err != nil {
		n.w.t.Fatalf("%s: %s: %v", n.Hostname(), command, err)
	}
	return result{stdout: string(out.Stdout), stderr: string(out.Stderr), code: out.ExitCode}
}

// root runs a command as root.
func (n *node) root(command string, stdin ...string) result {
	n.w.t.Helper()
	return n.run(true, command, stdin...)
}

// ok runs a command as root and fails the test unless it succeeds.
func (n *node) ok(command string, stdin ...string) string {
	n.w.t.Helper()
	r := n.root(command, stdin...)
	if r.code != 0 {
		n.w.t.Fatalf("%s: %s: exit %d\nstdout: %s\nstderr: %s", n.Hostname(), command, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs a command as root and checks that it fails with code and a
// message containing want on stderr.
func (n *node) fails(command string, code int, want string) result {
	n.w.t.Helper()
	r := n.root(command)
	if r.code != code || !strings.Contains(r.stderr, want) {
		n.w.t.Errorf("%s: %s:\n got exit %d, stdout %q, stderr %q\nwant exit %d, stderr containing %q", n.Hostname(), command, r.code, r.stdout, r.stderr, code, want)
	}
	return r
}

// write writes a root file on the machine.
func (n *node) write(file, content string) {
	n.w.t.Helper()
	if err := n.Server().FS().WriteFile(file, []byte(content), 0o644); err != nil {
		n.w.t.Fatal(err)
	}
}

// sampleTar is the `docker save` archive of the tour's VNF package.
func sampleTar(t *testing.T) []byte {
	t.Helper()
	b, err := fs.ReadFile(samples.VNFPackage(), "Files/images/private_registry.tar")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const sampleID = "sha256:b9de31fcec104ad0dafdf36628113f648ad068c5316abf1b70fc078bda0706ef"

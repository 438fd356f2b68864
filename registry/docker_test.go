package registry_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// InstallDocker's command counts. Before package system: 6 fresh
// (detect-runtimes, apt-get update, apt-get install, test -e of the
// drop-in, systemctl is-active, docker version) and 4 converged. Now: 6
// fresh (detect-runtimes, dpkg-query, apt-get update, apt-get install,
// the unit's state and files in one command, docker version) and 3
// converged (detect-runtimes, unit state, docker version).
const (
	freshDockerCommands     = 6
	convergedDockerCommands = 3
)

// installDocker runs InstallDocker and returns its result's change flag
// and the commands it took.
func (n *node) installDocker(opts registry.DockerOptions) (bool, []string) {
	n.t.Helper()
	before := len(n.host.SSH.Transcript())
	res, err := registry.InstallDocker(n.ctx, n.ssh, opts)
	if err != nil {
		n.t.Fatalf("InstallDocker: %v", err)
	}
	var cmds []string
	for _, e := range n.host.SSH.Transcript()[before:] {
		cmds = append(cmds, e.Command)
	}
	return res.Changed, cmds
}

// InstallDocker's command counts are pinned (see freshDockerCommands).
func TestInstallDockerCommandCounts(t *testing.T) {
	n := newNodeWith(t)
	if _, err := n.ssh.Run(n.ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	changed, cmds := n.installDocker(registry.DockerOptions{})
	if !changed || !n.host.Machine.Installed("docker.io") || !n.host.Machine.Service("docker").Active {
		t.Fatalf("fresh node: changed %v, docker %+v", changed, n.host.Machine.Service("docker"))
	}
	t.Logf("fresh node: %d commands:\n%s", len(cmds), strings.Join(cmds, "\n"))
	if len(cmds) != freshDockerCommands {
		t.Errorf("fresh node: %d commands, want %d", len(cmds), freshDockerCommands)
	}
	changed, cmds = n.installDocker(registry.DockerOptions{})
	t.Logf("converged node: %d commands:\n%s", len(cmds), strings.Join(cmds, "\n"))
	if changed || len(cmds) != convergedDockerCommands {
		t.Errorf("converged node: changed %v, %d commands, want %d", changed, len(cmds), convergedDockerCommands)
	}
}

// The proxy drop-in restarts Docker once when it changes, never when it
// does not.
func TestInstallDockerRestartsOnlyForANewProxy(t *testing.T) {
	n := newNode(t)
	d := n.host.Machine.Service("docker")
	proxy := &system.Proxy{HTTPProxy: remote.NewSecret("http://proxy.example.com:3128"), NoProxy: "localhost"}
	changed, _ := n.installDocker(registry.DockerOptions{Proxy: proxy})
	after := n.host.Machine.Service("docker")
	if !changed || after.Restarts != d.Restarts+1 || containers.Docker(n.host.Machine).Config().HTTPProxy != "http://proxy.example.com:3128" {
		t.Errorf("proxy added: changed %v, restarts %d → %d, proxy %q", changed, d.Restarts, after.Restarts, containers.Docker(n.host.Machine).Config().HTTPProxy)
	}
	changed, cmds := n.installDocker(registry.DockerOptions{Proxy: proxy})
	if changed || len(cmds) != convergedDockerCommands || n.host.Machine.Service("docker").Restarts != after.Restarts {
		t.Errorf("same proxy: changed %v, %d commands", changed, len(cmds))
	}
}

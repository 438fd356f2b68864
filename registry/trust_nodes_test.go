package registry_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// newNodeWithRegistry is newNodeIn, and an HTTP registry serving app:1
// that the cloud's network reaches at 192.168.0.30:5000; the node finds
// it by name only through the connection's hosts_string.
func newNodeWithRegistry(t *testing.T, opts sim.Options, packages ...string) (*node, *sim.Cloud, registry.Connection) {
	t.Helper()
	n := newNodeIn(t, opts, packages...)
	reg := containers.NewRegistry(containers.RegistryOptions{})
	reg.Push("app:1")
	n.cloud.AddExternalRegistry("192.168.0.30", 5000, reg)
	conn := httpConn("registry.example.net:5000")
	conn.HostsString = "192.168.0.30 registry.example.net"
	return n, n.cloud, conn
}

// pulls reports how `sudo docker pull` and the kubelet (under containerd)
// fare with image.
func (n *node) pulls(cloud *sim.Cloud, image string) (docker, kubelet error) {
	n.t.Helper()
	_, docker = n.ssh.Run(n.ctx, remote.Cmd{Args: []string{"docker", "pull", image}, Sudo: true})
	return docker, containers.KubeletPull(n.ctx, cloud, n.host.Machine, image)
}

// debian gives the cloud's hosts Debian's login PATH.
var debian = sim.Options{Setup: func(h *sim.Host) error { return h.Machine.SetLoginPath(ubuntu.DebianLoginPath) }}

func TestDockerIsDetectedWhereTheLoginPATHLacksSbin(t *testing.T) {
	n, cloud, conn := newNodeWithRegistry(t, debian, "docker.io", "cri-tools")
	// As on Debian: the login user does not find /usr/sbin/dockerd by name.
	out, err := n.ssh.Run(n.ctx, remote.Cmd{Args: []string{"sh", "-c", `echo "$PATH"; command -v dockerd || echo none`}})
	if err != nil || !strings.HasSuffix(string(out.Stdout), "none\n") || strings.Contains(string(out.Stdout), "sbin") {
		t.Fatalf("login PATH on the Debian node: %q, %v", out.Stdout, err)
	}
	rts, err := system.DetectRuntimes(n.ctx, n.ssh)
	if err != nil || len(rts) != 2 || rts[0] != system.Docker || rts[1] != system.Containerd {
		t.Errorf("DetectRuntimes = %v, %v; want docker and containerd", rts, err)
	}
	if _, err := n.trust(conn); err != nil {
		t.Fatal(err)
	}
	img := conn.Server + "/app:1"
	if d, k := n.pulls(cloud, img); d != nil || k != nil {
		t.Errorf("after trust: docker pull: %v; kubelet pull: %v", d, k)
	}
	if res, err := n.trust(conn); err != nil || res.Changed {
		t.Errorf("second run: %+v, %v", res, err)
	}
}

func TestRegistryNamesSurviveCloudInitAtReboot(t *testing.T) {
	for _, manage := range []ubuntu.ManageEtcHosts{ubuntu.ManageEtcHostsTrue, ubuntu.ManageEtcHostsLocalhost, ubuntu.ManageEtcHostsFalse} {
		t.Run(string(manage), func(t *testing.T) {
			opts := sim.Options{Setup: func(h *sim.Host) error {
				if manage == ubuntu.ManageEtcHostsTrue {
					return nil // the image's own setting
				}
				return h.FS().WriteFile(ubuntu.CloudConfigFile, []byte("#cloud-config\nmanage_etc_hosts: "+manage+"\n"), 0o600)
			}}
			n, cloud, conn := newNodeWithRegistry(t, opts, "docker.io", "cri-tools")
			tmpl, _ := n.host.FS().ReadFile(registry.HostsTemplate)
			if _, err := n.trust(conn); err != nil {
				t.Fatal(err)
			}
			if err := n.host.Machine.Reboot(); err != nil {
				t.Fatal(err)
			}
			img := conn.Server + "/app:1"
			if d, k := n.pulls(cloud, img); d != nil || k != nil {
				hosts, _ := n.host.FS().ReadFile(registry.HostsFile)
				t.Errorf("after a reboot: docker pull: %v; kubelet pull: %v\n/etc/hosts:\n%s", d, k, hosts)
			}
			// The template still renders: its header is first, the block
			// last, and the rest as it was.
			now, _ := n.host.FS().ReadFile(registry.HostsTemplate)
			if !strings.HasPrefix(string(now), string(tmpl)) || !strings.HasSuffix(string(now), "# BEGIN mgmtkit private-registries\n"+strings.Replace(conn.HostsString, " ", "\t", 1)+"\n# END mgmtkit private-registries\n") {
				t.Errorf("template:\n%s", now)
			}
			if res, err := n.trust(conn); err != nil || res.Changed {
				t.Errorf("after the reboot, a second run: %+v, %v", res, err)
			}
			// Without the hosts line, the block goes from both files.
			conn.HostsString = ""
			if _, err := n.trust(conn); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{registry.HostsFile, registry.HostsTemplate} {
				if b, _ := n.host.FS().ReadFile(f); strings.Contains(string(b), "registry.example.net") {
					t.Errorf("%s keeps the name:\n%s", f, b)
				}
			}
		})
	}
}

// An empty connection list takes the block out of cloud-init's template
// too, even when /etc/hosts no longer has it (someone edited it) and the
// state file records nothing (no runtime was configured): the next
// reboot would bring the name back otherwise.
func TestNoConnectionsClearTheTemplateBlock(t *testing.T) {
	n, _, conn := newNodeWithRegistry(t, sim.Options{}, "docker.io", "cri-tools")
	hostsOnly := registry.TrustOptions{Runtimes: []system.Runtime{}}
	if _, err := registry.ConfigureRegistryTrust(n.ctx, n.ssh, []registry.Connection{conn}, hostsOnly); err != nil {
		t.Fatal(err)
	}
	hosts, err := n.host.FS().ReadFile(registry.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	edited, err := remote.ReplaceBlock(hosts, registry.HostsBlock, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.write(registry.HostsFile, string(edited))
	if res, err := registry.ConfigureRegistryTrust(n.ctx, n.ssh, nil, hostsOnly); err != nil || !res.Changed {
		t.Fatalf("no connections: %+v, %v", res, err)
	}
	if b, _ := n.host.FS().ReadFile(registry.HostsTemplate); strings.Contains(string(b), "registry.example.net") {
		t.Errorf("%s keeps the name:\n%s", registry.HostsTemplate, b)
	}
	if res, err := registry.ConfigureRegistryTrust(n.ctx, n.ssh, nil, hostsOnly); err != nil || res.Changed {
		t.Errorf("a second run without connections: %+v, %v", res, err)
	}
}

// dockerd resolves registry names with Go's resolver, which answers from
// the /etc/hosts it read up to 5 s ago: right after the run rewrote the
// file, `docker login` may fail with "no such host" (seen on the real
// dockerd 20.10 in realtest). The login is asked again until the cache
// must have expired; any other failure is reported at once.
func TestDockerLoginWaitsOutDockerdsHostsCache(t *testing.T) {
	const noSuchHost = "Error response from daemon: Get \"https://registry.example.com:5000/v2/\": dial tcp: lookup registry.example.com on 127.0.0.53:53: no such host\n"
	for _, tc := range []struct {
		name    string
		stderr  string
		wantErr bool
	}{
		{"stale hosts cache", noSuchHost, false},
		{"wrong password", "Error response from daemon: login attempt to https://registry.example.com:5000/v2/ failed with status: 401 Unauthorized\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			conn := n.serve("alice", "s3cret-pw")
			n.host.SSH.FailProgram("docker", 2, 1, tc.stderr)
			_, err := n.trust(conn)
			logins := len(n.host.SSH.CallsTo("docker"))
			if tc.wantErr {
				if err == nil || logins != 1 {
					t.Fatalf("err = %v after %d docker calls, want the failure after 1", err, logins)
				}
				return
			}
			if err != nil || logins != 3 {
				t.Fatalf("err = %v after %d docker calls, want success on the third", err, logins)
			}
			if _, err := n.ssh.Run(n.ctx, remote.Cmd{Args: []string{"docker", "pull", conn.Server + "/app:1"}, Sudo: true}); err != nil {
				t.Errorf("docker pull after the login: %v", err)
			}
		})
	}
}

// Two registries with credentials: both logins ride in the command that
// tells the daemons, each password on its own line of standard input, so
// that each registry gets its own and no password is ever an argument of
// any program the node runs.
func TestDockerLogsInToEveryRegistryWithoutPasswordsInArgv(t *testing.T) {
	n := newNode(t)
	a := n.serve("alice", "alice-Pa55-$x`y\\z")
	b := containers.NewRegistry(containers.RegistryOptions{Username: "bob", Password: "bob-Pa55-'q\"r"})
	b.Push("app:1")
	n.cloud.AddExternalRegistry("192.168.0.11", 5000, b)
	bc := httpConn("other.example.com:5000")
	bc.HostsString = "192.168.0.11 other.example.com"
	bc.Username, bc.Password = "bob", remote.NewSecret("bob-Pa55-'q\"r")
	res, err := n.trust(a, bc)
	if err != nil || !res.Changed {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, c := range []registry.Connection{a, bc} {
		if !strings.Contains(res.Detail, "docker logged in to "+c.Server) {
			t.Errorf("result does not say Docker logged in to %s: %s", c.Server, res.Detail)
		}
		if _, err := n.ssh.Run(n.ctx, remote.Cmd{Args: []string{"docker", "pull", c.Server + "/app:1"}, Sudo: true}); err != nil {
			t.Errorf("docker pull from %s after the login: %v", c.Server, err)
		}
	}
	if logins := n.host.SSH.CallsTo("docker"); len(logins) < 2 {
		t.Errorf("%d docker calls, want a login per registry", len(logins))
	}
	for _, pw := range []string{a.Password.Reveal(), bc.Password.Reveal()} {
		for _, c := range n.host.SSH.Calls() {
			if strings.Contains(strings.Join(c.Args, " "), pw) {
				t.Errorf("a password is in the argv of %q", c.Args[0])
			}
		}
		for _, e := range n.host.SSH.Transcript() {
			if strings.Contains(e.Command, pw) {
				t.Error("a password is in a command line")
			}
		}
	}
	if res, err := n.trust(a, bc); err != nil || res.Changed {
		t.Errorf("second run: %+v, %v", res, err)
	}
}

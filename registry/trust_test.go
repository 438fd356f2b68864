package registry_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// node is one cluster node with Docker and containerd, and a connection
// to it.
type node struct {
	t     *testing.T
	ctx   context.Context
	cloud *sim.Cloud
	host  *sim.Host
	ssh   *remote.SSHHost
}

func newNode(t *testing.T) *node {
	t.Helper()
	return newNodeWith(t, "docker.io", "cri-tools")
}

// newNodeWith is newNode with other packages than Docker's.
func newNodeWith(t *testing.T, packages ...string) *node {
	t.Helper()
	return newNodeIn(t, sim.Options{}, packages...)
}

// newNodeIn is newNodeWith in a cloud made with opts.
func newNodeIn(t *testing.T, opts sim.Options, packages ...string) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, opts)
	h, c, err := cloud.SampleNode(ctx, packages...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &node{t: t, ctx: ctx, cloud: cloud, host: h, ssh: c}
}

func (n *node) write(file, content string) {
	n.t.Helper()
	if err := n.host.FS().MkdirAll(file[:strings.LastIndex(file, "/")], 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := n.host.FS().WriteFile(file, []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) trust(conns ...registry.Connection) (lcm.Result, error) {
	return registry.ConfigureRegistryTrust(n.ctx, n.ssh, conns, registry.TrustOptions{})
}

func httpConn(server string) registry.Connection {
	t := registry.HTTP
	return registry.Connection{ConnectionType: &t, Server: server}
}

func TestContainerdKeepsItsSettingsAndGetsConfigPathOnce(t *testing.T) {
	n := newNode(t)
	n.write(registry.ContainerdConfig, `version = 2
# kubeadm wants the systemd cgroup driver
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
`)
	before := n.host.Machine.Service("containerd").Restarts
	if _, err := n.trust(httpConn("10.0.0.5:5000")); err != nil {
		t.Fatal(err)
	}
	b, err := n.host.FS().ReadFile(registry.ContainerdConfig)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := toml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("config.toml is no longer TOML: %v\n%s", err, b)
	}
	cri := cfg["plugins"].(map[string]any)["io.containerd.grpc.v1.cri"].(map[string]any)
	if cri["registry"].(map[string]any)["config_path"] != registry.ContainerdCertsDir {
		t.Errorf("config_path not set:\n%s", b)
	}
	runc := cri["containerd"].(map[string]any)["runtimes"].(map[string]any)["runc"].(map[string]any)["options"].(map[string]any)
	if runc["SystemdCgroup"] != true || cfg["version"] != int64(2) {
		t.Errorf("other settings lost:\n%s", b)
	}
	if got := n.host.Machine.Service("containerd").Restarts; got != before+1 {
		t.Errorf("containerd restarted %d times, want once", got-before)
	}
	if containers.Containerd(n.host.Machine).Config().ConfigPath != registry.ContainerdCertsDir {
		t.Error("containerd did not load config_path")
	}
	// A second registry needs only its hosts.toml: no restart.
	if _, err := n.trust(httpConn("10.0.0.5:5000"), httpConn("10.0.0.6:5000")); err != nil {
		t.Fatal(err)
	}
	if got := n.host.Machine.Service("containerd").Restarts; got != before+1 {
		t.Errorf("a new hosts.toml restarted containerd")
	}
	if !n.host.FS().Exists(registry.ContainerdCertsDir + "/10.0.0.6:5000/hosts.toml") {
		t.Error("no hosts.toml for the second registry")
	}
}

func TestADaemonLeftUntoldIsToldByTheNextRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		packages []string
		units    []string
		loaded   func(m *sim.Host) bool
	}{
		{"docker and containerd", []string{"docker.io", "cri-tools"}, []string{"docker", "containerd"}, func(h *sim.Host) bool {
			return slices.Contains(containers.Docker(h.Machine).Config().InsecureRegistries, "10.0.0.5:5000") &&
				containers.Containerd(h.Machine).Config().ConfigPath == registry.ContainerdCertsDir
		}},
		{"cri-o", []string{"cri-o", "cri-tools"}, []string{"crio"}, func(h *sim.Host) bool {
			return slices.ContainsFunc(containers.CRIO(h.Machine).Config().Registries, func(r containers.CRIORegistry) bool {
				return r.Location == "10.0.0.5:5000" && r.Insecure
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNodeWith(t, tc.packages...)
			counts := func() (c []int) {
				for _, u := range tc.units {
					s := n.host.Machine.Service(u)
					c = append(c, s.Restarts+s.Reloads)
				}
				return c
			}
			before := counts()
			// The files are written, then every systemctl fails once.
			n.host.SSH.FailProgram("systemctl", len(tc.units), 1, "Job failed: the unit is being reloaded\n")
			_, err := n.trust(httpConn("10.0.0.5:5000"))
			if err == nil || !strings.Contains(err.Error(), "systemctl try-") || !strings.Contains(err.Error(), "Job failed") {
				t.Fatalf("err = %v, want the failed systemctl", err)
			}
			if tc.loaded(n.host) {
				t.Fatal("the daemons loaded the files without a reload")
			}
			// The files are in place now: the next run must still reload.
			res, err := n.trust(httpConn("10.0.0.5:5000"))
			if err != nil || !res.Changed {
				t.Fatalf("rerun: %+v, %v", res, err)
			}
			if !tc.loaded(n.host) {
				t.Error("the rerun left the daemons with their old configuration")
			}
			for _, u := range tc.units {
				if n.host.FS().Exists(system.PendingMarker(u)) {
					t.Errorf("the pending reload of %s was not forgotten", u)
				}
			}
			after := counts()
			for i, u := range tc.units {
				if after[i] != before[i]+1 {
					t.Errorf("%s reloaded or restarted %d times, want once", u, after[i]-before[i])
				}
			}
			if res, err := n.trust(httpConn("10.0.0.5:5000")); err != nil || res.Changed || !slices.Equal(counts(), after) {
				t.Errorf("third run: %+v, %v, reloads %v (were %v)", res, err, counts(), after)
			}
		})
	}
}

func TestLegacyContainerdMirrorsAreRefusedNotMixed(t *testing.T) {
	n := newNode(t)
	legacy := `version = 2
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
  endpoint = ["https://mirror.example.com"]
`
	n.write(registry.ContainerdConfig, legacy)
	before := n.host.Machine.Service("containerd")
	hosts, _ := n.host.FS().ReadFile(registry.HostsFile)
	conn := httpConn("reg.example.com:5000")
	conn.HostsString = "10.0.0.5 reg.example.com"
	_, err := n.trust(conn)
	if err == nil || !strings.Contains(err.Error(), "registry.mirrors") || !strings.Contains(err.Error(), "config_path") {
		t.Fatalf("err = %v, want a refusal naming registry.mirrors and config_path", err)
	}
	if b, _ := n.host.FS().ReadFile(registry.ContainerdConfig); string(b) != legacy {
		t.Errorf("config.toml was changed:\n%s", b)
	}
	if after := n.host.Machine.Service("containerd"); after.Restarts != before.Restarts {
		t.Error("containerd was restarted")
	}
	// Refused before the first change: /etc/hosts and daemon.json are as
	// they were.
	if now, _ := n.host.FS().ReadFile(registry.HostsFile); string(now) != string(hosts) {
		t.Errorf("/etc/hosts changed:\n%s", now)
	}
	if n.host.FS().Exists(registry.DockerDaemonJSON) {
		t.Error("daemon.json was written")
	}
}

func TestABrokenDaemonJSONIsNotOverwritten(t *testing.T) {
	n := newNode(t)
	n.write(registry.DockerDaemonJSON, `{"log-driver": "journald",`)
	_, err := n.trust(httpConn("10.0.0.5:5000"))
	if err == nil || !strings.Contains(err.Error(), registry.DockerDaemonJSON) {
		t.Fatalf("err = %v, want one naming %s", err, registry.DockerDaemonJSON)
	}
	if b, _ := n.host.FS().ReadFile(registry.DockerDaemonJSON); string(b) != `{"log-driver": "journald",` {
		t.Errorf("daemon.json was changed: %s", b)
	}

	n.write(registry.DockerDaemonJSON, `{"log-driver": "journald", "insecure-registries": ["10.0.0.9:5000"]}`)
	if _, err := n.trust(httpConn("10.0.0.5:5000")); err != nil {
		t.Fatal(err)
	}
	b, _ := n.host.FS().ReadFile(registry.DockerDaemonJSON)
	if !strings.Contains(string(b), `"log-driver": "journald"`) || !strings.Contains(string(b), `"10.0.0.9:5000"`) || !strings.Contains(string(b), `"10.0.0.5:5000"`) {
		t.Errorf("daemon.json after the merge:\n%s", b)
	}
	if got := containers.Docker(n.host.Machine).Config().InsecureRegistries; len(got) != 2 {
		t.Errorf("Docker loaded insecure-registries %v, want both", got)
	}
}

// The daemon's restart marker is system's, shared with ConfigureUnit: a
// restart it owes Docker (its drop-in changed, the restart was lost) is
// paid by trust's run with a restart, not a reload, and a reload trust
// owes is paid by ConfigureUnit.
func TestTrustPaysARestartConfigureUnitOwes(t *testing.T) {
	n := newNodeWith(t, "docker.io", "cri-tools")
	m := system.PendingMarkerFile("docker", false)
	if err := n.host.FS().WriteFile(m.Path, m.Content, 0o644); err != nil {
		t.Fatal(err)
	}
	before := n.host.Machine.Service("docker")
	res, err := n.trust(httpConn("10.0.0.5:5000"))
	if err != nil || !strings.Contains(res.Detail, "systemctl try-restart docker") {
		t.Fatalf("%+v, %v: want docker restarted", res, err)
	}
	if after := n.host.Machine.Service("docker"); after.Restarts != before.Restarts+1 || after.Reloads != before.Reloads || n.host.FS().Exists(m.Path) {
		t.Errorf("docker %+v after %+v, marker left: %v", after, before, n.host.FS().Exists(m.Path))
	}

	// Trust's own reload, lost, is paid by ConfigureUnit.
	n.host.SSH.FailProgram("systemctl", 1, 1, "Job failed\n")
	if _, err := n.trust(httpConn("10.0.0.6:5000")); err == nil {
		t.Fatal("no failure")
	}
	if b, err := n.host.FS().ReadFile(m.Path); err != nil || !system.PendingReloadOnly(b) {
		t.Fatalf("marker %q, %v: want one that owes a reload", b, err)
	}
	before = n.host.Machine.Service("docker")
	if _, err := system.ConfigureUnit(n.ctx, n.ssh, system.UnitOptions{Unit: "docker"}); err != nil {
		t.Fatal(err)
	}
	if after := n.host.Machine.Service("docker"); after.Reloads+after.Restarts != before.Reloads+before.Restarts+1 || n.host.FS().Exists(m.Path) {
		t.Errorf("docker %+v after %+v", after, before)
	}
}

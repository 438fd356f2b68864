package registry_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// trustWorld is a node with Docker and containerd, and around it two
// registries serving app:1: mine, plain HTTP at 192.168.0.31:5000, and
// the cir sample's registry.example.com (HTTPS, the package's CA, basic
// auth) at 192.168.0.20.
type trustWorld struct {
	*node
	cloud *sim.Cloud
	pkg   *lcm.Package
}

const (
	plainServer = "192.168.0.31:5000"
	tlsServer   = "registry.example.com"
)

func newTrustWorld(t *testing.T) *trustWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, sim.Options{})
	_, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Packages: []string{"docker.io", "cri-tools"}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	pkg := samplePackage(t)
	ca, err := pkg.ReadFile("Files/registries/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	tls := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca, Username: "user01", Password: "user01"})
	tls.Push("app:1")
	cloud.AddExternalRegistry("192.168.0.20", 443, tls)
	plain := containers.NewRegistry(containers.RegistryOptions{})
	plain.Push("app:1")
	cloud.AddExternalRegistry("192.168.0.31", 5000, plain)
	h := v.HostsWithRole(lcm.RoleMaster)[0]
	c, err := cloud.Connect(ctx, h.Node(), "ubuntu", "ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &trustWorld{node: &node{t: t, ctx: ctx, host: h, ssh: c}, cloud: cloud, pkg: pkg}
}

// sampleConns are the cir sample's two connections
// (samples.InstantiateCIRCluster), validated.
func (w *trustWorld) sampleConns() []registry.Connection {
	w.t.Helper()
	var p registry.TrustParams
	if err := lcm.DecodeParams(json.RawMessage(`{"k8s_cluster_installation_param": {"private_registry_connection_info": [
		{"connection_type": "0", "server": "192.168.0.10:5000"},
		{"connection_type": "1", "server": "registry.example.com", "username": "user01", "password": "user01",
		 "certificate_path": "Files/registries/ca.crt", "hosts_string": "192.168.0.20 registry.example.com"}]}}`),
		lcm.DecodeOptions{Package: w.pkg}, lcm.Param(registry.ClusterParamKey, &p).Required()); err != nil {
		w.t.Fatal(err)
	}
	return p.PrivateRegistryConnectionInfo
}

// tlsConn is the sample's HTTPS connection.
func (w *trustWorld) tlsConn() registry.Connection {
	return w.sampleConns()[1]
}

// run configures trust and returns the result and the number of SSH
// commands it took on the open connection (whose sudo probe is done).
func (w *trustWorld) run(conns ...registry.Connection) (lcm.Result, int, error) {
	before := len(w.host.SSH.Transcript())
	res, err := registry.ConfigureRegistryTrust(w.ctx, w.ssh, conns, registry.TrustOptions{Package: w.pkg})
	return res, len(w.host.SSH.Transcript()) - before, err
}

// pulls reports, per image, whether the kubelet (containerd, the
// kubelet's config.json) and root's Docker can pull it.
func (w *trustWorld) pulls(images ...string) map[string][2]bool {
	w.t.Helper()
	out := map[string][2]bool{}
	for _, img := range images {
		kubelet := containers.KubeletPull(w.ctx, w.cloud, w.host.Machine, img) == nil
		_, err := w.ssh.Run(w.ctx, remote.Cmd{Args: []string{"docker", "pull", img}, Sudo: true})
		out[img] = [2]bool{kubelet, err == nil}
	}
	return out
}

func (w *trustWorld) read(file string) string {
	b, _ := w.host.FS().ReadFile(file)
	return string(b)
}

func (w *trustWorld) exists(file string) bool { return w.host.FS().Exists(file) }

// auths returns the keys of a Docker-style config.json's auths.
func (w *trustWorld) auths(file string) []string {
	var cfg struct{ Auths map[string]json.RawMessage }
	json.Unmarshal([]byte(w.read(file)), &cfg)
	var keys []string
	for k := range cfg.Auths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (w *trustWorld) insecure() []string {
	var cfg struct {
		Insecure []string `json:"insecure-registries"`
	}
	json.Unmarshal([]byte(w.read(registry.DockerDaemonJSON)), &cfg)
	return cfg.Insecure
}

// The pinned command counts, each run on a new connection as a driver's
// hook makes one (its first sudo command costs a probe): 5 on a fresh
// node with Docker and containerd and the cir sample's two registries
// (probe, read, compare, commit, tell the daemons and log in), 2 on a
// converged one (probe, read).
func TestTrustCommandCounts(t *testing.T) {
	w := newTrustWorld(t)
	run := func() (lcm.Result, int, error) {
		c, err := w.cloud.Connect(w.ctx, w.host.Node(), "ubuntu", "ubuntu")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		before := len(w.host.SSH.Transcript())
		res, err := registry.ConfigureRegistryTrust(w.ctx, c, w.sampleConns(), registry.TrustOptions{Package: w.pkg})
		return res, len(w.host.SSH.Transcript()) - before, err
	}
	if res, n, err := run(); err != nil || !res.Changed || n != 5 {
		t.Errorf("fresh node: %+v, %d commands, %v; want a change in 5", res, n, err)
	}
	if res, n, err := run(); err != nil || res.Changed || n != 2 {
		t.Errorf("converged node: %+v, %d commands, %v; want no change in 2", res, n, err)
	}
	if !w.exists(registry.TrustStateFile) {
		t.Error("no state file")
	}
}

func TestARespelledDuplicateIsRefusedBeforeAnythingRuns(t *testing.T) {
	w := newTrustWorld(t)
	_, n, err := w.run(httpConn("Registry.Example.com:5000"), httpConn("registry.example.com:5000"))
	if err == nil || !strings.Contains(err.Error(), `[1].server: "registry.example.com:5000" repeats private_registry_connection_info[0].server "Registry.Example.com:5000"`) {
		t.Errorf("err = %v, want the duplicate named", err)
	}
	if n != 0 {
		t.Errorf("%d commands ran", n)
	}
	for _, dir := range []string{"Registry.Example.com:5000", "registry.example.com:5000"} {
		if w.exists(registry.ContainerdCertsDir + "/" + dir) {
			t.Errorf("%s was configured", dir)
		}
	}
}

// Someone else's settings on the node, which mgmtkit must never take
// away: an insecure-registries entry for a registry the parameters name
// too, one for a registry they never name, a certs.d directory of their
// own, and a client certificate in the directory mgmtkit puts its CA in.
func (w *trustWorld) othersSettings() {
	w.write(registry.DockerDaemonJSON, `{"insecure-registries": ["10.9.9.9:5000", "192.168.0.10:5000"], "log-driver": "journald"}`)
	w.write(registry.ContainerdCertsDir+"/other.example.com/hosts.toml", "server = \"https://other.example.com\"\n")
	w.write(registry.DockerCertsDir+"/"+tlsServer+"/client.cert", "theirs\n")
}

func TestTrustIsDeclarative(t *testing.T) {
	w := newTrustWorld(t)
	w.othersSettings()
	vnf := httpConn("192.168.0.10:5000") // already in daemon.json: not mgmtkit's entry
	imgs := []string{plainServer + "/app:1", tlsServer + "/app:1"}
	if _, _, err := w.run(vnf, httpConn(plainServer), w.tlsConn()); err != nil {
		t.Fatal(err)
	}
	if got := w.pulls(imgs...); got[imgs[0]] != [2]bool{true, true} || got[imgs[1]] != [2]bool{true, true} {
		t.Fatalf("pulls (kubelet, docker) after configuring: %v", got)
	}
	restarts := w.host.Machine.Service("containerd").Restarts
	reloads := w.host.Machine.Service("docker").Reloads

	// Both registries dropped: their trust goes, nobody else's does.
	res, n, err := w.run(vnf)
	if err != nil || !res.Changed {
		t.Fatalf("dropping two registries: %+v, %v", res, err)
	}
	// sudo probe is not repeated: read (and detect), probe, commit
	// (daemon.json, kubelet config.json), remove, reload docker, logout,
	// probe and commit the state.
	if n != 8 {
		t.Errorf("the removal took %d commands, want 8", n)
	}
	if got := w.pulls(imgs...); got[imgs[0]] != [2]bool{} || got[imgs[1]] != [2]bool{} {
		t.Errorf("pulls (kubelet, docker) after dropping: %v, want all to fail", got)
	}
	for _, gone := range []string{
		registry.ContainerdCertsDir + "/" + plainServer,
		registry.ContainerdCertsDir + "/" + tlsServer,
		registry.DockerCertsDir + "/" + tlsServer + "/ca.crt",
	} {
		if w.exists(gone) {
			t.Errorf("%s is still there", gone)
		}
	}
	for _, kept := range []string{
		registry.ContainerdCertsDir + "/192.168.0.10:5000/hosts.toml",
		registry.ContainerdCertsDir + "/other.example.com/hosts.toml",
		registry.DockerCertsDir + "/" + tlsServer + "/client.cert",
	} {
		if !w.exists(kept) {
			t.Errorf("%s was removed", kept)
		}
	}
	if got := w.insecure(); !slices.Equal(got, []string{"10.9.9.9:5000", "192.168.0.10:5000"}) {
		t.Errorf("insecure-registries = %v, want only the two that were there before", got)
	}
	if !strings.Contains(w.read(registry.DockerDaemonJSON), "journald") {
		t.Error("daemon.json lost its other settings")
	}
	if got := w.auths(registry.KubeletAuthFile); len(got) != 0 {
		t.Errorf("the kubelet still has credentials for %v", got)
	}
	if got := w.auths(registry.DockerAuthFile); len(got) != 0 {
		t.Errorf("Docker is still logged in to %v", got)
	}
	if got := w.host.Machine.Service("docker").Reloads; got != reloads+1 {
		t.Errorf("docker reloaded %d times, want once", got-reloads)
	}
	if got := w.host.Machine.Service("containerd").Restarts; got != restarts {
		t.Errorf("containerd restarted %d times for removed hosts.toml files, want none", got-restarts)
	}
	if state := w.read(registry.TrustStateFile); strings.Contains(state, "user01") || strings.Contains(state, tlsServer) || strings.Contains(state, plainServer) {
		t.Errorf("the state still names a dropped registry or holds a credential:\n%s", state)
	}
	// On the open connection: the read (and detection), which finds every
	// file in place.
	if res, n, err := w.run(vnf); err != nil || res.Changed || n != 1 {
		t.Errorf("rerun: %+v, %d commands, %v; want no change in 1", res, n, err)
	}

	// No registries at all: what mgmtkit added goes; the entry that was
	// there before stays.
	if res, _, err := w.run(); err != nil || !res.Changed {
		t.Fatalf("empty list: %+v, %v", res, err)
	}
	if w.exists(registry.ContainerdCertsDir + "/192.168.0.10:5000") {
		t.Error("the last hosts.toml is still there")
	}
	if got := w.insecure(); !slices.Equal(got, []string{"10.9.9.9:5000", "192.168.0.10:5000"}) {
		t.Errorf("insecure-registries = %v", got)
	}
	if res, n, err := w.run(); err != nil || res.Changed || n != 1 {
		t.Errorf("empty list again: %+v, %d commands, %v; want no change in 1", res, n, err)
	}
}

func TestARespelledServerMovesItsFiles(t *testing.T) {
	w := newTrustWorld(t)
	if _, _, err := w.run(httpConn("Registry.Example.com:5000")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.run(httpConn("registry.example.com:5000")); err != nil {
		t.Fatal(err)
	}
	if w.exists(registry.ContainerdCertsDir + "/Registry.Example.com:5000") {
		t.Error("the old spelling's hosts.toml is still there")
	}
	if !w.exists(registry.ContainerdCertsDir + "/registry.example.com:5000/hosts.toml") {
		t.Error("no hosts.toml under the new spelling")
	}
	if got := w.insecure(); !slices.Equal(got, []string{"registry.example.com:5000"}) {
		t.Errorf("insecure-registries = %v", got)
	}
}

func TestAnInterruptedRemovalConvergesOnTheNextRun(t *testing.T) {
	for _, tc := range []struct {
		name, program string
		times         int
	}{
		// The files are gone, the logout fails: the state must still
		// remember the login.
		{"docker logout fails", "docker", 1},
		// The reload after the removal fails.
		{"systemctl fails", "systemctl", 1},
		// The commit of daemon.json and config.json fails: nothing is
		// removed yet.
		{"commit fails", "mktemp", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTrustWorld(t)
			if _, _, err := w.run(httpConn(plainServer), w.tlsConn()); err != nil {
				t.Fatal(err)
			}
			w.host.SSH.FailProgram(tc.program, tc.times, 1, "injected failure\n")
			if _, _, err := w.run(); err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			if !strings.Contains(w.read(registry.TrustStateFile), tlsServer) {
				t.Fatal("the state forgot the registry before its trust was gone")
			}
			if res, _, err := w.run(); err != nil || !res.Changed {
				t.Fatalf("rerun: %+v, %v", res, err)
			}
			for _, gone := range []string{registry.ContainerdCertsDir + "/" + plainServer, registry.DockerCertsDir + "/" + tlsServer} {
				if w.exists(gone) {
					t.Errorf("%s is still there", gone)
				}
			}
			if len(w.insecure()) != 0 || len(w.auths(registry.DockerAuthFile)) != 0 || len(w.auths(registry.KubeletAuthFile)) != 0 {
				t.Errorf("left: insecure %v, docker logins %v, kubelet auths %v", w.insecure(), w.auths(registry.DockerAuthFile), w.auths(registry.KubeletAuthFile))
			}
			if w.exists(system.PendingMarker("docker")) {
				t.Error("docker's reload is still pending")
			}
			if res, n, err := w.run(); err != nil || res.Changed || n != 1 {
				t.Errorf("third run: %+v, %d commands, %v", res, n, err)
			}
		})
	}
}

// A commit that fails half-way (here: a file where containerd's
// per-registry directory must go) has put Docker's CA in place; the state
// written before it lets the next run take it away.
func TestTheStateIsWrittenBeforeWhatItRecords(t *testing.T) {
	w := newTrustWorld(t)
	blocker := registry.ContainerdCertsDir + "/" + tlsServer
	w.write(blocker, "not a directory\n")
	if _, _, err := w.run(w.tlsConn()); err == nil {
		t.Fatal("no error with a file in the way")
	}
	if !w.exists(registry.DockerCertsDir + "/" + tlsServer + "/ca.crt") {
		t.Fatal("the commit did not get as far as Docker's CA: the test shows nothing")
	}
	if err := w.host.FS().Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.run(); err != nil {
		t.Fatal(err)
	}
	if w.exists(registry.DockerCertsDir + "/" + tlsServer) {
		t.Error("Docker's CA outlived the registry: the state did not record it")
	}
}

func TestCRIOForgetsADroppedRegistry(t *testing.T) {
	n := newNodeWith(t, "cri-o", "cri-tools")
	loaded := func() bool {
		return slices.ContainsFunc(containers.CRIO(n.host.Machine).Config().Registries, func(r containers.CRIORegistry) bool {
			return r.Location == "10.0.0.5:5000"
		})
	}
	if _, err := n.trust(httpConn("10.0.0.5:5000"), httpConn("10.0.0.6:5000")); err != nil || !loaded() {
		t.Fatalf("configuring: %v, loaded %v", err, loaded())
	}
	reloads := n.host.Machine.Service("crio").Reloads + n.host.Machine.Service("crio").Restarts
	if _, err := n.trust(httpConn("10.0.0.6:5000")); err != nil {
		t.Fatal(err)
	}
	if loaded() {
		t.Error("CRI-O still treats the dropped registry as insecure")
	}
	if n.host.FS().Exists(registry.CRIORegistriesDir + "/50-mgmtkit-10.0.0.5_5000.conf") {
		t.Error("the drop-in is still there")
	}
	if got := n.host.Machine.Service("crio").Reloads + n.host.Machine.Service("crio").Restarts; got != reloads+1 {
		t.Errorf("crio reloaded %d times, want once", got-reloads)
	}
	if res, err := n.trust(httpConn("10.0.0.6:5000")); err != nil || res.Changed {
		t.Errorf("rerun: %+v, %v", res, err)
	}
}

package registry_test

import (
	"encoding/json"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/samples"
)

// openCounter counts the opens of each file of a file system.
type openCounter struct {
	fs.FS
	mu    sync.Mutex
	opens map[string]int
}

func (c *openCounter) Open(name string) (fs.File, error) {
	c.mu.Lock()
	c.opens[name]++
	c.mu.Unlock()
	return c.FS.Open(name)
}

func (c *openCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens[name]
}

// The CA is read and checked once, by validation: trust installs what it
// read, and needs no package for it.
func TestTheCAIsReadOnceByValidation(t *testing.T) {
	w := newTrustWorld(t)
	fsys := &openCounter{FS: samples.VNFPackage(), opens: map[string]int{}}
	var p registry.TrustParams
	if err := lcm.DecodeParams(json.RawMessage(`{"k8s_cluster_installation_param": {"private_registry_connection_info": [
		{"connection_type": "1", "server": "registry.example.com", "username": "user01", "password": "user01",
		 "certificate_path": "./Files/registries/ca.crt", "hosts_string": "192.168.0.20  Registry.Example.com"}]}}`),
		lcm.DecodeOptions{Package: lcm.NewPackage(fsys)}, lcm.Param(registry.ClusterParamKey, &p).Required()); err != nil {
		t.Fatal(err)
	}
	const ca = "Files/registries/ca.crt"
	validation := fsys.count(ca) // a look at the file, and the read
	c := p.PrivateRegistryConnectionInfo[0]
	if e, ok := c.HostsEntry(); !ok || e.IP.String() != "192.168.0.20" || e.Name != "registry.example.com" {
		t.Errorf("HostsEntry() = %+v, %v", e, ok)
	}
	// No package: the CA comes with the connection.
	if _, err := registry.ConfigureRegistryTrust(w.ctx, w.ssh, p.PrivateRegistryConnectionInfo, registry.TrustOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := fsys.count(ca); n != validation {
		t.Errorf("trust opened %s %d times, want none", ca, n-validation)
	}
	want, _ := fs.ReadFile(samples.VNFPackage(), ca)
	for _, f := range []string{registry.DockerCertsDir + "/registry.example.com/ca.crt", registry.ContainerdCertsDir + "/registry.example.com/ca.crt"} {
		if got := w.read(f); got != string(want) {
			t.Errorf("%s = %q, want the package's CA", f, got)
		}
	}
	if !strings.Contains(w.read(registry.HostsFile), "\n192.168.0.20\tregistry.example.com\n") {
		t.Errorf("/etc/hosts lacks the canonical line:\n%s", w.read(registry.HostsFile))
	}
	if got := w.pulls("registry.example.com/app:1")["registry.example.com/app:1"]; got != [2]bool{true, true} {
		t.Errorf("kubelet, docker pull = %v, want both", got)
	}

	// Another package than validation's: the CA is read from that one.
	other := &openCounter{FS: samples.VNFPackage(), opens: map[string]int{}}
	if _, err := registry.ConfigureRegistryTrust(w.ctx, w.ssh, p.PrivateRegistryConnectionInfo, registry.TrustOptions{Package: lcm.NewPackage(other)}); err != nil {
		t.Fatal(err)
	}
	if other.count(ca) == 0 {
		t.Errorf("trust with another package did not read %s from it", ca)
	}
}

// A connection built in Go, or changed after validation, is parsed and
// read by the step itself, before anything runs; the caller's slice is
// left as it was.
func TestAConnectionBuiltInGoIsCheckedBeforeAnythingRuns(t *testing.T) {
	w := newTrustWorld(t)
	bad := httpConn("10.0.0.5:5000")
	bad.HostsString = "10.0.0.5 r.example.com; rm -rf /"
	_, n, err := w.run(bad)
	if err == nil || !strings.Contains(err.Error(), `private_registry_connection_info[0].hosts_string: must be "<IP address> <FQDN>"`) {
		t.Errorf("err = %v, want the hosts_string named", err)
	}
	if n != 0 {
		t.Errorf("%d commands ran", n)
	}
	tls := registry.HTTPS
	noCA := registry.Connection{ConnectionType: &tls, Server: "r.example.com", CertificatePath: "Files/registries/nope.crt"}
	if _, n, err := w.run(httpConn("10.0.0.5:5000"), noCA); err == nil || !strings.Contains(err.Error(), "private_registry_connection_info[1].certificate_path Files/registries/nope.crt:") || n != 0 {
		t.Errorf("missing CA: %v after %d commands, want the certificate_path named before any", err, n)
	}

	// Decoded, then changed: the new hosts_string counts, not the one
	// validation parsed.
	var p registry.TrustParams
	if err := lcm.DecodeParams(json.RawMessage(`{"k8s_cluster_installation_param": {"private_registry_connection_info": [
		{"connection_type": "0", "server": "plain.example.com:5000", "hosts_string": "192.168.0.30 plain.example.com"}]}}`),
		lcm.DecodeOptions{}, lcm.Param(registry.ClusterParamKey, &p).Required()); err != nil {
		t.Fatal(err)
	}
	conns := p.PrivateRegistryConnectionInfo
	conns[0].HostsString = "192.168.0.31 plain.example.com"
	if _, _, err := w.run(conns...); err != nil {
		t.Fatal(err)
	}
	if hosts := w.read(registry.HostsFile); !strings.Contains(hosts, "\n192.168.0.31\tplain.example.com\n") || strings.Contains(hosts, "192.168.0.30") {
		t.Errorf("/etc/hosts:\n%s", hosts)
	}
	if got := w.pulls("plain.example.com:5000/app:1")["plain.example.com:5000/app:1"]; got != [2]bool{true, true} {
		t.Errorf("kubelet, docker pull = %v, want both", got)
	}
	if e, _ := conns[0].HostsEntry(); e.String() != "192.168.0.31 plain.example.com" {
		t.Errorf("HostsEntry() = %v", e)
	}
}

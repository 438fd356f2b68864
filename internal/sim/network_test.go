package sim_test

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The cloud is the containers' network: hosts at their addresses and
// routes, external registries, Docker Hub; and every host's catalog has
// the container packages.
func TestCloudIsTheContainersNetwork(t *testing.T) {
	w := newWorld(t)
	v := w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 2})
	workers := v.HostsWithRole(lcm.RoleWorker)
	a, b := workers[0], workers[1]
	var network containers.Network = w.cloud

	if network.Machine(a.SSHAddress) != a.Machine || network.Machine(b.NICAddress) != b.Machine {
		t.Error("a host's own addresses do not reach it")
	}
	if network.Machine("192.168.0.10") != nil {
		t.Error("an unrouted address reaches a machine")
	}
	w.cloud.Route("192.168.0.10", a)
	if network.Machine("192.168.0.10") != a.Machine {
		t.Error("the route does not reach its host")
	}

	r := containers.NewRegistry(containers.RegistryOptions{})
	w.cloud.AddExternalRegistry("192.168.0.20", 443, r)
	if network.ExternalRegistry("192.168.0.20", 443) != r || network.ExternalRegistry("192.168.0.20", 5000) != nil {
		t.Error("the external registry is not at its address and port only")
	}
	if !network.Internet() {
		t.Error("no Internet by default")
	}
	w.cloud.SetInternet(false)
	if network.Internet() {
		t.Error("SetInternet(false) left the Internet on")
	}

	for _, pkg := range []string{"docker.io", "containerd", "cri-tools", "cri-o", "curl"} {
		if _, ok := a.Machine.Catalog().Lookup(pkg); !ok {
			t.Errorf("the hosts' catalog lacks %s", pkg)
		}
	}
	if p, _ := a.Machine.Catalog().Lookup("curl"); len(p.Tools) == 0 {
		t.Error("curl has no program")
	}

	// The route follows a heal that keeps the addresses, and stops at
	// one that does not.
	healed, err := v.Heal(a.ServerID, sim.HealOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if network.Machine("192.168.0.10") != healed.Machine {
		t.Error("the route did not follow the healed host")
	}
	w.cloud.Route("192.168.0.11", b)
	if _, err := v.Heal(b.ServerID, sim.HealOptions{NewAddresses: true}); err != nil {
		t.Fatal(err)
	}
	if network.Machine("192.168.0.11") != nil {
		t.Error("the route reaches a host at a new address")
	}
}

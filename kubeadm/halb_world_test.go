package kubeadm_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

func TestTheWorldRoutesThroughOurHAProxyAndKeepalived(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	world := n.cloud.Kube
	lb := kubeadm.APIServerLB{
		VIP: netip.MustParsePrefix("127.0.1.200/24"), Priority: 103, Interface: "ens3",
		Backends: []kubeadm.Backend{{Name: kubeadm.NodeName(lcm.RoleMaster, n.host.NICAddress), Address: n.host.NICAddress}},
	}
	n.twice("ConfigureHAProxy", func() (lcm.Result, error) { return kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb) })
	n.twice("ConfigureKeepalived", func() (lcm.Result, error) { return kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb) })
	if got := world().VIPHolder("127.0.1.200"); got != n.host.Machine {
		t.Errorf("the VIP is held by %v, want this master", got)
	}
	if w := world().ConfigWarnings(); len(w) > 0 {
		t.Errorf("the world warns: %q", w)
	}
	// HAProxy down: keepalived's check fails and the VIP is given up.
	if _, err := n.ssh.Run(n.ctx, remoteCmd("systemctl", "stop", "haproxy")); err != nil {
		t.Fatal(err)
	}
	if got := world().VIPHolder("127.0.1.200"); got != nil {
		t.Errorf("the VIP stays on a master without HAProxy")
	}
	if !strings.Contains(n.read(kubeadm.HAProxyConfig), "bind *:16443") {
		t.Error("haproxy.cfg")
	}
}

// Three masters, each with HAProxy over all three and keepalived with
// its own priority: the VIP is on the highest priority whose HAProxy
// runs, and moves when that HAProxy stops.
func TestTheVIPMovesBetweenThreeMasters(t *testing.T) {
	cloud := sim.Start(t, sim.Options{})
	world := cloud.Kube
	_, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 3})
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	masters := v.HostsWithRole(lcm.RoleMaster)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var backends []kubeadm.Backend
	for _, m := range masters {
		backends = append(backends, kubeadm.Backend{Name: kubeadm.NodeName(lcm.RoleMaster, m.NICAddress), Address: m.NICAddress})
	}
	conns := make([]*remote.SSHHost, len(masters))
	for i, m := range masters {
		c, err := cloud.Connect(ctx, m.Node(), "ubuntu", "ubuntu")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
		lb := kubeadm.APIServerLB{VIP: netip.MustParsePrefix("127.0.1.200/24"), Priority: 103 - i, Interface: "ens3", Backends: backends}
		if _, err := kubeadm.ConfigureHAProxy(ctx, c, lb); err != nil {
			t.Fatal(err)
		}
		if _, err := kubeadm.ConfigureKeepalived(ctx, c, lb); err != nil {
			t.Fatal(err)
		}
	}
	if got := world().VIPHolder("127.0.1.200"); got != masters[0].Machine {
		t.Fatalf("the VIP is on %v, want the first master", got)
	}
	if _, err := conns[0].Run(ctx, remoteCmd("systemctl", "stop", "haproxy")); err != nil {
		t.Fatal(err)
	}
	if got := world().VIPHolder("127.0.1.200"); got != masters[1].Machine {
		t.Errorf("the VIP is on %v after the first master's HAProxy stopped, want the second master", got)
	}
}

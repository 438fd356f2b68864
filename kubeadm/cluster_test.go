package kubeadm

import (
	"net/netip"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
)

func masters(addrs ...string) []lcm.Node {
	var ns []lcm.Node
	for i, a := range addrs {
		ns = append(ns, lcm.Node{Resource: "master-" + string(rune('a'+i)), Role: lcm.RoleMaster, NICAddress: a})
	}
	return ns
}

func TestTopologyEndpoints(t *testing.T) {
	single := Topology{Masters: masters("10.0.0.5")}
	if got := single.Endpoint(); got != "10.0.0.5:6443" {
		t.Errorf("single master endpoint %q", got)
	}
	if got := single.APIURL(); got != "https://10.0.0.5:6443" {
		t.Errorf("single master API URL %q", got)
	}
	single.FloatingIP = "203.0.113.7"
	if got := single.APIURL(); got != "https://203.0.113.7:6443" {
		t.Errorf("single master behind a floating IP: API URL %q", got)
	}
	ha := Topology{Masters: masters("10.0.0.5", "10.0.0.6", "10.0.0.7"), VIP: netip.MustParseAddr("10.0.0.100")}
	if got := ha.Endpoint(); got != "10.0.0.100:16443" {
		t.Errorf("HA endpoint %q", got)
	}
	if got := ha.APIURL(); got != "https://10.0.0.100:16443" {
		t.Errorf("HA API URL %q", got)
	}
	v6 := Topology{Masters: masters("fd00::5", "fd00::6"), VIP: netip.MustParseAddr("fd00::64")}
	if got := v6.Endpoint(); got != "[fd00::64]:16443" {
		t.Errorf("IPv6 HA endpoint %q", got)
	}
}

// Every master balances over every master; priorities are distinct, so
// that exactly one holds the VIP, and a healed master (same resource)
// keeps its priority.
func TestTopologyLoadBalancer(t *testing.T) {
	ha := Topology{Masters: masters("10.0.0.5", "10.0.0.6", "10.0.0.7"), VIP: netip.MustParseAddr("10.0.0.100")}
	seen := map[int]bool{}
	for _, m := range ha.Masters {
		lb := ha.LoadBalancer(m)
		if lb.VIP != netip.MustParsePrefix("10.0.0.100/32") || lb.Port != LoadBalancerPort || lb.RouterID != RouterID(ha.VIP) {
			t.Errorf("%s: %+v", m.Resource, lb)
		}
		if len(lb.Backends) != 3 || lb.Backends[1].Address != "10.0.0.6" || lb.Backends[1].Name != NodeName(lcm.RoleMaster, "10.0.0.6") {
			t.Errorf("%s: backends %+v", m.Resource, lb.Backends)
		}
		if seen[lb.Priority] || lb.Priority < 1 || lb.Priority > 254 {
			t.Errorf("%s: priority %d repeated or outside VRRP's 1-254", m.Resource, lb.Priority)
		}
		seen[lb.Priority] = true
	}
	healed := ha
	healed.Masters = masters("10.0.0.5", "10.0.0.6", "10.0.0.9") // master-c came back at a new address
	if a, b := ha.LoadBalancer(ha.Masters[2]).Priority, healed.LoadBalancer(healed.Masters[2]).Priority; a != b {
		t.Errorf("healed master's priority %d, was %d", b, a)
	}
	rest := ha.Without(ha.Masters[1:2])
	if lb := rest.LoadBalancer(rest.Masters[0]); len(lb.Backends) != 2 || lb.Backends[1].Address != "10.0.0.7" {
		t.Errorf("without master-b: backends %+v", lb.Backends)
	}
	if len(ha.Masters) != 3 {
		t.Error("Without changed its receiver")
	}
	for _, vip := range []string{"10.0.0.0", "10.0.0.255", "10.0.0.254", "fd00::ff"} {
		if id := RouterID(netip.MustParseAddr(vip)); id < 1 || id > 255 {
			t.Errorf("RouterID(%s) = %d, want 1-255", vip, id)
		}
	}
}

func TestTopologyHostsEntries(t *testing.T) {
	topo := Topology{Masters: masters("10.0.0.5"), Workers: []lcm.Node{{Resource: "w", Role: lcm.RoleWorker, NICAddress: "10.0.0.12"}}}
	got := topo.HostsEntries()
	if len(got) != 2 || got[1].IP != "10.0.0.12" || got[1].Names[0] != NodeName(lcm.RoleWorker, "10.0.0.12") {
		t.Errorf("hosts entries %+v", got)
	}
}

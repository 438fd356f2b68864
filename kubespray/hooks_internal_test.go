package kubespray

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// TestParseMTU reads the MTU of the interface that holds an address from
// iproute2's `ip addr show`.
func TestParseMTU(t *testing.T) {
	out := []byte(`1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc fq_codel state UP group default qlen 1000
    link/ether fa:16:3e:aa:bb:cc brd ff:ff:ff:ff:ff:ff
    altname enp0s3
    inet 10.10.0.5/24 metric 100 brd 10.10.0.255 scope global dynamic ens3
       valid_lft 85000sec preferred_lft 85000sec
    inet6 fe80::f816:3eff:feaa:bbcc/64 scope link
       valid_lft forever preferred_lft forever
`)
	if mtu, err := parseMTU(out, "10.10.0.5"); err != nil || mtu != 1450 {
		t.Errorf("10.10.0.5: %d, %v; want 1450", mtu, err)
	}
	if mtu, err := parseMTU(out, "127.0.0.1"); err != nil || mtu != 65536 {
		t.Errorf("127.0.0.1: %d, %v; want 65536", mtu, err)
	}
	if _, err := parseMTU(out, "10.10.0.6"); err == nil {
		t.Error("an address no interface holds has an MTU")
	}
}

// TestAnEvenNumberOfMastersIsAFieldError: kubespray refuses an even
// number of etcd members; the hooks refuse it first, at master_node.
func TestAnEvenNumberOfMastersIsAFieldError(t *testing.T) {
	topo := topology{
		masters: []lcm.Node{{Role: lcm.RoleMaster, Resource: "m1", SSHAddress: "10.0.0.1", NICAddress: "10.0.0.1"}, {Role: lcm.RoleMaster, Resource: "m2", SSHAddress: "10.0.0.2", NICAddress: "10.0.0.2"}},
	}
	_, err := topo.inventory()
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || pe.Problems[0].Path != ClusterParamKey+".master_node" || !strings.Contains(err.Error(), "2 masters") {
		t.Errorf("err = %v", err)
	}
	topo.masters = topo.masters[:1]
	if inv, err := topo.inventory(); err != nil || len(inv.ControlPlane) != 1 || inv.ControlPlane[0].Name != "master-10-0-0-1" {
		t.Errorf("one master: %+v, %v", inv, err)
	}
}

// TestEndpointHost reads the host of an API endpoint URL.
func TestEndpointHost(t *testing.T) {
	for in, want := range map[string]string{"https://10.0.0.9:8383": "10.0.0.9", "https://[fd00::9]:8383": "fd00::9", "https://lb.example.com:443": "lb.example.com"} {
		if got := endpointHost(in); got != want {
			t.Errorf("endpointHost(%q) = %q, want %q", in, got, want)
		}
	}
}

package kubeadm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/system"
)

// The port of the control plane's load balancer ([APIServerPort] is
// every master's API server's).
const (
	// LoadBalancerPort is where HAProxy listens on every master of a
	// cluster with several masters, in front of their API servers; the
	// cluster's endpoint is the virtual IP at this port.
	LoadBalancerPort = 16443
)

// Topology is a cluster as one hook sees it: its masters and workers as
// Heat reports them now, and where its API answers.
type Topology struct {
	// Masters are the control-plane nodes by resource name: an order a
	// heal does not change (the healed VM keeps its resource), so that
	// the first master, which kubeadm init runs on, and the keepalived
	// priorities stay put.
	// Workers are the workers as [lcm.CompareNodes] orders them.
	Masters, Workers []lcm.Node
	// VIP is the virtual IP keepalived holds on one of the masters when
	// there are several; invalid with a single master.
	VIP netip.Addr
	// FloatingIP is cluster_fip_name's address, empty when not given:
	// where the VNFM reaches the API from outside.
	FloatingIP string
	// Others are the VMs of the VNF that are not Kubernetes nodes: those
	// of the hooks' extensions (the storage server, ...), each with its
	// role.
	Others []lcm.Node
}

// HA reports whether the cluster has several masters behind a virtual IP.
func (t Topology) HA() bool { return t.VIP.IsValid() }

// Endpoint returns the control-plane endpoint nodes join and kubectl
// talks to, host:port: the single master's address at
// [APIServerPort], or the virtual IP at [LoadBalancerPort].
func (t Topology) Endpoint() string {
	if t.HA() {
		return net.JoinHostPort(t.VIP.String(), strconv.Itoa(LoadBalancerPort))
	}
	return net.JoinHostPort(t.Masters[0].NICAddress, strconv.Itoa(APIServerPort))
}

// APIURL returns the URL the VNFM reaches the API at: the floating IP
// when there is one (at the endpoint's port), else the endpoint.
func (t Topology) APIURL() string {
	if t.FloatingIP == "" {
		return "https://" + t.Endpoint()
	}
	_, port, _ := net.SplitHostPort(t.Endpoint())
	return "https://" + net.JoinHostPort(t.FloatingIP, port)
}

// All returns every VM: the masters, the workers and the others.
func (t Topology) All() []lcm.Node { return slices.Concat(t.Masters, t.Workers, t.Others) }

// Nodes returns the masters then the workers.
func (t Topology) Nodes() []lcm.Node { return slices.Concat(t.Masters, t.Workers) }

// Without returns t without the nodes gone (compared by resource).
func (t Topology) Without(gone []lcm.Node) Topology {
	drop := func(n lcm.Node) bool {
		return slices.ContainsFunc(gone, func(g lcm.Node) bool { return g.Resource == n.Resource })
	}
	t.Masters = slices.DeleteFunc(slices.Clone(t.Masters), drop)
	t.Workers = slices.DeleteFunc(slices.Clone(t.Workers), drop)
	t.Others = slices.DeleteFunc(slices.Clone(t.Others), drop)
	return t
}

// HostsEntries returns the /etc/hosts lines that name every node
// ([ClusterHosts]).
func (t Topology) HostsEntries() []system.HostsEntry {
	addrs := func(ns []lcm.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.NICAddress)
		}
		return out
	}
	return ClusterHosts(addrs(t.Masters), addrs(t.Workers))
}

// LoadBalancer returns the HAProxy and keepalived settings of master m:
// every master a backend, and a keepalived priority that is distinct per
// master (the first master highest) so that the VIP has one holder.
func (t Topology) LoadBalancer(m lcm.Node) APIServerLB {
	lb := APIServerLB{
		VIP:      netip.PrefixFrom(t.VIP, t.VIP.BitLen()),
		Port:     LoadBalancerPort,
		RouterID: RouterID(t.VIP),
		Priority: 150,
	}
	for i, n := range t.Masters {
		lb.Backends = append(lb.Backends, Backend{Name: NodeName(lcm.RoleMaster, n.NICAddress), Address: n.NICAddress})
		if n.Resource == m.Resource {
			lb.Priority = 150 - 10*i
			lb.NodeAddress, _ = netip.ParseAddr(n.NICAddress)
		}
	}
	return lb
}

// RouterID returns the VRRP virtual_router_id of a cluster: 1 to 255,
// from the virtual IP's last byte, so that clusters whose VIPs differ in
// it do not collide on one network (VRRP routers of one network must use
// distinct IDs, RFC 5798 section 5.2.3).
func RouterID(vip netip.Addr) int {
	b := vip.As16()
	return int(b[15])%255 + 1
}

// Resolve reads the cluster's topology from Heat through s: the nodes of
// p's groups, the VMs of extra (the extensions' groups: the storage
// server, ...) and, with several masters, the virtual IP
// (cluster_cp_name) and floating IP (cluster_fip_name). A cluster with
// several masters and no cluster_cp_name is an [*lcm.ParamsError].
func Resolve(ctx context.Context, s *plumbing.Session, p ClusterParams, extra ...heat.Group) (Topology, error) {
	nodes, err := s.Nodes(ctx, slices.Concat(p.Groups(), extra)...)
	if err != nil {
		return Topology{}, err
	}
	var t Topology
	t.Masters = lcm.NodesWithRole(nodes, lcm.RoleMaster)
	t.Workers = lcm.NodesWithRole(nodes, lcm.RoleWorker)
	t.Others = slices.DeleteFunc(slices.Clone(nodes), func(n lcm.Node) bool { return n.Role == lcm.RoleMaster || n.Role == lcm.RoleWorker })
	slices.SortFunc(t.Masters, func(a, b lcm.Node) int { return cmp.Compare(a.Resource, b.Resource) })
	slices.SortFunc(t.Workers, lcm.CompareNodes)
	if len(t.Masters) == 0 {
		return t, errors.New("kubeadm: the VNF has no master node")
	}
	mn := p.MasterNode
	if len(t.Masters) == 1 && mn.ClusterFIPName == "" {
		return t, nil
	}
	if mn.ClusterCPName == "" {
		if len(t.Masters) > 1 {
			return t, &lcm.ParamsError{Problems: []lcm.Problem{{
				Path:    ClusterParamKey + ".master_node.cluster_cp_name",
				Message: fmt.Sprintf("is required with %d masters: it is the virtual IP in front of their API servers", len(t.Masters)),
			}}}
		}
		// One master, a floating IP: the FIP fronts the master itself.
		fip, err := s.Heat().CPAddress(ctx, s.Stack(), mn.ClusterFIPName)
		t.FloatingIP = fip
		return t, err
	}
	addr, err := s.Heat().ClusterAddress(ctx, s.Stack(), mn.Group(lcm.RoleMaster), mn.ClusterCPName, mn.ClusterFIPName)
	if err != nil {
		return t, err
	}
	t.FloatingIP = addr.FloatingIP
	if len(t.Masters) > 1 {
		if t.VIP, err = netip.ParseAddr(addr.IP); err != nil {
			return t, fmt.Errorf("kubeadm: cluster_cp_name %s: address %q: %w", mn.ClusterCPName, addr.IP, err)
		}
		if slices.ContainsFunc(t.Masters, func(n lcm.Node) bool { return n.NICAddress == addr.IP }) {
			return t, fmt.Errorf("kubeadm: cluster_cp_name %s has the address %s of a master, not a virtual IP of its own", mn.ClusterCPName, addr.IP)
		}
	}
	return t, nil
}

package kubeadm

import (
	"net/netip"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/system"
)

// NodeName returns the Kubernetes node name, which is also the host name,
// of the node of role whose cluster (NIC) address is nicAddress:
// "master-10-0-0-5", "worker-10-0-0-12"; an IPv6 address has its colons
// written as dashes ("worker-fd00--12"). Unlike the reference's
// master<last octet>, the name is unique per address, so two nodes in
// different /24s never collide.
//
// A valid address is written in its canonical form (netip), so
// "10.0.0.05" and "10.0.0.5" give one name; an IPv4-mapped IPv6 address
// is written as its IPv4 address. Anything else is used as given, lower
// case, with every character that a host name cannot hold replaced by a
// dash: NodeName never fails, and callers pass addresses Heat reported.
func NodeName(role lcm.Role, nicAddress string) string {
	addr := nicAddress
	if a, err := netip.ParseAddr(nicAddress); err == nil {
		addr = a.Unmap().WithZone("").String()
	}
	var b strings.Builder
	b.WriteString(string(role))
	b.WriteByte('-')
	for _, r := range strings.ToLower(addr) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// ClusterHosts returns the lines of the cluster's /etc/hosts block (see
// [PrepareNode] and [UpdateHosts]): each master's and worker's cluster
// (NIC) address with its [NodeName], masters first, in the given order.
// An address given twice is listed once, under its first role.
func ClusterHosts(masters, workers []string) []system.HostsEntry {
	var out []system.HostsEntry
	seen := map[string]bool{}
	for _, g := range []struct {
		role  lcm.Role
		addrs []string
	}{{lcm.RoleMaster, masters}, {lcm.RoleWorker, workers}} {
		for _, a := range g.addrs {
			if seen[a] {
				continue
			}
			seen[a] = true
			out = append(out, system.HostsEntry{IP: a, Names: []string{NodeName(g.role, a)}})
		}
	}
	return out
}

package kubeadm

import (
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/system"
)

// NodeName returns the Kubernetes node name, which is also the host name,
// of the node of role whose cluster (NIC) address is nicAddress:
// [kubeapi.NodeName], the one naming every cluster of mgmtkit's uses,
// kubeadm's and kubespray's.
func NodeName(role lcm.Role, nicAddress string) string { return kubeapi.NodeName(role, nicAddress) }

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

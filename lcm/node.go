package lcm

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Role is what a VM of a Kubernetes-cluster VNF is for.
type Role string

// The roles of the specs' topologies.
const (
	// RoleMaster is a Kubernetes control-plane node.
	RoleMaster Role = "master"
	// RoleWorker is a Kubernetes worker node.
	RoleWorker Role = "worker"
	// RoleStorage is the storage server that exports NFS volumes.
	RoleStorage Role = "storage"
	// RoleLoadBalancer is the external load balancer in front of the
	// masters (kubespray).
	RoleLoadBalancer Role = "loadbalancer"
	// RoleRegistry is the VM of a private registry VNF.
	RoleRegistry Role = "registry"
	// RoleAnsible is kubespray's Ansible server: a VM outside the VNF's
	// stacks that the request names by address (ansible.ip_address).
	RoleAnsible Role = "ansible"
)

// Node is one VM of a VNF as the VIM reports it: where to reach it and
// which resources it is made of. Package heat resolves nodes from Heat
// stacks; a test or a VNFM with its own inventory may build them directly.
//
// A Node carries no credentials: the hook pairs it with the username and
// password of its role's parameters when it dials.
type Node struct {
	// Resource is the node's name in the VIM: the name of its member
	// resource in the scaling group (what Tacker passes as
	// scale_name_list), or of its server resource when the node is not in
	// a group. Unique within a VNF.
	Resource string `json:"resource"`
	// Role is what the node is for.
	Role Role `json:"role"`
	// Aspect is the scaling aspect (AutoScalingGroup) the node belongs to;
	// empty for a node in the top-level stack.
	Aspect string `json:"aspect,omitempty"`
	// SSHAddress is the IP address the management driver reaches the node
	// at: the floating IP when the SSH connection point is a floating IP,
	// else the first fixed IP of the SSH port.
	SSHAddress string `json:"sshAddress"`
	// NICAddress is the node's IP address on the cluster network (the
	// first fixed IP of its NIC connection point); the address Kubernetes
	// and NFS clients use.
	NICAddress string `json:"nicAddress"`
	// ServerID is the Nova server UUID: the computeResource.resourceId of
	// the node's VnfcResourceInfo.
	ServerID string `json:"serverId"`
	// StackID is the ID of the member stack that holds the node's
	// resources; for a node in the top-level stack, that stack's ID.
	StackID string `json:"stackId"`
	// CreatedAt is when the VIM created the node (the member resource's
	// creation time); scale-in picks the oldest first.
	CreatedAt time.Time `json:"createdAt"`
}

// Name returns n.Resource, so that nodes can be fanned out over with
// [OnHosts] and reported by name.
func (n Node) Name() string { return n.Resource }

// String returns a one-line description for logs and errors.
func (n Node) String() string {
	return fmt.Sprintf("%s %s (ssh %s, nic %s)", n.Role, n.Resource, n.SSHAddress, n.NICAddress)
}

// LogValue reports a node as a group of its identifying attributes.
func (n Node) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("resource", n.Resource),
		slog.String("role", string(n.Role)),
		slog.String("ssh", n.SSHAddress),
		slog.String("nic", n.NICAddress),
		slog.String("server", n.ServerID),
	)
}

// CompareNodes orders nodes by role (in the order of the Role constants),
// then creation time, then resource name: the deterministic order in which
// heat returns nodes and hooks visit them. Use it with slices.SortFunc.
func CompareNodes(a, b Node) int {
	return cmp.Or(
		cmp.Compare(roleRank(a.Role), roleRank(b.Role)),
		a.CreatedAt.Compare(b.CreatedAt),
		cmp.Compare(a.Resource, b.Resource),
	)
}

func roleRank(r Role) int {
	i := slices.Index([]Role{RoleMaster, RoleWorker, RoleStorage, RoleLoadBalancer, RoleRegistry, RoleAnsible}, r)
	if i < 0 {
		return 1 << 10
	}
	return i
}

// NodesWithRole returns the nodes of one role, in their order.
func NodesWithRole(nodes []Node, role Role) []Node {
	var out []Node
	for _, n := range nodes {
		if n.Role == role {
			out = append(out, n)
		}
	}
	return out
}

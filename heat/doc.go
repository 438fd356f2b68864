// Package heat reads the topology of a VNF from its OpenStack Heat stacks:
// which VMs exist, where to reach them, and which of them a scale or heal
// operation targets. Management hooks call it to learn the addresses they
// act on; it never changes a stack.
//
// Resolution follows what Tacker's sample management drivers do
// (samples/mgmt_driver/kubernetes/kubernetes_mgmt.py, kubespray_mgmt.py
// and private_registry_mgmt.py in the openstack/tacker repository): the
// VNF's top-level stack; for a [Group] with an aspect ID, the
// OS::Heat::AutoScalingGroup of that name, its member stacks, and the connection-point (CP) resources in
// each member; without an aspect ID, the top-level stack itself. A node's
// SSH address is the floating IP when its ssh_cp_name names an
// OS::Neutron::FloatingIP, else the first fixed IP of the port; its NIC
// address is the first fixed IP of nic_cp_name. [Client.ClusterAddress]
// resolves cluster_cp_name and cluster_fip_name, [Client.Volume] a Cinder
// volume's attachment.
//
// Nodes come back as [lcm.Node] values in [lcm.CompareNodes] order. Every
// stack, group and resource on the way must be in a *_COMPLETE state; any
// other state, and any missing resource or attribute, is an [*Error] that
// names the stack, the resource and the attribute.
//
// Targets: [ScaleOutTargets] diffs the members before and after a
// scale-out; [Client.ScaleInTargets] picks the oldest members (newest with
// is_reverse) by (creation_time, resource_name) and never goes below the
// group's min_size; [HealTargets] maps a HealVnfRequest's vnfcInstanceIds
// through the VnfInstance's vnfcResourceInfo to nodes, an empty list
// meaning the entire VNF.
//
// Names: every stack and resource name goes into Heat's URLs as one
// escaped path segment, so that it addresses that name and nothing else.
// The names a caller gives (the stack, aspect_id, ssh_cp_name, nic_cp_name,
// cluster_cp_name, cluster_fip_name, a volume) are checked before any
// request is sent: a name Heat cannot have is an [*Error] with Param set
// and [ErrInvalidName]. Parameter types call [ValidateResourceName] from
// their Validate methods to report the same as a field error when the
// request is decoded.
//
// A [Client] wraps a gophercloud orchestration ServiceClient ([New]);
// [Connect] builds one from clouds.yaml or the OS_* environment and
// [ConnectVIM] from the OpenStack entry of a VNF's vimConnectionInfo, both
// through gophercloud's own authentication. Members of a group are resolved
// concurrently (at most [DefaultConcurrency] requests in flight).
//
// Package heattest is a fake Keystone and Heat for tests.
package heat

// Package kubespray implements the k8s-mgmtdriver-kubespray spec: a
// Kubernetes cluster installed by kubespray's Ansible playbooks, run on a
// pre-built Ansible server that the request names by address, with an
// inventory the driver generates from the VNF's VMs.
//
// This package owns the ansible key of k8s_cluster_installation_param
// ([Ansible]), gathered in [AnsibleParams], which a Kubernetes cluster
// driver embeds in its own parameter struct next to the other domain
// packages' parts: master_node, worker_node and proxy are kubeadm's types
// (this package may use them, as the spec nests them in the same object),
// external_lb_param is package lb's.
//
// # Hooks
//
// [Hooks] is the cluster's lifecycle, a hooks type of its own on the
// shared hook runner (not a mode of package kubeadm's): mgmtkit never
// configures a node itself; it renders the inventory from Heat's VMs
// ([Inventory], [GroupVars], [LoginFiles], [KnownHosts]), prepares the
// Ansible server ([Detect], [PrepareInventory]), runs kubespray's
// playbooks there ([RunPlaybook]) and judges them by their exit status
// and PLAY RECAP ([RecapParser], [Recap.Judge]), and runs the other
// packages' extensions at their moments ([plumbing.Extension]). What
// Tacker's reference driver does wrong and this package does not:
//
//   - kubespray and ansible-core are read before anything runs, and a
//     version kubespray's own assert would refuse after minutes of fact
//     gathering is refused at once, naming both ([CheckCore]);
//   - playbooks run from kubespray_root_path with its ansible.cfg (its
//     fact cache, which scale.yml --limit needs since v2.27), without a
//     terminal, with the inventory's parse failures fatal;
//   - host keys are verified: a known_hosts of the nodes' keys (those
//     mgmtkit itself verified) is written beside the inventory and
//     Ansible checks against it; ~/.ssh/known_hosts is never touched;
//   - the nodes' passwords are in a 0600 vars file, never on a command
//     line; https_proxy is https_proxy, not a copy of http_proxy;
//   - remove-node.yml is always given the node (before v2.28 a missing
//     node removed every node) and its confirmation as variables, never
//     answered through a terminal; the node must be in the RECAP and gone
//     from the API afterwards;
//   - the inventory directory is refused when it is not this VNF's, and
//     terminate removes only this VNF's.
//
// # Parameters
//
// [lcm.DecodeParams] runs every check below before any remote command,
// and reports each problem with its full path, like
// "k8s_cluster_installation_param.ansible.ip_address". The password is a
// [remote.Secret] and never appears in a message.
//
// ansible (optional in the spec's table; a kubespray driver requires it
// in its own Validate):
//   - ip_address, username, password, kubespray_root_path and
//     transferring_inventory_path are required: absent, null and "" are
//     "is required". The checks are made in Validate rather than with
//     `params:"required"` tags so that one decode reports every problem of
//     the block at once; the spec's sample, whose "0.0.0.0" and "" are
//     placeholders, gets three field errors from one decode.
//   - ip_address is an IP address ([netip.Addr]; an IPv4-mapped IPv6
//     address becomes IPv4) that the VNFM can connect to: not the
//     unspecified address (0.0.0.0, ::), not multicast, without an IPv6
//     zone.
//   - username is a user name ([lcm.Validator.Username]).
//   - kubespray_root_path is an absolute path on the Ansible server
//     ([lcm.Validator.HostPath]), cleaned.
//   - transferring_inventory_path is an absolute path that the driver
//     creates and that terminate removes recursively, so it is checked as
//     a data directory ([lcm.Validator.HostDataDir]: not "/", a home
//     directory or a system directory) and must not be or contain
//     kubespray_root_path/inventory/sample, the template it is copied
//     from (which rules out kubespray_root_path and its parents). A
//     directory below kubespray_root_path, like
//     KUBESPRAY/inventory/mycluster, is kubespray's own convention and
//     fine.
package kubespray

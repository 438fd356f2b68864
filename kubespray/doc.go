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
// external_lb_param is package lb's. The issue that created the package
// brings its parameter types, their validation and their tests; the steps
// (inventory, playbook runs, node removal) come with their own issue.
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

// Package lb implements the external load balancer of the
// k8s-mgmtdriver-kubespray spec: a VM in front of the Kubernetes API
// servers (and the NodePorts), set up by the VNF package's installation
// script (Tacker's script mode) or, natively, as HAProxy.
//
// This package owns the external_lb_param key of
// k8s_cluster_installation_param ([ExternalLBParam]), gathered in
// [LoadBalancerParams], which a Kubernetes cluster driver embeds in its own
// parameter struct next to the other domain packages' parts. The issue
// that created the package brings its parameter types, their validation
// and their tests; the steps (install and configure the load balancer,
// add and remove backends) come with their own issue.
//
// # Parameters
//
// [lcm.DecodeParams] runs every check below before any remote command,
// and reports each problem with its full path, like
// "k8s_cluster_installation_param.external_lb_param.script_path".
// ssh_password is a [remote.Secret] and never appears in a message.
//
// external_lb_param (optional; a kubespray driver, whose Kubernetes VIM
// points at the load balancer, requires it in its own Validate):
//   - ssh_cp_name, ssh_username, ssh_password and script_path are
//     required: absent, null and "" are "is required". The checks are
//     made in Validate rather than with `params:"required"` tags so that
//     one decode reports every problem of the block at once.
//   - ssh_cp_name is a Heat resource name ([heat.CheckResourceName]);
//     ssh_username is a user name ([lcm.Validator.Username]).
//   - script_path names a regular file in the VNF package
//     ([lcm.Validator.PackageFile]); validation makes it the canonical
//     package path, so the spec's sample "./Scripts/ExternalLB_installation.sh"
//     becomes "Scripts/ExternalLB_installation.sh".
package lb

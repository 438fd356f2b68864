// Package lb implements the external load balancer of the
// k8s-mgmtdriver-kubespray spec: a VM in front of the Kubernetes API
// servers (and the NodePorts), set up natively as HAProxy managed as data
// (the default), or by the VNF package's installation script (Tacker's
// script mode).
//
// This package owns the external_lb_param key of
// k8s_cluster_installation_param ([ExternalLBParam]), gathered in
// [LoadBalancerParams], which a Kubernetes cluster driver embeds in its own
// parameter struct next to the other domain packages' parts, and the
// steps on the load balancer VM. It imports the floor (system, kubeapi,
// remote, lcm) and no other domain package.
//
// # Native mode
//
// [Config] is the load balancer's haproxy.cfg as data: the API frontend
// on [DefaultAPIPort] (8383, the reference's) to the masters' API servers
// ("server NAME IP:6443 check"), the [NodePortBackend] backend with every
// node ("server NAME IP", no port: HAProxy connects to the port the
// client came to), and a frontend "<namespace>_<name>" per published
// NodePort Service ([ServicesFrom] reads them from the cluster's
// Services). [Render] writes the whole file, Ubuntu's packaged global and
// defaults sections first, every value validated ([Config.Validate]),
// deterministic whatever the order of the nodes. [ConfigureLB] installs
// HAProxy and puts the file in place through system.ConfigureDaemon: a
// new version is staged beside the old one, checked by the VM's own
// `haproxy -c`, renamed into place only then, and HAProxy is reloaded;
// unchanged bytes cost two commands and no reload.
//
// Backends are added and removed by rebuilding the Config from the nodes
// ([NewConfig]) or editing it by exact server name ([Config.AddNodes],
// [Config.RemoveNodes]), never by editing lines: Tacker's driver deletes
// the first line of haproxy.cfg that `grep` finds for "worker1", which may
// be worker12's, and appends server lines after the last section, which
// HAProxy refuses.
//
// # Script mode
//
// [RunScript] uploads external_lb_param.script_path from the VNF package
// into a fresh private directory of the login user (mode 0700, a random
// name, removed afterwards; the reference uses a fixed /tmp name) and
// runs it as the reference does, `bash SCRIPT -m MASTERS -w WORKERS`
// (the nodes' NIC addresses, comma-separated), the proxy variables in its
// environment. Then the VM's `haproxy -c` judges what the script left.
//
// The sample package's Scripts/ExternalLB_installation.sh, like Tacker's
// install_external_lb.sh, writes "server nodeN IP check" in the NodePort
// backend: a check without a port, which every HAProxy since 1.8 refuses
// as a fatal error ("server 'node1' has neither service port nor check
// port nor tcp_check rule 'connect' with port information"; realtest
// shows it with the real haproxy). The script's own `systemctl restart
// haproxy` then fails. mgmtkit does not rewrite what a script wrote: it
// reports a [*ScriptError] with HAProxy's alerts and the remedy (drop
// the check, or give it a port; or use native mode).
//
// script_path is required by the spec's table ([ExternalLBParam.Validate]
// keeps it so). Which mode runs is the request's: external_lb_param.mode,
// an mgmtkit extension, is "native" (the default) or "script"
// ([ExternalLBParam.Extensions] runs [ConfigureLB] or [RunScript] at
// each moment).
//
// # The VIM through the load balancer
//
// The Kubernetes VIM's endpoint is the load balancer's:
// [VIMEndpoint] ("https://LB:8383") is kubeapi.VIMOptions.Endpoint, and
// kubeapi.CreateVIMCredentials returns the connection info with the
// cluster CA (the reference registered a bearer token and no CA).
// HAProxy passes TLS through, so the API server's certificate must name
// the load balancer's address (kubespray's
// supplementary_addresses_in_ssl_keys); [CheckAPICertificate] verifies
// that on a master, with the CA of its admin.conf, before the VIM is
// registered.
//
// The reference also installs kubectl on the load balancer and copies
// the cluster's admin.conf there (server rewritten to :8383) so that it
// can drain nodes from the LB. mgmtkit does not: kubectl runs on a
// master through package kubeapi (drain, delete, VIM credentials), so
// the cluster-admin key never leaves the control plane, and the load
// balancer VM holds nothing but HAProxy.
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

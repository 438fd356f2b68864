// Package kubeadm is the Kubernetes cluster that kubeadm builds: masters
// (one, or three behind a virtual IP) and workers on a Kubernetes-cluster
// VNF's VMs. This package brings its parameter types — the
// k8s_cluster_installation_param base keys of the specs and of Tacker's
// kubeadm management driver (script_path, vim_name, master_node,
// worker_node, proxy, helm_installation_script_path), mgmtkit's own
// extensions (kubernetes_version, cni_manifest_path, drain_timeout) and
// the credential overrides of scale and heal requests — with their
// defaults, normalisation and validation. The steps that build, scale and
// heal the cluster come next, on top of them.
//
// # Composing parameters
//
// One JSON object, k8s_cluster_installation_param, carries the keys of
// several packages: private_registry_connection_info belongs to
// registry, storage_server and pv_registration_params to nfs, ansible to
// kubespray, external_lb_param to lb. A driver embeds each package's part
// in its own struct and decodes the object once, strictly (an unknown key
// is an error). An embedded field is named after its type, so each
// package names its part after what it holds ([ClusterParams] here,
// registry.TrustParams, nfs.StorageParams, lb.LoadBalancerParams,
// kubespray.AnsibleParams) and a driver embeds them side by side:
//
//	type ClusterParams struct {
//		kubeadm.ClusterParams
//		registry.TrustParams
//		nfs.StorageParams
//	}
//
//	var p ClusterParams
//	err := lcm.DecodeParams(req.AdditionalParams, lcm.DecodeOptions{Package: pkg},
//		lcm.Param(kubeadm.ClusterParamKey, &p).Required())
//
// Both parts have a Validate method, which Go's method rules drop from the
// outer struct (the selector is ambiguous); [lcm.DecodeParams] validates
// every embedded part by its own method all the same, so each part's rules
// hold however the parts are composed.
//
// # What the reference does differently
//
// Tacker's kubeadm driver parses CIDRs strictly and so refuses its own
// guide's pod_cidr "192.168.3.0/16"; here host bits are cleared
// ("192.168.0.0/16"). Its proxy placeholders ("http://user1:password1@host1:port1")
// are refused here, naming the field, as URLs that cannot work. It accepts
// a half credential override (a username without its password); here
// both or neither. script_path is required there and optional here: the
// native steps do not need the reference's install script.
package kubeadm

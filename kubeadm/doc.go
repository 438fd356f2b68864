// Package kubeadm is the Kubernetes cluster that kubeadm builds: masters
// (one, or three behind a virtual IP) and workers on a Kubernetes-cluster
// VNF's VMs. This package brings its parameter types — the
// k8s_cluster_installation_param base keys of the specs and of Tacker's
// kubeadm management driver (script_path, vim_name, master_node,
// worker_node, proxy, helm_installation_script_path), mgmtkit's own
// extensions (kubernetes_version, cni_manifest_path, drain_timeout) and
// the credential overrides of scale and heal requests — with their
// defaults, normalisation and validation; the steps that build, scale and
// heal the cluster, each idempotent and each its own function; and
// [Hooks], which composes them into the management driver's hooks.
//
// # The cluster
//
// The Kubernetes people deploy today: containerd as the container runtime
// (SystemdCgroup, the sandbox image kubeadm expects), kubeadm, kubelet and
// kubectl from the pkgs.k8s.io repositories at a pinned version and held
// there, kubeadm driven by configuration files rendered from typed structs
// (kubeadm.k8s.io/v1beta4). One master: the endpoint is its address at
// [APIServerPort]. Several masters: HAProxy on every master listens at
// [LoadBalancerPort] in front of every master's API server, and keepalived
// holds the virtual IP (cluster_cp_name's address) on one of them, with a
// distinct priority per master; the endpoint is the virtual IP at
// [LoadBalancerPort]. Node names are [NodeName]s, unique per address.
//
// The pod network is the manifest cni_manifest_path names in the VNF
// package, applied after kubeadm init ([ApplyCNI]); without one, Calico,
// as the reference's install script installs it, pinned to
// [DefaultCalicoVersion]: the master downloads its release manifest
// ([DefaultCalicoManifestURL]) with curl, through the cluster's proxy
// when there is one, and applies it as released ([InstallCalico]);
// calico-node takes its IP pool from kubeadm's podSubnet, pod_cidr.
// Calico's calico.yaml is IPv4-only, so an IPv6 pod_cidr needs a
// manifest of its own. How many nodes pod_cidr holds depends on the pod
// network's IPAM ([InspectCNI], [PodNetwork.CheckPodCapacity]): flannel
// and most plugins take the node's spec.podCIDR, a /24 (IPv4) or /64
// (IPv6) that kube-controller-manager gives each node, so a /24 holds
// one node; Calico's IPAM ignores spec.podCIDR and gives each node /26
// (/122) blocks of its pool, so a /24 holds four, as the specs' sample
// pod_cidr 192.168.3.0/24 does for a cluster of up to four nodes.
// kube-controller-manager still allocates podCIDRs there, since kubeadm
// sets --allocate-node-cidrs with a podSubnet, and reports
// CIDRNotAvailable for the nodes it has no /24 for; under Calico that
// does not keep a node from being Ready.
//
// The Kubernetes API is reached through the kubeapi package, as Tacker,
// k0sctl and kubekey reach it: kubectl on a master, over the master's SSH
// connection (kubeapi.Kubectl); it needs nothing reachable but SSH.
// Draining and deleting a node (kubeapi.DrainNode, kubeapi.DeleteNode),
// waiting for it to be Ready (kubeapi.WaitNodeReady) and the VIM
// credentials (kubeapi.CreateVIMCredentials, kubeapi.DeleteVIMCredentials)
// come from there; what is kubeadm's own stays here: [ApplyCNI], the etcd
// membership of stacked control planes ([EtcdMembers],
// [RemoveEtcdMember]) and the hooks that compose them.
//
// # The hooks
//
//	instantiate_end  preflight (read-only) → prepare → containerd →
//	                 extensions before the join → packages → (HAProxy,
//	                 keepalived) → init → CNI → masters join one at a
//	                 time, workers in parallel → extensions after the
//	                 join → extensions once the cluster is built → VIM
//	                 credentials
//	scale_start      the SCALE_IN's victims: extensions told, drained,
//	                 reset, deleted (a scale of the masters is refused)
//	scale_end        the SCALE_OUT's new workers built and joined
//	heal_start       a worker drained, reset, deleted; a master also out
//	                 of HAProxy and etcd; an extension's own VM handed to
//	                 it; the entire VNF: VIM revoked
//	heal_end         the new VMs built and joined (a master back into
//	                 HAProxy), an extension's VM handed to it again; the
//	                 entire VNF: instantiate_end again
//	terminate_start  the VIM credentials revoked on the cluster
//	terminate_end    the VIM connection removed from the VNFM
//
// Every bootstrap token a hook makes (kubeadm init's, each join's, the
// upload-certs one with the certificates it owns) is deleted once the
// hook no longer needs it.
//
// Other packages plug their work into these hooks as a
// plumbing.Extension, at the moments it names, with VMs of its own that
// the hooks resolve, connect to and heal: the registry package's trust
// of private registries today, the nfs package's NFS client and storage
// server next. Each hook runs on plumbing's hook runner: nodes are worked
// on in parallel, at most Plumbing.Limit at once, over one SSH connection
// per node per hook, and every step is recorded in the result. How the
// nodes are built is a strategy chosen once per hook: mgmtkit's steps, or
// the VNF package's install script when [Hooks.InstallScript] opts in.
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
// native steps do not need the reference's install script. Its script
// applies Calico's manifest from docs.projectcalico.org, unpinned; here
// the default Calico is a pinned release.
package kubeadm

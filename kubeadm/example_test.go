package kubeadm_test

import (
	"encoding/json"
	"fmt"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/samples"
)

// ClusterParams is a cluster driver's k8s_cluster_installation_param: each
// package's part embedded, so that the one object decodes strictly into
// all of them and every part's Validate runs.
type ClusterParams struct {
	kubeadm.ClusterParams // master_node, worker_node, proxy, vim_name, ...
	registry.TrustParams  // private_registry_connection_info
}

// Decode a cluster's parameters from the cir-k8s-cluster spec's sample
// request, with its placeholder proxy URLs replaced by working ones.
func Example() {
	body, _ := samples.Request(samples.InstantiateCIRCluster)
	body, _ = samples.Patch(body, map[string]any{
		"additionalParams.k8s_cluster_installation_param.proxy.http_proxy":  "http://proxy.example.com:3128",
		"additionalParams.k8s_cluster_installation_param.proxy.https_proxy": "http://proxy.example.com:3128",
	})
	params, err := samples.AdditionalParams(body)
	if err != nil {
		panic(err)
	}

	var p ClusterParams
	err = lcm.DecodeParams(params, lcm.DecodeOptions{Package: lcm.NewPackage(samples.VNFPackage())},
		lcm.Param(kubeadm.ClusterParamKey, &p).Required())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range p.Groups() {
		fmt.Printf("%s nodes: group %s, SSH via %s\n", g.Role, g.AspectID, g.SSHCP)
	}
	m := p.MasterNode
	fmt.Println("pods:", m.PodCIDR, "services:", m.ClusterCIDR, "nodes:", p.Proxy.K8sNodeCIDR)
	fmt.Println("Kubernetes", p.KubernetesVersion, "drain timeout", p.Drain())
	for _, c := range p.PrivateRegistryConnectionInfo {
		fmt.Println("registry:", c.Server, c.Type())
	}
	fmt.Println("VIM:", p.VimNameFor("3f6a0c4e"))
	// Output:
	// master nodes: group master_instance, SSH via masterNode_CP1
	// worker nodes: group worker_instance, SSH via workerNode_CP2
	// pods: 192.168.3.0/24 services: 10.199.187.0/24 nodes: 192.168.0.0/24
	// Kubernetes 1.36 drain timeout 5m0s
	// registry: 192.168.0.10:5000 HTTP
	// registry: registry.example.com HTTPS
	// VIM: kubernetes_vim
}

// Every part's rules hold in the composed struct: registry's (a server
// given twice) and kubeadm's (the placeholder proxy URL, overlapping
// networks), all reported at once, before anything runs.
func Example_validation() {
	raw := json.RawMessage(`{"k8s_cluster_installation_param": {
		"master_node": {"ssh_cp_name": "masterNode_CP1", "username": "ubuntu", "password": "ubuntu"},
		"proxy": {"http_proxy": "http://user1:password1@host1:port1", "k8s_node_cidr": "192.168.10.0/24"},
		"private_registry_connection_info": [
			{"connection_type": "0", "server": "192.168.0.10:5000"},
			{"connection_type": "0", "server": "192.168.0.10:5000"}
		]
	}}`)
	var p ClusterParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param(kubeadm.ClusterParamKey, &p).Required())
	fmt.Println(err)
	// Output:
	// k8s_cluster_installation_param.proxy.http_proxy: has a port that is not a number from 1 to 65535
	// k8s_cluster_installation_param.master_node.pod_cidr: 192.168.0.0/16 (the default) overlaps proxy.k8s_node_cidr 192.168.10.0/24: the pod, Service and node networks must be disjoint
	// k8s_cluster_installation_param.private_registry_connection_info[1].server: repeats private_registry_connection_info[0].server "192.168.0.10:5000"
}

// A scale or heal request may replace the stored logins.
func ExampleCredentialOverrides() {
	stored := kubeadm.ClusterParams{MasterNode: kubeadm.NodeParams{SSHCPName: "masterNode_CP1", Username: "ubuntu"}}
	var c kubeadm.CredentialOverrides
	raw := json.RawMessage(`{"master_node_username": "admin", "master_node_password": "s3cret", "is_reverse": "True"}`)
	if err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, c.Params()...); err != nil {
		fmt.Println(err)
		return
	}
	p, err := c.Apply(stored)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.MasterNode.Username, p.MasterNode.Password)
	// Output: admin [REDACTED]
}

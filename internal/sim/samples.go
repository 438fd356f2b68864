package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// Where the simulated Ansible server keeps kubespray and the inventory
// the kubespray sample's placeholders become.
const (
	KubesprayRootPath      = "/opt/kubespray"
	KubesprayInventoryPath = "/opt/kubespray/inventory/mycluster"
	sampleParamsPrefix     = "additionalParams.k8s_cluster_installation_param."
)

// Request returns the spec's sample request name made to work in this
// cloud: [WorkingRequest], with ansible.ip_address the address of the
// cloud's Ansible server ([Cloud.AnsibleServerAddress]; nothing is started
// yet) when the sample names one.
func (c *Cloud) Request(name string) ([]byte, error) {
	ansible := ""
	if slices.Contains(samples.Placeholders(name), sampleParamsPrefix+"ansible.ip_address") {
		addr, err := c.AnsibleServerAddress()
		if err != nil {
			return nil, err
		}
		ansible = addr
	}
	return WorkingRequest(name, ansible)
}

// WorkingRequest returns the spec's sample request name (see package
// samples) with each placeholder ([samples.Placeholders]) replaced by a
// value that works in the simulated cloud:
//   - the proxy block goes: the simulated VMs reach the registries and the
//     package mirror directly, and no step of the samples' scenarios needs
//     a proxy;
//   - an empty script_path goes (it is optional);
//   - ansible.ip_address becomes ansibleAddress, the Ansible server's
//     address (required for the kubespray sample; see [Cloud.Request]);
//     kubespray_root_path and transferring_inventory_path become
//     [KubesprayRootPath] and [KubesprayInventoryPath];
//   - the clusters kubeadm builds (the cir and pv samples) get
//     cni_manifest_path, mgmtkit's extension, naming the sample package's
//     pod network manifest ([SampleCNIManifest]): the specs' samples
//     predate it, and without a pod network no node becomes Ready; and
//     master_node.pod_cidr becomes that manifest's network
//     ([SamplePodCIDR]): the samples' 192.168.3.0/24 holds one node's
//     pods (each node gets a /24) and is not the CNI's network.
//
// The other values are the spec's.
func WorkingRequest(name, ansibleAddress string) ([]byte, error) {
	body, err := samples.Request(name)
	if err != nil {
		return nil, err
	}
	edits := map[string]any{}
	for _, p := range samples.Placeholders(name) {
		switch key := strings.TrimPrefix(p, sampleParamsPrefix); key {
		case "proxy.http_proxy", "proxy.https_proxy":
			edits[sampleParamsPrefix+"proxy"] = nil
		case "script_path":
			edits[p] = nil
		case "ansible.ip_address":
			if ansibleAddress == "" {
				return nil, fmt.Errorf("sim: %s names an Ansible server: start one (Cloud.Request does) and give its address", name)
			}
			edits[p] = ansibleAddress
		case "ansible.kubespray_root_path":
			edits[p] = KubesprayRootPath
		case "ansible.transferring_inventory_path":
			edits[p] = KubesprayInventoryPath
		default:
			return nil, fmt.Errorf("sim: no working value for the placeholder %s of %s", p, name)
		}
	}
	if name == samples.InstantiateCIRCluster || name == samples.InstantiatePVCluster {
		edits[sampleParamsPrefix+"cni_manifest_path"] = SampleCNIManifest
		edits[sampleParamsPrefix+"master_node.pod_cidr"] = SamplePodCIDR
	}
	if len(edits) == 0 {
		return body, nil
	}
	return samples.Patch(body, edits)
}

// SampleCNIManifest is the pod network manifest of the sample VNF
// package (a flannel-like DaemonSet), which [WorkingRequest] gives the
// clusters kubeadm builds.
const SampleCNIManifest = "Files/kubernetes/cni.yaml"

// SamplePodCIDR is the pod network of [SampleCNIManifest] (flannel's
// net-conf.json Network).
const SamplePodCIDR = "10.244.0.0/16"

// SampleCluster returns the sample request name made to work in this
// cloud ([Cloud.Request]) and the topology of its Kubernetes cluster VNF
// with shape, its parameters decoded and validated against the sample
// VNF package as a driver would. A sample that names an Ansible server
// has it started, with the request's login: it is there before the VNF.
func (c *Cloud) SampleCluster(name string, shape ClusterShape) (*lcm.InstantiateVnfRequest, Topology, error) {
	req, err := c.sampleRequest(name)
	if err != nil {
		return nil, Topology{}, err
	}
	p, err := drivers.DecodeClusterParams(req.AdditionalParams, lcm.NewPackage(samples.VNFPackage()))
	if err != nil {
		return nil, Topology{}, fmt.Errorf("sim: %s: %w", name, err)
	}
	if a := p.Ansible; a != nil {
		if _, err := c.AddAnsibleServer(Login{User: a.Username, Password: a.Password.Reveal()}); err != nil {
			return nil, Topology{}, err
		}
	}
	topo, err := KubernetesCluster(p, shape, req.AdditionalParams)
	return req, topo, err
}

// SampleRegistry returns the sample request name made to work in this
// cloud and the topology of its private registry VNF, its parameters
// decoded and validated against the sample VNF package as the driver
// would.
func (c *Cloud) SampleRegistry(name string) (*lcm.InstantiateVnfRequest, Topology, error) {
	req, err := c.sampleRequest(name)
	if err != nil {
		return nil, Topology{}, err
	}
	p, err := registry.DecodeInstallParams(req.AdditionalParams, lcm.NewPackage(samples.VNFPackage()))
	if err != nil {
		return nil, Topology{}, fmt.Errorf("sim: %s: %w", name, err)
	}
	return req, RegistryVNF(p, req.AdditionalParams), nil
}

// sampleRequest decodes the working sample request name.
func (c *Cloud) sampleRequest(name string) (*lcm.InstantiateVnfRequest, error) {
	body, err := c.Request(name)
	if err != nil {
		return nil, err
	}
	var req lcm.InstantiateVnfRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("sim: %s: %w", name, err)
	}
	return &req, nil
}

// SampleNode builds the cir sample's cluster with one master and no
// worker, packages installed on it, and connects to the master as the
// sample's user: one fresh Ubuntu node for a step's test. Close the
// connection when done (the cloud's Close does not).
func (c *Cloud) SampleNode(ctx context.Context, packages ...string) (*Host, *remote.SSHHost, error) {
	_, topo, err := c.SampleCluster(samples.InstantiateCIRCluster, ClusterShape{Masters: 1, Packages: packages})
	if err != nil {
		return nil, nil, err
	}
	v, err := c.Build(topo)
	if err != nil {
		return nil, nil, err
	}
	h := v.HostsWithRole(lcm.RoleMaster)[0]
	ssh, err := c.Connect(ctx, h.Node(), h.Login.User, h.Login.Password)
	return h, ssh, err
}

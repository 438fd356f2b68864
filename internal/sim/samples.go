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
	ansible, err := c.ansibleFor(name)
	if err != nil {
		return nil, err
	}
	return WorkingRequest(name, ansible)
}

// SpecRequest is [Cloud.Request] with [SpecRequest]: the spec's body as
// written, placeholders aside.
func (c *Cloud) SpecRequest(name string) ([]byte, error) {
	ansible, err := c.ansibleFor(name)
	if err != nil {
		return nil, err
	}
	return SpecRequest(name, ansible)
}

// ansibleFor is the address of the cloud's Ansible server when the sample
// name names one, else "".
func (c *Cloud) ansibleFor(name string) (string, error) {
	if !slices.Contains(samples.Placeholders(name), sampleParamsPrefix+"ansible.ip_address") {
		return "", nil
	}
	return c.AnsibleServerAddress()
}

// WorkingRequest returns the spec's sample request name made to work in
// the simulated cloud as the scenarios' clusters use it: [SpecRequest],
// and for the clusters kubeadm builds (the cir and pv samples)
// cni_manifest_path, mgmtkit's extension, naming the sample package's
// pod network manifest ([SampleCNIManifest], flannel) and
// master_node.pod_cidr that manifest's network ([SamplePodCIDR], a /16,
// room for many nodes' /24s). The spec's body as written installs
// Calico, the default pod network, in its 192.168.3.0/24, which holds
// four nodes' Calico blocks; the scenarios scale beyond that and test a
// pod network from the VNF package.
//
// For the pv sample, the exports' export_to, the spec's node network, is
// the simulated cloud's ([NodeNetwork]; see mapExports).
//
// The other values are the spec's.
func WorkingRequest(name, ansibleAddress string) ([]byte, error) {
	body, err := SpecRequest(name, ansibleAddress)
	if err != nil {
		return nil, err
	}
	if name != samples.InstantiateCIRCluster && name != samples.InstantiatePVCluster {
		return body, nil
	}
	edits := map[string]any{
		sampleParamsPrefix + "cni_manifest_path":    SampleCNIManifest,
		sampleParamsPrefix + "master_node.pod_cidr": SamplePodCIDR,
	}
	if name == samples.InstantiatePVCluster {
		if err := mapExports(body, edits); err != nil {
			return nil, err
		}
	}
	return samples.Patch(body, edits)
}

// NodeNetwork is the simulated cloud's node network: every VM's address
// is in it (they are allocated from [Options.Subnet] and on, inside
// loopback).
const NodeNetwork = "127.0.0.0/8"

// SamplePVs returns the PersistentVolumes of the sample package's
// manifests (Files/kubernetes/nfs-pvN.yaml, which the pv sample's
// pv_registration_params name) and the export directory each mounts.
func SamplePVs() map[string]string {
	return map[string]string{"nfs-pv1": "/volume/nfs/pv1", "nfs-pv2": "/volume/nfs/pv2", "nfs-pv3": "/volume/nfs/pv3"}
}

// SampleNodeNetwork is the pv sample's node network, the export_to of
// its every export: the nodes' network of the deployment the spec
// describes.
const SampleNodeNetwork = "10.10.0.0/24"

// mapExports adds to edits, for each export of the pv sample body that
// is exported to the spec's node network ([SampleNodeNetwork]), the
// simulated cloud's node network ([NodeNetwork]) in its place: the
// storage server must admit the nodes that mount its exports, and the
// spec's network holds none of the simulated VMs. Another export_to is
// kept.
func mapExports(body []byte, edits map[string]any) error {
	var req struct {
		AdditionalParams struct {
			K8s struct {
				StorageServer *struct {
					Exports []struct {
						ExportTo string `json:"export_to"`
					} `json:"nfs_server_setup_params"`
				} `json:"storage_server"`
			} `json:"k8s_cluster_installation_param"`
		} `json:"additionalParams"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("sim: the pv sample: %w", err)
	}
	s := req.AdditionalParams.K8s.StorageServer
	if s == nil {
		return nil
	}
	for i, e := range s.Exports {
		if e.ExportTo == SampleNodeNetwork {
			edits[fmt.Sprintf("%sstorage_server.nfs_server_setup_params[%d].export_to", sampleParamsPrefix, i)] = NodeNetwork
		}
	}
	return nil
}

// SpecRequest returns the spec's sample request name (see package
// samples) as written, except that each placeholder
// ([samples.Placeholders]) is replaced by a value that works in the
// simulated cloud:
//   - the proxy block goes: the simulated VMs reach the registries and the
//     package mirror directly, and no step of the samples' scenarios needs
//     a proxy;
//   - an empty script_path goes (it is optional);
//   - ansible.ip_address becomes ansibleAddress, the Ansible server's
//     address (required for the kubespray sample; see [Cloud.Request]);
//     kubespray_root_path and transferring_inventory_path become
//     [KubesprayRootPath] and [KubesprayInventoryPath].
//
// Everything else is the spec's.
func SpecRequest(name, ansibleAddress string) ([]byte, error) {
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
	body, err := c.Request(name)
	if err != nil {
		return nil, Topology{}, err
	}
	return c.cluster(name, body, shape)
}

// SpecCluster is [Cloud.SampleCluster] with the spec's body as written,
// placeholders aside ([Cloud.SpecRequest]).
func (c *Cloud) SpecCluster(name string, shape ClusterShape) (*lcm.InstantiateVnfRequest, Topology, error) {
	body, err := c.SpecRequest(name)
	if err != nil {
		return nil, Topology{}, err
	}
	return c.cluster(name, body, shape)
}

// ClusterFrom is [Cloud.SampleCluster] for a request body of its own,
// such as a sample's with values changed (samples.Patch); name names
// it in errors.
func (c *Cloud) ClusterFrom(name string, body []byte, shape ClusterShape) (*lcm.InstantiateVnfRequest, Topology, error) {
	return c.cluster(name, body, shape)
}

// cluster is [Cloud.SampleCluster]'s work on the request body of sample
// name.
func (c *Cloud) cluster(name string, body []byte, shape ClusterShape) (*lcm.InstantiateVnfRequest, Topology, error) {
	req, err := decodeRequest(name, body)
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
	return decodeRequest(name, body)
}

// decodeRequest decodes the request body of sample name.
func decodeRequest(name string, body []byte) (*lcm.InstantiateVnfRequest, error) {
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

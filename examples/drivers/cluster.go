// Package drivers holds complete management drivers built from mgmtkit's
// packages, one per spec: what a VNFM in Go (or a Tacker-style
// MgmtDriver) registers for each VNF. The tour runs them against the
// simulated cloud; copy them as a starting point.
//
// [ClusterDriver] is the Kubernetes cluster VNF's driver: the kubeadm
// cluster (package kubeadm) with the registry package's trust of private
// registries and the nfs package's storage server and PersistentVolumes
// plugged into it as extensions. [KubesprayDriver] is the same VNF's
// driver when kubespray builds the cluster (package kubespray) behind an
// external load balancer (package lb). The private registry VNF's driver is
// registry.VNFDriver.
package drivers

import (
	"context"
	"encoding/json"
	"errors"
	"maps"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
)

// ClusterParams is k8s_cluster_installation_param: each package's part
// embedded, so that the one object decodes strictly (an unknown key is an
// error) into all of them and every part's Validate runs. kubeadm owns the
// base keys (master_node, worker_node, proxy, vim_name, script_path, ...),
// registry private_registry_connection_info, nfs storage_server and
// pv_registration_params, kubespray ansible, lb external_lb_param.
type ClusterParams struct {
	kubeadm.ClusterParams
	registry.TrustParams
	nfs.StorageParams
	kubespray.AnsibleParams
	lb.LoadBalancerParams
}

// VMs returns the cluster VNF's roles: where Heat keeps the VMs of each
// (masters and workers of kubeadm's parameters, the storage server of
// nfs's, the external load balancer of lb's) and the login of each, the
// Ansible server's included (a VM outside the VNF). This is the one
// composition of the cluster VNF's VMs: the driver, the simulated cloud
// and the tour build from it.
func (p ClusterParams) VMs() plumbing.VMs {
	vms := p.ClusterParams.VMs()
	add := func(o plumbing.VMs) {
		vms.Groups = append(vms.Groups, o.Groups...)
		maps.Copy(vms.Logins, o.Logins) // each part owns roles of its own
	}
	if s := p.StorageServer; s != nil {
		add(s.VMs())
	}
	if lb := p.ExternalLBParam; lb != nil {
		add(lb.VMs())
	}
	if a := p.Ansible; a != nil {
		add(a.VMs())
	}
	return vms
}

// DecodeClusterParams decodes k8s_cluster_installation_param; every
// problem comes back at once, with its path, before anything runs.
func DecodeClusterParams(raw json.RawMessage, pkg *lcm.Package) (ClusterParams, error) {
	var p ClusterParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{Package: pkg}, lcm.Param(kubeadm.ClusterParamKey, &p).Required())
	return p, err
}

// ClusterDriver is the management driver of a Kubernetes cluster VNF built
// with kubeadm (cir-k8s-cluster, mgmt-driver-for-k8s-scale and
// pv-k8s-cluster specs): the
// hooks of package kubeadm ([kubeadm.Hooks]) with the registry package's
// trust of private_registry_connection_info run on every node that joins
// (a [plumbing.Extension]), the registries' hosts kept out of the proxy,
// and the storage server of storage_server with the PersistentVolumes of
// pv_registration_params (another extension, with the storage server as
// its VM). It is safe for concurrent use.
//
//   - instantiate_end builds the cluster and returns its VIM connection;
//   - scale_start drains and removes the workers a SCALE_IN deletes,
//     scale_end joins those a SCALE_OUT created;
//   - heal_start removes the healed masters and workers from the cluster,
//     heal_end joins their new VMs; the entire VNF is terminate_start's
//     work then instantiate_end's with the stored parameters;
//   - with storage_server, every node that joins gets the NFS client,
//     instantiate_end (and heal_end of the entire VNF) sets up the
//     storage server's volumes and exports and registers
//     pv_registration_params' PersistentVolumes, and a heal of the
//     storage server is refused while one of them is Bound, deletes them
//     at heal_start and sets up the new VM and registers them again at
//     its address at heal_end, the volume's data kept;
//   - terminate_start revokes the VIM credentials on the cluster,
//     terminate_end tells the VNFM to forget the VIM connection.
//
// Scale and heal use the parameters stored at instantiation, with the
// request's master_node_username, master_node_password,
// worker_node_username and worker_node_password in place of the stored
// logins when given.
type ClusterDriver struct {
	lcm.NopDriver
	// Cluster builds, scales and heals the cluster: set its Plumbing
	// (required) and tune its limits there.
	Cluster kubeadm.Hooks
}

// InstantiateEnd builds the cluster.
func (d *ClusterDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: instantiate_end without a request")
	}
	p, err := DecodeClusterParams(op.Request.AdditionalParams, op.Package)
	if err != nil {
		return nil, err
	}
	return d.Cluster.Instantiate(ctx, lcm.InstantiateEnd, clusterOp(op.Instance, op.Package, p))
}

// ScaleStart drains and removes the workers a SCALE_IN deletes.
func (d *ClusterDriver) ScaleStart(ctx context.Context, op *lcm.ScaleOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: scale_start without a request")
	}
	p, err := storedParams(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.ScaleIn(ctx, lcm.ScaleStart, clusterOp(op.Instance, op.Package, p), *op.Request)
}

// ScaleEnd joins the workers a SCALE_OUT created: those op.Instance's
// vnfcResourceInfo does not list yet. Pass the instance as it was before
// the scale (as Tacker's v1 API does).
func (d *ClusterDriver) ScaleEnd(ctx context.Context, op *lcm.ScaleOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: scale_end without a request")
	}
	p, err := storedParams(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.ScaleOut(ctx, lcm.ScaleEnd, clusterOp(op.Instance, op.Package, p), *op.Request)
}

// HealStart removes the nodes the heal replaces, or revokes the VIM
// credentials before an entire heal. Before a heal of the storage
// server it deletes the PersistentVolumes, or refuses while one is Bound.
func (d *ClusterDriver) HealStart(ctx context.Context, op *lcm.HealOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: heal_start without a request")
	}
	p, err := storedParams(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.HealStart(ctx, lcm.HealStart, clusterOp(op.Instance, op.Package, p), *op.Request)
}

// HealEnd joins the healed nodes' new VMs, sets up a healed storage
// server and registers the PersistentVolumes again at its address, or
// builds the whole cluster again after an entire heal.
func (d *ClusterDriver) HealEnd(ctx context.Context, op *lcm.HealOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: heal_end without a request")
	}
	p, err := storedParams(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.HealEnd(ctx, lcm.HealEnd, clusterOp(op.Instance, op.Package, p), *op.Request)
}

// TerminateStart revokes the VIM credentials on the cluster while it
// still runs.
func (d *ClusterDriver) TerminateStart(ctx context.Context, op *lcm.TerminateOp) (*lcm.HookResult, error) {
	p, err := storedParams(op.Instance, op.Package, nil)
	if err != nil {
		return nil, err
	}
	return d.Cluster.Revoke(ctx, lcm.TerminateStart, clusterOp(op.Instance, op.Package, p))
}

// TerminateEnd tells the VNFM to remove the cluster's VIM connection; the
// VMs are gone, so it reaches nothing.
func (d *ClusterDriver) TerminateEnd(_ context.Context, op *lcm.TerminateOp) (*lcm.HookResult, error) {
	p, err := storedParams(op.Instance, op.Package, nil)
	if err != nil {
		return nil, err
	}
	return d.Cluster.Forget(lcm.TerminateEnd, clusterOp(op.Instance, op.Package, p)), nil
}

// clusterOp is what kubeadm's hooks act on, with the extensions of the
// parameters' other parts.
func clusterOp(inst *lcm.VnfInstance, pkg *lcm.Package, p ClusterParams) kubeadm.Op {
	return kubeadm.Op{Instance: inst, Package: pkg, Params: p.ClusterParams, Extensions: p.Extensions(pkg, inst)}
}

// Extensions returns the cluster's extensions, composed from the
// parameters' other parts, in the order they run at each moment:
//
//   - the registry package's trust of private_registry_connection_info
//     on every node that joins, and the registries kept out of the proxy
//     (registry.TrustParams.Extensions);
//   - the nfs package's storage: the NFS client on every node that
//     joins, the storage server's volumes and exports, and the
//     PersistentVolumes registered on them, owned by inst
//     (nfs.StorageParams.Extensions).
func (p ClusterParams) Extensions(pkg *lcm.Package, inst *lcm.VnfInstance) plumbing.Extensions {
	exts := p.TrustParams.Extensions(pkg)
	opts := nfs.ExtensionOptions{}
	if inst != nil {
		opts.Instance = inst.ID
	}
	if p.Proxy != nil {
		opts.Proxy = &p.Proxy.Proxy
	}
	return append(exts, p.StorageParams.Extensions(pkg, opts)...)
}

// storedParams decodes the parameters the VNF was instantiated with and
// applies the request's credential overrides (request holds the scale or
// heal request's additionalParams). Bad overrides are an
// [*lcm.ParamsError] naming the keys, before anything runs.
func storedParams(inst *lcm.VnfInstance, pkg *lcm.Package, request json.RawMessage) (ClusterParams, error) {
	if inst == nil || inst.InstantiatedVnfInfo == nil {
		return ClusterParams{}, errors.New("drivers: the VNF instance has no instantiatedVnfInfo with the stored additionalParams")
	}
	p, err := DecodeClusterParams(inst.InstantiatedVnfInfo.AdditionalParams, pkg)
	if err != nil {
		return p, err
	}
	var o kubeadm.CredentialOverrides
	if err := lcm.DecodeParams(request, lcm.DecodeOptions{Package: pkg}, o.Params()...); err != nil {
		return p, err
	}
	p.ClusterParams, err = o.Apply(p.ClusterParams)
	return p, err
}

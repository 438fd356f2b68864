// Package drivers holds complete management drivers built from mgmtkit's
// packages, one per spec: what a VNFM in Go (or a Tacker-style
// MgmtDriver) registers for each VNF. The tour runs them against the
// simulated cloud; copy them as a starting point.
//
// Today it has the Kubernetes cluster driver's registry part
// ([ClusterDriver]); the private registry VNF's driver is
// registry.VNFDriver. The cluster driver grows with the kubeadm, nfs,
// kubespray and lb packages.
package drivers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
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

// DecodeClusterParams decodes k8s_cluster_installation_param; every
// problem comes back at once, with its path, before anything runs.
func DecodeClusterParams(raw json.RawMessage, pkg *lcm.Package) (ClusterParams, error) {
	var p ClusterParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{Package: pkg}, lcm.Param(kubeadm.ClusterParamKey, &p).Required())
	return p, err
}

// ClusterDriver is the registry part of the Kubernetes cluster VNF's
// management driver (cir-k8s-cluster spec): every hook that creates nodes
// makes them trust, and log in to, the registries of
// private_registry_connection_info. It is safe for concurrent use.
type ClusterDriver struct {
	lcm.NopDriver
	// Plumbing reaches Heat and the nodes; its SSH field is required.
	Plumbing plumbing.Config
	// Limit bounds how many nodes are configured at once;
	// lcm.DefaultLimit when 0.
	Limit int
}

// InstantiateEnd configures every master and worker.
func (d *ClusterDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: instantiate_end without a request")
	}
	p, err := DecodeClusterParams(op.Request.AdditionalParams, op.Package)
	if err != nil {
		return nil, err
	}
	return d.trust(ctx, lcm.InstantiateEnd, op.Instance, op.Package, p, func(ctx context.Context, s *plumbing.Session) ([]lcm.Node, error) {
		return s.Nodes(ctx, p.Groups()...)
	})
}

// ScaleEnd configures the workers a SCALE_OUT created: those whose
// servers op.Instance's vnfcResourceInfo does not list yet. Pass the
// instance as it was before the scale (as Tacker's v1 API does).
func (d *ClusterDriver) ScaleEnd(ctx context.Context, op *lcm.ScaleOp) (*lcm.HookResult, error) {
	if op.Request == nil || op.Request.Type != lcm.ScaleOut {
		return &lcm.HookResult{Hook: lcm.ScaleEnd}, nil
	}
	p, err := storedParams(op.Instance, op.Package)
	if err != nil {
		return nil, err
	}
	if p.WorkerNode == nil {
		return nil, fmt.Errorf("drivers: scale_end: %s has no worker_node", registry.ClusterParamKey)
	}
	return d.trust(ctx, lcm.ScaleEnd, op.Instance, op.Package, p, func(ctx context.Context, s *plumbing.Session) ([]lcm.Node, error) {
		workers, err := s.Nodes(ctx, p.WorkerNode.Group(lcm.RoleWorker))
		if err != nil {
			return nil, err
		}
		return heat.ScaleOutTargets(knownNodes(op.Instance), workers), nil
	})
}

// HealEnd configures the healed masters and workers, or every node after
// an entire heal. The storage server and other VMs are not Kubernetes
// nodes and are left alone.
func (d *ClusterDriver) HealEnd(ctx context.Context, op *lcm.HealOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: heal_end without a request")
	}
	p, err := storedParams(op.Instance, op.Package)
	if err != nil {
		return nil, err
	}
	return d.trust(ctx, lcm.HealEnd, op.Instance, op.Package, p, func(ctx context.Context, s *plumbing.Session) ([]lcm.Node, error) {
		nodes, err := s.Nodes(ctx, p.Groups()...)
		if err != nil {
			return nil, err
		}
		if op.Request.Entire() {
			return nodes, nil
		}
		plan, err := heat.HealTargets(op.Instance, onlyNodes(op.Instance, *op.Request, nodes), nodes)
		return plan.Nodes, err
	})
}

// onlyNodes drops from a heal request the VNFCs the VNF instance knows
// but that are not Kubernetes nodes (the storage server, the load
// balancer): their heal is not this driver's business. Unknown VNFCs stay,
// for HealTargets to report.
func onlyNodes(inst *lcm.VnfInstance, req lcm.HealVnfRequest, nodes []lcm.Node) lcm.HealVnfRequest {
	servers := map[string]string{} // VNFC → server
	if inst != nil && inst.InstantiatedVnfInfo != nil {
		for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
			servers[v.ID] = v.ComputeResource.ResourceID
		}
	}
	req.VnfcInstanceID = slices.DeleteFunc(slices.Clone(req.VnfcInstanceID), func(id string) bool {
		server, known := servers[id]
		return known && !slices.ContainsFunc(nodes, func(n lcm.Node) bool { return n.ServerID == server })
	})
	return req
}

// storedParams decodes the parameters the VNF was instantiated with.
func storedParams(inst *lcm.VnfInstance, pkg *lcm.Package) (ClusterParams, error) {
	if inst == nil || inst.InstantiatedVnfInfo == nil {
		return ClusterParams{}, errors.New("drivers: the VNF instance has no instantiatedVnfInfo with the stored additionalParams")
	}
	return DecodeClusterParams(inst.InstantiatedVnfInfo.AdditionalParams, pkg)
}

// knownNodes are the servers the VNFM knew before the operation, as nodes
// that ScaleOutTargets can diff against.
func knownNodes(inst *lcm.VnfInstance) []lcm.Node {
	if inst == nil || inst.InstantiatedVnfInfo == nil {
		return nil
	}
	var nodes []lcm.Node
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		nodes = append(nodes, lcm.Node{Resource: v.ID, ServerID: v.ComputeResource.ResourceID})
	}
	return nodes
}

// trust resolves the target nodes and configures registry trust on each,
// in parallel, through one session: each node is dialed once, with its
// role's login, and every connection is closed when the hook returns.
func (d *ClusterDriver) trust(ctx context.Context, hook lcm.Hook, inst *lcm.VnfInstance, pkg *lcm.Package, p ClusterParams,
	targets func(ctx context.Context, s *plumbing.Session) ([]lcm.Node, error)) (*lcm.HookResult, error) {
	res := &lcm.HookResult{Hook: hook}
	conns := p.PrivateRegistryConnectionInfo
	if len(conns) == 0 {
		return res, nil
	}
	ctx = lcm.WithHook(ctx, hook)
	logins := p.Credentials()
	s, err := d.Plumbing.Open(ctx, inst, logins)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	nodes, err := targets(ctx, s)
	if err != nil {
		return nil, err
	}
	nodes = slices.DeleteFunc(nodes, func(n lcm.Node) bool { _, ok := logins[n.Role]; return !ok })
	var opts []lcm.Option
	if d.Limit > 0 {
		opts = append(opts, lcm.Limit(d.Limit))
	}
	rs, err := s.OnNodes(ctx, registry.StepTrust, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return registry.ConfigureRegistryTrust(ctx, h, conns, registry.TrustOptions{Package: pkg})
	}, opts...)
	res.Add(registry.StepTrust, rs)
	return res, err
}

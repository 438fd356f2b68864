package drivers

import (
	"context"
	"errors"

	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// KubesprayDriver is the management driver of a Kubernetes cluster VNF
// built by kubespray from an Ansible server, behind an external load
// balancer (the k8s-mgmtdriver-kubespray spec): the hooks of package
// kubespray ([kubespray.Hooks]) with the load balancer of
// external_lb_param (package lb) and the other parts' extensions
// (registry trust, the storage server) plugged in. It is safe for
// concurrent use.
//
//   - instantiate_end renders the inventory, runs cluster.yml, sets up
//     the load balancer and returns the VIM connection through it;
//   - scale_end joins the new workers (facts.yml, scale.yml --limit) and
//     adds them to the load balancer; scale_start takes the removed ones
//     out of it and runs remove-node.yml for each;
//   - heal of a worker is scale_start's and scale_end's work for it; of
//     a master, refused before anything runs; of the entire VNF,
//     terminate's then instantiate's;
//   - terminate_start revokes the VIM credentials, terminate_end removes
//     the inventory from the Ansible server and the VIM connection.
type KubesprayDriver struct {
	lcm.NopDriver
	// Cluster runs the hooks: set its Plumbing (required).
	Cluster kubespray.Hooks
}

// kubesprayOp is what kubespray's hooks act on: ansible required, the
// load balancer's and the other parts' extensions.
func kubesprayOp(inst *lcm.VnfInstance, pkg *lcm.Package, p ClusterParams) (kubespray.Op, error) {
	if p.Ansible == nil {
		return kubespray.Op{}, &lcm.ParamsError{Problems: []lcm.Problem{{Path: kubespray.ClusterParamKey + ".ansible", Message: "is required: the kubespray driver runs kubespray on the Ansible server it names"}}}
	}
	op := kubespray.Op{
		Instance:   inst,
		Package:    pkg,
		Params:     kubespray.Params{Cluster: p.ClusterParams, Ansible: *p.Ansible},
		Extensions: p.Extensions(pkg, inst),
	}
	if lb := p.ExternalLBParam; lb != nil {
		op.Extensions = append(op.Extensions, lb.Extensions(pkg)...)
		op.APIEndpoint = lb.APIEndpoint
	}
	return op, nil
}

// InstantiateEnd builds the cluster.
func (d *KubesprayDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: instantiate_end without a request")
	}
	p, err := DecodeClusterParams(op.Request.AdditionalParams, op.Package)
	if err != nil {
		return nil, err
	}
	kop, err := kubesprayOp(op.Instance, op.Package, p)
	if err != nil {
		return nil, err
	}
	return d.Cluster.Instantiate(ctx, lcm.InstantiateEnd, kop)
}

// stored returns the kubespray operation from the stored parameters.
func (d *KubesprayDriver) stored(inst *lcm.VnfInstance, pkg *lcm.Package, request []byte) (kubespray.Op, error) {
	p, err := storedParams(inst, pkg, request)
	if err != nil {
		return kubespray.Op{}, err
	}
	return kubesprayOp(inst, pkg, p)
}

// ScaleStart removes the workers a SCALE_IN deletes.
func (d *KubesprayDriver) ScaleStart(ctx context.Context, op *lcm.ScaleOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: scale_start without a request")
	}
	kop, err := d.stored(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.ScaleIn(ctx, lcm.ScaleStart, kop, *op.Request)
}

// ScaleEnd joins the workers a SCALE_OUT created (op.Instance as it was
// before the scale).
func (d *KubesprayDriver) ScaleEnd(ctx context.Context, op *lcm.ScaleOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: scale_end without a request")
	}
	kop, err := d.stored(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.ScaleOut(ctx, lcm.ScaleEnd, kop, *op.Request)
}

// HealStart removes a healed worker, refuses a master, or revokes the VIM
// before an entire heal.
func (d *KubesprayDriver) HealStart(ctx context.Context, op *lcm.HealOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: heal_start without a request")
	}
	kop, err := d.stored(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.HealStart(ctx, lcm.HealStart, kop, *op.Request)
}

// HealEnd joins a healed worker's new VM, or builds the whole cluster
// again after an entire heal.
func (d *KubesprayDriver) HealEnd(ctx context.Context, op *lcm.HealOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("drivers: heal_end without a request")
	}
	kop, err := d.stored(op.Instance, op.Package, op.Request.AdditionalParams)
	if err != nil {
		return nil, err
	}
	return d.Cluster.HealEnd(ctx, lcm.HealEnd, kop, *op.Request)
}

// TerminateStart revokes the VIM credentials while the cluster runs.
func (d *KubesprayDriver) TerminateStart(ctx context.Context, op *lcm.TerminateOp) (*lcm.HookResult, error) {
	kop, err := d.stored(op.Instance, op.Package, nil)
	if err != nil {
		return nil, err
	}
	return d.Cluster.Revoke(ctx, lcm.TerminateStart, kop)
}

// TerminateEnd removes the inventory from the Ansible server and tells
// the VNFM to forget the VIM connection.
func (d *KubesprayDriver) TerminateEnd(ctx context.Context, op *lcm.TerminateOp) (*lcm.HookResult, error) {
	kop, err := d.stored(op.Instance, op.Package, nil)
	if err != nil {
		return nil, err
	}
	return d.Cluster.Terminate(ctx, lcm.TerminateEnd, kop)
}

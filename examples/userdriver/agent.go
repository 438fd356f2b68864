// Package agentdriver is what a team writes on mgmtkit, in a module of its
// own: a bespoke management driver for its Kubernetes cluster VNF,
// composed from mgmtkit's public steps.
//
// The cluster is built, scaled and healed by mgmtkit's kubeadm driver
// (drivers.ClusterDriver); on top of it every worker runs the team's node
// agent: its package installed, its configuration (which holds a secret
// token) in a root-only file, its service running, and the worker's Node
// labelled so that the team's DaemonSets find it. Every step is
// idempotent, so the hooks make every worker right, not only the new
// ones: a rerun changes nothing, and a worker fixed by hand is left alone.
package agentdriver

import (
	"context"
	"io/fs"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// The agent: a Debian package, its systemd unit and configuration file,
// and the label its workers carry.
const (
	Package = "node-agent"
	Unit    = "node-agent.service"
	Config  = "/etc/node-agent/agent.env"
	Label   = "example.com/node-agent"
)

// Driver is the cluster VNF's management driver: mgmtkit's kubeadm
// cluster plus the node agent on every worker after instantiate_end,
// scale_end and heal_end.
type Driver struct {
	drivers.ClusterDriver
	// Token is the agent's secret: it reaches the workers inside Config,
	// written 0600, never in a command line.
	Token remote.Secret
	// SetUp is what runs on each worker; SetUpAgent when nil.
	SetUp func(ctx context.Context, h remote.Host, token remote.Secret) (lcm.Result, error)
}

// New returns the driver, reaching the VIM and the VMs through cfg.
func New(cfg plumbing.Config, token remote.Secret) *Driver {
	return &Driver{ClusterDriver: drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: cfg}}, Token: token}
}

// InstantiateEnd builds the cluster, then the agents.
func (d *Driver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	res, err := d.ClusterDriver.InstantiateEnd(ctx, op)
	if err != nil {
		return res, err
	}
	return d.agents(ctx, res, op.Instance, op.Request.AdditionalParams, op.Package)
}

// ScaleEnd joins the new workers, then gives them the agent.
func (d *Driver) ScaleEnd(ctx context.Context, op *lcm.ScaleOp) (*lcm.HookResult, error) {
	res, err := d.ClusterDriver.ScaleEnd(ctx, op)
	if err != nil {
		return res, err
	}
	return d.agents(ctx, res, op.Instance, op.Instance.InstantiatedVnfInfo.AdditionalParams, op.Package)
}

// HealEnd joins the healed VMs, then gives the workers among them the
// agent.
func (d *Driver) HealEnd(ctx context.Context, op *lcm.HealOp) (*lcm.HookResult, error) {
	res, err := d.ClusterDriver.HealEnd(ctx, op)
	if err != nil {
		return res, err
	}
	return d.agents(ctx, res, op.Instance, op.Instance.InstantiatedVnfInfo.AdditionalParams, op.Package)
}

// agents runs the agent's steps on every worker of the cluster the
// parameters describe, and adds them to res.
func (d *Driver) agents(ctx context.Context, res *lcm.HookResult, inst *lcm.VnfInstance, params []byte, pkg *lcm.Package) (*lcm.HookResult, error) {
	p, err := drivers.DecodeClusterParams(params, pkg)
	if err != nil {
		return res, err
	}
	vms := p.VMs()
	agent, err := d.Cluster.Plumbing.Run(ctx, res.Hook, inst, vms.Logins, func(ctx context.Context, r *plumbing.Runner) error {
		nodes, err := r.Session().Nodes(ctx, vms.Groups...)
		if err != nil {
			return err
		}
		workers := lcm.NodesWithRole(nodes, lcm.RoleWorker)
		if err := r.OnNodes(ctx, "node-agent", workers, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
			if d.SetUp != nil {
				return d.SetUp(ctx, h, d.Token)
			}
			return SetUpAgent(ctx, h, d.Token)
		}); err != nil {
			return err
		}
		k, master, err := r.ControlPlane(ctx, lcm.NodesWithRole(nodes, lcm.RoleMaster))
		if err != nil {
			return err
		}
		return r.Once(ctx, "label-workers", master, func(ctx context.Context) (lcm.Result, error) {
			return LabelWorkers(ctx, k, workers)
		})
	})
	if agent != nil {
		res.Steps = append(res.Steps, agent.Steps...)
	}
	return res, err
}

// SetUpAgent installs the agent on a worker, writes its configuration
// with the token (0600: only root reads it) and makes its service run;
// the service restarts when the configuration changed.
func SetUpAgent(ctx context.Context, h remote.Host, token remote.Secret) (lcm.Result, error) {
	installed, err := InstallAgent(ctx, h)
	if err != nil {
		return installed, err
	}
	configured, err := ConfigureAgent(ctx, h, token)
	return installed.And(configured), err
}

// InstallAgent installs the agent's package.
func InstallAgent(ctx context.Context, h remote.Host) (lcm.Result, error) {
	return system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{Package}})
}

// ConfigureAgent writes the agent's configuration and makes its service
// enabled and active.
func ConfigureAgent(ctx context.Context, h remote.Host, token remote.Secret) (lcm.Result, error) {
	return system.ConfigureUnit(ctx, h, system.UnitOptions{
		Unit:              Unit,
		Inputs:            map[string]string{Config: "TOKEN=" + token.Reveal() + "\n"},
		Modes:             map[string]fs.FileMode{Config: 0o600},
		InputsNeedRestart: true,
	})
}

// LabelWorkers labels the workers' Nodes for the agent.
func LabelWorkers(ctx context.Context, k kubeapi.Kubectl, workers []lcm.Node) (lcm.Result, error) {
	res := lcm.Unchanged
	for _, w := range workers {
		r, err := k.Label(ctx, "node", "", kubeapi.NodeName(lcm.RoleWorker, w.NICAddress), map[string]string{Label: "true"})
		if err != nil {
			return res, err
		}
		res = res.And(r)
	}
	return res, nil
}

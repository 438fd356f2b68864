package plumbing

import (
	"context"
	"slices"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// StepHealUnmanaged is the note a heal's VNFCs of no role the hooks or
// their extensions manage are recorded under.
const StepHealUnmanaged = "heal-unmanaged"

// HealTargets maps a heal request to the VMs among vms it replaces
// ([heat.HealTargetsAmong]); VNFCs of a role no one manages are left out
// and noted under [StepHealUnmanaged] (not healed, not an error). A
// request naming a VNFC the instance does not have is an error.
func (r *Runner) HealTargets(inst *lcm.VnfInstance, req lcm.HealVnfRequest, vms []lcm.Node) ([]lcm.Node, error) {
	plan, err := heat.HealTargetsAmong(inst, req, vms)
	if len(plan.Unmanaged) > 0 {
		var vnfcs []lcm.Node
		for _, id := range plan.Unmanaged {
			vnfcs = append(vnfcs, lcm.Node{Resource: id})
		}
		r.Note(StepHealUnmanaged, vnfcs, "not healed by the cluster's hooks: a VM of no role they or their extensions manage")
	}
	return plan.Nodes, err
}

// HealOthers hands the VMs of plan that are not Kubernetes nodes (not
// masters or workers: the extensions' own, like the storage server) to
// the extensions that own them, through their HealEnd when end is set
// and their HealStart otherwise, with the first of masters whose API
// answers as the cluster's control plane; all are the VNF's VMs as the
// hook sees them. No such VM: nothing runs.
func (es Extensions) HealOthers(ctx context.Context, r *Runner, masters, all, plan []lcm.Node, end bool) error {
	others := slices.DeleteFunc(slices.Clone(plan), func(n lcm.Node) bool { return n.Role == lcm.RoleMaster || n.Role == lcm.RoleWorker })
	if len(others) == 0 {
		return nil
	}
	k, cp, err := r.ControlPlane(ctx, masters)
	if err != nil {
		return err
	}
	c := Cluster{API: k, ControlPlane: cp, Nodes: all}
	if end {
		return es.HealEnd(ctx, r, c, others)
	}
	return es.HealStart(ctx, r, c, others)
}

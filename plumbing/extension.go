package plumbing

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// Extension is another package's work in a Kubernetes cluster's hooks
// (kubeadm's, kubespray's): the registry package's trust of private
// registries on every node, the nfs package's NFS client on every node
// and its storage server with the PersistentVolumes on it. A driver
// composes a cluster's hooks with the extensions of its parameters'
// other parts; the hooks run each extension's work at the moments it
// names, in the order the extensions are given, and record it under the
// extension's Name.
//
// The moments, in a hook's order:
//
//   - Check, read-only, right after Heat resolution and before the first
//     command that changes anything, in the hooks that will run the
//     extension's Ready or HealEnd: what only Heat or the VMs can tell.
//   - BeforeJoin, per node, on every node that joins (instantiate_end,
//     scale_end, heal_end): after the container runtime is installed and
//     before the node joins, so that the node can pull from a private
//     registry from its first pod on. (A cluster built by an install
//     script or by kubespray installs the runtime as it joins: there it
//     runs once the node has joined.)
//   - AfterJoin, per node, on every node that joined, once it is Ready.
//   - Joined, once per hook, after the nodes that scale_end or heal_end
//     joined are Ready, handed the Kubernetes API, every VM and those
//     nodes (an external load balancer's backends follow the nodes).
//   - Ready, once per cluster, after the pod network and every join of
//     instantiate_end (and of heal_end of the entire VNF), handed the
//     Kubernetes API and every VM.
//   - Removing, before nodes leave the cluster (scale_start, heal_start),
//     before they are drained: the nodes may be dead VMs.
//   - HealStart and HealEnd, for the extension's own VMs that a heal
//     names (the storage server): heal_start before Heat replaces them,
//     heal_end after, at their new addresses.
//
// An extension brings its own VMs ([Extension.VMs]): the hooks merge
// their logins into the session and their groups into what they resolve
// from Heat, so that every moment's [Cluster] lists them. Every function
// must be idempotent, as every step is; a nil function does not run.
type Extension struct {
	// Name names the extension's work in the hook's result, such as
	// "registry-trust"; a moment may record more steps of its own
	// through the Runner.
	Name string
	// NoProxy are host names, addresses or CIDRs the nodes must reach
	// without the proxy (a private registry's host, the storage
	// server); they join the no_proxy the nodes' runtime and kubelet use.
	NoProxy []string
	// VMs are the extension's own VMs: their Heat groups and logins.
	VMs VMs
	// Check runs, read-only, after Heat resolution and before anything
	// changes, in the hooks that will run Ready (instantiate_end, heal_end
	// of the entire VNF) or HealEnd (heal_end of the extension's VMs):
	// what only Heat or the VMs can tell, such as a volume the stack does
	// not hold. vms are every VM of the VNF as Heat reports them. An
	// [*lcm.ParamsError] names the parameters at fault; any error stops
	// the hook with nothing changed.
	Check func(ctx context.Context, r *Runner, vms []lcm.Node) error
	// BeforeJoin runs on each node that joins, before it joins.
	BeforeJoin NodeFunc
	// AfterJoin runs on each node that joined, once it is Ready.
	AfterJoin NodeFunc
	// Ready runs once the cluster is built.
	Ready func(ctx context.Context, r *Runner, c Cluster) error
	// Joined runs once nodes joined a running cluster.
	Joined func(ctx context.Context, r *Runner, c Cluster, nodes []lcm.Node) error
	// Removing runs before nodes leave the cluster.
	Removing func(ctx context.Context, r *Runner, c Cluster, nodes []lcm.Node) error
	// HealStart runs before Heat replaces the extension's VMs vms.
	HealStart func(ctx context.Context, r *Runner, c Cluster, vms []lcm.Node) error
	// HealEnd runs after Heat replaced the extension's VMs vms.
	HealEnd func(ctx context.Context, r *Runner, c Cluster, vms []lcm.Node) error
}

// Cluster is what an extension's cluster-wide moments are handed: the
// Kubernetes API of a control plane that answers, the node it runs on,
// and every VM of the VNF as Heat reports them at the moment (masters,
// workers and every extension's VMs).
type Cluster struct {
	// API runs kubectl on ControlPlane.
	API kubeapi.Kubectl
	// ControlPlane is the master whose API answers.
	ControlPlane lcm.Node
	// Nodes are the VNF's VMs, each with its role.
	Nodes []lcm.Node
}

// WithRole returns the VMs of c with role r.
func (c Cluster) WithRole(r lcm.Role) []lcm.Node { return lcm.NodesWithRole(c.Nodes, r) }

// Extensions are a cluster's extensions, in the order they run. A
// cluster's hooks call their methods at each moment.
type Extensions []Extension

// VMs returns the VMs of every extension, merged with base (the
// cluster's masters and workers): an error when two of them name the
// same role.
func (es Extensions) VMs(base VMs) (VMs, error) {
	sets := []VMs{base}
	for _, e := range es {
		sets = append(sets, e.VMs)
	}
	return MergeVMs(sets...)
}

// NoProxy returns every extension's NoProxy.
func (es Extensions) NoProxy() []string {
	var direct []string
	for _, e := range es {
		direct = append(direct, e.NoProxy...)
	}
	return direct
}

// Check runs every extension's Check. The problems of every
// [*lcm.ParamsError] come back as one ParamsError, so that a request's
// every mistake is reported at once; another error is joined to them.
func (es Extensions) Check(ctx context.Context, r *Runner, vms []lcm.Node) error {
	var probs []lcm.Problem
	var errs []error
	for _, e := range es {
		if e.Check == nil {
			continue
		}
		err := e.Check(ctx, r, vms)
		var pe *lcm.ParamsError
		switch {
		case err == nil:
		case errors.As(err, &pe):
			probs = append(probs, pe.Problems...)
		default:
			errs = append(errs, fmt.Errorf("%s: %w", e.Name, err))
		}
	}
	if len(probs) > 0 {
		errs = append([]error{&lcm.ParamsError{Problems: probs}}, errs...)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// BeforeJoin runs every extension's BeforeJoin on nodes, one extension
// after the other, each over the nodes in parallel.
func (es Extensions) BeforeJoin(ctx context.Context, r *Runner, nodes []lcm.Node) error {
	return es.onNodes(ctx, r, nodes, func(e Extension) NodeFunc { return e.BeforeJoin })
}

// AfterJoin runs every extension's AfterJoin on nodes, as BeforeJoin
// does.
func (es Extensions) AfterJoin(ctx context.Context, r *Runner, nodes []lcm.Node) error {
	return es.onNodes(ctx, r, nodes, func(e Extension) NodeFunc { return e.AfterJoin })
}

// onNodes runs the per-node moment that moment picks of every extension
// that has it on nodes, recorded under the extension's name.
func (es Extensions) onNodes(ctx context.Context, r *Runner, nodes []lcm.Node, moment func(Extension) NodeFunc) error {
	for _, e := range es {
		fn := moment(e)
		if fn == nil {
			continue
		}
		if err := r.OnNodes(ctx, e.Name, nodes, fn); err != nil {
			return err
		}
	}
	return nil
}

// Ready runs every extension's Ready, in order.
func (es Extensions) Ready(ctx context.Context, r *Runner, c Cluster) error {
	for _, e := range es {
		if e.Ready == nil {
			continue
		}
		if err := e.Ready(ctx, r, c); err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
	}
	return nil
}

// Joined runs every extension's Joined for nodes, in order.
func (es Extensions) Joined(ctx context.Context, r *Runner, c Cluster, nodes []lcm.Node) error {
	return es.forNodes(ctx, r, c, nodes, func(e Extension) func(context.Context, *Runner, Cluster, []lcm.Node) error { return e.Joined })
}

// forNodes runs, for nodes, the moment fn picks of every extension that
// has it, in order; no nodes, nothing runs.
func (es Extensions) forNodes(ctx context.Context, r *Runner, c Cluster, nodes []lcm.Node, moment func(Extension) func(context.Context, *Runner, Cluster, []lcm.Node) error) error {
	if len(nodes) == 0 {
		return nil
	}
	for _, e := range es {
		fn := moment(e)
		if fn == nil {
			continue
		}
		if err := fn(ctx, r, c, nodes); err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
	}
	return nil
}

// Removing runs every extension's Removing for nodes, in order.
func (es Extensions) Removing(ctx context.Context, r *Runner, c Cluster, nodes []lcm.Node) error {
	return es.forNodes(ctx, r, c, nodes, func(e Extension) func(context.Context, *Runner, Cluster, []lcm.Node) error { return e.Removing })
}

// Owner returns the index of the extension whose VMs have role r, -1 when
// none has.
func (es Extensions) Owner(r lcm.Role) int {
	return slices.IndexFunc(es, func(e Extension) bool { return e.VMs.Has(r) })
}

// HealStart hands each extension the VMs of vms it owns to its
// HealStart. A VM no extension owns is an error: the hooks heal only
// what someone manages.
func (es Extensions) HealStart(ctx context.Context, r *Runner, c Cluster, vms []lcm.Node) error {
	return es.heal(ctx, r, c, vms, func(e Extension) func(context.Context, *Runner, Cluster, []lcm.Node) error { return e.HealStart })
}

// HealEnd is HealStart's counterpart at heal_end.
func (es Extensions) HealEnd(ctx context.Context, r *Runner, c Cluster, vms []lcm.Node) error {
	return es.heal(ctx, r, c, vms, func(e Extension) func(context.Context, *Runner, Cluster, []lcm.Node) error { return e.HealEnd })
}

// heal hands each extension its VMs of vms through the moment fn picks.
func (es Extensions) heal(ctx context.Context, r *Runner, c Cluster, vms []lcm.Node, moment func(Extension) func(context.Context, *Runner, Cluster, []lcm.Node) error) error {
	owned := make([][]lcm.Node, len(es))
	var errs []error
	for _, n := range vms {
		i := es.Owner(n.Role)
		if i < 0 {
			errs = append(errs, fmt.Errorf("plumbing: heal of %s: no extension manages the VMs of role %q", n.Name(), n.Role))
			continue
		}
		owned[i] = append(owned[i], n)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, e := range es {
		fn := moment(e)
		if fn == nil || len(owned[i]) == 0 {
			continue
		}
		if err := fn(ctx, r, c, owned[i]); err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
	}
	return nil
}

// ControlPlane returns the kubectl of the first of masters, in order,
// whose API answers (the cluster's control plane as this hook sees it),
// and that master. skip lists masters not to use (those being removed).
// None answering is an error joining why each did not.
func (r *Runner) ControlPlane(ctx context.Context, masters []lcm.Node, skip ...lcm.Node) (kubeapi.Kubectl, lcm.Node, error) {
	var errs []error
	for _, m := range masters {
		if slices.ContainsFunc(skip, func(n lcm.Node) bool { return n.Resource == m.Resource }) {
			continue
		}
		h, err := r.session.Host(ctx, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		k := kubeapi.Kubectl{Host: h}
		if _, err := k.Nodes(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Resource, err))
			continue
		}
		return k, m, nil
	}
	return kubeapi.Kubectl{}, lcm.Node{}, fmt.Errorf("plumbing: no master answers as a control plane: %w", errors.Join(errs...))
}

package cloudtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/internal/kitsim"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// VNF is a VNF instance of a simulated [Cloud]: its Heat stack, its VMs,
// and the instance as the VNFM stores it. Its lifecycle operations run a
// driver's hooks around what Heat does, in the order a VNFM (Tacker)
// runs them, and keep the instance up to date as the VNFM would: the
// instantiate request's additionalParams in instantiatedVnfInfo, and the
// VIM connections each hook's result adds and removes. An operation whose
// start hook fails returns its error there, before Heat changes
// anything, as a VNFM does.
//
// Operations are not meant to run concurrently on one VNF.
type VNF struct {
	c    *Cloud
	sim  *sim.VNF
	topo Topology
	req  *lcm.InstantiateVnfRequest // NewCluster's
	// internals hand c.sim and sim to this module's conformance suite
	// (package kitsim), adding nothing to the VNF's API.
	internals

	mu           sync.Mutex
	params       json.RawMessage    // instantiatedVnfInfo.additionalParams
	vims         lcm.VimConnections // vimConnectionInfo, nil until first read
	instantiated bool               // instantiate_end ran and did not fail; until Terminate
	afterStart   func(ctx context.Context, start lcm.Hook) error
}

// internals is embedded in [VNF] under an unexported name.
type internals = kitsim.Sim

// Outcome is what one lifecycle operation did: the results of its two
// hooks (Start nil when the operation failed before it; End nil when it
// failed before that) and the VMs it concerned.
type Outcome struct {
	Start, End *lcm.HookResult
	// VMs are, for Instantiate, the VNF's VMs; for ScaleOut the new
	// ones; for ScaleIn those Heat removed; for Heal the new VMs that
	// replaced the healed ones; for Terminate those the stack deletion
	// removed.
	VMs []*VM
}

// Changed reports whether either hook changed anything on a host. A
// rerun of an operation a driver already completed must not.
func (o Outcome) Changed() bool {
	return (o.Start != nil && o.Start.Changed()) || (o.End != nil && o.End.Changed())
}

// Instance returns the VNF instance as the VNFM stores it now: one
// vnfcResourceInfo per running VM (its ID stable across heals,
// computeResource.resourceId the current Nova server), the scale level of
// each aspect, the vimConnectionInfo (the cloud's OpenStack VIM, and what
// the hooks added and did not remove), and the instantiate request's
// additionalParams. Before Instantiate (and after Terminate) it is
// NOT_INSTANTIATED, without instantiatedVnfInfo.
func (v *VNF) Instance() *lcm.VnfInstance {
	inst := v.sim.Instance()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.initVIMsLocked(inst)
	inst.VimConnectionInfo = slices.Clone(v.vims)
	if !v.instantiated {
		inst.InstantiationState, inst.InstantiatedVnfInfo = lcm.NotInstantiated, nil
		return inst
	}
	inst.InstantiatedVnfInfo.AdditionalParams = v.params
	return inst
}

// initVIMsLocked starts the stored vimConnectionInfo from the cloud's
// OpenStack VIM, the one every instance of the cloud has.
func (v *VNF) initVIMsLocked(inst *lcm.VnfInstance) {
	if v.vims == nil {
		v.vims = slices.Clone(inst.VimConnectionInfo)
		if v.vims == nil {
			v.vims = lcm.VimConnections{}
		}
	}
}

// record persists what a hook's result tells the VNFM to: VIM connections
// to add (replacing one of the same ID) and to remove.
func (v *VNF) record(res *lcm.HookResult) {
	if res == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, add := range res.AddVimConnections {
		if i := slices.IndexFunc(v.vims, func(c lcm.VimConnectionInfo) bool { return c.ID == add.ID }); i >= 0 {
			v.vims[i] = add
		} else {
			v.vims = append(v.vims, add)
		}
	}
	for _, id := range res.RemoveVimConnections {
		v.vims = slices.DeleteFunc(v.vims, func(c lcm.VimConnectionInfo) bool { return c.ID == id })
	}
}

func (v *VNF) setInstantiated(on bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.instantiated = on
}

// requireInstantiated refuses an operation on a VNF that is not
// instantiated, as a VNFM does (Tacker answers 409 Conflict).
func (v *VNF) requireInstantiated(op string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.instantiated {
		return fmt.Errorf("cloudtest: %s: VNF %s is not instantiated", op, v.sim.ID())
	}
	return nil
}

// VMs returns the VNF's running VMs of one role, in the order hooks visit
// them (lcm.CompareNodes).
func (v *VNF) VMs(role lcm.Role) []*VM { return v.c.vmsOf(v.sim.HostsWithRole(role)) }

// All returns every running VM of the VNF, in lcm.CompareNodes order.
func (v *VNF) All() []*VM { return v.c.vmsOf(v.sim.Hosts()) }

// VIP returns the cluster VIP's address, "" when the VNF has none.
func (v *VNF) VIP() string { return v.sim.VIP() }

// AfterStart has f called in every later operation of the VNF between
// the start hook and what follows it: once instantiate_start,
// scale_start, heal_start or terminate_start (start) has succeeded and
// its result is recorded in [VNF.Instance], before Heat's part of the
// operation (for [VNF.Instantiate], whose Heat part [Cloud.NewCluster]
// did, before instantiate_end). It is where a test asserts what the
// start hook did while the VMs are as they were: a worker drained and
// out of the cluster before Heat deletes it, a VIM token revoked while
// the old cluster still runs. An error of f fails the operation there,
// as a failed start hook does: Heat is left as it was, the end hook does
// not run, and the operation returns the error. A nil f removes it.
//
// f runs on the goroutine that called the operation, so it may fail the
// test with t.Fatal.
func (v *VNF) AfterStart(f func(ctx context.Context, start lcm.Hook) error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.afterStart = f
}

// started runs the [VNF.AfterStart] function, if any, after the start
// hook of an operation succeeded.
func (v *VNF) started(ctx context.Context, start lcm.Hook) error {
	v.mu.Lock()
	f := v.afterStart
	v.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f(ctx, start); err != nil {
		return fmt.Errorf("cloudtest: after %s: %w", start, err)
	}
	return nil
}

// Instantiate runs instantiate_start and instantiate_end of d with req
// (nil: the request [Cloud.NewCluster] was given), as the VNFM does around
// Heat's stack creation, which [Cloud.NewCluster] and [Cloud.NewVNF]
// have done already: instantiate_start gets the instance NOT_INSTANTIATED
// (on a first run), instantiate_end the instance with its VMs and req's
// additionalParams. Running it again reruns both hooks on the
// instantiated VNF, which an idempotent driver answers with no change
// ([Outcome.Changed]). A failed instantiate_end leaves the VNF
// NOT_INSTANTIATED, as a VNFM's failed operation does.
func (v *VNF) Instantiate(ctx context.Context, d lcm.Driver, req *lcm.InstantiateVnfRequest) (Outcome, error) {
	if req == nil {
		req = v.req
	}
	if req == nil {
		return Outcome{}, errors.New("cloudtest: Instantiate: no request")
	}
	if len(req.AdditionalParams) > 0 {
		v.mu.Lock()
		v.params = req.AdditionalParams
		v.mu.Unlock()
	}
	var out Outcome
	var err error
	out.Start, err = lcm.Invoke(ctx, d, lcm.InstantiateStart, &lcm.InstantiateOp{Instance: v.Instance(), Request: req, Package: v.c.pkg})
	v.record(out.Start)
	if err != nil {
		return out, err
	}
	if err := v.started(ctx, lcm.InstantiateStart); err != nil {
		return out, err
	}
	v.setInstantiated(true)
	out.End, err = lcm.Invoke(ctx, d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: v.Instance(), Request: req, Package: v.c.pkg})
	v.record(out.End)
	out.VMs = v.All()
	if err != nil {
		v.setInstantiated(false)
	}
	return out, err
}

// ScaleOut scales the group aspect out by n steps (one VM each), as the
// VNFM does: scale_start, Heat adds the members, scale_end, both hooks
// given the instance as it was before the scale (Tacker's v1 API), so
// that the new VMs are those it does not list. Outcome.VMs are the new
// VMs.
func (v *VNF) ScaleOut(ctx context.Context, d lcm.Driver, aspect string, n int) (Outcome, error) {
	req, err := v.scaleRequest(lcm.ScaleOut, aspect, n)
	if err != nil {
		return Outcome{}, err
	}
	return v.scale(ctx, d, req, func() ([]*sim.Host, error) { return v.sim.ScaleOut(aspect, n) })
}

// ScaleIn scales the group aspect in by n steps, as the VNFM does: the
// members Heat will remove are resolved as Tacker resolves them (the
// oldest first, never below the group's min_size; heat.ScaleInTargets),
// then scale_start, Heat removes those members, scale_end, both hooks
// given the instance as it was before the scale. Outcome.VMs are the
// removed VMs: they no longer answer, and stay inspectable. A group at
// its min_size is an error before any hook runs.
func (v *VNF) ScaleIn(ctx context.Context, d lcm.Driver, aspect string, n int) (Outcome, error) {
	req, err := v.scaleRequest(lcm.ScaleIn, aspect, n)
	if err != nil {
		return Outcome{}, err
	}
	i := slices.IndexFunc(v.topo.Groups, func(g GroupSpec) bool { return g.Aspect == aspect })
	if i < 0 {
		return Outcome{}, fmt.Errorf("cloudtest: ScaleIn: VNF %s has no group %q", v.sim.ID(), aspect)
	}
	g := v.topo.Groups[i]
	hc, err := v.c.sim.HeatClient(ctx)
	if err != nil {
		return Outcome{}, err
	}
	victims, err := hc.ScaleInTargets(ctx, v.sim.StackID(), heat.Group{Role: g.Role, AspectID: g.Aspect, SSHCP: g.SSHCP, NICCP: g.NICCP}, *req)
	if err != nil {
		return Outcome{}, err
	}
	if len(victims) == 0 {
		return Outcome{}, fmt.Errorf("cloudtest: ScaleIn: the group %s is at its min_size", aspect)
	}
	names := make([]string, len(victims))
	for i, n := range victims {
		names[i] = n.Resource
	}
	return v.scale(ctx, d, req, func() ([]*sim.Host, error) { return v.sim.ScaleIn(aspect, names...) })
}

// scale runs scale_start, Heat's part of the scale (heat, which returns
// the VMs it added or removed) and scale_end, both hooks given the
// instance as it was before the scale.
func (v *VNF) scale(ctx context.Context, d lcm.Driver, req *lcm.ScaleVnfRequest, heat func() ([]*sim.Host, error)) (Outcome, error) {
	op := &lcm.ScaleOp{Instance: v.Instance(), Request: req, Package: v.c.pkg}
	var out Outcome
	var err error
	out.Start, err = lcm.Invoke(ctx, d, lcm.ScaleStart, op)
	v.record(out.Start)
	if err != nil {
		return out, err
	}
	if err := v.started(ctx, lcm.ScaleStart); err != nil {
		return out, err
	}
	changed, err := heat()
	out.VMs = v.c.vmsOf(changed)
	if err != nil {
		return out, fmt.Errorf("cloudtest: Heat's %s of %s: %w", strings.ToLower(strings.ReplaceAll(string(req.Type), "_", "-")), req.AspectID, err)
	}
	out.End, err = lcm.Invoke(ctx, d, lcm.ScaleEnd, op)
	v.record(out.End)
	return out, err
}

func (v *VNF) scaleRequest(t lcm.ScaleType, aspect string, n int) (*lcm.ScaleVnfRequest, error) {
	if err := v.requireInstantiated(string(t)); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("cloudtest: %s of %s by %d steps: want at least one", t, aspect, n)
	}
	return &lcm.ScaleVnfRequest{Type: t, AspectID: aspect, NumberOfSteps: lcm.Int(n)}, nil
}

// Heal heals vms, or the entire VNF when none is given, as the VNFM does
// for a HealVnfRequest naming their VNFCs (none: the entire VNF):
// heal_start with the instance as it is, Heat replaces each VM's server
// with a fresh VM (the VNF's Cinder volumes re-attached with their data),
// heal_end with the instance the VNFM refreshed (vnfcResourceInfo naming
// the new servers). A healed VM comes back with new fixed addresses, as
// when Heat re-creates its ports too (names, /etc/hosts and load balancer
// backends must follow); in an entire heal every VM keeps its addresses.
// Outcome.VMs are the new VMs.
func (v *VNF) Heal(ctx context.Context, d lcm.Driver, vms ...*VM) (Outcome, error) {
	if err := v.requireInstantiated("heal"); err != nil {
		return Outcome{}, err
	}
	inst := v.Instance()
	req := &lcm.HealVnfRequest{}
	for _, vm := range vms {
		id := ""
		for _, r := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
			if r.ComputeResource.ResourceID == vm.h.ServerID {
				id = r.ID
			}
		}
		if id == "" {
			return Outcome{}, fmt.Errorf("cloudtest: Heal: %s is not a running VM of VNF %s", vm.Name(), v.sim.ID())
		}
		req.VnfcInstanceID = append(req.VnfcInstanceID, id)
	}
	var out Outcome
	var err error
	out.Start, err = lcm.Invoke(ctx, d, lcm.HealStart, &lcm.HealOp{Instance: inst, Request: req, Package: v.c.pkg})
	v.record(out.Start)
	if err != nil {
		return out, err
	}
	if err := v.started(ctx, lcm.HealStart); err != nil {
		return out, err
	}
	targets, opts := v.sim.Hosts(), sim.HealOptions{}
	if len(vms) > 0 {
		targets, opts = nil, sim.HealOptions{NewAddresses: true}
		for _, vm := range vms {
			targets = append(targets, vm.h)
		}
	}
	for _, h := range targets {
		nh, err := v.sim.Heal(h.ServerID, opts)
		if err != nil {
			return out, fmt.Errorf("cloudtest: Heat's heal of %s: %w", h.Resource, err)
		}
		out.VMs = append(out.VMs, v.c.vm(nh))
	}
	out.End, err = lcm.Invoke(ctx, d, lcm.HealEnd, &lcm.HealOp{Instance: v.Instance(), Request: req, Package: v.c.pkg})
	v.record(out.End)
	return out, err
}

// Terminate terminates the VNF as the VNFM does for a FORCEFUL
// TerminateVnfRequest: terminate_start, Heat deletes the stack (every VM
// stops answering), terminate_end with the instance as it was before the
// deletion. The VNF is then NOT_INSTANTIATED, its vimConnectionInfo what
// the hooks left. Outcome.VMs are the VMs the deletion removed.
func (v *VNF) Terminate(ctx context.Context, d lcm.Driver) (Outcome, error) {
	if err := v.requireInstantiated("terminate"); err != nil {
		return Outcome{}, err
	}
	req := &lcm.TerminateVnfRequest{TerminationType: lcm.Forceful}
	var out Outcome
	var err error
	out.Start, err = lcm.Invoke(ctx, d, lcm.TerminateStart, &lcm.TerminateOp{Instance: v.Instance(), Request: req, Package: v.c.pkg})
	v.record(out.Start)
	if err != nil {
		return out, err
	}
	if err := v.started(ctx, lcm.TerminateStart); err != nil {
		return out, err
	}
	inst := v.Instance()
	removed, err := v.sim.Delete()
	out.VMs = v.c.vmsOf(removed)
	v.setInstantiated(false)
	if err != nil {
		return out, fmt.Errorf("cloudtest: Heat's stack deletion: %w", err)
	}
	out.End, err = lcm.Invoke(ctx, d, lcm.TerminateEnd, &lcm.TerminateOp{Instance: inst, Request: req, Package: v.c.pkg})
	v.record(out.End)
	return out, err
}

// Kubectl returns kubectl on the VNF's first master (in lcm.CompareNodes
// order) whose API answers, over that master's SSH connection
// ([VM.Host]) as the hooks use it: for assertions in the Kubernetes
// world, on either [KubeBackend].
func (v *VNF) Kubectl(ctx context.Context) (kubeapi.Kubectl, error) {
	var errs []error
	for _, m := range v.VMs(lcm.RoleMaster) {
		k := kubeapi.Kubectl{Host: m.Host()}
		if _, err := k.Nodes(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name(), err))
			continue
		}
		return k, nil
	}
	if len(errs) == 0 {
		return kubeapi.Kubectl{}, fmt.Errorf("cloudtest: VNF %s has no master", v.sim.ID())
	}
	return kubeapi.Kubectl{}, fmt.Errorf("cloudtest: no master's API answers: %w", errors.Join(errs...))
}

package lcm

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
)

// Hook names a point in a VNF lifecycle operation at which the VNFM calls
// the management driver, as in the VNFD's interfaces.Vnflcm section.
type Hook string

// The hooks of the instantiate, scale, heal and terminate operations.
const (
	InstantiateStart Hook = "instantiate_start"
	InstantiateEnd   Hook = "instantiate_end"
	ScaleStart       Hook = "scale_start"
	ScaleEnd         Hook = "scale_end"
	HealStart        Hook = "heal_start"
	HealEnd          Hook = "heal_end"
	TerminateStart   Hook = "terminate_start"
	TerminateEnd     Hook = "terminate_end"
)

// Hooks returns every hook in lifecycle order.
func Hooks() []Hook {
	return []Hook{
		InstantiateStart, InstantiateEnd,
		ScaleStart, ScaleEnd,
		HealStart, HealEnd,
		TerminateStart, TerminateEnd,
	}
}

// ParseHook returns the hook named s, which must be one of the snake_case
// names used in VNFDs, such as "instantiate_end".
func ParseHook(s string) (Hook, error) {
	for _, h := range Hooks() {
		if string(h) == s {
			return h, nil
		}
	}
	names := make([]string, 0, 8)
	for _, h := range Hooks() {
		names = append(names, string(h))
	}
	return "", fmt.Errorf("lcm: unknown hook %q: want one of %s", s, strings.Join(names, ", "))
}

// String returns the hook's name.
func (h Hook) String() string { return string(h) }

// InstantiateOp is what the instantiate hooks act on.
type InstantiateOp struct {
	Instance *VnfInstance           // the VNF instance as the VNFM stores it
	Request  *InstantiateVnfRequest // the request being processed
	Package  *Package               // the instance's VNF package
}

// ScaleOp is what the scale hooks act on.
type ScaleOp struct {
	Instance *VnfInstance
	Request  *ScaleVnfRequest
	Package  *Package
}

// HealOp is what the heal hooks act on.
type HealOp struct {
	Instance *VnfInstance
	Request  *HealVnfRequest
	Package  *Package
}

// TerminateOp is what the terminate hooks act on.
type TerminateOp struct {
	Instance *VnfInstance
	Request  *TerminateVnfRequest
	Package  *Package
}

// Driver is a management driver: one method per [Hook]. Embed [NopDriver]
// to implement only the hooks a VNF needs.
//
// A method returns what it changed and what the VNFM must persist. It may
// return a non-nil result together with an error, to report the hosts it
// changed before failing.
type Driver interface {
	InstantiateStart(ctx context.Context, op *InstantiateOp) (*HookResult, error)
	InstantiateEnd(ctx context.Context, op *InstantiateOp) (*HookResult, error)
	ScaleStart(ctx context.Context, op *ScaleOp) (*HookResult, error)
	ScaleEnd(ctx context.Context, op *ScaleOp) (*HookResult, error)
	HealStart(ctx context.Context, op *HealOp) (*HookResult, error)
	HealEnd(ctx context.Context, op *HealOp) (*HookResult, error)
	TerminateStart(ctx context.Context, op *TerminateOp) (*HookResult, error)
	TerminateEnd(ctx context.Context, op *TerminateOp) (*HookResult, error)
}

// NopDriver implements every [Driver] method by doing nothing and returning
// an empty result. Embed it in a driver struct and define only the hooks
// the VNF needs.
type NopDriver struct{}

// InstantiateStart does nothing.
func (NopDriver) InstantiateStart(context.Context, *InstantiateOp) (*HookResult, error) {
	return &HookResult{Hook: InstantiateStart}, nil
}

// InstantiateEnd does nothing.
func (NopDriver) InstantiateEnd(context.Context, *InstantiateOp) (*HookResult, error) {
	return &HookResult{Hook: InstantiateEnd}, nil
}

// ScaleStart does nothing.
func (NopDriver) ScaleStart(context.Context, *ScaleOp) (*HookResult, error) {
	return &HookResult{Hook: ScaleStart}, nil
}

// ScaleEnd does nothing.
func (NopDriver) ScaleEnd(context.Context, *ScaleOp) (*HookResult, error) {
	return &HookResult{Hook: ScaleEnd}, nil
}

// HealStart does nothing.
func (NopDriver) HealStart(context.Context, *HealOp) (*HookResult, error) {
	return &HookResult{Hook: HealStart}, nil
}

// HealEnd does nothing.
func (NopDriver) HealEnd(context.Context, *HealOp) (*HookResult, error) {
	return &HookResult{Hook: HealEnd}, nil
}

// TerminateStart does nothing.
func (NopDriver) TerminateStart(context.Context, *TerminateOp) (*HookResult, error) {
	return &HookResult{Hook: TerminateStart}, nil
}

// TerminateEnd does nothing.
func (NopDriver) TerminateEnd(context.Context, *TerminateOp) (*HookResult, error) {
	return &HookResult{Hook: TerminateEnd}, nil
}

// Invoke calls the method of d that handles hook, with a context that
// carries the hook (see [HookFrom]). op must be the pointer type the hook
// takes: *InstantiateOp for the instantiate hooks, *ScaleOp, *HealOp or
// *TerminateOp for the others.
//
// Once the driver method has been called, the result is never nil (an
// empty one stands in when the method returned none) and its Hook is set,
// also when an error is returned. A panic in the driver is returned as a
// [*PanicError]. Errors about d, hook or op come with a nil result.
func Invoke(ctx context.Context, d Driver, hook Hook, op any) (res *HookResult, err error) {
	if d == nil {
		return nil, fmt.Errorf("lcm: invoke %s: nil Driver", hook)
	}
	call, err := bind(d, hook, op)
	if err != nil {
		return nil, err
	}
	defer func() {
		if v := recover(); v != nil {
			res, err = &HookResult{Hook: hook}, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	res, err = call(WithHook(ctx, hook))
	if res == nil {
		res = &HookResult{}
	}
	if res.Hook == "" {
		res.Hook = hook
	}
	return res, err
}

// Plan runs hook of d as a dry run and returns what it would change, per
// step and host, without changing anything: [Invoke] under
// [remote.WithDryRun]. The hosts run only the commands marked
// [remote.Cmd.ReadOnly] and withhold every other command and every write
// that would change a file (see package remote). The result has Plan
// set, and each step's result on each host is one of:
//
//   - unchanged: the step's reads found its host as it wants it; a real
//     run now would change nothing there either;
//   - would change ([Result.Withheld] set, Changed set): the step met a
//     change and stopped before it; Withheld names that first change (a
//     command's argv or the files), not the ones after it, which depend
//     on it;
//   - undetermined ([Result.Undetermined]): the step failed, or would
//     have waited (a poll or wait returns at once in a plan once a change
//     was withheld), after an earlier change of the hook was withheld, so
//     what it met may be only that change's absence: a node that cannot
//     join a control plane that was never initialised. A real run would
//     run it after those changes; the plan cannot tell what it would do.
//
// The VIM connections in the result are those the hook could make out
// without the withheld changes: those of a converged cluster, none of
// one it would build (a connection a hook reports with no type, from a
// step the plan stopped, is dropped).
//
// The hook goes on after each of these, as the real run would after the
// change. A failure before any change was withheld (a parameter, a
// preflight check, an unreachable host) ends the plan with that error,
// as it would end the real run.
//
// A hook that fails outside its steps after a change was withheld (its
// own work between steps read a state the change would have made, or made
// a change itself) ends the plan there without an error: the result's
// last step is [StepPlanEnd], on the host of the withheld change (would
// change) or on "hook" (undetermined), and the steps after it are not
// planned.
//
// What a plan is not: it is not a promise. It judges the hosts as they
// are when it runs, one step's first change at a time; what a step would
// do after its first change, and what steps after a withheld change
// would find, are beyond it. Hosts a
// driver dials itself must honour the dry run: [remote.SSHHost] does, and
// [remote.GuardDryRun] makes any other Host do so (package plumbing
// guards the hosts its Config.Dial returns).
func Plan(ctx context.Context, d Driver, hook Hook, op any) (*HookResult, error) {
	dry := remote.WithDryRun(ctx)
	res, err := Invoke(dry, d, hook, op)
	if res == nil {
		return nil, err
	}
	res.Plan = true
	if err != nil && remote.AnyWithheld(dry) && ctx.Err() == nil && !errors.As(err, new(*PanicError)) {
		// The hook's own work between its steps met a withheld change,
		// or its absence: the plan ends here.
		r := HostResult{Host: "hook", Step: StepPlanEnd}
		if we := (*remote.WithheldError)(nil); errors.As(err, &we) {
			r.Host, r.Result = we.Host, Result{Changed: true, Detail: "would " + we.What(), Withheld: we}
		} else {
			r.Result = Result{Undetermined: true, Detail: "the hook stops here, after the earlier changes, which the plan withheld: " + clipText(err.Error(), maxEchoError)}
		}
		res.Add(StepPlanEnd, Results{r})
		err = nil
	}
	// A connection without a type is the zero value a hook reports when
	// the step that was to fill it did not run to its end.
	res.AddVimConnections = slices.DeleteFunc(res.AddVimConnections, func(c VimConnectionInfo) bool { return c.VimType == "" })
	return res, err
}

// StepPlanEnd is the step under which [Plan] records where a hook it
// planned stopped outside its steps, after a withheld change.
const StepPlanEnd = "plan-ends"

// bind selects d's method for hook and checks op's type against it.
func bind(d Driver, hook Hook, op any) (func(context.Context) (*HookResult, error), error) {
	switch hook {
	case InstantiateStart, InstantiateEnd:
		o, err := opAs[InstantiateOp](hook, op)
		if err != nil {
			return nil, err
		}
		if hook == InstantiateStart {
			return func(ctx context.Context) (*HookResult, error) { return d.InstantiateStart(ctx, o) }, nil
		}
		return func(ctx context.Context) (*HookResult, error) { return d.InstantiateEnd(ctx, o) }, nil
	case ScaleStart, ScaleEnd:
		o, err := opAs[ScaleOp](hook, op)
		if err != nil {
			return nil, err
		}
		if hook == ScaleStart {
			return func(ctx context.Context) (*HookResult, error) { return d.ScaleStart(ctx, o) }, nil
		}
		return func(ctx context.Context) (*HookResult, error) { return d.ScaleEnd(ctx, o) }, nil
	case HealStart, HealEnd:
		o, err := opAs[HealOp](hook, op)
		if err != nil {
			return nil, err
		}
		if hook == HealStart {
			return func(ctx context.Context) (*HookResult, error) { return d.HealStart(ctx, o) }, nil
		}
		return func(ctx context.Context) (*HookResult, error) { return d.HealEnd(ctx, o) }, nil
	case TerminateStart, TerminateEnd:
		o, err := opAs[TerminateOp](hook, op)
		if err != nil {
			return nil, err
		}
		if hook == TerminateStart {
			return func(ctx context.Context) (*HookResult, error) { return d.TerminateStart(ctx, o) }, nil
		}
		return func(ctx context.Context) (*HookResult, error) { return d.TerminateEnd(ctx, o) }, nil
	}
	_, err := ParseHook(string(hook))
	return nil, err
}

// opAs returns op as a *T, or an error naming what hook needed.
func opAs[T any](hook Hook, op any) (*T, error) {
	o, ok := op.(*T)
	if !ok {
		return nil, fmt.Errorf("lcm: hook %s takes a %T, got %T", hook, (*T)(nil), op)
	}
	if o == nil {
		return nil, fmt.Errorf("lcm: hook %s: nil %T", hook, o)
	}
	return o, nil
}

// HookResult is what a hook did and what the VNFM must persist afterwards.
type HookResult struct {
	// Hook is the hook that produced the result.
	Hook Hook
	// Steps holds the per-host results of each step, in the order run.
	Steps []StepResults
	// AddVimConnections are VIM connections the VNFM must add to the
	// instance's vimConnectionInfo, such as the Kubernetes VIM of a cluster
	// that instantiate_end installed.
	AddVimConnections []VimConnectionInfo
	// RemoveVimConnections are IDs of VIM connections the VNFM must remove
	// from the instance's vimConnectionInfo (terminate, entire heal).
	RemoveVimConnections []string
	// Plan says the result is a plan's ([Plan]): nothing was changed, a
	// Changed step is one that would change its host (its
	// [Result.Withheld] says how, first), and the VIM connections are
	// those the hook would report, if any it could tell without the
	// changes.
	Plan bool
}

// StepResults are the per-host results of one step of a hook.
type StepResults struct {
	Step  string
	Hosts Results
}

// Add records the per-host results of a step. A step run twice (say, on
// the masters and then on the workers) is recorded twice, in order.
func (r *HookResult) Add(step string, hosts Results) {
	r.Steps = append(r.Steps, StepResults{Step: step, Hosts: hosts})
}

// Changed reports whether any step changed any host.
func (r *HookResult) Changed() bool {
	for _, s := range r.Steps {
		if s.Hosts.Changed() {
			return true
		}
	}
	return false
}

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// PlanReport is what -plan found for one hook: its dry run (lcm.Plan) and
// how the real run that followed compares with it.
type PlanReport struct {
	// Changes are the plan's would-change and undetermined entries, one
	// "step host: what" each; unchanged steps are left out.
	Changes []string `json:"changes"`
	// Error is the plan's own failure (a failure before it withheld
	// anything: the real run fails there too).
	Error string `json:"error,omitempty"`
	// ReadOnly says that the plan changed nothing in the simulated cloud:
	// every host's files, packages, units, mounts and disks and every
	// cluster's objects were the same after it.
	ReadOnly bool `json:"readOnly"`
	// Truthful says that the real run agreed with the plan: every step the
	// plan said would change did, on that host, and every step the run
	// changed was in the plan (as would change or undetermined, or after
	// the point where the plan ended).
	Truthful bool `json:"truthful"`
	// Problems say how the plan and the run disagree, when they do.
	Problems []string `json:"problems,omitempty"`
}

// invoke runs hook of drv on op. With -plan it first plans it (a dry
// run, only read-only commands), prints the plan, and checks, after the
// real run, that the plan changed nothing and told the truth: an untruthful
// plan fails the operation.
func (t *tour) invoke(ctx context.Context, drv lcm.Driver, hook lcm.Hook, op any) (*lcm.HookResult, error) {
	if !t.opts.plan {
		return lcm.Invoke(ctx, drv, hook, op)
	}
	before, err := t.cloud.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("-plan: %w", err)
	}
	plan, planErr := lcm.Plan(ctx, drv, hook, op)
	after, err := t.cloud.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("-plan: %w", err)
	}
	pr := &PlanReport{Changes: []string{}, ReadOnly: true}
	if planErr != nil {
		pr.Error = planErr.Error()
	}
	for _, d := range before.Diff(after) {
		pr.ReadOnly = false
		pr.Problems = append(pr.Problems, "the plan changed "+d)
	}
	for _, st := range planSteps(plan) {
		for _, h := range st.Hosts {
			if h.Result.Withheld != nil || h.Result.Undetermined {
				pr.Changes = append(pr.Changes, fmt.Sprintf("%s %s: %s", st.Step, h.Host, h.Result))
			}
		}
	}
	t.printPlan(pr)

	res, err := lcm.Invoke(ctx, drv, hook, op)
	pr.Problems = append(pr.Problems, comparePlan(plan, planErr, res, err)...)
	pr.Truthful = len(pr.Problems) == 0
	t.plan = pr
	if !pr.Truthful && err == nil {
		err = fmt.Errorf("-plan: the plan and the run disagree: %s", strings.Join(pr.Problems, "; "))
	}
	return res, err
}

// planSteps returns the steps of a plan, none for a nil one.
func planSteps(plan *lcm.HookResult) []lcm.StepResults {
	if plan == nil {
		return nil
	}
	return plan.Steps
}

// printPlan prints a hook's plan: each step that would change a host, or
// whose outcome depends on an earlier change.
func (t *tour) printPlan(pr *PlanReport) {
	switch {
	case pr.Error != "":
		t.sayf("  plan: the hook would fail before changing anything: %s\n", indent(pr.Error))
	case len(pr.Changes) == 0:
		t.sayf("  plan: nothing to change\n")
	default:
		t.sayf("  plan: %d steps would change a host or depend on a change:\n", len(pr.Changes))
		for _, c := range pr.Changes {
			t.sayf("    %s\n", c)
		}
	}
}

// comparePlan says how a hook's plan and its real run disagree: a step the
// plan said would change that the run left unchanged on that host, a step
// the run changed that the plan listed as unchanged (or not at all, before
// the plan ended), a plan that failed where the run passed.
func comparePlan(plan *lcm.HookResult, planErr error, res *lcm.HookResult, runErr error) []string {
	var problems []string
	if planErr != nil {
		if runErr == nil {
			problems = append(problems, "the plan failed ("+planErr.Error()+") but the run passed")
		}
		return problems
	}
	// The n-th time a step runs on a host in the run is compared with the
	// n-th time in the plan (a hook may run a step more than once:
	// kubespray's inventory before and after a node leaves).
	type key struct {
		step, host string
		n          int
	}
	occurrences := func(r *lcm.HookResult, each func(k key, h lcm.HostResult)) {
		seen := map[key]int{}
		for _, st := range planSteps(r) {
			for _, h := range st.Hosts {
				k := key{st.Step, h.Host, 0}
				k.n = seen[k]
				seen[key{st.Step, h.Host, 0}]++
				each(k, h)
			}
		}
	}
	planned := map[key]lcm.Result{}
	ended := false
	occurrences(plan, func(k key, h lcm.HostResult) {
		if k.step == lcm.StepPlanEnd {
			ended = true
			return
		}
		planned[k] = h.Result
	})
	changed := map[key]bool{}
	occurrences(res, func(k key, h lcm.HostResult) {
		if !h.Result.Changed {
			return
		}
		changed[k] = true
		p, ok := planned[k]
		switch {
		case ok && (p.Changed || p.Undetermined):
		case !ok && ended:
			// after the point where the plan had to end
		default:
			problems = append(problems, fmt.Sprintf("%s changed %s, which the plan said it would not", k.step, k.host))
		}
	})
	var keys []key
	for k, p := range planned {
		if p.Withheld != nil && !changed[k] {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return strings.Compare(fmt.Sprint(a.step, " ", a.host, " ", a.n), fmt.Sprint(b.step, " ", b.host, " ", b.n))
	})
	for _, k := range keys {
		if runErr == nil { // a failed run stops before some of its changes
			problems = append(problems, fmt.Sprintf("the plan said %s would change %s (%s); the run did not", k.step, k.host, planned[k].Withheld.What()))
		}
	}
	return problems
}

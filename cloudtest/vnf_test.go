package cloudtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// hookLog is a driver that changes nothing: it notes each hook it runs
// in log, and fails the hook fail.
type hookLog struct {
	log  *[]string
	fail lcm.Hook
}

func (d hookLog) run(h lcm.Hook) (*lcm.HookResult, error) {
	*d.log = append(*d.log, string(h))
	if h == d.fail {
		return nil, fmt.Errorf("%s refused", h)
	}
	return &lcm.HookResult{Hook: h}, nil
}

func (d hookLog) InstantiateStart(context.Context, *lcm.InstantiateOp) (*lcm.HookResult, error) {
	return d.run(lcm.InstantiateStart)
}
func (d hookLog) InstantiateEnd(context.Context, *lcm.InstantiateOp) (*lcm.HookResult, error) {
	return d.run(lcm.InstantiateEnd)
}
func (d hookLog) ScaleStart(context.Context, *lcm.ScaleOp) (*lcm.HookResult, error) {
	return d.run(lcm.ScaleStart)
}
func (d hookLog) ScaleEnd(context.Context, *lcm.ScaleOp) (*lcm.HookResult, error) {
	return d.run(lcm.ScaleEnd)
}
func (d hookLog) HealStart(context.Context, *lcm.HealOp) (*lcm.HookResult, error) {
	return d.run(lcm.HealStart)
}
func (d hookLog) HealEnd(context.Context, *lcm.HealOp) (*lcm.HookResult, error) {
	return d.run(lcm.HealEnd)
}
func (d hookLog) TerminateStart(context.Context, *lcm.TerminateOp) (*lcm.HookResult, error) {
	return d.run(lcm.TerminateStart)
}
func (d hookLog) TerminateEnd(context.Context, *lcm.TerminateOp) (*lcm.HookResult, error) {
	return d.run(lcm.TerminateEnd)
}

// workersVNF builds a VNF of two workers in a group that scales down to
// one.
func workersVNF(t *testing.T) *cloudtest.VNF {
	c := cloudtest.Start(t, cloudtest.Options{})
	return c.NewVNF(cloudtest.Topology{Groups: []cloudtest.GroupSpec{{
		Role: lcm.RoleWorker, Aspect: "worker_instance", Count: 2, MinSize: 1, SSHCP: "workerNode_CP2",
		Login: cloudtest.Login{User: "ubuntu", Password: "ubuntu"},
	}}})
}

var simpleRequest = &lcm.InstantiateVnfRequest{FlavourID: "simple"}

// The AfterStart function runs in each operation once the start hook
// has succeeded and before Heat's part: it sees the VMs as they were
// (the workers before a scale, the healed VM still running, every VM
// before the stack's deletion), and the end hook follows it.
func TestVNFAfterStartRunsBetweenTheStartHookAndHeat(t *testing.T) {
	ctx := ctx(t)
	v := workersVNF(t)
	var log []string
	var healed *cloudtest.VM
	v.AfterStart(func(_ context.Context, start lcm.Hook) error {
		note := fmt.Sprintf("after %s: workers %d", start, len(v.VMs(lcm.RoleWorker)))
		if start == lcm.HealStart {
			note += fmt.Sprintf(", the healed one running %v", slices.Contains(v.All(), healed))
		}
		log = append(log, note)
		return nil
	})
	d := hookLog{log: &log}
	if _, err := v.Instantiate(ctx, d, simpleRequest); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ScaleOut(ctx, d, "worker_instance", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ScaleIn(ctx, d, "worker_instance", 2); err != nil {
		t.Fatal(err)
	}
	healed = v.VMs(lcm.RoleWorker)[0]
	if _, err := v.Heal(ctx, d, healed); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Terminate(ctx, d); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"instantiate_start", "after instantiate_start: workers 2", "instantiate_end",
		"scale_start", "after scale_start: workers 2", "scale_end",
		"scale_start", "after scale_start: workers 3", "scale_end",
		"heal_start", "after heal_start: workers 1, the healed one running true", "heal_end",
		"terminate_start", "after terminate_start: workers 1", "terminate_end",
	}
	if !slices.Equal(log, want) {
		t.Errorf("hooks and AfterStart ran:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// An error of the AfterStart function fails the operation as a failed
// start hook does: the error is returned, Heat is left as it was, the
// end hook does not run, and a failed instantiate leaves the VNF not
// instantiated. A start hook that fails stops the operation before the
// AfterStart function. Removed, it no longer runs.
func TestVNFAfterStartErrorStopsTheOperation(t *testing.T) {
	ctx := ctx(t)
	v := workersVNF(t)
	var log []string
	notDrained := errors.New("the worker is not drained")
	var calls []lcm.Hook
	v.AfterStart(func(_ context.Context, start lcm.Hook) error {
		calls = append(calls, start)
		return notDrained
	})
	d := hookLog{log: &log}

	out, err := v.Instantiate(ctx, d, simpleRequest)
	if !errors.Is(err, notDrained) || out.End != nil {
		t.Errorf("instantiate: %v, end %+v", err, out.End)
	}
	if s := v.Instance().InstantiationState; s != lcm.NotInstantiated {
		t.Errorf("after the failed instantiate the VNF is %s", s)
	}
	v.AfterStart(nil)
	if _, err := v.Instantiate(ctx, d, simpleRequest); err != nil {
		t.Fatal(err)
	}

	v.AfterStart(func(_ context.Context, start lcm.Hook) error {
		calls = append(calls, start)
		return notDrained
	})
	before := v.VMs(lcm.RoleWorker)
	out, err = v.ScaleIn(ctx, d, "worker_instance", 1)
	if !errors.Is(err, notDrained) || !strings.Contains(err.Error(), "after scale_start") || out.End != nil || len(out.VMs) != 0 {
		t.Errorf("scale-in: %v, end %+v, VMs %v", err, out.End, out.VMs)
	}
	if got := v.VMs(lcm.RoleWorker); !slices.Equal(got, before) {
		t.Errorf("Heat changed the workers to %v, were %v", got, before)
	}

	failing := hookLog{log: &log, fail: lcm.ScaleStart}
	if _, err := v.ScaleIn(ctx, failing, "worker_instance", 1); err == nil || !strings.Contains(err.Error(), "scale_start refused") {
		t.Errorf("scale-in with a failing scale_start: %v", err)
	}
	if got := v.VMs(lcm.RoleWorker); !slices.Equal(got, before) {
		t.Errorf("after a failed scale_start Heat changed the workers to %v, were %v", got, before)
	}

	want := []string{
		"instantiate_start", "instantiate_start", "instantiate_end",
		"scale_start", "scale_start",
	}
	if !slices.Equal(log, want) {
		t.Errorf("hooks run: %v, want %v", log, want)
	}
	if want := []lcm.Hook{lcm.InstantiateStart, lcm.ScaleStart}; !slices.Equal(calls, want) {
		t.Errorf("AfterStart called after %v, want %v", calls, want)
	}
}

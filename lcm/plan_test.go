package lcm_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// machine is a remote.Host whose commands only record what they were.
type machine struct {
	name string
	ran  []string
}

func (m *machine) Name() string { return m.name }
func (m *machine) Addr() string { return m.name + ":22" }
func (m *machine) Run(_ context.Context, c remote.Cmd) (remote.Output, error) {
	m.ran = append(m.ran, strings.Join(c.Args, " "))
	return remote.Output{}, nil
}
func (m *machine) WriteFile(context.Context, string, io.Reader, remote.FileOptions) (bool, error) {
	return true, nil
}
func (m *machine) ReadFile(context.Context, string, remote.FileOptions) ([]byte, error) {
	return nil, errors.New("no files")
}
func (m *machine) Close() error { return nil }

// planDriver's instantiate_end: a read and a change on every host, then a
// step that fails on a state the change would have made.
type planDriver struct {
	lcm.NopDriver
	hosts    []*machine
	failNext bool // the first step fails on its own, before any change
}

func (d *planDriver) InstantiateEnd(ctx context.Context, _ *lcm.InstantiateOp) (*lcm.HookResult, error) {
	res := &lcm.HookResult{}
	if d.failNext {
		rs, err := lcm.OnHosts(ctx, "check", d.hosts, func(ctx context.Context, m *machine) (lcm.Result, error) {
			return lcm.Unchanged, errors.New("the disk is too small")
		})
		res.Add("check", rs)
		if err != nil {
			return res, err
		}
	}
	rs, err := lcm.OnHosts(ctx, "install", d.hosts, func(ctx context.Context, m *machine) (lcm.Result, error) {
		h := remote.GuardDryRun(m)
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"dpkg-query", "-W", "app"}, ReadOnly: true}); err != nil {
			return lcm.Unchanged, err
		}
		if m.name == "node1" {
			return lcm.Unchanged, nil // installed already
		}
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"apt-get", "install", "app"}, Sudo: true}); err != nil {
			return lcm.Unchanged, err
		}
		return lcm.Changed("installed app"), nil
	})
	res.Add("install", rs)
	if err != nil {
		return res, err
	}
	rs, err = lcm.OnHosts(ctx, "start", d.hosts, func(ctx context.Context, m *machine) (lcm.Result, error) {
		return lcm.Unchanged, errors.New("app.service: unit not found")
	})
	res.Add("start", rs)
	return res, err
}

func TestPlanWithholdsAndGoesOn(t *testing.T) {
	ms := []*machine{{name: "node0"}, {name: "node1"}, {name: "node2"}}
	d := &planDriver{hosts: ms}
	res, err := lcm.Plan(context.Background(), d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: &lcm.VnfInstance{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan || !res.Changed() || len(res.Steps) != 2 {
		t.Fatalf("plan %+v", res)
	}
	for i, r := range res.Steps[0].Hosts {
		switch {
		case i == 1 && (r.Result.Changed || r.Result.Withheld != nil || r.Err != nil):
			t.Errorf("node1 has app: %+v", r)
		case i != 1 && (!r.Result.Changed || r.Result.Withheld == nil || r.Err != nil ||
			strings.Join(r.Result.Withheld.Args, " ") != "apt-get install app" || r.Result.Withheld.Host != r.Host):
			t.Errorf("%s: %+v, want apt-get withheld", r.Host, r)
		case i != 1 && r.Result.String() != `would run "sudo apt-get install app"`:
			t.Errorf("%s: %q", r.Host, r.Result)
		}
	}
	for _, r := range res.Steps[1].Hosts {
		if r.Err != nil || r.Result.Changed || !r.Result.Undetermined || !strings.Contains(r.Result.Detail, "unit not found") {
			t.Errorf("start on %s: %+v, want undetermined", r.Host, r)
		}
	}
	for _, m := range ms {
		if len(m.ran) != 1 || m.ran[0] != "dpkg-query -W app" {
			t.Errorf("%s ran %q in the plan", m.name, m.ran)
		}
	}

	// The real run changes, and fails where the plan was undetermined.
	res, err = lcm.Invoke(context.Background(), d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: &lcm.VnfInstance{}})
	if err == nil || res.Plan || !res.Steps[0].Hosts[0].Result.Changed || res.Steps[0].Hosts[0].Result.Withheld != nil {
		t.Errorf("real run: %+v, %v", res, err)
	}
	if len(ms[0].ran) != 3 {
		t.Errorf("node0 ran %q", ms[0].ran)
	}
}

func TestPlanStopsAtAFailureBeforeAnyChange(t *testing.T) {
	ms := []*machine{{name: "node0"}, {name: "node1"}}
	d := &planDriver{hosts: ms, failNext: true}
	res, err := lcm.Plan(context.Background(), d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: &lcm.VnfInstance{}})
	if err == nil || !strings.Contains(err.Error(), "the disk is too small") || !res.Plan || len(res.Steps) != 1 {
		t.Fatalf("plan: %+v, %v; want the check's failure", res, err)
	}
	for _, m := range ms {
		if len(m.ran) != 0 {
			t.Errorf("%s ran %q", m.name, m.ran)
		}
	}
}

func TestPlanOfDoAndContextEnd(t *testing.T) {
	m := &machine{name: "node0"}
	ctx, cancel := context.WithCancel(remote.WithDryRun(context.Background()))
	res, err := lcm.Do(ctx, "write", m.name, func(ctx context.Context) (lcm.Result, error) {
		_, err := remote.GuardDryRun(m).Run(ctx, remote.Cmd{Args: []string{"touch", "/x"}})
		return lcm.Unchanged, err
	})
	if err != nil || !res.Changed || res.Withheld == nil {
		t.Errorf("Do: %+v, %v", res, err)
	}
	cancel()
	_, err = lcm.Do(ctx, "late", m.name, func(ctx context.Context) (lcm.Result, error) { return lcm.Unchanged, ctx.Err() })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled step in a plan: %v, want the cancellation", err)
	}
	if got := (lcm.Result{Undetermined: true, Detail: "x"}).And(lcm.Changed("y")); !got.Undetermined || !got.Changed {
		t.Errorf("And: %+v", got)
	}
}

// bodyDriver changes a host, or reads what the change would have made,
// between its steps, as a hook's own code may.
type bodyDriver struct {
	lcm.NopDriver
	m          *machine
	changeBody bool
}

func (d *bodyDriver) InstantiateEnd(ctx context.Context, _ *lcm.InstantiateOp) (*lcm.HookResult, error) {
	h := remote.GuardDryRun(d.m)
	res := &lcm.HookResult{AddVimConnections: []lcm.VimConnectionInfo{{ID: "half-made"}}}
	rs, err := lcm.OnHosts(ctx, "install", []*machine{d.m}, func(ctx context.Context, m *machine) (lcm.Result, error) {
		_, err := h.Run(ctx, remote.Cmd{Args: []string{"apt-get", "install", "app"}, Sudo: true})
		return lcm.Changed("installed"), err
	})
	res.Add("install", rs)
	if err != nil {
		return res, err
	}
	if d.changeBody {
		_, err = h.Run(ctx, remote.Cmd{Args: []string{"app", "init"}})
	} else {
		err = errors.New("app --version: not found")
	}
	if err != nil {
		return res, err
	}
	res.Add("never", lcm.Results{{Host: d.m.name}})
	return res, nil
}

func TestPlanEndsWhereTheHookStopsBetweenSteps(t *testing.T) {
	for _, change := range []bool{false, true} {
		d := &bodyDriver{m: &machine{name: "node0"}, changeBody: change}
		res, err := lcm.Plan(context.Background(), d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: &lcm.VnfInstance{}})
		if err != nil || len(res.Steps) != 2 || res.Steps[1].Step != lcm.StepPlanEnd || len(res.AddVimConnections) != 0 {
			t.Fatalf("change %v: %+v, %v", change, res, err)
		}
		end := res.Steps[1].Hosts[0]
		switch {
		case change && (end.Host != "node0" || end.Result.Withheld == nil || strings.Join(end.Result.Withheld.Args, " ") != "app init"):
			t.Errorf("a change between steps: %+v", end)
		case !change && (end.Host != "hook" || !end.Result.Undetermined || !strings.Contains(end.Result.Detail, "app --version: not found")):
			t.Errorf("a read between steps: %+v", end)
		}
		if len(d.m.ran) != 0 {
			t.Errorf("the plan ran %q", d.m.ran)
		}
	}
	// The real run fails where the read did.
	d := &bodyDriver{m: &machine{name: "node0"}}
	if _, err := lcm.Invoke(context.Background(), d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: &lcm.VnfInstance{}}); err == nil {
		t.Error("the real run did not fail")
	}
}

package plumbing_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// A hook written on a Runner records every step in order, fans out at
// most Config.Limit nodes at once, records Once against its node and
// Note without running anything, keeps what ran when a step fails, and
// closes every connection when it returns.
func TestRunRecordsStepsAndBoundsFanout(t *testing.T) {
	cloud := &fakeCloud{}
	cfg := newVIM(t, cloud)
	cfg.Limit = 2
	inst := &lcm.VnfInstance{ID: "inst-1"}
	var inFlight, most atomic.Int32
	boom := errors.New("boom")
	res, err := cfg.Run(context.Background(), lcm.ScaleEnd, inst, creds, func(ctx context.Context, r *plumbing.Runner) error {
		if h := lcm.HookFrom(ctx); h != lcm.ScaleEnd {
			t.Errorf("the work's context carries hook %q", h)
		}
		nodes, err := r.Session().Nodes(ctx, masters, workers)
		if err != nil {
			return err
		}
		if err := r.OnNodes(ctx, "count", nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			now := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			_, err := h.Run(ctx, remote.Command("true"))
			return lcm.Changed("counted"), err
		}); err != nil {
			return err
		}
		r.Note("not-needed", nodes[:1], "nothing to do")
		if err := r.Once(ctx, "once", nodes[0], func(context.Context) (lcm.Result, error) { return lcm.Unchanged, nil }); err != nil {
			return err
		}
		r.AddVimConnection(lcm.VimConnectionInfo{ID: "vim-x"})
		return r.Each(ctx, "fails", nodes[3:4], func(context.Context, lcm.Node) (lcm.Result, error) { return lcm.Unchanged, boom })
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the failing step's", err)
	}
	if res == nil || res.Hook != lcm.ScaleEnd {
		t.Fatalf("result %+v", res)
	}
	var steps []string
	for _, s := range res.Steps {
		steps = append(steps, s.Step)
	}
	if got := strings.Join(steps, " "); got != "count not-needed once fails" {
		t.Errorf("steps %q", got)
	}
	if len(res.Steps[0].Hosts) != 5 || !res.Steps[0].Hosts.Changed() {
		t.Errorf("count: %+v", res.Steps[0].Hosts)
	}
	if d := res.Steps[1].Hosts[0].Result.Detail; d != "nothing to do" {
		t.Errorf("note %q", d)
	}
	if len(res.AddVimConnections) != 1 {
		t.Errorf("VIM connections %+v", res.AddVimConnections)
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d nodes at once, Config.Limit is 2", m)
	}
	for _, h := range cloud.hosts {
		if h.closed != 1 {
			t.Errorf("%s closed %d times", h.cfg.Name, h.closed)
		}
	}
	if err := (&plumbing.Runner{}).Once(context.Background(), "x", lcm.Node{}, nil); err == nil {
		t.Error("Once with no node to record against passed")
	}
}

// A session that cannot open runs nothing and returns no result.
func TestRunWithoutSession(t *testing.T) {
	ran := false
	res, err := plumbing.Config{}.Run(context.Background(), lcm.InstantiateEnd, &lcm.VnfInstance{ID: "i"}, creds, func(context.Context, *plumbing.Runner) error {
		ran = true
		return nil
	})
	if err == nil || res != nil || ran {
		t.Errorf("Run without SSH settings: %v, %+v, ran %v", err, res, ran)
	}
}

// A plan (lcm.Plan) through a Config whose Dial hands out hosts of its
// own: the session guards them, so the steps' changes are withheld
// before they reach the hosts, and each step is recorded as one that
// would change its node; reads run.
func TestRunInAPlanGuardsTheHostsOfDial(t *testing.T) {
	cloud := &fakeCloud{}
	cfg := newVIM(t, cloud)
	inst := &lcm.VnfInstance{ID: "inst-1"}
	res, err := lcm.Plan(context.Background(), &runDriver{cfg: cfg}, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan || len(res.Steps) != 1 || len(res.Steps[0].Hosts) != 5 {
		t.Fatalf("plan %+v", res)
	}
	for _, r := range res.Steps[0].Hosts {
		if w := r.Result.Withheld; w == nil || w.Host != r.Host || strings.Join(w.Args, " ") != "touch /etc/x" || r.Err != nil {
			t.Errorf("%s: %+v", r.Host, r)
		}
	}
	for _, h := range cloud.hosts {
		if strings.Join(h.cmds, ";") != "cat /etc/x" {
			t.Errorf("%s ran %q", h.cfg.Name, h.cmds)
		}
	}
}

// runDriver's instantiate_end reads, then changes, every node.
type runDriver struct {
	lcm.NopDriver
	cfg plumbing.Config
}

func (d *runDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	return d.cfg.Run(ctx, lcm.InstantiateEnd, op.Instance, creds, func(ctx context.Context, r *plumbing.Runner) error {
		nodes, err := r.Session().Nodes(ctx, masters, workers)
		if err != nil {
			return err
		}
		return r.OnNodes(ctx, "touch", nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			if _, err := h.Run(ctx, remote.Cmd{Args: []string{"cat", "/etc/x"}, ReadOnly: true}); err != nil {
				return lcm.Unchanged, err
			}
			_, err := h.Run(ctx, remote.Cmd{Args: []string{"touch", "/etc/x"}, Sudo: true})
			return lcm.Changed("touched"), err
		})
	})
}

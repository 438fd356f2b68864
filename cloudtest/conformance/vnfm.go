package conformance

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/kitsim"
	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// scenarioTimeout bounds a scenario, every step of it: on a real control
// plane, three masters' etcd members join one after the other, and an
// entire heal builds the cluster twice.
const scenarioTimeout = 10 * time.Minute

// vnfm is one scenario's VNF of a cloudtest cloud, whose lifecycle
// operations play the VNFM (the driver's hooks around Heat's part, the
// instance kept as the hooks' results say), and the simulated machinery
// behind it that the assertions read.
type vnfm struct {
	ctx    context.Context
	cloud  *cloudtest.Cloud
	vnf    *cloudtest.VNF
	driver lcm.Driver
	opts   Options
	// env is the scenario's, as Options.Setup left it, its VNF set.
	env *Env
	// params are the request's parameters as mgmtkit's cluster drivers
	// decode them: where Heat keeps the workers (the scale aspect).
	params drivers.ClusterParams
	// sim and simVNF are the machinery behind cloud and vnf.
	sim    *sim.Cloud
	simVNF *sim.VNF
}

// start starts a cloud for a scenario, with the sample request (changed
// by Options.Setup) and its VNF of shape built in Heat, nothing installed
// yet. The driver's log is shown when the scenario fails.
func start(t *testing.T, opts Options, shape cloudtest.Shape) *vnfm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	t.Cleanup(cancel)
	var log bytes.Buffer
	ctx = lcm.WithLogger(ctx, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the driver's log:\n%s", log.String())
		}
	})
	cloud := cloudtest.Start(t, cloudtest.Options{Kube: opts.Kube, Packages: opts.Packages})
	env := &Env{Cloud: cloud, Request: cloud.SampleRequest(opts.Sample)}
	if opts.Setup != nil {
		opts.Setup(t, env)
	}
	v := cloud.NewCluster(env.Request, shape)
	env.VNF = v
	params, err := drivers.DecodeClusterParams(env.Request.AdditionalParams, cloud.Package())
	if err != nil {
		t.Fatal(err)
	}
	sc, sv, ok := kitsim.Of(v)
	if !ok {
		t.Fatal("conformance: the cloudtest VNF hands no simulated cloud")
	}
	return &vnfm{
		ctx: ctx, cloud: cloud, vnf: v, opts: opts, env: env, params: params, sim: sc, simVNF: sv,
		driver: opts.Driver(cloud.Plumbing()),
	}
}

// check runs Options.Check at stage, when set, as a subtest of t named
// after the stage, with the scenario's Env and healed (the VM a heal
// replaced, or nil). It reports whether the check passed; true when
// there is none.
func (v *vnfm) check(t *testing.T, stage Stage, healed *cloudtest.VM) bool {
	t.Helper()
	if v.opts.Check == nil {
		return true
	}
	env := *v.env
	env.Healed = healed
	return t.Run(string(stage), func(t *testing.T) { v.opts.Check(t, stage, &env) })
}

// world is the VNF for t's assertions.
func (v *vnfm) world(t *testing.T) *kubescenarios.World {
	return &kubescenarios.World{T: t, Ctx: v.ctx, Cloud: v.sim, VNF: v.simVNF}
}

// vims is the instance's vimConnectionInfo as the VNFM stores it.
func (v *vnfm) vims() lcm.VimConnections { return v.vnf.Instance().VimConnectionInfo }

// operation runs op, a lifecycle operation of the VNF through the
// driver, with check (when not nil) run between its start hook and
// Heat's part. The start hook's error is returned; anything that fails
// after it fails t, naming what failed.
func (v *vnfm) operation(t *testing.T, start, end lcm.Hook, check func(), op func(context.Context, lcm.Driver) (cloudtest.Outcome, error)) (cloudtest.Outcome, error) {
	t.Helper()
	started := false
	v.vnf.AfterStart(func(context.Context, lcm.Hook) error {
		started = true
		if check != nil {
			check()
		}
		return nil
	})
	defer v.vnf.AfterStart(nil)
	out, err := op(v.ctx, v.driver)
	switch {
	case err == nil || !started:
		return out, err
	case out.End == nil:
		t.Fatalf("after %s: %v", start, err)
	default:
		t.Fatalf("%s: %v", end, err)
	}
	return out, err
}

// must is [vnfm.operation] that fails t when the start hook fails too.
func (v *vnfm) must(t *testing.T, start, end lcm.Hook, check func(), op func(context.Context, lcm.Driver) (cloudtest.Outcome, error)) cloudtest.Outcome {
	t.Helper()
	out, err := v.operation(t, start, end, check, op)
	if err != nil {
		t.Fatalf("%s: %v", start, err)
	}
	return out
}

// instantiate instantiates the VNF with the scenario's request, or runs
// the instantiation again; it returns instantiate_end's result.
func (v *vnfm) instantiate(t *testing.T) *lcm.HookResult {
	t.Helper()
	return v.must(t, lcm.InstantiateStart, lcm.InstantiateEnd, nil, func(ctx context.Context, d lcm.Driver) (cloudtest.Outcome, error) {
		return v.vnf.Instantiate(ctx, d, nil)
	}).End
}

// workerAspect is the workers' scale aspect.
func (v *vnfm) workerAspect(t *testing.T) string {
	t.Helper()
	if v.params.WorkerNode == nil || v.params.WorkerNode.AspectID == "" {
		t.Fatalf("the request %s has no worker_node.aspect_id to scale", v.opts.Sample)
	}
	return v.params.WorkerNode.AspectID
}

// scaleOut scales the workers out by n, with Heat's new VMs between
// scale_start and scale_end. It returns the new VMs.
func (v *vnfm) scaleOut(t *testing.T, n int) []*cloudtest.VM {
	t.Helper()
	aspect := v.workerAspect(t)
	return v.must(t, lcm.ScaleStart, lcm.ScaleEnd, nil, func(ctx context.Context, d lcm.Driver) (cloudtest.Outcome, error) {
		return v.vnf.ScaleOut(ctx, d, aspect, n)
	}).VMs
}

// scaleIn scales the workers in by one, check run between scale_start
// and Heat's removal of victim, which it asserts was the one removed.
// scale_start's error is returned, Heat untouched.
func (v *vnfm) scaleIn(t *testing.T, victim *sim.Host, check func()) error {
	t.Helper()
	aspect := v.workerAspect(t)
	out, err := v.operation(t, lcm.ScaleStart, lcm.ScaleEnd, check, func(ctx context.Context, d lcm.Driver) (cloudtest.Outcome, error) {
		return v.vnf.ScaleIn(ctx, d, aspect, 1)
	})
	if err != nil {
		return err
	}
	if len(out.VMs) != 1 || out.VMs[0].Name() != victim.Resource {
		t.Fatalf("the scale-in removed %v, want %s", out.VMs, victim.Resource)
	}
	return nil
}

// victim returns the VM a scale-in by one removes: Tacker's choice, as
// Heat's scale-in targets give it.
func (v *vnfm) victim(t *testing.T) *sim.Host {
	t.Helper()
	req := lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: v.workerAspect(t), NumberOfSteps: 1}
	target := v.world(t).ScaleInTargets(v.params.WorkerNode.Group(lcm.RoleWorker), req)[0]
	return v.sim.HostByServer(target.ServerID)
}

// heal heals vm, with Heat's new VM (new addresses) between heal_start
// and heal_end, and returns the new VM. heal_start's error comes back
// before Heat changes anything, with its result.
func (v *vnfm) heal(t *testing.T, vm *cloudtest.VM) (*cloudtest.VM, *lcm.HookResult, error) {
	t.Helper()
	out, err := v.operation(t, lcm.HealStart, lcm.HealEnd, nil, func(ctx context.Context, d lcm.Driver) (cloudtest.Outcome, error) {
		return v.vnf.Heal(ctx, d, vm)
	})
	if err != nil {
		return nil, out.Start, err
	}
	return out.VMs[0], out.Start, nil
}

// healEntire heals the entire VNF, Heat replacing every VM (same
// addresses) between heal_start and heal_end; check runs between
// heal_start and Heat's change.
func (v *vnfm) healEntire(t *testing.T, check func()) {
	t.Helper()
	v.must(t, lcm.HealStart, lcm.HealEnd, check, func(ctx context.Context, d lcm.Driver) (cloudtest.Outcome, error) {
		return v.vnf.Heal(ctx, d)
	})
}

// terminate terminates the VNF, Heat deleting the stack (every VM gone)
// between terminate_start and terminate_end; check runs between
// terminate_start and the deletion, while the cluster still runs.
func (v *vnfm) terminate(t *testing.T, check func()) {
	t.Helper()
	v.must(t, lcm.TerminateStart, lcm.TerminateEnd, check, v.vnf.Terminate)
}

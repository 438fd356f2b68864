package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// scenarioTimeout bounds a scenario, every step of it: on a real control
// plane, three masters' etcd members join one after the other, and an
// entire heal builds the cluster twice.
const scenarioTimeout = 10 * time.Minute

// vnfm plays the VNFM for one scenario's VNF: it calls the driver's
// hooks with the operations a VNFM builds, changes Heat between them in
// Tacker's order, and keeps the instance's vimConnectionInfo as the
// hooks' results say.
type vnfm struct {
	ctx    context.Context
	cloud  *sim.Cloud
	vnf    *sim.VNF
	driver lcm.Driver
	opts   Options
	pkg    *lcm.Package
	req    *lcm.InstantiateVnfRequest
	// params are the request's parameters as mgmtkit's cluster drivers
	// decode them: where Heat keeps the workers (the scale aspect).
	params drivers.ClusterParams
	// vims is the instance's vimConnectionInfo as the VNFM stores it.
	vims lcm.VimConnections
}

// start starts a cloud for a scenario, with the sample request (changed
// by Options.Setup) and its VNF of shape built in Heat, nothing installed
// yet. The driver's log is shown when the scenario fails.
func start(t *testing.T, opts Options, shape sim.ClusterShape) *vnfm {
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
	cloud := sim.Start(t, sim.Options{KubeBackend: opts.Kube})
	body, err := cloud.Request(opts.Sample)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Setup != nil {
		env := &Env{Request: &lcm.InstantiateVnfRequest{}}
		if err := json.Unmarshal(body, env.Request); err != nil {
			t.Fatal(err)
		}
		opts.Setup(t, env)
		if body, err = json.Marshal(env.Request); err != nil {
			t.Fatal(err)
		}
	}
	req, topo, err := cloud.ClusterFrom(opts.Sample, body, shape)
	if err != nil {
		t.Fatal(err)
	}
	pkg := lcm.NewPackage(samples.VNFPackage())
	params, err := drivers.DecodeClusterParams(req.AdditionalParams, pkg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	return &vnfm{
		ctx: ctx, cloud: cloud, vnf: v, opts: opts, pkg: pkg, req: req, params: params,
		driver: opts.Driver(plumbing.Config{SSH: cloud.SSHConfigFunc(nil)}),
		vims:   lcm.VimConnections{cloud.VimConnection()},
	}
}

// world is the VNF for t's assertions.
func (v *vnfm) world(t *testing.T) *kubescenarios.World {
	return &kubescenarios.World{T: t, Ctx: v.ctx, Cloud: v.cloud, VNF: v.vnf}
}

// instance is the VNF instance as the VNFM stores it: Heat's VMs (one
// vnfcResourceInfo each), the instantiate request's additionalParams and
// the VIM connections kept.
func (v *vnfm) instance() *lcm.VnfInstance {
	inst := v.vnf.Instance()
	inst.VimConnectionInfo = slices.Clone(v.vims)
	return inst
}

// invoke calls hook of the driver through lcm.Invoke and, when it
// succeeds, keeps the VIM connections its result adds and removes.
func (v *vnfm) invoke(hook lcm.Hook, op any) (*lcm.HookResult, error) {
	res, err := lcm.Invoke(v.ctx, v.driver, hook, op)
	if err != nil {
		return res, err
	}
	v.vims = slices.DeleteFunc(v.vims, func(c lcm.VimConnectionInfo) bool {
		return slices.Contains(res.RemoveVimConnections, c.ID)
	})
	for _, c := range res.AddVimConnections {
		v.vims = slices.DeleteFunc(v.vims, func(o lcm.VimConnectionInfo) bool { return o.ID == c.ID })
		v.vims = append(v.vims, c)
	}
	return res, nil
}

// must fails t when err is not nil, naming the hook.
func must(t *testing.T, hook lcm.Hook, res *lcm.HookResult, err error) *lcm.HookResult {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", hook, err)
	}
	return res
}

// instantiate runs instantiate_start, with the instance not instantiated
// yet, and instantiate_end once Heat has built the VNF (the VMs exist
// from the start: nothing is installed on them until the hooks run).
func (v *vnfm) instantiate(t *testing.T) *lcm.HookResult {
	t.Helper()
	before := &lcm.VnfInstance{ID: v.vnf.ID(), InstantiationState: lcm.NotInstantiated, VimConnectionInfo: slices.Clone(v.vims)}
	res, err := v.invoke(lcm.InstantiateStart, &lcm.InstantiateOp{Instance: before, Request: v.req, Package: v.pkg})
	must(t, lcm.InstantiateStart, res, err)
	res, err = v.invoke(lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: v.instance(), Request: v.req, Package: v.pkg})
	return must(t, lcm.InstantiateEnd, res, err)
}

// aspect is the workers' scale aspect.
func (v *vnfm) aspect(t *testing.T) string {
	t.Helper()
	if v.params.WorkerNode == nil || v.params.WorkerNode.AspectID == "" {
		t.Fatalf("the request %s has no worker_node.aspect_id to scale", v.opts.Sample)
	}
	return v.params.WorkerNode.AspectID
}

// scaleOut scales the workers out by n: scale_start, Heat's new VMs,
// scale_end, both hooks given the instance as it was before the scale
// (Tacker's v1 API). It returns the new VMs.
func (v *vnfm) scaleOut(t *testing.T, n int) []*sim.Host {
	t.Helper()
	before := v.instance()
	op := &lcm.ScaleOp{Instance: before, Request: &lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: v.aspect(t), NumberOfSteps: lcm.Int(n)}, Package: v.pkg}
	res, err := v.invoke(lcm.ScaleStart, op)
	must(t, lcm.ScaleStart, res, err)
	added, err := v.vnf.ScaleOut(op.Request.AspectID, n)
	if err != nil {
		t.Fatal(err)
	}
	res, err = v.invoke(lcm.ScaleEnd, op)
	must(t, lcm.ScaleEnd, res, err)
	return added
}

// scaleInRequest is a scale-in of the workers by one.
func (v *vnfm) scaleInRequest(t *testing.T) *lcm.ScaleVnfRequest {
	return &lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: v.aspect(t), NumberOfSteps: 1}
}

// victim returns the VM a scale-in by one removes: Tacker's choice, the
// newest worker, as Heat's scale-in targets give it.
func (v *vnfm) victim(t *testing.T) *sim.Host {
	t.Helper()
	target := v.world(t).ScaleInTargets(v.params.WorkerNode.Group(lcm.RoleWorker), *v.scaleInRequest(t))[0]
	return v.cloud.HostByServer(target.ServerID)
}

// scaleInStart runs scale_start of a scale-in by one.
func (v *vnfm) scaleInStart(t *testing.T) error {
	t.Helper()
	_, err := v.invoke(lcm.ScaleStart, &lcm.ScaleOp{Instance: v.instance(), Request: v.scaleInRequest(t), Package: v.pkg})
	return err
}

// scaleInEnd has Heat remove victim, then runs scale_end with the
// instance as it was before.
func (v *vnfm) scaleInEnd(t *testing.T, victim *sim.Host) {
	t.Helper()
	before := v.instance()
	if _, err := v.vnf.ScaleIn(v.aspect(t), victim.Resource); err != nil {
		t.Fatal(err)
	}
	res, err := v.invoke(lcm.ScaleEnd, &lcm.ScaleOp{Instance: before, Request: v.scaleInRequest(t), Package: v.pkg})
	must(t, lcm.ScaleEnd, res, err)
}

// heal heals the VM of h: heal_start naming its VNFC, Heat's new VM in
// its place with new addresses, heal_end with the instance that has it.
// heal_start's error comes back before Heat changes anything; the new VM
// is returned.
func (v *vnfm) heal(t *testing.T, h *sim.Host) (*sim.Host, *lcm.HookResult, error) {
	t.Helper()
	inst := v.instance()
	req := &lcm.HealVnfRequest{VnfcInstanceID: []string{kubescenarios.VnfcOf(inst, h.ServerID)}}
	res, err := v.invoke(lcm.HealStart, &lcm.HealOp{Instance: inst, Request: req, Package: v.pkg})
	if err != nil {
		return nil, res, err
	}
	healed, err := v.vnf.Heal(h.ServerID, sim.HealOptions{NewAddresses: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err = v.invoke(lcm.HealEnd, &lcm.HealOp{Instance: v.instance(), Request: req, Package: v.pkg})
	return healed, must(t, lcm.HealEnd, res, err), nil
}

// healEntire heals the entire VNF: heal_start with no VNFC named, Heat
// replacing every VM (same addresses), then heal_end; check runs between
// heal_start and Heat's change.
func (v *vnfm) healEntire(t *testing.T, check func()) *lcm.HookResult {
	t.Helper()
	req := &lcm.HealVnfRequest{}
	res, err := v.invoke(lcm.HealStart, &lcm.HealOp{Instance: v.instance(), Request: req, Package: v.pkg})
	must(t, lcm.HealStart, res, err)
	check()
	for _, h := range v.vnf.Hosts() {
		if _, err := v.vnf.Heal(h.ServerID, sim.HealOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	res, err = v.invoke(lcm.HealEnd, &lcm.HealOp{Instance: v.instance(), Request: req, Package: v.pkg})
	return must(t, lcm.HealEnd, res, err)
}

// terminate runs terminate_start, has Heat delete the stack (every VM
// gone), and runs terminate_end with the instance as it was; check runs
// between terminate_start and the delete, while the cluster still runs.
func (v *vnfm) terminate(t *testing.T, check func()) {
	t.Helper()
	op := &lcm.TerminateOp{Instance: v.instance(), Request: &lcm.TerminateVnfRequest{TerminationType: lcm.Forceful}, Package: v.pkg}
	res, err := v.invoke(lcm.TerminateStart, op)
	must(t, lcm.TerminateStart, res, err)
	check()
	if _, err := v.vnf.Delete(); err != nil {
		t.Fatal(err)
	}
	res, err = v.invoke(lcm.TerminateEnd, op)
	must(t, lcm.TerminateEnd, res, err)
}

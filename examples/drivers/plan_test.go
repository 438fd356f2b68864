package drivers_test

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

// planProof runs a hook twice on a cloud, first as a plan, then for real,
// and checks that the plan told the truth.
type planProof struct {
	t     *testing.T
	ctx   context.Context
	cloud *sim.Cloud
	// What the proof measured, for the log.
	hosts, steps, withheld, undetermined, undeterminedUnchanged, afterEnd int
}

// calls returns how many programs each host has run so far.
func (p *planProof) calls() map[string]int {
	n := map[string]int{}
	for _, h := range p.cloud.Hosts() {
		n[h.Resource] = len(h.SSH.Calls())
	}
	return n
}

// since returns the programs host h has run since mark.
func since(h *sim.Host, mark map[string]int) []sshtest.Call {
	return h.SSH.Calls()[mark[h.Resource]:]
}

// snapshot takes the cloud's snapshot.
func (p *planProof) snapshot() sim.Snapshot {
	p.t.Helper()
	s, err := p.cloud.Snapshot(p.ctx)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// readPrograms are the programs a plan may run, each with the first
// arguments that make it a read (none: any use of it reads). Every
// other program, or one of these with other arguments, changes the host.
var readPrograms = map[string][][]string{
	// The shell runs the SDK's read scripts (probes of files, units and
	// packages); what they run is checked on its own, as they call it.
	"sh": nil, "bash": nil, "timeout": nil, "sudo": nil, "true": nil, // sudo -n true: how the SDK learns sudo's mode
	"cat": nil, "head": nil, "stat": nil, "wc": nil, "sha256sum": nil, "openssl": {{"dgst"}},
	"ls": nil, "readlink": nil, "test": nil, "[": nil, "id": nil, "uname": nil, "grep": nil,
	"sed": nil, "cut": nil, "tr": nil, "sort": nil,
	"dpkg-query": nil, "dpkg": {{"--print-architecture"}},
	"systemctl":        {{"show"}, {"is-active"}, {"is-enabled"}},
	"hostname":         {{}},
	"sysctl":           nil, // with keys only: -p and -w are refused below
	"blkid":            {{"-p"}},
	"exportfs":         {{"-s"}},
	"ip":               {{"-o", "-4", "addr", "show"}, {"-o", "-6", "addr", "show"}, {"addr", "show"}},
	"kubeadm":          {{"version"}},
	"containerd":       {{"--version"}},
	"docker":           {{"version"}, {"inspect"}, {"image", "inspect"}},
	"curl":             nil, // the registry's health and a manifest's download: GETs
	"ansible-playbook": {{"--version"}},
}

// isRead reports whether a program call only reads.
func isRead(args []string) bool {
	prefixes, ok := readPrograms[path.Base(args[0])]
	if !ok {
		return false
	}
	rest := args[1:]
	if path.Base(args[0]) == "sysctl" && slices.ContainsFunc(rest, func(a string) bool { return strings.HasPrefix(a, "-") }) {
		return false
	}
	if prefixes == nil {
		return true
	}
	for _, p := range prefixes {
		if len(rest) >= len(p) && slices.Equal(rest[:len(p)], p) && (len(p) > 0 || len(rest) == 0) {
			return true
		}
	}
	return false
}

// kubectlRead reports whether a kubectl call only reads: get, diff, or an
// exec of `etcdctl member list`.
func kubectlRead(args []string) bool {
	var verbs []string
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			verbs = append(verbs, a)
		}
	}
	switch {
	case len(verbs) > 0 && (verbs[0] == "get" || verbs[0] == "diff"):
		return true
	case len(verbs) > 0 && verbs[0] == "exec":
		i := slices.Index(args, "--")
		return i > 0 && slices.Contains(args[i:], "member") && slices.Contains(args[i:], "list")
	}
	return false
}

// plan runs the plan of hook and checks that it changed nothing: the
// snapshot is the same after it, and every program it ran only reads.
func (p *planProof) plan(d lcm.Driver, hook lcm.Hook, op any) *lcm.HookResult {
	p.t.Helper()
	before, mark := p.snapshot(), p.calls()
	res, err := lcm.Plan(p.ctx, d, hook, op)
	if err != nil {
		p.t.Fatalf("plan of %s: %v", hook, err)
	}
	if !res.Plan {
		p.t.Errorf("the plan's result is not marked Plan")
	}
	for _, d := range before.Diff(p.snapshot()) {
		p.t.Errorf("the plan changed the cloud: %s", d)
	}
	for _, h := range p.cloud.Hosts() {
		for _, c := range since(h, mark) {
			if !isRead(c.Args) && !(path.Base(c.Args[0]) == "kubectl" && kubectlRead(c.Args)) {
				p.t.Errorf("%s: the plan ran %q", h.Resource, c.Args)
			}
		}
	}
	return res
}

// stepHost is one step's result on one host, over every time the hook
// ran the step there.
type stepHost struct{ step, host string }

// outcome folds a hook's results by step and host.
func outcome(res *lcm.HookResult) map[stepHost]lcm.Result {
	out := map[stepHost]lcm.Result{}
	for _, s := range res.Steps {
		for _, h := range s.Hosts {
			k := stepHost{s.Step, h.Host}
			out[k] = out[k].And(h.Result)
		}
	}
	return out
}

// The arguments of a command that differ between the plan and the real
// run: apt-get's lock timeout, what is left of the step's when it runs,
// and a new file system's UUID, which nfs chooses at random for mkfs.
var (
	lockTimeout = regexp.MustCompile(`^DPkg::Lock::Timeout=\d+$`)
	randomUUID  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

// sameCall reports whether a program call is the withheld command's.
func sameCall(call, withheld []string) bool {
	if len(call) != len(withheld) || path.Base(call[0]) != path.Base(withheld[0]) {
		return false
	}
	for i := 1; i < len(call); i++ {
		same := call[i] == withheld[i] ||
			lockTimeout.MatchString(call[i]) && lockTimeout.MatchString(withheld[i]) ||
			randomUUID.MatchString(call[i]) && randomUUID.MatchString(withheld[i])
		if !same {
			return false
		}
	}
	return true
}

// real runs hook for real after its plan, and checks the plan against
// it: a step the plan said would change changes its host, and the change
// withheld is among those the real run made on that host (the command
// ran, the file changed or the command that put it in place named it);
// a step that changes its host was, in the plan, one that would change
// it or an undetermined one; an undetermined step is counted.
func (p *planProof) real(plan *lcm.HookResult, d lcm.Driver, hook lcm.Hook, op any) *lcm.HookResult {
	p.t.Helper()
	before, mark := p.snapshot(), p.calls()
	res, err := lcm.Invoke(p.ctx, d, hook, op)
	if err != nil {
		p.t.Fatalf("%s: %v", hook, err)
	}
	after := p.snapshot()
	diff := map[string]bool{}
	for _, d := range before.Diff(after) {
		// "~ HOST file PATH: ..." and the like.
		key, _, _ := strings.Cut(d[2:], ": ")
		diff[key] = true
	}
	planned, done := outcome(plan), outcome(res)
	hosts := map[string]bool{}
	for k, r := range planned {
		hosts[k.host] = true
		p.steps++
		real := done[k]
		switch {
		case r.Withheld != nil:
			p.withheld++
			if !real.Changed {
				p.t.Errorf("plan: step %s on %s would %s; the real run: %s", k.step, k.host, r.Withheld.What(), real)
			}
			p.assertDone(r.Withheld, mark, diff)
		case r.Undetermined:
			p.undetermined++
			if !real.Changed {
				p.undeterminedUnchanged++
				p.t.Logf("undetermined, then unchanged: %s on %s (%s)", k.step, k.host, r.Detail)
			}
		case r.Changed:
			p.t.Errorf("plan: step %s on %s changed without a withheld change: %s", k.step, k.host, r)
		case real.Changed:
			p.t.Errorf("plan: step %s on %s unchanged; the real run: %s", k.step, k.host, real)
		}
	}
	// A plan that ended early (lcm.StepPlanEnd) lists none of the steps
	// the real run ran after that point: those may change hosts.
	ended := slices.ContainsFunc(plan.Steps, func(s lcm.StepResults) bool { return s.Step == lcm.StepPlanEnd })
	past := false
	for _, s := range res.Steps {
		for _, h := range s.Hosts {
			k := stepHost{s.Step, h.Host}
			if _, ok := planned[k]; ok {
				continue
			}
			past = past || ended
			switch {
			case past && h.Result.Changed:
				p.afterEnd++
			case h.Result.Changed:
				p.t.Errorf("the real run changed %s with step %s, which the plan did not list: %s", k.host, k.step, h.Result)
			}
		}
	}
	p.hosts += len(hosts)
	return res
}

// assertDone checks that the real run made the change w withheld.
func (p *planProof) assertDone(w *remote.WithheldError, mark map[string]int, diff map[string]bool) {
	p.t.Helper()
	var h *sim.Host
	for _, x := range p.cloud.Hosts() {
		if x.Resource == w.Host {
			h = x
		}
	}
	if h == nil {
		p.t.Errorf("withheld on %s, which is no host of the cloud", w.Host)
		return
	}
	calls := since(h, mark)
	if len(w.Args) > 0 && !slices.ContainsFunc(calls, func(c sshtest.Call) bool { return sameCall(c.Args, w.Args) }) {
		p.t.Errorf("%s: the plan withheld %q, which the real run did not run", w.Host, w.Args)
	}
	for _, f := range append(slices.Clone(w.Write), w.Remove...) {
		named := slices.ContainsFunc(calls, func(c sshtest.Call) bool { return slices.Contains(c.Args, f) })
		if !diff[w.Host+" file "+f] && !named {
			p.t.Errorf("%s: the plan withheld a change of %s, which the real run did not make", w.Host, f)
		}
	}
}

func (p *planProof) log(what string) {
	p.t.Logf("%s: %d hosts, %d step results: %d would change (each checked against the real run), %d undetermined (%d of them unchanged in the real run); %d changes of the real run after the plan's end",
		what, p.hosts, p.steps, p.withheld, p.undetermined, p.undeterminedUnchanged, p.afterEnd)
	p.hosts, p.steps, p.withheld, p.undetermined, p.undeterminedUnchanged, p.afterEnd = 0, 0, 0, 0, 0, 0
}

// assertNoChange checks that a plan of a converged VNF lists no change.
func (p *planProof) assertNoChange(plan *lcm.HookResult) {
	p.t.Helper()
	n := 0
	for k, r := range outcome(plan) {
		n++
		if r.Changed || r.Withheld != nil || r.Undetermined {
			p.t.Errorf("converged: the plan says step %s on %s: %s", k.step, k.host, r)
		}
	}
	if n == 0 {
		p.t.Error("converged: the plan ran no step")
	}
}

// TestPlanOfTheRegistryVNFIsTruthful: the plan of the registry VNF's
// instantiate_end on a fresh cloud runs only reads and changes nothing;
// the real run then changes exactly the steps the plan said it would
// (the undetermined ones aside, which are counted), with the changes
// the plan withheld; planned again, the converged VNF shows no change.
func TestPlanOfTheRegistryVNFIsTruthful(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cloud := sim.Start(t, sim.Options{})
	pkg := lcm.NewPackage(samples.VNFPackage())
	pl := plumbing.Config{SSH: cloud.SSHConfigFunc(slog.New(slog.DiscardHandler))}
	req, topo, err := cloud.SampleRegistry(samples.InstantiateCIRRegistry)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	d := &registry.VNFDriver{Plumbing: pl}
	op := &lcm.InstantiateOp{Instance: reg.Instance(), Request: req, Package: pkg}
	p := &planProof{t: t, ctx: ctx, cloud: cloud}
	plan := p.plan(d, lcm.InstantiateEnd, op)
	logPlan(t, plan)
	p.real(plan, d, lcm.InstantiateEnd, op)
	p.log("registry VNF instantiate_end")
	p.assertNoChange(p.plan(d, lcm.InstantiateEnd, op))
}

// TestPlanOfTheClusterIsTruthful: the same for the kubeadm cluster with
// both registries and the storage server (the pv sample with the cir
// sample's registry connections): instantiate_end on a fresh cloud, then
// planned again once converged, then scale_end after Heat added a
// worker, whose plan lists the new worker's steps and what the real run
// then changes on the others.
func TestPlanOfTheClusterIsTruthful(t *testing.T) {
	for _, shape := range []sim.ClusterShape{{Masters: 1, Workers: 1}, {Masters: 3, Workers: 2}} {
		t.Run(fmt.Sprintf("%d masters %d workers", shape.Masters, shape.Workers), func(t *testing.T) {
			planCluster(t, shape)
		})
	}
}

// planCluster is TestPlanOfTheClusterIsTruthful for one shape.
func planCluster(t *testing.T, shape sim.ClusterShape) {
	c := newCIR(t, withRegistries(t, request(t, samples.InstantiatePVCluster)), shape, world.ExternalRegistryPassword)
	p := &planProof{t: t, ctx: c.ctx, cloud: c.cloud}
	op := &lcm.InstantiateOp{Instance: c.cluster.Instance(), Request: c.req, Package: c.pkg}
	plan := p.plan(c.driver, lcm.InstantiateEnd, op)
	logPlan(t, plan)
	p.real(plan, c.driver, lcm.InstantiateEnd, op)
	p.log("cluster instantiate_end")
	p.assertNoChange(p.plan(c.driver, lcm.InstantiateEnd, op))

	before := c.cluster.Instance()
	added, err := c.cluster.ScaleOut("worker_instance", 1)
	if err != nil {
		t.Fatal(err)
	}
	sop := &lcm.ScaleOp{Instance: before, Request: &lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: "worker_instance", NumberOfSteps: 1}, Package: c.pkg}
	plan = p.plan(c.driver, lcm.ScaleEnd, sop)
	for k, r := range outcome(plan) {
		if k.host != added[0].Resource && (r.Withheld != nil || r.Undetermined) {
			t.Logf("scale_end plan on an old node: %s on %s: %s", k.step, k.host, r)
		}
	}
	p.real(plan, c.driver, lcm.ScaleEnd, sop)
	p.log("cluster scale_end")
}

// logPlan logs a plan, step by step.
func logPlan(t *testing.T, plan *lcm.HookResult) {
	t.Helper()
	var lines []string
	for _, s := range plan.Steps {
		for _, h := range s.Hosts {
			lines = append(lines, s.Step+" "+h.Host+": "+h.Result.String())
		}
	}
	t.Logf("plan:\n%s", strings.Join(lines, "\n"))
}

// TestPlanOfKubesprayIsTruthful: the same for the kubespray driver with
// its external load balancer: instantiate_end on a fresh cloud. Its
// playbook run is one command on the Ansible server, which a plan
// withholds; what the playbook would change on the nodes, only the
// playbook knows (and it reports it when it runs).
func TestPlanOfKubesprayIsTruthful(t *testing.T) {
	w := newKS(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	p := &planProof{t: t, ctx: w.ctx, cloud: w.cloud}
	op := &lcm.InstantiateOp{Instance: w.cluster.Instance(), Request: w.req, Package: w.pkg}
	plan := p.plan(w.driver, lcm.InstantiateEnd, op)
	logPlan(t, plan)
	p.real(plan, w.driver, lcm.InstantiateEnd, op)
	p.log("kubespray instantiate_end")
}

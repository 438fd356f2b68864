package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// tour runs scenarios against one simulated cloud and reports on them.
type tour struct {
	opts   options
	in     inputs
	out    io.Writer // what operations show along the way
	main   io.Writer // the progress of the story and the summary
	cloud  *sim.Cloud
	heat   *heat.Client
	logger *slog.Logger
	report Report
	vnfs   map[string]*sim.VNF // by VNF label, for the world summary
	// outside are the VMs a VNF uses that its stack does not hold (the
	// Ansible server), with the VNF's label.
	outside map[*sim.Host]string
	// plumbing is how the drivers reach Heat and the VMs: the cloud's SSH
	// settings; Heat from each instance's vimConnectionInfo.
	plumbing plumbing.Config
	// clusterDriver is the Kubernetes cluster VNFs' management driver.
	clusterDriver *drivers.ClusterDriver
	// ops counts the operations started, for the progress lines.
	ops int
	// plan is the -plan report of the hook the current operation ran.
	plan *PlanReport
	// started is when the tour started.
	started time.Time
}

// Report is the -json output.
type Report struct {
	// Scenarios are the scenarios run, in order, with their outcome.
	Scenarios []ScenarioResult `json:"scenarios"`
	// Operations are every operation of the scenarios that were not
	// rejected, in order: those that ran, and those skipped after a
	// failure.
	Operations []Operation `json:"operations"`
	// Passed, Failed and Skipped count the operations; Rejected the
	// scenarios (rejected by validation, or by a hook's check of its
	// parameters before it changed anything).
	Passed   int   `json:"passed"`
	Failed   int   `json:"failed"`
	Skipped  int   `json:"skipped"`
	Rejected int   `json:"rejected"`
	World    World `json:"world"`
}

// The statuses of a scenario and of an operation.
const (
	// StatusOK is an operation that ran and passed, or a scenario whose
	// every operation did.
	StatusOK = "ok"
	// StatusFailed is an operation that ran and failed, or a scenario
	// with such an operation.
	StatusFailed = "failed"
	// StatusSkipped is an operation that did not run because an earlier
	// operation of its scenario failed.
	StatusSkipped = "skipped"
	// StatusRejected is a scenario whose request bodies failed
	// validation (none of its operations ran, on any of its VNFs), or
	// whose hook refused its parameters before changing anything (an
	// *lcm.ParamsError once it saw the VMs: a Service network holding
	// the nodes' addresses, a kubernetes_version the package repository
	// lacks); the operations after that hook are skipped. It is also the
	// status of that hook's operation.
	StatusRejected = "rejected"
)

// ScenarioResult is the outcome of one scenario.
type ScenarioResult struct {
	Name string `json:"name"`
	// Status is StatusOK, StatusFailed or StatusRejected.
	Status string `json:"status"`
	// Error is why the scenario was rejected (every problem, with its path
	// in additionalParams) or which operation failed.
	Error string `json:"error,omitempty"`
	// RejectedBy is the operation that rejected the scenario ("cir-cluster
	// instantiate_end") when a hook did, after the operations before it
	// ran; empty when validation did, before anything ran.
	RejectedBy string `json:"rejectedBy,omitempty"`
}

// Operation is one hook run (or one VIM action between hooks, or one
// check of an outcome).
type Operation struct {
	Scenario string `json:"scenario"`
	VNF      string `json:"vnf"`
	Hook     string `json:"hook"`
	// What the operation did, in a few words.
	What string `json:"what"`
	// Status is StatusOK, StatusFailed, StatusRejected (a hook that
	// refused its parameters and changed nothing) or StatusSkipped; OK
	// is whether it is StatusOK.
	Status string `json:"status"`
	OK     bool   `json:"ok"`
	// Error is the failure, or why the operation was skipped, whenever OK
	// is false.
	Error string `json:"error,omitempty"`
	// Hosts are the hosts the operation acted on; HostsChanged those it
	// changed.
	Hosts        []string `json:"hosts"`
	HostsChanged []string `json:"hostsChanged"`
	// Commands is how many SSH commands the operation ran, over all hosts.
	Commands int           `json:"commands"`
	Duration time.Duration `json:"durationNs"`
	// Plan is the hook's dry run and how the run compared with it, with
	// -plan (Commands then counts the plan's read-only commands too).
	Plan *PlanReport `json:"plan,omitempty"`
}

// World is the state of the simulated cloud after the tour.
type World struct {
	Hosts   []WorldHost `json:"hosts"`
	Retired int         `json:"retiredHosts"`
}

// WorldHost is one running VM.
type WorldHost struct {
	VNF        string   `json:"vnf"`
	Resource   string   `json:"resource"`
	Role       lcm.Role `json:"role"`
	SSHAddress string   `json:"sshAddress"`
	NICAddress string   `json:"nicAddress"`
	ServerID   string   `json:"serverId"`
	Packages   int      `json:"packages"`
	Active     []string `json:"activeServices"`
}

func newTour(ctx context.Context, o options, in inputs, out io.Writer) (*tour, error) {
	cloud, err := sim.New(sim.Options{})
	if err != nil {
		return nil, fmt.Errorf("starting the simulated cloud: %w", err)
	}
	hc, err := cloud.HeatClient(ctx)
	if err != nil {
		cloud.Close()
		return nil, fmt.Errorf("connecting to the simulated Heat: %w", err)
	}
	t := &tour{opts: o, in: in, out: out, main: out, started: time.Now(), cloud: cloud, heat: hc, vnfs: map[string]*sim.VNF{}, outside: map[*sim.Host]string{}}
	if o.json {
		t.out, t.main = io.Discard, io.Discard
	}
	steps := io.Discard // each host's steps: with -v
	if o.verbose {
		steps = t.out
	}
	t.logger = slog.New(&progressHandler{w: steps})
	t.plumbing = plumbing.Config{SSH: cloud.SSHConfigFunc(nil)}
	t.clusterDriver = &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: t.plumbing}}
	// The HTTPS registry outside the VNFs that the cir sample connects to.
	if in.pkg != nil {
		if _, err := world.AddExternalRegistry(cloud, in.pkg, world.ExternalRegistryPassword); err != nil {
			cloud.Close()
			return nil, err
		}
	}
	t.sayf("Simulated cloud: Keystone at %s; VMs on loopback, SSH verified against %s\n", cloud.Heat().IdentityEndpoint(), cloud.KnownHostsFile())
	return t, nil
}

func (t *tour) close() { t.cloud.Close() }

// printf prints what an operation shows along the way: the topology Heat
// reports, kubectl's tables, what a check found.
func (t *tour) printf(format string, args ...any) { fmt.Fprintf(t.out, format, args...) }

// sayf prints the story's progress: the scenarios, each operation as it
// starts and ends, the summary.
func (t *tour) sayf(format string, args ...any) { fmt.Fprintf(t.main, format, args...) }

// operation runs fn as one reported operation of a hook. An
// *lcm.ParamsError from a hook that changed nothing is a rejection, not a
// failure: the hook refused its parameters before acting, as validation
// does before the scenario runs.
func (t *tour) operation(ctx context.Context, scenario, vnf string, hook lcm.Hook, what string, fn func(ctx context.Context) (hosts, changed []string, err error)) error {
	t.ops++
	t.sayf("→ [%d] %s %s: %s\n", t.ops, vnf, hook, what)
	ctx = lcm.WithLogger(lcm.WithHook(ctx, hook), t.logger)
	before := t.commands()
	start := time.Now()
	t.plan = nil
	hosts, changed, err := fn(ctx)
	op := Operation{
		Scenario: scenario, VNF: vnf, Hook: string(hook), What: what, Status: StatusOK, OK: err == nil,
		Hosts: nonNil(hosts), HostsChanged: nonNil(changed),
		Commands: t.commands() - before, Duration: time.Since(start), Plan: t.plan,
	}
	switch {
	case rejected(err, changed):
		op.Status, op.Error = StatusRejected, err.Error()
		t.sayf("  rejected, no change made: %s\n", indent(err.Error()))
	case err != nil:
		op.Status, op.Error = StatusFailed, err.Error()
		t.report.Failed++
		t.sayf("  FAILED: %v\n", err)
	default:
		t.report.Passed++
		t.sayf("  ok: %d hosts, %d changed, %d commands, %s\n", len(op.Hosts), len(op.HostsChanged), op.Commands, op.Duration.Round(time.Millisecond))
	}
	t.report.Operations = append(t.report.Operations, op)
	return err
}

// rejected reports whether an operation's error is a hook's refusal of
// its parameters that changed no host: an *lcm.ParamsError.
func rejected(err error, changed []string) bool {
	var pe *lcm.ParamsError
	return errors.As(err, &pe) && len(changed) == 0
}

// skip reports a planned operation that did not run, and why.
func (t *tour) skip(scenario string, st step, reason string) {
	t.ops++
	t.sayf("→ [%d] %s %s: %s\n  skipped: %s\n", t.ops, st.vnf, st.hook, st.what, reason)
	t.report.Skipped++
	t.report.Operations = append(t.report.Operations, Operation{
		Scenario: scenario, VNF: st.vnf, Hook: string(st.hook), What: st.what, Status: StatusSkipped,
		Error: reason, Hosts: []string{}, HostsChanged: []string{},
	})
}

// reject reports a scenario that validation rejected: nothing ran.
func (t *tour) reject(scenario string, err error) {
	t.sayf("  rejected, nothing ran: %s\n", indent(err.Error()))
	t.report.Rejected++
	t.report.Scenarios = append(t.report.Scenarios, ScenarioResult{Name: scenario, Status: StatusRejected, Error: err.Error()})
}

// endScenario reports a scenario that ran: failed is its failed
// operation, or nil; rejectedBy names the operation whose hook refused
// the parameters, failed then being its error.
func (t *tour) endScenario(scenario string, failed error, rejectedBy string) {
	r := ScenarioResult{Name: scenario, Status: StatusOK}
	switch {
	case rejectedBy != "":
		r.Status, r.Error, r.RejectedBy = StatusRejected, failed.Error(), rejectedBy
		t.report.Rejected++
	case failed != nil:
		r.Status, r.Error = StatusFailed, failed.Error()
	}
	t.report.Scenarios = append(t.report.Scenarios, r)
}

// indent indents the lines of a multi-line message after the first.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// hookHosts lists the hosts a hook acted on and those it changed.
func hookHosts(res *lcm.HookResult) (hosts, changed []string) {
	if res == nil {
		return nil, nil
	}
	for _, st := range res.Steps {
		for _, h := range st.Hosts {
			if !slices.Contains(hosts, h.Host) {
				hosts = append(hosts, h.Host)
			}
			if h.Result.Changed && !slices.Contains(changed, h.Host) {
				changed = append(changed, h.Host)
			}
		}
	}
	return hosts, changed
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// commands counts the SSH commands every host, running or retired, has
// served.
func (t *tour) commands() int {
	n := 0
	for _, h := range append(t.cloud.Hosts(), t.cloud.Retired()...) {
		n += len(h.SSH.Transcript())
	}
	return n
}

// finish prints the summary, or the JSON report.
func (t *tour) finish() {
	for _, h := range t.cloud.Hosts() {
		wh := WorldHost{
			Resource: h.Resource, Role: h.Role, SSHAddress: h.SSHAddress, NICAddress: h.NICAddress,
			ServerID: h.ServerID, Packages: len(h.Machine.Packages()), Active: []string{},
		}
		for label, v := range t.vnfs {
			for _, vh := range v.Hosts() {
				if vh == h {
					wh.VNF = label
				}
			}
			if t.outside[h] == label {
				wh.VNF = label
			}
		}
		for name, s := range h.Machine.Services() {
			if s.Active {
				wh.Active = append(wh.Active, name)
			}
		}
		t.report.World.Hosts = append(t.report.World.Hosts, wh)
	}
	t.report.World.Retired = len(t.cloud.Retired())
	if t.opts.json {
		return
	}
	t.summary()
}

// shape is a cluster's shape with -workers and -masters applied.
func (t *tour) shape(s sim.ClusterShape) sim.ClusterShape {
	if t.opts.workers > 0 {
		s.Workers = t.opts.workers
	}
	if t.opts.masters > 0 {
		s.Masters = t.opts.masters
	}
	return s
}

// summary prints the report as a compact table: one row per scenario,
// then each failure, skip and rejection with its reason.
func (t *tour) summary() {
	r := &t.report
	t.sayf("\nSummary: %d operations, %d passed, %d failed, %d skipped; %d scenarios rejected; %d VMs running, %d retired by scale-in and heal; %s\n",
		len(r.Operations), r.Passed, r.Failed, r.Skipped, r.Rejected, len(r.World.Hosts), r.World.Retired, time.Since(t.started).Round(10*time.Millisecond))
	scenarioOf := map[string]string{} // VNF label → scenario
	for _, op := range r.Operations {
		scenarioOf[op.VNF] = op.Scenario
	}
	t.sayf("  %-10s %-8s %4s %4s %6s %7s %5s %4s %8s %9s\n", "SCENARIO", "STATUS", "OPS", "OK", "FAILED", "SKIPPED", "HOOKS", "VMS", "COMMANDS", "TIME")
	for _, sc := range r.Scenarios {
		var ops, ok, failed, skipped, hooks, commands, vms int
		var took time.Duration
		for _, op := range r.Operations {
			if op.Scenario != sc.Name {
				continue
			}
			ops++
			switch op.Status {
			case StatusOK:
				ok++
			case StatusSkipped:
				skipped++
			default:
				failed++
			}
			if slices.Contains(lcm.Hooks(), lcm.Hook(op.Hook)) && op.Status != StatusSkipped {
				hooks++
			}
			commands += op.Commands
			took += op.Duration
		}
		for _, h := range r.World.Hosts {
			if scenarioOf[h.VNF] == sc.Name {
				vms++
			}
		}
		t.sayf("  %-10s %-8s %4d %4d %6d %7d %5d %4d %8d %9s\n", sc.Name, sc.Status, ops, ok, failed, skipped, hooks, vms, commands, took.Round(time.Millisecond))
	}
	for _, sc := range r.Scenarios {
		switch {
		case sc.Status == StatusRejected && sc.RejectedBy != "":
			t.sayf("  %s: rejected by %s, no change made: %s\n", sc.Name, sc.RejectedBy, indent(sc.Error))
		case sc.Status == StatusRejected:
			t.sayf("  %s: rejected, nothing ran: %s\n", sc.Name, indent(sc.Error))
		}
	}
	for _, op := range r.Operations {
		if op.Status == StatusFailed {
			t.sayf("  %s: %s %s (%s) FAILED: %s\n", op.Scenario, op.VNF, op.Hook, op.What, indent(op.Error))
		}
	}
}

// exitCode is the tour's exit status for its report: exitFailed when an
// operation failed, else exitRejected when validation or a hook rejected
// a scenario (the operations a hook's rejection skipped included), else
// exitOK (every operation of every scenario ran and passed).
func (r *Report) exitCode() int {
	switch {
	case r.Failed > 0:
		return exitFailed
	case r.Rejected > 0:
		return exitRejected
	case r.Skipped > 0:
		return exitFailed
	case r.Passed == 0 || r.Passed != len(r.Operations):
		return exitFailed // no scenario ran: never a silent pass
	}
	return exitOK
}

// writeJSON prints the report.
func (t *tour) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t.report)
}

// printTopology prints nodes as Heat reported them.
func (t *tour) printTopology(title string, nodes []lcm.Node) {
	t.printf("%s\n", title)
	for _, n := range nodes {
		t.printf("  %-12s %-24s ssh %-12s nic %-12s server %s\n", n.Role, n.Resource, n.SSHAddress, n.NICAddress, short(n.ServerID))
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// progressHandler prints the step records of lcm.Do and lcm.OnHosts as
// one line per host and step.
type progressHandler struct {
	mu sync.Mutex
	w  io.Writer
}

func (h *progressHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *progressHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value
		return true
	})
	status := "ok"
	switch r.Message {
	case lcm.MsgStepFailed:
		status = "FAILED"
	case lcm.MsgStepSkipped:
		status = "skipped"
	case lcm.MsgStepFinished:
		if attrs[lcm.AttrChanged].Bool() {
			status = "changed"
		}
	default:
		return nil
	}
	took := "" // a skipped host has no duration
	if d, ok := attrs[lcm.AttrDuration]; ok && d.Kind() == slog.KindDuration {
		took = d.Duration().Round(time.Millisecond).String()
	}
	line := fmt.Sprintf("  %-24s %-26s %-8s %6s", attrs[lcm.AttrStep].String(), attrs[lcm.AttrHost].String(), status, took)
	if d, ok := attrs[lcm.AttrDetail]; ok && d.String() != "" {
		line += "  " + d.String()
	}
	if e, ok := attrs[lcm.AttrError]; ok {
		line += "  " + e.String()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintln(h.w, strings.TrimRight(line, " "))
	return err
}

func (h *progressHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *progressHandler) WithGroup(string) slog.Handler      { return h }

// checkNodes is the step every scenario runs on the nodes it resolved:
// connect over SSH as the role's user (host key verified), read
// /etc/os-release and require Ubuntu, and require a 64-bit x86 or Arm
// machine (the reference checks Ubuntu and x86_64). It changes nothing.
func (t *tour) checkNodes(ctx context.Context, nodes []lcm.Node, logins plumbing.Credentials) (hosts []string, err error) {
	cfg, err := t.cloud.SSHConfig()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		hosts = append(hosts, n.Resource)
	}
	_, err = lcm.OnHosts(ctx, "check-node", nodes, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		l, ok := logins[n.Role]
		if !ok {
			return lcm.Unchanged, fmt.Errorf("no login for role %s in additionalParams", n.Role)
		}
		c := cfg
		c.Addr, c.Name, c.User, c.Password = n.SSHAddress, n.Resource, l.Username, l.Password
		h, err := remote.Dial(ctx, c)
		if err != nil {
			return lcm.Unchanged, err
		}
		defer h.Close()
		osr, err := system.ReadOSRelease(ctx, h)
		if err != nil {
			return lcm.Unchanged, err
		}
		if osr.ID() != "ubuntu" {
			return lcm.Unchanged, fmt.Errorf("runs %s, want Ubuntu", osr)
		}
		out, err := h.Run(ctx, remote.Command("uname", "-m"))
		if err != nil {
			return lcm.Unchanged, err
		}
		arch := strings.TrimSpace(string(out.Stdout))
		if arch != "x86_64" && arch != "aarch64" {
			return lcm.Unchanged, fmt.Errorf("machine %q is neither x86_64 nor aarch64", arch)
		}
		return lcm.Result{Detail: osr.String() + " " + arch}, nil
	})
	return hosts, err
}

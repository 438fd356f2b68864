package plumbing

import (
	"context"
	"errors"
	"sync"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// NodeFunc is a step's work on one node over its connection: what
// [Runner.OnNodes] and [Session.OnNodes] run, and an [Extension]'s work at
// a per-node moment. It must be idempotent, as every step is.
type NodeFunc func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error)

// Runner is one hook's work on a VNF's VMs: the hook's [Session], the
// [lcm.HookResult] every step it runs is recorded in, in order, and the
// bound on how many nodes a step works on at once ([Config.Limit]).
// Domain packages' hooks (registry, kubeadm, kubespray) are written as
// functions of a Runner; [Config.Run] makes one. It is safe for
// concurrent use, but steps recorded concurrently are recorded in the
// order they end.
type Runner struct {
	session *Session
	limit   int

	mu     sync.Mutex
	result *lcm.HookResult
}

// Run runs work as hook of the VNF instance inst: it opens a session with
// creds (see [Config.Open]), hands work a [Runner] over it, closes the
// session when work returns, and returns what the steps did together
// with work's error. The result is nil only when the session could not
// be opened (nothing ran); otherwise it lists every step that ran, also
// when work failed half-way, so that a VNFM can report how far a hook
// got. The context work gets carries the hook for [lcm]'s events.
func (c Config) Run(ctx context.Context, hook lcm.Hook, inst *lcm.VnfInstance, creds Credentials, work func(ctx context.Context, r *Runner) error) (*lcm.HookResult, error) {
	ctx = lcm.WithHook(ctx, hook)
	s, err := c.Open(ctx, inst, creds)
	if err != nil {
		return nil, err
	}
	r := &Runner{session: s, limit: c.Limit, result: &lcm.HookResult{Hook: hook}}
	err = work(ctx, r)
	if cerr := s.Close(); cerr != nil && err == nil {
		// A connection that fails to close after every step succeeded
		// changes nothing the hook did: report it, do not fail the hook
		// for it.
		r.result.Add(StepClose, lcm.Results{{Host: "session", Result: lcm.Result{Detail: cerr.Error()}}})
	}
	return r.result, err
}

// StepClose is the step under which [Config.Run] records connections
// that failed to close after the hook's work succeeded.
const StepClose = "close-connections"

// Session returns the hook's session: Heat, the stack and one connection
// per node.
func (r *Runner) Session() *Session { return r.session }

// Result returns what the hook did so far. The VNFM gets it from
// [Config.Run]; work adds to it through the Runner's methods, or with
// [Runner.Record] and [Runner.AddVimConnection] for what is not a step's
// per-host result.
func (r *Runner) Result() *lcm.HookResult { return r.result }

// Record adds the per-host results of a step to the hook's result.
func (r *Runner) Record(step string, rs lcm.Results) {
	if len(rs) == 0 {
		return
	}
	r.mu.Lock()
	r.result.Add(step, rs)
	r.mu.Unlock()
}

// Note records a step that did nothing on nodes, each with detail as
// its result: why it was not needed or not possible (a script_path the
// native steps do not use, a cluster none of whose masters answers).
func (r *Runner) Note(step string, nodes []lcm.Node, detail string) {
	var rs lcm.Results
	for _, n := range nodes {
		rs = append(rs, lcm.HostResult{Host: n.Name(), Step: step, Result: lcm.Result{Detail: detail}})
	}
	r.Record(step, rs)
}

// AddVimConnection adds a VIM connection for the VNFM to store
// ([lcm.HookResult.AddVimConnections]).
func (r *Runner) AddVimConnection(info lcm.VimConnectionInfo) {
	r.mu.Lock()
	r.result.AddVimConnections = append(r.result.AddVimConnections, info)
	r.mu.Unlock()
}

// RemoveVimConnection adds the ID of a VIM connection for the VNFM to
// remove ([lcm.HookResult.RemoveVimConnections]).
func (r *Runner) RemoveVimConnection(id string) {
	r.mu.Lock()
	r.result.RemoveVimConnections = append(r.result.RemoveVimConnections, id)
	r.mu.Unlock()
}

// fanout returns the fan-out options of a step: the runner's limit, then
// opts, which may override it.
func (r *Runner) fanout(opts []lcm.Option) []lcm.Option {
	if r.limit > 0 {
		return append([]lcm.Option{lcm.Limit(r.limit)}, opts...)
	}
	return opts
}

// OnNodes runs step on nodes over their connections ([Session.OnNodes]),
// at most the runner's limit at once unless opts say otherwise, records
// the per-node results, and returns their error. No nodes: nothing is
// run or recorded.
func (r *Runner) OnNodes(ctx context.Context, step string, nodes []lcm.Node, fn NodeFunc, opts ...lcm.Option) error {
	if len(nodes) == 0 {
		return nil
	}
	rs, err := r.session.OnNodes(ctx, step, nodes, fn, r.fanout(opts)...)
	r.Record(step, rs)
	return err
}

// Each runs step for nodes without connecting to them (work that goes
// through another node, such as a control plane's API), as OnNodes does
// otherwise.
func (r *Runner) Each(ctx context.Context, step string, nodes []lcm.Node, fn func(ctx context.Context, n lcm.Node) (lcm.Result, error), opts ...lcm.Option) error {
	if len(nodes) == 0 {
		return nil
	}
	rs, err := lcm.OnHosts(ctx, step, nodes, fn, r.fanout(opts)...)
	r.Record(step, rs)
	return err
}

// Once runs a step that acts once for the whole VNF (apply a manifest,
// create the VIM's credentials), recorded against node on: the node whose
// connection or API it uses.
func (r *Runner) Once(ctx context.Context, step string, on lcm.Node, fn func(ctx context.Context) (lcm.Result, error)) error {
	if on.Name() == "" {
		return errors.New("plumbing: Once: step " + step + " names no node to record it against")
	}
	return r.Each(ctx, step, []lcm.Node{on}, func(ctx context.Context, _ lcm.Node) (lcm.Result, error) { return fn(ctx) })
}

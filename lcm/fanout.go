package lcm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Named is anything with a name to report results under: a remote host, a
// Kubernetes node, a test fake. Names should be unique within one fan-out.
type Named interface {
	Name() string
}

// DefaultLimit is how many hosts [OnHosts] works on at once unless [Limit]
// says otherwise: 32, so that a cluster of a few masters and twenty-odd
// workers is configured in one wave, not two or three.
//
// What a host in flight costs the VNFM was measured on the registry trust
// of the cir sample (examples/drivers BenchmarkTrustFanoutCost, the
// simulated VMs in another process, 20 and 50 hosts at once): 0.2 to
// 0.3 MiB of live heap, at most 0.5 MiB of RSS, 20 to 25 goroutines and
// one file descriptor (its SSH connection), so 32 hosts cost under 10 MiB
// and 32 descriptors.
//
// What it buys: against VMs, where a host's time is network round trips
// and the VM's own CPU, N hosts take about ceil(N/limit) times one host's
// time. With 20 ms per command (BENCHMARKS.md), 20 hosts running 5
// commands take 1.1 times one host's time at this limit and 2.1 times at
// 10 (lcm BenchmarkFanoutLatency); kubeadm's BenchmarkScaleOut20 joins 20
// workers in 1.3 times one worker's time at a limit of 20 or more, and in
// 2.0 times at 10. The simulation shows it only up to its own CPU: its VMs
// run in the VNFM's process, on the same cores, so the registry trust of
// examples/drivers BenchmarkTrustFanout (2 shared cores) is CPU-bound from
// about 10 hosts at once.
//
// Every host is a distinct machine with its own SSH connection, so sshd's
// per-connection MaxSessions (10 by default; remote.Config.MaxSessions
// keeps 8) never bounds hosts at once. sshd's MaxStartups (10:30:100:
// beyond 10 unauthenticated connections to one sshd, it drops 30 % of new
// ones) does, when every connection reaches one sshd, a bastion dialed
// per host or many nodes behind one address: that is bounded apart, by
// the handshakes in flight (remote.Config.Handshakes; package plumbing
// keeps 8 per hook), not by this limit. What the limit still protects is
// what the hosts share: the VNFM's CPU, the package mirror or registry all
// nodes download from at once, and the Kubernetes API server nodes join
// through. Lower it with [Limit] for a small mirror or a busy VNFM; pass
// len(hosts) for no limit.
const DefaultLimit = 32

// Policy says what [OnHosts] does when a host fails.
type Policy int

const (
	// FailFast, the default, cancels the context given to the hosts still
	// running when the first host fails, and does not start the hosts that
	// had not started yet; they are reported as skipped.
	FailFast Policy = iota
	// BestEffort runs the step on every host whatever the others do.
	BestEffort
)

// String returns "fail-fast" or "best-effort".
func (p Policy) String() string {
	switch p {
	case FailFast:
		return "fail-fast"
	case BestEffort:
		return "best-effort"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// Option configures [OnHosts].
type Option func(*fanout)

type fanout struct {
	limit  int
	policy Policy
}

// Limit sets how many hosts OnHosts works on at once. Values below 1 mean 1
// (one host after the other); pass len(hosts) for no limit.
func Limit(n int) Option {
	return func(f *fanout) { f.limit = max(n, 1) }
}

// WithPolicy sets the failure policy; the default is [FailFast].
func WithPolicy(p Policy) Option {
	return func(f *fanout) { f.policy = p }
}

// HostResult is the outcome of one step on one host.
type HostResult struct {
	Host     string        // the host's Name
	Step     string        // the step name given to OnHosts
	Result   Result        // what the step changed; may be set even on failure
	Err      error         // why the step failed, or why it was skipped
	Skipped  bool          // the step was not run on this host
	Duration time.Duration // how long the step ran; 0 when skipped
}

// Results holds one HostResult per host, in the order the hosts were given.
type Results []HostResult

// Changed reports whether the step changed at least one host.
func (rs Results) Changed() bool {
	for _, r := range rs {
		if r.Result.Changed {
			return true
		}
	}
	return false
}

// Failed returns the hosts on which the step ran and failed; skipped hosts
// are not included.
func (rs Results) Failed() Results {
	var out Results
	for _, r := range rs {
		if r.Err != nil && !r.Skipped {
			out = append(out, r)
		}
	}
	return out
}

// Err returns the failures as an [errors.Join] of [*HostError] values in
// host order, or nil when every host succeeded. When no host failed but
// some were skipped (the caller's context ended), it returns the skipped
// hosts' errors instead, so that an interrupted fan-out never looks like a
// success.
func (rs Results) Err() error {
	var failed, skipped []error
	for _, r := range rs {
		if r.Err == nil {
			continue
		}
		he := &HostError{Host: r.Host, Step: r.Step, Err: r.Err}
		if r.Skipped {
			skipped = append(skipped, he)
		} else {
			failed = append(failed, he)
		}
	}
	if len(failed) > 0 {
		return errors.Join(failed...)
	}
	return errors.Join(skipped...)
}

// HostError is a step's failure on one host. errors.Is and errors.As see
// through it to Err.
type HostError struct {
	Host string
	Step string
	Err  error
}

// Error returns `host "<host>": step "<step>": <err>`.
func (e *HostError) Error() string {
	return fmt.Sprintf("host %q: step %q: %v", e.Host, e.Step, e.Err)
}

// Unwrap returns Err.
func (e *HostError) Unwrap() error { return e.Err }

// OnHosts runs fn for every host, at most [DefaultLimit] (or [Limit]) at a
// time, and returns one [HostResult] per host in input order together with
// [Results.Err]: nil when every host succeeded, else an [errors.Join] of
// [*HostError] values.
//
// Hosts are started in input order. Under [FailFast] (the default) the
// first failure cancels the context passed to the hosts still running, and
// hosts not started yet are not run but reported with Skipped set; under
// [BestEffort] every host runs. Hosts not started when ctx ends are skipped
// under either policy.
//
// Every host goes through [Do], so each emits one log record, and a panic
// in fn becomes that host's [*PanicError] instead of crashing the process.
// Skipped hosts emit a [MsgStepSkipped] record. An empty host list returns
// no results and no error.
func OnHosts[H Named](ctx context.Context, step string, hosts []H, fn func(context.Context, H) (Result, error), opts ...Option) (Results, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	cfg := fanout{limit: DefaultLimit, policy: FailFast}
	for _, o := range opts {
		o(&cfg)
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name()
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make(Results, len(hosts))
	sem := make(chan struct{}, cfg.limit)
	var wg sync.WaitGroup
	for i, h := range hosts {
		sem <- struct{}{} // start hosts in order, at most cfg.limit at once
		wg.Go(func() {
			defer func() { <-sem }()
			r := HostResult{Host: names[i], Step: step}
			if runCtx.Err() != nil {
				r.Skipped = true
				r.Err = fmt.Errorf("not run: %w", context.Cause(runCtx))
				logSkipped(runCtx, step, r.Host, r.Err)
				results[i] = r
				return
			}
			r.Result, r.Duration, r.Err = do(runCtx, step, r.Host, func(ctx context.Context) (Result, error) {
				return fn(ctx, h)
			})
			if r.Err != nil && cfg.policy == FailFast {
				cancel(fmt.Errorf("step %q failed on host %q", step, r.Host))
			}
			results[i] = r
		})
	}
	wg.Wait()
	return results, results.Err()
}

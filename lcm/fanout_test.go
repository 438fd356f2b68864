package lcm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
)

type host string

func (h host) Name() string { return string(h) }

func hosts(n int) []host {
	hs := make([]host, n)
	for i := range hs {
		hs[i] = host(fmt.Sprintf("node%d", i))
	}
	return hs
}

// concurrency runs OnHosts over n hosts with opts and returns the largest
// number of steps seen running at once. Each step blocks until want steps
// have started, so the maximum is reached without relying on timing.
func concurrency(t *testing.T, n, want int, opts ...lcm.Option) int64 {
	t.Helper()
	var active, peak atomic.Int64
	started := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := lcm.OnHosts(context.Background(), "s", hosts(n), func(context.Context, host) (lcm.Result, error) {
			cur := active.Add(1)
			for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
			}
			started <- struct{}{}
			<-release
			active.Add(-1)
			return lcm.Unchanged, nil
		}, opts...)
		done <- err
	}()
	for range want {
		<-started // the first want steps are running at the same time
	}
	close(release)
	for range n - want {
		<-started
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return peak.Load()
}

func TestOnHostsRespectsLimit(t *testing.T) {
	if got := concurrency(t, 20, 3, lcm.Limit(3)); got != 3 {
		t.Errorf("Limit(3): peak concurrency = %d, want 3", got)
	}
	if got := concurrency(t, lcm.DefaultLimit+5, lcm.DefaultLimit); got != lcm.DefaultLimit {
		t.Errorf("default: peak concurrency = %d, want %d", got, lcm.DefaultLimit)
	}
	if got := concurrency(t, 5, 1, lcm.Limit(0)); got != 1 {
		t.Errorf("Limit(0): peak concurrency = %d, want 1", got)
	}
}

func TestOnHostsResultsInInputOrder(t *testing.T) {
	hs := hosts(30)
	rs, err := lcm.OnHosts(context.Background(), "label", hs, func(_ context.Context, h host) (lcm.Result, error) {
		if h == "node7" {
			return lcm.Changed("labelled " + h.Name()), nil
		}
		return lcm.Unchanged, nil
	}, lcm.Limit(4))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(hs) {
		t.Fatalf("got %d results, want %d", len(rs), len(hs))
	}
	for i, r := range rs {
		if r.Host != hs[i].Name() || r.Step != "label" || r.Skipped || r.Err != nil || r.Duration < 0 {
			t.Errorf("result %d = %+v", i, r)
		}
		if want := i == 7; r.Result.Changed != want {
			t.Errorf("result %d changed = %v, want %v", i, r.Result.Changed, want)
		}
	}
	if !rs.Changed() || len(rs.Failed()) != 0 || rs.Err() != nil {
		t.Errorf("Changed=%v Failed=%v Err=%v", rs.Changed(), rs.Failed(), rs.Err())
	}
}

func TestOnHostsFailFastSkipsHostsNotStarted(t *testing.T) {
	ctx, rec := recordingContext()
	boom := errors.New("boom")
	var ran sync.Map
	rs, err := lcm.OnHosts(ctx, "join", []host{"a", "b", "c"}, func(_ context.Context, h host) (lcm.Result, error) {
		ran.Store(h, true)
		if h == "a" {
			return lcm.Unchanged, boom
		}
		return lcm.Changed("joined"), nil
	}, lcm.Limit(1))

	if got, want := err.Error(), `host "a": step "join": boom`; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
	var he *lcm.HostError
	if !errors.As(err, &he) || he.Host != "a" || !errors.Is(err, boom) {
		t.Errorf("errors.As/Is do not find host a's error in %v", err)
	}
	for _, h := range []host{"b", "c"} {
		if _, ok := ran.Load(h); ok {
			t.Errorf("host %s ran after host a failed", h)
		}
	}
	if !rs[1].Skipped || !rs[2].Skipped || rs[0].Skipped {
		t.Errorf("skipped = %v %v %v, want false true true", rs[0].Skipped, rs[1].Skipped, rs[2].Skipped)
	}
	if !strings.Contains(rs[1].Err.Error(), `not run: step "join" failed on host "a"`) {
		t.Errorf("skip reason = %v", rs[1].Err)
	}
	if f := rs.Failed(); len(f) != 1 || f[0].Host != "a" {
		t.Errorf("Failed() = %v, want only host a", f)
	}

	// One record per host: a failed, b and c skipped.
	var levels []string
	for _, r := range rec.all() {
		levels = append(levels, attrs(r)[lcm.AttrHost].String()+"="+r.Level.String()+" "+r.Message)
	}
	want := []string{"a=ERROR step failed", "b=WARN step skipped", "c=WARN step skipped"}
	if fmt.Sprint(levels) != fmt.Sprint(want) {
		t.Errorf("records = %q, want %q", levels, want)
	}
}

func TestOnHostsFailFastCancelsRunningHosts(t *testing.T) {
	bStarted := make(chan struct{})
	var bCause error
	rs, err := lcm.OnHosts(context.Background(), "drain", []host{"a", "b", "c"}, func(ctx context.Context, h host) (lcm.Result, error) {
		switch h {
		case "a":
			<-bStarted
			return lcm.Unchanged, errors.New("kubectl: exit status 1")
		case "b":
			close(bStarted)
			<-ctx.Done() // runs until cancelled
			bCause = context.Cause(ctx)
			return lcm.Unchanged, ctx.Err()
		}
		t.Errorf("host %s ran", h)
		return lcm.Unchanged, nil
	}, lcm.Limit(2))

	if !errors.Is(rs[1].Err, context.Canceled) || rs[1].Skipped {
		t.Errorf("host b: err=%v skipped=%v, want context.Canceled while running", rs[1].Err, rs[1].Skipped)
	}
	if bCause == nil || bCause.Error() != `step "drain" failed on host "a"` {
		t.Errorf("cause seen by host b = %v", bCause)
	}
	if !rs[2].Skipped {
		t.Errorf("host c was not skipped: %+v", rs[2])
	}
	want := "host \"a\": step \"drain\": kubectl: exit status 1\nhost \"b\": step \"drain\": context canceled"
	if err == nil || err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestOnHostsBestEffortRunsAll(t *testing.T) {
	var ran atomic.Int32
	errA, errC := errors.New("a failed"), errors.New("c failed")
	rs, err := lcm.OnHosts(context.Background(), "trust", []host{"a", "b", "c", "d"}, func(ctx context.Context, h host) (lcm.Result, error) {
		ran.Add(1)
		if ctx.Err() != nil {
			t.Errorf("host %s got a cancelled context", h)
		}
		switch h {
		case "a":
			return lcm.Unchanged, errA
		case "c":
			return lcm.Unchanged, errC
		}
		return lcm.Changed("trusted"), nil
	}, lcm.WithPolicy(lcm.BestEffort), lcm.Limit(1))

	if ran.Load() != 4 {
		t.Errorf("%d hosts ran, want 4", ran.Load())
	}
	if !errors.Is(err, errA) || !errors.Is(err, errC) {
		t.Errorf("err = %v, want both failures", err)
	}
	var errs interface{ Unwrap() []error }
	if !errors.As(err, &errs) || len(errs.Unwrap()) != 2 {
		t.Errorf("err is not a join of two errors: %#v", err)
	}
	for _, e := range errs.Unwrap() {
		if _, ok := e.(*lcm.HostError); !ok {
			t.Errorf("joined error %T is not a *HostError", e)
		}
	}
	if !rs.Changed() || len(rs.Failed()) != 2 || rs[1].Skipped || rs[3].Skipped {
		t.Errorf("results = %+v", rs)
	}
}

func TestOnHostsRecoversPanics(t *testing.T) {
	rs, err := lcm.OnHosts(context.Background(), "s", []host{"a", "b"}, func(_ context.Context, h host) (lcm.Result, error) {
		if h == "a" {
			addLabel(nil, "x") // a runtime panic, as a buggy step would cause
		}
		return lcm.Unchanged, nil
	}, lcm.WithPolicy(lcm.BestEffort))
	var pe *lcm.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *PanicError", err)
	}
	if !strings.Contains(err.Error(), `host "a": step "s": panic: assignment to entry in nil map`) {
		t.Errorf("err = %q", err)
	}
	if rs[1].Err != nil {
		t.Errorf("host b failed too: %v", rs[1].Err)
	}
}

func addLabel(labels map[string]int, key string) { labels[key]++ }

func TestOnHostsEmpty(t *testing.T) {
	rs, err := lcm.OnHosts(context.Background(), "s", []host(nil), func(context.Context, host) (lcm.Result, error) {
		t.Error("fn called for no host")
		return lcm.Unchanged, nil
	})
	if rs != nil || err != nil {
		t.Errorf("OnHosts(no hosts) = %v, %v; want nil, nil", rs, err)
	}
}

func TestOnHostsCancelledContextSkipsAllAndFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rs, err := lcm.OnHosts(ctx, "s", hosts(3), func(context.Context, host) (lcm.Result, error) {
		t.Error("fn called with a cancelled context")
		return lcm.Unchanged, nil
	}, lcm.WithPolicy(lcm.BestEffort))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	for _, r := range rs {
		if !r.Skipped {
			t.Errorf("host %s not skipped", r.Host)
		}
	}
	if len(rs.Failed()) != 0 {
		t.Errorf("skipped hosts counted as failed: %v", rs.Failed())
	}
}

func TestOnHostsEmitsOneRecordPerHost(t *testing.T) {
	ctx, rec := recordingContext()
	ctx = lcm.WithHook(ctx, lcm.InstantiateEnd)
	_, err := lcm.OnHosts(ctx, "install-nfs-client", hosts(12), func(context.Context, host) (lcm.Result, error) {
		return lcm.Changed("installed nfs-common"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rec.all() {
		a := attrs(r)
		if r.Level != slog.LevelInfo || a[lcm.AttrStep].String() != "install-nfs-client" || a[lcm.AttrHook].String() != "instantiate_end" {
			t.Errorf("record %v %q %v", r.Level, r.Message, a)
		}
		seen[a[lcm.AttrHost].String()]++
	}
	for _, h := range hosts(12) {
		if seen[h.Name()] != 1 {
			t.Errorf("host %s: %d records, want 1", h, seen[h.Name()])
		}
	}
}

func TestResultsErrReportsSkippedOnlyWithoutFailures(t *testing.T) {
	cause := errors.New("deadline")
	rs := lcm.Results{
		{Host: "a", Step: "s"},
		{Host: "b", Step: "s", Skipped: true, Err: cause},
	}
	if err := rs.Err(); !errors.Is(err, cause) || err.Error() != `host "b": step "s": deadline` {
		t.Errorf("Err() = %v", err)
	}
	rs = append(rs, lcm.HostResult{Host: "c", Step: "s", Err: errors.New("broken")})
	if err := rs.Err(); err.Error() != `host "c": step "s": broken` {
		t.Errorf("Err() = %q, want only the failure", err)
	}
	if lcm.FailFast.String() != "fail-fast" || lcm.BestEffort.String() != "best-effort" {
		t.Errorf("Policy strings: %v %v", lcm.FailFast, lcm.BestEffort)
	}
}

package lcm_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { panic("not used by lcm") }
func (r *recorder) WithGroup(string) slog.Handler      { panic("not used by lcm") }

func (r *recorder) all() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.records...)
}

// attrs returns a record's attributes by key.
func attrs(rec slog.Record) map[string]slog.Value {
	m := map[string]slog.Value{}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value
		return true
	})
	return m
}

func recordingContext() (context.Context, *recorder) {
	rec := &recorder{}
	return lcm.WithLogger(context.Background(), slog.New(rec)), rec
}

func TestDoLogsOneRecordOnSuccess(t *testing.T) {
	ctx, rec := recordingContext()
	ctx = lcm.WithHook(ctx, lcm.ScaleEnd)

	res, err := lcm.Do(ctx, "join-worker", "worker3", func(ctx context.Context) (lcm.Result, error) {
		if got := lcm.HookFrom(ctx); got != lcm.ScaleEnd {
			t.Errorf("HookFrom inside step = %q, want scale_end", got)
		}
		return lcm.Changed("joined the cluster"), nil
	})
	if err != nil || res != lcm.Changed("joined the cluster") {
		t.Fatalf("Do = %v, %v", res, err)
	}
	records := rec.all()
	if len(records) != 1 {
		t.Fatalf("got %d records, want 1", len(records))
	}
	r := records[0]
	if r.Level != slog.LevelInfo || r.Message != "step finished" {
		t.Errorf("record = %v %q, want INFO \"step finished\"", r.Level, r.Message)
	}
	a := attrs(r)
	want := map[string]any{
		lcm.AttrHook:    "scale_end",
		lcm.AttrStep:    "join-worker",
		lcm.AttrHost:    "worker3",
		lcm.AttrChanged: true,
		lcm.AttrDetail:  "joined the cluster",
	}
	for k, v := range want {
		if got := a[k].Any(); got != v {
			t.Errorf("attr %s = %v, want %v", k, got, v)
		}
	}
	if a[lcm.AttrDuration].Kind() != slog.KindDuration || a[lcm.AttrDuration].Duration() < 0 {
		t.Errorf("attr duration = %v, want a non-negative duration", a[lcm.AttrDuration])
	}
	if _, ok := a[lcm.AttrError]; ok {
		t.Errorf("successful step has an %s attribute", lcm.AttrError)
	}
}

func TestDoLogsFailureAtErrorLevelAndWrapsHostError(t *testing.T) {
	ctx, rec := recordingContext()
	boom := errors.New("exit status 1")

	res, err := lcm.Do(ctx, "install-runtime", "master1", func(context.Context) (lcm.Result, error) {
		return lcm.Changed("wrote daemon.json"), boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("errors.Is(err, boom) = false for %v", err)
	}
	var he *lcm.HostError
	if !errors.As(err, &he) || he.Host != "master1" || he.Step != "install-runtime" {
		t.Fatalf("err = %#v, want a *HostError for master1/install-runtime", err)
	}
	if got, want := err.Error(), `host "master1": step "install-runtime": exit status 1`; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
	if !res.Changed {
		t.Errorf("the partial result was dropped: %v", res)
	}
	records := rec.all()
	if len(records) != 1 {
		t.Fatalf("got %d records, want 1", len(records))
	}
	r := records[0]
	if r.Level != slog.LevelError || r.Message != lcm.MsgStepFailed {
		t.Errorf("record = %v %q, want ERROR %q", r.Level, r.Message, lcm.MsgStepFailed)
	}
	a := attrs(r)
	if got, _ := a[lcm.AttrError].Any().(error); !errors.Is(got, boom) {
		t.Errorf("attr error = %v, want %v", a[lcm.AttrError], boom)
	}
	if a[lcm.AttrHook].String() != "" || a[lcm.AttrChanged].Bool() != true {
		t.Errorf("attrs = %v", a)
	}
}

func TestDoRecoversPanics(t *testing.T) {
	ctx, rec := recordingContext()
	_, err := lcm.Do(ctx, "s", "h", func(context.Context) (lcm.Result, error) {
		panic("kaboom")
	})
	var pe *lcm.PanicError
	if !errors.As(err, &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Fatalf("err = %v, want a *PanicError with a stack", err)
	}
	if got := err.Error(); got != `host "h": step "s": panic: kaboom` {
		t.Errorf("err = %q", got)
	}
	if records := rec.all(); len(records) != 1 || records[0].Level != slog.LevelError {
		t.Errorf("records = %v, want one ERROR record", records)
	}

	// A panic with an error value unwraps to it.
	sentinel := errors.New("sentinel")
	_, err = lcm.Do(ctx, "s", "h", func(context.Context) (lcm.Result, error) { panic(sentinel) })
	if !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(%v, sentinel) = false", err)
	}
}

func TestLoggerFromWithoutLoggerDiscards(t *testing.T) {
	l := lcm.LoggerFrom(context.Background())
	if l == nil || l.Handler() != slog.DiscardHandler {
		t.Fatalf("LoggerFrom(Background) = %v, want a logger on slog.DiscardHandler", l)
	}
	if l := lcm.LoggerFrom(lcm.WithLogger(context.Background(), nil)); l.Handler() != slog.DiscardHandler {
		t.Errorf("LoggerFrom after WithLogger(nil) does not discard")
	}
	if h := lcm.HookFrom(context.Background()); h != "" {
		t.Errorf("HookFrom(Background) = %q, want empty", h)
	}
	// Do works without a logger.
	if _, err := lcm.Do(context.Background(), "s", "h", func(context.Context) (lcm.Result, error) {
		return lcm.Unchanged, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestDoMeasuresDuration(t *testing.T) {
	ctx, rec := recordingContext()
	_, _ = lcm.Do(ctx, "s", "h", func(context.Context) (lcm.Result, error) {
		time.Sleep(time.Millisecond)
		return lcm.Unchanged, nil
	})
	if d := attrs(rec.all()[0])[lcm.AttrDuration].Duration(); d < time.Millisecond {
		t.Errorf("duration = %v, want at least the 1ms the step slept", d)
	}
}

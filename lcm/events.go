package lcm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
)

// Attribute keys of the log records that [Do] and [OnHosts] emit. A VNFM
// that shows progress can select records by these keys in its own
// [slog.Handler].
const (
	AttrHook     = "hook"     // the Hook from the context, "" outside a hook
	AttrStep     = "step"     // the step name given to Do or OnHosts
	AttrHost     = "host"     // the host name
	AttrDuration = "duration" // how long the step ran, a time.Duration
	AttrChanged  = "changed"  // whether the step changed the host, a bool
	AttrDetail   = "detail"   // Result.Detail, present only when non-empty
	AttrError    = "error"    // the step's error (failed and skipped steps)
)

// Messages of the log records that [Do] and [OnHosts] emit.
const (
	MsgStepFinished = "step finished" // level Info
	MsgStepFailed   = "step failed"   // level Error
	MsgStepSkipped  = "step skipped"  // level Warn: OnHosts did not run it
)

type loggerKey struct{}

type hookKey struct{}

// WithLogger returns a context that carries l. [Do], [OnHosts] and the
// steps built on them log through it.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom returns the logger set by [WithLogger], or a logger that
// discards everything when none was set. The SDK never logs to
// [slog.Default]: a library must not write where its caller did not ask.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// WithHook returns a context that carries the hook being run. [Invoke] sets
// it before calling a [Driver] method, and [Do] adds it to every record.
func WithHook(ctx context.Context, h Hook) context.Context {
	return context.WithValue(ctx, hookKey{}, h)
}

// HookFrom returns the hook set by [WithHook], or "" when none was set.
func HookFrom(ctx context.Context) Hook {
	h, _ := ctx.Value(hookKey{}).(Hook)
	return h
}

// Do runs one step on one host and emits one log record for it through
// [LoggerFrom]: [MsgStepFinished] at Info level on success, [MsgStepFailed]
// at Error level on failure, with the attributes [AttrHook], [AttrStep],
// [AttrHost], [AttrDuration], [AttrChanged], [AttrDetail] and [AttrError].
//
// A panic in fn is recovered and reported as a [*PanicError]. A failure is
// returned as a [*HostError] that names host and step and wraps fn's error;
// the Result fn returned is passed on even then, because a step that failed
// half-way may already have changed the host.
func Do(ctx context.Context, step, host string, fn func(context.Context) (Result, error)) (Result, error) {
	res, _, err := do(ctx, step, host, fn)
	if err != nil {
		return res, &HostError{Host: host, Step: step, Err: err}
	}
	return res, nil
}

// do is Do without wrapping the error, and with the measured duration.
func do(ctx context.Context, step, host string, fn func(context.Context) (Result, error)) (Result, time.Duration, error) {
	start := time.Now()
	res, err := call(ctx, fn)
	if err != nil && remote.IsDryRun(ctx) {
		res, err = planned(ctx, res, err)
	}
	d := time.Since(start)

	attrs := []slog.Attr{
		slog.String(AttrHook, string(HookFrom(ctx))),
		slog.String(AttrStep, step),
		slog.String(AttrHost, host),
		slog.Duration(AttrDuration, d),
		slog.Bool(AttrChanged, res.Changed),
	}
	if res.Detail != "" {
		attrs = append(attrs, slog.String(AttrDetail, res.Detail))
	}
	level, msg := slog.LevelInfo, MsgStepFinished
	if err != nil {
		level, msg = slog.LevelError, MsgStepFailed
		attrs = append(attrs, slog.Any(AttrError, err))
	}
	LoggerFrom(ctx).LogAttrs(ctx, level, msg, attrs...)
	return res, d, err
}

// planned turns the failure err of a step in a plan ([Plan]) into the
// step's result, when it is the plan's doing: a change withheld
// ([remote.ErrWithheld]) makes the step one that would change the host;
// any other failure after the plan withheld a change of the hook makes it
// undetermined, for it may have met only that change's absence. A failure
// before any change was withheld is the host's as it is, which a real run
// would meet too: it stays an error, as does the end of ctx.
func planned(ctx context.Context, res Result, err error) (Result, error) {
	var we *remote.WithheldError
	var pe *PanicError
	switch {
	case ctx.Err() != nil || errors.As(err, &pe):
		return res, err
	case errors.As(err, &we):
		return res.And(Result{Changed: true, Detail: "would " + we.What(), Withheld: we}), nil
	case remote.AnyWithheld(ctx):
		return res.And(Result{Undetermined: true, Detail: "after the earlier changes, which the plan withheld: " + clipText(err.Error(), maxEchoError)}), nil
	}
	return res, err
}

// logSkipped records that OnHosts did not run step on host.
func logSkipped(ctx context.Context, step, host string, reason error) {
	LoggerFrom(ctx).LogAttrs(ctx, slog.LevelWarn, MsgStepSkipped,
		slog.String(AttrHook, string(HookFrom(ctx))),
		slog.String(AttrStep, step),
		slog.String(AttrHost, host),
		slog.Any(AttrError, reason),
	)
}

// call runs fn, turning a panic into a *PanicError.
func call(ctx context.Context, fn func(context.Context) (Result, error)) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = Unchanged, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx)
}

// PanicError is the error [Do], [OnHosts] and [Invoke] return in place of a
// panic in the function they ran, so that one faulty step cannot crash the
// VNFM process.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack trace at the panic, for logging.
	Stack []byte
}

// Error returns "panic: " and the panic value; the stack is not included.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

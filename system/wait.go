package system

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
)

// ErrNotWaited is the [WaitError.Err] of a [Wait] in a plan
// ([remote.WithDryRun]) that has withheld a change: Wait checks once and
// does not wait, for what it awaits may be the withheld change's doing.
var ErrNotWaited = errors.New("a plan does not wait once it has withheld a change")

// Condition reports whether what a [Wait] awaits has happened. A non-nil
// error means "not yet, and here is why": Wait keeps trying and reports
// the last such error if time runs out.
type Condition func(ctx context.Context) (done bool, err error)

// WaitError is the error of a [Wait] whose time ran out or whose context
// ended: what it awaited, for how long, and the condition's last failure.
type WaitError struct {
	// What names what was awaited ("the Docker daemon to answer").
	What string
	// Timeout is the bound Wait was given.
	Timeout time.Duration
	// Last is the condition's last error, nil if it only ever said "not
	// yet".
	Last error
	// Err is the context's error: context.DeadlineExceeded when the
	// timeout passed, or the caller's cancellation.
	Err error
}

// Error says what was awaited, for how long, and the last failure.
func (e *WaitError) Error() string {
	msg := fmt.Sprintf("waiting for %s: not done within %s", e.What, e.Timeout)
	if !errors.Is(e.Err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("waiting for %s: %v", e.What, e.Err)
	}
	if e.Last != nil {
		msg += ": last attempt: " + e.Last.Error()
	}
	return msg
}

// Unwrap returns the context's error and the condition's last error.
func (e *WaitError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Last}
}

// Wait checks cond at once and then every interval until it reports done,
// for at most timeout (and never past ctx): the one bounded wait loop of
// the SDK's steps. The context cond receives ends with the timeout, so a
// command it runs cannot outlive the wait. When time runs out Wait returns
// a [*WaitError] naming what (for example "the Docker daemon to answer")
// and cond's last error; a failure caused only by the expiring deadline
// does not replace an earlier, more telling one. A non-positive timeout
// checks once; a non-positive interval is one second. In a plan that has
// withheld a change it checks once and returns a WaitError wrapping
// [ErrNotWaited] when cond is not done.
func Wait(ctx context.Context, what string, timeout, interval time.Duration, cond Condition) error {
	if interval <= 0 {
		interval = time.Second
	}
	if remote.AnyWithheld(ctx) {
		// A plan that withheld a change: what is awaited may be that
		// change's doing, so waiting could only run out the time.
		done, err := cond(ctx)
		if done && err == nil {
			return nil
		}
		return &WaitError{What: what, Timeout: timeout, Last: err, Err: ErrNotWaited}
	}
	wctx, cancel := context.WithTimeout(ctx, max(timeout, time.Nanosecond))
	defer cancel()
	if timeout <= 0 {
		// One attempt, bounded by ctx alone.
		wctx = ctx
	}
	var last error
	for {
		done, err := cond(wctx)
		if done && err == nil {
			return nil
		}
		if err != nil && (wctx.Err() == nil || last == nil) {
			last = err
		}
		if timeout <= 0 {
			return &WaitError{What: what, Timeout: timeout, Last: last, Err: context.DeadlineExceeded}
		}
		t := time.NewTimer(interval)
		select {
		case <-wctx.Done():
			t.Stop()
			return &WaitError{What: what, Timeout: timeout, Last: last, Err: wctx.Err()}
		case <-t.C:
		}
	}
}

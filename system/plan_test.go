package system_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// The few steps of the floor that know of a plan: InstallPackages
// withholds the install (naming the packages), not the update before
// it; SetHostname looks without setting; Wait does not wait once a
// change is withheld.
func TestStepsInAPlan(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	dry := remote.WithDryRun(v.ctx)
	step := func(fn func(ctx context.Context, h remote.Host) (lcm.Result, error)) (*remote.WithheldError, []string) {
		t.Helper()
		before := len(v.srv.Transcript())
		_, err := fn(dry, v.h)
		var cmds []string
		for _, e := range v.srv.Transcript()[before:] {
			cmds = append(cmds, e.Command)
		}
		var we *remote.WithheldError
		if err != nil && !errors.As(err, &we) {
			t.Fatalf("%v", err)
		}
		return we, cmds
	}
	we, cmds := step(install(system.PackagesOptions{Packages: []string{"jq"}}))
	if we == nil || !slices.Contains(we.Args, "install") || !slices.Contains(we.Args, "jq") || len(cmds) != 1 || v.AptUpdates() != 0 || v.Installed("jq") {
		t.Errorf("InstallPackages: withheld %+v after %q; %d updates", we, cmds, v.AptUpdates())
	}

	name := v.Hostname()
	if we, cmds := step(func(ctx context.Context, h remote.Host) (lcm.Result, error) { return system.SetHostname(ctx, h, name) }); we != nil || len(cmds) != 1 {
		t.Errorf("SetHostname to its name: withheld %+v after %q", we, cmds)
	}
	we, _ = step(func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.SetHostname(ctx, h, "other-name")
	})
	if we == nil || !strings.Contains(we.What(), "mgmtkit-hostname other-name") || v.Hostname() != name {
		t.Errorf("SetHostname to another name: withheld %+v, host name %q", we, v.Hostname())
	}

	// Changes were withheld: a wait checks once and returns.
	checks := 0
	err := system.Wait(dry, "the daemon to answer", time.Hour, time.Hour, func(ctx context.Context) (bool, error) {
		checks++
		return false, errors.New("connection refused")
	})
	var werr *system.WaitError
	if !errors.As(err, &werr) || !errors.Is(err, system.ErrNotWaited) || checks != 1 || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Wait in a plan: %v after %d checks", err, checks)
	}
	if err := system.Wait(dry, "the daemon to answer", time.Hour, time.Hour, func(ctx context.Context) (bool, error) { return true, nil }); err != nil {
		t.Errorf("Wait for what is there: %v", err)
	}
}

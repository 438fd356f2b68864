package system_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

const appUnit = "[Unit]\nDescription=app\n\n[Service]\nExecStart=/usr/bin/app\n\n[Install]\nWantedBy=multi-user.target\n"

func configure(opts system.UnitOptions) func(ctx context.Context, h remote.Host) (lcm.Result, error) {
	return func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.ConfigureUnit(ctx, h, opts)
	}
}

func TestConfigureUnitRestartsOnlyWhenItsInputsChange(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	dropIn := system.UnitDir + "/app.service.d/limits.conf"
	opts := system.UnitOptions{Unit: "app", Files: map[string]string{
		system.UnitDir + "/app.service": appUnit,
		dropIn:                          "[Service]\nLimitNOFILE=1024\n",
	}}
	res, cmds, err := v.step(configure(opts))
	st := v.Service("app")
	if err != nil || !res.Changed || !st.Active || !st.Enabled || st.Starts != 1 || st.Restarts != 0 || st.NeedDaemonReload {
		t.Fatalf("fresh: %v, %v, %+v after %q", res, err, st, cmds)
	}
	reloads := v.DaemonReloads()

	res, cmds, err = v.step(configure(opts))
	if err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("converged: %v, %v, %d commands %q", res, err, len(cmds), cmds)
	}

	opts.Files[dropIn] = "[Service]\nLimitNOFILE=65536\n"
	res, _, err = v.step(configure(opts))
	st = v.Service("app")
	if err != nil || !res.Changed || st.Restarts != 1 || st.Starts != 1 || v.DaemonReloads() != reloads+1 || st.NeedDaemonReload {
		t.Errorf("changed drop-in: %v, %v, %+v, %d daemon-reloads", res, err, st, v.DaemonReloads()-reloads)
	}

	// Something else the unit reads changed: a restart (the unit cannot
	// reload) without a daemon-reload.
	opts.InputsChanged = true
	res, cmds, err = v.step(configure(opts))
	if st := v.Service("app"); err != nil || !res.Changed || st.Restarts != 2 || v.DaemonReloads() != reloads+1 || count(cmds, "reload-or-restart") != 1 {
		t.Errorf("inputs changed: %v, %v, %+v, %q", res, err, st, cmds)
	}
	opts.InputsChanged = false

	// The drop-in goes: removed, reloaded, restarted; its directory too.
	opts.Absent = []string{dropIn}
	delete(opts.Files, dropIn)
	res, _, err = v.step(configure(opts))
	if st := v.Service("app"); err != nil || !res.Changed || st.Restarts != 3 || v.Server().FS().Exists(dropIn) || v.Server().FS().Exists(system.UnitDir+"/app.service.d") {
		t.Errorf("absent drop-in: %v, %v, %+v", res, err, st)
	}
	if _, cmds, _ := v.step(configure(opts)); len(cmds) != 1 || v.Service("app").Restarts != 3 {
		t.Errorf("converged again: %q", cmds)
	}
	if v.Server().FS().Exists(system.PendingDir + "/app.service") {
		t.Error("the restart marker is left behind")
	}
}

// A restart owed by an earlier run that failed after writing the files is
// not forgotten, though the files now match.
func TestConfigureUnitPaysARestartOwed(t *testing.T) {
	broken := false
	v := newVM(t, ubuntu.Options{})
	v.AddUnit(ubuntu.Unit{Name: "app.service", File: appUnit, OnStart: func(*ubuntu.Machine) error {
		if broken {
			return errors.New("bad configuration")
		}
		return nil
	}})
	opts := system.UnitOptions{Unit: "app.service", Files: map[string]string{system.UnitDir + "/app.service.d/x.conf": "[Service]\nEnvironment=X=1\n"}}
	if _, _, err := v.step(configure(opts)); err != nil {
		t.Fatal(err)
	}
	broken = true
	opts.Files[system.UnitDir+"/app.service.d/x.conf"] = "[Service]\nEnvironment=X=2\n"
	if _, _, err := v.step(configure(opts)); err == nil {
		t.Fatal("a failing restart is no error")
	}
	if !v.Server().FS().Exists(system.PendingDir + "/app.service") {
		t.Fatal("no marker after a failed restart")
	}
	// As if the run had been cut off after the write: the unit runs
	// again (with the old configuration) and the files match.
	broken = false
	if _, err := v.h.Run(v.ctx, remote.Cmd{Args: []string{"systemctl", "start", "app"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	before := v.Service("app").Restarts
	res, _, err := v.step(configure(opts))
	if err != nil || !res.Changed || v.Service("app").Restarts != before+1 || v.Server().FS().Exists(system.PendingDir+"/app.service") {
		t.Errorf("the owed restart: %v, %v, restarts %d → %d", res, err, before, v.Service("app").Restarts)
	}
}

func TestConfigureUnitRefusesBadInputBeforeRunning(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	for _, tt := range []struct {
		opts system.UnitOptions
		want string
	}{
		{system.UnitOptions{Unit: "-H host"}, "Unit: "},
		{system.UnitOptions{Unit: "app", Files: map[string]string{"/etc/passwd": "x"}}, `Files["/etc/passwd"]: "/etc/passwd" is neither /etc/systemd/system/app.service nor a drop-in`},
		{system.UnitOptions{Unit: "app", Files: map[string]string{"/etc/systemd/system/app.service.d/x": "x"}}, `Files["/etc/systemd/system/app.service.d/x"]`},
		{system.UnitOptions{Unit: "app", Absent: []string{"/etc/systemd/system/other.service"}}, "Absent[0]"},
		// The state probe prints FILE=HASH lines: a name with '=' would
		// be misread, one with a newline would forge a line.
		{system.UnitOptions{Unit: "app", Files: map[string]string{"/etc/systemd/system/app.service.d/a=b.conf": "x"}}, `Files["/etc/systemd/system/app.service.d/a=b.conf"]: drop-in name "a=b.conf"`},
		{system.UnitOptions{Unit: "app", Files: map[string]string{"/etc/systemd/system/app.service.d/a=b.env": "x"}}, `Files["/etc/systemd/system/app.service.d/a=b.env"]: drop-in name "a=b.env"`},
		{system.UnitOptions{Unit: "app", Files: map[string]string{"/etc/systemd/system/app.service.d/x.txt": "x"}}, `nor a drop-in /etc/systemd/system/app.service.d/NAME.conf or NAME.env`},
		{system.UnitOptions{Unit: "app", Absent: []string{"/etc/systemd/system/app.service.d/x\nPending=yes.conf"}}, `Absent[0]: drop-in name`},
		{system.UnitOptions{Unit: "app", Files: map[string]string{"/etc/systemd/system/app.service.d/../../app.service.d/x.conf": "x"}}, `Files["/etc/systemd/system/app.service.d/../../app.service.d/x.conf"]`},
	} {
		_, cmds, err := v.step(configure(tt.opts))
		paramsError(t, err, tt.want)
		if len(cmds) != 0 {
			t.Errorf("%+v: %d commands", tt.opts, len(cmds))
		}
	}
}

func TestEnsureActive(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	if _, err := v.h.Run(v.ctx, remote.Cmd{Args: []string{"systemctl", "disable", "--now", "cron"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	ensure := func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.EnsureActive(ctx, h, "cron")
	}
	res, _, err := v.step(ensure)
	if st := v.Service("cron"); err != nil || !res.Changed || !st.Active || !st.Enabled {
		t.Errorf("%v, %v, %+v", res, err, st)
	}
	if res, cmds, err := v.step(ensure); err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("active: %v, %v, %q", res, err, cmds)
	}
}

func TestWaitNamesWhatItAwaitedAndTheLastFailure(t *testing.T) {
	calls := 0
	err := system.Wait(context.Background(), "the registry to answer", 300*time.Millisecond, 50*time.Millisecond, func(context.Context) (bool, error) {
		calls++
		return false, errors.New("HTTP 503")
	})
	var we *system.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || err.Error() != "waiting for the registry to answer: not done within 300ms: last attempt: HTTP 503" {
		t.Errorf("err = %v", err)
	}
	if calls < 1 {
		t.Errorf("%d calls", calls)
	}
	// The deadline's own failure does not hide the telling one.
	n := 0
	err = system.Wait(context.Background(), "x", 100*time.Millisecond, 10*time.Millisecond, func(ctx context.Context) (bool, error) {
		if n++; n == 1 {
			return false, errors.New("connection refused")
		}
		<-ctx.Done()
		return false, ctx.Err()
	})
	if !strings.HasSuffix(err.Error(), "last attempt: connection refused") {
		t.Errorf("err = %v", err)
	}
	calls = 0
	if err := system.Wait(context.Background(), "x", time.Hour, time.Millisecond, func(context.Context) (bool, error) { calls++; return calls > 10, nil }); err != nil || calls != 11 {
		t.Errorf("err = %v after %d calls", err, calls)
	}
}

// A daemon that re-reads its configuration on SIGHUP is reloaded, not
// restarted, when only that configuration changed.
func TestConfigureUnitReloadsForInputsChanged(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	reloadFails := false
	v.AddUnit(ubuntu.Unit{Name: "app.service", File: appUnit, OnReload: func(*ubuntu.Machine) error {
		if reloadFails {
			return errors.New("bad configuration")
		}
		return nil
	}})
	opts := system.UnitOptions{Unit: "app"}
	if _, _, err := v.step(configure(opts)); err != nil {
		t.Fatal(err)
	}
	opts.InputsChanged = true
	res, _, err := v.step(configure(opts))
	if st := v.Service("app"); err != nil || !res.Changed || st.Reloads != 1 || st.Restarts != 0 {
		t.Errorf("%v, %v, %+v", res, err, st)
	}
	// An input the daemon does not re-read on reload.
	opts.InputsNeedRestart = true
	res, _, err = v.step(configure(opts))
	if st := v.Service("app"); err != nil || res.Detail != "restarted app.service" || st.Reloads != 1 || st.Restarts != 1 {
		t.Errorf("inputs need a restart: %v, %v, %+v", res, err, st)
	}
	// Nothing changed since: nothing owed.
	opts.InputsChanged, opts.InputsNeedRestart = false, false
	if res, cmds, err := v.step(configure(opts)); err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("converged: %v, %v, %d commands", res, err, len(cmds))
	}
	// A reload that fails leaves the marker, which says that a reload
	// pays it; the next run, told of no change, reloads.
	reloadFails, opts.InputsChanged = true, true
	if _, _, err := v.step(configure(opts)); err == nil {
		t.Fatal("a failed reload is no error")
	}
	if b, err := v.Server().FS().ReadFile(system.PendingMarker("app")); err != nil || !system.PendingReloadOnly(b) {
		t.Fatalf("marker %q, %v: want one that owes a reload", b, err)
	}
	reloads := v.Service("app").Reloads
	reloadFails, opts.InputsChanged = false, false
	res, _, err = v.step(configure(opts))
	if st := v.Service("app"); err != nil || res.Detail != "reloaded or restarted app.service" || st.Restarts != 1 || st.Reloads != reloads+1 || v.Server().FS().Exists(system.PendingDir+"/app.service") {
		t.Errorf("the owed reload: %v, %v, %+v", res, err, st)
	}
}

// A unit caught activating, reloading or deactivating runs a process that
// must be restarted as well: a start would merge into the running start
// job, and the restart owed would be lost with its marker.
func TestConfigureUnitRestartsAUnitInTransition(t *testing.T) {
	for _, state := range []string{"activating", "reloading", "deactivating"} {
		t.Run(state, func(t *testing.T) {
			v := newVM(t, ubuntu.Options{})
			dropIn := system.UnitDir + "/app.service.d/x.conf"
			opts := system.UnitOptions{Unit: "app", Files: map[string]string{system.UnitDir + "/app.service": appUnit, dropIn: "[Service]\nEnvironment=X=1\n"}}
			if _, _, err := v.step(configure(opts)); err != nil {
				t.Fatal(err)
			}
			opts.Files[dropIn] = "[Service]\nEnvironment=X=2\n"
			v.ReportTransientState("app", state, 1)
			res, cmds, err := v.step(configure(opts))
			if st := v.Service("app"); err != nil || st.Restarts != 1 || !strings.Contains(res.Detail, "restarted app.service") || count(cmds, "systemctl start") != 0 {
				t.Errorf("changed drop-in: %v, %v, %+v, %d starts", res, err, st, count(cmds, "systemctl start"))
			}
			if v.Server().FS().Exists(system.PendingDir + "/app.service") {
				t.Error("the restart marker is left behind")
			}
			// Inputs changed while the unit is activating: a
			// reload-or-restart would become a start (systemd collapses
			// it so for a unit not active), so a restart.
			v.ReportTransientState("app", state, 1)
			opts.InputsChanged = true
			res, cmds, err = v.step(configure(opts))
			if st := v.Service("app"); err != nil || st.Restarts != 2 || count(cmds, "systemctl start") != 0 {
				t.Errorf("inputs changed: %v, %v, %+v, %d starts", res, err, st, count(cmds, "systemctl start"))
			}
		})
	}
}

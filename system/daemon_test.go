package system_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/system"
)

const appConf = "/etc/app/app.conf"

// appVM is a VM with an app.service that reloads and whose configuration
// appConf is what it loaded at its last start or reload (loaded). Setting
// fail makes its next start or reload fail, as a lost connection would
// leave the debt.
func appVM(t *testing.T) (v *vm, loaded *string, fail *bool) {
	v = newVM(t, ubuntu.Options{})
	loaded, fail = new(string), new(bool)
	load := func(m *ubuntu.Machine) error {
		if *fail {
			*fail = false
			return errors.New("simulated failure")
		}
		b, _ := v.Server().FS().ReadFile(appConf)
		*loaded = string(b)
		return nil
	}
	v.AddUnit(ubuntu.Unit{Name: "app.service", File: appUnit, OnStart: load, OnReload: load})
	return v, loaded, fail
}

func mode(t *testing.T, v *vm, file string) fs.FileMode {
	t.Helper()
	fi, err := v.Server().FS().Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// The daemon's own configuration, given as an input, is written under the
// unit's marker and reloaded (not restarted, no daemon-reload); each file
// has its own mode in one call; a run that fails after the write leaves
// the reload to the next run, which finds the file as it wants it.
func TestConfigureUnitTakesTheDaemonsInputsUnderItsMarker(t *testing.T) {
	v, loaded, fail := appVM(t)
	env := system.UnitDir + "/app.service.d/secret.env"
	opts := system.UnitOptions{Unit: "app",
		Files: map[string]string{
			system.UnitDir + "/app.service.d/env.conf": "[Service]\nEnvironmentFile=" + env + "\n",
			env: "TOKEN=s3cret\n",
		},
		Modes:  map[string]fs.FileMode{env: 0o600},
		Inputs: map[string]string{appConf: "v1\n"},
	}
	if _, _, err := v.step(configure(opts)); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, v, env); m != 0o600 {
		t.Errorf("%s: %v, want 0600", env, m)
	}
	for _, f := range []string{system.UnitDir + "/app.service.d/env.conf", appConf} {
		if m := mode(t, v, f); m != 0o644 {
			t.Errorf("%s: %v, want 0644", f, m)
		}
	}
	if *loaded != "v1\n" {
		t.Errorf("loaded %q", *loaded)
	}
	daemonReloads, st := v.DaemonReloads(), v.Service("app")
	opts.Inputs[appConf] = "v2\n"
	res, _, err := v.step(configure(opts))
	if after := v.Service("app"); err != nil || !res.Changed || after.Reloads != st.Reloads+1 || after.Restarts != st.Restarts || v.DaemonReloads() != daemonReloads || *loaded != "v2\n" {
		t.Errorf("changed input: %v, %v, %+v, %d daemon-reloads, loaded %q", res, err, after, v.DaemonReloads()-daemonReloads, *loaded)
	}
	if res, cmds, err := v.step(configure(opts)); err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("converged: %v, %v, %q", res, err, cmds)
	}

	// The run is cut short after the write.
	opts.Inputs[appConf] = "v3\n"
	*fail = true
	if _, _, err := v.step(configure(opts)); err == nil {
		t.Fatal("no failure")
	}
	if b, _ := v.Server().FS().ReadFile(appConf); string(b) != "v3\n" || *loaded != "v2\n" {
		t.Fatalf("file %q, loaded %q: the test proves nothing", b, *loaded)
	}
	res, _, err = v.step(configure(opts))
	if err != nil || res.Detail != "reloaded or restarted app.service" || *loaded != "v3\n" || v.Server().FS().Exists(system.PendingMarker("app")) {
		t.Errorf("the owed reload: %v, %v, loaded %q", res, err, *loaded)
	}

	// An input read only at start restarts.
	opts.Inputs[appConf], opts.InputsNeedRestart = "v4\n", true
	st = v.Service("app")
	if res, _, err := v.step(configure(opts)); err != nil || v.Service("app").Restarts != st.Restarts+1 || *loaded != "v4\n" {
		t.Errorf("restart: %v, %v, %+v", res, err, v.Service("app"))
	}
}

// A marker that owes a reload (another step wrote it) becomes one that
// owes a restart when this run's change needs one.
func TestConfigureUnitMakesAnOwedReloadARestart(t *testing.T) {
	v, _, fail := appVM(t)
	opts := system.UnitOptions{Unit: "app", Inputs: map[string]string{appConf: "v1\n"}, InputsNeedRestart: true}
	if _, _, err := v.step(configure(opts)); err != nil {
		t.Fatal(err)
	}
	m := system.PendingMarkerFile("app", true)
	if err := v.Server().FS().WriteFile(m.Path, m.Content, 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Inputs[appConf] = "v2\n"
	*fail = true
	if _, _, err := v.step(configure(opts)); err == nil {
		t.Fatal("no failure")
	}
	if b, _ := v.Server().FS().ReadFile(m.Path); system.PendingReloadOnly(b) {
		t.Fatalf("marker %q still owes only a reload", b)
	}
	// The failed restart left the unit failed: it is started.
	if res, _, err := v.step(configure(opts)); err != nil || res.Detail != "started app.service" || v.Server().FS().Exists(m.Path) {
		t.Errorf("%v, %v", res, err)
	}
}

// With NoStart a stopped unit is enabled and stays stopped (the kubelet,
// which kubeadm starts); a running one whose files change is restarted,
// and nothing waits for it to be active.
func TestConfigureUnitNoStart(t *testing.T) {
	v, _, _ := appVM(t)
	dropIn := system.UnitDir + "/app.service.d/x.conf"
	opts := system.UnitOptions{Unit: "app", NoStart: true, Files: map[string]string{dropIn: "[Service]\nEnvironment=X=1\n"}}
	res, cmds, err := v.step(configure(opts))
	if st := v.Service("app"); err != nil || !res.Changed || st.Active || !st.Enabled || st.Starts != 0 || count(cmds, "is-active") != 0 {
		t.Errorf("stopped: %v, %v, %+v, %q", res, err, st, cmds)
	}
	if v.Server().FS().Exists(system.PendingMarker("app")) {
		t.Error("a stopped unit owes a restart")
	}
	if res, cmds, err := v.step(configure(opts)); err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("converged: %v, %v, %q", res, err, cmds)
	}
	if _, err := v.h.Run(v.ctx, remote.Cmd{Args: []string{"systemctl", "start", "app"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	opts.Files[dropIn] = "[Service]\nEnvironment=X=2\n"
	res, _, err = v.step(configure(opts))
	if st := v.Service("app"); err != nil || res.Detail != "wrote "+dropIn+"; restarted app.service" || st.Restarts != 1 {
		t.Errorf("running: %v, %v, %+v", res, err, st)
	}
}

func TestConfigureUnitRefusesBadInputsAndModes(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	for _, tc := range []struct {
		opts system.UnitOptions
		want string
	}{
		{system.UnitOptions{Unit: "app", Inputs: map[string]string{"etc/app.conf": "x"}}, `Inputs["etc/app.conf"]: "etc/app.conf" is not a clean absolute file path`},
		{system.UnitOptions{Unit: "app", Inputs: map[string]string{"/etc/../app.conf": "x"}}, `Inputs["/etc/../app.conf"]`},
		{system.UnitOptions{Unit: "app", Inputs: map[string]string{"/etc/a\npp.conf": "x"}}, `control character`},
		{system.UnitOptions{Unit: "app", Inputs: map[string]string{system.UnitDir + "/app.service.d/x.conf": "x"}}, `give it in Files`},
		{system.UnitOptions{Unit: "app", Modes: map[string]fs.FileMode{"/etc/x": 0o600}}, `Modes["/etc/x"]: /etc/x is neither in Files nor in Inputs`},
		{system.UnitOptions{Unit: "app", Inputs: map[string]string{"/etc/x": ""}, Modes: map[string]fs.FileMode{"/etc/x": fs.ModeDir | 0o755}}, `Modes["/etc/x"]`},
	} {
		_, cmds, err := v.step(configure(tc.opts))
		paramsError(t, err, tc.want)
		if len(cmds) != 0 {
			t.Errorf("%q ran", cmds)
		}
	}
	_, cmds, err := v.step(func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.ConfigureDaemon(ctx, h, system.DaemonOptions{UnitOptions: system.UnitOptions{Unit: "app"}})
	})
	paramsError(t, err, "Inputs: must name")
	paramsError(t, err, "Check: must give")
	if len(cmds) != 0 {
		t.Errorf("%q ran", cmds)
	}
}

// appCheck is the daemon's validator: it refuses a configuration with
// the word "bad" in it, naming the line, as haproxy -c does.
func appCheck(fsys *sshtest.FS) sshtest.Program {
	return func(_ context.Context, p *sshtest.Process) int {
		if len(p.Args) != 3 || p.Args[1] != "-t" {
			return p.Fail(2, "usage: app-check -t FILE")
		}
		b, err := fsys.ReadFile(p.Args[2])
		if err != nil {
			return p.Errorf("%v", err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "bad") {
				return p.Errorf("[%s:%d]: unknown keyword %q", p.Args[2], i+1, l)
			}
		}
		return 0
	}
}

func daemon(opts system.DaemonOptions) func(ctx context.Context, h remote.Host) (lcm.Result, error) {
	return func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.ConfigureDaemon(ctx, h, opts)
	}
}

// ConfigureDaemon replaces a configuration only when the daemon's own
// validator accepts it; a refused one is an error that names the file
// and what the validator said, and leaves the old file, the running
// daemon and no staged file or marker behind.
func TestConfigureDaemonChecksBeforeItReplaces(t *testing.T) {
	v, loaded, fail := appVM(t)
	v.srv.Handle("/usr/sbin/app-check", appCheck(v.Server().FS()))
	var checked []string
	opts := system.DaemonOptions{
		UnitOptions: system.UnitOptions{Unit: "app", Inputs: map[string]string{appConf: "good 1\n"}, Modes: map[string]fs.FileMode{appConf: 0o640}},
		Check: func(staged map[string]string) []string {
			checked = append(checked, staged[appConf])
			return []string{"app-check", "-t", staged[appConf]}
		},
	}
	res, _, err := v.step(daemon(opts))
	if err != nil || !res.Changed || *loaded != "good 1\n" || mode(t, v, appConf) != 0o640 {
		t.Fatalf("%v, %v, loaded %q", res, err, *loaded)
	}
	if len(checked) != 1 || checked[0] != "/etc/app/.app.conf.mgmtkit-new" {
		t.Errorf("checked %q", checked)
	}
	if res, cmds, err := v.step(daemon(opts)); err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("converged: %v, %v, %q", res, err, cmds)
	}

	st := v.Service("app")
	opts.Inputs[appConf] = "good 2\nbad 2\n"
	_, _, err = v.step(daemon(opts))
	var ce *system.CheckError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), appConf) || !strings.Contains(err.Error(), `[/etc/app/.app.conf.mgmtkit-new:2]: unknown keyword "bad 2"`) || !strings.Contains(err.Error(), "app-check") {
		t.Errorf("err = %v", err)
	}
	if b, _ := v.Server().FS().ReadFile(appConf); string(b) != "good 1\n" || *loaded != "good 1\n" || v.Service("app") != st {
		t.Errorf("file %q, loaded %q, %+v", b, *loaded, v.Service("app"))
	}
	if v.Server().FS().Exists(system.StagedPath(appConf)) || v.Server().FS().Exists(system.PendingMarker("app")) {
		t.Error("a staged file or a marker is left")
	}

	// Replaced, then the reload is lost: the next run owes it.
	opts.Inputs[appConf] = "good 3\n"
	*fail = true
	if _, _, err := v.step(daemon(opts)); err == nil {
		t.Fatal("no failure")
	}
	if b, _ := v.Server().FS().ReadFile(appConf); string(b) != "good 3\n" || *loaded != "good 1\n" {
		t.Fatalf("file %q, loaded %q: the test proves nothing", b, *loaded)
	}
	res, _, err = v.step(daemon(opts))
	if err != nil || res.Detail != "reloaded or restarted app.service" || *loaded != "good 3\n" || v.Service("app").Restarts != st.Restarts {
		t.Errorf("the owed reload: %v, %v, loaded %q, %+v", res, err, *loaded, v.Service("app"))
	}
	if v.Server().FS().Exists(system.PendingMarker("app")) {
		t.Error("the marker stays")
	}
}

// The real haproxy, when installed here, is the validator: the simulated
// node's haproxy hands the staged file to it. A configuration it accepts
// is put in place, one it refuses is reported with its own alert.
func TestConfigureDaemonWithTheRealHAProxy(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("haproxy is not installed on this machine: ConfigureDaemon not checked against it")
		}
	}
	v, loaded, _ := appVM(t)
	v.srv.Handle("/usr/sbin/haproxy", func(_ context.Context, p *sshtest.Process) int {
		if len(p.Args) != 4 || p.Args[1] != "-c" || p.Args[2] != "-f" {
			return p.Fail(2, "usage: haproxy -c -f FILE")
		}
		b, err := v.Server().FS().ReadFile(p.Args[3])
		if err != nil {
			return p.Errorf("%v", err)
		}
		f := filepath.Join(t.TempDir(), filepath.Base(p.Args[3]))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return p.Errorf("%v", err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "-c", "-f", f)
		cmd.Stdout, cmd.Stderr = p.Stdout, &stderr
		err = cmd.Run()
		fmt.Fprint(p.Stderr, strings.ReplaceAll(stderr.String(), f, p.Args[3]))
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			return p.Errorf("%v", err)
		}
		return 0
	})
	const cfg = "/etc/haproxy/haproxy.cfg"
	good := "defaults\n\tmode tcp\n\ttimeout connect 5s\n\ttimeout client 1m\n\ttimeout server 1m\n\nfrontend api\n\tbind 127.0.0.1:16443\n\tdefault_backend api\n\nbackend api\n\tserver m1 127.0.0.1:6443 check\n"
	opts := system.DaemonOptions{
		UnitOptions: system.UnitOptions{Unit: "app", Inputs: map[string]string{cfg: good}},
		Check:       func(staged map[string]string) []string { return []string{"haproxy", "-c", "-f", staged[cfg]} },
	}
	if res, _, err := v.step(daemon(opts)); err != nil || !res.Changed {
		t.Fatalf("the real haproxy refuses a good configuration: %v, %v", res, err)
	}
	opts.Inputs[cfg] = strings.Replace(good, "default_backend api", "default_backend nowhere", 1)
	_, _, err = v.step(daemon(opts))
	var ce *system.CheckError
	if !errors.As(err, &ce) || !strings.Contains(ce.Stderr, "nowhere") || !strings.Contains(err.Error(), cfg) {
		t.Errorf("err = %v, want haproxy's own alert", err)
	}
	if b, _ := v.Server().FS().ReadFile(cfg); string(b) != good {
		t.Errorf("the refused configuration replaced the good one:\n%s", b)
	}
	_ = loaded
}

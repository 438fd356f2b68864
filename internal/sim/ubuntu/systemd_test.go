package ubuntu

import (
	"errors"

	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSystemctlJobsAndCounters(t *testing.T) {
	var starts, stops, reloads atomic.Int32
	v := newVM(t, Options{})
	v.AddUnit(Unit{
		Name:     "app.service",
		OnStart:  func(*Machine) error { starts.Add(1); return nil },
		OnStop:   func(*Machine) error { stops.Add(1); return nil },
		OnReload: func(*Machine) error { reloads.Add(1); return nil },
	})
	v.AddUnit(Unit{Name: "plain.service"})
	if st := v.Service("app"); !st.Known || st.Enabled || st.Active {
		t.Fatalf("a new unit: %+v", st)
	}
	want(t, "is-active inactive", v.user("systemctl is-active app"), "inactive\n", "", 3)
	want(t, "is-enabled disabled", v.user("systemctl is-enabled app"), "disabled\n", "", 1)
	wantCode(t, "status inactive", v.user("systemctl status app.service"), 3, "Active: inactive (dead)", "")

	want(t, "enable --now", v.root("systemctl enable --now app"), "",
		"Created symlink /etc/systemd/system/multi-user.target.wants/app.service → /lib/systemd/system/app.service.\n", 0)
	want(t, "enable again is quiet", v.root("systemctl enable app"), "", "", 0)
	want(t, "is-active", v.user("systemctl is-active app"), "active\n", "", 0)
	want(t, "is-active --quiet", v.user("systemctl is-active --quiet app"), "", "", 0)
	want(t, "is-enabled", v.user("systemctl is-enabled app"), "enabled\n", "", 0)
	wantCode(t, "status active", v.user("systemctl status app | grep -c running"), 0, "1\n", "")
	want(t, "show", v.user("systemctl show -p ActiveState --value app"), "active\n", "", 0)
	want(t, "show two", v.user("systemctl show --property=ActiveState,UnitFileState app"), "ActiveState=active\nUnitFileState=enabled\n", "", 0)
	want(t, "start an active unit", v.root("systemctl start app"), "", "", 0)

	v.mustOK("systemctl restart app")
	v.mustOK("systemctl reload app")
	v.mustOK("systemctl reload-or-restart app")
	v.mustOK("systemctl try-restart app")
	want(t, "reload not applicable", v.root("systemctl start plain && systemctl reload plain"), "",
		"Failed to reload plain.service: Job type reload is not applicable for unit plain.service.\n", 1)
	v.mustOK("systemctl reload-or-restart plain")
	v.mustOK("service app restart")

	st := v.Service("app.service")
	want := ServiceState{Known: true, Enabled: true, Active: true, Starts: 1, Restarts: 3, Reloads: 2}
	if st != want {
		t.Errorf("app: %+v, want %+v", st, want)
	}
	if starts.Load() != 4 || stops.Load() != 3 || reloads.Load() != 2 {
		t.Errorf("hooks: %d starts, %d stops, %d reloads", starts.Load(), stops.Load(), reloads.Load())
	}
	if p := v.Service("plain"); p.Starts != 1 || p.Restarts != 1 || p.Reloads != 0 {
		t.Errorf("plain: %+v", p)
	}

	v.mustOK("systemctl disable --now app")
	st = v.Service("app")
	if st.Enabled || st.Active || st.Stops != 1 || v.Server().FS().Exists("/etc/systemd/system/multi-user.target.wants/app.service") {
		t.Errorf("after disable --now: %+v", st)
	}
	wantStr(t, "stop an inactive unit", v.root("systemctl stop app"), "", "", 0)
	wantStr(t, "try-restart an inactive unit", v.root("systemctl try-restart app"), "", "", 0)
	wantStr(t, "reload an inactive unit", v.root("systemctl reload app"), "", "app.service is not active, cannot reload.\n", 1)
	if st := v.Service("app"); st.Stops != 1 || st.Restarts != 3 {
		t.Errorf("no-op jobs counted: %+v", st)
	}
}

// wantStr is want, for a test whose name `want` is taken.
func wantStr(t testing.TB, what string, got result, stdout, stderr string, code int) {
	t.Helper()
	want(t, what, got, stdout, stderr, code)
}

func TestSystemctlErrors(t *testing.T) {
	v := newVM(t, Options{})
	wantStr(t, "start unknown", v.root("systemctl start nosuch"), "", "Failed to start nosuch.service: Unit nosuch.service not found.\n", 5)
	wantStr(t, "restart unknown", v.root("systemctl restart nosuch.service"), "", "Failed to restart nosuch.service: Unit nosuch.service not found.\n", 5)
	wantStr(t, "stop unknown", v.root("systemctl stop nosuch"), "", "Failed to stop nosuch.service: Unit nosuch.service not loaded.\n", 5)
	wantStr(t, "enable unknown", v.root("systemctl enable nosuch"), "", "Failed to enable unit: Unit file nosuch.service does not exist.\n", 1)
	wantStr(t, "is-active unknown", v.user("systemctl is-active nosuch"), "inactive\n", "", 3)
	wantStr(t, "status unknown", v.user("systemctl status nosuch"), "", "Unit nosuch.service could not be found.\n", 4)
	wantStr(t, "restart as a user", v.user("systemctl restart ssh"), "",
		"Failed to restart ssh.service: Interactive authentication required.\nSee system logs and 'systemctl status ssh.service' for details.\n", 1)
	wantStr(t, "enable as a user", v.user("systemctl enable cron"), "", "Failed to enable unit: Interactive authentication required.\n", 1)
	wantStr(t, "daemon-reload as a user", v.user("systemctl daemon-reload"), "", "Failed to reload daemon: Interactive authentication required.\n", 1)
	wantStr(t, "with sudo", v.user("sudo systemctl restart ssh"), "", "", 0)
	wantStr(t, "unmodelled verb", v.root("systemctl mask ssh"), "", "systemctl: systemctl mask (not modelled by internal/sim/ubuntu)\n", 2)
	if st := v.Service("ssh"); st.Restarts != 1 || !st.Active || !st.Enabled || st.Starts != 0 {
		t.Errorf("ssh: %+v (the image's units boot without counting)", st)
	}

	// A unit whose start fails.
	fail := true
	v.AddUnit(Unit{Name: "daemon.service", OnStart: func(*Machine) error {
		if fail {
			return errors.New("invalid daemon.json")
		}
		return nil
	}})
	wantStr(t, "start fails", v.root("systemctl start daemon"), "",
		"Job for daemon.service failed because the control process exited with error code.\nSee \"systemctl status daemon.service\" and \"journalctl -xeu daemon.service\" for details.\n", 1)
	wantStr(t, "is-active failed", v.user("systemctl is-active daemon"), "failed\n", "", 3)
	wantStr(t, "is-failed", v.user("systemctl is-failed daemon"), "failed\n", "", 0)
	wantCode(t, "status failed", v.user("systemctl status daemon"), 3, "Active: failed (Result: exit-code)", "")
	fail = false
	v.mustOK("systemctl restart daemon")
	if st := v.Service("daemon"); !st.Active || st.Failed || st.Starts != 1 || st.Restarts != 1 {
		t.Errorf("daemon: %+v", st)
	}
}

func TestSystemctlUnitFilesAndDaemonReload(t *testing.T) {
	v := newVM(t, Options{})
	v.mustOK(`cat > /etc/systemd/system/web.service <<'EOF'
[Unit]
Description=Web frontend

[Service]
ExecStart=/usr/local/bin/web
ExecReload=/bin/kill -HUP $MAINPID

[Install]
WantedBy=multi-user.target
EOF`)
	v.mustOK("systemctl daemon-reload && systemctl enable --now web")
	if st := v.Service("web"); !st.Known || !st.Active || !st.Enabled || st.Starts != 1 || st.NeedDaemonReload {
		t.Errorf("web: %+v", st)
	}
	wantCode(t, "description", v.user("systemctl status web"), 0, "● web.service - Web frontend\n     Loaded: loaded (/etc/systemd/system/web.service; enabled; vendor preset: enabled)\n", "")
	v.mustOK("systemctl reload web")

	// A drop-in changes the unit on disk: systemd needs a daemon-reload.
	v.mustOK("mkdir -p /etc/systemd/system/web.service.d && printf '[Service]\\nEnvironment=HTTP_PROXY=http://proxy:3128\\n' > /etc/systemd/system/web.service.d/http-proxy.conf")
	if !v.Service("web").NeedDaemonReload {
		t.Error("a new drop-in did not make the unit stale")
	}
	want(t, "show NeedDaemonReload", v.user("systemctl show -p NeedDaemonReload web"), "NeedDaemonReload=yes\n", "", 0)
	wantStr(t, "restart warns", v.root("systemctl restart web"), "",
		"Warning: The unit file, source configuration file or drop-ins of web.service changed on disk. Run 'systemctl daemon-reload' to reload units.\n", 0)
	reloads := v.DaemonReloads()
	v.mustOK("systemctl daemon-reload")
	if v.DaemonReloads() != reloads+1 || v.Service("web").NeedDaemonReload {
		t.Errorf("daemon-reload: %d reloads, %+v", v.DaemonReloads(), v.Service("web"))
	}
	wantStr(t, "no warning after daemon-reload", v.root("systemctl restart web"), "", "", 0)

	// A static unit (no [Install] section).
	v.mustOK("printf '[Unit]\\nDescription=once\\n[Service]\\nType=oneshot\\nExecStart=/bin/true\\n' > /lib/systemd/system/once.service")
	wantCode(t, "enable static", v.root("systemctl enable once"), 0, "", "The unit files have no installation config")
	wantStr(t, "is-enabled static", v.user("systemctl is-enabled once"), "static\n", "", 0)

	// A unit whose file is deleted disappears on daemon-reload.
	v.mustOK("systemctl disable --now web && rm -r /etc/systemd/system/web.service /etc/systemd/system/web.service.d && systemctl daemon-reload")
	if st := v.Service("web"); st.Known {
		t.Errorf("deleted unit still known: %+v", st)
	}
}

func TestSystemctlConcurrentSessions(t *testing.T) {
	var starts atomic.Int32
	v := newVM(t, Options{})
	v.AddUnit(Unit{Name: "busy.service", OnStart: func(m *Machine) error {
		starts.Add(1)
		m.Service("busy") // hooks may use the machine
		return nil
	}})
	v.mustOK("systemctl enable --now busy")
	const n = 8
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := v.user("sudo systemctl restart busy && systemctl is-active --quiet busy"); r.code != 0 {
				t.Errorf("restart: %v", r)
			}
		}()
	}
	wg.Wait()
	if st := v.Service("busy"); st.Restarts != n || starts.Load() != n+1 || !st.Active {
		t.Errorf("after %d concurrent restarts: %+v, %d starts", n, st, starts.Load())
	}
}

func TestHostnamectl(t *testing.T) {
	v := newVM(t, Options{})
	wantStr(t, "as a user", v.user("hostnamectl set-hostname master12"), "", "Could not set static hostname: Interactive authentication required.\n", 1)
	wantStr(t, "invalid", v.root("hostnamectl set-hostname bad_name"), "", "Invalid static hostname 'bad_name'\n", 1)
	wantStr(t, "set", v.user("sudo hostnamectl set-hostname master12"), "", "", 0)
	wantStr(t, "consistent", v.user("hostname; hostnamectl --static; hostnamectl hostname; uname -n; cat /etc/hostname"), strings.Repeat("master12\n", 5), "", 0)
	if v.Hostname() != "master12" {
		t.Errorf("Hostname() = %q", v.Hostname())
	}
	wantCode(t, "status", v.user("hostnamectl"), 0, " Static hostname: master12\n", "")
	wantCode(t, "/etc/hosts from cloud-init", v.user("cat /etc/hosts"), 0, "127.0.1.1 node-1 node-1\n127.0.0.1 localhost\n", "")
}

func TestReleaseFiles(t *testing.T) {
	v := newVM(t, Options{})
	wantStr(t, "os-release", v.user(". /etc/os-release && echo $ID $VERSION_ID $VERSION_CODENAME && grep -c 'Ubuntu 22.04' /etc/os-release"), "ubuntu 22.04 jammy\n1\n", "", 0)
	wantStr(t, "lsb-release", v.user("lsb_release -cs; lsb_release -rs; grep DISTRIB_CODENAME /etc/lsb-release"), "jammy\n22.04\nDISTRIB_CODENAME=jammy\n", "", 0)
	wantStr(t, "lsb_release -a", v.user("lsb_release -a"), "Distributor ID:\tUbuntu\nDescription:\tUbuntu 22.04.4 LTS\nRelease:\t22.04\nCodename:\tjammy\n", "No LSB modules are available.\n", 0)
	wantStr(t, "arch", v.user("arch | grep -c x86_64; dpkg --print-architecture"), "1\namd64\n", "", 0)
	arm := newVM(t, Options{Arch: "arm64"})
	wantStr(t, "arm64", arm.user("arch; uname -m; dpkg --print-architecture; grep -c ports.ubuntu.com /etc/apt/sources.list"), "aarch64\naarch64\narm64\n4\n", "", 0)
	wantStr(t, "accounts", v.user("id -u nobody; getent=$(grep -c '^nogroup:' /etc/group); echo $getent"), "65534\n1\n", "", 0)
}

func TestRebootKeepsWhatPersists(t *testing.T) {
	var starts, stops atomic.Int32
	v := newVM(t, Options{})
	hooks := func(name string) Unit {
		return Unit{Name: name, OnStart: func(*Machine) error { starts.Add(1); return nil }, OnStop: func(*Machine) error { stops.Add(1); return nil }}
	}
	v.AddUnit(hooks("kept.service"))
	v.AddUnit(hooks("transient.service"))
	v.mustOK("systemctl enable --now kept && systemctl start transient")

	persistent, transient := NewDisk(1<<30), NewDisk(1<<30)
	v.AttachDisk("/dev/vdb", persistent)
	v.AttachDisk("/dev/vdc", transient)
	v.mustOK("mkfs.ext4 -q /dev/vdb && mkfs.ext4 -q /dev/vdc && mkdir -p /data /scratch && mount /dev/vdb /data && mount /dev/vdc /scratch")
	v.mustOK("echo \"UUID=$(blkid -s UUID -o value /dev/vdb) /data ext4 defaults,nofail 0 2\" >> /etc/fstab && echo x > /data/f && touch /tmp/junk")
	v.mustOK("hostnamectl set-hostname kept-name")
	before := v.Service("kept")

	if err := v.Reboot(); err != nil {
		t.Fatal(err)
	}
	wantStr(t, "fstab mount is back", v.user("mountpoint -q /data && cat /data/f"), "x\n", "", 0)
	wantStr(t, "other mount is gone", v.user("mountpoint -q /scratch"), "", "", 32)
	wantStr(t, "/tmp emptied, hostname kept", v.user("ls /tmp; hostname"), "kept-name\n", "", 0)
	if st := v.Service("kept"); !st.Active || st != before {
		t.Errorf("enabled unit after reboot: %+v (before %+v)", st, before)
	}
	if st := v.Service("transient"); st.Active {
		t.Errorf("a unit that was not enabled runs after reboot: %+v", st)
	}
	if st := v.Service("ssh"); !st.Active {
		t.Errorf("ssh after reboot: %+v", st)
	}
	if starts.Load() != 3 || stops.Load() != 2 {
		t.Errorf("hooks: %d starts, %d stops", starts.Load(), stops.Load())
	}

	// An fstab entry without nofail for a disk that is gone: emergency mode.
	v.DetachDisk("/dev/vdb")
	v.mustOK("echo '/dev/vdb /data ext4 defaults 0 2' >> /etc/fstab")
	if err := v.Reboot(); err == nil || !strings.Contains(err.Error(), "special device /dev/vdb does not exist") {
		t.Errorf("reboot with a missing disk in fstab: %v", err)
	}
}

// A unit reported activating shows it for the given number of `systemctl
// show` calls; a start finds it running and does nothing, a restart ends
// the transition.
func TestSystemctlShowReportsATransientState(t *testing.T) {
	v := newVM(t, Options{})
	v.AddUnit(Unit{Name: "app.service"})
	v.mustOK("systemctl start app")
	v.ReportTransientState("app", "activating", 2)
	show := "systemctl show -p ActiveState,SubState app"
	want(t, "activating", v.user(show), "ActiveState=activating\nSubState=start\n", "", 0)
	want(t, "is-active is settled", v.user("systemctl is-active app"), "active\n", "", 0)
	v.mustOK("systemctl start app")
	want(t, "still activating", v.user(show), "ActiveState=activating\nSubState=start\n", "", 0)
	want(t, "settled", v.user(show), "ActiveState=active\nSubState=running\n", "", 0)
	if st := v.Service("app"); st.Starts != 1 || st.Restarts != 0 {
		t.Errorf("a start of an activating unit counted: %+v", st)
	}
	v.ReportTransientState("app", "reloading", 5)
	v.mustOK("systemctl restart app")
	want(t, "a restart ends it", v.user(show), "ActiveState=active\nSubState=running\n", "", 0)
}

package ubuntu

import (
	"context"

	"errors"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"strings"
	"sync/atomic"
	"testing"
)

// demoCatalog is the default catalog plus "demo" (version 1.0-1, with a
// dependency, a configuration file, a program and a unit) whose hooks
// count their calls.
type demoCounts struct{ installs, starts, stops, reloads, removes atomic.Int32 }

func demoCatalog(counts *demoCounts, versions ...string) *Catalog {
	c := DefaultCatalog()
	if len(versions) == 0 {
		versions = []string{"1.0-1"}
	}
	c.Add(Package{Name: "libdemo", Version: "1.0-1"})
	for _, v := range versions {
		c.Add(Package{
			Name: "demo", Version: v, Depends: []string{"libdemo"}, Description: "a demonstration daemon",
			Files: map[string]string{"/etc/demo/demo.conf": "level = 1\n", "/usr/share/doc/demo/README": "demo " + v + "\n"},
			Tools: map[string]Tool{"/usr/bin/demo": func(_ context.Context, m *Machine, p *sshtest.Process) int {
				outf(p, "demo %s, service active: %v", m.Version("demo"), m.Service("demo").Active)
				return 0
			}},
			Units: []Unit{{
				Name:     "demo.service",
				OnStart:  func(*Machine) error { counts.starts.Add(1); return nil },
				OnStop:   func(*Machine) error { counts.stops.Add(1); return nil },
				OnReload: func(*Machine) error { counts.reloads.Add(1); return nil },
			}},
			OnInstall: func(*Machine) error { counts.installs.Add(1); return nil },
			OnRemove:  func(*Machine) error { counts.removes.Add(1); return nil },
		})
	}
	return c
}

func TestAptInstallIsIdempotent(t *testing.T) {
	var n demoCounts
	v := newVM(t, Options{Catalog: demoCatalog(&n)})
	v.mustOK("apt-get update")

	r := v.root("DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confold demo")
	wantCode(t, "first install", r, 0, "The following additional packages will be installed:\n  libdemo\nThe following NEW packages will be installed:\n  demo libdemo\n0 upgraded, 2 newly installed, 0 to remove and 0 not upgraded.\n", "")
	if !strings.Contains(r.stdout, "Setting up demo (1.0-1) ...") {
		t.Errorf("no dpkg progress: %v", r)
	}
	if !v.Installed("demo") || !v.Installed("libdemo") || v.Version("demo") != "1.0-1" {
		t.Fatalf("packages %v", v.Packages())
	}
	st := v.Service("demo")
	if !st.Enabled || !st.Active || st.Starts != 1 || n.installs.Load() != 1 || n.starts.Load() != 1 {
		t.Errorf("after install: %+v, hooks %d installs %d starts", st, n.installs.Load(), n.starts.Load())
	}
	want(t, "the package's program", v.user("demo"), "demo 1.0-1, service active: true\n", "", 0)

	r = v.root("apt-get install -y demo")
	want(t, "second install", r, "Reading package lists...\nBuilding dependency tree...\nReading state information...\ndemo is already the newest version (1.0-1).\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n", "", 0)
	if st := v.Service("demo"); n.installs.Load() != 1 || st.Starts != 1 || st.Restarts != 0 {
		t.Errorf("the second install ran hooks: %d installs, %+v", n.installs.Load(), st)
	}
	// A dependency asked for by name becomes manually installed.
	r = v.root("apt-get install -y libdemo")
	wantCode(t, "mark manual", r, 0, "libdemo is already the newest version (1.0-1).\nlibdemo set to manually installed.\n", "")
	wantCode(t, "apt list", v.root("apt list --installed 2>/dev/null | grep demo"), 0, "demo/jammy,now 1.0-1 amd64 [installed]\nlibdemo/jammy,now 1.0-1 amd64 [installed]\n", "")
}

func TestAptErrors(t *testing.T) {
	v := newVM(t, Options{})
	const head = "Reading package lists...\nBuilding dependency tree...\nReading state information...\n"
	want(t, "fresh image: empty lists", v.root("apt-get install -y jq"), head, "E: Unable to locate package jq\n", 100)
	want(t, "installed packages are known without lists", v.root("apt-get install -y curl"),
		head+"curl is already the newest version (7.81.0-1ubuntu1.15).\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n", "", 0)

	want(t, "update as a user", v.user("apt-get update"), "",
		"E: Could not open lock file /var/lib/apt/lists/lock - open (13: Permission denied)\nE: Unable to lock directory /var/lib/apt/lists/\n", 100)
	want(t, "install as a user", v.user("apt-get install -y jq"), "",
		"E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), are you root?\n", 100)
	if v.AptUpdates() != 0 {
		t.Errorf("refused updates counted: %d", v.AptUpdates())
	}
	wantCode(t, "update with sudo", v.user("sudo apt-get update"), 0, "Hit:1 http://archive.ubuntu.com/ubuntu jammy InRelease\n", "")
	if v.AptUpdates() != 1 {
		t.Errorf("updates: %d", v.AptUpdates())
	}

	want(t, "unknown packages", v.root("apt-get install -y nosuch jq also-missing"), head,
		"E: Unable to locate package nosuch\nE: Unable to locate package also-missing\n", 100)
	want(t, "unknown version", v.root("apt-get install -y jq=9.9"), head, "E: Version '9.9' for 'jq' was not found\n", 100)
	if v.Installed("jq") {
		t.Error("a failed request installed jq")
	}
	wantCode(t, "version asked for", v.root("apt-get install -y jq=1.6-2.1ubuntu3"), 0, "Setting up jq (1.6-2.1ubuntu3) ...", "")
	want(t, "unmodelled option", v.root("apt-get install --fix-missing jq"), "",
		"apt-get: unrecognized option '--fix-missing' (not modelled by internal/sim/ubuntu)\n", 2)

	// A dependency that is not in the catalog.
	c := DefaultCatalog()
	c.Add(Package{Name: "broken", Version: "1", Depends: []string{"ghost"}})
	v2 := newVM(t, Options{Catalog: c, UpdatedLists: true})
	r := v2.root("apt-get install -y broken")
	wantCode(t, "unmet dependency", r, 100, "The following packages have unmet dependencies:\n broken : Depends: ghost but it is not installable\n", "E: Unable to correct problems, you have held broken packages.\n")
	if err := v2.InstallPackages("broken"); err == nil {
		t.Error("InstallPackages installed a package with a missing dependency")
	}
}

func TestAptDpkgLock(t *testing.T) {
	v := newVM(t, Options{UpdatedLists: true})
	v.HoldDpkgLock(2)
	const locked = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 2425 (unattended-upgr)\n" +
		"N: Be aware that removing the lock file is not a solution and may break your system.\n" +
		"E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?\n"
	for i := 0; i < 2; i++ {
		want(t, "locked", v.user("sudo apt-get install -y jq"), "", locked, 100)
	}
	if v.Installed("jq") {
		t.Fatal("installed while locked")
	}
	wantCode(t, "lock released", v.user("sudo apt-get install -y jq"), 0, "Setting up jq", "")

	// apt-get that waits for the lock succeeds.
	v.HoldDpkgLock(5)
	r := v.root("apt-get -o DPkg::Lock::Timeout=60 install -y socat")
	// The wait is progress on standard output, not an error.
	wantCode(t, "Lock::Timeout", r, 0, "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 2425 (unattended-upgr)...\n", "")
	wantCode(t, "Lock::Timeout installs", r, 0, "Setting up socat", "")
	if strings.Contains(r.stderr, "lock") {
		t.Errorf("a wait for the lock on standard error: %q", r.stderr)
	}
	v.HoldDpkgLock(1)
	wantCode(t, "-qq waits silently", v.root("apt-get -qq -o DPkg::Lock::Timeout=60 install -y curl"), 0, "", "")
	wantCode(t, "the lock is free again", v.root("apt-get install -y conntrack"), 0, "Setting up conntrack", "")

	// dpkg itself.
	v.HoldDpkgLock(1)
	wantCode(t, "dpkg --configure -a locked", v.root("dpkg --configure -a"), 2, "", "dpkg: error: dpkg frontend lock was locked by another process with pid 2425\n")
	want(t, "dpkg --configure -a", v.root("dpkg --configure -a"), "", "", 0)
}

func TestDpkgQueries(t *testing.T) {
	v := newVM(t, Options{UpdatedLists: true})
	v.mustOK("apt-get install -y jq")
	r := v.user("dpkg -s jq")
	want(t, "dpkg -s", r, "Package: jq\nStatus: install ok installed\nPriority: optional\nSection: misc\n"+
		"Maintainer: Ubuntu Developers <ubuntu-devel-discuss@lists.ubuntu.com>\nArchitecture: amd64\nVersion: 1.6-2.1ubuntu3\n"+
		"Depends: libjq1\nDescription: lightweight and flexible command-line JSON processor\n", "", 0)
	want(t, "dpkg -s missing", v.user("dpkg -s socat"), "",
		"dpkg-query: package 'socat' is not installed and no information is available\nUse dpkg --info (= dpkg-deb --info) to examine archive files.\n", 1)
	want(t, "dpkg-query status", v.user(`dpkg-query -W -f='${Status}' jq`), "install ok installed", "", 0)
	want(t, "dpkg-query version", v.user(`dpkg-query -W -f='${Package} ${Version}\n' jq libjq1`), "jq 1.6-2.1ubuntu3\nlibjq1 1.6-2.1ubuntu3\n", "", 0)
	want(t, "dpkg-query default", v.user(`dpkg-query -W jq`), "jq\t1.6-2.1ubuntu3\n", "", 0)
	want(t, "dpkg-query missing", v.user(`dpkg-query -W -f='${Status}' socat`), "", "dpkg-query: no packages found matching socat\n", 1)
	wantCode(t, "dpkg -l", v.user("dpkg -l jq"), 0, "\nii  jq ", "")
	want(t, "dpkg -l missing", v.user("dpkg -l socat"), "", "dpkg-query: no packages found matching socat\n", 1)
	want(t, "architecture", v.user("dpkg --print-architecture"), "amd64\n", "", 0)
	status, _ := v.Server().FS().ReadFile("/var/lib/dpkg/status")
	if !strings.Contains(string(status), "Package: jq\nStatus: install ok installed\n") {
		t.Errorf("/var/lib/dpkg/status lacks jq:\n%s", status)
	}
}

func TestAptRemoveAndPurge(t *testing.T) {
	var n demoCounts
	v := newVM(t, Options{Catalog: demoCatalog(&n), UpdatedLists: true})
	v.mustOK("apt-get install -y demo")
	fs := v.Server().FS()
	if err := fs.WriteFile("/etc/demo/demo.conf", []byte("level = 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	wantCode(t, "remove", v.root("apt-get remove -y demo"), 0, "The following packages will be REMOVED:\n  demo\n0 upgraded, 0 newly installed, 1 to remove and 0 not upgraded.\n", "")
	if v.Installed("demo") || !v.Installed("libdemo") || n.stops.Load() != 1 || n.removes.Load() != 1 {
		t.Errorf("after remove: %v, %d stops, %d removes", v.Packages(), n.stops.Load(), n.removes.Load())
	}
	if st := v.Service("demo"); st.Known {
		t.Errorf("the unit outlived its package: %+v", st)
	}
	want(t, "program gone", v.root("demo"), "", "bash: line 1: demo: command not found\n", 127)
	if fs.Exists("/usr/share/doc/demo/README") || !fs.Exists("/etc/demo/demo.conf") {
		t.Error("remove must delete files and keep configuration files")
	}
	// dpkg -s still succeeds for a removed package that left its
	// configuration: the classic trap of checking with dpkg -s.
	wantCode(t, "dpkg -s rc", v.root("dpkg -s demo"), 0, "Status: deinstall ok config-files\n", "")
	want(t, "rc abbrev", v.root(`dpkg-query -W -f='${db:Status-Abbrev}' demo`), "rc ", "", 0)

	// Reinstalling keeps the administrator's configuration.
	v.mustOK("apt-get install -y demo")
	if data, _ := fs.ReadFile("/etc/demo/demo.conf"); string(data) != "level = 9\n" {
		t.Errorf("reinstall overwrote the configuration: %q", data)
	}
	wantCode(t, "purge", v.root("apt-get purge -y demo"), 0, "  demo*\n", "")
	wantCode(t, "purged", v.root("dpkg -s demo"), 1, "", "is not installed and no information is available")
	if fs.Exists("/etc/demo/demo.conf") {
		t.Error("purge left the configuration file")
	}
	want(t, "remove again", v.root("apt-get remove -y demo"), "Reading package lists...\nBuilding dependency tree...\nReading state information...\nPackage 'demo' is not installed, so not removed\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n", "", 0)
	wantCode(t, "autoremove", v.root("apt-get autoremove -y"), 0, "  libdemo\n", "")
	if v.Installed("libdemo") {
		t.Error("autoremove kept the unneeded dependency")
	}

	// Removing a dependency removes what depends on it.
	v.mustOK("apt-get install -y demo")
	wantCode(t, "remove a dependency", v.root("apt-get remove -y libdemo"), 0, "  demo libdemo\n", "")
	if v.Installed("demo") {
		t.Error("demo survived the removal of libdemo")
	}
}

func TestAptUpgradeHoldAndVersions(t *testing.T) {
	var n demoCounts
	v := newVM(t, Options{Catalog: demoCatalog(&n, "1.0-1", "1.2-1", "1:0.9-1"), UpdatedLists: true})
	// 1:0.9-1 has an epoch: it is the newest.
	wantCode(t, "policy", v.user("apt-cache policy demo"), 0, "demo:\n  Installed: (none)\n  Candidate: 1:0.9-1\n", "")
	v.mustOK("apt-get install -y demo=1.0-1")
	if v.Version("demo") != "1.0-1" {
		t.Fatalf("version %q", v.Version("demo"))
	}
	want(t, "hold", v.root("apt-mark hold demo"), "demo set on hold.\n", "", 0)
	want(t, "hold again", v.root("apt-mark hold demo"), "demo was already set on hold.\n", "", 0)
	want(t, "showhold", v.user("apt-mark showhold"), "demo\n", "", 0)
	want(t, "hold as a user", v.user("apt-mark unhold demo"), "", "dpkg: error: requested operation requires superuser privilege\nE: Executing dpkg failed. Are you root?\n", 100)
	if !v.Held("demo") {
		t.Fatal("not held")
	}
	wantCode(t, "held status", v.root("dpkg -s demo"), 0, "Status: hold ok installed\n", "")
	wantCode(t, "upgrade keeps held packages back", v.root("apt-get upgrade -y"), 0, "The following packages have been kept back:\n  demo\n0 upgraded, 0 newly installed, 0 to remove and 1 not upgraded.\n", "")
	wantCode(t, "install of a held package", v.root("apt-get install -y demo=1.2-1"), 100, "", "E: Held packages were changed and -y was used without --allow-change-held-packages.\n")
	if v.Version("demo") != "1.0-1" || n.installs.Load() != 1 {
		t.Fatalf("held package changed: %s", v.Version("demo"))
	}
	wantCode(t, "allowed", v.root("apt-get install -y --allow-change-held-packages demo=1.2-1"), 0, "Unpacking demo (1.2-1) over (1.0-1) ...", "")
	st := v.Service("demo")
	if v.Version("demo") != "1.2-1" || n.installs.Load() != 2 || st.Restarts != 1 || st.Starts != 1 || n.stops.Load() != 1 {
		t.Errorf("upgrade: version %s, %d installs, %+v", v.Version("demo"), n.installs.Load(), st)
	}
	if data, _ := v.Server().FS().ReadFile("/usr/share/doc/demo/README"); string(data) != "demo 1.2-1\n" {
		t.Errorf("upgrade did not replace files: %q", data)
	}
	wantCode(t, "downgrade refused", v.root("apt-get install -y --allow-change-held-packages demo=1.0-1"), 100, "", "E: Packages were downgraded and -y was used without --allow-downgrades.\n")
	want(t, "unhold", v.root("apt-mark unhold demo"), "Canceled hold on demo.\n", "", 0)
	wantCode(t, "upgrade", v.root("apt-get upgrade -y"), 0, "1 upgraded, 0 newly installed", "")
	if v.Version("demo") != "1:0.9-1" {
		t.Errorf("upgrade gave %q", v.Version("demo"))
	}
}

func TestAptThirdPartyRepository(t *testing.T) {
	c := DefaultCatalog()
	const repo = "https://download.example.com/linux/ubuntu"
	c.Add(Package{Name: "example-ce", Version: "5:24.0.7-1~ubuntu.22.04~jammy", Repo: repo})
	v := newVM(t, Options{Catalog: c, UpdatedLists: true})
	wantCode(t, "before the source", v.root("apt-get install -y example-ce"), 100, "", "E: Unable to locate package example-ce\n")
	v.mustOK("echo 'deb [arch=amd64 signed-by=/etc/apt/keyrings/example.gpg] " + repo + " jammy stable' > /etc/apt/sources.list.d/example.list")
	wantCode(t, "before apt-get update", v.root("apt-get install -y example-ce"), 100, "", "E: Unable to locate package example-ce\n")
	wantCode(t, "update", v.root("apt-get update"), 0, "Hit:5 "+repo+" jammy InRelease\n", "")
	wantCode(t, "install", v.root("apt-get install -y example-ce"), 0, "Setting up example-ce (5:24.0.7-1~ubuntu.22.04~jammy) ...", "")
	wantCode(t, "madison", v.root("apt-cache madison example-ce"), 0, "example-ce | 5:24.0.7-1~ubuntu.22.04~jammy | "+repo+" jammy/stable amd64 Packages\n", "")

	v.mustOK("echo 'deb' > /etc/apt/sources.list.d/bad.list")
	want(t, "malformed source", v.root("apt-get update"), "", "E: Malformed entry 1 in list file /etc/apt/sources.list.d/bad.list (Suite)\nE: The list of sources could not be read.\n", 100)

	// deb822 sources work too.
	c.Add(Package{Name: "other", Version: "1.0", Repo: "https://pkgs.example.org/deb"})
	v.mustOK("rm /etc/apt/sources.list.d/bad.list && printf 'Types: deb\\nURIs: https://pkgs.example.org/deb/\\nSuites: /\\n' > /etc/apt/sources.list.d/other.sources && apt-get update")
	wantCode(t, "deb822", v.root("apt-get install -y other"), 0, "Setting up other (1.0) ...", "")
}

func TestAptPromptsDebconfAndFailures(t *testing.T) {
	c := DefaultCatalog()
	fail := true
	c.Add(Package{Name: "flaky", Version: "1.0", OnInstall: func(*Machine) error {
		if fail {
			return errors.New("postinst: cannot create /var/lib/flaky")
		}
		return nil
	}})
	c.Add(Package{Name: "badunit", Version: "1.0", Units: []Unit{{Name: "badunit.service", OnStart: func(*Machine) error { return errors.New("bad config") }}}})
	c.Add(Package{Name: "dhunit", Version: "1.0", IgnoreStartFailure: true, Units: []Unit{{Name: "dhunit.service", OnStart: func(*Machine) error { return errors.New("bad config") }}}})
	v := newVM(t, Options{Catalog: c, UpdatedLists: true})

	// Without -y apt asks, and aborts at the end of standard input.
	want(t, "no -y", v.root("apt-get install jq"), "Reading package lists...\nBuilding dependency tree...\nReading state information...\n"+
		"The following additional packages will be installed:\n  libjq1 libonig5\nThe following NEW packages will be installed:\n  jq libjq1 libonig5\n"+
		"0 upgraded, 3 newly installed, 0 to remove and 0 not upgraded.\nDo you want to continue? [Y/n] Abort.\n", "", 1)
	wantCode(t, "answer yes", v.root("apt-get install jq", "y\n"), 0, "Do you want to continue? [Y/n] Selecting previously unselected package libonig5.", "")
	wantCode(t, "nothing extra: no question", v.root("apt-get install socat"), 0, "Setting up socat", "")

	r := v.root("apt-get install -y iptables-persistent")
	wantCode(t, "debconf without a terminal", r, 0, "Setting up iptables-persistent", "debconf: unable to initialize frontend: Dialog\n")
	v.mustOK("apt-get purge -y iptables-persistent")
	want(t, "noninteractive", result{stderr: v.root("DEBIAN_FRONTEND=noninteractive apt-get install -y iptables-persistent").stderr}, "", "", 0)

	r = v.root("apt-get install -y flaky")
	wantCode(t, "failing postinst", r, 100, "Setting up flaky (1.0) ...", "dpkg: error processing package flaky (--configure):\n installed flaky package post-installation script subprocess returned error exit status 1\nErrors were encountered while processing:\n flaky\nE: Sub-process /usr/bin/dpkg returned an error code (1)\n")
	if v.Installed("flaky") {
		t.Error("a failed postinst left the package installed")
	}
	want(t, "half-configured", v.root(`dpkg-query -W -f='${Status}' flaky`), "install ok half-configured", "", 0)
	fail = false
	want(t, "retry", v.root("apt-get install -y flaky"), "Reading package lists...\nBuilding dependency tree...\nReading state information...\n"+
		"0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n1 not fully installed or removed.\nSetting up flaky (1.0) ...\n", "", 0)
	if !v.Installed("flaky") {
		t.Error("the retry did not configure the package")
	}

	r = v.root("apt-get install -y badunit")
	wantCode(t, "unit fails to start", r, 100, "", "Job for badunit.service failed because the control process exited with error code.\n")
	if st := v.Service("badunit"); !st.Failed || st.Active || v.Installed("badunit") {
		t.Errorf("after a failed start: %+v", st)
	}

	// debhelper's postinst: deb-systemd-invoke start dhunit.service || true.
	r = v.root("apt-get install -y dhunit")
	wantCode(t, "debhelper ignores a failed start", r, 0, "Setting up dhunit (1.0) ...", "Job for dhunit.service failed because the control process exited with error code.\nSee \"systemctl status dhunit.service\" and \"journalctl -xeu dhunit.service\" for details.\n")
	if st := v.Service("dhunit"); !st.Failed || st.Active || !st.Enabled || !v.Installed("dhunit") {
		t.Errorf("after a failed start under debhelper's postinst: %+v, installed %v", st, v.Installed("dhunit"))
	}
}

func TestInstallPackagesSeedsDirectly(t *testing.T) {
	var n demoCounts
	v := newVM(t, Options{Catalog: demoCatalog(&n), Packages: []string{"demo"}})
	if !v.Installed("demo") || !v.Installed("libdemo") || n.installs.Load() != 1 || v.Service("demo").Starts != 1 {
		t.Fatalf("Options.Packages: %v, %d installs, %+v", v.Packages(), n.installs.Load(), v.Service("demo"))
	}
	if err := v.InstallPackages("demo"); err != nil || n.installs.Load() != 1 {
		t.Errorf("InstallPackages of an installed package: %v, %d installs", err, n.installs.Load())
	}
	if err := v.InstallPackages("nosuch"); err == nil {
		t.Error("InstallPackages of an unknown package succeeded")
	}
	if !slicesContains(v.Packages(), "systemd") || !slicesContains(v.Packages(), "e2fsprogs") {
		t.Errorf("base set missing: %v", v.Packages())
	}
}

func slicesContains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0},
		{"1.0", "1.1", -1},
		{"1.10", "1.9", 1},
		{"1.0~rc1", "1.0", -1},
		{"1:0.9", "2.0", 1},
		{"1.0-1", "1.0-2", -1},
		{"1.0-1ubuntu1", "1.0-1", 1},
		{"5:24.0.7-1~ubuntu.22.04~jammy", "5:24.0.6-1~ubuntu.22.04~jammy", 1},
		{"1.28.2-1.1", "1.28.10-1.1", -1},
		{"1.0a", "1.0", 1},
		{"1.0+dfsg", "1.0", 1},
	} {
		got := compareVersions(c.a, c.b)
		if (got > 0) != (c.want > 0) || (got < 0) != (c.want < 0) {
			t.Errorf("compareVersions(%q, %q) = %d, want sign %d", c.a, c.b, got, c.want)
		}
	}
}

// Two apt-get runs at once: the second finds the dpkg lock held by the
// first, as on a real machine.
func TestAptConcurrentRunsShareTheLock(t *testing.T) {
	c := DefaultCatalog()
	started, release := make(chan struct{}), make(chan struct{})
	c.Add(Package{Name: "slow", Version: "1.0", OnInstall: func(*Machine) error {
		close(started)
		<-release
		return nil
	}})
	v := newVM(t, Options{Catalog: c, UpdatedLists: true})
	done := make(chan result)
	go func() { done <- v.root("apt-get install -y slow") }()
	<-started
	r := v.root("apt-get install -y jq")
	wantCode(t, "second apt-get", r, 100, "", "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process ")
	if !strings.Contains(r.stderr, " (apt-get)\n") {
		t.Errorf("holder: %q", r.stderr)
	}
	close(release)
	if r := <-done; r.code != 0 {
		t.Fatalf("first apt-get: %v", r)
	}
	wantCode(t, "after the first finished", v.root("apt-get install -y jq"), 0, "Setting up jq", "")
}

func TestAptMarksNamedDependenciesManual(t *testing.T) {
	v := newVM(t, Options{UpdatedLists: true})
	wantCode(t, "install", v.root("apt-get install -y jq libjq1"), 0, "The following additional packages will be installed:\n  libonig5\nThe following NEW packages will be installed:\n  jq libjq1 libonig5\n", "")
	wantCode(t, "list", v.root("apt list --installed 2>/dev/null | grep -E '^(libjq1|libonig5)/'"), 0, "libjq1/jammy,now 1.6-2.1ubuntu3 amd64 [installed]\nlibonig5/jammy,now 6.9.7.1-2build1 amd64 [installed,automatic]\n", "")
}

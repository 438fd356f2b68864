package system_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

func install(opts system.PackagesOptions) func(ctx context.Context, h remote.Host) (lcm.Result, error) {
	return func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.InstallPackages(ctx, h, opts)
	}
}

func TestInstallPackagesConverges(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	opts := system.PackagesOptions{Packages: []string{"jq", "socat=1.7.4.1-3ubuntu4", "curl"}}
	res, cmds, err := v.step(install(opts))
	if err != nil || !res.Changed {
		t.Fatalf("fresh host: %v, %v", res, err)
	}
	// dpkg-query, apt-get update, apt-get install, apt-mark hold.
	if len(cmds) != 4 || count(cmds, "apt-get update") != 1 || count(cmds, "DEBIAN_FRONTEND=noninteractive") != 2 || count(cmds, "DPkg::Lock::Timeout=300") != 2 {
		t.Errorf("fresh host ran %d commands:\n%s", len(cmds), strings.Join(cmds, "\n"))
	}
	if !v.Installed("jq") || v.Version("socat") != "1.7.4.1-3ubuntu4" || !v.Held("socat") || v.Held("jq") || v.Held("curl") {
		t.Errorf("packages %v; socat held %v, jq held %v", v.Packages(), v.Held("socat"), v.Held("jq"))
	}
	if v.AptUpdates() != 1 {
		t.Errorf("%d apt-get updates", v.AptUpdates())
	}
	res, cmds, err = v.step(install(opts))
	if err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("converged host: %v, %v, %d commands: %q", res, err, len(cmds), cmds)
	}
	if v.AptUpdates() != 1 {
		t.Errorf("the second run ran apt-get update")
	}
}

// InstalledVersions reads what dpkg has installed in one read-only
// command; a package dpkg does not know is simply missing.
func TestInstalledVersions(t *testing.T) {
	v := newVM(t, ubuntu.Options{Packages: []string{"socat"}})
	before := len(v.srv.Transcript())
	got, err := system.InstalledVersions(v.ctx, v.h, "socat", "jq", "no-such-package")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["socat"] != v.Version("socat") || got["socat"] == "" {
		t.Errorf("InstalledVersions = %v, want socat at %s only", got, v.Version("socat"))
	}
	if n := len(v.srv.Transcript()) - before; n != 1 {
		t.Errorf("%d commands, want 1", n)
	}
}

func TestAPinnedPackageAtItsVersionIsOnlyHeld(t *testing.T) {
	v := newVM(t, ubuntu.Options{Packages: []string{"socat"}})
	res, cmds, err := v.step(install(system.PackagesOptions{Packages: []string{"socat=1.7.4.1-3ubuntu4"}}))
	if err != nil || res.Detail != "held socat" || len(cmds) != 2 || count(cmds, "apt-mark") != 1 {
		t.Errorf("%v, %v, commands %q", res, err, cmds)
	}
	if !v.Held("socat") || v.AptUpdates() != 0 {
		t.Errorf("held %v, %d apt-get updates", v.Held("socat"), v.AptUpdates())
	}
}

// unattended-upgrades holds the locks for two attempts: apt-get update,
// which does not wait for the lists lock, fails twice and is retried.
func TestInstallPackagesWaitsOutTheLock(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	v.HoldAptLocks(2)
	res, cmds, err := v.step(install(system.PackagesOptions{Packages: []string{"jq"}, LockTimeout: 30 * time.Second}))
	if err != nil || !res.Changed || !v.Installed("jq") {
		t.Fatalf("%v, %v, jq installed %v", res, err, v.Installed("jq"))
	}
	if n := count(cmds, "apt-get update"); n != 3 || count(cmds, "apt-get install") != 1 {
		t.Errorf("apt-get update ran %d times, want 2 failures and a success:\n%s", n, strings.Join(cmds, "\n"))
	}
	// Two back-offs (0.5s and 1s at least) passed before apt-get install:
	// it is given what remains of the 30s, not 30s again.
	for _, c := range cmds {
		if !strings.Contains(c, "apt-get install") {
			continue
		}
		_, after, _ := strings.Cut(c, "DPkg::Lock::Timeout=")
		secs, err := strconv.Atoi(strings.Fields(after)[0])
		if err != nil || secs > 29 || secs < 0 {
			t.Errorf("apt-get install waits up to %q seconds, want at most 29: %s", strings.Fields(after)[0], c)
		}
	}
}

// A lock that stays held: the step gives up once LockTimeout has passed,
// with apt's error.
func TestInstallPackagesGivesUpOnALockHeldTooLong(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	v.HoldAptLocks(1 << 30)
	_, cmds, err := v.step(install(system.PackagesOptions{Packages: []string{"jq"}, LockTimeout: time.Second}))
	if !system.IsLockError(err) || !strings.Contains(err.Error(), "lock was still held after 1s") || !strings.Contains(err.Error(), "unattended-upgr") {
		t.Errorf("err = %v", err)
	}
	if v.Installed("jq") || count(cmds, "apt-get update") == 0 || count(cmds, "apt-get install") != 0 {
		t.Errorf("jq installed %v under a held lock after %q", v.Installed("jq"), cmds)
	}
}

func TestInstallPackagesDoesNotRetryOtherFailures(t *testing.T) {
	c := ubuntu.DefaultCatalog()
	c.Add(ubuntu.Package{Name: "flaky", Version: "1.0", OnInstall: func(*ubuntu.Machine) error {
		return errors.New("postinst: cannot create /var/lib/flaky")
	}})
	v := newVM(t, ubuntu.Options{Catalog: c})
	_, cmds, err := v.step(install(system.PackagesOptions{Packages: []string{"flaky"}}))
	var ce *remote.CommandError
	if !errors.As(err, &ce) || system.IsLockError(err) || !strings.Contains(err.Error(), "Sub-process /usr/bin/dpkg returned an error code (1)") {
		t.Errorf("err = %v", err)
	}
	if n := count(cmds, "apt-get install"); n != 1 {
		t.Errorf("apt-get install ran %d times", n)
	}
	// The same after waiting for the dpkg lock: not retried.
	v.HoldDpkgLock(1)
	_, cmds, err = v.step(install(system.PackagesOptions{Packages: []string{"flaky"}, LockTimeout: 30 * time.Second}))
	if !errors.As(err, &ce) || system.IsLockError(err) || !strings.Contains(err.Error(), "returned an error code (1)") {
		t.Errorf("after a wait: err = %v", err)
	}
	if n := count(cmds, "apt-get install"); n != 1 {
		t.Errorf("after a wait: apt-get install ran %d times", n)
	}
	_, cmds, err = v.step(install(system.PackagesOptions{Packages: []string{"nosuch"}}))
	if err == nil || !strings.Contains(err.Error(), "Unable to locate package nosuch") || count(cmds, "apt-get install") != 1 {
		t.Errorf("unknown package: %v after %q", err, cmds)
	}
}

// An apt-get that waited for the lock and then failed for another reason
// failed for that reason: its "Waiting for cache lock: Could not get lock"
// progress line is no lock error.
func TestALockWaitIsNoLockError(t *testing.T) {
	c := ubuntu.DefaultCatalog()
	c.Add(ubuntu.Package{Name: "flaky", Version: "1.0", OnInstall: func(*ubuntu.Machine) error {
		return errors.New("postinst: cannot create /var/lib/flaky")
	}})
	v := newVM(t, ubuntu.Options{Catalog: c, UpdatedLists: true})
	v.HoldDpkgLock(1)
	_, err := v.h.Run(v.ctx, remote.Cmd{Args: []string{"apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=30", "flaky"}, Sudo: true})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || system.IsLockError(err) || !strings.Contains(ce.Stderr, "returned an error code (1)") {
		t.Errorf("waited, then failed: %v", err)
	}
	for _, tt := range []struct {
		stderr string
		lock   bool
	}{
		{"Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 2425 (unattended-upgr)...\nE: Sub-process /usr/bin/dpkg returned an error code (1)\n", false},
		{"E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 2425 (unattended-upgr)\nN: Be aware that removing the lock file is not a solution and may break your system.\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?\n", true},
		{"dpkg: error: dpkg frontend lock was locked by another process with pid 2425\nE: Executing dpkg failed. Are you root?\n", true},
		{"E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), are you root?\n", false},
	} {
		if got := system.IsLockError(&remote.CommandError{ExitCode: 100, Stderr: tt.stderr}); got != tt.lock {
			t.Errorf("IsLockError(%q) = %v", tt.stderr, got)
		}
	}
}

func TestInstallPackagesRefusesBadInputBeforeRunning(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	for _, tt := range []struct {
		pkgs []string
		want string
	}{
		{[]string{"jq", "-oAPT::X=1"}, `Packages[1]: "-oAPT::X" is not a Debian package name`},
		{[]string{"Docker"}, `Packages[0]: "Docker" is not a Debian package name`},
		{[]string{"jq=1.6;rm"}, `Packages[0]: version "1.6;rm"`},
		{[]string{"jq="}, `Packages[0]: "jq=": the version after '=' is empty`},
		{[]string{"jq=a:1"}, `the epoch before ':' must be an unsigned integer`},
		{[]string{"jq", "jq=1.6-2"}, "Packages[1]: package jq is listed twice"},
		{nil, "Packages: no package to install"},
	} {
		_, cmds, err := v.step(install(system.PackagesOptions{Packages: tt.pkgs}))
		paramsError(t, err, tt.want)
		if len(cmds) != 0 {
			t.Errorf("%q: %d commands ran", tt.pkgs, len(cmds))
		}
	}
	// Versions Debian policy allows.
	for _, ok := range []string{"1:8.9p1-3ubuntu0.6", "2.35-0ubuntu3.6", "1.0~rc1+dfsg", "20230311ubuntu0.22.04.1", "1.26.3-1.1"} {
		if _, _, err := v.step(install(system.PackagesOptions{Packages: []string{"jq=" + ok}})); errors.As(err, new(*lcm.ParamsError)) {
			t.Errorf("version %s refused: %v", ok, err)
		}
	}
}

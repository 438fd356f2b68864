package system_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// IsLockError judged against the real apt-get of this machine, in an apt
// root of its own (-o Dir=...) whose dpkg frontend lock the test holds
// with an fcntl lock, as dpkg and apt take it (lib/dpkg/lock.c,
// apt-pkg/contrib/fileutl.cc GetLock). Skipped without apt-get or root.
func TestIsLockErrorOnTheRealAptGet(t *testing.T) {
	aptGet, err := exec.LookPath("apt-get")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs apt-get and root")
	}
	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "etc/apt/sources.list.d", "etc/apt/preferences.d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status := filepath.Join(root, "var/lib/dpkg/status")
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// install runs apt-get install on a package that does not exist and
	// returns its failure as the remote package would see it.
	install := func(lockTimeout string) (*remote.CommandError, string) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(aptGet, "-o", "Dir="+root, "-o", "Dir::State::status="+status,
			"-o", "DPkg::Lock::Timeout="+lockTimeout, "install", "-y", "mgmtkit-no-such-package")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("apt-get: %v, want it to fail\n%s%s", err, &stdout, &stderr)
		}
		return &remote.CommandError{Host: "local", Command: "apt-get install", ExitCode: ee.ExitCode(), Stderr: stderr.String()}, stdout.String()
	}

	lock, err := os.OpenFile(filepath.Join(root, "var/lib/dpkg/lock-frontend"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.FcntlFlock(lock.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK}); err != nil {
		t.Fatal(err)
	}
	// At once, and after waiting a second for the lock: both are lock
	// failures, and the progress apt prints while it waits is on
	// standard output, which IsLockError does not read.
	for _, timeout := range []string{"0", "1"} {
		ce, stdout := install(timeout)
		if ce.ExitCode != 100 || !system.IsLockError(ce) {
			t.Errorf("lock held, timeout %s: exit %d, IsLockError false; stderr:\n%s", timeout, ce.ExitCode, ce.Stderr)
		}
		if timeout != "0" && !strings.Contains(stdout, "Waiting for cache lock") {
			t.Errorf("no waiting progress on standard output: %q", stdout)
		}
		if system.IsLockError(&remote.CommandError{ExitCode: 100, Stderr: stdout}) {
			t.Error("the waiting progress alone counts as a lock failure")
		}
	}

	// The lock released, the failure is the missing package: not a lock
	// failure, not retried.
	if err := syscall.FcntlFlock(lock.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_UNLCK}); err != nil {
		t.Fatal(err)
	}
	if ce, _ := install("0"); ce.ExitCode != 100 || system.IsLockError(ce) || !strings.Contains(ce.Stderr, "Unable to locate package") {
		t.Errorf("lock free: exit %d, IsLockError %v; stderr:\n%s", ce.ExitCode, system.IsLockError(ce), ce.Stderr)
	}
}

package realtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// nsEnv marks the test binary re-executed inside its private mount
// namespace; its value is the directory holding the overlays' upper and
// work directories.
const nsEnv = "MGMTKIT_REALTEST_NS"

// overlaid are the directories the suite makes private: everything the
// daemons, sshd, sudo, useradd and mgmtkit write outside the temporary
// directory lands in one of them.
var overlaid = []string{"/etc", "/root", "/home", "/var/lib", "/run"}

// systemctlPath is the program the stand-in is bind-mounted over.
const systemctlPath = "/usr/bin/systemctl"

// skipReason, when set, is why no test of this package can run here.
var skipReason string

// base is the directory under which the private view keeps its state.
var base string

// TestMain re-executes the test binary in a new mount namespace and, in
// there, overlays the directories of [overlaid] so that nothing a test
// starts can change the machine's own files.
func TestMain(m *testing.M) {
	dir := os.Getenv(nsEnv)
	if dir == "" {
		os.Exit(outside(m))
	}
	base = dir
	if err := privateView(dir); err != nil {
		skipReason = fmt.Sprintf("cannot make a private view of the machine: %v", err)
	} else if err := serveSystemctl(filepath.Join(dir, "systemctl.fifo")); err != nil {
		skipReason = fmt.Sprintf("cannot serve the systemctl stand-in: %v", err)
	}
	os.Exit(m.Run())
}

// outside runs the tests in a private mount namespace and returns their
// exit code, or runs them skipping when that cannot be done.
func outside(m *testing.M) int {
	if os.Geteuid() != 0 {
		skipReason = "needs root, to make a mount namespace and run containerd, sshd and the registries; run ./test.sh as root (CI does)"
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "mgmtkit-realtest-")
	if err != nil {
		skipReason = err.Error()
		return m.Run()
	}
	defer os.RemoveAll(dir)
	// The users sshdtest creates must traverse it to reach their keys.
	if err := os.Chmod(dir, 0o711); err != nil {
		skipReason = err.Error()
		return m.Run()
	}
	self, err := os.Executable()
	if err != nil {
		skipReason = err.Error()
		return m.Run()
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), nsEnv+"="+dir, "TMPDIR="+filepath.Join(dir, "tmp"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Unshareflags runs unshare(2) in the child and, for CLONE_NEWNS, marks
	// every mount MS_REC|MS_PRIVATE, as unshare(1) does, so nothing the
	// child mounts propagates back (Go's syscall/exec_linux.go,
	// forkAndExecInChild1).
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o711); err != nil {
		skipReason = err.Error()
		return m.Run()
	}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	case errors.As(err, &exit):
		fmt.Fprintf(os.Stderr, "realtest: the tests in the private namespace ended: %v\n", err)
		return 1
	}
	skipReason = fmt.Sprintf("cannot make a mount namespace: %v", err)
	return m.Run()
}

// privateView mounts an overlay over each directory of [overlaid], with
// its upper and work directories under dir, and the systemctl stand-in
// over systemctl.
func privateView(dir string) error {
	for _, d := range overlaid {
		name := filepath.Base(d)
		upper := filepath.Join(dir, "overlay", name, "upper")
		work := filepath.Join(dir, "overlay", name, "work")
		for _, p := range []string{upper, work} {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		}
		opts := "lowerdir=" + d + ",upperdir=" + upper + ",workdir=" + work
		if err := syscall.Mount("overlay", d, "overlay", 0, opts); err != nil {
			return fmt.Errorf("mount -t overlay -o %s %s: %w", opts, d, err)
		}
	}
	// Names the test does not put in /etc/hosts must not become DNS
	// queries to the machine's resolver: only loopback may be a target.
	// Nothing listens on 127.0.0.1:53, so such a lookup fails at once.
	if err := os.WriteFile("/etc/resolv.conf", []byte("# realtest: no DNS beyond loopback\nnameserver 127.0.0.1\n"), 0o644); err != nil {
		return fmt.Errorf("private /etc/resolv.conf: %w", err)
	}
	standIn := filepath.Join(dir, "systemctl")
	if err := os.WriteFile(standIn, systemctlScript(filepath.Join(dir, "systemctl.fifo")), 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(standIn, systemctlPath, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount the systemctl stand-in over %s: %w", systemctlPath, err)
	}
	return nil
}

// needPrivateView skips t when the private view could not be made.
func needPrivateView(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip("realtest: " + skipReason)
	}
}

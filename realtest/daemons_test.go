package realtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemon is a real program the test runs in the background and may
// restart, as systemd would.
type daemon struct {
	name  string
	path  string
	args  []string
	log   string
	ready func(ctx context.Context) error

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	restarts int
}

// need returns the path of a program the suite needs, or fails t saying
// how to install it.
func need(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing: run ./test.sh as root, which installs what this suite needs with apt-get (%v)", path, err)
	}
	return path
}

// start runs the daemon and waits until it is ready.
func (d *daemon) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.startLocked()
}

func (d *daemon) startLocked() error {
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(d.path, d.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	d.cmd, d.exited = cmd, exited
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := d.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited: %s", d.name, d.logTail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within 30s: %v: %s", d.name, err, d.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the daemon with SIGTERM (SIGKILL after 20s) and waits for it.
func (d *daemon) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
}

func (d *daemon) stopLocked() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
	d.cmd = nil
}

func (d *daemon) running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

func (d *daemon) restart() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	d.restarts++
	return d.startLocked()
}

// reload restarts the daemon: the default for units without ExecReload.
func (d *daemon) reload() error { return d.restart() }

// pid returns the daemon's process ID, 0 when it is stopped.
func (d *daemon) pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// logTail returns the end of the daemon's log.
func (d *daemon) logTail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// hupDaemon is a daemon that reloads its configuration on SIGHUP, as
// docker.service's ExecReload=/bin/kill -s HUP $MAINPID
// (moby/moby contrib/init/systemd/docker.service).
type hupDaemon struct{ *daemon }

func (d hupDaemon) reload() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return errors.New(d.name + " is not running")
	}
	return d.cmd.Process.Signal(syscall.SIGHUP)
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

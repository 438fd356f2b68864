package remote_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
	"github.com/mgmtkit/mgmtkit/remote"
)

// TestRealSSHDFrozen stops (SIGSTOP) the sshd processes that serve the
// host's connection, as a hung or paused server would, and checks that
// calls still return soon after their deadline and that the next command
// redials. Before the connection guard, WriteFile with a 5 s deadline was
// still blocked after 90 s, and the next command ignored its deadline.
func TestRealSSHDFrozen(t *testing.T) {
	srv := sshdtest.Start(t)
	nopw := srv.User(sshdtest.SudoNoPassword)
	// Keepalives off: only the guard may notice the freeze.
	h, lc := realHost(t, srv, nopw, func(c *remote.Config) { c.KeepAlive = -1 })
	mustRun(t, lc, h, remote.Cmd{Args: []string{"true"}, Sudo: true})

	var pids []int // of the connection to stop
	calls := []struct {
		name   string
		midway bool // the call stops the connection itself
		call   func(ctx context.Context) error
	}{
		{"WriteFile", false, func(ctx context.Context) error {
			_, err := h.WriteFile(ctx, "/etc/mgmtkit-frozen.conf", bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)), remote.FileOptions{Sudo: true})
			return err
		}},
		{"WriteFileUpload", true, func(ctx context.Context) error {
			content := &freezingReader{r: bytes.NewReader(bytes.Repeat([]byte("x"), 8<<20)), freeze: func() { stopPids(pids) }}
			_, err := h.WriteFile(ctx, "/etc/mgmtkit-frozen.conf", content, remote.FileOptions{Sudo: true})
			return err
		}},
		{"Run", false, func(ctx context.Context) error {
			_, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Idempotent: true})
			return err
		}},
		{"ReadFile", false, func(ctx context.Context) error {
			_, err := h.ReadFile(ctx, nopw.Home+"/.profile", remote.FileOptions{})
			return err
		}},
	}
	for i, c := range calls {
		pids = connectionPids(t, srv)
		t.Cleanup(func() {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGCONT)
			}
		})
		if !c.midway {
			stopPids(pids)
		}
		const deadline = 2 * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- c.call(ctx) }()
		select {
		case err := <-done:
			late := time.Since(start) - deadline
			t.Logf("%s on a frozen connection returned %v after its deadline: %v", c.name, late.Round(time.Millisecond), err)
			if !errors.Is(lc.note(err), context.DeadlineExceeded) {
				t.Errorf("%s on a frozen connection: %v, want context.DeadlineExceeded", c.name, err)
			}
		case <-time.After(deadline + frozenBound):
			t.Errorf("%s on a frozen connection still blocked %v after its deadline", c.name, frozenBound)
		}
		cancel()
		// The frozen connection was discarded: the next command redials
		// (the listening sshd still answers) and works.
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		out, err := h.Run(ctx, remote.Command("echo", strconv.Itoa(i)))
		cancel()
		if lc.note(err) != nil || out.String() != strconv.Itoa(i) {
			t.Fatalf("command after %s on a frozen connection: %q, %v", c.name, out.String(), err)
		}
	}
}

// connectionPids returns the sshd processes serving the one connection
// open to srv that is not stopped yet: the child of the listening sshd
// (the privileged monitor) and its children named sshd (the unprivileged
// process that speaks to the network).
func connectionPids(t *testing.T, srv *sshdtest.Server) []int {
	t.Helper()
	all := procs()
	var conn []int
	for _, p := range all {
		if p.ppid == srv.Pid() && p.state != "T" { // not stopped already
			conn = append(conn, p.pid)
		}
	}
	if len(conn) != 1 {
		t.Fatalf("want one connection process under sshd %d, got %v", srv.Pid(), conn)
	}
	stop := conn
	for _, p := range all {
		if p.ppid == conn[0] && len(p.args) > 0 && strings.HasPrefix(p.args[0], "sshd") {
			stop = append(stop, p.pid)
		}
	}
	return stop
}

// stopPids sends SIGSTOP to every process of pids.
func stopPids(pids []int) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
}

type proc struct {
	pid, ppid int
	state     string // R, S, T (stopped)...
	args      []string
}

// procs lists the machine's processes with their parents and argv.
func procs() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out = append(out, proc{pid: pid, ppid: ppid, state: f[0], args: strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")})
	}
	return out
}

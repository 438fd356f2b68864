package remote_test

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
	"github.com/mgmtkit/mgmtkit/remote"
)

// TestRealSSHDRegressions pins defects of package remote that were found
// against a real sshd and fixed.
func TestRealSSHDRegressions(t *testing.T) {
	srv := sshdtest.Start(t)
	nopw := srv.User(sshdtest.SudoNoPassword)

	// FileOptions documents that "a new file belongs to root when Sudo is
	// set". When the destination was in the login user's home directory
	// (where Sudo writes are staged), the staged file, owned by the login
	// user, used to be renamed into place without a chown.
	t.Run("SudoWriteFileInHomeIsOwnedByRoot", func(t *testing.T) {
		h, lc := realHost(t, srv, nopw, nil)
		file := nopw.Home + "/root-owned.conf"
		if _, err := h.WriteFile(testCtx(t), file, strings.NewReader("x\n"), remote.FileOptions{Sudo: true}); lc.note(err) != nil {
			t.Fatal(err)
		}
		if got := mustRun(t, lc, h, remote.Cmd{Args: []string{"stat", "-c", "%U:%G", file}, Sudo: true}); got != "root:root" {
			t.Errorf("new file written with Sudo belongs to %s, want root:root", got)
		}
	})

	// The SFTP client is cached per connection. It used to be kept after
	// the server closed the sftp channel (the subsystem process died, or
	// sshd_config has `ChannelTimeout session:subsystem:sftp=5m` and the
	// host sat idle), so every later ReadFile and WriteFile failed.
	t.Run("SFTPChannelClosedByServer", func(t *testing.T) {
		h, lc := realHost(t, srv, nopw, nil)
		ctx := testCtx(t)
		file := nopw.Home + "/sftp-check"
		if _, err := h.WriteFile(ctx, file, bytes.NewReader([]byte("1")), remote.FileOptions{}); lc.note(err) != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command("pgrep", "-u", nopw.Name, "-f", "@internal-sftp").Output()
		pids := strings.Fields(string(out))
		if len(pids) != 1 {
			t.Fatalf("want one sftp session process of %s, got %q", nopw.Name, out)
		}
		pid, _ := strconv.Atoi(pids[0])
		syscall.Kill(pid, syscall.SIGKILL)
		waitGone(t, pid)
		if _, err := h.ReadFile(ctx, file, remote.FileOptions{}); lc.note(err) != nil {
			t.Errorf("ReadFile after the server closed the sftp channel: %v", err)
		}
		if _, err := h.WriteFile(ctx, file, bytes.NewReader([]byte("2")), remote.FileOptions{}); lc.note(err) != nil {
			t.Errorf("WriteFile after the server closed the sftp channel: %v", err)
		}
	})

	// MaxSessions caps the sessions open at once below OpenSSH's default
	// of 10, but a slot is released when the client closes its session,
	// before sshd has freed its own: with many concurrent commands sshd
	// answers "no more sessions", which Run must absorb.
	t.Run("ConcurrentRunsWithinMaxSessions", func(t *testing.T) {
		h, lc := realHost(t, srv, nopw, nil)
		var failed atomic.Int32
		var first sync.Once
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				if _, err := h.Run(testCtx(t), remote.Command("true")); lc.note(err) != nil {
					failed.Add(1)
					first.Do(func() { t.Errorf("first failure: %v", err) })
				}
			})
		}
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Errorf("%d of 200 concurrent commands failed", n)
		}
	})

	// Cancellation used to send SIGTERM only: a command that ignores it
	// (run without sudo and without a context deadline, so without the
	// `timeout -k` wrapper) kept running on the host after Run returned.
	t.Run("CancelEndsCommandIgnoringTERM", func(t *testing.T) {
		h, lc := realHost(t, srv, nopw, nil)
		secs := uniqueSleep()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := h.Run(ctx, remote.Command("bash", "-c", "trap '' TERM; sleep "+secs))
			done <- err
		}()
		waitProcess(t, "sleep "+secs, true)
		cancel()
		lc.note(<-done)
		waitProcess(t, "sleep "+secs, false)
	})
}

// waitGone polls until the process pid has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exit", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

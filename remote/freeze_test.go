package remote_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// frozenBound is how long after its deadline a call on a frozen connection
// may take to return: about a second for the keepalive check, and a
// generous margin for a loaded machine. Without the connection guard such
// calls block until the server thaws, or (a cancelled command waiting for
// its exit status) take four seconds.
const frozenBound = 3 * time.Second

// returnsSoon runs call with a context that ends after d and fails the test
// unless call returns a context.DeadlineExceeded within frozenBound of that.
func returnsSoon(t *testing.T, what string, d time.Duration, call func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		deadline, _ := ctx.Deadline()
		t.Logf("%s returned %v after its deadline", what, time.Since(deadline).Round(time.Millisecond))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a frozen connection: %v, want context.DeadlineExceeded", what, err)
		}
		if errors.Is(err, remote.ErrConnectionLost) {
			t.Errorf("%s on a frozen connection: %v also claims a lost connection", what, err)
		}
	case <-time.After(d + frozenBound):
		t.Fatalf("%s on a frozen connection still blocked %v after its deadline", what, frozenBound)
	}
}

// freezeHost dials the fake host as ops (passwordless sudo) with keepalives
// off, so that only the connection guard can notice a freeze, and runs one
// sudo command so that the connection and the sudo mode are settled.
func freezeHost(t *testing.T) (*sshtest.Server, *remote.SSHHost) {
	srv, key := fakeHost(t)
	h := dial(t, remote.Config{Addr: srv.Addr(), User: "ops", PrivateKey: remote.NewSecret(key), HostKey: srv.HostKeyPolicy(), KeepAlive: -1})
	if _, err := h.Run(testContext(t), remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	return srv, h
}

// afterFreeze checks that the frozen connection was discarded: the next
// command redials and works.
func afterFreeze(t *testing.T, srv *sshtest.Server, h *remote.SSHHost) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		out remote.Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := h.Run(ctx, remote.Command("echo", "again"))
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.out.String() != "again" {
			t.Fatalf("command after a freeze: %q, %v (the frozen connection was kept)", r.out.String(), r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("command after a freeze is blocked (the frozen connection was kept)")
	}
	if n := srv.Dials(); n != 2 {
		t.Errorf("%d connections, want 2 (the frozen one, then a redial)", n)
	}
}

// A frozen server (a SIGSTOPped sshd, a paused VM) keeps the TCP connection
// open and answers nothing. Opening a session used to block with no
// deadline, as did every SFTP request and a cancelled command's wait for
// its exit status.
func TestFrozenServer(t *testing.T) {
	t.Run("Run", func(t *testing.T) {
		srv, h := freezeHost(t)
		thaw := srv.FreezeConnections()
		t.Cleanup(thaw)
		returnsSoon(t, "Run", 300*time.Millisecond, func(ctx context.Context) error {
			_, err := h.Run(ctx, remote.Cmd{Args: []string{"true"}, Idempotent: true})
			return err
		})
		afterFreeze(t, srv, h)
	})

	// The server freezes while a command runs; its deadline passes.
	t.Run("RunningCommand", func(t *testing.T) {
		srv, h := freezeHost(t)
		srv.HangProgram("kubeadm", 1)
		f := newFreezer(t, srv)
		returnsSoon(t, "Run", 2*time.Second, func(ctx context.Context) error {
			done := make(chan error, 1)
			go func() {
				_, err := h.Run(ctx, remote.Cmd{Args: []string{"kubeadm", "join"}, Sudo: true})
				done <- err
			}()
			for len(srv.CallsTo("kubeadm")) == 0 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			f.freeze()
			return <-done
		})
		afterFreeze(t, srv, h)
	})

	// The server freezes in the middle of an upload: the content's second
	// read freezes it.
	t.Run("WriteFileUpload", func(t *testing.T) {
		srv, h := freezeHost(t)
		f := newFreezer(t, srv)
		content := &freezingReader{r: strings.NewReader(strings.Repeat("x", 4<<20)), freeze: f.freeze}
		returnsSoon(t, "WriteFile", 2*time.Second, func(ctx context.Context) error {
			_, err := h.WriteFile(ctx, "/etc/frozen.conf", content, remote.FileOptions{Sudo: true})
			return err
		})
		if !f.frozen() {
			t.Fatal("the upload did not start")
		}
		afterFreeze(t, srv, h)
	})

	t.Run("ReadFile", func(t *testing.T) {
		srv, h := freezeHost(t)
		if err := srv.FS().WriteFile("/home/ops/notes", []byte("n\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		thaw := srv.FreezeConnections()
		t.Cleanup(thaw)
		returnsSoon(t, "ReadFile", 300*time.Millisecond, func(ctx context.Context) error {
			_, err := h.ReadFile(ctx, "/home/ops/notes", remote.FileOptions{})
			return err
		})
		afterFreeze(t, srv, h)
	})
}

// freezer freezes a server's connections from any goroutine and thaws them
// when the test ends.
type freezer struct {
	srv   *sshtest.Server
	mu    sync.Mutex
	thaws []func()
}

func newFreezer(t *testing.T, srv *sshtest.Server) *freezer {
	f := &freezer{srv: srv}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, thaw := range f.thaws {
			thaw()
		}
	})
	return f
}

func (f *freezer) freeze() {
	thaw := f.srv.FreezeConnections()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.thaws = append(f.thaws, thaw)
}

func (f *freezer) frozen() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.thaws) > 0
}

// freezingReader calls freeze before its second read.
type freezingReader struct {
	r      io.Reader
	reads  int
	freeze func()
}

func (f *freezingReader) Read(p []byte) (int, error) {
	if f.reads++; f.reads == 2 {
		f.freeze()
	}
	return f.r.Read(p)
}

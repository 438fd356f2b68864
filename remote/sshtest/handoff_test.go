package sshtest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

const vmPassword = "vm-Secret-7"

// startVM starts a fake host named name with a user "ubuntu" who may
// sudo with her password.
func startVM(t *testing.T, name string) *sshtest.Server {
	t.Helper()
	return sshtest.Start(t, sshtest.Config{
		Hostname: name,
		Users: []sshtest.User{
			{Name: "ubuntu", Password: vmPassword, Sudo: sshtest.SudoPassword},
			{Name: "keyonly"},
		},
	})
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// hostname runs `hostname` on h.
func hostname(ctx context.Context, t *testing.T, h remote.Host) string {
	t.Helper()
	out, err := h.Run(ctx, remote.Command("hostname"))
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestServerDial(t *testing.T) {
	srv := startVM(t, "vm-1")
	ctx := testContext(t)

	cfg := srv.RemoteConfig("ubuntu")
	if cfg.Addr != srv.Addr() || cfg.User != "ubuntu" || cfg.Password.Reveal() != vmPassword || cfg.HostKey == nil {
		t.Fatalf("RemoteConfig = %+v, want the server's address, the user's login and a host key policy", cfg)
	}

	h, err := srv.Dial(ctx, "ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// sudo works with the password the configuration carries.
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"id", "-un"}, Sudo: true})
	if err != nil || out.String() != "root" {
		t.Fatalf("sudo id -un = %q, %v; want root", out.String(), err)
	}
	if got := hostname(ctx, t, h); got != "vm-1" {
		t.Errorf("hostname = %q, want vm-1", got)
	}
}

func TestServerDialUnknownUser(t *testing.T) {
	srv := startVM(t, "vm-1")
	_, err := srv.Dial(testContext(t), "mallory")
	if err == nil || !strings.Contains(err.Error(), `no user "mallory" (it has keyonly, ubuntu)`) {
		t.Fatalf("Dial as an unknown user: %v, want an error naming the users", err)
	}
	defer func() {
		if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), `no user "mallory"`) {
			t.Errorf("RemoteConfig of an unknown user: recovered %v, want a panic naming the user", v)
		}
	}()
	srv.RemoteConfig("mallory")
}

func TestServerHostKeyPolicy(t *testing.T) {
	srv, other := startVM(t, "vm-1"), startVM(t, "vm-2")
	ctx := testContext(t)

	// The policy of another server rejects this one, at once.
	cfg := srv.RemoteConfig("ubuntu")
	cfg.HostKey = other.HostKeyPolicy()
	before := srv.Dials()
	_, err := remote.Dial(ctx, cfg)
	var hke *remote.HostKeyError
	if !errors.As(err, &hke) {
		t.Fatalf("Dial with another server's policy: %v, want a *remote.HostKeyError", err)
	}
	if n := srv.Dials() - before; n != 1 {
		t.Errorf("dialed %d times, want 1: a rejected host key is not retried", n)
	}
	// A user with keys only gets a configuration without a password,
	// which remote refuses for want of credentials until the test adds
	// a key.
	if _, err := remote.NewSSHHost(srv.RemoteConfig("keyonly")); err == nil || !strings.Contains(err.Error(), "no credentials") {
		t.Errorf("NewSSHHost for a key-only user without a key: %v, want no credentials", err)
	}
}

func TestRouter(t *testing.T) {
	a, b := startVM(t, "vm-a"), startVM(t, "vm-b")
	ctx := testContext(t)
	r := sshtest.NewRouter()
	r.Add("10.0.0.5", a)
	r.Add("10.0.0.6:2222", b)
	login := remote.Config{User: "ubuntu", Password: remote.NewSecret(vmPassword)}

	dial := func(addr string) (remote.Host, error) {
		cfg := login
		cfg.Addr = addr
		return r.DialHost(ctx, cfg)
	}
	for addr, want := range map[string]string{"10.0.0.5": "vm-a", "10.0.0.5:22": "vm-a", "10.0.0.6:2222": "vm-b"} {
		h, err := dial(addr)
		if err != nil {
			t.Fatalf("DialHost %s: %v", addr, err)
		}
		if got := hostname(ctx, t, h); got != want {
			t.Errorf("%s answered as %q, want %q", addr, got, want)
		}
		h.Close()
	}

	// An address without a route is refused as by a real network.
	_, err := r.Dial(ctx, "tcp", "10.0.0.7:22")
	if !errors.Is(err, syscall.ECONNREFUSED) || err.Error() != "dial tcp 10.0.0.7:22: connect: connection refused" {
		t.Errorf("Dial without a route: %v, want connection refused", err)
	}
	// remote retries a refused dial until its context ends, as for a VM
	// still booting.
	shortCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	cfg := login
	cfg.Addr = "10.0.0.6" // port 22: only 2222 is routed
	h, err := r.DialHost(shortCtx, cfg)
	if !remote.IsUnreachable(err) || h != nil {
		t.Errorf("DialHost of an unrouted port: %v, %v; want unreachable and no host", h, err)
	}

	// A heal: the address now leads to another server, whose key the
	// router's policy accepts there; a removed address is refused.
	r.Add("10.0.0.5", b)
	h, err = dial("10.0.0.5")
	if err != nil {
		t.Fatal(err)
	}
	if got := hostname(ctx, t, h); got != "vm-b" {
		t.Errorf("after the reroute 10.0.0.5 answered as %q, want vm-b", got)
	}
	h.Close()
	r.Remove("10.0.0.5")
	if _, err := r.Dial(ctx, "tcp", "10.0.0.5:22"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial of a removed route: %v, want connection refused", err)
	}
}

func TestRouterHostKeyPolicy(t *testing.T) {
	a, b := startVM(t, "vm-a"), startVM(t, "vm-b")
	ctx := testContext(t)
	r := sshtest.NewRouter()
	r.Add("10.0.0.5", a)

	// A dialer that reaches b where the router says a: the router's
	// policy rejects b's key for that address.
	cfg := remote.Config{
		Addr: "10.0.0.5", User: "ubuntu", Password: remote.NewSecret(vmPassword),
		HostKey: r.HostKeyPolicy(),
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", b.Addr())
		},
	}
	_, err := remote.Dial(ctx, cfg)
	var hke *remote.HostKeyError
	if !errors.As(err, &hke) || !strings.Contains(hke.Reason, "the key of the server routed at 10.0.0.5:22") {
		t.Fatalf("Dial reaching the wrong server: %v, want a HostKeyError naming the route", err)
	}
	// An address without a route has no key to accept.
	cfg.Addr = "10.0.0.9"
	_, err = remote.Dial(ctx, cfg)
	if !errors.As(err, &hke) || !strings.Contains(hke.Reason, "no server is routed at 10.0.0.9:22") {
		t.Fatalf("Dial of an unrouted address through another dialer: %v, want a HostKeyError", err)
	}
	// A policy the test set itself is kept by DialHost.
	cfg.Addr, cfg.HostKey, cfg.Dial = "10.0.0.5", b.HostKeyPolicy(), nil
	if _, err := r.DialHost(ctx, cfg); !errors.As(err, &hke) {
		t.Fatalf("DialHost with the test's own policy: %v, want that policy to reject a's key", err)
	}
}

// Routes change while hosts are dialed and used (run with -race).
func TestRouterConcurrent(t *testing.T) {
	vms := []*sshtest.Server{startVM(t, "vm-0"), startVM(t, "vm-1"), startVM(t, "vm-2")}
	ctx := testContext(t)
	r := sshtest.NewRouter()
	for i, vm := range vms {
		r.Add(fmt.Sprintf("10.0.1.%d", i), vm)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(vms))
	for i := range vms {
		wg.Go(func() {
			h, err := r.DialHost(ctx, remote.Config{Addr: fmt.Sprintf("10.0.1.%d", i), User: "ubuntu", Password: remote.NewSecret(vmPassword)})
			if err != nil {
				errs <- err
				return
			}
			defer h.Close()
			out, err := h.Run(ctx, remote.Command("hostname"))
			if err != nil || out.String() != fmt.Sprintf("vm-%d", i) {
				errs <- fmt.Errorf("10.0.1.%d: hostname %q, %v", i, out.String(), err)
			}
		})
		wg.Go(func() { r.Add(fmt.Sprintf("10.0.2.%d", i), vms[i]) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

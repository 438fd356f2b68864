package sshtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/remote"
)

// Router is a test network for fake hosts: it maps the addresses the code
// under test dials (the VIM's "10.0.0.5", which nothing listens on) to the
// servers that answer there, which listen on loopback. Hand [Router.Dial]
// to [remote.Config.Dial] and [Router.HostKeyPolicy] to
// [remote.Config.HostKey], or [Router.DialHost] to plumbing.Config.Dial,
// and a driver reaches each VM at the address Heat reports for it.
//
// A Router is safe for concurrent use; routes may change while hosts are
// being dialed, as when a test heals a VM.
type Router struct {
	mu     sync.Mutex
	routes map[string]*Server // by "host:port"
}

// NewRouter returns a router without routes.
func NewRouter() *Router { return &Router{routes: map[string]*Server{}} }

// routeKey is addr as a route's key: "host:port", with port 22 when addr
// has none, as [remote.Config.Addr] defaults it.
func routeKey(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), "22")
}

// Add routes addr to s: a dial of addr reaches s from now on, in place of
// any server routed there before. addr is a host ("10.0.0.5", port 22
// implied) or "host:port".
func (r *Router) Add(addr string, s *Server) {
	if s == nil {
		panic("sshtest: Router.Add with a nil server")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routes[routeKey(addr)] = s
}

// Remove drops the route of addr (given as to [Router.Add]): a dial of
// addr is refused from now on, as the address of a deleted VM is.
func (r *Router) Remove(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.routes, routeKey(addr))
}

// server returns the server routed at addr, or nil.
func (r *Router) server(addr string) *Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.routes[routeKey(addr)]
}

// Dial connects to the server routed at addr; it has the signature of
// [remote.Config.Dial]. addr is the bare "host:port" address the SDK
// dials ([remote.Config.Addr], with port 22 added when it has none),
// never a URL such as "ssh://10.0.0.5". An address without a route is
// refused with the error a real dial gets from a host where nothing
// listens ("dial tcp 10.0.0.5:22: connect: connection refused", for which
// errors.Is(err, syscall.ECONNREFUSED) holds), which remote retries until
// its wait ends, as for a VM still booting.
func (r *Router) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s := r.server(addr)
	if s == nil {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: routedAddr{network, addr}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.Addr())
}

// routedAddr is an address as the code under test dialed it, for errors.
type routedAddr struct{ network, addr string }

func (a routedAddr) Network() string { return a.network }
func (a routedAddr) String() string  { return a.addr }

// HostKeyPolicy returns a policy that accepts, for each address, the host
// key of the server routed there at the time of the handshake, and
// rejects the key of any other server and any address without a route:
// what a known_hosts file kept up to date with the routes would do.
func (r *Router) HostKeyPolicy() remote.HostKeyPolicy {
	return remote.HostKeyCallback(func(hostport string, _ net.Addr, key ssh.PublicKey) error {
		s := r.server(hostport)
		if s == nil {
			return fmt.Errorf("no server is routed at %s", hostport)
		}
		want := ssh.FingerprintSHA256(s.HostKey())
		if ssh.FingerprintSHA256(key) != want {
			return fmt.Errorf("expected %s, the key of the server routed at %s", want, hostport)
		}
		return nil
	})
}

// DialHost connects with cfg through the router, as [remote.Dial] does,
// and has the signature of plumbing.Config.Dial: a driver under test then
// reaches each node at the address Heat reports for it. cfg.Dial is set
// to [Router.Dial], and cfg.HostKey to [Router.HostKeyPolicy] when it is
// nil; the rest of cfg (user, password, timeouts) is used as it is.
func (r *Router) DialHost(ctx context.Context, cfg remote.Config) (remote.Host, error) {
	cfg.Dial = r.Dial
	if cfg.HostKey == nil {
		cfg.HostKey = r.HostKeyPolicy()
	}
	h, err := remote.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Package plumbing is how a management driver reaches the VIM and the VMs
// of a VNF during one hook, and runs the hook: the Heat client and
// top-level stack, the SSH settings the VMs share, the login of each node
// role, the hook runner, and the extensions other packages bring to a
// cluster's hooks.
//
// A driver keeps a [Config] (set once, when the VNFM registers it) and
// writes each hook as a function of a [Runner] that [Config.Run] hands
// it, with the logins its typed parameters carry ([Credentials], or the
// [VMs] of its roles). The runner's session connects to Heat once,
// resolves nodes, and hands steps a [remote.Host] per node: each node is
// dialed at most once per hook, however many steps run on it and however
// many of them ask at the same time, and every connection is closed when
// the hook ends. Each step the runner runs ([Runner.OnNodes],
// [Runner.Each], [Runner.Once]) fans out over at most [Config.Limit]
// nodes at once and is recorded in the hook's [lcm.HookResult], which
// the VNFM gets back also when the hook fails half-way:
//
//	return d.Plumbing.Run(ctx, lcm.InstantiateEnd, op.Instance, creds, func(ctx context.Context, r *plumbing.Runner) error {
//		nodes, err := r.Session().Nodes(ctx, masters)
//		if err != nil {
//			return err
//		}
//		return r.OnNodes(ctx, "my-step", nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
//			return MyStep(ctx, h, opts)
//		})
//	})
//
// A Kubernetes cluster's hooks (package kubeadm's, and kubespray's)
// take [Extension]s: another package's work at named moments of the
// hooks (before and after each join, once the cluster is built, before
// nodes leave, at the heal of the extension's own VMs), with the Heat
// groups and logins of VMs of its own, which the hooks resolve, connect
// to and heal with the cluster's. Registry trust is one; the NFS client
// and storage server are the next.
//
// Steps only ever see the [remote.Host] interface, so a driver is tested
// with a fake host by setting [Config.Dial].
//
// A hook run under [remote.WithDryRun] (lcm.Plan does that) is a plan:
// the session hands out hosts that withhold every change (a host of
// Config.Dial's own is wrapped in [remote.GuardDryRun]), and lcm records
// each step the withheld change stopped as one that would change its
// node; see lcm.Plan. Hooks need not know.
//
// plumbing sits on the floor below the domain packages (registry,
// kubeadm, nfs, kubespray, lb) and imports only kubeapi (an extension's
// cluster-wide moments get the Kubernetes API), heat, lcm and remote.
package plumbing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// DefaultHandshakes bounds the SSH connection attempts in flight at once
// (connect, handshake, authentication) in one session, over all its nodes,
// unless [Config.SSH]'s settings carry their own
// [remote.Config.Handshakes] (set one there to share it across sessions,
// hooks or VNFs). Eight keeps a hook below OpenSSH's MaxStartups (10
// unauthenticated connections, beyond which sshd drops new ones) when its
// nodes are reached through one sshd, a bastion dialed per node, with room
// for other clients; nodes that are distinct machines never notice it: a
// connection stops counting once authenticated, long before its node's
// first command ends (see [remote.HandshakeLimit]).
const DefaultHandshakes = 8

// Config is how a driver reaches the VIM and the VMs; every field has a
// default except SSH. A Config is a value the driver keeps for its
// lifetime; it holds no connection.
type Config struct {
	// SSH returns the SSH settings shared by the VNF's VMs (host-key
	// policy, dialer, timeouts, logger, handshake limit: a session of
	// [DefaultHandshakes] when none). [Config.Open] calls it once per
	// hook, so a known_hosts file updated after a heal is read again.
	// Required.
	SSH func(ctx context.Context) (remote.Config, error)
	// Heat connects to the VNF's VIM; [heat.ConnectInstance] by default.
	Heat func(ctx context.Context, inst *lcm.VnfInstance) (*heat.Client, error)
	// Stack returns the name or ID of the VNF's top-level stack;
	// [heat.StackName] by default.
	Stack func(inst *lcm.VnfInstance) string
	// Dial connects to one node with cfg, which is SSH's settings with
	// the node's address, name (its Heat resource) and login filled in
	// (see [remote.Config.For]); [remote.Dial] by default. Tests set it
	// to hand out fake hosts.
	Dial func(ctx context.Context, cfg remote.Config) (remote.Host, error)
	// Limit bounds how many nodes a step of a [Runner] works on at once;
	// [lcm.DefaultLimit] when 0. A step may ask for less (masters join
	// one at a time whatever it is).
	Limit int
}

// Login is the account a driver logs in to a node with, as the VNF's
// additionalParams give it (username and password of master_node,
// worker_node, ssh_username and ssh_password, ...).
type Login struct {
	// Username is the login user.
	Username string
	// Password is the login password, also used for sudo; empty when
	// SSH's settings carry a key instead.
	Password remote.Secret
}

// Credentials are the logins of a VNF's nodes by role. A driver fills
// them from its typed parameters at the start of a hook.
type Credentials map[lcm.Role]Login

// Open starts the session of one hook for the VNF instance inst: it reads
// the SSH settings and connects to Heat, once each. Close the session
// when the hook ends.
func (c Config) Open(ctx context.Context, inst *lcm.VnfInstance, creds Credentials) (*Session, error) {
	if c.SSH == nil {
		return nil, errors.New("plumbing: Config.SSH is not set: it says how to verify host keys")
	}
	base, err := c.SSH(ctx)
	if err != nil {
		return nil, fmt.Errorf("plumbing: SSH settings: %w", err)
	}
	if base.Handshakes == nil {
		base.Handshakes = remote.NewHandshakeLimit(DefaultHandshakes)
	}
	connect := c.Heat
	if connect == nil {
		connect = func(ctx context.Context, inst *lcm.VnfInstance) (*heat.Client, error) {
			return heat.ConnectInstance(ctx, inst, nil)
		}
	}
	hc, err := connect(ctx, inst)
	if err != nil {
		return nil, err
	}
	stack := heat.StackName
	if c.Stack != nil {
		stack = c.Stack
	}
	dial := c.Dial
	if dial == nil {
		dial = dialSSH
	}
	return &Session{
		heat: hc, stack: stack(inst), base: base, creds: creds, dial: dial,
		hosts: map[nodeKey]remote.Host{},
	}, nil
}

// dialSSH is remote.Dial returning the Host interface, with no typed nil
// inside it on failure.
func dialSSH(ctx context.Context, cfg remote.Config) (remote.Host, error) {
	h, err := remote.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Session is one hook's access to the VIM and the VMs: a Heat client, the
// stack, and one connection per node, opened on first use and kept until
// Close. It is safe for concurrent use.
type Session struct {
	heat  *heat.Client
	stack string
	base  remote.Config
	creds Credentials
	dial  func(ctx context.Context, cfg remote.Config) (remote.Host, error)

	flight singleflight.Group
	mu     sync.Mutex
	hosts  map[nodeKey]remote.Host
	order  []nodeKey // dial order, for Close
	closed bool
}

// nodeKey identifies a connection: a node (its resource is unique within
// a VNF) at an address as a user.
type nodeKey struct {
	resource, addr, user string
}

// key is k as a singleflight key.
func (k nodeKey) key() string { return k.resource + "\x00" + k.addr + "\x00" + k.user }

// Heat returns the Heat client of the VNF's VIM.
func (s *Session) Heat() *heat.Client { return s.heat }

// Stack returns the name or ID of the VNF's top-level stack.
func (s *Session) Stack() string { return s.stack }

// Nodes returns the nodes of groups in the VNF's stack: [heat.Client.Nodes]
// on the session's client and stack.
func (s *Session) Nodes(ctx context.Context, groups ...heat.Group) ([]lcm.Node, error) {
	return s.heat.Nodes(ctx, s.stack, groups...)
}

// DialError is the error of a node the session could not connect to.
type DialError struct {
	// Node is the node's Heat resource name.
	Node string
	// Err is why.
	Err error
}

// Error names the node and says why.
func (e *DialError) Error() string {
	return fmt.Sprintf("plumbing: connect to node %s: %v", e.Node, e.Err)
}

// Unwrap returns the cause.
func (e *DialError) Unwrap() error { return e.Err }

// ErrClosed is returned by Host after Close.
var ErrClosed = errors.New("plumbing: session closed")

// Host returns the host of node n, logged in with the login of n's role.
// The first call for a node dials it; later calls, in any goroutine, get
// the same connection, and concurrent first calls share one dial. A
// failed dial is not remembered: the next call dials again. The error of
// a failed dial is a [*DialError]. A shared dial runs with the context of
// the call that started it; a caller whose own context ends stops waiting
// for it, and one whose context is still live when a shared dial ends
// with its starter's context dials again. Do not close the host: the
// session does.
func (s *Session) Host(ctx context.Context, n lcm.Node) (remote.Host, error) {
	login, ok := s.creds[n.Role]
	if !ok {
		return nil, &DialError{Node: n.Resource, Err: fmt.Errorf("no login for role %q", n.Role)}
	}
	k := nodeKey{resource: n.Resource, addr: n.SSHAddress, user: login.Username}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	h, ok := s.hosts[k]
	s.mu.Unlock()
	if ok {
		return h, nil
	}
	ch := s.flight.DoChan(k.key(), func() (any, error) {
		s.mu.Lock()
		h, ok := s.hosts[k] // a flight that ended just before this one began
		s.mu.Unlock()
		if ok {
			return h, nil
		}
		h, err := s.dial(ctx, s.base.For(n.SSHAddress, n.Resource, login.Username, login.Password))
		if err != nil {
			return nil, &DialError{Node: n.Resource, Err: err}
		}
		if remote.IsDryRun(ctx) {
			// A host of Config.Dial's making honours a plan too.
			h = remote.GuardDryRun(h)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return nil, errors.Join(ErrClosed, h.Close())
		}
		s.hosts[k] = h
		s.order = append(s.order, k)
		return h, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			if r.Shared && ctx.Err() == nil && isContextError(r.Err) {
				// The dial ran with another caller's context, which
				// ended; this caller's has not: dial again with it.
				return s.Host(ctx, n)
			}
			return nil, r.Err
		}
		return r.Val.(remote.Host), nil
	case <-ctx.Done():
		return nil, &DialError{Node: n.Resource, Err: context.Cause(ctx)}
	}
}

// isContextError reports whether err is a context's end.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// OnNodes runs fn on every node with its host, as [lcm.OnHosts] does
// (at most lcm.DefaultLimit at once unless opts say otherwise, one result
// per node named by its resource), dialing each node through
// [Session.Host]. A node that cannot be reached fails with its
// [*DialError]; fn does not run for it.
func (s *Session) OnNodes(ctx context.Context, step string, nodes []lcm.Node, fn NodeFunc, opts ...lcm.Option) (lcm.Results, error) {
	return lcm.OnHosts(ctx, step, nodes, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		h, err := s.Host(ctx, n)
		if err != nil {
			return lcm.Unchanged, err
		}
		return fn(ctx, n, h)
	}, opts...)
}

// Close closes every connection the session opened and returns their
// errors joined. Host fails with [ErrClosed] afterwards; a dial still in
// flight closes its connection when it ends. Closing twice is harmless.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	order := slices.Clone(s.order)
	hosts := s.hosts
	s.hosts, s.order = nil, nil
	s.mu.Unlock()
	var errs []error
	for _, k := range order {
		if err := hosts[k].Close(); err != nil {
			errs = append(errs, fmt.Errorf("plumbing: close %s: %w", k.resource, err))
		}
	}
	return errors.Join(errs...)
}

package plumbing_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/heat/heattest"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// fakeHost is a remote.Host with no SSH behind it: it records the commands
// it runs and keeps files in memory.
type fakeHost struct {
	cfg    remote.Config
	mu     sync.Mutex
	cmds   []string
	files  map[string][]byte
	closed int
	// closeErr is what Close returns.
	closeErr error
}

func (h *fakeHost) Name() string { return h.cfg.Name }
func (h *fakeHost) Addr() string { return h.cfg.Addr }

func (h *fakeHost) Run(ctx context.Context, c remote.Cmd) (remote.Output, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed > 0 {
		return remote.Output{}, errors.New("fake: closed")
	}
	h.cmds = append(h.cmds, remote.Quote(c.Args...))
	return remote.Output{}, nil
}

func (h *fakeHost) WriteFile(ctx context.Context, path string, content io.Reader, opts remote.FileOptions) (bool, error) {
	b, err := io.ReadAll(content)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.files == nil {
		h.files = map[string][]byte{}
	}
	old, ok := h.files[path]
	if ok && string(old) == string(b) {
		return false, nil
	}
	h.files[path] = b
	return true, nil
}

func (h *fakeHost) ReadFile(ctx context.Context, path string, opts remote.FileOptions) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.files[path]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	}
	return b, nil
}

func (h *fakeHost) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed++
	return h.closeErr
}

func (h *fakeHost) commands() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.cmds)
}

// fakeCloud hands out fake hosts and counts the dials per node.
type fakeCloud struct {
	mu    sync.Mutex
	dials map[string]int
	hosts []*fakeHost
	// fail, when set, decides whether a dial of node fails.
	fail func(cfg remote.Config, attempt int) error
	// gate, when set, is waited for by every dial.
	gate chan struct{}
}

func (c *fakeCloud) dial(ctx context.Context, cfg remote.Config) (remote.Host, error) {
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dials == nil {
		c.dials = map[string]int{}
	}
	c.dials[cfg.Name]++
	if c.fail != nil {
		if err := c.fail(cfg, c.dials[cfg.Name]); err != nil {
			return nil, err
		}
	}
	h := &fakeHost{cfg: cfg}
	c.hosts = append(c.hosts, h)
	return h, nil
}

func (c *fakeCloud) dialsOf(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials[node]
}

func (c *fakeCloud) host(node string) *fakeHost {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		if h.cfg.Name == node {
			return h
		}
	}
	return nil
}

// newVIM builds a fake Heat with a stack "vnf-inst-1" of 2 masters and 3
// workers, and returns a Config that reaches it, with Dial set to cloud's.
func newVIM(t *testing.T, cloud *fakeCloud) plumbing.Config {
	t.Helper()
	srv := heattest.Start(t, heattest.Config{})
	top := srv.CreateStack("vnf-inst-1")
	member := func(port, prefix string, base int) func(*heattest.Stack, int) {
		return func(m *heattest.Stack, i int) {
			m.AddPort(port, fmt.Sprintf("%s%d", prefix, base+i))
			m.AddServer("server", port)
		}
	}
	top.AddGroup("master_instance", heattest.GroupSpec{MinSize: 2, MaxSize: 2, Desired: 2, Member: member("masterNode_CP1", "10.10.0.", 11)})
	top.AddGroup("worker_instance", heattest.GroupSpec{MinSize: 1, MaxSize: 5, Desired: 3, Member: member("workerNode_CP2", "10.10.0.", 21)})
	return plumbing.Config{
		SSH: func(context.Context) (remote.Config, error) {
			return remote.Config{HostKey: remote.InsecureIgnoreHostKey()}, nil
		},
		Heat: func(ctx context.Context, inst *lcm.VnfInstance) (*heat.Client, error) {
			ao := srv.AuthOptions()
			return heat.ConnectVIM(ctx, lcm.VimConnectionInfo{
				ID: "vim-1", VimType: "openstack",
				InterfaceInfo: map[string]any{"endpoint": srv.IdentityEndpoint()},
				AccessInfo:    lcm.AccessInfo{"username": ao.Username, "password": ao.Password, "project": ao.TenantName, "region": srv.Region()},
			}, nil)
		},
		Dial: cloud.dial,
	}
}

var (
	masters = heat.Group{Role: lcm.RoleMaster, AspectID: "master_instance", SSHCP: "masterNode_CP1"}
	workers = heat.Group{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP2"}
	creds   = plumbing.Credentials{
		lcm.RoleMaster: {Username: "ubuntu", Password: remote.NewSecret("master-pw")},
		lcm.RoleWorker: {Username: "worker", Password: remote.NewSecret("worker-pw")},
	}
)

// testDriver is a driver whose instantiate_end runs three steps on every
// node and one more on the first master, all through one session.
type testDriver struct {
	lcm.NopDriver
	plumbing.Config
}

func (d *testDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	s, err := d.Open(ctx, op.Instance, creds)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	nodes, err := s.Nodes(ctx, masters, workers)
	if err != nil {
		return nil, err
	}
	res := &lcm.HookResult{Hook: lcm.InstantiateEnd}
	for _, step := range []string{"one", "two", "three"} {
		rs, err := s.OnNodes(ctx, step, nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			_, err := h.Run(ctx, remote.Command("step-"+step, n.Resource))
			return lcm.Unchanged, err
		})
		res.Add(step, rs)
		if err != nil {
			return res, err
		}
	}
	h, err := s.Host(ctx, nodes[0])
	if err != nil {
		return res, err
	}
	_, err = h.Run(ctx, remote.Command("on-first-master"))
	return res, err
}

func TestHookDialsEachNodeOnce(t *testing.T) {
	cloud := &fakeCloud{}
	d := &testDriver{Config: newVIM(t, cloud)}
	inst := &lcm.VnfInstance{ID: "inst-1"}
	for run := range 2 {
		res, err := lcm.Invoke(t.Context(), d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: inst})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Steps) != 3 {
			t.Fatalf("steps = %d, want 3", len(res.Steps))
		}
		for _, step := range res.Steps {
			if len(step.Hosts) != 5 {
				t.Fatalf("step %s ran on %d nodes, want 5", step.Step, len(step.Hosts))
			}
		}
		cloud.mu.Lock()
		dials := len(cloud.dials)
		total := 0
		for node, n := range cloud.dials {
			total += n
			if n != run+1 {
				t.Errorf("after hook %d: node %s dialed %d times, want %d (once per hook)", run+1, node, n, run+1)
			}
		}
		cloud.mu.Unlock()
		if dials != 5 || total != 5*(run+1) {
			t.Errorf("after hook %d: %d nodes dialed %d times, want 5 nodes, %d dials", run+1, dials, total, 5*(run+1))
		}
	}
	// Every connection of both hooks was closed exactly once, and each ran
	// its steps in order on the node it was dialed for.
	if len(cloud.hosts) != 10 {
		t.Fatalf("hosts dialed = %d, want 10", len(cloud.hosts))
	}
	firstMaster := 0
	for _, h := range cloud.hosts {
		if h.closed != 1 {
			t.Errorf("%s closed %d times, want 1", h.Name(), h.closed)
		}
		want := []string{"step-one " + h.Name(), "step-two " + h.Name(), "step-three " + h.Name()}
		got := h.commands()
		if len(got) == 4 && got[3] == "on-first-master" && h.cfg.User == creds[lcm.RoleMaster].Username {
			firstMaster++
			got = got[:3]
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s ran %q, want %q", h.Name(), got, want)
		}
	}
	if firstMaster != 2 {
		t.Errorf("the last step ran on %d masters' existing connections, want one per hook", firstMaster)
	}
}

func TestHostLoginAndAddressPerRole(t *testing.T) {
	cloud := &fakeCloud{}
	cfg := newVIM(t, cloud)
	s, err := cfg.Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Stack() != "vnf-inst-1" {
		t.Errorf("Stack = %q, want heat.StackName's vnf-inst-1", s.Stack())
	}
	nodes, err := s.Nodes(t.Context(), masters, workers)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		h, err := s.Host(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		f := cloud.host(n.Resource)
		if h != remote.Host(f) {
			t.Fatalf("Host(%s) is not the host dialed for it", n.Resource)
		}
		login := creds[n.Role]
		if f.cfg.Addr != n.SSHAddress || f.cfg.User != login.Username || f.cfg.Password.Reveal() != login.Password.Reveal() {
			t.Errorf("%s dialed as %s@%s, want %s@%s with its role's password", n.Resource, f.cfg.User, f.cfg.Addr, login.Username, n.SSHAddress)
		}
		if f.cfg.HostKey == nil {
			t.Errorf("%s: the SSH settings' host-key policy was lost", n.Resource)
		}
		if f.cfg.Handshakes == nil || f.cfg.Handshakes != cloud.host(nodes[0].Resource).cfg.Handshakes {
			t.Errorf("%s: handshake limit %p, want the session's one limit", n.Resource, f.cfg.Handshakes)
		}
	}
	// The SSH settings' own limit is kept, so that a driver can share one
	// across sessions.
	shared := remote.NewHandshakeLimit(3)
	cfg.SSH = func(context.Context) (remote.Config, error) {
		return remote.Config{HostKey: remote.InsecureIgnoreHostKey(), Handshakes: shared}, nil
	}
	cloud2 := &fakeCloud{}
	cfg.Dial = cloud2.dial
	s2, err := cfg.Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Host(t.Context(), nodes[0]); err != nil {
		t.Fatal(err)
	}
	if got := cloud2.host(nodes[0].Resource).cfg.Handshakes; got != shared {
		t.Errorf("handshake limit %p, want the SSH settings' %p", got, shared)
	}
}

func TestConcurrentHostDialsOnce(t *testing.T) {
	cloud := &fakeCloud{gate: make(chan struct{})}
	s, err := newVIM(t, cloud).Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	node := lcm.Node{Resource: "master-0", Role: lcm.RoleMaster, SSHAddress: "10.10.0.11"}
	const callers = 16
	hosts := make([]remote.Host, callers)
	var wg sync.WaitGroup
	var started atomic.Int32
	for i := range callers {
		wg.Go(func() {
			started.Add(1)
			h, err := s.Host(t.Context(), node)
			if err != nil {
				t.Error(err)
			}
			hosts[i] = h
		})
	}
	for started.Load() < callers {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let every caller reach the dial
	close(cloud.gate)
	wg.Wait()
	if n := cloud.dialsOf("master-0"); n != 1 {
		t.Errorf("%d concurrent callers dialed %d times, want 1", callers, n)
	}
	for i, h := range hosts {
		if h != hosts[0] {
			t.Fatalf("caller %d got another host", i)
		}
	}
}

func TestDialErrorsPerNodeAndRetry(t *testing.T) {
	refused := errors.New("connection refused")
	// The second worker never answers, the second master not at first.
	cloud := &fakeCloud{fail: func(cfg remote.Config, attempt int) error {
		if cfg.Addr == "10.10.0.22" || (cfg.Addr == "10.10.0.12" && attempt == 1) {
			return refused
		}
		return nil
	}}
	s, err := newVIM(t, cloud).Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nodes, err := s.Nodes(t.Context(), masters, workers)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	var mu sync.Mutex
	rs, err := s.OnNodes(t.Context(), "step", nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		mu.Lock()
		ran[n.Resource] = true
		mu.Unlock()
		return lcm.Changed("ok"), nil
	}, lcm.WithPolicy(lcm.BestEffort))
	if !errors.Is(err, refused) {
		t.Fatalf("err = %v, want the refusal", err)
	}
	failed := rs.Failed()
	if len(failed) != 2 {
		t.Fatalf("failed = %v, want the second master and the second worker", failed)
	}
	for _, r := range failed {
		var de *plumbing.DialError
		if !errors.As(r.Err, &de) || de.Node != r.Host || !strings.Contains(r.Err.Error(), r.Host) {
			t.Errorf("%s: err = %v, want a DialError naming the node", r.Host, r.Err)
		}
		if ran[r.Host] {
			t.Errorf("%s: the step ran on a node that could not be reached", r.Host)
		}
	}
	if len(ran) != 3 {
		t.Errorf("step ran on %d nodes, want 3", len(ran))
	}
	// A failed dial is not cached: the next call dials again, and this
	// time master_instance-1 answers.
	i := slices.IndexFunc(nodes, func(n lcm.Node) bool { return n.SSHAddress == "10.10.0.12" })
	h, err := s.Host(t.Context(), nodes[i])
	if err != nil || h == nil {
		t.Fatalf("second Host(%s) = %v, %v; want a host", nodes[i].Resource, h, err)
	}
	if n := cloud.dialsOf(nodes[i].Resource); n != 2 {
		t.Errorf("%s dialed %d times, want 2", nodes[i].Resource, n)
	}
}

func TestNoLoginForRole(t *testing.T) {
	cloud := &fakeCloud{}
	s, err := newVIM(t, cloud).Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"},
		plumbing.Credentials{lcm.RoleMaster: creds[lcm.RoleMaster]})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Host(t.Context(), lcm.Node{Resource: "w-0", Role: lcm.RoleWorker, SSHAddress: "10.0.0.1"})
	var de *plumbing.DialError
	if !errors.As(err, &de) || de.Node != "w-0" || !strings.Contains(err.Error(), `no login for role "worker"`) {
		t.Fatalf("err = %v, want a DialError: no login for role", err)
	}
	if len(cloud.hosts) != 0 {
		t.Error("dialed without a login")
	}
}

func TestCloseClosesAllAndJoinsErrors(t *testing.T) {
	cloud := &fakeCloud{}
	s, err := newVIM(t, cloud).Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := s.Nodes(t.Context(), masters, workers)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if _, err := s.Host(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	errA, errB := errors.New("close A failed"), errors.New("close B failed")
	cloud.host(nodes[0].Resource).closeErr = errA
	cloud.host(nodes[3].Resource).closeErr = errB
	err = s.Close()
	if !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Fatalf("Close = %v, want both close errors", err)
	}
	if !strings.Contains(err.Error(), nodes[0].Resource) || !strings.Contains(err.Error(), nodes[3].Resource) {
		t.Errorf("Close = %v, want the nodes named", err)
	}
	for _, h := range cloud.hosts {
		if h.closed != 1 {
			t.Errorf("%s closed %d times, want 1", h.Name(), h.closed)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := s.Host(t.Context(), nodes[0]); !errors.Is(err, plumbing.ErrClosed) {
		t.Errorf("Host after Close = %v, want ErrClosed", err)
	}
	for _, h := range cloud.hosts {
		if h.closed != 1 {
			t.Errorf("%s closed %d times after a second Close, want 1", h.Name(), h.closed)
		}
	}
}

func TestDialInFlightAtCloseIsClosed(t *testing.T) {
	cloud := &fakeCloud{gate: make(chan struct{})}
	s, err := newVIM(t, cloud).Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := s.Host(t.Context(), lcm.Node{Resource: "m-0", Role: lcm.RoleMaster, SSHAddress: "10.0.0.1"})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	close(cloud.gate)
	if err := <-done; !errors.Is(err, plumbing.ErrClosed) {
		t.Fatalf("Host = %v, want ErrClosed", err)
	}
	if h := cloud.host("m-0"); h == nil || h.closed != 1 {
		t.Fatal("the connection that arrived after Close was not closed")
	}
}

func TestHostContextEnds(t *testing.T) {
	cloud := &fakeCloud{gate: make(chan struct{})} // never opens
	s, err := newVIM(t, cloud).Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = s.Host(ctx, lcm.Node{Resource: "m-0", Role: lcm.RoleMaster, SSHAddress: "10.0.0.1"})
	var de *plumbing.DialError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &de) || de.Node != "m-0" {
		t.Fatalf("err = %v, want the deadline, for node m-0", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := (plumbing.Config{}).Open(t.Context(), &lcm.VnfInstance{ID: "x"}, nil); err == nil || !strings.Contains(err.Error(), "SSH is not set") {
		t.Errorf("Open without SSH = %v", err)
	}
	sshErr := errors.New("known_hosts unreadable")
	cfg := plumbing.Config{SSH: func(context.Context) (remote.Config, error) { return remote.Config{}, sshErr }}
	if _, err := cfg.Open(t.Context(), &lcm.VnfInstance{ID: "x"}, nil); !errors.Is(err, sshErr) {
		t.Errorf("Open = %v, want the SSH error", err)
	}
	// The default Heat connection needs an OpenStack VIM in the instance.
	cfg.SSH = func(context.Context) (remote.Config, error) { return remote.Config{}, nil }
	if _, err := cfg.Open(t.Context(), &lcm.VnfInstance{ID: "x"}, nil); err == nil || !strings.Contains(err.Error(), "vimConnectionInfo") {
		t.Errorf("Open = %v, want heat.ConnectInstance's error", err)
	}
}

// A dial shared by two callers runs with the first one's context; when
// that context ends, the other caller, whose context is live, dials again
// rather than failing with someone else's cancellation.
func TestSharedDialOutlivesTheStartersContext(t *testing.T) {
	cloud := &fakeCloud{gate: make(chan struct{})}
	s, err := newVIM(t, cloud).Open(t.Context(), &lcm.VnfInstance{ID: "inst-1"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	node := lcm.Node{Resource: "m-0", Role: lcm.RoleMaster, SSHAddress: "10.0.0.1"}
	starter, cancel := context.WithCancel(t.Context())
	first := make(chan error)
	go func() {
		_, err := s.Host(starter, node)
		first <- err
	}()
	time.Sleep(20 * time.Millisecond) // the starter's dial waits at the gate
	second := make(chan error)
	go func() {
		h, err := s.Host(t.Context(), node)
		if err == nil && h == nil {
			err = errors.New("no host")
		}
		second <- err
	}()
	time.Sleep(20 * time.Millisecond) // the second caller joins the dial
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("starter: %v, want its cancellation", err)
	}
	close(cloud.gate)
	if err := <-second; err != nil {
		t.Errorf("second caller: %v, want a host", err)
	}
}

package realkube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// etcdCluster is the stacked etcd of one control plane: embedded etcd
// members on loopback, in the order they were added, and the proxy the
// API server reaches them through.
type etcdCluster struct {
	dir   string // members' data dirs are under it
	token string // --initial-cluster-token: makes the cluster ID unique

	changeMu sync.Mutex // serializes Add and Remove

	mu      sync.Mutex
	members []*etcdMember // running members, in the order they were added
	order   map[uint64]int
	seq     int
	closed  bool

	proxy *etcdProxy
}

var _ kube.Etcd = (*etcdCluster)(nil)

// etcdMember is one embedded etcd server.
type etcdMember struct {
	name      string
	id        uint64
	dir       string
	clientURL string
	peerURL   string
	etcd      *embed.Etcd
	closing   *atomic.Bool // silences its logger
}

// quietCore logs errors until its member is being stopped, when the
// errors of its closed listeners are expected ("setting up serving from
// embedded etcd failed": "http: Server closed").
type quietCore struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q quietCore) With(fields []zapcore.Field) zapcore.Core {
	return quietCore{Core: q.Core.With(fields), closing: q.closing}
}

func (q quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.closing.Load() {
		return ce
	}
	return q.Core.Check(e, ce)
}

// etcdAPITimeout bounds the retries of a membership change, as kubeadm's
// etcd client retries MemberAdd and MemberRemove until
// timeouts.etcdAPICall (cmd/kubeadm/app/util/etcd/etcd.go addMember,
// RemoveMember).
const etcdAPITimeout = 2 * time.Minute

// startEtcd starts the first member of a new cluster and the proxy.
func startEtcd(dir, token string, first kube.EtcdPeer) (*etcdCluster, error) {
	c := &etcdCluster{dir: dir, token: token, order: map[uint64]int{}}
	peerPort, clientPort, err := freePorts()
	if err != nil {
		return nil, err
	}
	peerURL := "http://" + net.JoinHostPort("127.0.0.1", peerPort)
	m, err := c.startMember(first.Name, peerURL, clientPort, first.Name+"="+peerURL, embed.ClusterStateFlagNew)
	if err != nil {
		return nil, err
	}
	c.adopt(m)
	c.proxy, err = newEtcdProxy(c.targets)
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// freePorts returns two free loopback ports (the kernel's choice; closed
// again before etcd binds them, which another process could race).
func freePorts() (string, string, error) {
	var ports []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", err
		}
		defer l.Close()
		_, port, _ := net.SplitHostPort(l.Addr().String())
		ports = append(ports, port)
	}
	return ports[0], ports[1], nil
}

// startMember starts an embedded member with plain http on loopback and
// waits until it serves (it has joined the cluster and published its
// name).
func (c *etcdCluster) startMember(name, peerURL, clientPort, initialCluster, state string) (*etcdMember, error) {
	dir, err := os.MkdirTemp(c.dir, "etcd-")
	if err != nil {
		return nil, err
	}
	cu, _ := url.Parse("http://" + net.JoinHostPort("127.0.0.1", clientPort))
	pu, err := url.Parse(peerURL)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = initialCluster
	cfg.ClusterState = state
	cfg.InitialClusterToken = c.token
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	closing := new(atomic.Bool)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(quietCore{
		Core:    zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zapcore.ErrorLevel),
		closing: closing,
	}))
	// Tests: no fsync (the data dir is thrown away anyway).
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("etcd member %s: %w", name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("etcd member %s: %w", name, err)
	case <-time.After(time.Minute):
		e.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("etcd member %s did not become ready within a minute", name)
	}
	return &etcdMember{
		name: name, id: uint64(e.Server.MemberID()), dir: dir,
		clientURL: cu.String(), peerURL: peerURL, etcd: e, closing: closing,
	}, nil
}

// adopt records a started member as the latest added.
func (c *etcdCluster) adopt(m *etcdMember) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members = append(c.members, m)
	c.order[m.id] = c.seq
	c.seq++
}

// targets returns the client addresses (host:port) of the running
// members, for the proxy.
func (c *etcdCluster) targets() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.members {
		out = append(out, strings.TrimPrefix(m.clientURL, "http://"))
	}
	return out
}

// clientURL returns the URL of the proxy, the API server's --etcd-servers.
func (c *etcdCluster) clientURL() string { return "http://" + c.proxy.addr() }

// client returns a client of the running members other than except
// (a member being removed should not answer its own removal).
func (c *etcdCluster) client(except uint64) (*clientv3.Client, error) {
	c.mu.Lock()
	var eps []string
	for _, m := range c.members {
		if m.id != except {
			eps = append(eps, m.clientURL)
		}
	}
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("etcd: control plane closed")
	}
	if len(eps) == 0 {
		return nil, errors.New("etcd: no running member")
	}
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// Members lists the members as etcd reports them (MemberList), in the
// order Add added them, the first member first, with the cluster ID of
// the response header.
func (c *etcdCluster) Members(ctx context.Context) (uint64, []kube.EtcdMember, error) {
	cli, err := c.client(0)
	if err != nil {
		return 0, nil, err
	}
	defer cli.Close()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return 0, nil, err
	}
	c.mu.Lock()
	rank := func(id uint64) int {
		if r, ok := c.order[id]; ok {
			return r
		}
		return int(^uint(0) >> 1)
	}
	ms := slices.Clone(resp.Members)
	slices.SortStableFunc(ms, func(a, b *etcdserverpb.Member) int { return rank(a.ID) - rank(b.ID) })
	c.mu.Unlock()
	out := make([]kube.EtcdMember, 0, len(ms))
	for _, m := range ms {
		out = append(out, kube.EtcdMember{ID: m.ID, Name: m.Name, PeerURLs: slices.Clone(m.PeerURLs), ClientURLs: slices.Clone(m.ClientURLs)})
	}
	return resp.Header.ClusterId, out, nil
}

// retry calls op every 200 ms until it succeeds, fails with an error
// retrying cannot help (stop), or etcdAPITimeout passes: etcd refuses a
// membership change while a member joined less than 5 s ago
// (etcdserver/server.go mayAddMember, mayRemoveMember with --strict-
// reconfig-check: "etcdserver: unhealthy cluster"), and kubeadm retries
// (cmd/kubeadm/app/util/etcd/etcd.go).
func retry(ctx context.Context, op func(context.Context) error, stop func(error) bool) error {
	ctx, cancel := context.WithTimeout(ctx, etcdAPITimeout)
	defer cancel()
	for {
		callCtx, callCancel := context.WithTimeout(ctx, 10*time.Second)
		err := op(callCtx)
		callCancel()
		if err == nil || stop(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Add adds a member named peer.Name and starts it as kubeadm join
// --control-plane does (cmd/kubeadm/app/phases/etcd/local.go
// CreateStackedEtcdStaticPodManifestFile): MemberAddAsLearner, the new
// member's server with --initial-cluster-state=existing, then
// MemberPromote once the learner has caught up (etcd refuses earlier,
// "can only promote a learner member which is in sync with leader";
// kubeadm retries, cmd/kubeadm/app/util/etcd/etcd.go MemberPromote).
// A plain MemberAdd would cost the quorum until the new member runs: a
// one-member cluster then stalls for etcd's request timeout (7 s) while
// the new member bootstraps. A member of that name is removed first.
// The member listens on loopback: peer.Address is not used.
func (c *etcdCluster) Add(ctx context.Context, peer kube.EtcdPeer) error {
	c.changeMu.Lock()
	defer c.changeMu.Unlock()
	_, members, err := c.Members(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.Name == peer.Name {
			if err := c.remove(ctx, m.ID); err != nil {
				return fmt.Errorf("replacing etcd member %s: %w", peer.Name, err)
			}
		}
	}
	cli, err := c.client(0)
	if err != nil {
		return err
	}
	defer cli.Close()
	peerPort, clientPort, err := freePorts()
	if err != nil {
		return err
	}
	peerURL := "http://" + net.JoinHostPort("127.0.0.1", peerPort)
	var resp *clientv3.MemberAddResponse
	err = retry(ctx, func(ctx context.Context) error {
		var err error
		resp, err = cli.MemberAddAsLearner(ctx, []string{peerURL})
		return err
	}, func(err error) bool { return errors.Is(err, rpctypes.ErrPeerURLExist) })
	if err != nil {
		return fmt.Errorf("etcd member add %s: %w", peer.Name, err)
	}
	// --initial-cluster of the new member: every member's name=peerURL,
	// its own name for the member just added (which has none yet).
	var initial []string
	for _, m := range resp.Members {
		name := m.Name
		if m.ID == resp.Member.ID {
			name = peer.Name
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	m, err := c.startMember(peer.Name, peerURL, clientPort, strings.Join(initial, ","), embed.ClusterStateFlagExisting)
	if err != nil {
		_, _ = cli.MemberRemove(context.WithoutCancel(ctx), resp.Member.ID)
		return err
	}
	c.adopt(m)
	err = retry(ctx, func(ctx context.Context) error {
		_, err := cli.MemberPromote(ctx, m.id)
		return err
	}, func(err error) bool { return errors.Is(err, rpctypes.ErrMemberNotLearner) })
	if err != nil && !errors.Is(err, rpctypes.ErrMemberNotLearner) {
		return fmt.Errorf("etcd member promote %s: %w", peer.Name, err)
	}
	return nil
}

// Remove removes a member (MemberRemove), stops its server and deletes
// its data. An unknown ID is kube.ErrEtcdMemberNotFound.
func (c *etcdCluster) Remove(ctx context.Context, id uint64) error {
	c.changeMu.Lock()
	defer c.changeMu.Unlock()
	return c.remove(ctx, id)
}

func (c *etcdCluster) remove(ctx context.Context, id uint64) error {
	cli, err := c.client(id)
	if err != nil {
		return err
	}
	defer cli.Close()
	// A removed member stops itself and logs why: expected here.
	c.mu.Lock()
	for _, m := range c.members {
		if m.id == id {
			m.closing.Store(true)
		}
	}
	c.mu.Unlock()
	err = retry(ctx, func(ctx context.Context) error {
		_, err := cli.MemberRemove(ctx, id)
		return err
	}, func(err error) bool { return errors.Is(err, rpctypes.ErrMemberNotFound) })
	if err != nil {
		c.mu.Lock()
		for _, m := range c.members {
			if m.id == id {
				m.closing.Store(false)
			}
		}
		c.mu.Unlock()
	}
	if errors.Is(err, rpctypes.ErrMemberNotFound) {
		return kube.ErrEtcdMemberNotFound
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	i := slices.IndexFunc(c.members, func(m *etcdMember) bool { return m.id == id })
	var m *etcdMember
	if i >= 0 {
		m = c.members[i]
		c.members = slices.Delete(c.members, i, i+1)
	}
	c.mu.Unlock()
	if m != nil {
		c.proxy.drop(strings.TrimPrefix(m.clientURL, "http://"))
		m.stop()
	}
	return nil
}

func (m *etcdMember) stop() {
	m.closing.Store(true)
	m.etcd.Close()
	os.RemoveAll(m.dir)
}

// close stops the proxy and every member.
func (c *etcdCluster) close() {
	c.mu.Lock()
	c.closed = true
	members := c.members
	c.members = nil
	c.mu.Unlock()
	if c.proxy != nil {
		c.proxy.close()
	}
	for _, m := range members {
		m.stop()
	}
}

// etcdProxy forwards each TCP connection to a running member, so that
// the API server, which has one --etcd-servers URL, survives the removal
// of the member it started with: a member's connections are cut when it
// is removed, and the API server's etcd client reconnects.
type etcdProxy struct {
	l       net.Listener
	targets func() []string
	wg      sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]string // → target
	done  bool
}

func newEtcdProxy(targets func() []string) (*etcdProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &etcdProxy{l: l, targets: targets, conns: map[net.Conn]string{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *etcdProxy) addr() string { return p.l.Addr().String() }

func (p *etcdProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(in)
		}()
	}
}

// forward pipes in to the first running member that answers.
func (p *etcdProxy) forward(in net.Conn) {
	defer in.Close()
	var out net.Conn
	var target string
	for _, t := range p.targets() {
		c, err := net.DialTimeout("tcp", t, 2*time.Second)
		if err == nil {
			out, target = c, t
			break
		}
	}
	if out == nil {
		return
	}
	defer out.Close()
	if !p.track(in, target) || !p.track(out, target) {
		return
	}
	defer p.untrack(in, out)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Either side closing ends both: etcd's gRPC has no half-close.
		in.Close()
		out.Close()
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}

func (p *etcdProxy) track(c net.Conn, target string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.conns[c] = target
	return true
}

func (p *etcdProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// drop cuts the connections to target.
func (p *etcdProxy) drop(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, t := range p.conns {
		if t == target {
			c.Close()
		}
	}
}

func (p *etcdProxy) close() {
	p.l.Close()
	p.mu.Lock()
	p.done = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

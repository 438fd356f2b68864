package kube

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// Cluster is one Kubernetes cluster of the world: its API and what lives
// outside the API (the CAs kubeadm generated, the etcd membership).
type Cluster struct {
	// API is the cluster's API server.
	API API
	// CACert is the PEM of the cluster CA (/etc/kubernetes/pki/ca.crt).
	CACert []byte
	// Endpoint is the control-plane endpoint joining nodes and kubeconfigs
	// use: ClusterConfiguration.controlPlaneEndpoint, or the first
	// control plane's advertise address and bind port ("10.0.0.5:6443").
	Endpoint string
	// Version is the Kubernetes version kubeadm init set up ("v1.36.2").
	Version string

	world *World
	// The CAs of /etc/kubernetes/pki, which kubeadm-certs carries to the
	// joining control planes.
	ca, etcdCA, frontProxyCA *keyPair
	saKey, saPub             []byte

	// cp runs the cluster's API server and etcd.
	cp ControlPlane
}

// member is a machine's place in a cluster: what kubeadm init or join
// made it.
type member struct {
	cluster      *Cluster
	node         string // nodeRegistration.name
	controlPlane bool
	address      string // advertise address (InternalIP)
	bindPort     int    // the API server's, control planes only
	taints       []corev1.Taint
	gone         bool // the machine was deleted (Forget)
}

// World is every Kubernetes cluster of a simulated cloud, and the network
// that reaches their API servers. It is safe for concurrent use.
type World struct {
	net     containers.Network
	backend Backend

	mu       sync.Mutex
	clusters []*Cluster
	planes   []ControlPlane // every control plane started, for Close
	members  map[*ubuntu.Machine]*member
	lbs      map[*ubuntu.Machine]bool // machines whose haproxy or keepalived ran
	warnings []string
	clock    func() time.Time
	mountNFS func(ctx context.Context, client *ubuntu.Machine, server, path, target string) error

	// syncMu serialises [World.Sync]: kubelets of concurrent joins and
	// kubectl calls must not register the same Node twice.
	syncMu sync.Mutex
	// ctrlMu serialises the bootstrap controllers (signer, token
	// cleaner), which are one loop each in kube-controller-manager:
	// concurrent joins must not race on cluster-info.
	ctrlMu sync.Mutex
}

// NewWorld returns a world without clusters whose machines are reached
// through net. Each cluster kubeadm init creates gets a control plane of
// backend: a fresh [MemoryAPI] when backend is nil ([MemoryBackend]).
func NewWorld(net containers.Network, backend Backend) *World {
	if net == nil {
		net = &containers.StaticNetwork{}
	}
	if backend == nil {
		backend = MemoryBackend{}
	}
	return &World{net: net, backend: backend, members: map[*ubuntu.Machine]*member{}, lbs: map[*ubuntu.Machine]bool{}}
}

// Backend is what the world's clusters run on.
func (w *World) Backend() Backend { return w.backend }

// Close stops the control planes the world's kubeadm inits started.
func (w *World) Close() error {
	w.mu.Lock()
	planes := w.planes
	w.planes = nil
	w.mu.Unlock()
	var errs []error
	for _, cp := range planes {
		errs = append(errs, cp.Close())
	}
	return errors.Join(errs...)
}

// startControlPlane starts a cluster's control plane with the world's
// backend and remembers it for [World.Close], also when kubeadm init
// fails after it started.
func (w *World) startControlPlane(ctx context.Context, spec ControlPlaneSpec) (ControlPlane, error) {
	cp, err := w.backend.StartControlPlane(ctx, spec)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.planes = append(w.planes, cp)
	return cp, nil
}

// SetClock replaces the world's clock (time.Now by default): bootstrap
// token expirations and the kubeadm-certs TTL are judged against it.
func (w *World) SetClock(now func() time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clock = now
}

// SetNFSMounter sets how a node's machine mounts an NFS volume for its
// kubelet: mount(ctx, client, server, path, target) mounts server:path
// on the machine client at target, the pod's volume directory (the
// simulated cloud's mount.nfs: the client needs
// nfs-common, the server must export path to the client's address) and
// returns nil, or an error whose message is mount's output ("mount:
// ...: bad option; for several filesystems (e.g. nfs, cifs) you might
// need a /sbin/mount.<type> helper program.", "mount.nfs: access denied
// by server while mounting ..."). The kubelets of both backends call it
// before they start a pod with NFS volumes ([ControlPlaneSpec.MountNFS]);
// a pod whose mount fails stays Pending, ContainerCreating, with a
// FailedMount event, and starts once a later attempt succeeds (the
// model's at the next [World.Sync]). Without a mounter (the default, or
// nil) every NFS mount succeeds. It may be called at any time: each
// mount reads the mounter of the moment.
func (w *World) SetNFSMounter(mount func(ctx context.Context, client *ubuntu.Machine, server, path, target string) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mountNFS = mount
}

// kubeletMountNFS is the [ControlPlaneSpec.MountNFS] of cluster c: the
// world's mounter applied to the machine whose kubelet is node (a member
// of c that is not gone). A node no machine of the world runs cannot
// mount.
func (w *World) kubeletMountNFS(c *Cluster) func(ctx context.Context, node, server, path, target string) error {
	return func(ctx context.Context, node, server, path, target string) error {
		w.mu.Lock()
		mount := w.mountNFS
		var client *ubuntu.Machine
		for m, mb := range w.members {
			if mb.cluster == c && mb.node == node && !mb.gone {
				client = m
			}
		}
		w.mu.Unlock()
		if mount == nil {
			return nil
		}
		if client == nil {
			return fmt.Errorf("no machine runs the kubelet of node %q", node)
		}
		return mount(ctx, client, server, path, target)
	}
}

// now is the world's time.
func (w *World) now() time.Time {
	w.mu.Lock()
	c := w.clock
	w.mu.Unlock()
	if c == nil {
		return time.Now()
	}
	return c()
}

// Clusters returns the world's clusters, oldest first.
func (w *World) Clusters() []*Cluster {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*Cluster(nil), w.clusters...)
}

// ClusterOf returns the cluster m is a node of (kubeadm init or join ran
// on it and no reset since), or nil.
func (w *World) ClusterOf(m *ubuntu.Machine) *Cluster {
	if mb := w.memberOf(m); mb != nil {
		return mb.cluster
	}
	return nil
}

// ConfigWarnings returns what the fake kubeadm logged as warnings about
// the configuration files it read, oldest first: unknown fields (kubeadm
// 1.36 only warns, it does not fail) and ignored documents. A test asserts
// it is empty to catch a misspelt field the real kubeadm would silently
// drop.
func (w *World) ConfigWarnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.warnings)
}

func (w *World) warn(msgs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, msgs...)
}

func (w *World) memberOf(m *ubuntu.Machine) *member {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.members[m]
}

func (w *World) setMember(m *ubuntu.Machine, mb *member) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if mb == nil {
		delete(w.members, m)
		return
	}
	// A machine that replaces a deleted one under the same node name (a
	// healed VM) takes the Node over: the gone machine's kubelet no
	// longer speaks for it.
	for other, o := range w.members {
		if o.gone && o.cluster == mb.cluster && o.node == mb.node {
			delete(w.members, other)
		}
	}
	w.members[m] = mb
}

// membersOf returns the machines of a cluster with their membership.
func (w *World) membersOf(c *Cluster) map[*ubuntu.Machine]*member {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[*ubuntu.Machine]*member{}
	for m, mb := range w.members {
		if mb.cluster == c {
			out[m] = mb
		}
	}
	return out
}

func (w *World) addCluster(c *Cluster) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clusters = append(w.clusters, c)
}

// Nodes returns the cluster's Node objects after the kubelets of its
// machines have synchronised (see [World.Sync]).
func (c *Cluster) Nodes(ctx context.Context) ([]corev1.Node, error) {
	if err := c.world.Sync(ctx); err != nil {
		return nil, err
	}
	objs, err := c.API.List(ctx, corev1.SchemeGroupVersion.WithKind("Node"), "")
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, *n)
		}
	}
	return out, nil
}

// EtcdMembers returns the cluster's etcd members, in the order they were
// added.
func (c *Cluster) EtcdMembers(ctx context.Context) ([]EtcdMember, error) {
	_, ms, err := c.cp.Etcd().Members(ctx)
	return ms, err
}

// ControlPlane is what runs the cluster's API server and etcd.
func (c *Cluster) ControlPlane() ControlPlane { return c.cp }

// ErrNoAPIServer is what a client gets when nothing serves the Kubernetes
// API at the address it dials.
var ErrNoAPIServer = errors.New("connection refused")

// maxHops bounds the proxies (HAProxy to a VIP to HAProxy ...) a dial
// goes through.
const maxHops = 4

// Dial returns the cluster whose API server answers at hostport
// ("10.0.0.5:6443", "10.0.0.100:16443", a name of from's /etc/hosts) as
// dialled from machine from:
//
//   - the address is a machine's (through the world's network), a VIP
//     some machine holds ([World.VIPHolder]), or loopback (from itself);
//   - a control plane serves its API server on its bind port while its
//     static pod manifest /etc/kubernetes/manifests/kube-apiserver.yaml is
//     there and kubelet.service and containerd run (the kubelet runs the
//     static pods: cmd/kubeadm/app/phases/controlplane);
//   - an HAProxy whose haproxy.service is active and whose loaded
//     configuration has a frontend binding the port forwards to its
//     backend's servers, skipping those its health checks find dead
//     ("check"; see lb.go).
//
// The error reads as a Go client's dial error ("dial tcp 10.0.0.5:6443:
// connect: connection refused", wrapping [ErrNoAPIServer]).
func (w *World) Dial(from *ubuntu.Machine, hostport string) (*Cluster, error) {
	return w.dial(from, hostport, 0, false)
}

// dial is Dial after hops proxies; noVIP makes VIPs unreachable, for the
// checks VIPHolder runs (a VIP's election cannot depend on the VIP).
func (w *World) dial(from *ubuntu.Machine, hostport string, hops int, noVIP bool) (*Cluster, error) {
	host, portS, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("dial tcp: address %s: missing port in address", hostport)
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return nil, fmt.Errorf("dial tcp: lookup tcp/%s: unknown port", portS)
	}
	ip := host
	if _, err := netip.ParseAddr(host); err != nil {
		ip = lookupEtcHosts(from, host)
		if ip == "" {
			return nil, fmt.Errorf("dial tcp: lookup %s: no such host", host)
		}
	}
	m := w.machineAt(ip, noVIP)
	if m == nil && (ip == "127.0.0.1" || ip == "::1") {
		m = from
	}
	addr := net.JoinHostPort(ip, portS)
	if m == nil {
		return nil, fmt.Errorf("dial tcp %s: connect: no route to host", addr)
	}
	if c := w.apiserverOn(m, port); c != nil {
		return c, nil
	}
	if hops < maxHops {
		if c, err := w.haproxyRoute(m, port, hops, noVIP); c != nil || err != nil {
			return c, err
		}
	}
	return nil, fmt.Errorf("dial tcp %s: connect: %w", addr, ErrNoAPIServer)
}

// machineAt is the machine answering at ip: the network's, or the VIP
// holder's (none with noVIP).
func (w *World) machineAt(ip string, noVIP bool) *ubuntu.Machine {
	if noVIP && w.isVIP(ip) {
		return nil
	}
	if m := w.net.Machine(ip); m != nil {
		return m
	}
	if noVIP {
		return nil
	}
	return w.VIPHolder(ip)
}

// apiserverOn returns the cluster whose kube-apiserver m runs on port.
func (w *World) apiserverOn(m *ubuntu.Machine, port int) *Cluster {
	mb := w.memberOf(m)
	if mb == nil || mb.gone || !mb.controlPlane || mb.bindPort != port {
		return nil
	}
	if !m.Server().FS().Exists(manifestsDir+"/kube-apiserver.yaml") || !m.Service("kubelet").Active || !containers.Containerd(m).Running() {
		return nil
	}
	return mb.cluster
}

// lookupEtcHosts resolves a name through m's /etc/hosts ("" when absent).
func lookupEtcHosts(m *ubuntu.Machine, name string) string {
	if m == nil {
		return ""
	}
	data, _ := m.Server().FS().ReadFile("/etc/hosts")
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) > 1 && slices.Contains(f[1:], name) {
			return f[0]
		}
	}
	return ""
}

// ResolveKubeconfig reads the kubeconfig file at path on m (as root: the
// caller checks the permissions of its process) and dials, from m, the
// server it names (its current context's cluster): the API a kubectl on
// m talks to, after the cluster's kubelets synchronised (see
// [World.Sync]). It is the resolve function of [KubectlTool]. The error
// is the dial's ("dial tcp 10.0.0.5:6443: connect: connection refused",
// wrapping [ErrNoAPIServer]; "... no route to host").
func (w *World) ResolveKubeconfig(m *ubuntu.Machine, path string) (API, error) {
	data, err := m.Server().FS().ReadFile(path)
	if err != nil {
		return nil, err
	}
	server, _, err := parseKubeconfig(data)
	if err != nil {
		return nil, fmt.Errorf("error loading config file %q: %v", path, err)
	}
	c, err := w.Dial(m, strings.TrimPrefix(server, "https://"))
	if err != nil {
		return nil, err
	}
	if err := w.Sync(context.Background()); err != nil {
		return nil, err
	}
	return c.API, nil
}

// parseKubeconfig returns the server and CA of a kubeconfig's current
// context's cluster (the first cluster without a context).
func parseKubeconfig(data []byte) (server string, ca []byte, err error) {
	var kc struct {
		Clusters []struct {
			Name    string `json:"name"`
			Cluster struct {
				Server string `json:"server"`
				CAData string `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Contexts []struct {
			Name    string `json:"name"`
			Context struct {
				Cluster string `json:"cluster"`
			} `json:"context"`
		} `json:"contexts"`
		Current string `json:"current-context"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return "", nil, err
	}
	want := ""
	for _, c := range kc.Contexts {
		if c.Name == kc.Current {
			want = c.Context.Cluster
		}
	}
	for _, c := range kc.Clusters {
		if want == "" || c.Name == want {
			ca, _ := base64.StdEncoding.DecodeString(c.Cluster.CAData)
			if c.Cluster.Server == "" {
				return "", nil, errors.New("no server found for cluster " + c.Name)
			}
			return c.Cluster.Server, ca, nil
		}
	}
	return "", nil, errors.New("invalid configuration: no configuration has been provided")
}

// Forget tells the world machine m is gone (its VM deleted): its kubelet
// no longer posts status, so its Node turns Ready=Unknown at the next
// sync, as the node lifecycle controller marks a node that stopped
// reporting; its keepalived gives its VIPs up; its etcd member stays
// until someone removes it, as a dead member does.
func (w *World) Forget(m *ubuntu.Machine) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if mb := w.members[m]; mb != nil {
		gone := *mb
		gone.gone = true
		w.members[m] = &gone
	}
	delete(w.lbs, m)
}

package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/heat/heattest"
	"github.com/mgmtkit/mgmtkit/internal/sim/ansible"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Options configure a Cloud.
type Options struct {
	// Subnet is where host addresses are allocated, one per port; default
	// 127.0.1.0/24 and on (127.0.2.0, ...) as it fills. It must be inside
	// 127.0.0.0/8: the simulation listens on loopback only.
	Subnet netip.Prefix
	// Catalog returns the apt catalog of each new host; default
	// [ubuntu.DefaultCatalog]. The cloud adds the container packages of
	// [containers.AddPackages] (docker.io, containerd, cri-tools, cri-o,
	// curl), the Kubernetes packages and the NFS packages of
	// internal/sim/nfsd (nfs-kernel-server, and an nfs-common whose
	// mount.nfs works), bound to its network, to every catalog it returns.
	Catalog func() *ubuntu.Catalog
	// Setup, when set, runs on every new host after the base Ubuntu
	// install: the hook that gives hosts more programs or files.
	Setup func(h *Host) error
	// Heat configures the fake Keystone and Heat.
	Heat heattest.Config
	// ProxyOnly makes the Internet reachable only through an HTTP proxy
	// of [Cloud.AddProxy], as [Cloud.SetDirectInternet](false) does.
	ProxyOnly bool
	// KubeBackend runs the clusters kubeadm init creates on the cloud's
	// hosts: the in-memory model (kube.MemoryBackend) when nil, or a real
	// control plane (the module cloudtest/realkube).
	KubeBackend kube.Backend
	// Ansible configures the Ansible server [Cloud.AddAnsibleServer]
	// starts.
	Ansible AnsibleOptions
}

// AnsibleOptions configure kubespray's Ansible server.
type AnsibleOptions struct {
	// CoreVersion is the ansible-core installed (one of
	// ansible.CoreVersions); ansible.DefaultCoreVersion when empty.
	CoreVersion string
	// KubesprayRelease is the kubespray checkout at [KubesprayRootPath]
	// (one of ansible.Releases); ansible.DefaultRelease when empty.
	KubesprayRelease string
	// NoSSHPass leaves sshpass uninstalled: Ansible cannot log in to the
	// nodes with a password.
	NoSSHPass bool
}

// Cloud is a simulated OpenStack tenant. It is safe for concurrent use.
type Cloud struct {
	opts    Options
	kube    *kube.World // the clusters kubeadm makes; see kube.go
	heat    *heattest.Server
	dir     string
	knownMu sync.Mutex // serialises known_hosts rewrites
	mu      sync.Mutex
	next    netip.Addr
	hosts   map[string]*Host  // by server ID
	listen  map[string]string // address Heat reports → listener host:port
	vnfs    []*VNF
	retired []*Host
	ansible *Host // AddAnsibleServer's
	// ansibleAddr is AnsibleServerAddress's reservation; ansibleMu
	// serialises AddAnsibleServer.
	ansibleAddr string
	ansibleMu   sync.Mutex
	hostSeq     int
	closed      bool
	closeErr    error
	// The network as the container runtimes see it.
	routes     map[string]*Host
	registries map[string]*containers.Registry
	noInternet bool
	proxies    map[string]*containers.Proxy // by ip:port; see proxy.go
	noDirect   bool                         // the Internet only through a proxy
}

// New starts a simulated cloud: Keystone and Heat on a loopback port, no
// stacks and no hosts yet. Close it when done.
func New(opts Options) (*Cloud, error) {
	if !opts.Subnet.IsValid() {
		opts.Subnet = netip.MustParsePrefix("127.0.1.0/24")
	}
	if !netip.MustParsePrefix("127.0.0.0/8").Contains(opts.Subnet.Addr()) {
		return nil, fmt.Errorf("sim: subnet %s is not loopback", opts.Subnet)
	}
	base := opts.Catalog
	if base == nil {
		base = ubuntu.DefaultCatalog
	}
	hs, err := heattest.NewServer(opts.Heat)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mgmtkit-sim-")
	if err != nil {
		hs.Close()
		return nil, err
	}
	c := &Cloud{
		opts:   opts,
		heat:   hs,
		dir:    dir,
		next:   opts.Subnet.Masked().Addr().Next(),
		hosts:  map[string]*Host{},
		listen: map[string]string{},
	}
	c.kube = kube.NewWorld(c, opts.KubeBackend)
	// The kubelets mount a pod's NFS volumes as the node's mount.nfs
	// would: with nfs-common installed, from a server that exports the
	// path to the node's address.
	c.kube.SetNFSMounter(c.MountNFS)
	c.noDirect = opts.ProxyOnly
	c.opts.Catalog = func() *ubuntu.Catalog {
		cat := base()
		containers.AddPackages(cat, c)
		c.addKubePackages(cat)
		c.addNFSPackages(cat)
		ansible.AddPackages(cat, c)
		return cat
	}
	if err := c.writeKnownHosts(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// TB is the part of testing.TB that Start uses; *testing.T, *testing.B
// and *testing.F satisfy it. It is declared here so that sim does not
// link the testing package into a program that only uses its
// testing-free constructor (the tour).
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Start is New for a test: it fails the test on error and closes the cloud
// when the test ends.
func Start(tb TB, opts Options) *Cloud {
	tb.Helper()
	c, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Close stops every host and the Heat server and removes the cloud's
// files.
func (c *Cloud) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.closeErr
	}
	c.closed = true
	hosts := c.allHostsLocked()
	c.mu.Unlock()
	var errs []error
	for _, h := range hosts {
		errs = append(errs, h.SSH.Close())
	}
	c.heat.Close()
	errs = append(errs, c.kube.Close(), os.RemoveAll(c.dir))
	c.closeErr = errors.Join(errs...)
	return c.closeErr
}

func (c *Cloud) allHostsLocked() []*Host {
	hs := make([]*Host, 0, len(c.hosts))
	for _, h := range c.hosts {
		hs = append(hs, h)
	}
	return hs
}

// Heat returns the fake Keystone and Heat server.
func (c *Cloud) Heat() *heattest.Server { return c.heat }

// HeatClient authenticates with the fake Keystone through gophercloud and
// returns a heat.Client for the tenant's Heat, as a VNFM would build one.
func (c *Cloud) HeatClient(ctx context.Context) (*heat.Client, error) {
	return heat.ConnectVIM(ctx, c.VimConnection(), nil)
}

// VimConnection returns the tenant as the OpenStack entry of a VNF's
// vimConnectionInfo (Tacker's format: endpoint, username, password,
// project, domains, region).
func (c *Cloud) VimConnection() lcm.VimConnectionInfo {
	ao := c.heat.AuthOptions()
	return lcm.VimConnectionInfo{
		ID:            "openstack-vim",
		VimID:         "sim-openstack",
		VimType:       "openstack",
		InterfaceInfo: map[string]any{"endpoint": c.heat.IdentityEndpoint()},
		AccessInfo: lcm.AccessInfo{
			"username":      ao.Username,
			"password":      ao.Password,
			"project":       ao.TenantName,
			"userDomain":    ao.DomainName,
			"projectDomain": ao.DomainName,
			"region":        c.heat.Region(),
		},
	}
}

// Hosts returns every running host, ordered by role and creation.
func (c *Cloud) Hosts() []*Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	hs := c.allHostsLocked()
	slices.SortFunc(hs, func(a, b *Host) int { return lcm.CompareNodes(a.node(), b.node()) })
	return hs
}

// Host returns the running host at an address Heat reports (fixed or
// floating), or nil.
func (c *Cloud) Host(addr string) *Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		if slices.Contains(h.Addresses, addr) {
			return h
		}
	}
	return nil
}

// HostByServer returns the running host of a Nova server ID, or nil.
func (c *Cloud) HostByServer(serverID string) *Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hosts[serverID]
}

// Retired returns the hosts that scale-in and heal have removed, oldest
// first: their filesystems can still be inspected.
func (c *Cloud) Retired() []*Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.retired)
}

// allocate returns the next free address of the subnet.
func (c *Cloud) allocate() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.next
	if !a.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(a) {
		return "", errors.New("sim: out of loopback addresses")
	}
	if a.As4()[3] == 255 { // skip broadcast-looking and network addresses
		a = a.Next().Next()
	}
	c.next = a.Next()
	return a.String(), nil
}

// newHost starts a fresh Ubuntu host that answers on addrs.
func (c *Cloud) newHost(role lcm.Role, login Login, addrs []string, packages []string) (*Host, error) {
	if len(addrs) == 0 {
		return nil, errors.New("sim: a host needs an address")
	}
	sudo := sshtest.SudoNoPassword
	if login.SudoWithPassword {
		sudo = sshtest.SudoPassword
	}
	users := []sshtest.User{{Name: "root", Password: randomPassword()}}
	if login.User != "" && login.User != "root" {
		users = append(users, sshtest.User{Name: login.User, Password: login.Password, Sudo: sudo})
	} else if login.User == "root" {
		users[0].Password = login.Password
	}
	c.mu.Lock()
	c.hostSeq++
	seq := c.hostSeq
	c.mu.Unlock()
	name := string(role)
	if name == "" {
		name = "vm" // a VM of no role the specs name
	}
	srv, err := sshtest.NewServer(sshtest.Config{
		Addr:     net.JoinHostPort(addrs[0], "0"),
		Hostname: fmt.Sprintf("%s-%d", name, seq),
		Users:    users,
	})
	if err != nil {
		return nil, err
	}
	h := &Host{Role: role, Addresses: slices.Clone(addrs), SSH: srv, Login: login, listeners: map[string]string{addrs[0]: srv.Addr()}}
	for _, a := range addrs[1:] {
		l, err := srv.Listen(net.JoinHostPort(a, "0"))
		if err != nil {
			srv.Close()
			return nil, err
		}
		h.listeners[a] = l
	}
	var nic []netip.Prefix
	for _, a := range addrs {
		nic = append(nic, netip.PrefixFrom(netip.MustParseAddr(a), 8)) // the cloud's network is 127.0.0.0/8
	}
	h.Machine = ubuntu.Install(srv, ubuntu.Options{Catalog: c.opts.Catalog(), Packages: packages, Addresses: nic})
	if c.opts.Setup != nil {
		if err := c.opts.Setup(h); err != nil {
			srv.Close()
			return nil, fmt.Errorf("sim: host setup: %w", err)
		}
	}
	return h, nil
}

// register makes hosts reachable and known, rewriting known_hosts once
// for all of them.
func (c *Cloud) register(hs ...*Host) error {
	c.mu.Lock()
	for _, h := range hs {
		c.hosts[h.ServerID] = h
		for a, l := range h.listeners {
			c.listen[a] = l
		}
	}
	c.mu.Unlock()
	return c.writeKnownHosts()
}

// retire stops hosts: their addresses stop answering. known_hosts is
// rewritten once for all of them.
func (c *Cloud) retire(hs ...*Host) error {
	var err error
	for _, h := range hs {
		c.mu.Lock()
		delete(c.hosts, h.ServerID)
		for a, l := range h.listeners {
			if c.listen[a] == l {
				delete(c.listen, a)
			}
		}
		c.retired = append(c.retired, h)
		c.mu.Unlock()
		c.forgetKube(h.Machine)
		err = errors.Join(err, h.SSH.Close())
	}
	return errors.Join(err, c.writeKnownHosts())
}

// Dial connects to the host that answers at addr, an address Heat reports
// with port 22 (or no port). An address no VM answers at is refused, as by
// a network where the VM is gone. It is what [Cloud.SSHConfig] sets as
// remote.Config.Dial.
func (c *Cloud) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "22"
	}
	if port != "22" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("sim: the simulated VMs answer SSH on port 22, not %s", port)}
	}
	c.mu.Lock()
	target, ok := c.listen[host]
	c.mu.Unlock()
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// KnownHostsFile is the path of a known_hosts file that lists every
// running host's key under each of its addresses. The cloud rewrites it
// when hosts come and go.
func (c *Cloud) KnownHostsFile() string { return filepath.Join(c.dir, "known_hosts") }

func (c *Cloud) writeKnownHosts() error {
	c.knownMu.Lock()
	defer c.knownMu.Unlock()
	var b strings.Builder
	for _, h := range c.Hosts() {
		key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.SSH.HostKey())))
		for _, a := range h.Addresses {
			b.WriteString(a + " " + key + "\n")
		}
	}
	tmp := c.KnownHostsFile() + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.KnownHostsFile())
}

// SSHConfig returns the part of a remote.Config that is the same for every
// host of the cloud: Dial through the simulated network, host keys verified
// against [Cloud.KnownHostsFile] as it is now, and short timeouts. Hooks
// fill in Addr, User and Password per node.
func (c *Cloud) SSHConfig() (remote.Config, error) {
	policy, err := remote.KnownHosts(c.KnownHostsFile())
	if err != nil {
		return remote.Config{}, err
	}
	return remote.Config{
		HostKey:        policy,
		Dial:           c.Dial,
		ConnectTimeout: 5 * time.Second,
		WaitTimeout:    30 * time.Second,
	}, nil
}

// SSHConfigFunc returns [Cloud.SSHConfig] as the function drivers take
// (plumbing.Config.SSH), with logger (which may be nil) as the
// connections' logger.
func (c *Cloud) SSHConfigFunc(logger *slog.Logger) func(context.Context) (remote.Config, error) {
	return func(context.Context) (remote.Config, error) {
		cfg, err := c.SSHConfig()
		cfg.Logger = logger
		return cfg, err
	}
}

// Connect dials a node as user with password through [Cloud.SSHConfig]:
// what a hook does, for tests that inspect a node over SSH.
func (c *Cloud) Connect(ctx context.Context, n lcm.Node, user, password string) (*remote.SSHHost, error) {
	cfg, err := c.SSHConfig()
	if err != nil {
		return nil, err
	}
	cfg.Addr, cfg.Name, cfg.User, cfg.Password = n.SSHAddress, n.Resource, user, remote.NewSecret(password)
	return remote.Dial(ctx, cfg)
}

// Route makes the simulated network deliver traffic for ip (any address,
// e.g. the sample's "192.168.0.10", which nothing ever dials for real) to
// host h, as a floating IP or NAT outside the VNF's stacks would: the
// container runtimes and curl of every host reach h there. When h is
// healed, the route follows the host that took over h's NIC address.
func (c *Cloud) Route(ip string, h *Host) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.routes == nil {
		c.routes = map[string]*Host{}
	}
	c.routes[ip] = h
}

// AddExternalRegistry puts a registry outside the cloud (not a container
// on a host) at ip:port; hosts reach it by address, or by a name their
// /etc/hosts maps to ip.
func (c *Cloud) AddExternalRegistry(ip string, port int, r *containers.Registry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.registries == nil {
		c.registries = map[string]*containers.Registry{}
	}
	c.registries[net.JoinHostPort(ip, fmt.Sprint(port))] = r
}

// SetInternet says whether hosts reach Docker Hub (they do by default).
func (c *Cloud) SetInternet(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noInternet = !on
}

// Machine returns the machine of the running host answering at ip: one
// of its addresses, a route to it, or a virtual IP its keepalived holds.
// It implements [containers.Network].
func (c *Cloud) Machine(ip string) *ubuntu.Machine {
	if m := c.machine(ip); m != nil {
		return m
	}
	return c.vipHolder(ip)
}

func (c *Cloud) machine(ip string) *ubuntu.Machine {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.routes[ip]; h != nil {
		if c.hosts[h.ServerID] == h {
			return h.Machine
		}
		ip = h.NICAddress
	}
	for _, h := range c.hosts {
		if slices.Contains(h.Addresses, ip) {
			return h.Machine
		}
	}
	return nil
}

// ExternalRegistry implements [containers.Network].
func (c *Cloud) ExternalRegistry(ip string, port int) *containers.Registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registries[net.JoinHostPort(ip, fmt.Sprint(port))]
}

// Internet implements [containers.Network].
func (c *Cloud) Internet() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.noInternet
}

var _ containers.Network = (*Cloud)(nil)

// AnsibleServerAddress returns the address of kubespray's Ansible server:
// a VM of the tenant that was there before the VNF, that no stack holds,
// and that a request names by address (ansible.ip_address; Heat does not
// know it). The address is reserved at the first call, so that a request
// can name it before [Cloud.AddAnsibleServer] starts the server.
func (c *Cloud) AnsibleServerAddress() (string, error) {
	c.mu.Lock()
	addr := c.ansibleAddr
	c.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	addr, err := c.allocate()
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ansibleAddr == "" { // a concurrent first call may have won
		c.ansibleAddr = addr
	}
	return c.ansibleAddr, nil
}

// AddAnsibleServer starts kubespray's Ansible server at
// [Cloud.AnsibleServerAddress] with login. The cloud has at most one; a
// second call returns the first.
//
// The server has what [Options.Ansible] says (by default ansible-core
// ansible.DefaultCoreVersion, whose ansible-playbook is the semantic
// fake of internal/sim/ansible, sshpass, and a kubespray checkout of
// ansible.DefaultRelease at [KubesprayRootPath] owned by the login
// user). Its ansible-playbook reaches the cloud's hosts as [Cloud.Dial]
// does, and its fault knobs are ansible.FaultsOf(h.Machine).
func (c *Cloud) AddAnsibleServer(login Login) (*Host, error) {
	addr, err := c.AnsibleServerAddress()
	if err != nil {
		return nil, err
	}
	c.ansibleMu.Lock()
	defer c.ansibleMu.Unlock()
	if a := c.AnsibleServer(); a != nil {
		return a, nil
	}
	ao := c.opts.Ansible
	core := firstOf(ao.CoreVersion, ansible.DefaultCoreVersion)
	corePkg := ansible.CorePackage(core)
	if corePkg == "" {
		return nil, fmt.Errorf("sim: ansible-core %s is not in the simulation (have %s)", core, strings.Join(ansible.CoreVersions(), ", "))
	}
	pkgs := []string{corePkg}
	if !ao.NoSSHPass {
		pkgs = append(pkgs, "sshpass")
	}
	h, err := c.newHost(lcm.RoleAnsible, login, []string{addr}, pkgs)
	if err != nil {
		return nil, err
	}
	owner := firstOf(login.User, "root")
	if err := ansible.InstallKubespray(h.FS(), KubesprayRootPath, firstOf(ao.KubesprayRelease, ansible.DefaultRelease), owner); err != nil {
		h.SSH.Close()
		return nil, err
	}
	h.Resource, h.ServerID, h.SSHAddress, h.NICAddress = "ansible-server", newUUID(), addr, addr
	h.CreatedAt = c.heat.Now()
	if err := c.register(h); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.ansible = h
	c.mu.Unlock()
	return h, nil
}

// AnsibleServer returns the server AddAnsibleServer started, or nil.
func (c *Cloud) AnsibleServer() *Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ansible
}

// firstOf returns the first non-empty string.
func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

package containers

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Network is the simulated network as the container runtimes see it:
// which machine answers at an address, which registries live outside the
// machines, and whether Docker Hub is reachable. The simulated cloud
// (internal/sim's Cloud) implements it; [StaticNetwork] is a small one for
// tests. Nothing in the simulation opens a socket for these addresses.
type Network interface {
	// Machine returns the machine answering at ip (any fixed, floating or
	// routed address), or nil.
	Machine(ip string) *ubuntu.Machine
	// ExternalRegistry returns a registry outside the machines (not a
	// container) listening at ip:port, or nil.
	ExternalRegistry(ip string, port int) *Registry
	// Internet reports whether machines reach Docker Hub.
	Internet() bool
}

// StaticNetwork is a [Network] set up by hand: machines and external
// registries at fixed addresses, and Docker Hub reachable unless
// SetInternet(false). The zero value is an empty network with Internet.
// It is safe for concurrent use.
type StaticNetwork struct {
	mu         sync.Mutex
	machines   map[string]*ubuntu.Machine
	registries map[string]*Registry
	noInternet bool
	proxies    map[string]*Proxy
	noDirect   bool // the Internet only through a proxy
}

// AddMachine makes m answer at ip.
func (n *StaticNetwork) AddMachine(ip string, m *ubuntu.Machine) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.machines == nil {
		n.machines = map[string]*ubuntu.Machine{}
	}
	n.machines[ip] = m
}

// AddRegistry makes r listen at ip:port.
func (n *StaticNetwork) AddRegistry(ip string, port int, r *Registry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.registries == nil {
		n.registries = map[string]*Registry{}
	}
	n.registries[joinHostPort(ip, port)] = r
}

// SetInternet says whether machines reach Docker Hub.
func (n *StaticNetwork) SetInternet(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.noInternet = !on
}

// AddProxy makes p listen at ip:port.
func (n *StaticNetwork) AddProxy(ip string, port int, p *Proxy) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proxies == nil {
		n.proxies = map[string]*Proxy{}
	}
	n.proxies[joinHostPort(ip, port)] = p
}

// SetDirectInternet says whether machines reach the Internet without a
// proxy (they do by default); off, only a [Proxy] reaches it.
func (n *StaticNetwork) SetDirectInternet(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.noDirect = !on
}

// Proxy implements [ProxiedNetwork].
func (n *StaticNetwork) Proxy(ip string, port int) *Proxy {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proxies[joinHostPort(ip, port)]
}

// DirectInternet implements [ProxiedNetwork].
func (n *StaticNetwork) DirectInternet() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.noDirect
}

// Machine implements [Network].
func (n *StaticNetwork) Machine(ip string) *ubuntu.Machine {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.machines[ip]
}

// ExternalRegistry implements [Network].
func (n *StaticNetwork) ExternalRegistry(ip string, port int) *Registry {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.registries[joinHostPort(ip, port)]
}

// Internet implements [Network].
func (n *StaticNetwork) Internet() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.noInternet
}

// RegistryOptions configure [NewRegistry].
type RegistryOptions struct {
	// TLS makes the registry speak HTTPS only; plain HTTP otherwise.
	TLS bool
	// CA is the PEM of the CA that signed the registry's certificate;
	// required with TLS. A client trusts the registry when one of the CA
	// certificates it was given is one of these. The certificate itself is
	// not modelled: it is valid for every name the registry is reached by.
	CA []byte
	// Username and Password, when set, make the registry require HTTP
	// basic auth for every API call, as registry:2 with htpasswd does.
	Username, Password string
}

// Registry is a Docker distribution registry outside the simulated
// machines (registry.example.com): HTTP or HTTPS, with or without basic
// auth, holding images in memory. Put it on a [Network] (internal/sim's
// Cloud.AddExternalRegistry, [StaticNetwork.AddRegistry]) at an address
// the machines resolve through their /etc/hosts. It is safe for concurrent
// use.
type Registry struct {
	opts  RegistryOptions
	st    store
	mu    sync.Mutex
	pulls []PullRecord
}

// NewRegistry returns an empty registry. It panics when TLS is set
// without a CA that parses, as a test fixture would fail the test.
func NewRegistry(opts RegistryOptions) *Registry {
	if opts.TLS && len(parseCerts(opts.CA)) == 0 {
		panic("containers: a TLS registry needs the PEM of its CA in RegistryOptions.CA")
	}
	opts.CA = bytes.Clone(opts.CA)
	return &Registry{opts: opts, st: store{fs: sshtest.NewFS(), root: "/var/lib/registry"}}
}

// Push makes an image ("app:1", "team/app"; tag latest by default)
// available in the registry, with content derived from its name. It
// panics on an invalid name.
func (r *Registry) Push(image string) { pushSynth(r.st, image) }

// Has reports whether the registry serves image ("app:1").
func (r *Registry) Has(image string) bool { return hasImage(r.st, image) }

// Images returns the images the registry serves, "repo:tag", sorted.
func (r *Registry) Images() []string { return r.st.list() }

// TLS reports whether the registry speaks HTTPS.
func (r *Registry) TLS() bool { return r.opts.TLS }

// Auth reports whether the registry requires basic auth.
func (r *Registry) Auth() bool { return r.opts.Username != "" || r.opts.Password != "" }

// Pulls returns every pull that reached the registry, oldest first.
func (r *Registry) Pulls() []PullRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pulls)
}

func (r *Registry) isTLS() bool     { return r.opts.TLS }
func (r *Registry) caPEM() []byte   { return r.opts.CA }
func (r *Registry) needsAuth() bool { return r.Auth() }
func (r *Registry) lookup(repo, reference string) (*image, bool) {
	return r.st.get(repo, reference)
}
func (r *Registry) put(repo, tag string, im *image) error { return r.st.put(repo, tag, im) }
func (r *Registry) checkAuth(u, p string) bool {
	return u == r.opts.Username && p == r.opts.Password
}
func (r *Registry) record(p PullRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pulls = append(r.pulls, p)
}

// PullRecord is one pull that reached a registry: the manifest request of
// a runtime, whatever came of it.
type PullRecord struct {
	// Host is the pulling machine's host name.
	Host string
	// Runtime is "docker", "containerd" or "cri-o".
	Runtime string
	// Image is the image as the registry names it ("app:1").
	Image string
	// OK says the registry served the manifest; false for a pull refused
	// for want of credentials or of the image.
	OK bool
}

// RegistryView is a registry as tests see it: an external [Registry] or
// a machine's registry container.
type RegistryView interface {
	// TLS reports whether the registry speaks HTTPS.
	TLS() bool
	// Auth reports whether the registry requires basic auth.
	Auth() bool
	// Push makes an image ("app:1") available, with content derived from
	// its name; it panics on an invalid name.
	Push(image string)
	// Has reports whether the registry serves an image ("app:1").
	Has(image string) bool
	// Images returns the images it serves, "repo:tag", sorted.
	Images() []string
	// Pulls returns the pulls that reached it, oldest first.
	Pulls() []PullRecord
}

// RegistryAt returns the registry listening at ip:port on net: a
// registry container published on that port of the machine answering at
// ip, or an external registry.
func RegistryAt(net Network, ip string, port int) (RegistryView, bool) {
	if net == nil {
		return nil, false
	}
	srv := reach(net, nil, ip, port)
	if srv == nil {
		return nil, false
	}
	switch s := srv.(type) {
	case *Registry:
		return s, true
	case *containerRegistry:
		return s, true
	}
	return nil, false
}

// server is what answers a registry client at an address.
type server interface {
	isTLS() bool
	caPEM() []byte
	needsAuth() bool
	checkAuth(user, password string) bool
	lookup(repo, reference string) (*image, bool)
	put(repo, tag string, im *image) error
	record(PullRecord)
}

// reach returns the server a client on from (nil for a test outside
// every machine) reaches at ip:port, nil when nothing listens there. An
// address of a machine of the network is that machine, even on loopback:
// the simulated cloud's VMs have loopback addresses that stand for real
// ones. Any other loopback address is the client's own machine.
func reach(n Network, from *ubuntu.Machine, ip string, port int) server {
	target := n.Machine(ip)
	local := false
	if target == nil && isLoopback(ip) && from != nil {
		target, local = from, true
	}
	if target != nil {
		if cr := dockerOf(target).registryOn(port, local); cr != nil {
			return cr
		}
		return nil
	}
	if r := n.ExternalRegistry(ip, port); r != nil {
		return r
	}
	return nil
}

func isLoopback(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.IsLoopback()
}

func pushSynth(st store, image string) {
	repo, tag, err := repoTag(image)
	if err != nil {
		panic("containers: " + err.Error())
	}
	if err := st.put(repo, tag, synthImage(image)); err != nil {
		panic("containers: " + err.Error())
	}
}

func hasImage(st store, image string) bool {
	repo, tag, err := repoTag(image)
	if err != nil {
		return false
	}
	_, ok := st.get(repo, tag)
	return ok
}

// parseCerts returns the certificates of a PEM bundle.
func parseCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// trusts reports whether one of the client's CA bundles holds a
// certificate of the server's CA.
func trusts(clientCAs [][]byte, serverCA []byte) bool {
	want := parseCerts(serverCA)
	for _, bundle := range clientCAs {
		for _, c := range parseCerts(bundle) {
			for _, w := range want {
				if c.Equal(w) {
					return true
				}
			}
		}
	}
	return false
}

// GenerateCA returns the PEM of a new self-signed CA certificate named
// commonName, for a TLS [Registry] in a test.
func GenerateCA(commonName string) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// hostPorts is the set of a machine's ports that host processes (not
// containers) hold.
type hostPorts struct {
	mu    sync.Mutex
	ports map[int]bool
}

type hostPortsKey struct{}

func portsOf(m *ubuntu.Machine) *hostPorts {
	return m.Extension(hostPortsKey{}, func() any { return &hostPorts{ports: map[int]bool{}} }).(*hostPorts)
}

// TakePort makes a host process (not a container) hold a TCP port of m
// on every address, as another service would: Docker cannot publish a
// container on it. Nothing answers registry requests there.
func TakePort(m *ubuntu.Machine, port int) {
	hp := portsOf(m)
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.ports[port] = true
}

func portTaken(m *ubuntu.Machine, port int) bool {
	hp := portsOf(m)
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return hp.ports[port]
}

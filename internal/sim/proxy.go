package sim

import (
	"net"
	"strconv"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

// AddProxy puts an HTTP forward proxy at ip:port, an address outside the
// VNF's stacks that the hosts reach (a corporate proxy such as
// "10.10.0.1:3128", or a name their /etc/hosts maps to ip), and returns it
// for tests to inspect ([containers.Proxy.Requests]). The proxy reaches
// the Internet hosts (Docker Hub, pkgs.k8s.io, the Ubuntu archive...)
// while the cloud has Internet, and no address of the cloud: a request
// for a private registry that a client sends to the proxy, because its
// NO_PROXY does not name it, fails with 503. A second call at the same
// address replaces the proxy.
//
// Whoever honours a proxy setting goes through it: curl (--proxy,
// https_proxy...), apt-get (Acquire::http(s)::Proxy in /etc/apt/apt.conf.d,
// http(s)_proxy), dockerd and containerd (HTTP(S)_PROXY and NO_PROXY in
// their units' environment, matched as Go's httpproxy does).
func (c *Cloud) AddProxy(ip string, port int, opts containers.ProxyOptions) *containers.Proxy {
	p := containers.NewProxy(opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proxies == nil {
		c.proxies = map[string]*containers.Proxy{}
	}
	c.proxies[net.JoinHostPort(ip, strconv.Itoa(port))] = p
	return p
}

// SetDirectInternet says whether hosts reach the Internet without a
// proxy: on by default; off, as in a data centre whose only way out is an
// HTTP proxy, they reach it only through one of [Cloud.AddProxy]'s (and
// not at all while [Cloud.SetInternet] is off). Off, a proxy setting
// naming an address where no proxy listens fails to connect.
func (c *Cloud) SetDirectInternet(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noDirect = !on
}

// Proxy implements [containers.ProxiedNetwork].
func (c *Cloud) Proxy(ip string, port int) *containers.Proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proxies[net.JoinHostPort(ip, strconv.Itoa(port))]
}

// DirectInternet implements [containers.ProxiedNetwork].
func (c *Cloud) DirectInternet() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.noDirect
}

var _ containers.ProxiedNetwork = (*Cloud)(nil)

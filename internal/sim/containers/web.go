package containers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// KubernetesReleaseKey is the ASCII-armored OpenPGP public key that signs
// the simulated pkgs.k8s.io repositories, served as
// https://pkgs.k8s.io/core:/stable:/v1.NN/deb/Release.key. It is a real
// Ed25519 key made with GnuPG 2.2 for the simulation (user ID as the real
// key's, "isv:kubernetes OBS Project", long key ID B00EB89D1452643D), so
// that `gpg --dearmor` and apt's keyring check treat it as they treat the
// real one; it signs nothing.
const KubernetesReleaseKey = `-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEZNoXQBYJKwYBBAHaRw8BAQdACN79DJeOdnXT57RAmKzAa7zP0LElstx+ikrE
CBy7YfW0PmlzdjprdWJlcm5ldGVzIE9CUyBQcm9qZWN0IDxpc3Y6a3ViZXJuZXRl
c0BidWlsZC5vcGVuc3VzZS5vcmc+iJAEExYIADgWIQTH/06rAGNS8l+1HKiwDrid
FFJkPQUCZNoXQAIbAwULCQgHAgYVCgkICwIEFgIDAQIeAQIXgAAKCRCwDridFFJk
PeppAQDPpq2UcwbbcG8Dc0jqUWy2uR+I+HDoSXLeeTzB1IlR5wD/e4z8mFd8eZIb
u+VQXgb2wTcBFOATP8nvFggjMoTcWAY=
=zpZU
-----END PGP PUBLIC KEY BLOCK-----
`

// KubernetesCoreRepo is the pkgs.k8s.io repository of a Kubernetes minor
// ("1.36") as its sources.list entry names it
// (https://kubernetes.io/blog/2023/08/15/pkgs-k8s-io-introduction/).
func KubernetesCoreRepo(minor string) string {
	return "https://pkgs.k8s.io/core:/stable:/v" + minor + "/deb/"
}

// addRepositories makes the pkgs.k8s.io core repositories of Kubernetes
// 1.24 (the first there) to 1.36 signed by [KubernetesReleaseKey] in c,
// and apt reach repositories through n.
func addRepositories(c *ubuntu.Catalog, n Network) {
	for minor := 24; minor <= 36; minor++ {
		c.AddRepository(ubuntu.Repository{URI: KubernetesCoreRepo("1." + strconv.Itoa(minor)), Key: KubernetesReleaseKey})
	}
	c.SetTransport(aptTransport(n))
}

// isInternetHost reports whether host is a name of the Internet the
// simulation knows: such names resolve through the public DNS (a machine's
// /etc/hosts does not name them) and answer when the network has
// Internet, directly or through a proxy. Any other name that /etc/hosts
// lacks does not resolve.
func isInternetHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch host {
	case hubHost, "index.docker.io", "auth.docker.io", "production.cloudflare.docker.com",
		"pkgs.k8s.io", "prod-cdn.packages.k8s.io", "dl.k8s.io", "cdn.dl.k8s.io", "registry.k8s.io",
		"download.docker.com", "archive.ubuntu.com", "security.ubuntu.com", "ports.ubuntu.com",
		"github.com", "raw.githubusercontent.com", "objects.githubusercontent.com", "get.helm.sh":
		return true
	}
	return strings.HasSuffix(host, ".archive.ubuntu.com") // country mirrors
}

// internetGet is what an Internet site answers to a GET of urlPath: the
// Release.key of the pkgs.k8s.io repositories, a 404 for other files of
// pkgs.k8s.io's key directory layout; the package index (Packages) of
// each pkgs.k8s.io repository catalog has, rendered from the packages it
// publishes there ([ubuntu.Catalog.PackagesIndex]), and a 404 for a
// repository it does not have; raw.githubusercontent.com's files (see
// githubRawGet); 200 with a short page elsewhere. The real pkgs.k8s.io
// redirects to its CDN (prod-cdn.packages.k8s.io), which curl -L and
// apt follow; the simulation answers directly.
func internetGet(catalog *ubuntu.Catalog, host, urlPath string) (int, string) {
	const notFound = "<html><body><h1>404 Not Found</h1></body></html>\n"
	if strings.EqualFold(host, "raw.githubusercontent.com") {
		return githubRawGet(urlPath)
	}
	if strings.EqualFold(host, "pkgs.k8s.io") {
		if strings.HasSuffix(urlPath, "/deb/Release.key") && strings.HasPrefix(urlPath, "/core:/stable:/v1.") {
			return http.StatusOK, KubernetesReleaseKey
		}
		if strings.HasSuffix(urlPath, "/Release.key") {
			return http.StatusNotFound, notFound
		}
		if dir, ok := strings.CutSuffix(urlPath, "/Packages"); ok {
			if catalog != nil {
				if index, ok := catalog.PackagesIndex("https://pkgs.k8s.io" + dir + "/"); ok {
					return http.StatusOK, string(index)
				}
			}
			return http.StatusNotFound, notFound
		}
	}
	return http.StatusOK, "<html><body>" + host + "</body></html>\n"
}

// --- the proxy ------------------------------------------------------------------

// ProxyOptions configure [NewProxy].
type ProxyOptions struct {
	// Username and Password, when set, make the proxy require them
	// (Proxy-Authorization: Basic, from the user:password of the client's
	// proxy URL), answering 407 otherwise, as squid with basic_ncsa_auth
	// does.
	Username, Password string
}

// Proxy is an HTTP forward proxy (squid-like) on the simulated network,
// placed with [StaticNetwork.AddProxy] or internal/sim's Cloud.AddProxy at
// an address the machines reach. Clients send it CONNECT host:port for
// https URLs and GET absolute-URL for http ones. It reaches the Internet
// hosts when the network has Internet, and nothing else: a private address
// (a machine, a registry of the network) or a name only a machine's
// /etc/hosts knows gets 503 Service Unavailable, as squid answers when it
// cannot connect (ERR_CONNECT_FAIL) or resolve (ERR_DNS_FAIL). It is safe
// for concurrent use.
type Proxy struct {
	opts ProxyOptions
	mu   sync.Mutex
	reqs []ProxyRequest
}

// ProxyRequest is one request a [Proxy] received. The password of the
// client's credentials is never kept.
type ProxyRequest struct {
	// Client is the host name of the machine that sent it.
	Client string
	// Method is "CONNECT" (an https URL) or "GET" (an http URL).
	Method string
	// Target is host:port for CONNECT, the URL for GET.
	Target string
	// User is the user name the client authenticated as, "" for none.
	User string
	// Status is the proxy's answer: 200, 407 or 503.
	Status int
}

// NewProxy returns a proxy that has seen no request yet.
func NewProxy(opts ProxyOptions) *Proxy { return &Proxy{opts: opts} }

// Requests returns every request the proxy received, oldest first.
func (p *Proxy) Requests() []ProxyRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

// serve answers one request: auth first, then whether it can reach the
// target.
func (p *Proxy) serve(n Network, client string, creds *url.Userinfo, method, target string, internet bool) int {
	r := ProxyRequest{Client: client, Method: method, Target: target}
	if creds != nil {
		r.User = creds.Username()
	}
	pw, _ := creds.Password()
	switch {
	case (p.opts.Username != "" || p.opts.Password != "") && (creds == nil || creds.Username() != p.opts.Username || pw != p.opts.Password):
		r.Status = http.StatusProxyAuthRequired
	case internet && n.Internet():
		r.Status = http.StatusOK
	default:
		r.Status = http.StatusServiceUnavailable
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, r)
	return r.Status
}

// proxyAnswer is the head of the answer a [Proxy] sends for a status
// other than 200, as squid sends it (less its Date and X-Squid-Error
// headers).
func proxyAnswer(status int) string {
	h := fmt.Sprintf("HTTP/1.1 %d %s\r\nServer: squid\r\n", status, http.StatusText(status))
	if status == http.StatusProxyAuthRequired {
		h += "Proxy-Authenticate: Basic realm=\"proxy\"\r\n"
	}
	return h + "Content-Length: 0\r\n\r\n"
}

// ProxiedNetwork is a [Network] with HTTP proxies on it, and maybe no
// direct way to the Internet. [StaticNetwork] and internal/sim's Cloud
// implement it. On a Network that does not, every proxy URL is a proxy
// outside the model that reaches the Internet (Docker Hub only).
type ProxiedNetwork interface {
	Network
	// Proxy returns the proxy listening at ip:port, or nil.
	Proxy(ip string, port int) *Proxy
	// DirectInternet reports whether machines reach the Internet hosts
	// without a proxy (when the network has Internet at all).
	DirectInternet() bool
}

// directInternet reports whether a machine of n reaches Internet hosts
// without a proxy.
func directInternet(n Network) bool {
	if pn, ok := n.(ProxiedNetwork); ok && !pn.DirectInternet() {
		return false
	}
	return n.Internet()
}

// proxyAt returns the modelled proxy at a proxy URL's address as m
// resolves it (an IP literal, or a name its /etc/hosts maps), with that
// address (ip:port) and whether the name resolved.
func proxyAt(n Network, m *ubuntu.Machine, pu *url.URL) (*Proxy, string, bool) {
	host, port := pu.Hostname(), pu.Port()
	if port == "" {
		port = "80" // Go's default for an http:// proxy (curl's, 1080, is set by curl)
		if pu.Scheme == "https" {
			port = "443"
		}
	}
	ip, resolved := host, true
	if m != nil {
		ip, resolved = lookupHost(m, host)
		if !resolved {
			ip = host
		}
	}
	pn, ok := n.(ProxiedNetwork)
	if !ok || !resolved {
		return nil, net.JoinHostPort(ip, port), resolved
	}
	p, _ := strconv.Atoi(port)
	return pn.Proxy(ip, p), net.JoinHostPort(ip, port), true
}

// hop is the outcome of a request sent through a proxy.
type hop struct {
	status     int    // the proxy's answer; 0 when nothing answered
	proxyAddr  string // ip:port of the proxy (host:port when unresolved)
	unresolved bool   // the proxy's name does not resolve
	legacy     bool   // a proxy outside the model (see ProxiedNetwork)
}

// throughProxy sends a request for scheme://host:port from machine m
// through the proxy at pu: CONNECT for https, GET for http.
func throughProxy(n Network, m *ubuntu.Machine, pu *url.URL, scheme, host string, port int, rawURL string) hop {
	p, addr, resolved := proxyAt(n, m, pu)
	if p == nil {
		if pn, ok := n.(ProxiedNetwork); ok && !pn.DirectInternet() {
			return hop{proxyAddr: addr, unresolved: !resolved} // nothing listens there
		}
		// A proxy outside the model: it reaches the Internet, and the
		// Internet only.
		h := hop{proxyAddr: addr, legacy: true, status: http.StatusServiceUnavailable}
		if isInternetHost(host) {
			h.status = http.StatusOK
		}
		return h
	}
	method, target := "CONNECT", joinHostPort(host, port)
	if scheme == "http" {
		method, target = "GET", rawURL
		if u, err := url.Parse(rawURL); err == nil && u.User != nil {
			u.User = nil // the proxy's record keeps no credentials
			target = u.String()
		}
	}
	client := ""
	if m != nil {
		client = m.Hostname()
	}
	return hop{proxyAddr: addr, status: p.serve(n, client, pu.User, method, target, isInternetHost(host))}
}

// parseProxyURL reads a proxy setting as Go's httpproxy and curl do: a URL,
// or host:port meaning http://host:port.
func parseProxyURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if u2, err2 := url.Parse("http://" + s); err2 == nil {
			return u2, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("invalid proxy address %q: %v", s, err)
	}
	return u, nil
}

// proxyConfig is a Go program's proxy environment (HTTP_PROXY,
// HTTPS_PROXY, NO_PROXY): containerd's and dockerd's.
type proxyConfig struct {
	HTTP, HTTPS, NoProxy string
}

// proxyFor returns the proxy a Go client (net/http's
// ProxyFromEnvironment, i.e. golang.org/x/net/http/httpproxy's
// Config.ProxyFunc, proxy.go) uses for scheme://host:port, or nil:
//
//   - HTTPS_PROXY for https URLs, HTTP_PROXY for http ones;
//   - never for "localhost" or a loopback address (here: a loopback
//     address no machine of n has; the simulated cloud's 127.0.1.x
//     addresses stand for real ones);
//   - not when NO_PROXY matches: "*"; a CIDR holding the address; an IP
//     (with an optional port); a domain name, matching the host and its
//     subdomains ("example.com", ".example.com" and "*.example.com" match
//     subdomains, the first also the name itself; domain entries never
//     match IP literals), with an optional port.
func (c proxyConfig) proxyFor(n Network, scheme, host string, port int) *url.URL {
	setting := c.HTTP
	if scheme == "https" {
		setting = c.HTTPS
	}
	pu, err := parseProxyURL(setting)
	if err != nil || pu == nil {
		return nil
	}
	if port == 0 {
		port = 80
		if scheme == "https" {
			port = 443
		}
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" {
		return nil
	}
	ip, ipErr := netip.ParseAddr(host)
	isIP := ipErr == nil
	if isIP && ip.IsLoopback() && (n == nil || n.Machine(ip.String()) == nil) {
		return nil
	}
	ps := strconv.Itoa(port)
	for _, e := range strings.Split(c.NoProxy, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if e == "*" {
			return nil
		}
		if pfx, err := netip.ParsePrefix(e); err == nil {
			if isIP && pfx.Contains(ip) {
				return nil
			}
			continue
		}
		eh, ep, err := net.SplitHostPort(e)
		if err != nil {
			eh, ep = e, "" // "[fd00::7]" without a port stays bracketed: no IP, no match
		} else {
			eh = strings.Trim(eh, "[]")
		}
		if eip, err := netip.ParseAddr(eh); err == nil {
			if isIP && eip == ip && (ep == "" || ep == ps) {
				return nil
			}
			continue
		}
		if eh == "" || isIP {
			continue
		}
		eh = strings.TrimPrefix(eh, "*")
		matchHost := !strings.HasPrefix(eh, ".")
		if matchHost {
			eh = "." + eh
		}
		if (strings.HasSuffix(host, eh) || (matchHost && host == eh[1:])) && (ep == "" || ep == ps) {
			return nil
		}
	}
	return pu
}

// goProxyFailure is a Go client's failure through a proxy (net/http's
// Transport.dialConn, transport.go): a proxy nothing listens at is a
// "proxyconnect" dial error; a CONNECT answered with another status than
// 200 fails with the status text ("Service Unavailable", "Proxy
// Authentication Required"); a plain-HTTP request's answer is the
// response itself, which the runtimes report as an unexpected status.
func goProxyFailure(h hop, scheme string) *failure {
	switch {
	case h.unresolved:
		host, _, _ := net.SplitHostPort(h.proxyAddr)
		return &failure{kind: failText, text: "proxyconnect tcp: dial tcp: lookup " + host + " on 127.0.0.53:53: no such host"}
	case h.status == 0:
		return &failure{kind: failText, text: "proxyconnect tcp: dial tcp " + h.proxyAddr + ": connect: connection refused"}
	case h.status == http.StatusOK:
		return nil
	case scheme == "https":
		return &failure{kind: failText, text: http.StatusText(h.status)}
	}
	return &failure{kind: failText, status: h.status, text: fmt.Sprintf("unexpected status code %d %s", h.status, http.StatusText(h.status))}
}

// --- apt ----------------------------------------------------------------------------

// aptTransport is how apt on a machine of n reaches a repository
// (ubuntu.AptTransport); the errors are worded as apt 2.4's http method
// words them (methods/connect.cc, methods/basehttp.cc).
func aptTransport(n Network) ubuntu.AptTransport {
	return func(_ context.Context, m *ubuntu.Machine, rawURL, proxy string) error {
		u, err := url.Parse(rawURL)
		if err != nil {
			return err
		}
		host := u.Hostname()
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = 80
			if u.Scheme == "https" {
				port = 443
			}
		}
		if proxy != "" {
			pu, err := parseProxyURL(proxy)
			if err != nil {
				return aptErrorf("Unsupported proxy configured: %s", proxy)
			}
			h := throughProxy(n, m, pu, u.Scheme, host, port, rawURL)
			ip, pport, _ := net.SplitHostPort(h.proxyAddr)
			switch {
			case h.unresolved:
				return aptErrorf("Could not resolve '%s'", pu.Hostname())
			case h.status == 0:
				return aptErrorf("Could not connect to %s:%s (%s). - connect (111: Connection refused)", pu.Hostname(), pport, ip)
			case h.status == http.StatusOK:
				return nil
			case u.Scheme == "https":
				// apt's connect.cc (UnwrapHTTPConnect) quotes the
				// proxy's whole answer, line ends turned into two
				// spaces.
				head := strings.ReplaceAll(proxyAnswer(h.status), "\r\n", "  ")
				return aptErrorf("Invalid response from proxy: %s [IP: %s %s]", head, ip, pport)
			}
			return ubuntu.AptHTTPError(fmt.Sprintf("%d  %s [IP: %s %s]", h.status, http.StatusText(h.status), ip, pport))
		}
		ip, ok := lookupHost(m, host)
		switch {
		case !ok && isInternetHost(host):
			if !directInternet(n) {
				return aptErrorf("Temporary failure resolving '%s'", host)
			}
			return nil
		case !ok:
			return aptErrorf("Could not resolve '%s'", host)
		case n.Machine(ip) == nil && n.ExternalRegistry(ip, port) == nil:
			return aptErrorf("Could not connect to %s:%d (%s). - connect (111: Connection refused)", host, port, ip)
		}
		return nil
	}
}

// aptError is a failure worded as apt prints it (capitalised, as apt's
// messages are).
type aptError string

func (e aptError) Error() string { return string(e) }

func aptErrorf(format string, args ...any) error { return aptError(fmt.Sprintf(format, args...)) }

// ContainerdReaches reports whether containerd on m reaches the Internet
// host (registry.k8s.io, registry-1.docker.io) over HTTPS, directly or
// through the proxy its unit's environment names (HTTPS_PROXY, NO_PROXY,
// as containerd loaded them at its last start): nil, or an error worded
// as containerd's resolver reports it (`failed to do request: Head
// "https://HOST/v2/": ...`). It is for fakes that pull images through
// containerd without a registry the simulation holds, such as kubeadm's
// control-plane images.
func ContainerdReaches(n Network, m *ubuntu.Machine, host string) error {
	if n == nil {
		n = &StaticNetwork{}
	}
	cfg := containerdOf(m).Config()
	pc := proxyConfig{HTTP: cfg.HTTPProxy, HTTPS: cfg.HTTPSProxy, NoProxy: cfg.NoProxy}
	u := "https://" + host + "/v2/"
	fail := func(f *failure) error { return fmt.Errorf("failed to do request: Head %q: %s", u, f.goErr()) }
	if pu := pc.proxyFor(n, "https", host, 443); pu != nil {
		if f := goProxyFailure(throughProxy(n, m, pu, "https", host, 443, u), "https"); f != nil {
			return fail(f)
		}
		return nil
	}
	if _, ok := lookupHost(m, host); !ok && !isInternetHost(host) {
		return fail(&failure{kind: failNoSuchHost, host: host})
	}
	if !directInternet(n) {
		return fail(&failure{kind: failUnreachable, host: host})
	}
	return nil
}

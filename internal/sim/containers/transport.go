package containers

import (
	"errors"
	"net/netip"
	"path"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// lookupHost resolves a host name as the runtimes' resolvers do on the
// simulated machine: an IP literal is itself; a name is looked up in the
// machine's /etc/hosts and nowhere else (the simulated network has no
// DNS).
func lookupHost(m *ubuntu.Machine, host string) (string, bool) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.String(), true
	}
	data, err := m.Server().FS().ReadFile("/etc/hosts")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if _, err := netip.ParseAddr(f[0]); err != nil {
			continue
		}
		for _, name := range f[1:] {
			if strings.EqualFold(name, host) {
				return f[0], true
			}
		}
	}
	return "", false
}

// failKind is why a client could not talk to a registry at all.
type failKind int

const (
	failNoSuchHost  failKind = iota + 1 // the name does not resolve
	failRefused                         // nothing listens at the address
	failTLSToHTTP                       // HTTPS client, HTTP server
	failHTTPToTLS                       // HTTP client, HTTPS server: a 400 response
	failUnknownCA                       // the server's CA is not trusted
	failUnreachable                     // Docker Hub without Internet
	failText                            // a proxy's failure, worded in text
)

// failure is a connection that failed, with what the message names.
type failure struct {
	kind failKind
	host string // the name looked up
	addr string // ip:port dialled
	text string // failText's message
	// status is the HTTP status a proxy answered a plain-HTTP request
	// with (failText), 0 otherwise: the client got a response, not an
	// error.
	status int
}

// goErr is the failure as Go's net/http client words it, which is what
// dockerd, containerd and CRI-O print.
func (f *failure) goErr() string {
	switch f.kind {
	case failNoSuchHost:
		return "dial tcp: lookup " + f.host + " on 127.0.0.53:53: no such host"
	case failRefused:
		return "dial tcp " + f.addr + ": connect: connection refused"
	case failTLSToHTTP:
		return "http: server gave HTTP response to HTTPS client"
	case failUnknownCA:
		return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
	case failUnreachable:
		return "dial tcp: lookup " + f.host + " on 127.0.0.53:53: server misbehaving"
	case failText:
		return f.text
	}
	return "unexpected status code 400 Bad Request"
}

// endpoint is one URL a client tries for a registry.
type endpoint struct {
	scheme string // "https" or "http"
	host   string // host[:port] as the URL names it
}

func (e endpoint) url(p string) string { return e.scheme + "://" + e.host + p }

// tlsSettings is what a client trusts.
type tlsSettings struct {
	cas        [][]byte // PEM bundles of extra CAs (the system store holds none of the simulation's)
	skipVerify bool
}

// dialOptions say how a client reaches servers.
type dialOptions struct {
	tls      tlsSettings
	internet bool // Docker Hub is reachable (directly or through a proxy outside the model)
	// proxy is the client's proxy environment (containerd's and dockerd's
	// unit Environment); the zero value is none.
	proxy proxyConfig
}

// dial connects a client on m (nil: a test outside every machine) to the
// registry behind e, and checks that they speak the same protocol and
// that the client trusts the server's certificate.
func dial(n Network, m *ubuntu.Machine, e endpoint, o dialOptions) (server, *failure) {
	host, port := splitHostPort(e.host)
	if port == 0 {
		port = 443
		if e.scheme == "http" {
			port = 80
		}
	}
	if pu := o.proxy.proxyFor(n, e.scheme, host, port); pu != nil {
		// Through the proxy, which reaches the Internet only.
		h := throughProxy(n, m, pu, e.scheme, host, port, e.url("/v2/"))
		if f := goProxyFailure(h, e.scheme); f != nil {
			return nil, f
		}
		if host == hubHost || host == "index.docker.io" {
			if e.scheme == "http" {
				return nil, &failure{kind: failHTTPToTLS}
			}
			return hub{}, nil
		}
		// Another Internet host: no registry the simulation knows.
		return nil, &failure{kind: failText, text: "unexpected status code 404 Not Found"}
	}
	if host == hubHost || host == "index.docker.io" {
		if !o.internet || !directInternet(n) {
			return nil, &failure{kind: failUnreachable, host: host}
		}
		if e.scheme == "http" {
			return nil, &failure{kind: failHTTPToTLS}
		}
		return hub{}, nil
	}
	ip, ok := host, true
	if m != nil {
		ip, ok = lookupHost(m, host)
	}
	if !ok {
		return nil, &failure{kind: failNoSuchHost, host: host}
	}
	srv := reach(n, m, ip, port)
	if srv == nil {
		return nil, &failure{kind: failRefused, addr: joinHostPort(ip, port)}
	}
	switch {
	case srv.isTLS() && e.scheme == "http":
		return nil, &failure{kind: failHTTPToTLS}
	case !srv.isTLS() && e.scheme == "https":
		return nil, &failure{kind: failTLSToHTTP}
	case e.scheme == "https" && !o.tls.skipVerify && srv.caPEM() != nil && !trusts(o.tls.cas, srv.caPEM()):
		return nil, &failure{kind: failUnknownCA}
	}
	return srv, nil
}

// creds are basic-auth credentials a client sends; the zero value sends
// none.
type creds struct {
	user, password string
	set            bool
}

// authResult is what a registry made of a client's credentials.
type authResult int

const (
	authOK authResult = iota
	authMissing
	authWrong
)

func authorize(srv server, c creds) authResult {
	switch {
	case !srv.needsAuth():
		return authOK
	case !c.set:
		return authMissing
	case !srv.checkAuth(c.user, c.password):
		return authWrong
	}
	return authOK
}

// hub is Docker Hub: HTTPS with a certificate every system store trusts,
// anonymous pulls of the few public images the simulation knows, no
// pushes.
type hub struct{}

func (hub) isTLS() bool                { return true }
func (hub) caPEM() []byte              { return nil }
func (hub) needsAuth() bool            { return false }
func (hub) checkAuth(_, _ string) bool { return false }
func (hub) record(PullRecord)          {}
func (hub) put(string, string, *image) error {
	return errDenied
}
func (hub) lookup(repo, reference string) (*image, bool) {
	return hubImage(ref{domain: hubDomain, path: repo, tag: reference})
}

var errDenied = errors.New("denied: requested access to the resource is denied")

// readCAFiles returns the *.crt files of a certs.d directory (Docker,
// CRI-O and containerd's fallback layout), read at each pull.
func readCAFiles(m *ubuntu.Machine, dir string) [][]byte {
	entries, err := m.Server().FS().ReadDir(dir)
	if err != nil {
		return nil
	}
	var out [][]byte
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".crt") {
			if data, err := m.Server().FS().ReadFile(path.Join(dir, e.Name())); err == nil {
				out = append(out, data)
			}
		}
	}
	return out
}

// credsFor finds a registry's credentials in a Docker-style config.json
// ({"auths": {"SERVER": {"auth": base64(user:password)}}}, or
// "username"/"password" fields), matching keys as Docker and the kubelet
// do: scheme and path stripped, host and port equal.
func credsFor(auths map[string]authEntry, domain string) creds {
	keys := make([]string, 0, len(auths))
	for k := range auths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if serverKey(k) == domain {
			if c, ok := auths[k].creds(); ok {
				return c
			}
		}
	}
	return creds{}
}

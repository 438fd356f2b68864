package system

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Proxy is the HTTP proxy a VM reaches the outside world through: the
// http_proxy, https_proxy and no_proxy keys that the specs' proxy blocks
// share (private_registry_installation_param.proxy,
// k8s_cluster_installation_param.proxy). A domain package embeds it in
// its own proxy type when its block has more keys; [lcm.DecodeParams]
// validates the embedded Proxy by this Validate whatever else the outer
// type has.
//
// The URLs may hold credentials ("http://user:password@proxy:3128"), so
// they are secrets: steps write them into root-only files (an apt
// configuration, a systemd environment file: not Environment=, which
// systemd shows to every user), never into argv or logs, and no
// validation message repeats them.
type Proxy struct {
	// HTTPProxy is http_proxy: an http:// or https:// URL,
	// [user[:password]@]host[:port], with at most a "/" for a path.
	HTTPProxy remote.Secret `json:"http_proxy"`
	// HTTPSProxy is https_proxy, written as HTTPProxy is.
	HTTPSProxy remote.Secret `json:"https_proxy"`
	// NoProxy is no_proxy: a comma-separated list, without spaces, of what
	// is reached directly, each entry a host name, a domain (".example.com"
	// or "example.com": both match the domain and its subdomains for curl,
	// apt and Go), an IP address or a CIDR.
	NoProxy string `json:"no_proxy"`
}

// Validate checks the proxy before anything runs: at least one URL;
// each URL parses (net/url) with scheme http or https, a host that is an
// IP address or a DNS name, a port from 1 to 65535 if one is given, and
// nothing that could break out of a configuration value (quotes,
// backslashes, white space, control characters, "$" and "`"); each
// no_proxy entry is a host, a domain, an IP address or a CIDR.
//
// The samples' placeholder "http://user1:password1@host1:port1" is
// refused ("has a port that is not a number from 1 to 65535"); messages
// name the field but never quote a URL, which may carry a password.
func (p *Proxy) Validate(v *lcm.Validator) {
	checkProxyURL(v.At("http_proxy"), p.HTTPProxy.Reveal())
	checkProxyURL(v.At("https_proxy"), p.HTTPSProxy.Reveal())
	if p.NoProxy != "" {
		for i, e := range strings.Split(p.NoProxy, ",") {
			if msg := checkNoProxyEntry(e); msg != "" {
				v.At("no_proxy").Errorf("entry %d (%q) %s", i+1, e, msg)
			}
		}
	}
	if p.HTTPProxy.IsZero() && p.HTTPSProxy.IsZero() {
		v.Errorf("needs http_proxy or https_proxy")
	}
}

// NoProxyEntries returns the entries of no_proxy, or nil when it is empty.
func (p Proxy) NoProxyEntries() []string {
	if p.NoProxy == "" {
		return nil
	}
	return strings.Split(p.NoProxy, ",")
}

// unsafeProxyChars may not appear in a proxy URL or no_proxy: each could
// end or escape the value in a systemd Environment= line, an apt
// configuration string or a shell word.
const unsafeProxyChars = "\"\\'`$ \t\r\n"

// hasUnsafeProxyChar reports whether s holds one of [unsafeProxyChars] or
// a control character.
func hasUnsafeProxyChar(s string) bool {
	return strings.ContainsAny(s, unsafeProxyChars) ||
		strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// checkProxyURL records what is wrong with the proxy URL s at v, without
// quoting any part of it. An empty s is not checked.
func checkProxyURL(v *lcm.Validator, s string) {
	if s == "" {
		return
	}
	if hasUnsafeProxyChar(s) {
		v.Errorf("must be a URL without quotes, backslashes, '$', '`', white space or control characters")
		return
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if scheme = strings.ToLower(scheme); !ok || scheme != "http" && scheme != "https" {
		v.Errorf("must be an http:// or https:// URL: [user:password@]host[:port]")
		return
	}
	// url.Parse's errors quote the URL, so they are never shown: the cause
	// is found from the authority instead.
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	host, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.HasSuffix(authority, "]") {
		host, port = authority[:i], authority[i+1:]
	}
	if port != "" || strings.HasSuffix(authority, ":") {
		if _, err := lcm.ParsePort(port); err != nil {
			v.Errorf("has a port that is not a number from 1 to 65535")
			return
		}
	}
	if host == "" {
		v.Errorf("must name a host: %s://[user:password@]host[:port]", scheme)
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		v.Errorf("is not a valid URL (check the escaping of user and password: %% must be written %%25)")
	case !validProxyHost(u.Hostname()):
		v.Errorf("must name a host that is an IP address or a DNS name")
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		v.Errorf("must not have a path, query or fragment: %s://[user:password@]host[:port]", scheme)
	}
}

// validProxyHost accepts an IP address (an IPv6 one without a zone) or an
// RFC 1123 host name.
func validProxyHost(h string) bool {
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Zone() == ""
	}
	return lcm.IsDNSName(h)
}

// checkNoProxyEntry returns what is wrong with one no_proxy entry, or "".
//
// The accepted forms are those that curl (lib/noproxy.c: host names with
// an optional leading dot, IP addresses and CIDRs), Go
// (golang.org/x/net/http/httpproxy) and apt agree on; "*" and host:port
// entries, which not all of them read alike, are refused.
func checkNoProxyEntry(e string) string {
	switch {
	case e == "":
		return "is empty: no_proxy is a comma-separated list without empty entries"
	case hasUnsafeProxyChar(e):
		return "must not hold quotes, backslashes, '$', '`', white space or control characters"
	case strings.Contains(e, "/"):
		if _, err := netip.ParsePrefix(e); err != nil {
			return "is not a CIDR like 10.0.0.0/8"
		}
		return ""
	}
	if ip, err := netip.ParseAddr(e); err == nil {
		if ip.Zone() != "" {
			return "is an IPv6 address with a zone, which no_proxy cannot match"
		}
		return ""
	}
	if !lcm.IsDNSName(strings.TrimPrefix(e, ".")) {
		return "must be a host name, a domain (optionally with a leading dot), an IP address or a CIDR"
	}
	return ""
}

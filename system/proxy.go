package system

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"path"
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
// IP address or a DNS name, a port from 1 to 65535 if one is given, at
// most 1000 characters, and nothing that could break out of a
// configuration value (quotes, backslashes, white space, control
// characters, "$" and "`"); each no_proxy entry is a host, a domain, an
// IP address or a CIDR.
//
// What Validate accepts, the renderers ([Proxy.EnvFile],
// [Proxy.AptConf]) write verbatim and every reader takes as written: the
// characters refused are exactly those that end or escape a value in
// the files the proxy goes into. Everything else a URL may hold stays
// literal there: a ';', '#', '&', '!', '*' or '=' in a user or password
// (RFC 3986 sub-delims) is plain text inside apt.conf's quoted value
// (apt-pkg/contrib/configuration.cc ReadConfigFile ends a statement at a
// ';' only outside quotes and strips '#' and '//' comments only outside
// them; strutl.cc ParseCWord copies the quoted text as it is, without
// %-decoding) and in a systemd environment file (systemd.exec(5),
// EnvironmentFile=: '#' and ';' start a comment only at the start of a
// line). [Proxy.Check] is the same check for a step's options.
//
// The samples' placeholder "http://user1:password1@host1:port1" is
// refused ("has a port that is not a number from 1 to 65535"); messages
// name the field but never quote a URL, which may carry a password.
func (p *Proxy) Validate(v *lcm.Validator) {
	for _, pr := range p.problems() {
		v.At(pr.json).Errorf(pr.format, pr.args...)
	}
}

// Check returns what [Proxy.Validate] reports, for a step whose options
// hold a *Proxy: the problems under path, each at path + "." + the Go
// field (HTTPProxy, HTTPSProxy, NoProxy), so that a step refuses bad
// options with the same reasons as parameter validation, before any
// command runs. A nil p (no proxy) has none; a proxy with neither URL is
// reported at HTTPProxy.
func (p *Proxy) Check(path string) []lcm.Problem {
	if p == nil {
		return nil
	}
	var out []lcm.Problem
	for _, pr := range p.problems() {
		at := path + "." + pr.field
		if pr.field == "" {
			at = path + ".HTTPProxy"
		}
		out = append(out, lcm.Problem{Path: at, Message: fmt.Sprintf(pr.format, pr.args...)})
	}
	return out
}

// proxyProblem is one problem of a Proxy: its Go field ("" for the
// proxy as a whole), the field's JSON key, and the message as a format
// and its arguments (which [lcm.Validator.Errorf] shortens when long).
type proxyProblem struct {
	field, json, format string
	args                []any
}

// problems returns what is wrong with p, in field order.
func (p *Proxy) problems() []proxyProblem {
	var out []proxyProblem
	for _, f := range []struct {
		field, json string
		url         remote.Secret
	}{{"HTTPProxy", "http_proxy", p.HTTPProxy}, {"HTTPSProxy", "https_proxy", p.HTTPSProxy}} {
		if msg := checkProxyURL(f.url.Reveal()); msg != "" {
			out = append(out, proxyProblem{f.field, f.json, strings.ReplaceAll(msg, "%", "%%"), nil})
		}
	}
	if p.NoProxy != "" {
		for i, e := range strings.Split(p.NoProxy, ",") {
			if msg := checkNoProxyEntry(e); msg != "" {
				out = append(out, proxyProblem{"NoProxy", "no_proxy", "entry %d (%q) %s", []any{i + 1, e, msg}})
			}
		}
	}
	if p.HTTPProxy.IsZero() && p.HTTPSProxy.IsZero() {
		out = append(out, proxyProblem{"", "", "needs http_proxy or https_proxy", nil})
	}
	return out
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

// maxProxyURL is the longest proxy URL accepted: apt reads a quoted
// configuration value into a buffer of 1024 bytes and refuses a longer
// statement (apt-pkg/contrib/strutl.cc ParseCWord).
const maxProxyURL = 1000

// checkProxyURL returns what is wrong with the proxy URL s ("" if
// nothing), without quoting any part of it. An empty s is not checked.
func checkProxyURL(s string) string {
	if s == "" {
		return ""
	}
	if hasUnsafeProxyChar(s) {
		return "must be a URL without quotes, backslashes, '$', '`', white space or control characters"
	}
	if len(s) > maxProxyURL {
		return fmt.Sprintf("is longer than %d characters", maxProxyURL)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if scheme = strings.ToLower(scheme); !ok || scheme != "http" && scheme != "https" {
		return "must be an http:// or https:// URL: [user:password@]host[:port]"
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
			return "has a port that is not a number from 1 to 65535"
		}
	}
	if host == "" {
		return fmt.Sprintf("must name a host: %s://[user:password@]host[:port]", scheme)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a valid URL (check the escaping of user and password: % must be written %25)"
	case !validProxyHost(u.Hostname()):
		return "must name a host that is an IP address or a DNS name"
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Sprintf("must not have a path, query or fragment: %s://[user:password@]host[:port]", scheme)
	}
	return ""
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

// HasCredentials reports whether a URL of p holds a user (and maybe a
// password): a file holding it is then for root alone.
func (p *Proxy) HasCredentials() bool {
	for _, v := range []remote.Secret{p.HTTPProxy, p.HTTPSProxy} {
		if u, err := url.Parse(v.Reveal()); err == nil && u.User != nil {
			return true
		}
	}
	return false
}

// EnvFile renders p as an environment file: KEY=VALUE lines, as
// systemd's EnvironmentFile= (systemd.exec(5)) and /etc/environment
// (pam_env(8)) read them. Values are written bare: [Proxy.Validate]
// refuses every character that would need quoting there.
//
// Each variable is written twice, lower case and upper case, with the
// same value, because the programs that read them disagree:
//
//   - Go programs (containerd, dockerd, the kubelet, kubeadm, crictl)
//     read both, upper case first (golang.org/x/net/http/httpproxy,
//     FromEnvironment: getEnvAny("HTTP_PROXY", "http_proxy"), the same
//     for HTTPS_PROXY and NO_PROXY), so an upper-case value set
//     elsewhere (systemd's DefaultEnvironment=, `systemctl
//     set-environment`) would win over a lower-case one alone;
//   - curl reads http_proxy only in lower case (curl(1), ENVIRONMENT:
//     "http_proxy is an exception as it is only available in lower
//     case", a guard against CGI's HTTP_PROXY header, "httpoxy"), and
//     lower case first for the others; wget reads only lower case
//     (wget manual, "Proxies"). A unit's helpers (ExecStartPre= scripts,
//     the kubelet's credential providers) and login shells are such
//     programs.
//
// Both spellings alike is the one choice under which every reader sees
// the same proxy whatever its precedence. apt reads neither when its
// own configuration names a proxy: it has [Proxy.AptConf].
func (p *Proxy) EnvFile() []byte {
	var b bytes.Buffer
	b.WriteString("# Managed by mgmtkit: the HTTP proxy, lower and upper case alike.\n")
	line := func(name, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s=%s\n%s=%s\n", name, v, strings.ToUpper(name), v)
		}
	}
	line("http_proxy", p.HTTPProxy.Reveal())
	line("https_proxy", p.HTTPSProxy.Reveal())
	line("no_proxy", p.NoProxy)
	return b.Bytes()
}

// AptConf renders p as an apt configuration file (apt.conf(5)):
// Acquire::http::Proxy and Acquire::https::Proxy, which apt's http and
// https methods read (apt-transport-http(1), apt-transport-https(1)),
// each value in double quotes, where apt takes it verbatim (see
// [Proxy.Validate]). apt has no no_proxy (only per-host
// Acquire::http::Proxy::HOST "DIRECT" entries), so NoProxy is not
// written: package repositories are outside.
func (p *Proxy) AptConf() []byte {
	var b bytes.Buffer
	b.WriteString("// Managed by mgmtkit: the proxy apt reaches package repositories through.\n")
	if !p.HTTPProxy.IsZero() {
		fmt.Fprintf(&b, "Acquire::http::Proxy \"%s\";\n", p.HTTPProxy.Reveal())
	}
	if !p.HTTPSProxy.IsZero() {
		fmt.Fprintf(&b, "Acquire::https::Proxy \"%s\";\n", p.HTTPSProxy.Reveal())
	}
	return b.Bytes()
}

// ProxyUnitFiles returns the files that give a systemd unit
// (unit: "containerd", "kubelet", "docker") the proxy p: a drop-in,
// UnitDir/UNIT.service.d/mgmtkit-proxy.conf, whose EnvironmentFile=
// names UnitDir/UNIT.service.d/mgmtkit-proxy.env, which holds
// [Proxy.EnvFile]. With a nil p both are absent. Write them for root
// alone (0600): systemd.exec(5) warns that Environment= values are
// visible to every user over D-Bus, EnvironmentFile= contents are not.
// For [ConfigureUnit]'s Files and Absent.
func ProxyUnitFiles(unit string, p *Proxy) (files map[string]string, absent []string) {
	dir := UnitDir + "/" + unit + ".service.d/"
	dropIn, env := dir+"mgmtkit-proxy.conf", dir+"mgmtkit-proxy.env"
	if p == nil {
		return nil, []string{dropIn, env}
	}
	return map[string]string{
		dropIn: "# Managed by mgmtkit: the HTTP proxy, from a root-only file.\n[Service]\nEnvironmentFile=" + env + "\n",
		env:    string(p.EnvFile()),
	}, nil
}

// AptProxyFile is the apt configuration file mgmtkit's steps own for the
// proxy apt goes through, on every VM they install packages on (the
// cluster's nodes, the storage server): one file, one owner.
const AptProxyFile = "/etc/apt/apt.conf.d/95mgmtkit-proxy"

// AptProxyOptions configure [SetAptProxy].
type AptProxyOptions struct {
	// File is the apt configuration file to own, a clean absolute path
	// under /etc/apt/apt.conf.d (apt reads the files there in lexical
	// order; apt.conf(5)); [AptProxyFile] when empty.
	File string
	// Proxy is the proxy apt goes through; nil removes File.
	Proxy *Proxy
}

// SetAptProxy makes opts.File hold opts.Proxy's [Proxy.AptConf], 0600
// when a URL holds credentials and 0644 otherwise, owned by root; with
// no proxy it removes the file. The file is written or removed only when
// it differs. Bad options are an *lcm.ParamsError before any command
// runs.
func SetAptProxy(ctx context.Context, h remote.Host, opts AptProxyOptions) (lcm.Result, error) {
	var probs problems
	if opts.File == "" {
		opts.File = AptProxyFile
	}
	if dir, name := path.Split(opts.File); dir != "/etc/apt/apt.conf.d/" || name == "" || path.Clean(opts.File) != opts.File {
		probs.addf("File", "%q is not a file of /etc/apt/apt.conf.d", opts.File)
	}
	probs = append(probs, opts.Proxy.Check("Proxy")...)
	if err := probs.err(); err != nil {
		return lcm.Unchanged, err
	}
	if opts.Proxy == nil {
		existed, err := remote.RemoveFiles(ctx, h, []string{opts.File}, nil, remote.FileOptions{Sudo: true})
		if err != nil || !existed[0] {
			return lcm.Unchanged, err
		}
		return lcm.Changed("removed " + opts.File), nil
	}
	mode := fs.FileMode(0o644)
	if opts.Proxy.HasCredentials() {
		mode = 0o600
	}
	changed, err := h.WriteFile(ctx, opts.File, bytes.NewReader(opts.Proxy.AptConf()), remote.FileOptions{Mode: mode, Owner: "root", Group: "root", Sudo: true})
	if err != nil || !changed {
		return lcm.Unchanged, err
	}
	return lcm.Changed("wrote " + opts.File), nil
}

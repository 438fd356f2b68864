package containers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// curlTool is /usr/bin/curl (7.81) for the registry API: GET or HEAD of
// http(s)://HOST[:PORT]/v2/..., with the host resolved through
// /etc/hosts and the server found on the simulated network. Nothing else
// answers: other addresses refuse connections.
func curlTool(net Network) ubuntu.Tool {
	return func(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
		return curl(net, m, p)
	}
}

// curlResponse is what a registry answers.
type curlResponse struct {
	status  int
	body    string
	headers []string
}

func curl(n Network, m *ubuntu.Machine, p *sshtest.Process) int {
	f, err := flagSpec{
		"f|fail", "s|silent", "S|show-error", "o|output=", "w|write-out=", "m|max-time=", "connect-timeout=",
		"k|insecure", "cacert=", "u|user=", "L|location", "H|header=", "X|request=", "I|head",
		"retry=", "retry-delay=", "retry-max-time=", "retry-connrefused", "fail-with-body",
		"x|proxy=", "noproxy=", "U|proxy-user=",
	}.parse(p.Args[1:], true)
	if err != nil {
		opt := strings.TrimSuffix(strings.TrimPrefix(err.Error(), "unknown flag: "), " (not modelled by internal/sim/containers)")
		fmt.Fprintf(p.Stderr, "curl: option %s: is unknown (not modelled by internal/sim/containers)\ncurl: try 'curl --help' or 'curl --manual' for more information\n", opt)
		return 2
	}
	silent := f.has("silent") && !f.has("show-error")
	progress := !f.has("silent")
	fail := func(code int, format string, args ...any) int {
		if !silent {
			fmt.Fprintf(p.Stderr, "curl: (%d) %s\n", code, fmt.Sprintf(format, args...))
		}
		return code
	}
	for _, name := range []string{"max-time", "connect-timeout"} {
		if v, ok := f.value(name); ok {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				fmt.Fprintf(p.Stderr, "curl: option --%s: expected a proper numerical parameter\ncurl: try 'curl --help' or 'curl --manual' for more information\n", name)
				return 2
			}
		}
	}
	if len(f.args) == 0 {
		fmt.Fprintln(p.Stderr, "curl: no URL specified!\ncurl: try 'curl --help' or 'curl --manual' for more information")
		return 2
	}
	if len(f.args) > 1 {
		fmt.Fprintln(p.Stderr, "curl: several URLs: not modelled by internal/sim/containers")
		return 2
	}
	rawURL := f.args[0]
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		scheme, rest = "http", rawURL
	}
	if scheme != "http" && scheme != "https" {
		return fail(1, "Protocol \"%s\" not supported or disabled in libcurl", scheme)
	}
	hostport, urlPath := rest, "/"
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		hostport, urlPath = rest[:i], rest[i:]
	}
	if i := strings.IndexByte(urlPath, '?'); i >= 0 {
		urlPath = urlPath[:i]
	}
	host, port := splitHostPort(hostport)
	if port == 0 {
		port = 80
		if scheme == "https" {
			port = 443
		}
	}
	method := "GET"
	if f.has("head") {
		method = "HEAD"
	}
	if x, ok := f.value("request"); ok {
		if x != "GET" && x != "HEAD" {
			return fail(2, "-X %s: not modelled by internal/sim/containers", x)
		}
		method = x
	}
	var cas [][]byte
	if file, ok := f.value("cacert"); ok {
		data, err := p.FS.ReadFile(file)
		if err != nil || len(parseCerts(data)) == 0 {
			return fail(77, "error setting certificate verify locations:  CAfile: %s CApath: /etc/ssl/certs", file)
		}
		cas = append(cas, data)
	}
	var auth creds
	if u, ok := f.value("user"); ok {
		user, pw, _ := strings.Cut(u, ":")
		auth = creds{user: user, password: pw, set: true}
	}
	for _, h := range f.values("header") {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(strings.TrimSpace(k), "Authorization") {
			if b64, ok := strings.CutPrefix(strings.TrimSpace(v), "Basic "); ok {
				if raw, err := base64.StdEncoding.DecodeString(b64); err == nil {
					user, pw, _ := strings.Cut(string(raw), ":")
					auth = creds{user: user, password: pw, set: true}
				}
			}
		}
	}

	writeOut := func(code int) {
		w, ok := f.value("write-out")
		if !ok {
			return
		}
		w = strings.NewReplacer(
			"%{http_code}", fmt.Sprintf("%03d", code), "%{response_code}", fmt.Sprintf("%03d", code),
			"%{url_effective}", rawURL, "%{exitcode}", "0", `\n`, "\n", `\t`, "\t", `\r`, "\r",
		).Replace(w)
		fmt.Fprint(p.Stdout, w)
	}
	var resp curlResponse
	ip, resolved := lookupHost(m, host)
	pu, perr := curlProxy(p, f, scheme, host)
	if perr != nil {
		return fail(5, "Couldn't resolve proxy '%s'", perr.Error())
	}
	var srv server
	switch {
	case pu != nil:
		// Through the proxy (curl's CONNECT tunnel for https, an
		// absolute-URL GET for http), which reaches the Internet only.
		if u, ok := f.value("proxy-user"); ok {
			user, pw, _ := strings.Cut(u, ":")
			pu.User = url.UserPassword(user, pw)
		}
		if pu.Port() == "" {
			pu.Host = net.JoinHostPort(pu.Hostname(), "1080") // curl's default proxy port
		}
		h := throughProxy(n, m, pu, scheme, host, port, rawURL)
		switch {
		case h.unresolved:
			writeOut(0)
			return fail(5, "Could not resolve proxy: %s", pu.Hostname())
		case h.status == 0:
			writeOut(0)
			return fail(7, "Failed to connect to %s port %s after 0 ms: Connection refused", pu.Hostname(), pu.Port())
		case h.status != http.StatusOK && scheme == "https":
			writeOut(0)
			return fail(56, "Received HTTP code %d from proxy after CONNECT", h.status)
		case h.status != http.StatusOK:
			resp = curlResponse{status: h.status, body: "<html><body>" + http.StatusText(h.status) + "</body></html>\n", headers: []string{"Server: squid", "Content-Type: text/html;charset=utf-8"}}
		case host == hubHost:
			srv = hub{}
		default:
			status, body := internetGet(m.Catalog(), host, urlPath)
			resp = curlResponse{status: status, body: body, headers: []string{"Content-Type: text/plain"}}
		}
	case !resolved && isInternetHost(host):
		if !directInternet(n) {
			writeOut(0)
			return fail(6, "Could not resolve host: %s", host)
		}
		if host == hubHost {
			srv = hub{}
		} else {
			status, body := internetGet(m.Catalog(), host, urlPath)
			resp = curlResponse{status: status, body: body, headers: []string{"Content-Type: text/plain"}}
		}
	case !resolved:
		writeOut(0)
		return fail(6, "Could not resolve host: %s", host)
	default:
		if srv = reach(n, m, ip, port); srv == nil {
			writeOut(0)
			return fail(7, "Failed to connect to %s port %d after 0 ms: Connection refused", host, port)
		}
	}
	switch {
	case srv == nil:
		// An Internet site's or the proxy's answer.
	case scheme == "https" && !srv.isTLS():
		writeOut(0)
		return fail(35, "error:0A00010B:SSL routines::wrong version number")
	case scheme == "http" && srv.isTLS():
		resp = curlResponse{status: 400, body: "Client sent an HTTP request to an HTTPS server.\n", headers: []string{"Content-Type: text/plain; charset=utf-8"}}
	case scheme == "https" && !f.has("insecure") && srv.caPEM() != nil && !trusts(cas, srv.caPEM()):
		writeOut(0)
		if !silent {
			fmt.Fprintf(p.Stderr, "curl: (60) SSL certificate problem: unable to get local issuer certificate\nMore details here: https://curl.se/docs/sslcerts.html\n\ncurl failed to verify the legitimacy of the server and therefore could not\nestablish a secure connection to it. To learn more about this situation and\nhow to fix it, please visit the web page mentioned above.\n")
		}
		return 60
	default:
		resp = registryAPI(srv, urlPath, auth)
	}

	body := resp.body
	if method == "HEAD" {
		body = ""
		if f.has("head") {
			var b strings.Builder
			fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", resp.status, http.StatusText(resp.status))
			for _, h := range resp.headers {
				b.WriteString(h + "\r\n")
			}
			fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(resp.body))
			body = b.String()
		}
	}
	if resp.status >= 400 && f.has("fail") {
		if progress {
			fmt.Fprint(p.Stderr, curlProgress(0))
		}
		writeOut(resp.status)
		return fail(22, "The requested URL returned error: %d", resp.status)
	}
	if out, ok := f.value("output"); ok && out != "-" {
		if out != "/dev/null" {
			if err := p.FS.WriteFile(out, []byte(body), 0o644); err != nil {
				return fail(23, "Failure writing output to destination")
			}
		}
	} else {
		fmt.Fprint(p.Stdout, body)
	}
	if progress {
		fmt.Fprint(p.Stderr, curlProgress(len(body)))
	}
	writeOut(resp.status)
	return 0
}

// curlProgress is curl's progress meter for a transfer of n bytes, which
// it prints to standard error when not silent.
func curlProgress(n int) string {
	return "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n" +
		"                                 Dload  Upload   Total   Spent    Left  Speed\n" +
		fmt.Sprintf("\r100  %4d  100  %4d    0     0   1000      0 --:--:-- --:--:-- --:--:--  1000\n", n, n)
}

// registryAPI answers a GET of the distribution API: /v2/, /v2/_catalog,
// /v2/NAME/tags/list and /v2/NAME/manifests/REFERENCE.
func registryAPI(srv server, urlPath string, auth creds) curlResponse {
	apiHeader := "Docker-Distribution-Api-Version: registry/2.0"
	jsonResp := func(status int, v any) curlResponse {
		b, _ := json.Marshal(v)
		return curlResponse{status: status, body: string(b) + "\n", headers: []string{"Content-Type: application/json; charset=utf-8", apiHeader}}
	}
	errResp := func(status int, code, msg string, detail any) curlResponse {
		return jsonResp(status, map[string]any{"errors": []any{map[string]any{"code": code, "message": msg, "detail": detail}}})
	}
	if !strings.HasPrefix(urlPath, "/v2") {
		return curlResponse{status: 404, body: "404 page not found\n", headers: []string{"Content-Type: text/plain; charset=utf-8"}}
	}
	if authorize(srv, auth) != authOK {
		r := errResp(401, "UNAUTHORIZED", "authentication required", nil)
		r.headers = append(r.headers, `Www-Authenticate: Basic realm="Registry Realm"`)
		return r
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(urlPath, "/v2"), "/")
	lister, canList := srv.(interface{ Images() []string })
	switch {
	case rest == "":
		return curlResponse{status: 200, body: "{}", headers: []string{"Content-Type: application/json; charset=utf-8", apiHeader}}
	case rest == "_catalog" && canList:
		repos := []string{}
		for _, im := range lister.Images() {
			repo, _, _ := strings.Cut(im, ":")
			if len(repos) == 0 || repos[len(repos)-1] != repo {
				repos = append(repos, repo)
			}
		}
		return jsonResp(200, map[string]any{"repositories": repos})
	case strings.HasSuffix(rest, "/tags/list") && canList:
		name := strings.TrimSuffix(rest, "/tags/list")
		var tags []string
		for _, im := range lister.Images() {
			if repo, tag, _ := strings.Cut(im, ":"); repo == name {
				tags = append(tags, tag)
			}
		}
		if tags == nil {
			return errResp(404, "NAME_UNKNOWN", "repository name not known to registry", map[string]string{"name": name})
		}
		return jsonResp(200, map[string]any{"name": name, "tags": tags})
	case strings.Contains(rest, "/manifests/"):
		i := strings.LastIndex(rest, "/manifests/")
		name, reference := rest[:i], rest[i+len("/manifests/"):]
		im, ok := srv.lookup(name, reference)
		if !ok {
			return errResp(404, "MANIFEST_UNKNOWN", "manifest unknown", map[string]string{"Tag": reference})
		}
		return curlResponse{status: 200, body: string(im.manifestJSON()), headers: []string{
			"Content-Type: application/vnd.docker.distribution.manifest.v2+json", apiHeader, "Docker-Content-Digest: " + im.digest(),
		}}
	}
	return curlResponse{status: 404, body: "404 page not found\n", headers: []string{"Content-Type: text/plain; charset=utf-8"}}
}

// curlProxy is the proxy curl 7.81 uses for a URL, or nil: --proxy, else
// the environment (http_proxy for http, lower case only, as curl ignores
// HTTP_PROXY; https_proxy or HTTPS_PROXY for https; then all_proxy or
// ALL_PROXY), unless --noproxy, else no_proxy or NO_PROXY, names the
// host. curl's no-proxy list (lib/url.c check_noproxy, CURLOPT_NOPROXY(3)
// in 7.81) is comma-separated host names, each matching the name itself
// and its subdomains (a leading dot ignored), IP addresses matching only
// as the same text (CIDR notation is curl 7.86's), and "*" matching all.
func curlProxy(p *sshtest.Process, f flags, scheme, host string) (*url.URL, error) {
	setting, ok := f.value("proxy")
	if !ok {
		env := func(names ...string) string {
			for _, k := range names {
				if v := p.Getenv(k); v != "" {
					return v
				}
			}
			return ""
		}
		if scheme == "https" {
			setting = env("https_proxy", "HTTPS_PROXY")
		} else {
			setting = env("http_proxy")
		}
		if setting == "" {
			setting = env("all_proxy", "ALL_PROXY")
		}
	}
	if setting == "" {
		return nil, nil
	}
	noProxy, ok := f.value("noproxy")
	if !ok {
		noProxy = p.Getenv("no_proxy")
		if noProxy == "" {
			noProxy = p.Getenv("NO_PROXY")
		}
	}
	h := strings.ToLower(strings.Trim(host, "[]"))
	for _, e := range strings.Split(noProxy, ",") {
		e = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(e), "."))
		if e == "*" || e != "" && (h == e || strings.HasSuffix(h, "."+e)) {
			return nil, nil
		}
	}
	pu, err := parseProxyURL(setting)
	if err != nil || pu.Hostname() == "" {
		return nil, errors.New(setting)
	}
	return pu, nil
}

package system_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/system"
)

// decodeProxy decodes body as the value of the key "proxy" and returns
// the problems as "path: message" lines.
func decodeProxy(t *testing.T, body string) (system.Proxy, []string) {
	t.Helper()
	var p system.Proxy
	err := lcm.DecodeParams(json.RawMessage(`{"proxy": `+body+`}`), lcm.DecodeOptions{}, lcm.Param("proxy", &p))
	if err == nil {
		return p, nil
	}
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *lcm.ParamsError", err)
	}
	return p, pe.Lines()
}

func TestProxyAccepts(t *testing.T) {
	for _, body := range []string{
		`{"http_proxy": "http://proxy.example.com:3128"}`,
		`{"https_proxy": "https://proxy.example.com"}`,
		`{"http_proxy": "http://user:p%40ss@10.0.0.1:8080/", "https_proxy": "HTTP://user@[fd00::1]:3128"}`,
		`{"http_proxy": "http://[fd00::1]", "no_proxy": "localhost,127.0.0.1,.example.com,example.org,10.0.0.0/8,fd00::/64,::1"}`,
		`{"http_proxy": "http://p:1", "no_proxy": "192.168.246.0/24,10.0.0.1,registry.example.com"}`,
		`{"http_proxy": "http://p:65535", "no_proxy": ""}`,
	} {
		if _, problems := decodeProxy(t, body); problems != nil {
			t.Errorf("%s: %q", body, problems)
		}
	}
}

func TestProxyFieldErrors(t *testing.T) {
	const (
		port   = "has a port that is not a number from 1 to 65535"
		scheme = "must be an http:// or https:// URL: [user:password@]host[:port]"
	)
	for _, tt := range []struct {
		body string
		want string
	}{
		// The specs' samples print placeholders; they must not pass.
		{`{"http_proxy": "http://user1:password1@host1:port1"}`, "proxy.http_proxy: " + port},
		{`{"https_proxy": "https://user2:password2@host2:port2"}`, "proxy.https_proxy: " + port},
		{`{"http_proxy": "http://p:0"}`, "proxy.http_proxy: " + port},
		{`{"http_proxy": "http://p:65536"}`, "proxy.http_proxy: " + port},
		{`{"http_proxy": "http://p:080"}`, "proxy.http_proxy: " + port},
		{`{"http_proxy": "http://p:"}`, "proxy.http_proxy: " + port},
		{`{"http_proxy": "proxy.example.com:3128"}`, "proxy.http_proxy: " + scheme},
		{`{"http_proxy": "socks5://p:1080"}`, "proxy.http_proxy: " + scheme},
		{`{"http_proxy": "http://"}`, "proxy.http_proxy: must name a host: http://[user:password@]host[:port]"},
		{`{"http_proxy": "http://user:secret@:3128"}`, "proxy.http_proxy: must name a host: http://[user:password@]host[:port]"},
		{`{"http_proxy": "http://bad_host:3128"}`, "proxy.http_proxy: must name a host that is an IP address or a DNS name"},
		{`{"http_proxy": "http://p:3128/path"}`, "proxy.http_proxy: must not have a path, query or fragment: http://[user:password@]host[:port]"},
		{`{"http_proxy": "http://p:3128?q"}`, "proxy.http_proxy: must not have a path, query or fragment: http://[user:password@]host[:port]"},
		{`{"http_proxy": "http://u:50%zz@p:3128"}`, "proxy.http_proxy: is not a valid URL (check the escaping of user and password: % must be written %25)"},
		{`{"http_proxy": "http://u:pa ss@p:3128"}`, "proxy.http_proxy: must be a URL without quotes, backslashes, '$', '`', white space or control characters"},
		{`{"http_proxy": "http://u:$(reboot)@p:3128"}`, "proxy.http_proxy: must be a URL without quotes, backslashes, '$', '`', white space or control characters"},
		{`{"no_proxy": "a"}`, "proxy: needs http_proxy or https_proxy"},
		{`{"http_proxy": "", "https_proxy": ""}`, "proxy: needs http_proxy or https_proxy"},
		{`{"http_proxy": "http://p:1", "no_proxy": "a,,b"}`, `proxy.no_proxy: entry 2 ("") is empty: no_proxy is a comma-separated list without empty entries`},
		{`{"http_proxy": "http://p:1", "no_proxy": "a, b"}`, `proxy.no_proxy: entry 2 (" b") must not hold quotes, backslashes, '$', '` + "`" + `', white space or control characters`},
		{`{"http_proxy": "http://p:1", "no_proxy": "10.0.0.0/33"}`, `proxy.no_proxy: entry 1 ("10.0.0.0/33") is not a CIDR like 10.0.0.0/8`},
		{`{"http_proxy": "http://p:1", "no_proxy": "*"}`, `proxy.no_proxy: entry 1 ("*") must be a host name, a domain (optionally with a leading dot), an IP address or a CIDR`},
		{`{"http_proxy": "http://p:1", "no_proxy": "host:8080"}`, `proxy.no_proxy: entry 1 ("host:8080") must be a host name, a domain (optionally with a leading dot), an IP address or a CIDR`},
		{`{"http_proxy": "http://p:1", "no_proxy": "fe80::1%eth0"}`, `proxy.no_proxy: entry 1 ("fe80::1%eth0") is an IPv6 address with a zone, which no_proxy cannot match`},
		{`{"http_proxy": 3128}`, "proxy.http_proxy: expected a string, got a number"},
	} {
		_, got := decodeProxy(t, tt.body)
		if strings.Join(got, "\n") != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.body, got, tt.want)
		}
	}
}

// TestProxyNeverEchoesURLs: a proxy URL may carry a password, so no
// problem quotes any part of it.
func TestProxyNeverEchoesURLs(t *testing.T) {
	for _, url := range []string{
		"http://user1:password1@host1:port1",
		"http://user1:password1@bad_host:3128",
		"http://user1:password1@p:3128/password1",
		"http://user1:password1%zz@p:3128",
		"ftp://user1:password1@p",
		"http://user1:password1 @p",
	} {
		body, _ := json.Marshal(map[string]string{"http_proxy": url, "https_proxy": url})
		_, problems := decodeProxy(t, string(body))
		if len(problems) != 2 {
			t.Errorf("%s: problems %q, want one per URL", url, problems)
		}
		for _, p := range problems {
			if strings.Contains(p, "password1") || strings.Contains(p, "user1") {
				t.Errorf("%s: problem %q echoes the URL", url, p)
			}
		}
	}
}

func TestProxyNoProxyEntries(t *testing.T) {
	p, problems := decodeProxy(t, `{"http_proxy": "http://p:1", "no_proxy": "a,10.0.0.0/8"}`)
	if problems != nil {
		t.Fatal(problems)
	}
	if got := p.NoProxyEntries(); strings.Join(got, "|") != "a|10.0.0.0/8" {
		t.Errorf("NoProxyEntries = %q", got)
	}
	if got := (system.Proxy{}).NoProxyEntries(); got != nil {
		t.Errorf("empty NoProxyEntries = %q, want nil", got)
	}
}

// A step's check of a *Proxy (Check) and parameter validation (Validate)
// are one: they accept and refuse the same proxies, with the same
// reasons. A ';' in a password (an RFC 3986 sub-delim) is accepted by
// both, and rendered verbatim.
func TestProxyCheckIsValidate(t *testing.T) {
	for _, body := range []string{
		`{"http_proxy": "http://user:pa;ss@proxy.example.com:3128"}`,
		`{"http_proxy": "http://us;er:p#w@proxy.example.com:3128"}`,
		`{"http_proxy": "http://user:p$w@proxy.example.com:3128"}`,
		`{"https_proxy": "https://p:1", "no_proxy": "a b"}`,
		`{"no_proxy": "localhost"}`,
		`{"http_proxy": "http://p:3128/` + strings.Repeat("x", 1000) + `"}`,
	} {
		_, problems := decodeProxy(t, body)
		var p system.Proxy
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, pr := range p.Check("Proxy") {
			msgs = append(msgs, pr.Message)
		}
		var want []string
		for _, l := range problems {
			_, msg, _ := strings.Cut(l, ": ")
			want = append(want, msg)
		}
		if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\nCheck    %q\nValidate %q", body, msgs, want)
		}
	}
	p, problems := decodeProxy(t, `{"http_proxy": "http://user:pa;ss@proxy.example.com:3128"}`)
	if problems != nil || !strings.Contains(string(p.AptConf()), `"http://user:pa;ss@proxy.example.com:3128";`) ||
		!strings.Contains(string(p.EnvFile()), "\nhttp_proxy=http://user:pa;ss@proxy.example.com:3128\n") {
		t.Errorf("%q\n%s\n%s", problems, p.AptConf(), p.EnvFile())
	}
}

package containers

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http/httpproxy"
)

// proxyFor is checked against the code containerd and dockerd run:
// golang.org/x/net/http/httpproxy's Config.ProxyFunc (net/http's
// ProxyFromEnvironment), on a network without machines, where the two
// agree on loopback addresses too.
func TestProxyForAsGoHTTPProxy(t *testing.T) {
	const p = "http://user:pw@proxy.corp:3128"
	noProxies := []string{
		"", "*", "10.0.0.0/8", "10.0.0.7", "10.0.0.7:5000", "10.0.0.7:443", "corp.example", ".corp.example",
		"*.corp.example", "registry.corp.example:5000", "example", "localhost,127.0.0.1", " registry.corp.example , other",
		"[fd00::7]", "fd00::/64", "REGISTRY.corp.example",
	}
	targets := []struct {
		scheme, host string
		port         int
	}{
		{"https", "10.0.0.7", 5000}, {"http", "10.0.0.7", 5000}, {"https", "10.0.0.7", 0}, {"https", "10.1.2.3", 443},
		{"https", "registry.corp.example", 5000}, {"https", "corp.example", 0}, {"https", "xcorp.example", 0},
		{"https", "registry-1.docker.io", 0}, {"https", "localhost", 5000}, {"https", "127.0.0.1", 5000},
		{"https", "fd00::7", 5000}, {"http", "registry.corp.example", 80},
	}
	n := &StaticNetwork{}
	for _, np := range noProxies {
		cfg := httpproxy.Config{HTTPProxy: p, HTTPSProxy: p, NoProxy: np}
		goFunc := cfg.ProxyFunc()
		ours := proxyConfig{HTTP: p, HTTPS: p, NoProxy: np}
		for _, tg := range targets {
			host := tg.host
			if tg.port != 0 {
				host = joinHostPort(tg.host, tg.port)
			} else if len(tg.host) > 0 && tg.host[0] != '[' && strings.Contains(tg.host, ":") {
				host = "[" + tg.host + "]"
			}
			u := &url.URL{Scheme: tg.scheme, Host: host, Path: "/v2/"}
			want, err := goFunc(u)
			if err != nil {
				t.Fatal(err)
			}
			got := ours.proxyFor(n, tg.scheme, tg.host, tg.port)
			if (want == nil) != (got == nil) {
				t.Errorf("NO_PROXY=%q, %s: httpproxy proxies: %v, ours: %v", np, u, want != nil, got != nil)
			}
		}
	}
}

// goProxyFailure words a proxy's refusal as net/http's Transport does:
// checked against a real client and a proxy that answers as a Proxy.
func TestGoProxyFailureAsNetHTTP(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusServiceUnavailable
		if r.Header.Get("Proxy-Authorization") == "" {
			status = http.StatusProxyAuthRequired
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Write([]byte(proxyAnswer(status)))
		conn.Close()
	}))
	defer proxy.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	for _, c := range []struct {
		proxy, target string
		h             hop
	}{
		{proxy.URL, "https://10.0.0.7:5000/v2/", hop{status: 407}},
		{strings.Replace(proxy.URL, "http://", "http://u:p@", 1), "https://10.0.0.7:5000/v2/", hop{status: 503}},
		{"http://" + closedAddr, "https://10.0.0.7:5000/v2/", hop{proxyAddr: closedAddr}},
	} {
		pu, _ := url.Parse(c.proxy)
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		resp, err := client.Get(c.target)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s through %s: no error", c.target, c.proxy)
		}
		if want := fmt.Sprintf("Get %q: %s", c.target, goProxyFailure(c.h, "https").goErr()); err.Error() != want {
			t.Errorf("net/http: %v\nfake:     %s", err, want)
		}
	}
	// A plain-HTTP request gets the proxy's answer as its response.
	pu, _ := url.Parse(strings.Replace(proxy.URL, "http://", "http://u:p@", 1))
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}).Get("http://10.0.0.7:5000/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if f := goProxyFailure(hop{status: resp.StatusCode}, "http"); f == nil || f.status != 503 {
		t.Errorf("plain HTTP: status %d, fake %+v", resp.StatusCode, f)
	}
}

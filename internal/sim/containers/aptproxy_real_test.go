package containers_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

// TestAptProxyErrorsOnTheRealAptGet checks the fake apt's proxy failures
// against the real apt-get of this machine, in an apt root of the test's
// own: a proxy that answers a plain-HTTP GET for a private address with
// 503, one that wants credentials (a CONNECT answered 407), and a proxy
// address where nothing listens. Skipped without apt-get or root.
func TestAptProxyErrorsOnTheRealAptGet(t *testing.T) {
	aptGet, err := exec.LookPath("apt-get")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs apt-get and root")
	}
	// The real proxy: squid's answers, as the fake Proxy gives them.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		head := containers.ProxyAnswer(http.StatusServiceUnavailable)
		if r.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("u:p")) {
			head = containers.ProxyAnswer(http.StatusProxyAuthRequired)
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Write([]byte(head))
		conn.Close()
	}))
	defer proxy.Close()
	proxyAddr := proxy.Listener.Addr().(*net.TCPAddr)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{"var/lib/dpkg", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/apt.conf.d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status := filepath.Join(root, "var/lib/dpkg/status")
	os.WriteFile(status, nil, 0o644)
	realUpdate := func(source, proxyURL string) (string, string, int) {
		t.Helper()
		os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte(source), 0o644)
		cmd := exec.Command(aptGet, "-o", "Dir="+root, "-o", "Dir::State::status="+status, "-o", "APT::Sandbox::User=root",
			"-o", "Acquire::Retries=0", "-o", "Acquire::http::Proxy="+proxyURL, "-o", "Acquire::https::Proxy="+proxyURL, "update")
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}

	// The fake: a machine behind the same proxy, at the same address.
	w := newWorld(t)
	w.net.SetDirectInternet(false)
	w.net.AddProxy("127.0.0.1", proxyAddr.Port, containers.NewProxy(containers.ProxyOptions{Username: "u", Password: "p"}))
	n := w.node("vm", "10.0.0.5")
	fakeUpdate := func(source, proxyURL string) result {
		t.Helper()
		n.write("/etc/apt/sources.list", source)
		return n.root("apt-get -o Acquire::Retries=0 -o Acquire::http::Proxy=" + proxyURL + " -o Acquire::https::Proxy=" + proxyURL + " update")
	}

	proxyURL := "http://" + proxyAddr.String()
	authURL := "http://u:p@" + proxyAddr.String()
	for _, c := range []struct{ what, source, proxy string }{
		{"503 for a plain-HTTP GET", "deb http://10.0.0.7:8080/repo/ /\n", authURL},
		{"407 for a plain-HTTP GET", "deb http://10.0.0.7:8080/repo/ /\n", proxyURL},
		{"407 for a CONNECT", "deb https://10.0.0.7:8443/repo/ /\n", proxyURL},
		{"503 for a CONNECT", "deb https://10.0.0.7:8443/repo/ /\n", authURL},
		{"no proxy there", "deb http://10.0.0.7:8080/repo/ /\n", "http://127.0.0.1:" + strconv.Itoa(closedPort)},
	} {
		stdout, stderr, code := realUpdate(c.source, c.proxy)
		got := fakeUpdate(c.source, c.proxy)
		errLine := func(s string) string {
			for _, l := range strings.Split(s, "\n") {
				if strings.HasPrefix(l, "  ") {
					return l
				}
			}
			return ""
		}
		if got.code != code || got.stderr != stderr || errLine(got.stdout) != errLine(stdout) {
			t.Errorf("%s:\nreal apt-get: exit %d\n%s%s\nfake: exit %d\n%s%s", c.what, code, stdout, stderr, got.code, got.stdout, got.stderr)
		}
	}
}

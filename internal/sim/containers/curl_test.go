package containers_test

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

func TestCurlAgainstRegistries(t *testing.T) {
	w := newWorld(t)
	reg := registryVM(w, "192.168.0.10")
	ca := containers.GenerateCA("test CA")
	tlsReg := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca, Username: "user01", Password: "s3cret"})
	w.net.AddRegistry("192.168.0.20", 443, tlsReg)
	n := w.node("client", "192.168.0.11")
	n.ok("echo '192.168.0.20 registry.example.com' >> /etc/hosts")
	n.write("/tmp/ca.crt", string(ca))

	for _, c := range []struct {
		cmd            string
		stdout, stderr string
		code           int
	}{
		// The registry steps' health check, from the registry VM and
		// from elsewhere.
		{"curl -sS -o /dev/null -w '%{http_code}' --max-time 5 http://192.168.0.10:5000/v2/", "200", "", 0},
		{"curl -fsS http://192.168.0.10:5000/v2/", "{}", "", 0},
		{"curl -fsS http://192.168.0.10:5000/v2/_catalog", "{\"repositories\":[\"app\"]}\n", "", 0},
		{"curl -fsS http://192.168.0.10:5000/v2/app/tags/list", "{\"name\":\"app\",\"tags\":[\"1\"]}\n", "", 0},
		{"curl -sS -o /dev/null -w '%{http_code}' http://192.168.0.10:5000/v2/nosuch/manifests/1", "404", "", 0},
		{"curl -sS -w '%{http_code}' http://192.168.0.10:5001/v2/", "000", "curl: (7) Failed to connect to 192.168.0.10 port 5001 after 0 ms: Connection refused\n", 7},
		{"curl -s http://192.168.0.10:5001/v2/", "", "", 7},
		{"curl -sS http://registry.local:5000/v2/", "", "curl: (6) Could not resolve host: registry.local\n", 6},
		{"curl -sS https://192.168.0.10:5000/v2/", "", "curl: (35) error:0A00010B:SSL routines::wrong version number\n", 35},
		// HTTPS: the CA, then basic auth.
		{"curl -sS https://registry.example.com/v2/", "", "curl: (60) SSL certificate problem: unable to get local issuer certificate\nMore details here: https://curl.se/docs/sslcerts.html\n\ncurl failed to verify the legitimacy of the server and therefore could not\nestablish a secure connection to it. To learn more about this situation and\nhow to fix it, please visit the web page mentioned above.\n", 60},
		{"curl -fsS --cacert /tmp/ca.crt https://registry.example.com/v2/", "", "curl: (22) The requested URL returned error: 401\n", 22},
		{"curl -sS -o /dev/null -w '%{http_code}' --cacert /tmp/ca.crt https://registry.example.com/v2/", "401", "", 0},
		{"curl -fsS -k -u user01:wrong https://registry.example.com/v2/", "", "curl: (22) The requested URL returned error: 401\n", 22},
		{"curl -fsS --cacert /tmp/ca.crt -u user01:s3cret https://registry.example.com/v2/", "{}", "", 0},
		{"curl -sS -o /dev/null -w '%{http_code}\\n' -u user01:s3cret http://registry.example.com:443/v2/", "400\n", "", 0},
		{"curl -sS --cacert /tmp/nosuch https://registry.example.com/v2/", "", "curl: (77) error setting certificate verify locations:  CAfile: /tmp/nosuch CApath: /etc/ssl/certs\n", 77},
		{"curl -sS http://192.168.0.10:5000/other", "404 page not found\n", "", 0},
		{"curl -sS --frobnicate http://192.168.0.10:5000/v2/", "", "curl: option --frobnicate: is unknown (not modelled by internal/sim/containers)\ncurl: try 'curl --help' or 'curl --manual' for more information\n", 2},
	} {
		r := n.run(false, c.cmd)
		if r.stdout != c.stdout || r.stderr != c.stderr || r.code != c.code {
			t.Errorf("%s:\n got exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", c.cmd, r.code, r.stdout, r.stderr, c.code, c.stdout, c.stderr)
		}
	}
	// Without -s, curl shows its progress meter on standard error.
	if r := n.run(false, "curl -o /dev/null http://192.168.0.10:5000/v2/"); r.code != 0 || r.stderr == "" {
		t.Errorf("progress meter: %+v", r)
	}
	// localhost on the registry VM is its own registry.
	if got := reg.ok("curl -fsS http://localhost:5000/v2/"); got != "{}" {
		t.Errorf("localhost: %q", got)
	}
	reg.ok("docker stop private_registry")
	if got := n.run(false, "curl -sS -o /dev/null -w '%{http_code}' http://192.168.0.10:5000/v2/"); got.code != 7 || got.stdout != "000" {
		t.Errorf("stopped registry: %+v", got)
	}
}

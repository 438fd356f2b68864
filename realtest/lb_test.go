package realtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/lb"
)

// The load balancer's configurations against the real HAProxy (Debian
// 12's haproxy 2.6; Ubuntu 22.04's load balancer VM runs 2.4, whose
// checks of these files are the same: facts §3.1, HAProxy's src/check.c
// and src/server.c at v2.4.0 and v2.6.0).

const haproxyProgram = "/usr/sbin/haproxy"

// lbGoldenDir holds lb.Render's outputs as package lb's golden tests
// keep them (lb/testdata/render): every one is checked here.
const lbGoldenDir = "../lb/testdata/render"

// haproxyCheck runs `haproxy -c -f FILE` on content and returns its exit
// status and standard error with the process IDs of its [ALERT] and
// [NOTICE] prefixes replaced by "PID".
func haproxyCheck(t *testing.T, content []byte) (int, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(f, content, 0o644); err != nil {
		t.Fatal(err)
	}
	rc, _, stderr := runCommand(t, exec.Command(need(t, haproxyProgram), "-c", "-f", f))
	return rc, pidRE.ReplaceAllString(strings.ReplaceAll(string(stderr), f, "FILE"), "(PID)")
}

var pidRE = regexp.MustCompile(`\(\d+\)`)

// haproxyAccepts fails t unless HAProxy accepts content with no alert and
// no warning.
func haproxyAccepts(t *testing.T, name string, content []byte) {
	t.Helper()
	rc, stderr := haproxyCheck(t, content)
	if rc != 0 || strings.Contains(stderr, "[ALERT]") || strings.Contains(stderr, "[WARNING]") {
		t.Errorf("%s: haproxy -c exits %d:\n%s\n%s", name, rc, stderr, content)
	}
}

// Every configuration lb.Render wrote into package lb's golden files, and
// those the test renders itself (one master or three, without workers,
// with or without NodePort Services, IPv6, another API port), pass
// `haproxy -c` without a warning.
func TestLBRenderedConfigurationsPassHAProxy(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join(lbGoldenDir, "*.golden"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden files in %s: %v", lbGoldenDir, err)
	}
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		haproxyAccepts(t, g, b)
	}
	srv := func(prefix string, n int, addr func(i int) string) []lb.Server {
		var out []lb.Server
		for i := range n {
			out = append(out, lb.Server{Name: fmt.Sprintf("%s-%d", prefix, i+1), Address: addr(i)})
		}
		return out
	}
	v4 := func(base int) func(int) string { return func(i int) string { return fmt.Sprintf("10.0.0.%d", base+i) } }
	v6 := func(base int) func(int) string { return func(i int) string { return fmt.Sprintf("fd00::%x", base+i) } }
	services := []lb.Service{
		{Namespace: "default", Name: "web", NodePorts: []int{30080, 30443}},
		{Namespace: "cnf", Name: "sip", NodePorts: []int{30060}},
		{Namespace: "kube-system", Name: "dns", NodePorts: []int{30053}},
	}
	for _, masters := range []int{1, 3} {
		for _, workers := range []int{0, 12} {
			for _, svcs := range [][]lb.Service{nil, services[:1], services} {
				for fam, addr := range map[string]func(int) func(int) string{"ipv4": v4, "ipv6": v6} {
					c := lb.NewConfig(srv("master", masters, addr(5)), srv("worker", workers, addr(21)))
					c.Services = svcs
					b, err := lb.Render(c)
					if err != nil {
						t.Fatal(err)
					}
					haproxyAccepts(t, fmt.Sprintf("%d masters, %d workers, %d services, %s", masters, workers, len(svcs), fam), b)
				}
			}
		}
	}
	c := lb.NewConfig(srv("master", 1, v4(5)), nil)
	c.APIPort = 16443
	b, err := lb.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	haproxyAccepts(t, "API port 16443", b)
}

// sampleLBScript is the sample VNF package's load balancer script.
const sampleLBScript = "../samples/package/Scripts/ExternalLB_installation.sh"

// runSampleScript runs the sample package's script with the real bash and
// the reference's arguments, sudo, apt-get and systemctl stubbed (the
// test installs and starts nothing) and install(1) catching the
// haproxy.cfg it puts in place; it returns that file.
func runSampleScript(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	bin := t.TempDir()
	out := filepath.Join(t.TempDir(), "haproxy.cfg")
	stubs := map[string]string{
		"sudo":      "#!/bin/sh\nexec \"$@\"\n",
		"apt-get":   "#!/bin/sh\nexit 0\n",
		"systemctl": "#!/bin/sh\nexit 0\n",
		// install -m MODE SRC /etc/haproxy/haproxy.cfg
		"install": "#!/bin/sh\n[ \"$1\" = -m ] && [ \"$4\" = /etc/haproxy/haproxy.cfg ] || { echo \"install: unexpected $*\" >&2; exit 1; }\nexec cp -- \"$3\" \"$LB_OUT\"\n",
	}
	for name, content := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", append([]string{script}, args...)...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "LC_ALL=C", "LB_OUT=" + out, "TMPDIR=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.Bytes())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the script wrote no haproxy.cfg: %v\n%s", err, stderr.Bytes())
	}
	return b
}

// What the sample package's script writes, run by the real bash with the
// reference's -m and -w, is refused by the real HAProxy: a "server nodeN
// IP check" without a port. These are the words lb.ScriptError reports
// and the simulated haproxy -c repeats.
func TestLBSampleScriptsConfigurationIsRefused(t *testing.T) {
	cfg := runSampleScript(t, sampleLBScript, "-m", "10.0.0.5,10.0.0.6,10.0.0.7", "-w", "10.0.0.21")
	backends := lb.Backends(cfg)
	if len(backends[lb.NodePortBackend]) != 4 || len(backends[lb.APIBackend]) != 3 {
		t.Fatalf("the script wrote:\n%s", cfg)
	}
	rc, stderr := haproxyCheck(t, cfg)
	var alerts []string
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "[ALERT]") {
			alerts = append(alerts, strings.TrimRight(line, "\n"))
		}
	}
	want := []string{
		"[ALERT]    (PID) : config : config: backend 'kubernetes-nodeport': server 'node1' has neither service port nor check port nor tcp_check rule 'connect' with port information.",
		"[ALERT]    (PID) : config : config: backend 'kubernetes-nodeport': server 'node2' has neither service port nor check port nor tcp_check rule 'connect' with port information.",
		"[ALERT]    (PID) : config : config: backend 'kubernetes-nodeport': server 'node3' has neither service port nor check port nor tcp_check rule 'connect' with port information.",
		"[ALERT]    (PID) : config : config: backend 'kubernetes-nodeport': server 'node4' has neither service port nor check port nor tcp_check rule 'connect' with port information.",
		"[ALERT]    (PID) : config : Fatal errors found in configuration.",
	}
	if rc != 1 || strings.Join(alerts, "\n") != strings.Join(want, "\n") {
		t.Errorf("haproxy -c exits %d:\n%s\nwant exit 1 and:\n%s", rc, stderr, strings.Join(want, "\n"))
	}

	// The same script with the one fix lb.ScriptError suggests (no check
	// on a server without a port) passes.
	b, err := os.ReadFile(sampleLBScript)
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(b), `echo "    server node$i $ip check"`, `echo "    server node$i $ip"`, 1)
	if fixed == string(b) {
		t.Fatal("the sample script changed: the test's fix no longer applies")
	}
	f := filepath.Join(t.TempDir(), "fixed.sh")
	if err := os.WriteFile(f, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	haproxyAccepts(t, "the fixed script's file", runSampleScript(t, f, "-m", "10.0.0.5", "-w", "10.0.0.21,10.0.0.22"))
}

// The other mistakes the reference's line edits make, which lb's
// validation refuses before anything runs: a duplicate server name, a
// server appended after the last section (a frontend), a bare IPv6
// address. The real words, which the simulated haproxy -c repeats.
func TestLBHAProxyRefusals(t *testing.T) {
	const head = "defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 1m\n    timeout server 1m\n"
	for _, tc := range []struct {
		name, cfg, want string
	}{
		{"duplicate name", head + "backend b\n    server w1 10.0.0.21\n    server w1 10.0.0.22\n",
			"[ALERT]    (PID) : config : parsing [FILE:8] : backend 'b', another server named 'w1' was already defined at line 7, please use distinct names."},
		{"server after a frontend", head + "backend b\n    server w1 10.0.0.21\nfrontend f\n    bind *:30080\n    default_backend b\n    server w2 10.0.0.22\n",
			"[ALERT]    (PID) : config : [FILE:11] : parsing [FILE:11] : 'server' not allowed because frontend 'f' has no backend capability."},
		{"bare IPv6", head + "backend b\n    server w1 fd00::5\n",
			"[ALERT]    (PID) : config : [FILE:7] : 'server b/w1' : could not resolve address 'fd00:'."},
	} {
		rc, stderr := haproxyCheck(t, []byte(tc.cfg))
		if rc != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: haproxy -c exits %d:\n%s\nwant exit 1 and %q", tc.name, rc, stderr, tc.want)
		}
	}
}

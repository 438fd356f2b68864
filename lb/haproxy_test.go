package lb_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
)

func servers(prefix string, addrs ...string) []lb.Server {
	var out []lb.Server
	for i, a := range addrs {
		out = append(out, lb.Server{Name: prefix + "-" + string(rune('1'+i)), Address: a})
	}
	return out
}

// renderCases are the configurations whose rendering is kept in
// testdata/render/NAME.golden; realtest checks every one of those files
// with the real haproxy -c.
var renderCases = []struct {
	name string
	cfg  lb.Config
}{
	{"one-master", lb.NewConfig(servers("master", "10.0.0.5"), nil)},
	{"one-master-two-workers", lb.NewConfig(servers("master", "10.0.0.5"), servers("worker", "10.0.0.21", "10.0.0.22"))},
	{"three-masters-nodeports", func() lb.Config {
		c := lb.NewConfig(servers("master", "10.0.0.5", "10.0.0.6", "10.0.0.7"), servers("worker", "10.0.0.21", "10.0.0.22"))
		c.Services = []lb.Service{
			{Namespace: "default", Name: "web", NodePorts: []int{30443, 30080}},
			{Namespace: "cnf", Name: "sip", NodePorts: []int{30060}},
		}
		return c
	}()},
	{"ipv6-other-port", func() lb.Config {
		c := lb.NewConfig(servers("master", "fd00::5"), servers("worker", "fd00::21"))
		c.APIPort = 16443
		c.Services = []lb.Service{{Namespace: "default", Name: "web", NodePorts: []int{30080}}}
		return c
	}()},
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lb.Render(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "render/"+tc.name, got)
		})
	}
}

// The same cluster given in another order renders the same bytes, so a
// hook that lists the nodes in Heat's order of the day reloads nothing.
func TestRenderIgnoresOrder(t *testing.T) {
	c := renderCases[2].cfg
	want, err := lb.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	r := c.AddNodes() // a copy
	slices.Reverse(r.Masters)
	slices.Reverse(r.Nodes)
	slices.Reverse(r.Services)
	slices.Reverse(r.Services[1].NodePorts)
	got, err := lb.Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("reordered:\n%s", golden.Diff(string(want), string(got)))
	}
	if c.Masters[0].Name != "master-1" || c.Services[0].NodePorts[0] != 30443 {
		t.Error("the copy shares slices with the original")
	}
}

func TestRenderWritesExactlyTheServers(t *testing.T) {
	got, err := lb.Render(renderCases[2].cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := lb.Backends(got)
	want := map[string][]lb.Server{
		lb.APIBackend: {{Name: "master-1", Address: "10.0.0.5:6443"}, {Name: "master-2", Address: "10.0.0.6:6443"}, {Name: "master-3", Address: "10.0.0.7:6443"}},
		lb.NodePortBackend: {{Name: "master-1", Address: "10.0.0.5"}, {Name: "master-2", Address: "10.0.0.6"}, {Name: "master-3", Address: "10.0.0.7"},
			{Name: "worker-1", Address: "10.0.0.21"}, {Name: "worker-2", Address: "10.0.0.22"}},
	}
	if len(b) != len(want) || !slices.Equal(b[lb.APIBackend], want[lb.APIBackend]) || !slices.Equal(b[lb.NodePortBackend], want[lb.NodePortBackend]) {
		t.Errorf("backends %v, want %v", b, want)
	}
	for _, line := range []string{"frontend cnf_sip\n", "\tbind *:30060\n", "frontend default_web\n", "\tbind *:30080\n\tbind *:30443\n\tdefault_backend kubernetes-nodeport\n", "\tbind *:8383\n"} {
		if !strings.Contains(string(got), line) {
			t.Errorf("no %q in:\n%s", line, got)
		}
	}
	// No "check" without a port: HAProxy refuses it.
	for line := range strings.Lines(string(got)) {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == "server" && f[3] == "check" && !strings.Contains(f[2], ":") {
			t.Errorf("a check without a port: %q", line)
		}
	}
}

// Removing worker-1 removes worker-1 only, never worker-12 (Tacker's
// grep by substring could); adding replaces by exact name.
func TestAddAndRemoveNodesByExactName(t *testing.T) {
	workers := []lb.Server{{Name: "worker-1", Address: "10.0.0.21"}, {Name: "worker-12", Address: "10.0.0.32"}, {Name: "worker-11", Address: "10.0.0.31"}}
	c := lb.NewConfig(servers("master", "10.0.0.5"), workers)
	got := c.RemoveNodes("worker-1", "worker-99")
	var names []string
	for _, s := range got.Nodes {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"master-1", "worker-12", "worker-11"}) {
		t.Errorf("after removing worker-1: %v", names)
	}
	if len(c.Nodes) != 4 {
		t.Errorf("RemoveNodes changed its receiver: %v", c.Nodes)
	}
	got = got.AddNodes(lb.Server{Name: "worker-12", Address: "10.0.0.40"}, lb.Server{Name: "worker-1", Address: "10.0.0.21"})
	want := []lb.Server{{Name: "master-1", Address: "10.0.0.5"}, {Name: "worker-12", Address: "10.0.0.40"}, {Name: "worker-11", Address: "10.0.0.31"}, {Name: "worker-1", Address: "10.0.0.21"}}
	if !slices.Equal(got.Nodes, want) {
		t.Errorf("after adding: %v", got.Nodes)
	}
	if !slices.Equal(got.Masters, c.Masters) {
		t.Errorf("masters changed: %v", got.Masters)
	}
}

func TestValidateNamesEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  lb.Config
		want []string
	}{{
		name: "nothing",
		cfg:  lb.Config{},
		want: []string{"Masters: must name at least one master"},
	}, {
		name: "servers",
		cfg: lb.Config{
			APIPort: 70000,
			Masters: []lb.Server{{Name: "m 1", Address: "10.0.0.5"}, {Name: "m2", Address: "10.0.0.300"}, {Name: "m3", Address: "fe80::1%eth0"}},
			Nodes:   []lb.Server{{Name: "w1", Address: "10.0.0.21"}, {Name: "w1", Address: "10.0.0.22"}, {Name: "w3", Address: "::ffff:10.0.0.21"}, {Name: "-w", Address: "0.0.0.0"}},
		},
		want: []string{
			"APIPort: must be a port from 1 to 65535, got 70000",
			`Masters[0].Name: "m 1" is not a server name (letters, digits, '.', '_', ':' and '-', starting with a letter or digit, at most 253)`,
			`Masters[1].Address: "10.0.0.300" is not a node's IP address`,
			`Masters[2].Address: "fe80::1%eth0" is not a node's IP address`,
			`Nodes[1].Name: "w1" is also Nodes[0]'s name: server names are unique in a backend`,
			"Nodes[2].Address: ::ffff:10.0.0.21 is also Nodes[0]'s address",
			`Nodes[3].Name: "-w" is not a server name (letters, digits, '.', '_', ':' and '-', starting with a letter or digit, at most 253)`,
			`Nodes[3].Address: "0.0.0.0" is not a node's IP address`,
		},
	}, {
		name: "services",
		cfg: lb.Config{
			Masters: servers("master", "10.0.0.5"),
			Services: []lb.Service{
				{Namespace: "Default", Name: "web_1", NodePorts: []int{30080, 8383}},
				{Namespace: "default", Name: "api", NodePorts: []int{30080, 0}},
				{Namespace: "default", Name: "api"},
			},
		},
		want: []string{
			"Nodes: must name the nodes the 3 Services' node ports forward to",
			`Services[0].Namespace: "Default" is not a namespace name (RFC 1123 label)`,
			`Services[0].Name: "web_1" is not a Service name (RFC 1123 label)`,
			"Services[0].NodePorts[1]: port 8383 is also APIPort's: one port, one frontend",
			"Services[1].NodePorts[0]: port 30080 is also Services[0].NodePorts[0]'s: one port, one frontend",
			"Services[1].NodePorts[1]: must be a port from 1 to 65535, got 0",
			"Services[2]: default/api is also Services[1]",
			"Services[2].NodePorts: must name at least one node port",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *lcm.ParamsError", err)
			}
			if got := pe.Lines(); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if b, err := lb.Render(tc.cfg); err == nil || b != nil {
				t.Errorf("Render: %q, %v", b, err)
			}
		})
	}
}

// Backends reads the reference's appended sections as HAProxy groups
// them: a server line belongs to the section above it.
func TestBackendsReadsAScriptsFile(t *testing.T) {
	cfg := `global
	log /dev/log local0
defaults
    mode tcp
frontend kubernetes-apiserver
    bind *:8383
    default_backend kubernetes-apiserver
backend kubernetes-apiserver
    balance roundrobin
    server  master5 10.0.0.5:6443 check # the first master
backend kubernetes-nodeport
    server  master5 10.0.0.5 check
    server  worker21 10.0.0.21 check
frontend default_web
    bind *:30080
    default_backend kubernetes-nodeport
`
	got := lb.Backends([]byte(cfg))
	if len(got) != 2 || !slices.Equal(got["kubernetes-apiserver"], []lb.Server{{Name: "master5", Address: "10.0.0.5:6443"}}) ||
		!slices.Equal(got["kubernetes-nodeport"], []lb.Server{{Name: "master5", Address: "10.0.0.5"}, {Name: "worker21", Address: "10.0.0.21"}}) {
		t.Errorf("%v", got)
	}
}

package drivers_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
)

// A hook under fault: scale_end and heal_end each configure VMs the cloud
// has just created. Every scenario below creates its own fresh VM in a
// world the hook's subtest shares (one registry VNF and cluster per hook),
// injects a fault on it before the hook runs, runs the hook and, if it
// failed, runs it once more; then the VM must be fully configured with
// nothing applied twice.
type faultyHook struct {
	name string
	// fresh creates a new VM and returns it with the hook invocation that
	// configures it and a cleanup that removes it from the cluster (or
	// nil).
	fresh func(t *testing.T, c *cir) (*sim.Host, func() (*lcm.HookResult, error), func())
}

var faultyHooks = []faultyHook{
	{"scale_end", func(t *testing.T, c *cir) (*sim.Host, func() (*lcm.HookResult, error), func()) {
		t.Helper()
		before := c.cluster.Instance()
		added, err := c.cluster.ScaleOut("worker_instance", 1)
		if err != nil {
			t.Fatal(err)
		}
		req := &lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: "worker_instance", NumberOfSteps: 1}
		run := func() (*lcm.HookResult, error) {
			return lcm.Invoke(c.ctx, c.driver, lcm.ScaleEnd, &lcm.ScaleOp{Instance: before, Request: req, Package: c.pkg})
		}
		scaleIn := func() {
			if _, err := c.cluster.ScaleIn("worker_instance", added[0].Resource); err != nil {
				t.Fatal(err)
			}
		}
		return added[0], run, scaleIn
	}},
	{"heal_end", func(t *testing.T, c *cir) (*sim.Host, func() (*lcm.HookResult, error), func()) {
		t.Helper()
		w := c.cluster.HostsWithRole(lcm.RoleWorker)[0]
		var vnfc string
		for _, v := range c.cluster.Instance().InstantiatedVnfInfo.VnfcResourceInfo {
			if v.ComputeResource.ResourceID == w.ServerID {
				vnfc = v.ID
			}
		}
		healed, err := c.cluster.Heal(w.ServerID, sim.HealOptions{NewAddresses: true})
		if err != nil {
			t.Fatal(err)
		}
		run := func() (*lcm.HookResult, error) {
			return lcm.Invoke(c.ctx, c.driver, lcm.HealEnd, &lcm.HealOp{Instance: c.cluster.Instance(), Request: &lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}, Package: c.pkg})
		}
		return healed, run, nil
	}},
}

// trustFiles are the files ConfigureRegistryTrust writes on a node with
// Docker and containerd for the cir sample's registries (/etc/hosts
// apart: it also holds the node's own name).
var trustFiles = []string{
	registry.DockerDaemonJSON,
	path.Join(registry.DockerCertsDir, "registry.example.com", "ca.crt"),
	registry.DockerAuthFile,
	registry.ContainerdConfig,
	path.Join(registry.ContainerdCertsDir, "192.168.0.10:5000", "hosts.toml"),
	path.Join(registry.ContainerdCertsDir, "registry.example.com", "hosts.toml"),
	path.Join(registry.ContainerdCertsDir, "registry.example.com", "ca.crt"),
	registry.KubeletAuthFile,
}

// cleanRun is what the hook does to a fresh VM when nothing goes wrong.
type cleanRun struct {
	execs    int               // exec requests
	files    map[string]string // trustFiles' content
	services map[string][3]int // unit → starts, restarts, reloads
	calls    map[string]int    // mutating command → how many times it succeeded
}

// mutation is a program call that changes a node.
type mutation struct {
	call string // how its argv (joined by spaces) starts
	// during is what the command line of the exec request that runs it
	// shows: the call may run once more when the connection dropped
	// during that request, since the client cannot know that it
	// finished (an idempotent script that ends with mv, such as the
	// repository key's, runs again whole).
	during string
}

var mutations = []mutation{
	{"mv -f", "mv -f"},
	{"systemctl try-reload-or-restart docker", "try-reload-or-restart docker"},
	{"systemctl try-restart containerd", "try-restart containerd"},
	{"docker login", "docker login"},
}

func units() []string { return []string{"docker", "containerd"} }

// observe records what the hook did to h.
func observe(t *testing.T, h *sim.Host) cleanRun {
	t.Helper()
	r := cleanRun{execs: len(h.SSH.Transcript()), files: map[string]string{}, services: map[string][3]int{}, calls: map[string]int{}}
	for _, f := range trustFiles {
		b, err := h.FS().ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", h.Resource, err)
		}
		r.files[f] = string(b)
	}
	for _, u := range units() {
		s := h.Machine.Service(u)
		r.services[u] = [3]int{s.Starts, s.Restarts, s.Reloads}
	}
	for _, c := range h.SSH.Calls() {
		if c.Exit != 0 {
			continue // failed: applied nothing
		}
		line := strings.Join(c.Args, " ")
		for _, m := range mutations {
			if strings.HasPrefix(line, m.call) {
				r.calls[m.call]++
			}
		}
	}
	return r
}

// assertConverged checks that h pulls from both registries as Docker and
// as the kubelet, holds the files of a clean run, and had nothing applied
// more often than a clean run did, give or take the command during which
// the connection dropped (dropped: its command line, or "").
func assertConverged(t *testing.T, c *cir, h *sim.Host, clean cleanRun, dropped string) {
	t.Helper()
	for _, p := range world.CheckPulls(c.ctx, c.cloud, []*sim.Host{h}, world.Images()) {
		if p.Err != nil {
			t.Errorf("%s: %s pull %s: %v", p.Host, p.Runtime, p.Image, p.Err)
		}
	}
	got := observe(t, h)
	for _, f := range trustFiles {
		if got.files[f] != clean.files[f] {
			t.Errorf("%s: %s holds\n%s\nwant\n%s", h.Resource, f, got.files[f], clean.files[f])
		}
	}
	var daemon struct {
		Insecure []string `json:"insecure-registries"`
	}
	if err := json.Unmarshal([]byte(got.files[registry.DockerDaemonJSON]), &daemon); err != nil {
		t.Errorf("%s: daemon.json: %v", h.Resource, err)
	}
	if s := slices.Compact(slices.Sorted(slices.Values(daemon.Insecure))); len(s) != len(daemon.Insecure) {
		t.Errorf("%s: insecure-registries %q has duplicates", h.Resource, daemon.Insecure)
	}
	hosts, err := h.FS().ReadFile(registry.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(string(hosts), "\n") {
		if l != "" && !strings.HasPrefix(l, "# ") && !strings.HasPrefix(l, "#\t") && l != "#" {
			if seen[l] {
				t.Errorf("%s: /etc/hosts holds %q twice:\n%s", h.Resource, l, hosts)
			}
			seen[l] = true
		}
	}
	if n := strings.Count(string(hosts), "# BEGIN mgmtkit "+registry.HostsBlock+"\n"); n != 1 || !seen["192.168.0.20\tregistry.example.com"] {
		t.Errorf("%s: /etc/hosts has %d managed blocks, want one with the registry:\n%s", h.Resource, n, hosts)
	}
	for _, m := range mutations {
		allowed := clean.calls[m.call]
		if m.during != "" && strings.Contains(dropped, m.during) {
			allowed++
		}
		// Fewer is fine: a run that failed half-way left work done that
		// the re-run finds done (a restart marker already written).
		if n := got.calls[m.call]; n > allowed || n == 0 && clean.calls[m.call] > 0 {
			t.Errorf("%s: %q ran %d times, a clean run %d", h.Resource, m.call, n, clean.calls[m.call])
		}
	}
	for _, u := range units() {
		g, w := got.services[u], clean.services[u]
		extra := 0
		if strings.Contains(dropped, "systemctl") && (strings.Contains(dropped+" ", " "+u+" ") || strings.Contains(dropped, " "+u+".service")) {
			extra = 1
		}
		// At least one restart or reload after the last change (one
		// restart can take two runs' changes), never more than a clean
		// run's plus the one a dropped connection may repeat.
		if g[0] != w[0] || (w[1]+w[2] > 0 && g[1]+g[2] == 0) || g[1]+g[2] > w[1]+w[2]+extra {
			t.Errorf("%s: %s started/restarted/reloaded %v times, a clean run %v", h.Resource, u, g, w)
		}
	}
}

// convergeHook runs the hook on a fresh VM after inject has set its
// faults: the hook must succeed, or fail naming the VM and the step and
// then succeed when run again. It returns the first run's error.
func convergeHook(t *testing.T, c *cir, hook faultyHook, inject func(h *sim.Host), check func(h *sim.Host, first error)) {
	t.Helper()
	h, run, cleanup := hook.fresh(t, c)
	if cleanup != nil {
		defer cleanup()
	}
	inject(h)
	_, first := run()
	if first != nil {
		var he *lcm.HostError
		if !errors.As(first, &he) || he.Host != h.Resource {
			t.Errorf("first run: %v; want a HostError naming %s", first, h.Resource)
		}
		if res, err := run(); err != nil {
			t.Fatalf("the rerun failed too: %v\n(first run: %v)", err, first)
		} else if trust := stepHosts(res, registry.StepTrust); len(trust) != 1 || trust[0].Host != h.Resource {
			t.Errorf("the rerun's registry trust ran on %+v, want %s", trust, h.Resource)
		}
	}
	check(h, first)
	if t.Failed() {
		t.Logf("first run: %v; the VM's commands:", first)
		for _, e := range h.SSH.Transcript() {
			t.Logf("exit %d: %.150q", e.Exit, e.Command)
		}
	}
}

// dropStride is how far apart the commands are that a connection drops
// during, in TestHooksConvergeUnderFaults.
const dropStride = 4

// TestHooksConvergeUnderFaults runs scale_end and heal_end on fresh VMs
// whose connection drops during one command (every dropStride-th in
// turn), whose programs each fail once, or that are still booting.
func TestHooksConvergeUnderFaults(t *testing.T) {
	for _, hook := range faultyHooks {
		t.Run(hook.name, func(t *testing.T) {
			t.Parallel()
			c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 1}, world.ExternalRegistryPassword)
			if _, err := c.instantiate(); err != nil {
				t.Fatalf("instantiate_end: %v\n%s", err, c.log)
			}

			// A clean run: the commands the hook runs on the new VM.
			var clean cleanRun
			var transcript []string
			var programs []string
			convergeHook(t, c, hook, func(*sim.Host) {}, func(h *sim.Host, first error) {
				if first != nil {
					t.Fatalf("clean run: %v\n%s", first, c.log)
				}
				clean = observe(t, h)
				for _, e := range h.SSH.Transcript() {
					transcript = append(transcript, e.Command)
				}
				for _, call := range h.SSH.Calls() {
					if p := path.Base(call.Args[0]); !slices.Contains(programs, p) {
						programs = append(programs, p)
					}
				}
			})
			if clean.execs < 5 || clean.calls["docker login"] != 1 {
				t.Fatalf("the clean run ran %d commands, %v", clean.execs, clean.calls)
			}

			// A drop during every fourth command of the clean run (every
			// command would be some 80 hooks per hook kind, minutes under
			// -race): each step's commands are hit somewhere.
			for i := 1; i <= clean.execs; i += dropStride {
				t.Run(fmt.Sprintf("drop during command %d", i), func(t *testing.T) {
					convergeHook(t, c, hook, func(h *sim.Host) { h.SSH.DropConnectionDuring(i) }, func(h *sim.Host, first error) {
						// Every command either may run twice (Idempotent)
						// or is checked again (WriteFiles' commit), so
						// one drop costs a redial, not the hook; except
						// kubeadm join, which cannot be run again
						// blindly: it fails the hook, and the re-run
						// (above) converges.
						tr := h.SSH.Transcript()
						if first != nil && !(len(tr) >= i && strings.Contains(tr[i-1].Command, "kubeadm join")) {
							t.Errorf("a dropped connection failed the hook: %v", first)
						}
						if h.SSH.Dials() < 2 || len(tr) < i || tr[i-1].Exit != -1 {
							t.Fatalf("no connection dropped during command %d (%d dials):\n%v", i, h.SSH.Dials(), tr)
						}
						assertConverged(t, c, h, clean, tr[i-1].Command)
					})
				})
			}

			for _, p := range programs {
				t.Run("fail once "+p, func(t *testing.T) {
					convergeHook(t, c, hook, func(h *sim.Host) {
						h.SSH.FailProgram(p, 1, 1, p+": transient failure\n")
					}, func(h *sim.Host, first error) {
						if first != nil && !strings.Contains(first.Error(), p+": transient failure") {
							t.Errorf("the error does not say what failed: %v", first)
						}
						// A re-run after a failed join writes its join configuration
						// again, with a fresh token.
						again := ""
						if first != nil {
							again = "mv -f"
						}
						assertConverged(t, c, h, clean, again)
					})
				})
			}

			t.Run("still booting", func(t *testing.T) {
				convergeHook(t, c, hook, func(h *sim.Host) {
					// sshd not listening yet, then cloud-init not done
					// with the user's password.
					h.SSH.RefuseDials(1)
					h.SSH.RejectAuth(2)
				}, func(h *sim.Host, first error) {
					if first != nil {
						t.Errorf("the hook gave up on a booting VM: %v", first)
					}
					if n := h.SSH.Dials(); n < 3 {
						t.Errorf("%d dials: the VM did not refuse the hook's first attempts", n)
					}
					assertConverged(t, c, h, clean, "")
				})
			})
		})
	}
}

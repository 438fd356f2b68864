package lb_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/system"
)

// clusterConfig is the configuration of the VM's cluster: its masters
// and workers by their NIC addresses, the workers named worker-1 and
// worker-12 so that a removal by substring would show.
func (v *lbVM) clusterConfig() lb.Config {
	var masters, workers []lb.Server
	for i, h := range v.vnf.HostsWithRole(lcm.RoleMaster) {
		masters = append(masters, lb.Server{Name: "master-" + string(rune('1'+i)), Address: h.NICAddress})
	}
	for i, h := range v.vnf.HostsWithRole(lcm.RoleWorker) {
		workers = append(workers, lb.Server{Name: []string{"worker-1", "worker-12"}[i], Address: h.NICAddress})
	}
	return lb.NewConfig(masters, workers)
}

func TestConfigureLBInstallsServesAndConverges(t *testing.T) {
	v := newLBVM(t)
	cfg := v.clusterConfig()
	want, err := lb.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := v.step(func() (lcm.Result, error) { return lb.ConfigureLB(v.ctx, v.ssh, cfg) })
	if err != nil || !res.Changed {
		t.Fatalf("first run: %v, %v", res, err)
	}
	if got := v.read(lb.ConfigFile); got != string(want) {
		t.Errorf("%s differs from Render's:\n%s", lb.ConfigFile, got)
	}
	st := v.host.Machine.Service("haproxy")
	if !st.Active || !st.Enabled {
		t.Errorf("haproxy.service: %+v", st)
	}
	if v.host.FS().Exists(system.StagedPath(lb.ConfigFile)) {
		t.Error("the staged file stays")
	}
	if got := v.host.SSH.CallsTo("haproxy"); len(got) != 1 || strings.Join(got[0].Args, " ") != "haproxy -c -f "+system.StagedPath(lb.ConfigFile) || got[0].Exit != 0 {
		t.Errorf("haproxy ran as %+v, want one check of the staged file", got)
	}

	// A rerun: two commands (dpkg-query, the unit's state), no check, no
	// write, no reload.
	v.host.SSH.ResetTranscript()
	res, cmds, err := v.step(func() (lcm.Result, error) { return lb.ConfigureLB(v.ctx, v.ssh, cfg) })
	if err != nil || res.Changed || len(cmds) != 2 {
		t.Errorf("rerun: %v, %v, commands %q", res, err, cmds)
	}
	if len(v.host.SSH.CallsTo("haproxy")) != 0 || len(v.host.SSH.CallsTo("mv")) != 0 {
		t.Errorf("rerun checked or moved a file: %q", v.calls())
	}
	if after := v.host.Machine.Service("haproxy"); after.Reloads != st.Reloads || after.Restarts != st.Restarts || after.Starts != st.Starts {
		t.Errorf("rerun reloaded or restarted: %+v, before %+v", after, st)
	}

	// The same nodes in another order: the same bytes, nothing to do.
	reordered := lb.Config{Masters: cfg.Masters, Nodes: []lb.Server{cfg.Nodes[2], cfg.Nodes[0], cfg.Nodes[1]}}
	if res, err := lb.ConfigureLB(v.ctx, v.ssh, reordered); err != nil || res.Changed {
		t.Errorf("reordered: %v, %v", res, err)
	}
}

// Scale-in removes worker-1 by its exact name: worker-12 stays, and
// HAProxy is reloaded, not restarted. Scale-out adds a node back.
func TestConfigureLBRemovesAndAddsNodesByExactName(t *testing.T) {
	v := newLBVM(t)
	cfg := v.clusterConfig()
	if _, err := lb.ConfigureLB(v.ctx, v.ssh, cfg); err != nil {
		t.Fatal(err)
	}
	before := v.host.Machine.Service("haproxy")
	in := cfg.RemoveNodes("worker-1")
	res, err := lb.ConfigureLB(v.ctx, v.ssh, in)
	if err != nil || !res.Changed {
		t.Fatalf("scale-in: %v, %v", res, err)
	}
	after := v.host.Machine.Service("haproxy")
	if after.Reloads != before.Reloads+1 || after.Restarts != before.Restarts {
		t.Errorf("haproxy: %d reloads, %d restarts; want one reload", after.Reloads-before.Reloads, after.Restarts-before.Restarts)
	}
	nodes := lb.Backends([]byte(v.read(lb.ConfigFile)))[lb.NodePortBackend]
	var names []string
	for _, s := range nodes {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "master-1 worker-12" {
		t.Errorf("NodePort backend after removing worker-1: %v", names)
	}
	out := in.AddNodes(lb.Server{Name: "worker-13", Address: cfg.Nodes[1].Address})
	if _, err := lb.ConfigureLB(v.ctx, v.ssh, out); err != nil {
		t.Fatal(err)
	}
	nodes = lb.Backends([]byte(v.read(lb.ConfigFile)))[lb.NodePortBackend]
	if len(nodes) != 3 || nodes[2].Name != "worker-13" || nodes[1].Name != "worker-12" {
		t.Errorf("NodePort backend after adding worker-13: %v", nodes)
	}
}

// A configuration the VM's HAProxy refuses never replaces the running
// one: the old file stays, HAProxy is not reloaded, and the error carries
// HAProxy's alert.
func TestConfigureLBKeepsTheOldConfigurationWhenHAProxyRefuses(t *testing.T) {
	v := newLBVM(t)
	cfg := v.clusterConfig()
	if _, err := lb.ConfigureLB(v.ctx, v.ssh, cfg); err != nil {
		t.Fatal(err)
	}
	good := v.read(lb.ConfigFile)
	before := v.host.Machine.Service("haproxy")
	const alert = "[ALERT]    (4321) : config : parsing [/etc/haproxy/.haproxy.cfg.mgmtkit-new:40] : something HAProxy refuses"
	v.host.SSH.FailProgram("haproxy", 1, 1, alert)
	_, err := lb.ConfigureLB(v.ctx, v.ssh, cfg.RemoveNodes("worker-12"))
	var ce *system.CheckError
	if !errors.As(err, &ce) || ce.Validator != "haproxy" || ce.ExitCode != 1 || !strings.Contains(err.Error(), "something HAProxy refuses") {
		t.Fatalf("err = %v, want a *system.CheckError with the alert", err)
	}
	if !strings.Contains(err.Error(), v.ssh.Name()) {
		t.Errorf("the error does not name the VM: %v", err)
	}
	if got := v.read(lb.ConfigFile); got != good {
		t.Errorf("the refused configuration replaced the old one:\n%s", got)
	}
	if after := v.host.Machine.Service("haproxy"); after.Reloads != before.Reloads || after.Restarts != before.Restarts || !after.Active {
		t.Errorf("haproxy: %+v, before %+v", after, before)
	}
	if v.host.FS().Exists(system.StagedPath(lb.ConfigFile)) {
		t.Error("the refused file stays staged")
	}
	// The next run, HAProxy willing, applies it.
	if res, err := lb.ConfigureLB(v.ctx, v.ssh, cfg.RemoveNodes("worker-12")); err != nil || !res.Changed {
		t.Errorf("after the refusal: %v, %v", res, err)
	}
}

// An invalid configuration is refused before any command.
func TestConfigureLBRefusesABadConfigBeforeAnyCommand(t *testing.T) {
	v := newLBVM(t)
	_, cmds, err := v.step(func() (lcm.Result, error) {
		return lb.ConfigureLB(v.ctx, v.ssh, lb.Config{Masters: []lb.Server{{Name: "m1", Address: "10.0.0.5"}, {Name: "m1", Address: "10.0.0.6"}}})
	})
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `Masters[1].Name: "m1" is also Masters[0]'s name`) {
		t.Errorf("err = %v", err)
	}
	if len(cmds) != 0 {
		t.Errorf("commands ran: %q", cmds)
	}
}

package kubeadm_test

import (
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"testing"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// What a converged node costs, in SSH commands, per step: the second
// run of each step on a node that the first run converged (the
// benchmark's per-node count of a rerun). The first runs' counts are
// logged.
func TestNodeStepsConvergedCommandCounts(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	name := kubeadm.NodeName(lcm.RoleMaster, n.host.NICAddress)
	lb := threeMasters()
	lb.Interface = "ens3"
	for _, s := range []struct {
		name string
		want int
		run  func() (lcm.Result, error)
	}{
		{"PrepareNode", 7, func() (lcm.Result, error) {
			return kubeadm.PrepareNode(n.ctx, n.ssh, kubeadm.NodeOptions{Name: name, Hosts: kubeadm.ClusterHosts([]string{n.host.NICAddress}, nil), Proxy: proxyWithPassword})
		}},
		{"InstallContainerd", 3, func() (lcm.Result, error) {
			return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{Proxy: proxyWithPassword})
		}},
		{"InstallKubernetes", 3, func() (lcm.Result, error) {
			return kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{Version: "1.36.2", Proxy: proxyWithPassword})
		}},
		{"ConfigureHAProxy", 2, func() (lcm.Result, error) { return kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb) }},
		{"ConfigureKeepalived", 2, func() (lcm.Result, error) { return kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb) }},
		{"UpdateHosts", 1, func() (lcm.Result, error) {
			return kubeadm.UpdateHosts(n.ctx, n.ssh, kubeadm.ClusterHosts([]string{n.host.NICAddress}, nil))
		}},
		{"ResetNode", 2, func() (lcm.Result, error) { return kubeadm.ResetNode(n.ctx, n.ssh) }},
	} {
		n.commands()
		if _, err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		first := len(n.commands())
		res, err := s.run()
		if err != nil || res.Changed {
			t.Fatalf("%s again: %v, %v", s.name, res, err)
		}
		if got := len(n.commands()); got != s.want {
			t.Errorf("%s on a converged node: %d commands, want %d", s.name, got, s.want)
		}
		t.Logf("%s: %d commands the first time", s.name, first)
	}
}

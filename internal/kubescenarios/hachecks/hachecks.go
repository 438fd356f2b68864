// Package hachecks checks what package kubeadm promises of the HA control
// plane it builds for more than one master, beyond what the public
// conformance suite (cloudtest/conformance) asks of every cluster driver:
// [Check] is a conformance.Options.Check, so that one run of the suite's
// scenarios on three masters judges both. The kubeadm driver's
// conformance runs pass it, on the in-memory model (examples/drivers)
// and on a real control plane (cloudtest/realkube).
//
// The checks read the simulated cloud behind the suite's VNF (package
// internal/kitsim): which machine holds the VIP, the cluster's etcd
// members, each VM's files as root sees them, and whether a VM reaches
// an API server at the VIP.
package hachecks

import (
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest/conformance"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/kitsim"
	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// apiPort is the port of the HA topology's API endpoint at the VIP: the
// HAProxy frontend kubeadm configures on every master
// (kubeadm.LoadBalancerPort; the reference's 16443).
const apiPort = "16443"

// Check checks kubeadm's HA topology at the suite's stages, on a VNF of
// more than one master (the conformance suite's ThreeMasters); with one
// master kubeadm builds no HA topology and there is nothing to check.
//
//   - [conformance.AfterInstantiate]: the Kubernetes VIM's endpoint is
//     the VIP's port 16443 and its ID is the request's vim_name (the
//     instance's when none); etcd has one member per master; every
//     master's HAProxy has every master's API server as a backend; every
//     node's /etc/hosts names every node (its address and name); the VIP
//     is held by the first master by resource name (keepalived's
//     highest priority); every worker reaches an API server at the VIP.
//   - [conformance.AfterWorkerHeal], [conformance.AfterMasterHeal] (the
//     healed VM came back with new addresses): etcd's members are
//     exactly the masters there are; every master's HAProxy has every
//     master's API server as a backend, and not the healed VM's old
//     address; every node's /etc/hosts names every node (its address and
//     name) and not the healed VM's old node; a master holds the VIP.
//   - [conformance.AfterEntireHeal]: etcd is one of the new masters; the
//     first master holds the VIP again; every master's HAProxy has every
//     master's API server; every node's /etc/hosts names every node;
//     every worker reaches an API server at the VIP.
//   - [conformance.BeforeTerminate], the last stage: the VIP fails over.
//     HAProxy is stopped on its holder, the first master (keepalived's
//     check script fails there); another master takes the VIP; every
//     worker still reaches an API server through it, and kubectl on a
//     master (admin.conf names the VIP) lists the nodes through the
//     VIP's new holder. The cluster is left so: the suite's terminate
//     then goes through the new holder too.
func Check(t *testing.T, stage conformance.Stage, env *conformance.Env) {
	if len(env.VNF.VMs(lcm.RoleMaster)) < 2 {
		return // kubeadm.Topology.HA: no VIP with one master
	}
	c := newChecker(t, env)
	switch stage {
	case conformance.AfterInstantiate:
		c.instantiated(env)
	case conformance.AfterWorkerHeal, conformance.AfterMasterHeal:
		if env.Healed == nil {
			t.Fatalf("at %s the suite names no healed VM", stage)
		}
		c.healed(env.Healed.Role(), env.Healed.Node().NICAddress)
	case conformance.AfterEntireHeal:
		c.entireHealed()
	case conformance.BeforeTerminate:
		c.failover()
	}
}

// checker is the HA checks' view of one stage: the simulated cloud and
// VNF behind the suite's, and the VNF's VIP.
type checker struct {
	kubescenarios.World
	vip string
}

func newChecker(t *testing.T, env *conformance.Env) *checker {
	t.Helper()
	cloud, vnf, ok := kitsim.Of(env.VNF)
	if !ok {
		t.Fatal("hachecks: the suite's VNF hands no simulated cloud")
	}
	c := &checker{World: kubescenarios.World{T: t, Ctx: t.Context(), Cloud: cloud, VNF: vnf}, vip: vnf.VIP()}
	if c.vip == "" {
		t.Fatal("the VNF of three masters has no VIP")
	}
	return c
}

// instantiated: the VIM at the VIP named vim_name, etcd of the masters,
// the VIP on the first master, the API reachable at the VIP.
func (c *checker) instantiated(env *conformance.Env) {
	c.T.Helper()
	p, err := drivers.DecodeClusterParams(env.Request.AdditionalParams, env.Cloud.Package())
	if err != nil {
		c.T.Fatal(err)
	}
	inst := env.VNF.Instance()
	var vims []lcm.VimConnectionInfo
	for _, v := range inst.VimConnectionInfo {
		if v.VimType == kubeapi.VimTypeKubernetes {
			vims = append(vims, v)
		}
	}
	if len(vims) != 1 {
		c.T.Fatalf("the instance has %d Kubernetes VIM connections, want 1: %v", len(vims), inst.VimConnectionInfo)
	}
	if vim, want := vims[0], p.VimNameFor(inst.ID); vim.InterfaceInfo["endpoint"] != "https://"+c.vip+":"+apiPort || vim.ID != want {
		c.T.Errorf("VIM %s at %v, want vim_name's (%s) at the VIP %s:%s", vim.ID, vim.InterfaceInfo["endpoint"], want, c.vip, apiPort)
	}
	c.assertEtcd("instantiated")
	c.assertHAProxy("")
	c.assertHostsBlock("")
	if first := c.firstMaster(); c.Cloud.Machine(c.vip) != first.Machine {
		c.T.Errorf("the VIP is not on %s, the master with the highest priority", first.Resource)
	}
	c.assertReachable("all masters up")
}

// healed: after the heal of the role's VM that had the address gone,
// etcd, HAProxy and /etc/hosts follow, and a master holds the VIP.
func (c *checker) healed(role lcm.Role, gone string) {
	c.T.Helper()
	c.assertEtcd("after the " + string(role) + "'s heal")
	c.assertHAProxy(gone)
	c.assertHostsBlock(kubeadm.NodeName(role, gone))
	if !c.masterHoldsVIP() {
		c.T.Errorf("no master holds the VIP %s after the %s's heal", c.vip, role)
	}
}

// entireHealed: etcd of the new masters, the VIP back on the first
// master, HAProxy in front of every master, the API reachable at the
// VIP.
func (c *checker) entireHealed() {
	c.T.Helper()
	c.assertEtcd("after the entire heal")
	if first := c.firstMaster(); c.Cloud.Machine(c.vip) != first.Machine {
		c.T.Fatalf("the VIP is not on %s after the entire heal", first.Resource)
	}
	c.assertHAProxy("")
	c.assertHostsBlock("")
	c.assertReachable("after the entire heal")
}

// failover stops HAProxy on the VIP's holder, the first master: the VIP
// moves to another master, and the workers and kubectl reach an API
// server through it.
func (c *checker) failover() {
	c.T.Helper()
	first := c.firstMaster()
	if c.Cloud.Machine(c.vip) != first.Machine {
		c.T.Fatalf("the VIP is not on %s before its failover", first.Resource)
	}
	h, err := c.Cloud.Connect(c.Ctx, first.Node(), first.Login.User, first.Login.Password)
	if err != nil {
		c.T.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Run(c.Ctx, remote.Cmd{Args: []string{"systemctl", "stop", "haproxy"}, Sudo: true}); err != nil {
		c.T.Fatal(err)
	}
	if now := c.Cloud.Machine(c.vip); now == first.Machine || !c.masterHoldsVIP() {
		c.T.Errorf("the VIP did not move from %s to another master after its HAProxy stopped", first.Resource)
	}
	c.assertReachable("the first master's HAProxy stopped")
	// kubectl on a master (admin.conf names the VIP) reaches an API
	// server through the VIP's new holder.
	if _, err := c.Kubectl().Nodes(c.Ctx); err != nil {
		c.T.Errorf("kubectl through the VIP: %v", err)
	}
}

// firstMaster is the master first by resource name: keepalived's
// highest priority.
func (c *checker) firstMaster() *sim.Host {
	return slices.MinFunc(c.VNF.HostsWithRole(lcm.RoleMaster), func(a, b *sim.Host) int { return strings.Compare(a.Resource, b.Resource) })
}

// masterHoldsVIP reports whether one of the VNF's masters holds the VIP.
func (c *checker) masterHoldsVIP() bool {
	holder := c.Cloud.Machine(c.vip)
	return holder != nil && slices.ContainsFunc(c.VNF.HostsWithRole(lcm.RoleMaster), func(h *sim.Host) bool { return h.Machine == holder })
}

// assertEtcd checks that the etcd members are exactly the masters.
func (c *checker) assertEtcd(when string) {
	c.T.Helper()
	if got, want := c.EtcdMembers(), c.MastersNames(); !slices.Equal(got, want) {
		c.T.Errorf("%s: etcd members %v, want %v", when, got, want)
	}
}

// assertReachable checks that every worker reaches an API server at the
// VIP.
func (c *checker) assertReachable(when string) {
	c.T.Helper()
	for _, w := range c.VNF.HostsWithRole(lcm.RoleWorker) {
		if kc, err := c.Cloud.Kube().Dial(w.Machine, c.vip+":"+apiPort); err != nil || kc == nil {
			c.T.Errorf("%s: %s cannot reach the API at the VIP: %v", when, w.Resource, err)
		}
	}
}

// assertHAProxy checks that every master's HAProxy has each master's API
// server as a backend, and, unless gone is "", not the address gone.
func (c *checker) assertHAProxy(gone string) {
	c.T.Helper()
	masters := c.VNF.HostsWithRole(lcm.RoleMaster)
	for _, m := range masters {
		cfg, err := m.FS().ReadFile("/etc/haproxy/haproxy.cfg")
		if err != nil {
			c.T.Fatal(err)
		}
		for _, mm := range masters {
			if !strings.Contains(string(cfg), mm.NICAddress+":6443") {
				c.T.Errorf("%s's HAProxy lacks master %s", m.Resource, mm.NICAddress)
			}
		}
		if gone != "" && strings.Contains(string(cfg), gone+":6443") {
			c.T.Errorf("%s's HAProxy still has the old master %s", m.Resource, gone)
		}
	}
}

// assertHostsBlock checks that every node's /etc/hosts has a line of
// each master's and worker's NIC address and node name
// (kubeadm.ClusterHosts) and, unless gone is "", does not name the node
// gone.
func (c *checker) assertHostsBlock(gone string) {
	c.T.Helper()
	for _, h := range c.VNF.Hosts() {
		hosts, err := h.FS().ReadFile("/etc/hosts")
		if err != nil {
			c.T.Fatal(err)
		}
		for _, n := range c.VNF.Hosts() {
			name := kubeadm.NodeName(n.Role, n.NICAddress)
			if !slices.ContainsFunc(strings.Split(string(hosts), "\n"), func(l string) bool {
				f := strings.Fields(l)
				return len(f) > 1 && f[0] == n.NICAddress && slices.Contains(f[1:], name)
			}) {
				c.T.Errorf("%s's /etc/hosts has no line %s %s", h.Resource, n.NICAddress, name)
			}
		}
		if gone != "" && strings.Contains(string(hosts), gone) {
			c.T.Errorf("%s's /etc/hosts still names %s", h.Resource, gone)
		}
	}
}

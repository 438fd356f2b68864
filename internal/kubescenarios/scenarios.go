package kubescenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Run runs the kubeadm-specific scenarios as subtests, each on a cloud
// of its own started with opts (opts.KubeBackend chooses the Kubernetes):
// what the public conformance suite (cloudtest/conformance, which
// kubeadm's driver passes too) cannot ask of any driver. The subtests
// run one after the other: a real control plane holds a few hundred
// megabytes.
func Run(t *testing.T, opts sim.Options) {
	for _, s := range []struct {
		name string
		run  func(*testing.T, sim.Options)
	}{
		{"HighAvailability", HighAvailability},
		{"ScaleInPastABudget", ScaleInPastABudget},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, opts) })
	}
}

// EventuallyTimeout bounds [Eventually]: what a real control plane's
// controllers do within it (a ReplicaSet's replacement pod scheduled and
// running takes a second or two) counts as done.
const EventuallyTimeout = 60 * time.Second

// Eventually calls check until it returns nil, for at most
// [EventuallyTimeout], and fails the test with its last error. The model
// converges before check is first called; a real control plane's
// controllers run concurrently and converge a moment later.
func Eventually(t testing.TB, check func() error) {
	t.Helper()
	deadline := time.Now().Add(EventuallyTimeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", EventuallyTimeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// HighAvailability: three masters behind kubeadm's HA topology. The
// endpoint and the VIM (named vim_name) are at the VIP's port 16443, held by the master
// with the highest keepalived priority; etcd has one member per master.
// A worker's and then a master's heal (new addresses) keep etcd's
// membership, every master's HAProxy backends and every node's
// /etc/hosts block naming exactly the masters and nodes there are; an
// entire heal builds one etcd of the three new masters. Last, the VIP
// moves when its holder's HAProxy stops, and the workers and kubectl
// still reach an API server through it.
func HighAvailability(t *testing.T, opts sim.Options) {
	c := NewCluster(t, sim.ClusterShape{Masters: 3, Workers: 1}, opts)
	res := c.Instantiate()
	vip := c.VNF.VIP()
	if vip == "" {
		t.Fatal("the VNF has no VIP")
	}
	if vim := res.AddVimConnections[0]; vim.InterfaceInfo["endpoint"] != "https://"+vip+":16443" || vim.ID != c.Op.Params.VimNameFor(c.VNF.ID()) {
		t.Errorf("VIM %s at %v, want vim_name's at the VIP", vim.ID, vim.InterfaceInfo["endpoint"])
	}
	c.assertEtcd("instantiated")
	// The first master by resource name has the highest priority.
	first := c.firstMaster()
	if holder := c.Cloud.Machine(vip); holder != first.Machine {
		t.Errorf("the VIP is not on %s, the master with the highest priority", first.Resource)
	}
	c.assertReachable(vip, "all masters up")

	for _, role := range []lcm.Role{lcm.RoleWorker, lcm.RoleMaster} {
		hs := c.VNF.HostsWithRole(role)
		old := hs[len(hs)-1]
		if err := c.Heal(old); err != nil {
			t.Fatalf("heal of the %s: %v", role, err)
		}
		c.assertEtcd("after the " + string(role) + "'s heal")
		c.assertHAProxy(old.NICAddress)
		c.assertHostsBlock(kubeadm.NodeName(role, old.NICAddress))
	}
	if c.Cloud.Machine(vip) == nil {
		t.Error("nobody holds the VIP after the heals")
	}

	c.HealEntire()
	c.assertEtcd("after the entire heal")

	first = c.firstMaster()
	if c.Cloud.Machine(vip) != first.Machine {
		t.Fatalf("the VIP is not on %s after the entire heal", first.Resource)
	}
	h, err := c.Cloud.Connect(c.Ctx, first.Node(), first.Login.User, first.Login.Password)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Run(c.Ctx, remote.Cmd{Args: []string{"systemctl", "stop", "haproxy"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	if now := c.Cloud.Machine(vip); now == nil || now == first.Machine {
		t.Errorf("the VIP stayed on %s after its HAProxy stopped", first.Resource)
	}
	c.assertReachable(vip, "the first master's HAProxy stopped")
	// kubectl on a master (admin.conf names the VIP) reaches an API
	// server through the VIP's new holder.
	if _, err := c.Kubectl().Nodes(c.Ctx); err != nil {
		t.Errorf("kubectl through the VIP: %v", err)
	}
}

// firstMaster is the master first by resource name: keepalived's
// highest priority.
func (c *Cluster) firstMaster() *sim.Host {
	return slices.MinFunc(c.VNF.HostsWithRole(lcm.RoleMaster), func(a, b *sim.Host) int { return strings.Compare(a.Resource, b.Resource) })
}

// assertEtcd checks that the etcd members are exactly the masters.
func (c *Cluster) assertEtcd(when string) {
	c.T.Helper()
	if got, want := c.EtcdMembers(), c.MastersNames(); !slices.Equal(got, want) {
		c.T.Errorf("%s: etcd members %v, want %v", when, got, want)
	}
}

// assertReachable checks that every worker reaches an API server at the
// VIP.
func (c *Cluster) assertReachable(vip, when string) {
	c.T.Helper()
	for _, w := range c.VNF.HostsWithRole(lcm.RoleWorker) {
		if kc, err := c.Cloud.Kube().Dial(w.Machine, vip+":16443"); err != nil || kc == nil {
			c.T.Errorf("%s: %s cannot reach the API at the VIP: %v", when, w.Resource, err)
		}
	}
}

// assertHAProxy checks that every master's HAProxy has each master's API
// server as a backend, and not the address gone.
func (c *Cluster) assertHAProxy(gone string) {
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
		if strings.Contains(string(cfg), gone+":6443") {
			c.T.Errorf("%s's HAProxy still has the old master %s", m.Resource, gone)
		}
	}
}

// assertHostsBlock checks that no node's /etc/hosts names the node gone.
func (c *Cluster) assertHostsBlock(gone string) {
	c.T.Helper()
	for _, h := range c.VNF.Hosts() {
		hosts, err := h.FS().ReadFile("/etc/hosts")
		if err != nil {
			c.T.Fatal(err)
		}
		if strings.Contains(string(hosts), gone) {
			c.T.Errorf("%s's /etc/hosts still names %s", h.Resource, gone)
		}
	}
}

// ScaleInPastABudget: a PodDisruptionBudget that forbids the drain fails
// scale-in with a [*kubeapi.DrainError] naming the node and its blocking
// pods, the node kept, cordoned; with [kubeadm.Hooks.ForceDrain] the
// node is removed anyway.
func ScaleInPastABudget(t *testing.T, opts sim.Options) {
	c := NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 2, MinWorkers: 1}, opts)
	// A blocked drain gives up after drain_timeout: short, so that the
	// real kubectl drain does not wait the default 300 s.
	c.Op.Params.DrainTimeout = 10
	c.Instantiate()
	c.CreateWeb()
	pods := c.WebPodsSettled("")
	c.CreateWebBudget()
	in := lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: c.Op.Params.WorkerNode.AspectID, NumberOfSteps: 1}
	victim := kubeadm.NodeName(lcm.RoleWorker, c.ScaleInTargets(c.Op.Params.WorkerNode.Group(lcm.RoleWorker), in)[0].NICAddress)
	if len(pods[victim]) == 0 {
		t.Fatalf("no web pod on %s to block its drain: %v", victim, pods)
	}
	c.Op.Instance = c.VNF.Instance()
	_, err := c.Hooks.ScaleIn(c.Ctx, lcm.ScaleStart, c.Op, in)
	var de *kubeapi.DrainError
	if !errors.As(err, &de) || de.Node != victim || !slices.Contains(de.Pods, "default/"+pods[victim][0]) {
		t.Fatalf("scale-in under a PDB: %v, want a DrainError naming the web pods of %s (%v)", err, victim, pods[victim])
	}
	node, ok := c.Nodes()[victim]
	if !ok || !node.Spec.Unschedulable {
		t.Errorf("%s after a blocked drain: present %v, cordoned %v", victim, ok, node.Spec.Unschedulable)
	}
	c.Hooks.ForceDrain = true
	if _, err := c.Hooks.ScaleIn(c.Ctx, lcm.ScaleStart, c.Op, in); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Nodes()[victim]; ok {
		t.Errorf("%s is still in the cluster after a forced scale-in", victim)
	}
}

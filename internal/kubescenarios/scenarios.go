package kubescenarios

import (
	"errors"
	"fmt"
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

// Run runs every scenario as a subtest, each on a cloud of its own
// started with opts (opts.KubeBackend chooses the Kubernetes). The
// subtests run one after the other: a real control plane holds a few
// hundred megabytes.
func Run(t *testing.T, opts sim.Options) {
	for _, s := range []struct {
		name string
		run  func(*testing.T, sim.Options)
	}{
		{"InstantiateSingleMaster", InstantiateSingleMaster},
		{"InstantiateThreeMasters", InstantiateThreeMasters},
		{"ScaleOutAndIn", ScaleOutAndIn},
		{"HealWorkerAndMaster", HealWorkerAndMaster},
		{"HealEntire", HealEntire},
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

// InstantiateSingleMaster: one master, two workers. instantiate_end
// builds the cluster with the master's address as the endpoint, every
// node Ready, and returns the Kubernetes VIM, whose token may list nodes
// and nothing it was not granted; run again, it changes nothing.
// terminate_start revokes the token; terminate_end forgets the VIM.
func InstantiateSingleMaster(t *testing.T, opts sim.Options) {
	c := NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 2}, opts)
	res, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
	if err != nil {
		t.Fatal(err)
	}
	c.AssertNodes()
	master := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
	if len(res.AddVimConnections) != 1 {
		t.Fatalf("VIM connections %+v", res.AddVimConnections)
	}
	vim := res.AddVimConnections[0]
	if vim.VimType != "kubernetes" || vim.InterfaceInfo["endpoint"] != "https://"+master.NICAddress+":6443" || vim.ID != "kubernetes_vim" {
		t.Errorf("VIM %+v", vim)
	}
	token, _ := vim.AccessInfo["bearer_token"].(string)
	if token == "" {
		t.Fatal("no bearer token")
	}
	c.AssertVIMToken(token, true)
	again, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range again.Steps {
		for _, h := range s.Hosts {
			if h.Result.Changed {
				t.Errorf("second run: %s changed %s: %s", s.Step, h.Host, h.Result.Detail)
			}
		}
	}
	if _, err := c.Hooks.Revoke(c.Ctx, lcm.TerminateStart, c.Op); err != nil {
		t.Fatal(err)
	}
	c.AssertVIMToken(token, false)
	if got := c.Hooks.Forget(lcm.TerminateEnd, c.Op).RemoveVimConnections; !slices.Equal(got, []string{"kubernetes_vim"}) {
		t.Errorf("terminate_end removes %v", got)
	}
}

// AssertVIMToken checks what the cluster's API server makes of the VIM's
// bearer token: valid, it authenticates as a service account that RBAC
// lets list nodes (its binding to cluster-admin), while a service account
// without a binding may not; revoked, it is refused.
func (c *Cluster) AssertVIMToken(token string, valid bool) {
	c.T.Helper()
	api := c.ClusterOf().API
	if !valid {
		// A real API server caches a token's successful authentication
		// for 10 s (pkg/kubeapiserver/authenticator/config.go: the token
		// cache's success TTL); the model forgets it at once.
		Eventually(c.T, func() error {
			if user, _, err := api.Authenticate(c.Ctx, token); err == nil {
				return fmt.Errorf("the revoked token still authenticates as %s", user)
			}
			return nil
		})
		return
	}
	user, groups, err := api.Authenticate(c.Ctx, token)
	if err != nil {
		c.T.Fatalf("the VIM token does not authenticate: %v", err)
	}
	if !strings.HasPrefix(user, "system:serviceaccount:") {
		c.T.Errorf("the VIM token is %s's, want a service account's", user)
	}
	for _, q := range []struct {
		verb, resource, namespace string
		want                      bool
	}{
		{"list", "nodes", "", true},
		{"get", "nodes", "", true},
		// cluster-admin is what the VIM needs to deploy CNFs: the
		// reference binds it, and so does CreateVIMCredentials.
		{"list", "secrets", "kube-system", true},
	} {
		ok, err := api.Authorize(c.Ctx, user, groups, q.verb, "", q.resource, q.namespace)
		if err != nil || ok != q.want {
			c.T.Errorf("%s may %s %s in %q: %v (%v), want %v", user, q.verb, q.resource, q.namespace, ok, err, q.want)
		}
	}
	// Nothing RBAC does not grant: a user the token is not.
	if ok, err := api.Authorize(c.Ctx, "system:serviceaccount:default:nobody", []string{"system:serviceaccounts", "system:authenticated"}, "list", "", "nodes", ""); err != nil || ok {
		c.T.Errorf("a service account nothing was granted to may list nodes: %v (%v)", ok, err)
	}
}

// InstantiateThreeMasters: HAProxy and keepalived on each master, the
// endpoint and the VIM at the VIP's port 16443, three etcd members, and
// the VIP still answering when the master holding it stops its HAProxy.
func InstantiateThreeMasters(t *testing.T, opts sim.Options) {
	c := NewCluster(t, sim.ClusterShape{Masters: 3, Workers: 2}, opts)
	res := c.Instantiate()
	c.AssertNodes()
	vip := c.VNF.VIP()
	if vip == "" {
		t.Fatal("the VNF has no VIP")
	}
	if got := res.AddVimConnections[0].InterfaceInfo["endpoint"]; got != "https://"+vip+":16443" {
		t.Errorf("VIM endpoint %v, want the VIP's", got)
	}
	if got, want := c.EtcdMembers(), c.MastersNames(); !slices.Equal(got, want) {
		t.Errorf("etcd members %v, want %v", got, want)
	}
	holder := c.Cloud.Machine(vip)
	if holder == nil {
		t.Fatal("nobody holds the VIP")
	}
	// The first master by resource name has the highest priority.
	masters := c.VNF.HostsWithRole(lcm.RoleMaster)
	first := slices.MinFunc(masters, func(a, b *sim.Host) int { return strings.Compare(a.Resource, b.Resource) })
	if holder != first.Machine {
		t.Errorf("the VIP is not on %s, the master with the highest priority", first.Resource)
	}
	reachable := func(when string) {
		for _, w := range c.VNF.HostsWithRole(lcm.RoleWorker) {
			if kc, err := c.Cloud.Kube().Dial(w.Machine, vip+":16443"); err != nil || kc == nil {
				t.Errorf("%s: %s cannot reach the API at the VIP: %v", when, w.Resource, err)
			}
		}
	}
	reachable("all masters up")
	h, err := c.Cloud.Connect(c.Ctx, first.Node(), "ubuntu", "ubuntu")
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
	reachable("the first master's HAProxy stopped")
	// kubectl on a master (admin.conf names the VIP) reaches an API
	// server through the VIP's new holder.
	if _, err := c.Kubectl().Nodes(c.Ctx); err != nil {
		t.Errorf("kubectl through the VIP: %v", err)
	}
}

// webPodsSettled waits until the web Deployment's 4 pods run, none of
// them on avoid, and returns them by node.
func (c *Cluster) webPodsSettled(k kubeapi.Kubectl, avoid string) map[string][]string {
	c.T.Helper()
	var pods map[string][]string
	Eventually(c.T, func() error {
		pods = c.WebPods(k)
		n := 0
		for _, ps := range pods {
			n += len(ps)
		}
		if n != 4 || len(pods[avoid]) != 0 {
			return fmt.Errorf("web pods by node %v, want 4 and none on %q", pods, avoid)
		}
		return nil
	})
	return pods
}

// ScaleOutAndIn: scale-out joins the new workers in parallel; scale-in
// drains the victim (its pods move to the other workers), deletes it and
// resets it; a PodDisruptionBudget that forbids the drain fails scale-in
// with the blocking pods named and the node kept, cordoned, until the
// caller forces it.
func ScaleOutAndIn(t *testing.T, opts sim.Options) {
	c := NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1, MinWorkers: 1}, opts)
	// A blocked drain gives up after drain_timeout: short, so that the
	// real kubectl drain does not wait the default 300 s.
	c.Op.Params.DrainTimeout = 10
	c.Instantiate()
	aspect := c.Op.Params.WorkerNode.AspectID

	before := c.VNF.Instance()
	if _, err := c.VNF.ScaleOut(aspect, 2); err != nil {
		t.Fatal(err)
	}
	out := lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: aspect, NumberOfSteps: 2}
	op := c.Op
	op.Instance = before
	res, err := c.Hooks.ScaleOut(c.Ctx, lcm.ScaleEnd, op, out)
	if err != nil {
		t.Fatal(err)
	}
	c.AssertNodes()
	for _, s := range res.Steps {
		if s.Step == kubeadm.StepJoinWorker && len(s.Hosts) != 2 {
			t.Errorf("scale-out joined %d workers, want the 2 new ones", len(s.Hosts))
		}
	}

	k := c.Kubectl()
	if _, err := k.Apply(c.Ctx, []byte(webManifest)); err != nil {
		t.Fatal(err)
	}
	hc, err := c.Cloud.HeatClient(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: aspect, NumberOfSteps: 1}
	victims, err := hc.ScaleInTargets(c.Ctx, c.VNF.StackID(), c.Op.Params.WorkerNode.Group(lcm.RoleWorker), in)
	if err != nil || len(victims) != 1 {
		t.Fatalf("victims %v, %v", victims, err)
	}
	victim := kubeadm.NodeName(lcm.RoleWorker, victims[0].NICAddress)
	if pods := c.webPodsSettled(k, ""); len(pods[victim]) == 0 {
		t.Fatalf("no web pod on %s to move: %v", victim, pods)
	}
	c.Op.Instance = c.VNF.Instance()
	if _, err := c.Hooks.ScaleIn(c.Ctx, lcm.ScaleStart, c.Op, in); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Nodes()[victim]; ok {
		t.Errorf("%s is still in the cluster", victim)
	}
	c.webPodsSettled(k, victim)
	vm := c.Cloud.HostByServer(victims[0].ServerID)
	if vm.FS().Exists("/etc/kubernetes/kubelet.conf") {
		t.Error("the removed worker was not reset")
	}
	if _, err := c.VNF.ScaleIn(aspect, victims[0].Resource); err != nil {
		t.Fatal(err)
	}
	c.AssertNodes()

	// A budget that allows no disruption, once the disruption
	// controller has counted the healthy pods.
	if _, err := k.Apply(c.Ctx, []byte(webPDB)); err != nil {
		t.Fatal(err)
	}
	c.Op.Instance = c.VNF.Instance()
	victims, err = hc.ScaleInTargets(c.Ctx, c.VNF.StackID(), c.Op.Params.WorkerNode.Group(lcm.RoleWorker), in)
	if err != nil {
		t.Fatal(err)
	}
	victim = kubeadm.NodeName(lcm.RoleWorker, victims[0].NICAddress)
	_, err = c.Hooks.ScaleIn(c.Ctx, lcm.ScaleStart, c.Op, in)
	var de *kubeapi.DrainError
	if !errors.As(err, &de) || de.Node != victim || len(de.Pods) == 0 || !strings.HasPrefix(de.Pods[0], "default/web-") {
		t.Fatalf("scale-in under a PDB: %v, want a DrainError naming the web pods of %s", err, victim)
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

// HealWorkerAndMaster: a worker and a master of three are healed, each
// VM replaced with new addresses: the old nodes are gone from the
// cluster, from etcd and from every HAProxy; the new ones are Ready
// members; every node's /etc/hosts block names exactly the nodes there
// are.
func HealWorkerAndMaster(t *testing.T, opts sim.Options) {
	c := NewCluster(t, sim.ClusterShape{Masters: 3, Workers: 2}, opts)
	c.Instantiate()
	for _, role := range []lcm.Role{lcm.RoleWorker, lcm.RoleMaster} {
		hs := c.VNF.HostsWithRole(role)
		old := hs[len(hs)-1]
		oldName := kubeadm.NodeName(role, old.NICAddress)
		if err := c.Heal(old); err != nil {
			t.Fatalf("heal of the %s: %v", role, err)
		}
		c.AssertNodes()
		if _, ok := c.Nodes()[oldName]; ok {
			t.Errorf("%s is still a node after its heal", oldName)
		}
		if got, want := c.EtcdMembers(), c.MastersNames(); !slices.Equal(got, want) {
			t.Errorf("after the %s's heal: etcd members %v, want %v", role, got, want)
		}
		for _, m := range c.VNF.HostsWithRole(lcm.RoleMaster) {
			cfg, err := m.FS().ReadFile("/etc/haproxy/haproxy.cfg")
			if err != nil {
				t.Fatal(err)
			}
			for _, mm := range c.VNF.HostsWithRole(lcm.RoleMaster) {
				if !strings.Contains(string(cfg), mm.NICAddress+":6443") {
					t.Errorf("%s's HAProxy lacks master %s", m.Resource, mm.NICAddress)
				}
			}
			if role == lcm.RoleMaster && strings.Contains(string(cfg), old.NICAddress+":6443") {
				t.Errorf("%s's HAProxy still has the old master %s", m.Resource, old.NICAddress)
			}
		}
		for _, h := range c.VNF.Hosts() {
			hosts, err := h.FS().ReadFile("/etc/hosts")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(hosts), oldName) {
				t.Errorf("%s's /etc/hosts still names %s", h.Resource, oldName)
			}
		}
	}
	if c.Cloud.Machine(c.VNF.VIP()) == nil {
		t.Error("nobody holds the VIP after the heals")
	}
}

// HealEntire: heal_start revokes the VIM credentials on the old
// cluster, Heat replaces every VM (same addresses, so the new nodes have
// the old names), heal_end builds a new cluster from the stored
// parameters, its three masters one etcd, with a new VIM token.
func HealEntire(t *testing.T, opts sim.Options) {
	c := NewCluster(t, sim.ClusterShape{Masters: 3, Workers: 1}, opts)
	first := c.Instantiate()
	oldToken, _ := first.AddVimConnections[0].AccessInfo["bearer_token"].(string)
	res, err := c.Hooks.HealStart(c.Ctx, lcm.HealStart, c.Op, lcm.HealVnfRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.RemoveVimConnections, []string{"kubernetes_vim"}) {
		t.Errorf("heal_start removes %v", res.RemoveVimConnections)
	}
	c.AssertVIMToken(oldToken, false)
	for _, h := range c.VNF.Hosts() {
		if _, err := c.VNF.Heal(h.ServerID, sim.HealOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.Op.Instance = c.VNF.Instance()
	res, err = c.Hooks.HealEnd(c.Ctx, lcm.HealEnd, c.Op, lcm.HealVnfRequest{})
	if err != nil {
		t.Fatal(err)
	}
	c.AssertNodes()
	if got, want := c.EtcdMembers(), c.MastersNames(); !slices.Equal(got, want) {
		t.Errorf("etcd members %v, want %v", got, want)
	}
	if len(res.AddVimConnections) != 1 {
		t.Fatalf("heal_end adds %v", res.AddVimConnections)
	}
	token, _ := res.AddVimConnections[0].AccessInfo["bearer_token"].(string)
	c.AssertVIMToken(token, true)
}

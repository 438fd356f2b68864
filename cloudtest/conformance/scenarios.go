package conformance

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// scenario is a VNF of shape and the steps run on it, in order.
type scenario struct {
	name  string
	shape cloudtest.Shape
	steps []step
}

// step is one subtest of a scenario.
type step struct {
	name string
	run  func(*testing.T, *vnfm)
}

// scenarios are [Run]'s.
func scenarios(opts Options) []scenario {
	instantiate := step{"Instantiate", instantiateStep}
	terminate := step{"Terminate", terminateStep}
	healMaster := step{"HealMaster", healStep(lcm.RoleMaster)}
	if !opts.MasterHeal {
		healMaster = step{"HealMasterRefused", healMasterRefusedStep}
	}
	return []scenario{
		{"SingleMaster", cloudtest.Shape{Masters: 1, Workers: 2}, []step{
			instantiate, {"Rerun", rerunStep}, terminate,
		}},
		{"ThreeMasters", cloudtest.Shape{Masters: 3, Workers: 2}, []step{
			instantiate, {"HealWorker", healStep(lcm.RoleWorker)}, healMaster, {"HealEntire", healEntireStep}, terminate,
		}},
		{"ScaleOutAndIn", cloudtest.Shape{Masters: 1, Workers: 1, MinWorkers: 1}, []step{
			instantiate, {"ScaleOut", scaleOutStep}, {"ScaleIn", scaleInStep}, {"ScaleInBlockedByABudget", scaleInBlockedStep},
		}},
	}
}

// instantiateStep: instantiate_end builds a cluster whose nodes are the
// VNF's masters and workers, all Ready, and adds the Kubernetes VIM.
func instantiateStep(t *testing.T, v *vnfm) {
	res := v.instantiate(t)
	w := v.world(t)
	w.AssertNodes()
	if n := len(res.AddVimConnections); n != 1 {
		t.Fatalf("instantiate_end adds %d VIM connections, want the cluster's", n)
	}
	v.assertVIM(t)
	v.check(t, AfterInstantiate, nil)
}

// rerunStep: the same instantiate_end again changes nothing (no host
// reported changed, the nodes the same objects) and the VIM still works.
func rerunStep(t *testing.T, v *vnfm) {
	w := v.world(t)
	before := uids(w.Nodes())
	res := v.instantiate(t)
	for _, s := range res.Steps {
		for _, h := range s.Hosts {
			if h.Result.Changed {
				t.Errorf("the rerun's %s changed %s: %s", s.Step, h.Host, h.Result.Detail)
			}
		}
	}
	v.assertSame(t, before, "the rerun")
}

// terminateStep: terminate_start revokes the VIM token while the cluster
// runs; after terminate_end (the VMs gone) the instance has no
// Kubernetes VIM connection left, and the OpenStack one. The
// BeforeTerminate check runs first; when it fails, nothing is
// terminated.
func terminateStep(t *testing.T, v *vnfm) {
	if !v.check(t, BeforeTerminate, nil) {
		return
	}
	vim := v.kubernetesVIM(t)
	token, _ := vim.AccessInfo["bearer_token"].(string)
	v.terminate(t, func() { v.world(t).AssertVIMToken(token, false) })
	vims := v.vims()
	if slices.ContainsFunc(vims, isKubernetes) {
		t.Errorf("after terminate the instance keeps the Kubernetes VIM: %v", vims)
	}
	if _, ok := vims.ByID(v.cloud.VimConnection().ID); !ok {
		t.Errorf("terminate removed the OpenStack VIM connection: %v", vims)
	}
}

// healStep heals the last VM of role: its old node is gone, its new VM a
// Ready node, every node Ready, the VIM working.
func healStep(role lcm.Role) func(*testing.T, *vnfm) {
	stage := AfterWorkerHeal
	if role == lcm.RoleMaster {
		stage = AfterMasterHeal
	}
	return func(t *testing.T, v *vnfm) {
		vms := v.vnf.VMs(role)
		old := vms[len(vms)-1]
		healed, _, err := v.heal(t, old)
		if err != nil {
			t.Fatalf("heal_start of the %s %s: %v", role, old.Name(), err)
		}
		w := v.world(t)
		nodes := w.Nodes()
		oldAddr, newAddr := old.Node().NICAddress, healed.Node().NICAddress
		if n, ok := kubescenarios.NodeAt(nodes, oldAddr); ok {
			t.Errorf("the healed %s's old node %s (%s) is still in the cluster", role, n.Name, oldAddr)
		}
		if n, ok := kubescenarios.NodeAt(nodes, newAddr); !ok || !kubescenarios.Ready(n) {
			t.Errorf("the %s's new VM (%s) is not a Ready node: found %v", role, newAddr, ok)
		}
		w.AssertNodes()
		v.assertVIM(t)
		v.check(t, stage, old)
	}
}

// healMasterRefusedStep: a master's heal is refused at heal_start,
// which reports no change; the nodes are the same objects, the VIM
// works.
func healMasterRefusedStep(t *testing.T, v *vnfm) {
	w := v.world(t)
	before := uids(w.Nodes())
	m := v.vnf.VMs(lcm.RoleMaster)[0]
	_, res, err := v.heal(t, m)
	if err == nil {
		t.Fatalf("heal_start of the master %s succeeded; Options.MasterHeal is false: it must be refused", m.Name())
	}
	if res != nil && res.Changed() {
		t.Errorf("the refused heal_start changed %+v", res.Steps)
	}
	v.assertSame(t, before, "the refused heal")
}

// healEntireStep: heal_start revokes the VIM token and drops the VIM
// connection; after heal_end on the new VMs, a new cluster (the old one
// went with its VMs) has every node Ready, with a VIM of its own.
func healEntireStep(t *testing.T, v *vnfm) {
	w := v.world(t)
	old := w.ClusterOf()
	token, _ := v.kubernetesVIM(t).AccessInfo["bearer_token"].(string)
	v.healEntire(t, func() {
		w.AssertVIMToken(token, false)
		if vims := v.vims(); slices.ContainsFunc(vims, isKubernetes) {
			t.Errorf("heal_start of the entire VNF kept the Kubernetes VIM: %v", vims)
		}
	})
	if w.ClusterOf() == old {
		t.Error("after the entire heal the masters are in the old cluster")
	}
	w.AssertNodes()
	v.assertVIM(t)
	v.check(t, AfterEntireHeal, nil)
}

// scaleOutStep: scale-out by two joins the new workers as Ready nodes;
// the nodes there were stay the same objects.
func scaleOutStep(t *testing.T, v *vnfm) {
	w := v.world(t)
	before := uids(w.Nodes())
	added := v.scaleOut(t, 2)
	nodes := w.Nodes()
	if len(added) != 2 {
		t.Errorf("the scale-out by two added %d VMs", len(added))
	}
	for _, vm := range added {
		if n, ok := kubescenarios.NodeAt(nodes, vm.Node().NICAddress); !ok || !kubescenarios.Ready(n) {
			t.Errorf("the new worker %s (%s) is not a Ready node", vm.Name(), vm.Node().NICAddress)
		}
	}
	for name, uid := range before {
		if string(nodes[name].UID) != uid {
			t.Errorf("scale-out rebuilt or removed node %s", name)
		}
	}
	w.AssertNodes()
	v.check(t, AfterScaleOut, nil)
}

// scaleInStep: scale_start drains the worker Heat removes (the web
// Deployment's pods move to the workers that stay) and takes it out of
// the cluster, its kubelet stopped; after Heat removes it and
// scale_end, the nodes are the VNF's.
func scaleInStep(t *testing.T, v *vnfm) {
	w := v.world(t)
	w.CreateWeb()
	w.WebPodsSettled("")
	victim, node, _ := v.victimWithPods(t)
	err := v.scaleIn(t, victim, func() {
		if _, ok := kubescenarios.NodeAt(w.Nodes(), victim.NICAddress); ok {
			t.Fatalf("the removed worker %s is still a node", victim.Resource)
		}
		if v.sim.Kube().ClusterOf(victim.Machine) != nil {
			t.Errorf("the removed worker %s still runs the cluster's kubelet (not reset)", victim.Resource)
		}
		w.WebPodsSettled(node)
	})
	if err != nil {
		t.Fatalf("scale_start: %v", err)
	}
	w.AssertNodes()
	v.check(t, AfterScaleIn, nil)
}

// scaleInBlockedStep: with a PodDisruptionBudget that allows no
// disruption, scale_start fails naming the pods its drain could not
// evict, and the node stays in the cluster with its pods; the budget
// deleted, the same scale-in is done.
func scaleInBlockedStep(t *testing.T, v *vnfm) {
	w := v.world(t)
	w.CreateWebBudget()
	victim, node, pods := v.victimWithPods(t)
	workers := vmNames(v.vnf.VMs(lcm.RoleWorker))
	err := v.scaleIn(t, victim, nil)
	if err == nil {
		t.Fatalf("scale_start of %s succeeded past a PodDisruptionBudget that allows no disruption", node)
	}
	for _, p := range pods {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("scale_start's error does not name the pod %s it could not evict: %v", p, err)
		}
	}
	if _, ok := w.Nodes()[node]; !ok {
		t.Errorf("%s left the cluster although its drain failed", node)
	}
	if got := w.WebPods()[node]; !sameStrings(got, pods) {
		t.Errorf("the web pods on %s after the blocked drain: %v, were %v", node, got, pods)
	}
	if got := vmNames(v.vnf.VMs(lcm.RoleWorker)); !slices.Equal(got, workers) {
		t.Errorf("Heat's workers after the failed scale_start: %v, were %v", got, workers)
	}
	w.DeleteWebBudget()
	if err := v.scaleIn(t, victim, func() { w.WebPodsSettled(node) }); err != nil {
		t.Fatalf("scale_start without the budget: %v", err)
	}
	w.AssertNodes()
	v.check(t, AfterScaleIn, nil)
}

// victimWithPods returns the VM a scale-in by one removes, its node's
// name and the web pods that run there; there must be some.
func (v *vnfm) victimWithPods(t *testing.T) (*sim.Host, string, []string) {
	t.Helper()
	w := v.world(t)
	victim := v.victim(t)
	node, ok := kubescenarios.NodeAt(w.Nodes(), victim.NICAddress)
	if !ok {
		t.Fatalf("the worker %s to remove is no node", victim.Resource)
	}
	pods := w.WebPodsSettled("")[node.Name]
	if len(pods) == 0 {
		t.Fatalf("no web pod runs on %s, the worker to remove", node.Name)
	}
	return victim, node.Name, pods
}

// vmNames returns the VMs' names.
func vmNames(vms []*cloudtest.VM) []string {
	var out []string
	for _, vm := range vms {
		out = append(out, vm.Name())
	}
	return out
}

// sameStrings reports whether a and b hold the same strings.
func sameStrings(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// assertSame checks that what changed nothing left the nodes the same
// objects as before (their UIDs by name), every one Ready, and the VIM
// working.
func (v *vnfm) assertSame(t *testing.T, before map[string]string, what string) {
	t.Helper()
	w := v.world(t)
	if after := uids(w.Nodes()); !maps.Equal(after, before) {
		t.Errorf("%s changed the nodes: %v, were %v", what, after, before)
	}
	w.AssertNodes()
	v.assertVIM(t)
}

// uids returns the nodes' UIDs by name.
func uids(nodes map[string]corev1.Node) map[string]string {
	out := map[string]string{}
	for name, n := range nodes {
		out[name] = string(n.UID)
	}
	return out
}

// isKubernetes reports whether c is a Kubernetes VIM connection.
func isKubernetes(c lcm.VimConnectionInfo) bool { return c.VimType == kubeapi.VimTypeKubernetes }

// kubernetesVIM returns the instance's one Kubernetes VIM connection.
func (v *vnfm) kubernetesVIM(t *testing.T) lcm.VimConnectionInfo {
	t.Helper()
	var found []lcm.VimConnectionInfo
	vims := v.vims()
	for _, c := range vims {
		if isKubernetes(c) {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the instance has %d Kubernetes VIM connections (vimType %q), want 1: %v", len(found), kubeapi.VimTypeKubernetes, vims)
	}
	return found[0]
}

// assertVIM checks the instance's Kubernetes VIM connection: its
// endpoint reaches the cluster's API server, its ssl_ca_cert (when
// given) is the cluster's CA, and its bearer token authenticates as
// [kubescenarios.World.AssertVIMToken] checks. It returns the
// connection.
func (v *vnfm) assertVIM(t *testing.T) lcm.VimConnectionInfo {
	t.Helper()
	vim := v.kubernetesVIM(t)
	w := v.world(t)
	kc := w.ClusterOf()
	endpoint, _ := vim.InterfaceInfo["endpoint"].(string)
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.Port() == "" {
		t.Errorf("the VIM's endpoint %q is no https URL with a port: %v", endpoint, err)
	} else if got, err := v.sim.Kube().Dial(nil, u.Host); err != nil || got != kc {
		t.Errorf("the VIM's endpoint %s does not reach the cluster's API server: %v", endpoint, err)
	}
	if ca, ok := vim.InterfaceInfo["ssl_ca_cert"].(string); ok && !strings.Contains(ca, strings.TrimSpace(string(kc.CACert))) {
		t.Errorf("the VIM's ssl_ca_cert is not the cluster's CA:\n%s", ca)
	}
	token, _ := vim.AccessInfo["bearer_token"].(string)
	if token == "" {
		t.Fatal("the VIM has no bearer_token")
	}
	w.AssertVIMToken(token, true)
	return vim
}

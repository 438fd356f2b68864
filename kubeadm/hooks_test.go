package kubeadm_test

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// kcluster is a Kubernetes kcluster VNF of the simulated cloud with the
// hooks that manage it.
type kcluster struct {
	t     *testing.T
	ctx   context.Context
	cloud *sim.Cloud
	vnf   *sim.VNF
	hooks *kubeadm.Hooks
	op    kubeadm.Op
}

// newKCluster builds the VMs of the cir sample's kcluster (its registries
// left out: the registry package's extension is tested with the drivers)
// with the shape given; nothing is installed on them.
func newKCluster(t *testing.T, shape sim.ClusterShape, opts ...sim.Options) *kcluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	var o sim.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	cloud := sim.Start(t, o)
	req, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, shape)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	var p sim.ClusterParams
	pkg := lcm.NewPackage(samples.VNFPackage())
	if err := lcm.DecodeParams(req.AdditionalParams, lcm.DecodeOptions{Package: pkg}, lcm.Param(kubeadm.ClusterParamKey, &p).Required()); err != nil {
		t.Fatal(err)
	}
	return &kcluster{
		t: t, ctx: ctx, cloud: cloud, vnf: v,
		hooks: &kubeadm.Hooks{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(nil)}},
		op:    kubeadm.Op{Instance: v.Instance(), Package: pkg, Params: p.ClusterParams},
	}
}

// nodes returns the kcluster's nodes as the simulated API server has them,
// by name.
func (c *kcluster) nodes() map[string]corev1.Node {
	c.t.Helper()
	m := c.vnf.HostsWithRole(lcm.RoleMaster)
	var kc = c.cloud.Kube().ClusterOf(m[0].Machine)
	for _, h := range m[1:] {
		if kc != nil {
			break
		}
		kc = c.cloud.Kube().ClusterOf(h.Machine)
	}
	if kc == nil {
		c.t.Fatal("no master is in a kcluster")
	}
	ns, err := kc.Nodes(c.ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]corev1.Node{}
	for _, n := range ns {
		out[n.Name] = n
	}
	return out
}

// assertNodes checks that the kcluster has exactly the VNF's masters and
// workers, each Ready.
func (c *kcluster) assertNodes() {
	c.t.Helper()
	got := c.nodes()
	want := 0
	for _, role := range []lcm.Role{lcm.RoleMaster, lcm.RoleWorker} {
		for _, h := range c.vnf.HostsWithRole(role) {
			want++
			name := kubeadm.NodeName(role, h.NICAddress)
			n, ok := got[name]
			if !ok {
				c.t.Errorf("node %s (%s) is not in the kcluster", name, h.Resource)
				continue
			}
			if !ready(n) {
				c.t.Errorf("node %s is not Ready: %+v", name, n.Status.Conditions)
			}
		}
	}
	if len(got) != want {
		c.t.Errorf("the kcluster has %d nodes, the VNF %d: %v", len(got), want, slices.Sorted(mapsKeys(got)))
	}
}

func mapsKeys(m map[string]corev1.Node) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func ready(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// One master, two workers: instantiate_end builds the kcluster with the
// master's address as the endpoint, every node Ready, and returns the
// Kubernetes VIM; run again, it changes nothing.
func TestInstantiateSingleMaster(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 2})
	res, err := c.hooks.Instantiate(c.ctx, lcm.InstantiateEnd, c.op)
	if err != nil {
		t.Fatal(err)
	}
	c.assertNodes()
	master := c.vnf.HostsWithRole(lcm.RoleMaster)[0]
	if len(res.AddVimConnections) != 1 {
		t.Fatalf("VIM connections %+v", res.AddVimConnections)
	}
	vim := res.AddVimConnections[0]
	if vim.VimType != "kubernetes" || vim.InterfaceInfo["endpoint"] != "https://"+master.NICAddress+":6443" || vim.ID != "kubernetes_vim" {
		t.Errorf("VIM %+v", vim)
	}
	if tok, _ := vim.AccessInfo["bearer_token"].(string); tok == "" {
		t.Error("no bearer token")
	}
	again, err := c.hooks.Instantiate(c.ctx, lcm.InstantiateEnd, c.op)
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
}

// Input the hooks cannot work with is refused, naming the field, before
// any command: no pod network, or one too small for the nodes.
func TestBadInputRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		edit        func(p *kubeadm.ClusterParams)
	}{
		{"no CNI", "cni_manifest_path", func(p *kubeadm.ClusterParams) { p.CNIManifestPath = "" }},
		{"pod network for one node", "master_node.pod_cidr", func(p *kubeadm.ClusterParams) {
			p.MasterNode.PodCIDR = netip.MustParsePrefix("192.168.3.0/24")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 1})
			tc.edit(&c.op.Params)
			_, err := c.hooks.Instantiate(c.ctx, lcm.InstantiateEnd, c.op)
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %v, want a ParamsError naming %s", err, tc.field)
			}
			for _, h := range c.vnf.Hosts() {
				if n := len(h.SSH.Transcript()); n != 0 {
					t.Errorf("%s ran %d commands", h.Resource, n)
				}
			}
		})
	}
}

// instantiate runs instantiate_end and fails the test on an error.
func (c *kcluster) instantiate() *lcm.HookResult {
	c.t.Helper()
	res, err := c.hooks.Instantiate(c.ctx, lcm.InstantiateEnd, c.op)
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

// etcdMembers returns the names of the cluster's etcd members.
func (c *kcluster) etcdMembers() []string {
	c.t.Helper()
	var names []string
	for _, h := range c.vnf.HostsWithRole(lcm.RoleMaster) {
		if kc := c.cloud.Kube().ClusterOf(h.Machine); kc != nil {
			for _, m := range kc.EtcdMembers() {
				names = append(names, m.Name)
			}
			slices.Sort(names)
			return names
		}
	}
	c.t.Fatal("no master is in a cluster")
	return nil
}

// mastersNames returns the node names of the VNF's masters, sorted.
func (c *kcluster) mastersNames() []string {
	var names []string
	for _, h := range c.vnf.HostsWithRole(lcm.RoleMaster) {
		names = append(names, kubeadm.NodeName(lcm.RoleMaster, h.NICAddress))
	}
	slices.Sort(names)
	return names
}

// Three masters: HAProxy and keepalived on each, the endpoint and the
// VIM at the VIP's port 16443, three etcd members, and the VIP still
// answering when the master holding it stops its HAProxy.
func TestInstantiateThreeMasters(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 3, Workers: 2})
	res := c.instantiate()
	c.assertNodes()
	vip := c.vnf.VIP()
	if vip == "" {
		t.Fatal("the VNF has no VIP")
	}
	if got := res.AddVimConnections[0].InterfaceInfo["endpoint"]; got != "https://"+vip+":16443" {
		t.Errorf("VIM endpoint %v, want the VIP's", got)
	}
	if got, want := c.etcdMembers(), c.mastersNames(); !slices.Equal(got, want) {
		t.Errorf("etcd members %v, want %v", got, want)
	}
	holder := c.cloud.Machine(vip)
	if holder == nil {
		t.Fatal("nobody holds the VIP")
	}
	// The first master by resource name has the highest priority.
	masters := c.vnf.HostsWithRole(lcm.RoleMaster)
	first := slices.MinFunc(masters, func(a, b *sim.Host) int { return strings.Compare(a.Resource, b.Resource) })
	if holder != first.Machine {
		t.Errorf("the VIP is not on %s, the master with the highest priority", first.Resource)
	}
	reachable := func(when string) {
		for _, w := range c.vnf.HostsWithRole(lcm.RoleWorker) {
			if kc, err := c.cloud.Kube().Dial(w.Machine, vip+":16443"); err != nil || kc == nil {
				t.Errorf("%s: %s cannot reach the API at the VIP: %v", when, w.Resource, err)
			}
		}
	}
	reachable("all masters up")
	h, err := c.cloud.Connect(c.ctx, first.Node(), "ubuntu", "ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Run(c.ctx, remote.Cmd{Args: []string{"systemctl", "stop", "haproxy"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	if now := c.cloud.Machine(vip); now == nil || now == first.Machine {
		t.Errorf("the VIP stayed on %s after its HAProxy stopped", first.Resource)
	}
	reachable("the first master's HAProxy stopped")
}

// kubectl returns kubectl on the first master, over SSH, as the hooks
// use it.
func (c *kcluster) kubectl() kubeadm.Kubectl {
	c.t.Helper()
	m := c.vnf.HostsWithRole(lcm.RoleMaster)[0]
	h, err := c.cloud.Connect(c.ctx, m.Node(), "ubuntu", "ubuntu")
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { h.Close() })
	return kubeadm.Kubectl{Host: h}
}

// webPods returns the pods of the web Deployment by node.
func (c *kcluster) webPods(k kubeadm.Kubectl) map[string][]string {
	c.t.Helper()
	out := map[string][]string{}
	for name := range c.nodes() {
		pods, err := k.PodsOn(c.ctx, name)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, p := range pods {
			if p.Labels["app"] == "web" {
				out[name] = append(out[name], p.Name)
			}
		}
	}
	return out
}

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 4
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
`

const webPDB = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: default
spec:
  minAvailable: 4
  selector:
    matchLabels:
      app: web
`

// Scale-out joins the new workers in parallel; scale-in drains the
// victim (its pods move to the other workers), deletes it and resets
// it; a PodDisruptionBudget that forbids the drain fails scale-in with
// the blocking pods named and the node kept, cordoned, until the caller
// forces it.
func TestScaleOutAndIn(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 1, MinWorkers: 1})
	c.instantiate()
	aspect := c.op.Params.WorkerNode.AspectID

	before := c.vnf.Instance()
	if _, err := c.vnf.ScaleOut(aspect, 2); err != nil {
		t.Fatal(err)
	}
	out := lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: aspect, NumberOfSteps: 2}
	op := c.op
	op.Instance = before
	res, err := c.hooks.ScaleOut(c.ctx, lcm.ScaleEnd, op, out)
	if err != nil {
		t.Fatal(err)
	}
	c.assertNodes()
	for _, s := range res.Steps {
		if s.Step == kubeadm.StepJoinWorker && len(s.Hosts) != 2 {
			t.Errorf("scale-out joined %d workers, want the 2 new ones", len(s.Hosts))
		}
	}

	k := c.kubectl()
	if _, err := k.Apply(c.ctx, []byte(webManifest)); err != nil {
		t.Fatal(err)
	}
	hc, err := c.cloud.HeatClient(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: aspect, NumberOfSteps: 1}
	victims, err := hc.ScaleInTargets(c.ctx, c.vnf.StackID(), c.op.Params.WorkerNode.Group(lcm.RoleWorker), in)
	if err != nil || len(victims) != 1 {
		t.Fatalf("victims %v, %v", victims, err)
	}
	victim := kubeadm.NodeName(lcm.RoleWorker, victims[0].NICAddress)
	if len(c.webPods(k)[victim]) == 0 {
		t.Fatalf("no web pod on %s to move: %v", victim, c.webPods(k))
	}
	c.op.Instance = c.vnf.Instance()
	if _, err := c.hooks.ScaleIn(c.ctx, lcm.ScaleStart, c.op, in); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.nodes()[victim]; ok {
		t.Errorf("%s is still in the cluster", victim)
	}
	pods := c.webPods(k)
	n := 0
	for _, ps := range pods {
		n += len(ps)
	}
	if n != 4 || len(pods[victim]) != 0 {
		t.Errorf("web pods after scale-in: %v", pods)
	}
	vm := c.cloud.HostByServer(victims[0].ServerID)
	if vm.FS().Exists("/etc/kubernetes/kubelet.conf") {
		t.Error("the removed worker was not reset")
	}
	if _, err := c.vnf.ScaleIn(aspect, victims[0].Resource); err != nil {
		t.Fatal(err)
	}
	c.assertNodes()

	// A budget that allows no disruption.
	if _, err := k.Apply(c.ctx, []byte(webPDB)); err != nil {
		t.Fatal(err)
	}
	c.op.Instance = c.vnf.Instance()
	victims, err = hc.ScaleInTargets(c.ctx, c.vnf.StackID(), c.op.Params.WorkerNode.Group(lcm.RoleWorker), in)
	if err != nil {
		t.Fatal(err)
	}
	victim = kubeadm.NodeName(lcm.RoleWorker, victims[0].NICAddress)
	_, err = c.hooks.ScaleIn(c.ctx, lcm.ScaleStart, c.op, in)
	var de *kubeadm.DrainError
	if !errors.As(err, &de) || de.Node != victim || len(de.Pods) == 0 || !strings.HasPrefix(de.Pods[0], "default/web-") {
		t.Fatalf("scale-in under a PDB: %v, want a DrainError naming the web pods of %s", err, victim)
	}
	node, ok := c.nodes()[victim]
	if !ok || !node.Spec.Unschedulable {
		t.Errorf("%s after a blocked drain: present %v, cordoned %v", victim, ok, node.Spec.Unschedulable)
	}
	c.hooks.ForceDrain = true
	if _, err := c.hooks.ScaleIn(c.ctx, lcm.ScaleStart, c.op, in); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.nodes()[victim]; ok {
		t.Errorf("%s is still in the cluster after a forced scale-in", victim)
	}
}

// heal runs heal_start, has Heat replace the VM of h (new addresses),
// and runs heal_end, as the VNFM does.
func (c *kcluster) heal(h *sim.Host) error {
	c.t.Helper()
	inst := c.vnf.Instance()
	req := lcm.HealVnfRequest{VnfcInstanceID: []string{vnfcOf(inst, h.ServerID)}}
	c.op.Instance = inst
	if _, err := c.hooks.HealStart(c.ctx, lcm.HealStart, c.op, req); err != nil {
		return err
	}
	if _, err := c.vnf.Heal(h.ServerID, sim.HealOptions{NewAddresses: true}); err != nil {
		c.t.Fatal(err)
	}
	c.op.Instance = c.vnf.Instance()
	_, err := c.hooks.HealEnd(c.ctx, lcm.HealEnd, c.op, req)
	return err
}

func vnfcOf(inst *lcm.VnfInstance, server string) string {
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ComputeResource.ResourceID == server {
			return v.ID
		}
	}
	return ""
}

// Heal of a worker and of a master of three, each VM replaced with new
// addresses: the old nodes are gone from the cluster, from etcd and from
// every HAProxy; the new ones are Ready members; every node's /etc/hosts
// block names exactly the nodes there are.
func TestHealWorkerAndMaster(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 3, Workers: 2})
	c.instantiate()
	for _, role := range []lcm.Role{lcm.RoleWorker, lcm.RoleMaster} {
		hs := c.vnf.HostsWithRole(role)
		old := hs[len(hs)-1]
		oldName := kubeadm.NodeName(role, old.NICAddress)
		if err := c.heal(old); err != nil {
			t.Fatalf("heal of the %s: %v", role, err)
		}
		c.assertNodes()
		if _, ok := c.nodes()[oldName]; ok {
			t.Errorf("%s is still a node after its heal", oldName)
		}
		if got, want := c.etcdMembers(), c.mastersNames(); !slices.Equal(got, want) {
			t.Errorf("after the %s's heal: etcd members %v, want %v", role, got, want)
		}
		for _, m := range c.vnf.HostsWithRole(lcm.RoleMaster) {
			cfg, err := m.FS().ReadFile("/etc/haproxy/haproxy.cfg")
			if err != nil {
				t.Fatal(err)
			}
			for _, mm := range c.vnf.HostsWithRole(lcm.RoleMaster) {
				if !strings.Contains(string(cfg), mm.NICAddress+":6443") {
					t.Errorf("%s's HAProxy lacks master %s", m.Resource, mm.NICAddress)
				}
			}
			if role == lcm.RoleMaster && strings.Contains(string(cfg), old.NICAddress+":6443") {
				t.Errorf("%s's HAProxy still has the old master %s", m.Resource, old.NICAddress)
			}
		}
		for _, h := range c.vnf.Hosts() {
			hosts, err := h.FS().ReadFile("/etc/hosts")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(hosts), oldName) {
				t.Errorf("%s's /etc/hosts still names %s", h.Resource, oldName)
			}
		}
	}
	if c.cloud.Machine(c.vnf.VIP()) == nil {
		t.Error("nobody holds the VIP after the heals")
	}
}

// The only master cannot be healed node by node: the error says so and
// nothing is removed.
func TestHealOfTheOnlyMasterIsRefused(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 1})
	c.instantiate()
	m := c.vnf.HostsWithRole(lcm.RoleMaster)[0]
	inst := c.vnf.Instance()
	c.op.Instance = inst
	_, err := c.hooks.HealStart(c.ctx, lcm.HealStart, c.op, lcm.HealVnfRequest{VnfcInstanceID: []string{vnfcOf(inst, m.ServerID)}})
	if err == nil || !strings.Contains(err.Error(), "entire") {
		t.Fatalf("heal of the only master: %v, want an error pointing at an entire heal", err)
	}
	c.assertNodes()
}

// An entire heal: heal_start revokes the VIM credentials on the old
// cluster, Heat replaces every VM (same addresses, so the new nodes
// have the old names), heal_end builds a new cluster from the stored
// parameters, its three masters one etcd.
func TestHealEntire(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 3, Workers: 1})
	c.instantiate()
	res, err := c.hooks.HealStart(c.ctx, lcm.HealStart, c.op, lcm.HealVnfRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.RemoveVimConnections, []string{"kubernetes_vim"}) {
		t.Errorf("heal_start removes %v", res.RemoveVimConnections)
	}
	for _, h := range c.vnf.Hosts() {
		if _, err := c.vnf.Heal(h.ServerID, sim.HealOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.op.Instance = c.vnf.Instance()
	res, err = c.hooks.HealEnd(c.ctx, lcm.HealEnd, c.op, lcm.HealVnfRequest{})
	if err != nil {
		t.Fatal(err)
	}
	c.assertNodes()
	if got, want := c.etcdMembers(), c.mastersNames(); !slices.Equal(got, want) {
		t.Errorf("etcd members %v, want %v", got, want)
	}
	if len(res.AddVimConnections) != 1 {
		t.Errorf("heal_end adds %v", res.AddVimConnections)
	}
}

// The connection to the second worker drops while it joins: the hook
// fails naming it; run again, it converges, and nothing is joined twice.
func TestJoinFaultThenRerunConverges(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 2})
	w := c.vnf.HostsWithRole(lcm.RoleWorker)[1]
	w.SSH.FailProgram("kubeadm", 1, 1, "error execution phase preflight: couldn't validate the identity of the API Server: connection refused")
	res, err := c.hooks.Instantiate(c.ctx, lcm.InstantiateEnd, c.op)
	if err == nil {
		t.Fatal("the first run passed")
	}
	last := res.Steps[len(res.Steps)-1]
	if last.Step != kubeadm.StepJoinWorker || len(last.Hosts) != 2 {
		t.Fatalf("first run ended in %+v", last)
	}
	for _, h := range last.Hosts {
		switch {
		case h.Host == w.Resource && (h.Err == nil || !strings.Contains(h.Err.Error(), "connection refused")):
			t.Errorf("%s: %v, want kubeadm's failure", h.Host, h.Err)
		case h.Host != w.Resource && h.Err != nil:
			t.Errorf("the other worker's join was cut short: %v", h.Err)
		}
	}
	c.instantiate()
	c.assertNodes()
	joins := 0
	for _, e := range w.SSH.Transcript() {
		if strings.Contains(e.Command, "kubeadm join") {
			joins++
		}
	}
	if joins != 2 {
		t.Errorf("%s ran kubeadm join %d times, want the failed one and one more", w.Resource, joins)
	}
}

// compatPackage is the sample package with the reference's install
// script replaced by recordScript, which records its flags.
func compatPackage(t *testing.T) *lcm.Package {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(samples.VNFPackage(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(samples.VNFPackage(), p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m["Scripts/install_k8s_cluster.sh"] = &fstest.MapFile{Data: []byte(recordScript), Mode: 0o755}
	return lcm.NewPackage(m)
}

// In compatibility mode the first master's run of the install script
// initialises the cluster with the reference's flags; nodes are
// prepared, and mgmtkit runs no kubeadm of its own.
func TestCompatModeRunsTheScriptOnTheFirstMaster(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 1})
	c.op.Package = compatPackage(t)
	c.hooks.InstallScript = true
	res, err := c.hooks.Instantiate(c.ctx, lcm.InstantiateEnd, c.op)
	// The recording script builds nothing: kubectl is not even there.
	if err == nil || !strings.Contains(err.Error(), kubeadm.StepCNI) {
		t.Fatalf("error %v, want the CNI step to find no cluster", err)
	}
	if got := stepNames(res); !slices.Equal(got, []string{kubeadm.StepPrepare, kubeadm.StepInit, kubeadm.StepCNI}) {
		t.Errorf("steps %v", got)
	}
	m, w := c.vnf.HostsWithRole(lcm.RoleMaster)[0], c.vnf.HostsWithRole(lcm.RoleWorker)[0]
	rec, err := m.FS().ReadFile("/home/ubuntu/record")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m=" + m.NICAddress, "i=" + m.NICAddress, "p=" + sim.SamplePodCIDR, "a=10.199.187.0/24", "ha_flag=False"} {
		if !strings.Contains(string(rec), want+"\n") {
			t.Errorf("the first master's run lacks %q:\n%s", want, rec)
		}
	}
	if w.FS().Exists("/home/ubuntu/record") {
		t.Error("the worker ran the script before the cluster existed")
	}
	for _, h := range c.vnf.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, "kubeadm init") || strings.Contains(e.Command, "kubeadm join") {
				t.Errorf("%s: mgmtkit ran %q in compatibility mode", h.Resource, e.Command)
			}
		}
	}
}

// A worker added in compatibility mode runs the script with -w, the
// endpoint and a fresh token and CA hash, which no SSH command carries.
func TestCompatModeJoinsAWorkerWithTheScript(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 1, MinWorkers: 1})
	c.instantiate()
	before := c.vnf.Instance()
	added, err := c.vnf.ScaleOut(c.op.Params.WorkerNode.AspectID, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.op.Instance, c.op.Package = before, compatPackage(t)
	c.hooks.InstallScript, c.hooks.ReadyTimeout = true, 2*time.Second
	_, err = c.hooks.ScaleOut(c.ctx, lcm.ScaleEnd, c.op, lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: c.op.Params.WorkerNode.AspectID, NumberOfSteps: 1})
	// The recording script joins nothing: the node never registers.
	name := kubeadm.NodeName(lcm.RoleWorker, added[0].NICAddress)
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("error %v, want the wait for %s to fail", err, name)
	}
	rec, err := added[0].FS().ReadFile("/home/ubuntu/record")
	if err != nil {
		t.Fatal(err)
	}
	master := c.vnf.HostsWithRole(lcm.RoleMaster)[0]
	var token string
	for _, l := range strings.Split(string(rec), "\n") {
		if v, ok := strings.CutPrefix(l, "t="); ok {
			token = v
		}
	}
	if len(token) != 23 || !strings.Contains(string(rec), "w="+added[0].NICAddress+"\n") || !strings.Contains(string(rec), "i="+master.NICAddress+"\n") || !strings.Contains(string(rec), "s=sha256:") {
		t.Fatalf("the worker's run:\n%s", rec)
	}
	for _, h := range c.vnf.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, token) {
				t.Errorf("%s: the join token is in a command: %.200q", h.Resource, e.Command)
			}
		}
	}
}

func stepNames(res *lcm.HookResult) []string {
	var names []string
	if res == nil {
		return nil
	}
	for _, s := range res.Steps {
		names = append(names, s.Step)
	}
	return names
}

// In a data centre whose only way out is a proxy (with a password), the
// nodes fetch the repository key, the packages and the public images
// through it, and the cluster comes up; the proxy's password is in no
// command.
func TestInstantiateBehindAProxy(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{ProxyOnly: true})
	const password = "pr0xy-s3cret"
	proxy := c.cloud.AddProxy("127.0.9.1", 3128, containers.ProxyOptions{Username: "squid", Password: password})
	url := remote.NewSecret("http://squid:" + password + "@127.0.9.1:3128")
	c.op.Params.Proxy = &kubeadm.Proxy{Proxy: system.Proxy{HTTPProxy: url, HTTPSProxy: url}}
	c.instantiate()
	c.assertNodes()
	if len(proxy.Requests()) == 0 {
		t.Error("nothing went through the proxy")
	}
	for _, r := range proxy.Requests() {
		if r.Status != 200 {
			t.Errorf("the proxy answered %d to %s %s from %s", r.Status, r.Method, r.Target, r.Client)
		}
	}
	for _, h := range c.vnf.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, password) {
				t.Errorf("%s: the proxy's password is in %.200q", h.Resource, e.Command)
			}
		}
	}
}

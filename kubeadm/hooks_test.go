package kubeadm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
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
func newKCluster(t *testing.T, shape sim.ClusterShape) *kcluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, sim.Options{})
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

// A hook that would need a pod network refuses to run without one,
// naming the field, before any command.
func TestInstantiateWithoutCNIRunsNothing(t *testing.T) {
	c := newKCluster(t, sim.ClusterShape{Masters: 1, Workers: 1})
	c.op.Params.CNIManifestPath = ""
	_, err := c.hooks.Instantiate(c.ctx, lcm.InstantiateEnd, c.op)
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "cni_manifest_path") {
		t.Fatalf("error %v, want a ParamsError naming cni_manifest_path", err)
	}
	for _, h := range c.vnf.Hosts() {
		if n := len(h.SSH.Transcript()); n != 0 {
			t.Errorf("%s ran %d commands", h.Resource, n)
		}
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
	first := c.vnf.HostsWithRole(lcm.RoleMaster)
	for _, w := range c.vnf.HostsWithRole(lcm.RoleWorker) {
		if kc, err := c.cloud.Kube().Dial(w.Machine, vip+":16443"); err != nil || kc == nil {
			t.Errorf("%s cannot reach the API at the VIP: %v", w.Resource, err)
		}
	}
	_ = first
}

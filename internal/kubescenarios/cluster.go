// Package kubescenarios holds the kubeadm cluster scenarios written
// once and run on both Kubernetes backends of the simulated cloud: the
// in-memory model (kubeadm's tests) and a real kube-apiserver with its
// controllers, scheduler and etcd (the module internal/realkube). Where
// the two disagree, a scenario fails on one of them: the real control
// plane is the model's conformance test.
//
// Every assertion is about an outcome (nodes Ready, pods moved, etcd
// members, HAProxy backends, what a token may do), and where a real
// control plane takes time to converge (a ReplicaSet replacing evicted
// pods, the scheduler binding them) it is awaited with [Eventually],
// which the model satisfies at once.
package kubescenarios

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// Cluster is a Kubernetes cluster VNF of the simulated cloud with the
// hooks that manage it.
type Cluster struct {
	// T is the test the cluster belongs to; helpers fail it.
	T testing.TB
	// Ctx bounds the scenario (5 minutes).
	Ctx context.Context
	// Cloud is the simulated cloud, its Kubernetes of the backend asked.
	Cloud *sim.Cloud
	// VNF is the cluster VNF's stack and VMs.
	VNF *sim.VNF
	// Hooks manage the cluster, as a driver calls them.
	Hooks *kubeadm.Hooks
	// Op is what each hook is given: the instance, package, parameters.
	Op kubeadm.Op
	// Params are the request's parameters as the cluster driver decodes
	// them, every part's (registries, storage, ...).
	Params drivers.ClusterParams
}

// NewCluster builds the VMs of the cir sample's cluster (its registries
// left out: the registry package's extension is tested with the drivers)
// with the shape given; nothing is installed on them.
func NewCluster(t testing.TB, shape sim.ClusterShape, opts sim.Options) *Cluster {
	t.Helper()
	return NewClusterFrom(t, opts, func(c *sim.Cloud) (*lcm.InstantiateVnfRequest, sim.Topology, error) {
		return c.SampleCluster(samples.InstantiateCIRCluster, shape)
	})
}

// NewClusterFrom builds the VMs of the cluster VNF request that plan
// makes in a new cloud (Cloud.SampleCluster or Cloud.SpecCluster with a
// sample's name and a shape), decodes its parameters as the cluster
// driver does, and returns it as [NewCluster] does; the request's
// extensions (registries, storage) are not in Op.
func NewClusterFrom(t testing.TB, opts sim.Options, plan func(c *sim.Cloud) (*lcm.InstantiateVnfRequest, sim.Topology, error)) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, opts)
	req, topo, err := plan(cloud)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	pkg := lcm.NewPackage(samples.VNFPackage())
	p, err := drivers.DecodeClusterParams(req.AdditionalParams, pkg)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{
		T: t, Ctx: ctx, Cloud: cloud, VNF: v,
		Hooks:  &kubeadm.Hooks{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(nil)}},
		Op:     kubeadm.Op{Instance: v.Instance(), Package: pkg, Params: p.ClusterParams},
		Params: p,
	}
}

// ClusterOf is the Kubernetes cluster of the VNF's masters (the first
// master by resource that is in one).
func (c *Cluster) ClusterOf() *kube.Cluster {
	c.T.Helper()
	for _, h := range c.VNF.HostsWithRole(lcm.RoleMaster) {
		if kc := c.Cloud.Kube().ClusterOf(h.Machine); kc != nil {
			return kc
		}
	}
	c.T.Fatal("no master is in a cluster")
	return nil
}

// Nodes returns the cluster's nodes as its API server has them, by name.
func (c *Cluster) Nodes() map[string]corev1.Node {
	c.T.Helper()
	kc := c.ClusterOf()
	ns, err := kc.Nodes(c.Ctx)
	if err != nil {
		c.T.Fatal(err)
	}
	out := map[string]corev1.Node{}
	for _, n := range ns {
		out[n.Name] = n
	}
	return out
}

// AssertNodes checks that the Cluster has exactly the VNF's masters and
// workers, each Ready.
func (c *Cluster) AssertNodes() {
	c.T.Helper()
	got := c.Nodes()
	want := 0
	for _, role := range []lcm.Role{lcm.RoleMaster, lcm.RoleWorker} {
		for _, h := range c.VNF.HostsWithRole(role) {
			want++
			name := kubeadm.NodeName(role, h.NICAddress)
			n, ok := got[name]
			if !ok {
				c.T.Errorf("node %s (%s) is not in the Cluster", name, h.Resource)
				continue
			}
			if !Ready(n) {
				c.T.Errorf("node %s is not Ready: %+v", name, n.Status.Conditions)
			}
		}
	}
	if len(got) != want {
		c.T.Errorf("the Cluster has %d nodes, the VNF %d: %v", len(got), want, slices.Sorted(maps.Keys(got)))
	}
}

// Ready reports whether n's Ready condition is True.
func Ready(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Instantiate runs instantiate_end and fails the test on an error.
func (c *Cluster) Instantiate() *lcm.HookResult {
	c.T.Helper()
	res, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
	if err != nil {
		c.T.Fatal(err)
	}
	return res
}

// EtcdMembers returns the names of the cluster's etcd members, sorted.
func (c *Cluster) EtcdMembers() []string {
	c.T.Helper()
	ms, err := c.ClusterOf().EtcdMembers(c.Ctx)
	if err != nil {
		c.T.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// MastersNames returns the node names of the VNF's masters, sorted.
func (c *Cluster) MastersNames() []string {
	var names []string
	for _, h := range c.VNF.HostsWithRole(lcm.RoleMaster) {
		names = append(names, kubeadm.NodeName(lcm.RoleMaster, h.NICAddress))
	}
	slices.Sort(names)
	return names
}

// Kubectl returns kubectl on the first master, over SSH, as the hooks
// use it.
func (c *Cluster) Kubectl() kubeapi.Kubectl {
	c.T.Helper()
	m := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
	h, err := c.Cloud.Connect(c.Ctx, m.Node(), "ubuntu", "ubuntu")
	if err != nil {
		c.T.Fatal(err)
	}
	c.T.Cleanup(func() { h.Close() })
	return kubeapi.Kubectl{Host: h}
}

// WebPods returns the running pods of the web Deployment by node (a
// pod being deleted, or not started yet, does not count).
func (c *Cluster) WebPods(k kubeapi.Kubectl) map[string][]string {
	c.T.Helper()
	out := map[string][]string{}
	for name := range c.Nodes() {
		pods, err := k.PodsOn(c.Ctx, name)
		if err != nil {
			c.T.Fatal(err)
		}
		for _, p := range pods {
			if p.Labels["app"] == "web" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
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

// Heal runs heal_start, has Heat replace the VM of h (new addresses),
// and runs heal_end, as the VNFM does.
func (c *Cluster) Heal(h *sim.Host) error {
	c.T.Helper()
	inst := c.VNF.Instance()
	req := lcm.HealVnfRequest{VnfcInstanceID: []string{VnfcOf(inst, h.ServerID)}}
	c.Op.Instance = inst
	if _, err := c.Hooks.HealStart(c.Ctx, lcm.HealStart, c.Op, req); err != nil {
		return err
	}
	if _, err := c.VNF.Heal(h.ServerID, sim.HealOptions{NewAddresses: true}); err != nil {
		c.T.Fatal(err)
	}
	c.Op.Instance = c.VNF.Instance()
	_, err := c.Hooks.HealEnd(c.Ctx, lcm.HealEnd, c.Op, req)
	return err
}

// VnfcOf is the VNFC of inst whose compute resource is server.
func VnfcOf(inst *lcm.VnfInstance, server string) string {
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ComputeResource.ResourceID == server {
			return v.ID
		}
	}
	return ""
}

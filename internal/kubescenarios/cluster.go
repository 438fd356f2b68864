// Package kubescenarios holds what the cluster scenarios share, and the
// scenarios that only hold for the clusters package kubeadm builds, run
// on both Kubernetes backends of the simulated cloud: the in-memory
// model (kubeadm's tests) and a real kube-apiserver with its controllers,
// scheduler and etcd (the module cloudtest/realkube). Where the two
// disagree, a scenario fails on one of them: the real control plane is
// the model's conformance test.
//
// [World] is a cluster VNF as any driver leaves it, with the
// driver-neutral assertions (every master and worker a Ready node, a VIM
// token's authentication and RBAC, a workload's pods by node): the public
// conformance suite (cloudtest/conformance) asserts with it, whatever
// driver built the cluster. [Cluster] adds package kubeadm's hooks, for
// the kubeadm-specific scenario ([Run]: a forced scale-in past a
// PodDisruptionBudget), the storage scenarios ([RunStorage]) and
// kubeadm's own tests. What kubeadm promises of its HA topology (the
// VIP, HAProxy, keepalived's failover, etcd membership and /etc/hosts
// across heals) is checked at the conformance suite's stages, by package
// hachecks, in the kubeadm driver's conformance runs.
//
// Every assertion is about an outcome, and where a real control plane
// takes time to converge (a ReplicaSet replacing evicted pods, the
// scheduler binding them) it is awaited with [Eventually], which the
// model satisfies at once.
package kubescenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// World is a Kubernetes cluster VNF of the simulated cloud, whatever
// built its cluster: what the driver-neutral assertions look at.
type World struct {
	// T is the test the assertions fail.
	T testing.TB
	// Ctx bounds what the assertions ask the cloud.
	Ctx context.Context
	// Cloud is the simulated cloud, its Kubernetes of the backend asked.
	Cloud *sim.Cloud
	// VNF is the cluster VNF's stack and VMs.
	VNF *sim.VNF
}

// Cluster is a Kubernetes cluster VNF of the simulated cloud with
// package kubeadm's hooks that manage it.
type Cluster struct {
	World
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

// ScenarioTimeout bounds a scenario: its context ends then.
const ScenarioTimeout = 5 * time.Minute

// NewClusterFrom builds the VMs of the cluster VNF request that plan
// makes in a new cloud (Cloud.SampleCluster or Cloud.SpecCluster with a
// sample's name and a shape), decodes its parameters as the cluster
// driver does, and returns it as [NewCluster] does; the request's
// extensions (registries, storage) are not in Op.
func NewClusterFrom(t testing.TB, opts sim.Options, plan func(c *sim.Cloud) (*lcm.InstantiateVnfRequest, sim.Topology, error)) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ScenarioTimeout)
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
		World:  World{T: t, Ctx: ctx, Cloud: cloud, VNF: v},
		Hooks:  &kubeadm.Hooks{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(nil)}},
		Op:     kubeadm.Op{Instance: v.Instance(), Package: pkg, Params: p.ClusterParams},
		Params: p,
	}
}

// ClusterOf is the Kubernetes cluster of the VNF's masters (the first
// master by resource that is in one).
func (w *World) ClusterOf() *kube.Cluster {
	w.T.Helper()
	for _, h := range w.VNF.HostsWithRole(lcm.RoleMaster) {
		if kc := w.Cloud.Kube().ClusterOf(h.Machine); kc != nil {
			return kc
		}
	}
	w.T.Fatal("no master is in a cluster")
	return nil
}

// Nodes returns the cluster's nodes as its API server has them, by name.
func (w *World) Nodes() map[string]corev1.Node {
	w.T.Helper()
	ns, err := w.ClusterOf().Nodes(w.Ctx)
	if err != nil {
		w.T.Fatal(err)
	}
	out := map[string]corev1.Node{}
	for _, n := range ns {
		out[n.Name] = n
	}
	return out
}

// NodeAt returns the cluster's node whose InternalIP is addr (a VM's NIC
// address), whatever its name.
func NodeAt(nodes map[string]corev1.Node, addr string) (corev1.Node, bool) {
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && a.Address == addr {
				return n, true
			}
		}
	}
	return corev1.Node{}, false
}

// ControlPlaneLabel marks a control-plane node: kubeadm's
// mark-control-plane phase sets it (cmd/kubeadm/app/constants:
// LabelNodeRoleControlPlane), on the clusters kubespray builds too.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// AssertNodes checks that the cluster's nodes are exactly the VNF's
// masters and workers, each found by its NIC address (the node's
// InternalIP), Ready, and labelled control-plane when it is a master.
func (w *World) AssertNodes() {
	w.T.Helper()
	got := w.Nodes()
	want := 0
	for _, role := range []lcm.Role{lcm.RoleMaster, lcm.RoleWorker} {
		for _, h := range w.VNF.HostsWithRole(role) {
			want++
			n, ok := NodeAt(got, h.NICAddress)
			if !ok {
				w.T.Errorf("the %s %s (%s) is no node of the cluster", role, h.Resource, h.NICAddress)
				continue
			}
			if !Ready(n) {
				w.T.Errorf("node %s (%s) is not Ready: %+v", n.Name, h.Resource, n.Status.Conditions)
			}
			if _, cp := n.Labels[ControlPlaneLabel]; cp != (role == lcm.RoleMaster) {
				w.T.Errorf("node %s of the %s %s: control-plane label %v", n.Name, role, h.Resource, cp)
			}
		}
	}
	if len(got) != want {
		w.T.Errorf("the cluster has %d nodes, the VNF %d masters and workers: %v", len(got), want, slices.Sorted(maps.Keys(got)))
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

// Kubectl returns kubectl on the first master, over SSH with its login,
// as the hooks use it.
func (w *World) Kubectl() kubeapi.Kubectl {
	w.T.Helper()
	m := w.VNF.HostsWithRole(lcm.RoleMaster)[0]
	h, err := w.Cloud.Connect(w.Ctx, m.Node(), m.Login.User, m.Login.Password)
	if err != nil {
		w.T.Fatal(err)
	}
	w.T.Cleanup(func() { h.Close() })
	return kubeapi.Kubectl{Host: h}
}

// AssertVIMToken checks what the cluster's API server makes of the VIM's
// bearer token: valid, it authenticates as a service account that RBAC
// lets list nodes (cluster-admin, which the VIM needs to deploy CNFs:
// the reference binds it), while a service account without a binding may
// not; revoked, it is refused.
func (w *World) AssertVIMToken(token string, valid bool) {
	w.T.Helper()
	api := w.ClusterOf().API
	if !valid {
		// A real API server caches a token's successful authentication
		// for 10 s (pkg/kubeapiserver/authenticator/config.go: the token
		// cache's success TTL); the model forgets it at once.
		Eventually(w.T, func() error {
			if user, _, err := api.Authenticate(w.Ctx, token); err == nil {
				return fmt.Errorf("the revoked token still authenticates as %s", user)
			}
			return nil
		})
		return
	}
	user, groups, err := api.Authenticate(w.Ctx, token)
	if err != nil {
		w.T.Fatalf("the VIM token does not authenticate: %v", err)
	}
	if !strings.HasPrefix(user, "system:serviceaccount:") {
		w.T.Errorf("the VIM token is %s's, want a service account's", user)
	}
	for _, q := range []struct {
		verb, resource, namespace string
	}{
		{"list", "nodes", ""},
		{"get", "nodes", ""},
		{"list", "secrets", "kube-system"},
	} {
		ok, err := api.Authorize(w.Ctx, user, groups, q.verb, "", q.resource, q.namespace)
		if err != nil || !ok {
			w.T.Errorf("%s may not %s %s in %q: %v (%v)", user, q.verb, q.resource, q.namespace, ok, err)
		}
	}
	// Nothing RBAC does not grant: a user the token is not.
	if ok, err := api.Authorize(w.Ctx, "system:serviceaccount:default:nobody", []string{"system:serviceaccounts", "system:authenticated"}, "list", "", "nodes", ""); err != nil || ok {
		w.T.Errorf("a service account nothing was granted to may list nodes: %v (%v)", ok, err)
	}
}

// ScaleInTargets returns the VMs of group that a scale-in by req
// removes, as Heat's and Tacker's choice makes them (the newest members).
func (w *World) ScaleInTargets(group heat.Group, req lcm.ScaleVnfRequest) []lcm.Node {
	w.T.Helper()
	hc, err := w.Cloud.HeatClient(w.Ctx)
	if err != nil {
		w.T.Fatal(err)
	}
	victims, err := hc.ScaleInTargets(w.Ctx, w.VNF.StackID(), group, req)
	if err != nil || len(victims) != req.Steps() {
		w.T.Fatalf("scale-in targets %v, %v; want %d", victims, err, req.Steps())
	}
	return victims
}

// The web workload: a Deployment of WebReplicas pods the scenarios'
// drains move, and a PodDisruptionBudget that forbids evicting any.
const (
	WebName     = "web"
	WebReplicas = 4
)

// CreateWeb creates the web Deployment (WebReplicas pause pods).
func (w *World) CreateWeb() {
	w.T.Helper()
	labels := map[string]string{"app": WebName}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: WebName, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(WebReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: WebName, Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if _, err := w.ClusterOf().API.Create(w.Ctx, d); err != nil {
		w.T.Fatal(err)
	}
}

// CreateWebBudget creates a PodDisruptionBudget that allows no
// disruption of the web pods (minAvailable: all of them).
func (w *World) CreateWebBudget() {
	w.T.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: WebName, Namespace: metav1.NamespaceDefault},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(WebReplicas)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": WebName}},
		},
	}
	if _, err := w.ClusterOf().API.Create(w.Ctx, pdb); err != nil {
		w.T.Fatal(err)
	}
}

// DeleteWebBudget deletes [World.CreateWebBudget]'s budget.
func (w *World) DeleteWebBudget() {
	w.T.Helper()
	if err := w.ClusterOf().API.Delete(w.Ctx, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), metav1.NamespaceDefault, WebName); err != nil {
		w.T.Fatal(err)
	}
}

// WebPods returns the running pods of the web Deployment by node name (a
// pod being deleted, or not started yet, does not count).
func (w *World) WebPods() map[string][]string {
	w.T.Helper()
	kc := w.ClusterOf()
	if _, err := kc.Nodes(w.Ctx); err != nil { // the kubelets synchronised
		w.T.Fatal(err)
	}
	objs, err := kc.API.List(w.Ctx, corev1.SchemeGroupVersion.WithKind("Pod"), metav1.NamespaceDefault)
	if err != nil {
		w.T.Fatal(err)
	}
	out := map[string][]string{}
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if ok && p.Labels["app"] == WebName && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Name)
		}
	}
	return out
}

// WebPodsSettled waits until the web Deployment's pods all run, none of
// them on the node avoid, and returns them by node.
func (w *World) WebPodsSettled(avoid string) map[string][]string {
	w.T.Helper()
	var pods map[string][]string
	Eventually(w.T, func() error {
		pods = w.WebPods()
		n := 0
		for _, ps := range pods {
			n += len(ps)
		}
		if n != WebReplicas || len(pods[avoid]) != 0 {
			return fmt.Errorf("web pods by node %v, want %d and none on %q", pods, WebReplicas, avoid)
		}
		return nil
	})
	return pods
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
func (w *World) EtcdMembers() []string {
	w.T.Helper()
	ms, err := w.ClusterOf().EtcdMembers(w.Ctx)
	if err != nil {
		w.T.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// MastersNames returns the node names package kubeadm gives the VNF's
// masters, sorted.
func (w *World) MastersNames() []string {
	var names []string
	for _, h := range w.VNF.HostsWithRole(lcm.RoleMaster) {
		names = append(names, kubeadm.NodeName(lcm.RoleMaster, h.NICAddress))
	}
	slices.Sort(names)
	return names
}

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

// HealEntire runs heal_start of the entire VNF, has Heat replace every
// VM (same addresses), and runs heal_end, as the VNFM does.
func (c *Cluster) HealEntire() {
	c.T.Helper()
	c.Op.Instance = c.VNF.Instance()
	if _, err := c.Hooks.HealStart(c.Ctx, lcm.HealStart, c.Op, lcm.HealVnfRequest{}); err != nil {
		c.T.Fatal(err)
	}
	for _, h := range c.VNF.Hosts() {
		if _, err := c.VNF.Heal(h.ServerID, sim.HealOptions{}); err != nil {
			c.T.Fatal(err)
		}
	}
	c.Op.Instance = c.VNF.Instance()
	if _, err := c.Hooks.HealEnd(c.Ctx, lcm.HealEnd, c.Op, lcm.HealVnfRequest{}); err != nil {
		c.T.Fatal(err)
	}
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

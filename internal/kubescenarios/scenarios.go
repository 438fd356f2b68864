package kubescenarios

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// Run runs the kubeadm-specific scenarios as subtests, each on a cloud
// of its own started with opts (opts.KubeBackend chooses the Kubernetes):
// what the public conformance suite (cloudtest/conformance, which
// kubeadm's driver passes too) cannot ask of any driver, and what a
// check at the suite's stages cannot do either (a drain forced past a
// budget takes a cluster of its own). kubeadm's HA topology is checked
// at those stages, in the kubeadm driver's conformance runs (package
// hachecks). The subtests run one after the other: a real control plane
// holds a few hundred megabytes.
func Run(t *testing.T, opts sim.Options) {
	for _, s := range []struct {
		name string
		run  func(*testing.T, sim.Options)
	}{
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

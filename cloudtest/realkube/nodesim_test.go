package realkube_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// TestNodeSimulator: a pod bound to a Ready node runs and is Ready with
// an IP of the node's podCIDR; deleted, it disappears; a pod bound to a
// node whose Ready condition is Unknown stays Terminating when deleted.
func TestNodeSimulator(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "sim-cp")
	api := cp.API()
	live := createNode(t, ctx, api, "live", "192.168.0.21", corev1.ConditionTrue)
	dead := createNode(t, ctx, api, "dead", "192.168.0.22", corev1.ConditionUnknown)

	// Node IPAM gives the live node a podCIDR of 10.244.0.0/16.
	var cidr netip.Prefix
	eventually(t, ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kube.KindNode, "", live.Name)
		if err != nil {
			return false, err
		}
		cidr, err = netip.ParsePrefix(o.(*corev1.Node).Spec.PodCIDR)
		return err == nil, nil
	}, func() string { return "node IPAM gave no podCIDR" })

	p1 := pod("default", "on-live", nil)
	p1.Spec.NodeName = live.Name
	p2 := pod("default", "on-live-host", nil)
	p2.Spec.NodeName = live.Name
	p2.Spec.HostNetwork = true
	p3 := pod("default", "on-dead", nil)
	p3.Spec.NodeName = dead.Name
	for _, p := range []*corev1.Pod{p1, p2, p3} {
		if _, err := api.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var got *corev1.Pod
	eventually(t, ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kube.KindPod, "default", p1.Name)
		if err != nil {
			return false, err
		}
		got = o.(*corev1.Pod)
		return got.Status.Phase == corev1.PodRunning && podReady(got), nil
	}, func() string { return "pod on the live node did not run: " + got.Status.String() })
	ip, err := netip.ParseAddr(got.Status.PodIP)
	if err != nil || !cidr.Contains(ip) {
		t.Errorf("pod IP %q is not in the node's podCIDR %s", got.Status.PodIP, cidr)
	}
	if got.Status.HostIP != "192.168.0.21" || got.Status.StartTime == nil ||
		len(got.Status.ContainerStatuses) != 1 || !got.Status.ContainerStatuses[0].Ready || got.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("status of a running pod: %s", got.Status.String())
	}
	eventually(t, ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kube.KindPod, "default", p2.Name)
		if err != nil {
			return false, err
		}
		got = o.(*corev1.Pod)
		return podReady(got), nil
	}, func() string { return "hostNetwork pod did not run" })
	if got.Status.PodIP != "192.168.0.21" {
		t.Errorf("hostNetwork pod IP = %q, want the node's 192.168.0.21", got.Status.PodIP)
	}

	// The pod of the dead node does not run.
	o, err := api.Get(ctx, kube.KindPod, "default", p3.Name)
	if err != nil {
		t.Fatal(err)
	}
	if p := o.(*corev1.Pod); p.Status.Phase != corev1.PodPending {
		t.Errorf("pod on a node with Ready=Unknown is %s, want Pending", p.Status.Phase)
	}

	// Deletions: the dead node's first, then the live node's; once the
	// live node's pod is gone, the dead node's is still Terminating.
	if err := api.Delete(ctx, kube.KindPod, "default", p3.Name); err != nil {
		t.Fatal(err)
	}
	if err := api.Delete(ctx, kube.KindPod, "default", p1.Name); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := api.Get(ctx, kube.KindPod, "default", p1.Name)
		return apierrors.IsNotFound(err), nil
	}, func() string { return "deleted pod of the live node still there" })
	time.Sleep(2 * time.Second) // give a wrong deletion time to happen
	o, err = api.Get(ctx, kube.KindPod, "default", p3.Name)
	if err != nil {
		t.Fatalf("pod of the dead node: %v", err)
	}
	if o.(*corev1.Pod).DeletionTimestamp == nil {
		t.Error("pod of the dead node has no deletionTimestamp")
	}

	// The live node's Lease is renewed; the dead node has none.
	c := clientset(t, cp)
	eventually(t, ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, live.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == live.Name, err
	}, func() string { return "no lease of the live node" })
	if _, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, dead.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lease of the dead node: %v, want NotFound", err)
	}
}

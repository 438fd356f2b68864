package realkube_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// TestEvictionRespectsPDB: with a PodDisruptionBudget minAvailable 2 over
// the 2 pods of a Deployment, an eviction is refused with 429 and a cause
// naming the budget; with minAvailable 1 it succeeds, the evicted pod
// goes and the ReplicaSet's replacement runs on the other node.
func TestEvictionRespectsPDB(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "pdb-cp")
	api := cp.API()
	n1 := createNode(t, ctx, api, "worker-1", "192.168.0.31", corev1.ConditionTrue)

	labels := map[string]string{"app": "web"}
	two := int32(2)
	tmpl := pod("", "", labels)
	if _, err := api.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &two,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec},
		},
	}); err != nil {
		t.Fatal(err)
	}
	minAvailable := intstr.FromInt32(2)
	if _, err := api.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}); err != nil {
		t.Fatal(err)
	}

	readyPods := func(ctx context.Context) ([]*corev1.Pod, error) {
		objs, err := api.List(ctx, kube.KindPod, "default")
		if err != nil {
			return nil, err
		}
		var out []*corev1.Pod
		for _, o := range objs {
			if p := o.(*corev1.Pod); p.Labels["app"] == "web" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	var pods []*corev1.Pod
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		pods, err = readyPods(ctx)
		return len(pods) == 2, err
	}, func() string { return fmt.Sprintf("%d of 2 pods ready", len(pods)) })
	for _, p := range pods {
		if p.Spec.NodeName != n1.Name {
			t.Errorf("pod %s on %q, want %s", p.Name, p.Spec.NodeName, n1.Name)
		}
	}

	waitPDB := func(allowed int32) {
		t.Helper()
		var pdb *policyv1.PodDisruptionBudget
		eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
			o, err := api.Get(ctx, kube.KindPodDisruptionBudget, "default", "web-pdb")
			if err != nil {
				return false, err
			}
			pdb = o.(*policyv1.PodDisruptionBudget)
			return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 2 && pdb.Status.DisruptionsAllowed == allowed, nil
		}, func() string { return fmt.Sprintf("PDB status %+v, want %d disruptions allowed", pdb.Status, allowed) })
	}
	waitPDB(0)

	// minAvailable 2 of 2: refused.
	err := api.Evict(ctx, "default", pods[0].Name)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction with minAvailable 2 of 2: %v, want 429 TooManyRequests", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("eviction error %#v has no details", err)
	}
	named := false
	for _, c := range status.Status().Details.Causes {
		if c.Type == policyv1.DisruptionBudgetCause && strings.Contains(c.Message, "web-pdb") {
			named = true
		}
	}
	if !named {
		t.Errorf("eviction error %q, causes %+v: no cause names the PDB web-pdb", err, status.Status().Details.Causes)
	}

	// Room elsewhere, the first node cordoned (as kubectl drain does), and
	// minAvailable 1: the eviction goes through.
	n2 := createNode(t, ctx, api, "worker-2", "192.168.0.32", corev1.ConditionTrue)
	o, err := api.Get(ctx, kube.KindNode, "", n1.Name)
	if err != nil {
		t.Fatal(err)
	}
	cordoned := o.(*corev1.Node)
	cordoned.Spec.Unschedulable = true
	if _, err := api.Update(ctx, cordoned); err != nil {
		t.Fatal(err)
	}
	o, err = api.Get(ctx, kube.KindPodDisruptionBudget, "default", "web-pdb")
	if err != nil {
		t.Fatal(err)
	}
	pdb := o.(*policyv1.PodDisruptionBudget)
	one := intstr.FromInt32(1)
	pdb.Spec.MinAvailable = &one
	if _, err := api.Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitPDB(1)
	evicted := pods[0]
	if err := api.Evict(ctx, "default", evicted.Name); err != nil {
		t.Fatalf("eviction with minAvailable 1 of 2: %v", err)
	}
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := api.Get(ctx, kube.KindPod, "default", evicted.Name)
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		pods, err = readyPods(ctx)
		return len(pods) == 2, err
	}, func() string { return fmt.Sprintf("evicted pod not replaced: %d ready pods", len(pods)) })
	var replacement *corev1.Pod
	for _, p := range pods {
		if p.Name == evicted.Name || p.UID == evicted.UID {
			t.Errorf("evicted pod %s still listed", p.Name)
		}
		if p.Spec.NodeName == n2.Name {
			replacement = p
		}
	}
	if replacement == nil {
		t.Errorf("no replacement pod on %s: %v", n2.Name, podNodes(pods))
	}
}

func podNodes(pods []*corev1.Pod) map[string]string {
	m := map[string]string{}
	for _, p := range pods {
		m[p.Name] = p.Spec.NodeName
	}
	return m
}

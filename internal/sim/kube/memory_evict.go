package kube

import (
	"context"
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// pdbSelects reports whether a PodDisruptionBudget covers a pod: same
// namespace, and a selector that is valid, not empty, and matches
// (eviction.go getPodDisruptionBudgets: "a PDB with a nil or empty
// selector ... should match nothing").
func pdbSelects(pdb *policyv1.PodDisruptionBudget, p *corev1.Pod) bool {
	if pdb.Namespace != p.Namespace {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels))
}

// disruptionLocked is pkg/controller/disruption/disruption.go trySync:
// for each PodDisruptionBudget, the pods it selects, how many are healthy
// (Ready, countHealthyPods), how many must be (getExpectedPodCount:
// minAvailable as a number; a percentage of, or maxUnavailable subtracted
// from, the replicas of the pods' controllers), and so how many
// disruptions are allowed. A pod without a controller makes the
// percentage forms fail safe (disruptionsAllowed 0), as the controller's
// failSafe does.
func (m *MemoryAPI) disruptionLocked() {
	for _, o := range m.listLocked(KindPodDisruptionBudget, "") {
		pdb := o.(*policyv1.PodDisruptionBudget).DeepCopy()
		var pods []*corev1.Pod
		for _, p := range m.pods(pdb.Namespace) {
			if pdbSelects(pdb, p) {
				pods = append(pods, p)
			}
		}
		healthy := int32(0)
		for _, p := range pods {
			if p.DeletionTimestamp == nil && podReady(p) {
				healthy++
			}
		}
		expected, desired, ok := m.expectedPodsLocked(pdb, pods)
		st := pdb.Status.DeepCopy()
		st.ObservedGeneration = pdb.Generation
		st.CurrentHealthy = healthy
		st.DesiredHealthy = desired
		st.ExpectedPods = expected
		st.DisruptionsAllowed = 0
		if ok {
			st.DisruptionsAllowed = max(0, healthy-desired)
		}
		st.DisruptedPods = nil
		cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason, ObservedGeneration: pdb.Generation}
		if st.DisruptionsAllowed == 0 {
			cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
		}
		if !ok {
			cond.Reason = policyv1.SyncFailedReason
		}
		for _, c := range pdb.Status.Conditions {
			if c.Type == cond.Type && c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
		}
		if cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = metav1.NewTime(m.now().Truncate(1e9))
		}
		st.Conditions = []metav1.Condition{cond}
		pdb.Status = *st
		m.put(pdb)
	}
}

// expectedPodsLocked is disruption.go getExpectedPodCount.
func (m *MemoryAPI) expectedPodsLocked(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, ok bool) {
	if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int {
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, true
	}
	// The scale of every controller of the selected pods.
	seen := map[types.UID]bool{}
	for _, p := range pods {
		ref := controllerOf(p)
		if ref == nil {
			return 0, 0, false
		}
		if ref.Kind != "ReplicaSet" {
			// StatefulSets and scale-subresource custom controllers are
			// not modelled; a DaemonSet has no scale (finders fail).
			return 0, 0, false
		}
		rso, found := m.objs[KindReplicaSet][key(p.Namespace, ref.Name)]
		if !found {
			return 0, 0, false
		}
		rs := rso.(*appsv1.ReplicaSet)
		var uid types.UID
		var replicas int32
		if d := controllerOf(rs); d != nil && d.Kind == "Deployment" {
			do, found := m.objs[KindDeployment][key(p.Namespace, d.Name)]
			if !found {
				return 0, 0, false
			}
			uid, replicas = do.GetUID(), *do.(*appsv1.Deployment).Spec.Replicas
		} else {
			uid, replicas = rs.UID, *rs.Spec.Replicas
		}
		if !seen[uid] {
			seen[uid] = true
			expected += replicas
		}
	}
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return expected, 0, false
		}
		desired = max(0, expected-int32(n))
	case pdb.Spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return expected, 0, false
		}
		desired = int32(min(n, math.MaxInt32))
	}
	return expected, desired, true
}

// Evict implements [API] as pkg/registry/core/pod/storage/eviction.go
// does: a pod not yet running (Pending), finished or being deleted is
// deleted at once (canIgnorePDB); a pod covered by more than one budget
// is refused (500); a pod covered by a budget whose disruptionsAllowed is
// 0 is refused with 429 TooManyRequests "Cannot evict pod as it would
// violate the pod's disruption budget." and a DisruptionBudget cause
// naming the budget (checkAndDecrement); an unready pod goes when the
// budget is met without it. After the deletion the pod's controller
// replaces it and the scheduler places the replacement.
func (m *MemoryAPI) Evict(_ context.Context, namespace, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[KindPod][key(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(Resource(KindPod), name)
	}
	p := o.(*corev1.Pod)
	ignore := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed ||
		p.Status.Phase == corev1.PodPending || p.DeletionTimestamp != nil
	if !ignore {
		var pdbs []*policyv1.PodDisruptionBudget
		for _, q := range m.listLocked(KindPodDisruptionBudget, namespace) {
			if pdb := q.(*policyv1.PodDisruptionBudget); pdbSelects(pdb, p) {
				pdbs = append(pdbs, pdb)
			}
		}
		if len(pdbs) > 1 {
			return &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError,
				Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
			}}
		}
		if len(pdbs) == 1 {
			pdb := pdbs[0]
			unreadyButMet := !podReady(p) && pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
			if !unreadyButMet {
				if pdb.Status.ObservedGeneration < pdb.Generation {
					err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
					err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
						Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name)})
					return err
				}
				if pdb.Status.DisruptionsAllowed <= 0 {
					err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
					err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
						Type:    policyv1.DisruptionBudgetCause,
						Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)})
					return err
				}
			}
		}
	}
	if err := m.deletePodLocked(namespace, name); err != nil {
		return err
	}
	m.reconcileLocked()
	return nil
}

package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deletePodLocked deletes a pod gracefully, as the pod registry does
// (pkg/registry/core/pod/strategy.go CheckGracefulDelete): the pod gets
// a deletionTimestamp and its kubelet stops its containers and confirms
// the deletion. A running kubelet does so at once here (time does not
// pass); the kubelet of a node whose Ready condition is Unknown — the
// node lifecycle controller's mark for a kubelet that stopped reporting —
// never does, and the pod stays Terminating until the node object is
// deleted (pod GC) or reports again. A pod not bound to a node, or bound
// to a node that does not exist, goes at once.
func (m *MemoryAPI) deletePodLocked(namespace, name string) error {
	o, ok := m.objs[KindPod][key(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(Resource(KindPod), name)
	}
	p := o.(*corev1.Pod)
	if !m.kubeletGoneLocked(p.Spec.NodeName) {
		return m.deleteLocked(KindPod, namespace, name)
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	p = p.DeepCopy()
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	ts := metav1.NewTime(m.now().Truncate(time.Second).Add(time.Duration(grace) * time.Second))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
	m.storeLocked(KindPod, p)
	return nil
}

// kubeletGoneLocked reports whether node exists with its Ready condition
// Unknown.
func (m *MemoryAPI) kubeletGoneLocked(node string) bool {
	if node == "" {
		return false
	}
	o, ok := m.objs[KindNode][key("", node)]
	return ok && nodeReady(o.(*corev1.Node)) == corev1.ConditionUnknown
}

// terminatingPodsLocked finishes the deletions the kubelets of the nodes
// that report again (or whose node is gone) confirm.
func (m *MemoryAPI) terminatingPodsLocked() {
	for _, p := range m.pods("") {
		if p.DeletionTimestamp != nil && !m.kubeletGoneLocked(p.Spec.NodeName) {
			_ = m.deleteLocked(KindPod, p.Namespace, p.Name)
		}
	}
}

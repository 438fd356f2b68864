package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumeBindingPreFilterLocked is the scheduler's VolumeBinding plugin
// at PreFilter (pkg/scheduler/framework/plugins/volumebinding/
// volume_binding.go podHasPVCs and PreFilter, binder.go
// GetPodVolumeClaims): for each persistentVolumeClaim volume of p, in
// order, a missing claim, a Lost claim or one being deleted makes the
// pod unschedulable with that claim's reason; then any claim not bound
// does, "pod has unbound immediate PersistentVolumeClaims" (every claim
// binds immediately here: no StorageClass with volumeBindingMode
// WaitForFirstConsumer is modelled). A claim counts as bound when it
// names its volume and is Bound (the real binder's isPVCFullyBound reads
// the pv.kubernetes.io/bind-completed annotation the persistent volume
// controller sets with it). "" when the pod may be scheduled;
// scheduleLocked puts the reason in the scheduler's message.
func (m *MemoryAPI) volumeBindingPreFilterLocked(p *corev1.Pod) string {
	unbound := false
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		o, ok := m.objs[KindPersistentVolumeClaim][key(p.Namespace, name)]
		if !ok {
			// The claim lister's error.
			return apierrors.NewNotFound(corev1.Resource("persistentvolumeclaim"), name).Error()
		}
		c := o.(*corev1.PersistentVolumeClaim)
		if c.Status.Phase == corev1.ClaimLost {
			return fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", c.Name, c.Spec.VolumeName)
		}
		if c.DeletionTimestamp != nil {
			return fmt.Sprintf("persistentvolumeclaim %q is being deleted", c.Name)
		}
		if c.Spec.VolumeName == "" || c.Status.Phase != corev1.ClaimBound {
			unbound = true
		}
	}
	if unbound {
		return "pod has unbound immediate PersistentVolumeClaims"
	}
	return ""
}

// podNFSVolumesLocked is [PodNFSVolumes] over the store.
func (m *MemoryAPI) podNFSVolumesLocked(p *corev1.Pod) ([]NFSVolume, bool) {
	return PodNFSVolumes(p,
		func(name string) *corev1.PersistentVolumeClaim {
			o, _ := m.objs[KindPersistentVolumeClaim][key(p.Namespace, name)].(*corev1.PersistentVolumeClaim)
			return o
		},
		func(name string) *corev1.PersistentVolume {
			o, _ := m.objs[KindPersistentVolume][key("", name)].(*corev1.PersistentVolume)
			return o
		})
}

// awaitsMountsLocked reports whether p is a pod the kubelet of its node
// has to mount NFS volumes for before it runs: bound, Pending, not being
// deleted, not a mirror pod, with an NFS volume or a claim, on a node
// whose kubelet runs (a Node whose Ready condition is not Unknown, see
// kubeletGoneLocked).
func (m *MemoryAPI) awaitsMountsLocked(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil || !hasNFSVolumes(p) {
		return false
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	_, ok := m.objs[KindNode][key("", p.Spec.NodeName)]
	return ok && !m.kubeletGoneLocked(p.Spec.NodeName)
}

// SyncPods is the kubelets' moment for the pods that wait for NFS
// mounts (see bindLocked): for each such pod whose claims resolve
// ([PodNFSVolumes]), in namespace and name order, the kubelet of its
// node mounts its NFS volumes one after the other with the API's mount
// function ([MemoryOptions.MountNFS]), outside the API's lock. When
// every mount succeeds the pod runs as any other; at the first failure
// it stays as [MountWaitStatus] has it, Pending and ContainerCreating,
// and the kubelet records a Warning event FailedMount on the pod with
// the message of [NFSVolume.FailedMountMessage] (the kubelet's event
// recorder, source kubelet on the node; an event equal to an earlier
// one, save for its time, counts once more, as client-go's
// tools/record/events_cache.go eventObserve correlates them). The next
// call tries again: a real kubelet's volume manager retries with
// backoff, and the world is observed only at these moments. It does
// nothing without a mount function. [World.Sync] calls it (through
// [ControlPlane.SyncPods]) after the kubelets' Nodes are up to date.
//
// Not modelled: the kubelet's "Unable to attach or mount volumes ...
// timed out waiting for the condition" event after 2 minutes (time does
// not pass), its refusal of a pod whose claim is being deleted.
func (m *MemoryAPI) SyncPods(ctx context.Context) error {
	if m.mountNFS == nil {
		return nil
	}
	type attempt struct {
		pod    *corev1.Pod
		vols   []NFSVolume
		failed NFSVolume
		err    error
	}
	m.mu.Lock()
	var work []attempt
	for _, p := range m.pods("") {
		if !m.awaitsMountsLocked(p) {
			continue
		}
		if vols, ok := m.podNFSVolumesLocked(p); ok {
			work = append(work, attempt{pod: p, vols: vols})
		}
	}
	m.mu.Unlock()
	for i := range work {
		a := &work[i]
		for _, v := range a.vols {
			if err := m.mountNFS(ctx, a.pod.Spec.NodeName, v.Server, v.Path, v.MountTarget(a.pod.UID)); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				a.failed, a.err = v, err
				break
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range work {
		o, ok := m.objs[KindPod][key(a.pod.Namespace, a.pod.Name)]
		if !ok || o.GetUID() != a.pod.UID || !m.awaitsMountsLocked(o.(*corev1.Pod)) {
			continue // deleted, replaced or started meanwhile
		}
		p := o.(*corev1.Pod).DeepCopy()
		n := m.objs[KindNode][key("", p.Spec.NodeName)].(*corev1.Node)
		if a.err != nil {
			// A pod bound by another scheduler has no status yet.
			p.Status = MountWaitStatus(p, nodeAddress(n), metav1.NewTime(m.now().Truncate(time.Second)))
			m.put(p)
			m.kubeletEventLocked(p, corev1.EventTypeWarning, ReasonFailedMount, a.failed.FailedMountMessage(p.UID, a.err))
			continue
		}
		m.startPodLocked(p, n)
	}
	m.reconcileLocked()
	return nil
}

// kubeletEventLocked records an event about pod p as the kubelet of p's
// node does (client-go tools/record/event.go makeEvent and
// generateEvent: named <pod>.<unix nanoseconds in hex>, in the pod's
// namespace, the pod as involvedObject, source and reporting component
// kubelet on the node, count 1, first and last timestamps now). An event
// with the same source, object, type, reason and message already stored
// gets its count increased and its last timestamp moved instead
// (events_cache.go getEventKey, eventObserve).
func (m *MemoryAPI) kubeletEventLocked(p *corev1.Pod, typ, reason, msg string) {
	now := m.now()
	src := corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName}
	ref := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion}
	for _, o := range m.listLocked(KindEvent, p.Namespace) {
		e := o.(*corev1.Event)
		r := e.InvolvedObject
		if e.Source == src && r.Kind == ref.Kind && r.Namespace == ref.Namespace && r.Name == ref.Name && r.UID == ref.UID &&
			r.APIVersion == ref.APIVersion && r.FieldPath == "" && e.Type == typ && e.Reason == reason && e.Message == msg {
			e = e.DeepCopy()
			e.Count++
			e.LastTimestamp = metav1.NewTime(now)
			m.put(e)
			return
		}
	}
	// util.GenerateEventName: "%s.%x" of the name and the time; a name
	// taken (the simulation's clock may stand still) takes the next
	// nanosecond.
	t := now
	for {
		if _, taken := m.objs[KindEvent][key(p.Namespace, fmt.Sprintf("%s.%x", p.Name, t.UnixNano()))]; !taken {
			break
		}
		t = t.Add(time.Nanosecond)
	}
	ts := metav1.NewTime(now)
	// A refused event (its namespace being deleted) is dropped, as the
	// recorder drops what its sink refuses.
	_, _ = m.createLocked(&corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.Name, t.UnixNano()), Namespace: p.Namespace},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             msg,
		Source:              src,
		FirstTimestamp:      ts,
		LastTimestamp:       ts,
		Count:               1,
		Type:                typ,
		ReportingController: src.Component,
		ReportingInstance:   src.Host,
	})
}

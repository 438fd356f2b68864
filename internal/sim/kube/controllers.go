package kube

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// The controllers of MemoryAPI. Each models one controller of
// kube-controller-manager or kube-scheduler, reduced to what the
// simulation needs, and runs synchronously after every write until the
// store stops changing: time does not pass in the simulation, so what the
// real controllers reach eventually is there when the write returns.

// maxReconcileRounds bounds the controller loop; a well-behaved set of
// controllers settles in a few rounds.
const maxReconcileRounds = 50

// reconcileLocked runs the controllers until nothing changes.
func (m *MemoryAPI) reconcileLocked() {
	for range maxReconcileRounds {
		before := m.rv
		m.namespacesLocked()
		m.nodeIPAMLocked()
		m.nodeLifecycleLocked()
		m.podGCLocked()
		m.terminatingPodsLocked()
		m.tokensLocked()
		m.tokenCleanerLocked()
		m.deploymentsLocked()
		m.replicaSetsLocked()
		m.daemonSetsLocked()
		m.scheduleLocked()
		m.replicaSetsStatusLocked()
		m.deploymentsStatusLocked()
		m.daemonSetsStatusLocked()
		m.disruptionLocked()
		m.volumesLocked()
		m.storageProtectionLocked()
		if m.rv == before {
			return
		}
	}
}

// put stores a controller's modified copy of an object (no-op when
// nothing changed).
func (m *MemoryAPI) put(obj Object) {
	obj.SetResourceVersion("")
	if _, err := m.updateLocked(obj); err != nil {
		panic(fmt.Sprintf("kube: controller update of %s: %v", obj.GetName(), err))
	}
}

func (m *MemoryAPI) nodes() []*corev1.Node {
	var out []*corev1.Node
	for _, o := range m.listLocked(KindNode, "") {
		out = append(out, o.(*corev1.Node).DeepCopy())
	}
	return out
}

// pods returns the stored pods of a namespace (all with ""), sorted.
// They are the stored objects themselves, not copies: a controller reads
// them and modifies a DeepCopy, which it stores (with put), as the
// stored objects are never changed in place.
func (m *MemoryAPI) pods(namespace string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range m.listLocked(KindPod, namespace) {
		out = append(out, o.(*corev1.Pod))
	}
	return out
}

// controllerOf returns a pod's controller reference (the owner reference
// with controller: true), or nil.
func controllerOf(obj metav1.Object) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(obj)
}

// active reports whether a pod counts for its controller
// (pkg/controller/controller_utils.go IsPodActive).
func active(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// podReady is pkg/api/v1/pod/util.go IsPodReady.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeReady returns the status of a node's Ready condition ("" without).
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// Taints the controllers and the scheduler know (k8s.io/api/core/v1
// well_known_taints.go).
const (
	taintNotReady      = "node.kubernetes.io/not-ready"
	taintUnreachable   = "node.kubernetes.io/unreachable"
	taintUnschedulable = "node.kubernetes.io/unschedulable"
	// TaintControlPlane is the taint kubeadm puts on control-plane nodes
	// (cmd/kubeadm/app/constants/constants.go ControlPlaneTaint).
	TaintControlPlane = "node-role.kubernetes.io/control-plane"
)

// nodeLifecycleLocked keeps the NoSchedule taints that mirror the Ready
// condition, as pkg/controller/nodelifecycle/node_lifecycle_controller.go
// doNoScheduleTaintingPass does: Ready False → not-ready, Unknown →
// unreachable, True → neither. A node without a Ready condition keeps
// the taints it has: the kubelet registers a node without one
// (pkg/kubelet/kubelet_node_status.go initialNode) and reports its Ready
// condition right after; the grace period after which the controller
// would mark a silent node Unknown does not pass here.
func (m *MemoryAPI) nodeLifecycleLocked() {
	for _, n := range m.nodes() {
		var want string
		switch nodeReady(n) {
		case corev1.ConditionFalse:
			want = taintNotReady
		case corev1.ConditionUnknown:
			want = taintUnreachable
		case corev1.ConditionTrue:
		default:
			continue
		}
		var taints []corev1.Taint
		have := false
		for _, t := range n.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule && (t.Key == taintNotReady || t.Key == taintUnreachable) {
				if t.Key != want {
					continue
				}
				have = true
			}
			taints = append(taints, t)
		}
		if want != "" && !have {
			taints = append(taints, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoSchedule})
		}
		if len(taints) != len(n.Spec.Taints) {
			n.Spec.Taints = taints
			m.put(n)
		}
	}
}

// podGCLocked deletes the pods bound to nodes that no longer exist
// (pkg/controller/podgc/gc_controller.go gcOrphaned).
func (m *MemoryAPI) podGCLocked() {
	nodes := map[string]bool{}
	for _, n := range m.listLocked(KindNode, "") {
		nodes[n.GetName()] = true
	}
	for _, p := range m.pods("") {
		if p.Spec.NodeName != "" && !nodes[p.Spec.NodeName] {
			_ = m.deleteLocked(KindPod, p.Namespace, p.Name)
		}
	}
}

// templateHash is pkg/controller/controller_utils.go ComputeHash: the
// FNV-32a of the pod template, encoded with rand.SafeEncodeString.
func templateHash(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	b, _ := json.Marshal(t)
	h.Write(b)
	return safeEncode(fmt.Sprint(h.Sum32()))
}

// safeEncode is apimachinery/pkg/util/rand.SafeEncodeString.
func safeEncode(s string) string {
	const alphanums = "bcdfghjklmnpqrstvwxz2456789"
	r := make([]byte, len(s))
	for i, b := range []byte(s) {
		r[i] = alphanums[int(b)%len(alphanums)]
	}
	return string(r)
}

func ownerRef(obj Object, kind string) metav1.OwnerReference {
	t := true
	gvk := obj.GetObjectKind().GroupVersionKind()
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: kind, Name: obj.GetName(), UID: obj.GetUID(),
		Controller: &t, BlockOwnerDeletion: &t,
	}
}

func ownedBy(obj metav1.Object, uid types.UID) bool {
	ref := controllerOf(obj)
	return ref != nil && ref.UID == uid
}

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	return out
}

// deploymentsLocked is pkg/controller/deployment (sync.go
// getNewReplicaSet, rolling.go): the ReplicaSet of the current pod
// template (named <deployment>-<template hash>, labelled
// pod-template-hash) gets the deployment's replicas and the older ones
// are scaled to 0. Without time, a rolling update completes at once.
func (m *MemoryAPI) deploymentsLocked() {
	for _, o := range m.listLocked(KindDeployment, "") {
		d := o.(*appsv1.Deployment)
		hash := templateHash(&d.Spec.Template)
		name := d.Name + "-" + hash
		var rss []*appsv1.ReplicaSet
		for _, r := range m.listLocked(KindReplicaSet, d.Namespace) {
			if ownedBy(r, d.UID) {
				rss = append(rss, r.(*appsv1.ReplicaSet).DeepCopy())
			}
		}
		found := false
		for _, rs := range rss {
			want := int32(0)
			if rs.Name == name {
				found = true
				want = *d.Spec.Replicas
			}
			if rs.Spec.Replicas == nil || *rs.Spec.Replicas != want {
				rs.Spec.Replicas = &want
				m.put(rs)
			}
		}
		if found {
			continue
		}
		tmpl := *d.Spec.Template.DeepCopy()
		tmpl.Labels = copyLabels(tmpl.Labels)
		tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		sel := d.Spec.Selector.DeepCopy()
		if sel == nil {
			sel = &metav1.LabelSelector{}
		}
		sel.MatchLabels = copyLabels(sel.MatchLabels)
		sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		replicas := *d.Spec.Replicas
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: d.Namespace, Labels: tmpl.Labels,
				OwnerReferences: []metav1.OwnerReference{ownerRef(d, "Deployment")},
			},
			Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: sel, Template: tmpl},
		}
		// A refused creation (a namespace being deleted) is retried on
		// the next write, as the controller requeues.
		_, _ = m.createLocked(rs)
	}
}

// deploymentsStatusLocked is pkg/controller/deployment/sync.go
// calculateStatus.
func (m *MemoryAPI) deploymentsStatusLocked() {
	for _, o := range m.listLocked(KindDeployment, "") {
		d := o.(*appsv1.Deployment).DeepCopy()
		hash := templateHash(&d.Spec.Template)
		var st appsv1.DeploymentStatus
		var failure *appsv1.DeploymentCondition
		st.ObservedGeneration = d.Generation
		for _, r := range m.listLocked(KindReplicaSet, d.Namespace) {
			if !ownedBy(r, d.UID) {
				continue
			}
			rs := r.(*appsv1.ReplicaSet)
			st.Replicas += rs.Status.Replicas
			st.ReadyReplicas += rs.Status.ReadyReplicas
			st.AvailableReplicas += rs.Status.AvailableReplicas
			if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash {
				st.UpdatedReplicas = rs.Status.Replicas
				for _, c := range rs.Status.Conditions {
					if c.Type == appsv1.ReplicaSetReplicaFailure {
						failure = &appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message,
							LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime}
					}
				}
			}
		}
		st.UnavailableReplicas = max(0, *d.Spec.Replicas-st.AvailableReplicas)
		avail := corev1.ConditionFalse
		reason, msg := "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
		if st.AvailableReplicas >= *d.Spec.Replicas {
			avail, reason, msg = corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."
		}
		st.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: avail, Reason: reason, Message: msg}}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == avail {
				st.Conditions[0].LastTransitionTime, st.Conditions[0].LastUpdateTime = c.LastTransitionTime, c.LastUpdateTime
			}
		}
		if st.Conditions[0].LastTransitionTime.IsZero() {
			now := metav1.NewTime(m.now().Truncate(1e9))
			st.Conditions[0].LastTransitionTime, st.Conditions[0].LastUpdateTime = now, now
		}
		if failure != nil {
			st.Conditions = append(st.Conditions, *failure)
		}
		d.Status = st
		m.put(d)
	}
}

// replicaSetsLocked is pkg/controller/replicaset/replica_set.go
// manageReplicas: create the missing pods (generateName <rs>-), delete
// the surplus, unscheduled and not-ready ones first (getPodsToDelete).
func (m *MemoryAPI) replicaSetsLocked() {
	for _, o := range m.listLocked(KindReplicaSet, "") {
		rs := o.(*appsv1.ReplicaSet)
		var pods []*corev1.Pod
		for _, p := range m.pods(rs.Namespace) {
			if ownedBy(p, rs.UID) && active(p) {
				pods = append(pods, p)
			}
		}
		want := int(*rs.Spec.Replicas)
		for i := len(pods); i < want; i++ {
			tmpl := rs.Spec.Template.DeepCopy()
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: rs.Name + "-", Namespace: rs.Namespace,
					Labels: tmpl.Labels, Annotations: tmpl.Annotations,
					OwnerReferences: []metav1.OwnerReference{ownerRef(rs, "ReplicaSet")},
				},
				Spec: tmpl.Spec,
			}
			if _, err := m.createLocked(pod); err != nil {
				// Admission refused the pod (a missing service
				// account): the status pass reports ReplicaFailure,
				// and the next write retries.
				break
			}
		}
		if len(pods) > want {
			sort.SliceStable(pods, func(i, j int) bool { return deleteFirst(pods[i], pods[j]) })
			for _, p := range pods[:len(pods)-want] {
				_ = m.deletePodLocked(p.Namespace, p.Name)
			}
		}
	}
}

// deleteFirst orders pods for scale-down as controller.ActivePods does:
// unassigned before assigned, pending before running, not ready before
// ready, newer before older.
func deleteFirst(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if (a.Status.Phase == corev1.PodRunning) != (b.Status.Phase == corev1.PodRunning) {
		return a.Status.Phase != corev1.PodRunning
	}
	if podReady(a) != podReady(b) {
		return !podReady(a)
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// replicaSetsStatusLocked is pkg/controller/replicaset/replica_set_utils.go
// calculateStatus.
func (m *MemoryAPI) replicaSetsStatusLocked() {
	for _, o := range m.listLocked(KindReplicaSet, "") {
		rs := o.(*appsv1.ReplicaSet).DeepCopy()
		var st appsv1.ReplicaSetStatus
		st.ObservedGeneration = rs.Generation
		for _, p := range m.pods(rs.Namespace) {
			if !ownedBy(p, rs.UID) || !active(p) {
				continue
			}
			st.Replicas++
			st.FullyLabeledReplicas++
			if podReady(p) {
				st.ReadyReplicas++
				st.AvailableReplicas++
			}
		}
		// replica_set_utils.go: a failed pod creation is the
		// ReplicaFailure condition (reason FailedCreate), until the
		// replicas are there.
		if st.Replicas < *rs.Spec.Replicas {
			probe := &corev1.Pod{ObjectMeta: *rs.Spec.Template.ObjectMeta.DeepCopy(), Spec: *rs.Spec.Template.Spec.DeepCopy()}
			probe.Namespace = rs.Namespace
			if err := m.admitPodLocked(probe); err != nil {
				st.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: err.Error()}}
				for _, c := range rs.Status.Conditions {
					if c.Type == appsv1.ReplicaSetReplicaFailure && c.Message == err.Error() {
						st.Conditions[0].LastTransitionTime = c.LastTransitionTime
					}
				}
				if st.Conditions[0].LastTransitionTime.IsZero() {
					st.Conditions[0].LastTransitionTime = metav1.NewTime(m.now().Truncate(1e9))
				}
			}
		}
		rs.Status = st
		m.put(rs)
	}
}

// daemonPodTolerations are the tolerations the DaemonSet controller adds
// to its pods (pkg/controller/daemon/util/daemonset_util.go
// AddOrUpdateDaemonPodTolerations): they run on not-ready, unreachable,
// pressured and cordoned nodes, and hostNetwork pods where the network
// is unavailable.
func daemonPodTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	t := append([]corev1.Toleration(nil), spec.Tolerations...)
	add := func(key string, effect corev1.TaintEffect) {
		t = append(t, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
	add(taintNotReady, corev1.TaintEffectNoExecute)
	add(taintUnreachable, corev1.TaintEffectNoExecute)
	add("node.kubernetes.io/disk-pressure", corev1.TaintEffectNoSchedule)
	add("node.kubernetes.io/memory-pressure", corev1.TaintEffectNoSchedule)
	add("node.kubernetes.io/pid-pressure", corev1.TaintEffectNoSchedule)
	add(taintUnschedulable, corev1.TaintEffectNoSchedule)
	if spec.HostNetwork {
		add("node.kubernetes.io/network-unavailable", corev1.TaintEffectNoSchedule)
	}
	return t
}

// daemonSetsLocked is pkg/controller/daemon/daemon_controller.go
// manage: one pod per node the pod template may run on (nodeSelector,
// node affinity, NoSchedule/NoExecute taints tolerated;
// NodeShouldRunDaemonPod), pinned by a required node affinity on
// metadata.name (util.ReplaceDaemonSetPodNodeNameNodeAffinity) for the
// scheduler to bind; pods on other nodes, and duplicates, are deleted.
func (m *MemoryAPI) daemonSetsLocked() {
	nodes := m.nodes()
	for _, o := range m.listLocked(KindDaemonSet, "") {
		ds := o.(*appsv1.DaemonSet)
		tmpl := ds.Spec.Template.DeepCopy()
		tmpl.Spec.Tolerations = daemonPodTolerations(&tmpl.Spec)
		byNode := map[string][]*corev1.Pod{}
		for _, p := range m.pods(ds.Namespace) {
			if ownedBy(p, ds.UID) && active(p) {
				n := p.Spec.NodeName
				if n == "" {
					n = daemonTarget(p)
				}
				byNode[n] = append(byNode[n], p)
			}
		}
		run := map[string]bool{}
		for _, n := range nodes {
			if fits, _ := podFitsNode(&tmpl.Spec, n, false); !fits {
				continue
			}
			run[n.Name] = true
			if len(byNode[n.Name]) > 0 {
				for _, extra := range byNode[n.Name][1:] {
					_ = m.deletePodLocked(extra.Namespace, extra.Name)
				}
				continue
			}
			spec := tmpl.Spec.DeepCopy()
			spec.Affinity = pinToNode(spec.Affinity, n.Name)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: ds.Name + "-", Namespace: ds.Namespace,
					Labels: copyLabels(tmpl.Labels), Annotations: tmpl.Annotations,
					OwnerReferences: []metav1.OwnerReference{ownerRef(ds, "DaemonSet")},
				},
				Spec: *spec,
			}
			// A refused pod (admission) is retried on the next write.
			_, _ = m.createLocked(pod)
		}
		for node, pods := range byNode {
			if !run[node] {
				for _, p := range pods {
					_ = m.deletePodLocked(p.Namespace, p.Name)
				}
			}
		}
	}
}

// daemonSetsStatusLocked is daemon_controller.go updateDaemonSetStatus.
func (m *MemoryAPI) daemonSetsStatusLocked() {
	nodes := m.nodes()
	for _, o := range m.listLocked(KindDaemonSet, "") {
		ds := o.(*appsv1.DaemonSet).DeepCopy()
		tmpl := ds.Spec.Template.DeepCopy()
		tmpl.Spec.Tolerations = daemonPodTolerations(&tmpl.Spec)
		var st appsv1.DaemonSetStatus
		st.ObservedGeneration = ds.Generation
		for _, n := range nodes {
			if fits, _ := podFitsNode(&tmpl.Spec, n, false); fits {
				st.DesiredNumberScheduled++
			}
		}
		for _, p := range m.pods(ds.Namespace) {
			if !ownedBy(p, ds.UID) || !active(p) || p.Spec.NodeName == "" {
				continue
			}
			st.CurrentNumberScheduled++
			st.UpdatedNumberScheduled++
			if podReady(p) {
				st.NumberReady++
				st.NumberAvailable++
			}
		}
		st.NumberUnavailable = max(0, st.DesiredNumberScheduled-st.NumberAvailable)
		ds.Status = st
		m.put(ds)
	}
}

// pinToNode adds the required node affinity on metadata.name that the
// DaemonSet controller sets.
func pinToNode(a *corev1.Affinity, node string) *corev1.Affinity {
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}}}},
	}
	return a
}

// daemonTarget returns the node a DaemonSet pod is pinned to.
func daemonTarget(p *corev1.Pod) string {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range t.MatchFields {
			if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// tolerates is k8s.io/api/core/v1/toleration.go ToleratesTaint for the
// Equal and Exists operators.
func tolerates(ts []corev1.Toleration, taint corev1.Taint) bool {
	for _, t := range ts {
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key != "" && t.Key != taint.Key {
			continue
		}
		switch t.Operator {
		case corev1.TolerationOpExists:
			return true
		case "", corev1.TolerationOpEqual:
			if t.Key != "" && t.Value == taint.Value {
				return true
			}
		}
	}
	return false
}

// podFitsNode runs the scheduler's filters the simulation models
// (pkg/scheduler/framework/plugins): NodeUnschedulable (when
// checkUnschedulable), TaintToleration (NoSchedule and NoExecute),
// NodeAffinity (nodeSelector, required node affinity). It returns why
// not, in the scheduler's words.
func podFitsNode(spec *corev1.PodSpec, n *corev1.Node, checkUnschedulable bool) (bool, string) {
	if checkUnschedulable && n.Spec.Unschedulable &&
		!tolerates(spec.Tolerations, corev1.Taint{Key: taintUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return false, "node(s) were unschedulable"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !tolerates(spec.Tolerations, t) {
			return false, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
		}
	}
	if !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false, "node(s) didn't match Pod's node affinity/selector"
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		ok := false
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if termMatches(term, n) {
				ok = true
				break
			}
		}
		if !ok {
			return false, "node(s) didn't match Pod's node affinity/selector"
		}
	}
	return true, ""
}

// termMatches is component-helpers/scheduling/corev1/nodeaffinity: all
// requirements of a term must hold (an empty term matches nothing).
func termMatches(t corev1.NodeSelectorTerm, n *corev1.Node) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for _, r := range t.MatchExpressions {
		v, has := n.Labels[r.Key]
		if !requirementHolds(r, v, has) {
			return false
		}
	}
	for _, r := range t.MatchFields {
		if r.Key != "metadata.name" || !requirementHolds(r, n.Name, true) {
			return false
		}
	}
	return true
}

func requirementHolds(r corev1.NodeSelectorRequirement, v string, has bool) bool {
	in := false
	for _, x := range r.Values {
		if x == v {
			in = true
		}
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && in
	case corev1.NodeSelectorOpNotIn:
		return !has || !in
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	}
	return false
}

// scheduleLocked is the scheduler (pkg/scheduler/schedule_one.go): each
// pending pod goes to the feasible node (podFitsNode) with the fewest
// pods (standing in for the NodeResourcesFit / BalancedAllocation
// scores), ties broken by name; it is bound and, time not passing, the
// kubelet has it running and Ready at once (a pod with NFS volumes waits
// for its mounts when the API has a mount function: see bindLocked). A
// pod no node fits, or whose claims the VolumeBinding plugin's PreFilter
// refuses (volumeBindingPreFilter), gets PodScheduled=False, reason
// Unschedulable, with the scheduler's "0/N nodes are available: ..."
// message.
func (m *MemoryAPI) scheduleLocked() {
	nodes := m.nodes()
	load := map[string]int{}
	pods := m.pods("")
	for _, p := range pods {
		if p.Spec.NodeName != "" && active(p) {
			load[p.Spec.NodeName]++
		}
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	for _, p := range pods {
		if p.Spec.NodeName != "" || !active(p) || (p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName) {
			continue
		}
		if msg := m.volumeBindingPreFilterLocked(p); msg != "" {
			// The PreFilter rejection ends the PreFilter phase
			// (pkg/scheduler/framework/runtime/framework.go
			// RunPreFilterPlugins), so DynamicResources, after
			// VolumeBinding and before DefaultPreemption in the default
			// plugins (pkg/scheduler/apis/config/v1/default_plugins.go
			// applyDynamicResources), writes no cycle state; its
			// PostFilter, the first, fails reading it with
			// fwk.ErrNotFound, "not found", which RunPostFilterPlugins
			// returns as an error and FitError.Error appends after a
			// space. So says a real kube-scheduler 1.36.3
			// (cloudtest/realkube TestPersistentVolumeClaimsMountsAndProtection).
			m.setUnschedulable(p.DeepCopy(), fmt.Sprintf("0/%d nodes are available: %s. not found", len(nodes), msg))
			continue
		}
		var best *corev1.Node
		reasons := map[string]int{}
		for _, n := range nodes {
			ok, why := podFitsNode(&p.Spec, n, true)
			if !ok {
				reasons[why]++
				continue
			}
			if best == nil || load[n.Name] < load[best.Name] {
				best = n
			}
		}
		p = p.DeepCopy() // a stored pod (see pods)
		if best == nil {
			m.markUnschedulable(p, len(nodes), reasons)
			continue
		}
		load[best.Name]++
		m.bindLocked(p, best)
	}
}

func (m *MemoryAPI) markUnschedulable(p *corev1.Pod, n int, reasons map[string]int) {
	var parts []string
	for why, c := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", c, why))
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("0/%d nodes are available", n)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, ", ")
	}
	m.setUnschedulable(p, msg+"."+preemptionVerdict(n))
}

// preemptionVerdict is what the default preemption plugin adds to the
// scheduler's message (pkg/scheduler/framework/preemption: no victim
// would help a pod that fails filters other than resources; FitError
// appends the PostFilter message after a space,
// pkg/scheduler/framework/types.go).
func preemptionVerdict(n int) string {
	return fmt.Sprintf(" preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.", n, n)
}

// setUnschedulable sets a pod's PodScheduled condition False with
// reason Unschedulable and msg.
func (m *MemoryAPI) setUnschedulable(p *corev1.Pod, msg string) {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			if c.Message == msg && c.Status == corev1.ConditionFalse {
				return
			}
			cond.LastTransitionTime = metav1.NewTime(m.now().Truncate(1e9))
			p.Status.Conditions[i] = cond
			m.put(p)
			return
		}
	}
	cond.LastTransitionTime = metav1.NewTime(m.now().Truncate(1e9))
	p.Status.Conditions = append(p.Status.Conditions, cond)
	m.put(p)
}

// nodeAddress returns a node's InternalIP.
func nodeAddress(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// bindLocked binds a pod to a node (the binding subresource,
// pkg/registry/core/pod/storage/storage.go assignPod) and plays the
// node's kubelet: the pod runs at once (startPodLocked), unless the API
// has a mount function and the pod has NFS volumes (or claims not
// resolved yet), which wait with the status a kubelet reports before the
// mounts ([MountWaitStatus]) until [MemoryAPI.SyncPods] mounts them.
func (m *MemoryAPI) bindLocked(p *corev1.Pod, n *corev1.Node) {
	p.Spec.NodeName = n.Name
	if m.mountNFS != nil && hasNFSVolumes(p) {
		if vols, ok := m.podNFSVolumesLocked(p); !ok || len(vols) > 0 {
			p.Status = MountWaitStatus(p, nodeAddress(n), metav1.NewTime(m.now().Truncate(1e9)))
			m.put(p)
			return
		}
	}
	m.startPodLocked(p, n)
}

// startPodLocked sets the status the kubelet reports once a bound pod's
// containers run (pkg/kubelet/status/generate.go): Running, the
// conditions True, hostIP, and a pod IP (the node's address for
// hostNetwork pods).
func (m *MemoryAPI) startPodLocked(p *corev1.Pod, n *corev1.Node) {
	now := metav1.NewTime(m.now().Truncate(1e9))
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = nodeAddress(n)
	if p.Status.HostIP != "" {
		p.Status.HostIPs = []corev1.HostIP{{IP: p.Status.HostIP}}
	}
	if p.Spec.HostNetwork {
		p.Status.PodIP = p.Status.HostIP
	} else {
		p.Status.PodIP = m.podIPLocked(n)
	}
	if p.Status.PodIP != "" {
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	p.Status.StartTime = &now
	p.Status.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptrTrue(),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	m.put(p)
}

func ptrTrue() *bool { t := true; return &t }

// podIPLocked gives a pod an address of the node's podCIDR (the CNI's
// host-local IPAM), or none when the node has no podCIDR; with Calico as
// the pod network, an address of Calico's IPAM ([CalicoIPAM.Allocate]).
func (m *MemoryAPI) podIPLocked(n *corev1.Node) string {
	var dss []*appsv1.DaemonSet
	for _, o := range m.listLocked(KindDaemonSet, "") {
		dss = append(dss, o.(*appsv1.DaemonSet))
	}
	if len(dss) > 0 {
		var cms []*corev1.ConfigMap
		for _, o := range m.listLocked(KindConfigMap, "kube-system") {
			cms = append(cms, o.(*corev1.ConfigMap))
		}
		if c, ok := DetectCalico(dss, cms); ok {
			return c.Allocate(n.Name, m.pods(""))
		}
	}
	return allocatePodIP(n.Spec.PodCIDR, m.pods(""), n.Name)
}

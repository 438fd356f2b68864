package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nfsPV is a Retain NFS volume of 1Gi, ReadWriteOnce, of the class "".
func nfsPV(name, server, path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: server, Path: path}},
		},
	}
}

// claimOf is a claim of 1Gi ReadWriteOnce of the class "".
func claimOf(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: new(string),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// podWith is a one-container pod with the given volumes.
func podWith(name string, vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}, Volumes: vols},
	}
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func mustCreate(t *testing.T, m *MemoryAPI, objs ...Object) {
	t.Helper()
	for _, o := range objs {
		if _, err := m.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func getPV(t *testing.T, m *MemoryAPI, name string) *corev1.PersistentVolume {
	t.Helper()
	o, err := m.Get(context.Background(), KindPersistentVolume, "", name)
	if err != nil {
		t.Fatalf("volume %s: %v", name, err)
	}
	return o.(*corev1.PersistentVolume)
}

func getClaim(t *testing.T, m *MemoryAPI, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	o, err := m.Get(context.Background(), KindPersistentVolumeClaim, "default", name)
	if err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
	return o.(*corev1.PersistentVolumeClaim)
}

func getPod(t *testing.T, m *MemoryAPI, name string) *corev1.Pod {
	t.Helper()
	o, err := m.Get(context.Background(), KindPod, "default", name)
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return o.(*corev1.Pod)
}

func gone(m *MemoryAPI, gvkKind string, ns, name string) bool {
	_, err := m.Get(context.Background(), corev1.SchemeGroupVersion.WithKind(gvkKind), ns, name)
	return apierrors.IsNotFound(err)
}

// TestStorageProtection: the admission plugin gives a volume and a claim
// their finalizers; a Bound volume that is deleted stays, Bound, until
// its claim is gone; a claim a scheduled pod uses stays until the pod is
// gone; with Retain the released volume is Released and stays.
func TestStorageProtection(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	addNode(t, m, "w1", "10.0.0.6", false)
	mustCreate(t, m, nfsPV("pv1", "10.0.0.9", "/volume/nfs/pv1"), nfsPV("pv2", "10.0.0.9", "/volume/nfs/pv2"))
	if f := getPV(t, m, "pv1").Finalizers; !slices.Equal(f, []string{FinalizerPVProtection}) {
		t.Errorf("volume finalizers %v", f)
	}
	mustCreate(t, m, claimOf("data"))
	c := getClaim(t, m, "data")
	if !slices.Equal(c.Finalizers, []string{FinalizerPVCProtection}) || c.Status.Phase != corev1.ClaimBound ||
		c.Annotations[annBindCompleted] != "yes" || c.Annotations[annBoundByController] != "yes" {
		t.Fatalf("claim %+v %s", c.ObjectMeta, c.Status.Phase)
	}
	pvName := c.Spec.VolumeName
	other := map[string]string{"pv1": "pv2", "pv2": "pv1"}[pvName]
	mustCreate(t, m, podWith("user", claimVolume("data", "data")))
	if p := getPod(t, m, "user"); p.Status.Phase != corev1.PodRunning {
		t.Fatalf("pod using the claim: %s", p.Status.Phase)
	}

	// Deleting the Bound volume: it stays, Bound, being deleted.
	if err := m.Delete(ctx, KindPersistentVolume, "", pvName); err != nil {
		t.Fatal(err)
	}
	pv := getPV(t, m, pvName)
	if pv.DeletionTimestamp == nil || pv.Status.Phase != corev1.VolumeBound || pv.DeletionGracePeriodSeconds == nil || *pv.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("deleted bound volume: %v %s", pv.DeletionTimestamp, pv.Status.Phase)
	}
	// Deleting it again changes nothing; no finalizer may be added now.
	if err := m.Delete(ctx, KindPersistentVolume, "", pvName); err != nil {
		t.Fatal(err)
	}
	if again := getPV(t, m, pvName); again.ResourceVersion != pv.ResourceVersion {
		t.Errorf("second delete wrote the volume")
	}
	pv.Finalizers = append(pv.Finalizers, "example.com/hold")
	_, err := m.Update(ctx, pv)
	want := fmt.Sprintf(`PersistentVolume %q is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/hold"}`, pvName)
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("adding a finalizer while deleting: %v", err)
	}

	// Deleting the claim the pod uses: it stays, and so does the volume.
	if err := m.Delete(ctx, KindPersistentVolumeClaim, "default", "data"); err != nil {
		t.Fatal(err)
	}
	if c := getClaim(t, m, "data"); c.DeletionTimestamp == nil || c.Status.Phase != corev1.ClaimBound {
		t.Fatalf("deleted claim in use: %v %s", c.DeletionTimestamp, c.Status.Phase)
	}
	if getPV(t, m, pvName).Status.Phase != corev1.VolumeBound {
		t.Error("volume of a claim being deleted is not Bound")
	}
	// A new pod may not use a claim being deleted.
	mustCreate(t, m, podWith("late", claimVolume("data", "data")))
	if p := getPod(t, m, "late"); p.Spec.NodeName != "" || !strings.Contains(condMessage(p, corev1.PodScheduled), `persistentvolumeclaim "data" is being deleted`) {
		t.Errorf("pod on a claim being deleted: node %q, %q", p.Spec.NodeName, condMessage(p, corev1.PodScheduled))
	}
	if err := m.Delete(ctx, KindPod, "default", "late"); err != nil {
		t.Fatal(err)
	}

	// The pod goes: the claim goes, and the volume it held.
	if err := m.Delete(ctx, KindPod, "default", "user"); err != nil {
		t.Fatal(err)
	}
	if !gone(m, "PersistentVolumeClaim", "default", "data") || !gone(m, "PersistentVolume", "", pvName) {
		t.Fatal("claim or volume left after the last user went")
	}

	// Retain: the other volume, bound then released, is Released and
	// stays; deleted then, it goes at once.
	mustCreate(t, m, claimOf("data2"))
	if getClaim(t, m, "data2").Spec.VolumeName != other {
		t.Fatalf("second claim bound to %q", getClaim(t, m, "data2").Spec.VolumeName)
	}
	if err := m.Delete(ctx, KindPersistentVolumeClaim, "default", "data2"); err != nil {
		t.Fatal(err)
	}
	if pv := getPV(t, m, other); pv.Status.Phase != corev1.VolumeReleased || pv.DeletionTimestamp != nil {
		t.Errorf("retained volume: %s %v", pv.Status.Phase, pv.DeletionTimestamp)
	}
	if err := m.Delete(ctx, KindPersistentVolume, "", other); err != nil {
		t.Fatal(err)
	}
	if !gone(m, "PersistentVolume", "", other) {
		t.Error("released volume still there after its deletion")
	}
}

// TestFinalizersHoldDeletion: any finalizer holds a deletion until the
// update that removes it; the garbage collector's deletion is held the
// same way; a controller puts a protection finalizer that was removed
// back.
func TestFinalizersHoldDeletion(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default"}}
	mustCreate(t, m, owner)
	o, _ := m.Get(ctx, KindConfigMap, "default", "owner")
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Namespace: "default", Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: o.GetUID()}}}}
	mustCreate(t, m, dep)
	if err := m.Delete(ctx, KindConfigMap, "default", "owner"); err != nil {
		t.Fatal(err)
	}
	o, err := m.Get(ctx, KindConfigMap, "default", "dep")
	if err != nil || o.GetDeletionTimestamp() == nil || o.GetGeneration() != 2 {
		t.Fatalf("dependent with a finalizer after its owner went: %v %v", o, err)
	}
	cm := o.(*corev1.ConfigMap)
	cm.Data = map[string]string{"k": "v"}
	if _, err := m.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	o, _ = m.Get(ctx, KindConfigMap, "default", "dep")
	cm = o.(*corev1.ConfigMap)
	if cm.DeletionTimestamp == nil || cm.Data["k"] != "v" {
		t.Fatalf("update of an object being deleted: %+v", cm)
	}
	cm.Finalizers = nil
	if _, err := m.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if !gone(m, "ConfigMap", "default", "dep") {
		t.Error("object still there after its last finalizer went")
	}

	mustCreate(t, m, nfsPV("pv1", "10.0.0.9", "/volume/nfs/pv1"))
	pv := getPV(t, m, "pv1")
	pv.Finalizers = nil
	if _, err := m.Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if f := getPV(t, m, "pv1").Finalizers; !slices.Equal(f, []string{FinalizerPVProtection}) {
		t.Errorf("pv-protection not put back: %v", f)
	}
}

func condMessage(p *corev1.Pod, t corev1.PodConditionType) string {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}

func condOf(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// TestSchedulerVolumeBinding: a pod whose claim is missing, unbound or
// lost is not scheduled, with the VolumeBinding plugin's reason; once
// the claim binds, the pod is scheduled.
func TestSchedulerVolumeBinding(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	addNode(t, m, "w1", "10.0.0.6", false)
	addNode(t, m, "w2", "10.0.0.7", false)
	// The real scheduler's PostFilter message after a PreFilter
	// rejection (see scheduleLocked).
	const preemption = " not found"
	mustCreate(t, m, podWith("missing", claimVolume("d", "nope")))
	if got := getPod(t, m, "missing"); got.Spec.NodeName != "" || condMessage(got, corev1.PodScheduled) != `0/2 nodes are available: persistentvolumeclaim "nope" not found.`+preemption ||
		condOf(got, corev1.PodScheduled).Reason != corev1.PodReasonUnschedulable {
		t.Errorf("missing claim: %q", condMessage(got, corev1.PodScheduled))
	}
	mustCreate(t, m, claimOf("data"), podWith("user", claimVolume("d", "data")))
	if got := getPod(t, m, "user"); got.Spec.NodeName != "" || condMessage(got, corev1.PodScheduled) != "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."+preemption {
		t.Errorf("unbound claim: %q", condMessage(got, corev1.PodScheduled))
	}
	mustCreate(t, m, nfsPV("pv1", "10.0.0.9", "/volume/nfs/pv1"))
	if got := getPod(t, m, "user"); got.Spec.NodeName == "" || got.Status.Phase != corev1.PodRunning {
		t.Errorf("pod after its claim bound: node %q phase %s", got.Spec.NodeName, got.Status.Phase)
	}
	// A claim whose volume is gone is Lost.
	if err := m.Delete(ctx, KindPod, "default", "user"); err != nil {
		t.Fatal(err)
	}
	// An administrator deletes the Bound volume and removes its
	// finalizer by hand.
	if err := m.Delete(ctx, KindPersistentVolume, "", "pv1"); err != nil {
		t.Fatal(err)
	}
	pv := getPV(t, m, "pv1")
	pv.Finalizers = nil
	if _, err := m.Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if !gone(m, "PersistentVolume", "", "pv1") || getClaim(t, m, "data").Status.Phase != corev1.ClaimLost {
		t.Fatalf("claim of a removed volume: %s", getClaim(t, m, "data").Status.Phase)
	}
	mustCreate(t, m, podWith("lost", claimVolume("d", "data")))
	if got := condMessage(getPod(t, m, "lost"), corev1.PodScheduled); got != `0/2 nodes are available: persistentvolumeclaim "data" bound to non-existent persistentvolume "pv1".`+preemption {
		t.Errorf("lost claim: %q", got)
	}
}

// mounts is a test mount function: it records each call and answers
// with fail's error.
type mounts struct {
	mu    sync.Mutex
	calls []string
	fail  func(node, server, path string) error
}

func (f *mounts) mount(_ context.Context, node, server, path, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, node+" "+server+":"+path)
	if f.fail == nil {
		return nil
	}
	return f.fail(node, server, path)
}

func (f *mounts) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *mounts) setFail(fail func(node, server, path string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

func eventsOf(t *testing.T, m *MemoryAPI, pod string) []*corev1.Event {
	t.Helper()
	objs, err := m.List(context.Background(), KindEvent, "default")
	if err != nil {
		t.Fatal(err)
	}
	var out []*corev1.Event
	for _, o := range objs {
		if e := o.(*corev1.Event); e.InvolvedObject.Name == pod {
			out = append(out, e)
		}
	}
	return out
}

const badOption = "mount: /var/lib/kubelet/pods/x/volumes/kubernetes.io~nfs/pv1: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program."

// TestKubeletMountsNFSVolumes: with a mount function, a pod with NFS
// volumes (a claim's and an inline one) is bound and waits,
// ContainerCreating, until SyncPods mounts them; a failed mount is a
// FailedMount event in the kubelet's words, counted again at the next
// failure; once the mounts succeed the pod runs, and is not mounted
// again.
func TestKubeletMountsNFSVolumes(t *testing.T) {
	f := &mounts{fail: func(string, string, string) error { return errors.New(badOption) }}
	now := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	m := NewMemoryAPI(MemoryOptions{Now: func() time.Time { return now }, Seed: 1, MountNFS: f.mount})
	ctx := context.Background()
	addNode(t, m, "w1", "10.0.0.6", false)
	pv := nfsPV("pv1", "10.0.0.9", "/volume/nfs/pv1")
	pv.Spec.MountOptions = []string{"nfsvers=4.1", "hard"}
	mustCreate(t, m, pv, claimOf("data"))
	inline := corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.10", Path: "/volume/nfs/cache", ReadOnly: true}}}
	mustCreate(t, m, podWith("web", claimVolume("data", "data"), inline))

	p := getPod(t, m, "web")
	if p.Spec.NodeName != "w1" || p.Status.Phase != corev1.PodPending || p.Status.PodIP != "" || p.Status.HostIP != "10.0.0.6" ||
		len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
		p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" || p.Status.ContainerStatuses[0].Ready {
		t.Fatalf("bound pod before its mounts: %s", p.Status.String())
	}
	wantConds := []string{"PodReadyToStartContainers=False", "Initialized=True", "Ready=False ContainersNotReady containers with unready status: [app]",
		"ContainersReady=False ContainersNotReady containers with unready status: [app]", "PodScheduled=True"}
	var conds []string
	for _, c := range p.Status.Conditions {
		s := string(c.Type) + "=" + string(c.Status)
		if c.Reason != "" {
			s += " " + c.Reason + " " + c.Message
		}
		conds = append(conds, s)
	}
	if !slices.Equal(conds, wantConds) {
		t.Errorf("conditions %q", conds)
	}
	if calls := f.take(); len(calls) != 0 {
		t.Errorf("mounts before the kubelet synced: %v", calls)
	}

	// The kubelet tries: the first volume fails.
	if err := m.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := f.take(); !slices.Equal(calls, []string{"w1 10.0.0.9:/volume/nfs/pv1"}) {
		t.Errorf("mount calls %v", calls)
	}
	p = getPod(t, m, "web")
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("pod whose mount failed: %s", p.Status.Phase)
	}
	evs := eventsOf(t, m, "web")
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	e := evs[0]
	want := "MountVolume.SetUp failed for volume \"pv1\" : mount failed: exit status 32\nMounting command: mount\n" +
		"Mounting arguments: -t nfs -o hard,nfsvers=4.1 10.0.0.9:/volume/nfs/pv1 /var/lib/kubelet/pods/" + string(p.UID) + "/volumes/kubernetes.io~nfs/pv1\n" +
		"Output: " + badOption + "\n"
	if e.Message != want {
		t.Errorf("event message\n%q\nwant\n%q", e.Message, want)
	}
	if e.Type != corev1.EventTypeWarning || e.Reason != "FailedMount" || e.Count != 1 || e.Source != (corev1.EventSource{Component: "kubelet", Host: "w1"}) ||
		e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.UID != p.UID || e.ReportingController != "kubelet" || e.ReportingInstance != "w1" ||
		e.Name != fmt.Sprintf("web.%x", now.UnixNano()) || !e.FirstTimestamp.Time.Equal(now) {
		t.Errorf("event %+v", e)
	}

	// The next sync fails the same way: the same event, counted twice.
	now = now.Add(time.Minute)
	if err := m.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := eventsOf(t, m, "web"); len(evs) != 1 || evs[0].Count != 2 || !evs[0].LastTimestamp.Time.Equal(now) || evs[0].FirstTimestamp.Time.Equal(now) {
		t.Errorf("events after the second failure: %+v", evs)
	}
	if calls := f.take(); len(calls) != 1 {
		t.Errorf("mount calls %v", calls)
	}

	// The claim's volume mounts; the inline one is refused by its server.
	f.setFail(func(_, server, path string) error {
		if server == "10.0.0.10" {
			return fmt.Errorf("mount.nfs: access denied by server while mounting %s:%s", server, path)
		}
		return nil
	})
	if err := m.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := f.take(); !slices.Equal(calls, []string{"w1 10.0.0.9:/volume/nfs/pv1", "w1 10.0.0.10:/volume/nfs/cache"}) {
		t.Errorf("mount calls %v", calls)
	}
	evs = eventsOf(t, m, "web")
	if len(evs) != 2 || !strings.HasPrefix(evs[1].Message, "MountVolume.SetUp failed for volume \"cache\" : mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t nfs -o ro 10.0.0.10:/volume/nfs/cache /var/lib/kubelet/pods/") ||
		!strings.HasSuffix(evs[1].Message, "\nOutput: mount.nfs: access denied by server while mounting 10.0.0.10:/volume/nfs/cache\n") {
		t.Fatalf("events %+v", evs)
	}
	if getPod(t, m, "web").Status.Phase != corev1.PodPending {
		t.Error("pod runs with a volume not mounted")
	}

	// Everything mounts: the pod runs.
	f.setFail(nil)
	if err := m.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	p = getPod(t, m, "web")
	if p.Status.Phase != corev1.PodRunning || !podReady(p) || p.Status.PodIP == "" || p.Status.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("pod after its mounts: %s", p.Status.String())
	}
	f.take()
	if err := m.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := f.take(); len(calls) != 0 {
		t.Errorf("a running pod mounted again: %v", calls)
	}

	// A pod without NFS volumes runs at once; one whose node's kubelet
	// is gone is not mounted.
	mustCreate(t, m, podWith("plain"))
	if getPod(t, m, "plain").Status.Phase != corev1.PodRunning {
		t.Error("pod without volumes waits")
	}
	n, _ := m.Get(ctx, KindNode, "", "w1")
	node := n.(*corev1.Node)
	mustCreate(t, m, podWith("later", claimVolume("data", "data")))
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
	if _, err := m.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := f.take(); len(calls) != 0 {
		t.Errorf("mounts for a node whose kubelet is gone: %v", calls)
	}
	if getPod(t, m, "later").Status.Phase != corev1.PodPending {
		t.Error("pod of a node whose kubelet is gone runs")
	}
}

// TestMountWaitStatusInitContainers: with init containers, every
// container waits PodInitializing and the pod is not Initialized.
func TestMountWaitStatusInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup"}, {Name: "sidecar", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "b"}, {Name: "a"}},
	}}
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	st := MountWaitStatus(p, "10.0.0.6", now)
	if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[0].Name != "a" || st.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" ||
		len(st.InitContainerStatuses) != 2 || st.InitContainerStatuses[0].State.Waiting.Reason != "PodInitializing" {
		t.Errorf("container statuses %+v %+v", st.ContainerStatuses, st.InitContainerStatuses)
	}
	init := condOf(&corev1.Pod{Status: st}, corev1.PodInitialized)
	if init.Status != corev1.ConditionFalse || init.Reason != "ContainersNotInitialized" || init.Message != "containers with incomplete status: [setup sidecar]" {
		t.Errorf("Initialized %+v", init)
	}
	if msg := condMessage(&corev1.Pod{Status: st}, corev1.PodReady); msg != "containers with unready status: [sidecar b a]" {
		t.Errorf("Ready message %q", msg)
	}
	if got := podStatusColumn(&corev1.Pod{Spec: p.Spec, Status: st}); got != "Init:0/2" {
		t.Errorf("STATUS column %q", got)
	}
	if got := podStatusColumn(&corev1.Pod{Status: MountWaitStatus(&corev1.Pod{Spec: corev1.PodSpec{Containers: p.Spec.Containers}}, "", now)}); got != "ContainerCreating" {
		t.Errorf("STATUS column %q", got)
	}
}

package realkube_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mgmtkit/mgmtkit/cloudtest/realkube"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

var kindPV = corev1.SchemeGroupVersion.WithKind("PersistentVolume")

func nfsVolume(name, server, path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				NFS: &corev1.NFSVolumeSource{Server: server, Path: path},
			},
		},
	}
}

// TestPersistentVolumeNFS: the API server's validation refuses an NFS
// volume without server or path, naming the field; a valid one becomes
// Available (the persistentvolume-binder controller).
func TestPersistentVolumeNFS(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "pv-cp")
	api := cp.API()

	for _, tc := range []struct {
		name, server, path, field string
	}{
		{"no-server", "", "/exports/a", "spec.nfs.server"},
		{"no-path", "10.0.0.5", "", "spec.nfs.path"},
	} {
		_, err := api.Create(ctx, nfsVolume(tc.name, tc.server, tc.path))
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", tc.name, err)
			continue
		}
		var status apierrors.APIStatus
		found := false
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, c := range status.Status().Details.Causes {
				if c.Field == tc.field && c.Type == metav1.CauseTypeFieldValueRequired {
					found = true
				}
			}
		}
		if !found || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %q does not name %s as required", tc.name, err, tc.field)
		}
		if _, err := api.Get(ctx, kindPV, "", tc.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s: refused volume stored: %v", tc.name, err)
		}
	}

	if _, err := api.Create(ctx, nfsVolume("good", "10.0.0.5", "/exports/good")); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PersistentVolumePhase
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kindPV, "", "good")
		if err != nil {
			return false, err
		}
		phase = o.(*corev1.PersistentVolume).Status.Phase
		return phase == corev1.VolumeAvailable, nil
	}, func() string { return "volume phase " + string(phase) + ", want Available" })
}

// testMounter is a ControlPlaneSpec.MountNFS for the tests: it records
// each mount and answers with fail's error.
type testMounter struct {
	mu    sync.Mutex
	calls []string
	fail  error
}

func (f *testMounter) mount(_ context.Context, node, server, path, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, node+" "+server+":"+path)
	return f.fail
}

func (f *testMounter) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *testMounter) mounted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func nfsClaim(name, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: new(string),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func claimPod(name string, claims ...string) *corev1.Pod {
	p := pod("default", name, nil)
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
	}
	return p
}

const (
	kindPVC            = "PersistentVolumeClaim"
	postFilterNotFound = " not found" // after a PreFilter rejection: see the model's scheduleLocked
	badOptionOutput    = "mount: /var/lib/kubelet/pods/x/volumes/kubernetes.io~nfs/pv: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program."
	pvProtection       = "kubernetes.io/pv-protection"
	pvcProtection      = "kubernetes.io/pvc-protection"
	annBindCompleted   = "pv.kubernetes.io/bind-completed"
	scheduledCondType  = corev1.PodScheduled
)

// TestPersistentVolumeClaimsMountsAndProtection: what the model does
// with volumes, on the real control plane. The StorageObjectInUseProtection
// admission plugin gives volumes and claims their finalizers; the real
// persistentvolume-binder makes the volumes Available and binds a
// claim; the scheduler's VolumeBinding plugin refuses a pod with a
// missing or unbound claim in the model's words; the node simulator
// keeps a pod whose NFS mount fails ContainerCreating with the kubelet's
// FailedMount event, and starts it once the mounter succeeds; a Bound
// volume's deletion waits for pv-protection, its claim's for
// pvc-protection, until the pod goes; with Retain a released volume is
// Released and stays.
func TestPersistentVolumeClaimsMountsAndProtection(t *testing.T) {
	t.Parallel()
	f := &testMounter{fail: errors.New(badOptionOutput)}
	spec := testSpec(t, "pvc-cp")
	spec.MountNFS = f.mount
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	started, err := realkube.New(t).StartControlPlane(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	cp := started.(*realkube.ControlPlane)
	api := cp.API()
	gvk := func(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }
	get := func(kind, ns, name string) kube.Object {
		t.Helper()
		o, err := api.Get(ctx, gvk(kind), ns, name)
		if err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		return o
	}
	absent := func(kind, ns, name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			_, err := api.Get(ctx, gvk(kind), ns, name)
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		}
	}
	createNode(t, ctx, api, "w1", "192.168.0.31", corev1.ConditionTrue)

	for _, n := range []string{"pv1", "pv2"} {
		v := nfsVolume(n, "10.0.0.9", "/volume/nfs/"+n)
		v.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		o, err := api.Create(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if f := o.GetFinalizers(); len(f) != 1 || f[0] != pvProtection {
			t.Errorf("%s finalizers %v", n, f)
		}
	}
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		return get("PersistentVolume", "", "pv1").(*corev1.PersistentVolume).Status.Phase == corev1.VolumeAvailable &&
			get("PersistentVolume", "", "pv2").(*corev1.PersistentVolume).Status.Phase == corev1.VolumeAvailable, nil
	}, func() string { return "volumes not Available" })

	// The scheduler refuses a missing claim and an unbound one.
	for _, o := range []kube.Object{nfsClaim("huge", "5Gi"), claimPod("missing", "nope"), claimPod("unbound", "huge")} {
		if _, err := api.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for pod, want := range map[string]string{
		"missing": `0/1 nodes are available: persistentvolumeclaim "nope" not found.` + postFilterNotFound,
		"unbound": "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims." + postFilterNotFound,
	} {
		var got string
		eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
			for _, c := range get("Pod", "default", pod).(*corev1.Pod).Status.Conditions {
				if c.Type == scheduledCondType && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					got = c.Message
				}
			}
			return got != "", nil
		}, func() string { return pod + ": not marked unschedulable" })
		if got != want {
			t.Errorf("%s: scheduler says %q, want %q", pod, got, want)
		}
	}

	// A claim binds; a pod using it waits for its mount.
	if _, err := api.Create(ctx, nfsClaim("data", "1Gi")); err != nil {
		t.Fatal(err)
	}
	var claim *corev1.PersistentVolumeClaim
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		claim = get(kindPVC, "default", "data").(*corev1.PersistentVolumeClaim)
		return claim.Status.Phase == corev1.ClaimBound, nil
	}, func() string { return "claim not Bound" })
	if len(claim.Finalizers) != 1 || claim.Finalizers[0] != pvcProtection || claim.Annotations[annBindCompleted] != "yes" {
		t.Errorf("bound claim %+v", claim.ObjectMeta)
	}
	pvName := claim.Spec.VolumeName
	other := map[string]string{"pv1": "pv2", "pv2": "pv1"}[pvName]
	if _, err := api.Create(ctx, claimPod("web", "data")); err != nil {
		t.Fatal(err)
	}
	var web *corev1.Pod
	var events []corev1.Event
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		web = get("Pod", "default", "web").(*corev1.Pod)
		l, err := clientset(t, cp).CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=FailedMount"})
		if err != nil {
			return false, err
		}
		events = l.Items
		return len(web.Status.ContainerStatuses) == 1 && len(events) > 0, nil
	}, func() string { return "no FailedMount for the pod: " + web.Status.String() })
	want := "MountVolume.SetUp failed for volume \"" + pvName + "\" : mount failed: exit status 32\nMounting command: mount\n" +
		"Mounting arguments: -t nfs 10.0.0.9:/volume/nfs/" + pvName + " /var/lib/kubelet/pods/" + string(web.UID) + "/volumes/kubernetes.io~nfs/" + pvName + "\n" +
		"Output: " + badOptionOutput + "\n"
	e := events[0]
	if e.Message != want || e.Type != corev1.EventTypeWarning || e.Source.Component != "kubelet" || e.Source.Host != "w1" || e.InvolvedObject.UID != web.UID {
		t.Errorf("event %q %s %+v, want message %q", e.Message, e.Type, e.Source, want)
	}
	st := web.Status
	if web.Spec.NodeName != "w1" || st.Phase != corev1.PodPending || st.PodIP != "" || st.ContainerStatuses[0].State.Waiting == nil ||
		st.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" || podReady(web) {
		t.Errorf("pod whose mount fails: %s", st.String())
	}
	if calls := f.mounted(); len(calls) == 0 || calls[0] != "w1 10.0.0.9:/volume/nfs/"+pvName {
		t.Errorf("mounts %v", calls)
	}

	// The node gets its NFS client: the pod runs.
	f.set(nil)
	if err := cp.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		web = get("Pod", "default", "web").(*corev1.Pod)
		return web.Status.Phase == corev1.PodRunning && podReady(web), nil
	}, func() string { return "pod did not run after its mount succeeded: " + web.Status.String() })

	// Deleting the Bound volume and its claim: both stay while the pod
	// runs; the volume stays Bound.
	if err := api.Delete(ctx, gvk("PersistentVolume"), "", pvName); err != nil {
		t.Fatal(err)
	}
	if pv := get("PersistentVolume", "", pvName).(*corev1.PersistentVolume); pv.DeletionTimestamp == nil || pv.Status.Phase != corev1.VolumeBound {
		t.Errorf("deleted bound volume: %v %s", pv.DeletionTimestamp, pv.Status.Phase)
	}
	if err := api.Delete(ctx, gvk(kindPVC), "default", "data"); err != nil {
		t.Fatal(err)
	}
	if c := get(kindPVC, "default", "data").(*corev1.PersistentVolumeClaim); c.DeletionTimestamp == nil {
		t.Error("deleted claim in use has no deletionTimestamp")
	}
	// A new pod may not use the claim being deleted.
	if _, err := api.Create(ctx, claimPod("late", "data")); err != nil {
		t.Fatal(err)
	}
	var late string
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		for _, c := range get("Pod", "default", "late").(*corev1.Pod).Status.Conditions {
			if c.Type == scheduledCondType && c.Status == corev1.ConditionFalse {
				late = c.Message
			}
		}
		return late != "", nil
	}, func() string { return "late pod not marked unschedulable" })
	if want := `0/1 nodes are available: persistentvolumeclaim "data" is being deleted.` + postFilterNotFound; late != want {
		t.Errorf("pod on a claim being deleted: %q, want %q", late, want)
	}
	if pv := get("PersistentVolume", "", pvName).(*corev1.PersistentVolume); pv.Status.Phase != corev1.VolumeBound {
		t.Errorf("volume of a claim being deleted: %s", pv.Status.Phase)
	}
	for _, p := range []string{"web", "late"} {
		if err := api.Delete(ctx, gvk("Pod"), "default", p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, ctx, time.Minute, absent(kindPVC, "default", "data"), func() string { return "claim left after its pod went" })
	eventually(t, ctx, time.Minute, absent("PersistentVolume", "", pvName), func() string { return "volume left after its claim went" })

	// Retain: a released volume is Released and stays.
	if _, err := api.Create(ctx, nfsClaim("data2", "1Gi")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		c := get(kindPVC, "default", "data2").(*corev1.PersistentVolumeClaim)
		return c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName == other, nil
	}, func() string { return "second claim not bound to " + other })
	if err := api.Delete(ctx, gvk(kindPVC), "default", "data2"); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PersistentVolumePhase
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		pv := get("PersistentVolume", "", other).(*corev1.PersistentVolume)
		phase = pv.Status.Phase
		return phase == corev1.VolumeReleased && pv.DeletionTimestamp == nil, nil
	}, func() string { return "retained volume " + string(phase) + ", want Released" })
	if err := api.Delete(ctx, gvk("PersistentVolume"), "", other); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, time.Minute, absent("PersistentVolume", "", other), func() string { return "released volume left after its deletion" })
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

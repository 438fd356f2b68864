package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote"
)

// storageManifest is a Retain NFS volume, a claim it binds and a pod
// using the claim.
const storageManifest = `apiVersion: v1
kind: PersistentVolume
metadata:
  name: nfs-pv1
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  nfs:
    server: 10.0.0.9
    path: /volume/nfs/pv1
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
spec:
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: data
`

// TestKubectlDeleteWaitsForFinalizers: kubectl delete of a Bound volume
// prints "deleted" and then waits: with --timeout it fails at once, the
// volume left Terminating; with --wait=false it returns; without a
// timeout it returns once the claim is released, or when its session
// ends.
func TestKubectlDeleteWaitsForFinalizers(t *testing.T) {
	c := newCluster(t)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	if out := c.ok(storageManifest, "apply", "-f", "-"); out != "persistentvolume/nfs-pv1 created\npersistentvolumeclaim/data created\npod/web created\n" {
		t.Fatalf("apply: %q", out)
	}
	// The server's finalizer does not make a re-apply a change.
	if out := c.ok(storageManifest, "apply", "-f", "-"); strings.Count(out, " unchanged\n") != 3 {
		t.Errorf("re-apply: %q", out)
	}
	pv := func() *corev1.PersistentVolume {
		o, err := c.api.Get(c.ctx, kube.KindPersistentVolume, "", "nfs-pv1")
		if err != nil {
			t.Fatal(err)
		}
		return o.(*corev1.PersistentVolume)
	}
	r := c.kubectl("", "delete", "pv", "nfs-pv1", "--timeout=30s")
	if r.code != 1 || r.stdout != "persistentvolume \"nfs-pv1\" deleted\n" || r.stderr != "error: timed out waiting for the condition on persistentvolumes/nfs-pv1\n" {
		t.Errorf("delete of a bound volume with a timeout: %+v", r)
	}
	if v := pv(); v.DeletionTimestamp == nil || v.Status.Phase != corev1.VolumeBound {
		t.Fatalf("volume after the delete: %v %s", v.DeletionTimestamp, v.Status.Phase)
	}
	if out := c.ok("", "delete", "pv", "nfs-pv1", "--wait=false"); out != "persistentvolume \"nfs-pv1\" deleted\n" {
		t.Errorf("delete --wait=false: %q", out)
	}
	// delete -f deletes the volume (held), the claim (held by the pod),
	// then the pod, which releases both, before it waits: it succeeds.
	if r := c.kubectl(storageManifest, "delete", "-f", "-", "--timeout=1m"); r.code != 0 || r.stderr != "" ||
		r.stdout != "persistentvolume \"nfs-pv1\" deleted\npersistentvolumeclaim \"data\" deleted\npod \"web\" deleted\n" {
		t.Errorf("delete -f: %+v", r)
	}
	if _, err := c.api.Get(c.ctx, kube.KindPersistentVolume, "", "nfs-pv1"); !apierrors.IsNotFound(err) {
		t.Errorf("volume after its claim and pod went: %v", err)
	}

	// Without a timeout, kubectl waits for the volume to go.
	c.ok(storageManifest, "apply", "-f", "-")
	done := make(chan kcResult, 1)
	go func() {
		out, err := c.h.Run(c.ctx, remote.Cmd{Args: []string{"kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "delete", "pv", "nfs-pv1"}, Sudo: true, OKExit: kcAnyExit})
		if err != nil {
			done <- kcResult{stderr: err.Error(), code: -1}
			return
		}
		done <- kcResult{string(out.Stdout), string(out.Stderr), out.ExitCode}
	}()
	waitFor(t, c.ctx, func() bool { return pv().DeletionTimestamp != nil })
	if err := c.api.Delete(c.ctx, kube.KindPod, "default", "web"); err != nil {
		t.Fatal(err)
	}
	if err := c.api.Delete(c.ctx, kube.KindPersistentVolumeClaim, "default", "data"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 0 || r.stdout != "persistentvolume \"nfs-pv1\" deleted\n" {
		t.Errorf("waiting delete: %+v", r)
	}

	// A wait nothing ends ends with the session.
	c.ok(storageManifest, "apply", "-f", "-")
	ctx, cancel := context.WithCancel(c.ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.h.Run(ctx, remote.Cmd{Args: []string{"kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "delete", "pv", "nfs-pv1"}, Sudo: true})
		errc <- err
	}()
	waitFor(t, c.ctx, func() bool { return pv().DeletionTimestamp != nil })
	cancel()
	if err := <-errc; err == nil {
		t.Error("a cancelled waiting delete succeeded")
	}
	if v := pv(); v.Status.Phase != corev1.VolumeBound {
		t.Errorf("volume after a cancelled delete: %s", v.Status.Phase)
	}
}

// waitFor polls cond until it holds (the other goroutine's kubectl
// reaches the API a moment later), failing t when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never met")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// nfsClient is a test mounter standing in for the simulated cloud's:
// the client needs /sbin/mount.nfs (nfs-common), and the server
// 10.0.0.9 exports only to worker1.
type nfsClient struct {
	mu      sync.Mutex
	clients []*ubuntu.Machine
}

func (n *nfsClient) mount(_ context.Context, client *ubuntu.Machine, server, path, _ string) error {
	n.mu.Lock()
	n.clients = append(n.clients, client)
	n.mu.Unlock()
	if !client.Server().FS().Exists("/sbin/mount.nfs") {
		return errors.New("mount: /mnt: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.")
	}
	if server != "10.0.0.9" || client.Hostname() != "worker1" {
		return fmt.Errorf("mount.nfs: access denied by server while mounting %s:%s", server, path)
	}
	return nil
}

// TestWorldMountsNFSOnTheNode: the kubelet of the worker the pod lands
// on mounts through the world's mounter with the worker's machine; the
// pod is ContainerCreating with a FailedMount event while the worker has
// no NFS client, and runs at the first kubectl after the client is
// installed.
func TestWorldMountsNFSOnTheNode(t *testing.T) {
	e := newEnv(t)
	nfs := &nfsClient{}
	e.w.SetNFSMounter(nfs.mount)
	m1 := e.node("master1", "10.0.0.5")
	w1 := e.node("worker1", "10.0.0.12")
	m1.initMaster("10.0.0.5:6443")
	if r := w1.join("10.0.0.5:6443", m1.token(), m1.caHash(), false, ""); r.code != 0 {
		t.Fatalf("join: %s", r.stderr)
	}
	c := e.w.ClusterOf(m1.Machine)
	cniDaemonSet(t, e, c)
	kubectl := "kubectl --kubeconfig /etc/kubernetes/admin.conf "
	m1.mustRun(true, kubectl+"apply -f -", storageManifest)

	getPod := func() corev1.Pod {
		var p corev1.Pod
		if err := json.Unmarshal([]byte(m1.mustRun(true, kubectl+"get pod web -o json")), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := getPod()
	if p.Spec.NodeName != "worker-10-0-0-12" || p.Status.Phase != corev1.PodPending || p.Status.ContainerStatuses[0].State.Waiting == nil ||
		p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("pod on a node without an NFS client: %s %s", p.Spec.NodeName, p.Status.String())
	}
	nfs.mu.Lock()
	if len(nfs.clients) == 0 || nfs.clients[0] != w1.Machine {
		t.Errorf("mounted on %v, want the worker's machine", nfs.clients)
	}
	nfs.mu.Unlock()
	if out := m1.mustRun(true, kubectl+"get pods"); !strings.Contains(out, "web    0/1     ContainerCreating   0") {
		t.Errorf("get pods:\n%s", out)
	}
	var events corev1.EventList
	if err := json.Unmarshal([]byte(m1.mustRun(true, kubectl+"get events --field-selector involvedObject.name=web,reason=FailedMount -o json")), &events); err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Source.Host != "worker-10-0-0-12" || events.Items[0].Count < 2 ||
		!strings.HasPrefix(events.Items[0].Message, "MountVolume.SetUp failed for volume \"nfs-pv1\" : mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t nfs 10.0.0.9:/volume/nfs/pv1 /var/lib/kubelet/pods/"+string(p.UID)+"/volumes/kubernetes.io~nfs/nfs-pv1\nOutput: mount: /mnt: bad option;") {
		t.Errorf("events %+v", events.Items)
	}
	if out := m1.mustRun(true, kubectl+"get events"); !strings.Contains(out, "Warning   FailedMount   pod/web   MountVolume.SetUp failed for volume \"nfs-pv1\" : mount failed: exit status 32\n") {
		t.Errorf("get events:\n%s", out)
	}

	// nfs-common on the worker: the next look finds the pod running.
	w1.write("/sbin/mount.nfs", "", 0o755)
	if p := getPod(); p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		t.Errorf("pod after the client was installed: %s", p.Status.String())
	}
}

// TestWorldWithoutMounter: without a mounter every NFS mount succeeds:
// the pod runs at the first look.
func TestWorldWithoutMounter(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.0.5")
	w1 := e.node("worker1", "10.0.0.12")
	m1.initMaster("10.0.0.5:6443")
	if r := w1.join("10.0.0.5:6443", m1.token(), m1.caHash(), false, ""); r.code != 0 {
		t.Fatalf("join: %s", r.stderr)
	}
	cniDaemonSet(t, e, e.w.ClusterOf(m1.Machine))
	kubectl := "kubectl --kubeconfig /etc/kubernetes/admin.conf "
	m1.mustRun(true, kubectl+"apply -f -", storageManifest)
	var p corev1.Pod
	if err := json.Unmarshal([]byte(m1.mustRun(true, kubectl+"get pod web -o json")), &p); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod without a mounter: %v %s", err, p.Status.String())
	}
}

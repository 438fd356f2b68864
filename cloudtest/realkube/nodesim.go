package realkube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// nodeSimulator stands in for the kubelets of a cluster, which never run
// containers here: it does not register Nodes (the simulation's kubelet
// model does, and sets their Ready condition); for each Node whose
// kubelet reports (Ready True, or False with the kubelet's reason, see
// kubeletRuns) it renews the node's Lease and makes the pods bound to it
// run, once their NFS volumes are mounted (mountVolumes), and it
// confirms their deletion. A Node whose Ready condition is Unknown or
// absent has, as far as it goes, a dead kubelet.
type nodeSimulator struct {
	client kubernetes.Interface
	// waitForCIDR: nodes get spec.podCIDR from node IPAM, so a pod waits
	// for its node's podCIDR before it runs (a kubelet's CNI has no
	// address range before that).
	waitForCIDR bool
	// mountNFS is kube.ControlPlaneSpec.MountNFS; nil: pods start
	// without mounting anything.
	mountNFS func(ctx context.Context, node, server, path, target string) error

	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	nodes   corelisters.NodeLister
	claims  corelisters.PersistentVolumeClaimLister // with mountNFS only
	volumes corelisters.PersistentVolumeLister      // with mountNFS only
	queue   workqueue.TypedRateLimitingInterface[string]
	events  record.EventBroadcaster

	mu        sync.Mutex
	ips       map[string]map[string]types.UID // node → pod IP → pod
	mounted   map[types.UID]bool              // pods whose volumes are mounted
	waiting   map[string]bool                 // keys of pods waiting for their mounts
	recorders map[string]record.EventRecorder // the kubelets' event recorders, by node

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

const (
	nodeLeaseNamespace = corev1.NamespaceNodeLease
	// leaseDuration is the kubelet's nodeLeaseDurationSeconds default
	// (pkg/kubelet/apis/config/v1beta1/defaults.go: 40).
	leaseDuration = 40
	// leaseRenewInterval is how often a Ready node's Lease is renewed
	// (the kubelet renews every 0.25 × 40 s = 10 s,
	// pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction; the node
	// lifecycle controller's grace period is 50 s).
	leaseRenewInterval = 5 * time.Second
	byNodeIndex        = "spec.nodeName"
	// mountRetry is how soon a pod whose mount failed, or whose claim is
	// not resolved yet, is tried again. The kubelet's volume manager
	// retries a failed mount with exponential backoff from 500 ms to
	// 2m2s (pkg/volume/util/nestedpendingoperations); a fixed second
	// keeps the tests that wait for a repaired node short.
	mountRetry = time.Second
)

// startNodeSimulator starts the simulator's informers and workers; it
// runs until stop. mountNFS is the kubelets' NFS mount (nil: none).
func startNodeSimulator(ctx context.Context, client kubernetes.Interface, waitForCIDR bool, mountNFS func(ctx context.Context, node, server, path, target string) error) (*nodeSimulator, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &nodeSimulator{
		client:      client,
		waitForCIDR: waitForCIDR,
		mountNFS:    mountNFS,
		factory:     informers.NewSharedInformerFactory(client, 0),
		queue:       workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		ips:         map[string]map[string]types.UID{},
		mounted:     map[types.UID]bool{},
		waiting:     map[string]bool{},
		recorders:   map[string]record.EventRecorder{},
		cancel:      cancel,
	}
	// The kubelet's event recorder (cmd/kubelet/app/server.go
	// makeEventRecorder: a legacy broadcaster recording to core/v1
	// Events, source component "kubelet" and the node's name).
	s.events = record.NewBroadcaster(record.WithContext(ctx))
	s.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	if mountNFS != nil {
		claims := s.factory.Core().V1().PersistentVolumeClaims()
		volumes := s.factory.Core().V1().PersistentVolumes()
		s.claims, s.volumes = claims.Lister(), volumes.Lister()
		// A claim that binds, or a volume that appears, may let a
		// waiting pod mount.
		retry := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.retryWaiting() },
			UpdateFunc: func(any, any) { s.retryWaiting() },
		}
		for _, inf := range []cache.SharedIndexInformer{claims.Informer(), volumes.Informer()} {
			if _, err := inf.AddEventHandler(retry); err != nil {
				cancel()
				s.events.Shutdown()
				return nil, err
			}
		}
	}
	s.pods = s.factory.Core().V1().Pods().Informer()
	if err := s.pods.AddIndexers(cache.Indexers{byNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		cancel()
		s.events.Shutdown()
		return nil, err
	}
	nodeInformer := s.factory.Core().V1().Nodes()
	s.nodes = nodeInformer.Lister()
	_, err := s.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.podChanged(obj) },
		UpdateFunc: func(_, obj any) { s.podChanged(obj) },
		DeleteFunc: s.podDeleted,
	})
	if err != nil {
		cancel()
		s.events.Shutdown()
		return nil, err
	}
	_, err = nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.nodeChanged(nil, obj) },
		UpdateFunc: func(old, obj any) {
			s.nodeChanged(old, obj)
		},
	})
	if err != nil {
		cancel()
		s.events.Shutdown()
		return nil, err
	}
	s.factory.Start(ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			s.stop()
			return nil, fmt.Errorf("node simulator: %v informer did not sync", typ)
		}
	}
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	go func() {
		defer s.wg.Done()
		for s.work(ctx) {
		}
	}()
	go func() {
		defer s.wg.Done()
		s.renewLeases(ctx)
	}()
	return s, nil
}

// stop stops the workers and informers and waits for them.
func (s *nodeSimulator) stop() {
	if s == nil {
		return
	}
	s.cancel()
	s.queue.ShutDown()
	s.wg.Wait()
	s.factory.Shutdown()
	s.events.Shutdown()
}

// retryWaiting queues the pods waiting for their mounts at once
// (kube.ControlPlane.SyncPods, a claim or volume change).
func (s *nodeSimulator) retryWaiting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key := range s.waiting {
		s.queue.Add(key)
	}
}

// recorder is the event recorder of node's kubelet.
func (s *nodeSimulator) recorder(node string) record.EventRecorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recorders[node]
	if !ok {
		r = s.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node})
		s.recorders[node] = r
	}
	return r
}

func (s *nodeSimulator) podChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	if p.Status.PodIP != "" && !p.Spec.HostNetwork {
		s.reserve(p.Spec.NodeName, p.Status.PodIP, p.UID)
	}
	if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
		s.queue.Add(key)
	}
}

func (s *nodeSimulator) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ip, uid := range s.ips[p.Spec.NodeName] {
		if uid == p.UID {
			delete(s.ips[p.Spec.NodeName], ip)
		}
	}
	delete(s.mounted, p.UID)
	if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
		delete(s.waiting, key)
	}
}

// nodeChanged queues the pods of a node whose readiness, pod CIDR or
// addresses changed.
func (s *nodeSimulator) nodeChanged(oldObj, obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if old, ok := oldObj.(*corev1.Node); ok && readyStatus(old) == readyStatus(n) &&
		old.Spec.PodCIDR == n.Spec.PodCIDR && apiequality.Semantic.DeepEqual(old.Status.Addresses, n.Status.Addresses) {
		return
	}
	pods, _ := s.pods.GetIndexer().ByIndex(byNodeIndex, n.Name)
	for _, o := range pods {
		if key, err := cache.MetaNamespaceKeyFunc(o); err == nil {
			s.queue.Add(key)
		}
	}
	if kubeletRuns(n) {
		s.queue.Add(leaseKey + n.Name)
	}
}

// leaseKey prefixes the queue keys of Lease renewals (pod keys are
// namespace/name and never start with a '!').
const leaseKey = "!lease/"

func (s *nodeSimulator) work(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	var err error
	if len(key) > len(leaseKey) && key[:len(leaseKey)] == leaseKey {
		err = s.renewLease(ctx, key[len(leaseKey):])
	} else {
		err = s.syncPod(ctx, key)
	}
	if err != nil && ctx.Err() == nil {
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

// renewLeases queues the Lease renewal of every Ready node every
// leaseRenewInterval.
func (s *nodeSimulator) renewLeases(ctx context.Context) {
	t := time.NewTicker(leaseRenewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		nodes, err := s.nodes.List(labels.Everything())
		if err != nil {
			continue
		}
		for _, n := range nodes {
			if kubeletRuns(n) {
				s.queue.Add(leaseKey + n.Name)
			}
		}
	}
}

// renewLease renews (or creates) the Lease of a Ready node, as the
// kubelet's node lease controller does
// (k8s.io/component-helpers/apimachinery/lease/controller.go: holder the
// node name, owned by the Node, renewTime now). The node lifecycle
// controller takes a renewed Lease for a live kubelet
// (pkg/controller/nodelifecycle/node_lifecycle_controller.go
// tryUpdateNodeHealth); a node whose Lease is not renewed for
// --node-monitor-grace-period gets Ready=Unknown and the unreachable
// taints.
func (s *nodeSimulator) renewLease(ctx context.Context, name string) error {
	n, err := s.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !kubeletRuns(n) {
		return nil
	}
	now := metav1.NewMicroTime(time.Now())
	leases := s.client.CoordinationV1().Leases(nodeLeaseNamespace)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		d := int32(leaseDuration)
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: nodeLeaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &d, RenewTime: &now},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("lease %s created meanwhile", name) // retried
		}
		return err
	}
	if err != nil {
		return err
	}
	l = l.DeepCopy()
	l.Spec.HolderIdentity = &name
	l.Spec.RenewTime = &now
	if l.Spec.LeaseDurationSeconds == nil {
		d := int32(leaseDuration)
		l.Spec.LeaseDurationSeconds = &d
	}
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// readyStatus is a node's Ready condition status ("" when absent).
func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// kubeletRuns reports whether a node's kubelet runs: its Ready condition
// is True, or False with the kubelet's reason (the pod network not ready
// yet: the kubelet still runs host-network pods, which is how a CNI
// DaemonSet's pod readies the node; see syncPod). Unknown or absent is a
// kubelet that stopped posting status (the node lifecycle controller's
// pkg/controller/nodelifecycle/node_lifecycle_controller.go).
func kubeletRuns(n *corev1.Node) bool {
	s := readyStatus(n)
	return s == corev1.ConditionTrue || s == corev1.ConditionFalse
}

// syncPod is the kubelet's part for one pod on a Ready node.
func (s *nodeSimulator) syncPod(ctx context.Context, key string) error {
	obj, exists, err := s.pods.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	p := obj.(*corev1.Pod)
	if p.Spec.NodeName == "" {
		return nil
	}
	n, err := s.nodes.Get(p.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return nil // pod GC deletes the pods of a deleted node
	}
	if err != nil {
		return err
	}
	if !kubeletRuns(n) {
		// A dead kubelet: the pod stays as it is (Terminating when
		// deleted) until the node reports again or pod GC removes it.
		return nil
	}
	if p.DeletionTimestamp != nil {
		// The kubelet stopped the containers: it confirms the deletion
		// with grace period 0 and the pod's UID as a precondition
		// (pkg/kubelet/status/status_manager.go syncPod, canBeDeleted).
		err := s.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64),
			Preconditions:      metav1.NewUIDPreconditions(string(p.UID)),
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	if readyStatus(n) != corev1.ConditionTrue && !p.Spec.HostNetwork {
		// The pod network is not ready: the kubelet starts host-network
		// pods only (pkg/kubelet/kubelet.go SyncPod: networkErrors and
		// !IsHostNetworkPod); the node's change to Ready requeues it.
		return nil
	}
	if mounted, err := s.mountVolumes(ctx, key, p, n); !mounted {
		return err
	}
	status, ok := s.runningStatus(p, n)
	if !ok || apiequality.Semantic.DeepEqual(status, &p.Status) {
		return nil
	}
	p = p.DeepCopy()
	p.Status = *status
	_, err = s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// mountVolumes is the kubelet's volume manager for a pod about to start
// (pkg/kubelet/kubelet.go SyncPod: WaitForAttachAndMount before the
// sandbox): it mounts the pod's NFS volumes (kube.PodNFSVolumes) with
// mountNFS, once per pod, and reports whether the pod may start. While
// a claim does not resolve, or a mount fails, the pod waits, Pending
// with kube.MountWaitStatus, and is tried again after mountRetry or at
// kube.ControlPlane.SyncPods; a failed mount is a Warning event
// FailedMount with kube.NFSVolume.FailedMountMessage, recorded as the
// kubelet records it (operation_generator.go: og.recorder.Eventf on the
// pod).
func (s *nodeSimulator) mountVolumes(ctx context.Context, key string, p *corev1.Pod, n *corev1.Node) (bool, error) {
	if s.mountNFS == nil {
		return true, nil
	}
	s.mu.Lock()
	done := s.mounted[p.UID]
	s.mu.Unlock()
	if done {
		return true, nil
	}
	vols, resolved := kube.PodNFSVolumes(p,
		func(name string) *corev1.PersistentVolumeClaim {
			c, _ := s.claims.PersistentVolumeClaims(p.Namespace).Get(name)
			return c
		},
		func(name string) *corev1.PersistentVolume {
			v, _ := s.volumes.Get(name)
			return v
		})
	var failed error
	if resolved {
		for _, v := range vols {
			if err := s.mountNFS(ctx, p.Spec.NodeName, v.Server, v.Path, v.MountTarget(p.UID)); err != nil {
				if ctx.Err() != nil {
					return false, ctx.Err()
				}
				s.recorder(p.Spec.NodeName).Event(p, corev1.EventTypeWarning, kube.ReasonFailedMount, v.FailedMountMessage(p.UID, err))
				failed = err
				break
			}
		}
	}
	s.mu.Lock()
	if resolved && failed == nil {
		s.mounted[p.UID] = true
		delete(s.waiting, key)
		s.mu.Unlock()
		return true, nil
	}
	s.waiting[key] = true
	s.mu.Unlock()
	s.queue.AddAfter(key, mountRetry)
	status := kube.MountWaitStatus(p, nodeIP(n), metav1.NewTime(time.Now().Truncate(time.Second)))
	if apiequality.Semantic.DeepEqual(&status, &p.Status) {
		return false, nil
	}
	p = p.DeepCopy()
	p.Status = status
	_, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil // deleted, or changed: its event requeues it
	}
	return false, err
}

// runningStatus is the status a kubelet reports for p once its
// containers run (pkg/kubelet/kubelet_pods.go generateAPIPodStatus,
// pkg/kubelet/status/generate.go): phase Running, the pod conditions
// True, the node's InternalIP as hostIP, a pod IP from the node's
// podCIDR (the node's IP with hostNetwork), every container running and
// ready, init containers completed. Values already reported (times,
// the pod IP) are kept. It is not ok while the pod must wait for its
// node's podCIDR.
func (s *nodeSimulator) runningStatus(p *corev1.Pod, n *corev1.Node) (*corev1.PodStatus, bool) {
	st := p.Status.DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	st.Phase = corev1.PodRunning
	hostIP := nodeIP(n)
	st.HostIP, st.HostIPs = hostIP, nil
	if hostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	switch {
	case p.Spec.HostNetwork:
		st.PodIP = hostIP
	case st.PodIP == "":
		cidr := n.Spec.PodCIDR
		if cidr == "" && s.waitForCIDR {
			return nil, false
		}
		st.PodIP = s.allocate(n.Name, cidr, p.UID)
	}
	st.PodIPs = nil
	if st.PodIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	// The order of pkg/kubelet/status/generate.go and kubelet_pods.go.
	for _, t := range []corev1.PodConditionType{
		corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
	} {
		setPodCondition(st, t, now)
	}
	started := st.StartTime
	st.InitContainerStatuses = containerStatuses(p, p.Spec.InitContainers, st.InitContainerStatuses, *started, true)
	st.ContainerStatuses = containerStatuses(p, p.Spec.Containers, st.ContainerStatuses, *started, false)
	return st, true
}

// setPodCondition sets condition t True, keeping its transition time
// when it already was.
func setPodCondition(st *corev1.PodStatus, t corev1.PodConditionType, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			c.Status, c.LastTransitionTime = corev1.ConditionTrue, now
		}
		c.Reason, c.Message = "", ""
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

// containerStatuses reports containers as running and ready (init
// containers as completed, sidecars — restartPolicy Always — as
// running), sorted by name as the status manager sorts them
// (pkg/kubelet/status/status_manager.go normalizeStatus).
func containerStatuses(p *corev1.Pod, cs []corev1.Container, old []corev1.ContainerStatus, started metav1.Time, init bool) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	prev := map[string]corev1.ContainerStatus{}
	for _, s := range old {
		prev[s.Name] = s
	}
	out := make([]corev1.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		sum := sha256.Sum256([]byte(string(p.UID) + "/" + c.Name))
		id := "containerd://" + hex.EncodeToString(sum[:])
		t := true
		s := corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: id,
			Ready: true, Started: &t,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}
		if init && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
			f := false
			s.Started = &f
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started, ContainerID: id,
			}}
		}
		if o, ok := prev[c.Name]; ok {
			s.RestartCount = o.RestartCount
			if o.ImageID != "" {
				s.ImageID = o.ImageID
			}
			s.Resources, s.AllocatedResources, s.User, s.VolumeMounts = o.Resources, o.AllocatedResources, o.User, o.VolumeMounts
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nodeIP is a node's first InternalIP, else its first address.
func nodeIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	for _, a := range n.Status.Addresses {
		if _, err := netip.ParseAddr(a.Address); err == nil {
			return a.Address
		}
	}
	return ""
}

func (s *nodeSimulator) reserve(node, ip string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ips[node] == nil {
		s.ips[node] = map[string]types.UID{}
	}
	s.ips[node][ip] = uid
}

// allocate returns a free address of cidr for pod uid: the first from .2
// on (.1 is the bridge's, as the host-local IPAM of the CNI plugins
// starts after the gateway), "" without a valid cidr or a free address.
func (s *nodeSimulator) allocate(node, cidr string, uid types.UID) string {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	used := s.ips[node]
	if used == nil {
		used = map[string]types.UID{}
		s.ips[node] = used
	}
	for ip, owner := range used {
		if owner == uid {
			return ip
		}
	}
	prefix = prefix.Masked()
	for a := prefix.Addr().Next().Next(); prefix.Contains(a); a = a.Next() {
		if a.Is4() && !prefix.Contains(a.Next()) {
			break // the broadcast address
		}
		if _, taken := used[a.String()]; !taken {
			used[a.String()] = uid
			return a.String()
		}
	}
	return ""
}

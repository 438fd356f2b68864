package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// The kubelet of the simulation is not a goroutine: what a running
// kubelet would have done by the time someone looks is done when the
// world is observed. [World.Sync] is that moment; kubeadm init and join
// call it once the kubelet runs (as kubeadm waits for the node to
// register), [World.ResolveKubeconfig] (every kubectl) and
// [Cluster.Nodes] call it before they read. Each sync, for each machine
// kubeadm made a member of a cluster, in node-name order:
//
//   - a kubelet that runs (kubelet.service active, /var/lib/kubelet/
//     config.yaml and /etc/kubernetes/kubelet.conf present, swap refused
//     unless failSwapOn is false) registers its Node when it is absent,
//     also after `kubectl delete node` (pkg/kubelet/kubelet_node_status.go
//     registerWithAPIServer: a running kubelet re-creates its Node), and
//     updates its status: Ready or NotReady with the kubelet's reason
//     (see nodeReady), the kubelet version of the installed package;
//   - it keeps the mirror pods of the static pods of /etc/kubernetes/
//     manifests (pkg/kubelet/pod/mirror_client.go: named
//     <pod>-<node>, annotated kubernetes.io/config.mirror, owned by the
//     Node);
//   - a Node whose kubelet stopped turns Ready=Unknown ("Kubelet stopped
//     posting node status.", the node lifecycle controller's
//     pkg/controller/nodelifecycle/node_lifecycle_controller.go); the
//     not-ready and unreachable taints are the API side's (MemoryAPI's
//     node lifecycle pass);
//   - then, once per cluster, the kubelets retry the pods that wait for
//     their NFS mounts ([ControlPlane.SyncPods]): each mount goes through
//     the world's mounter ([World.SetNFSMounter]) on the node's machine,
//     so a pod whose node lacked nfs-common starts at the first sync
//     after it was installed.
//
// The outcome depends only on the machines' state at the sync, not on
// timing, so tests are deterministic.

// Sync brings every cluster's Nodes and mirror pods up to date with the
// kubelets of its machines (see the comment above).
func (w *World) Sync(ctx context.Context) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	for _, c := range w.Clusters() {
		if err := w.syncCluster(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (w *World) syncCluster(ctx context.Context, c *Cluster) error {
	members := w.membersOf(c)
	machines := make([]*ubuntu.Machine, 0, len(members))
	for m := range members {
		machines = append(machines, m)
	}
	slices.SortFunc(machines, func(a, b *ubuntu.Machine) int { return strings.Compare(members[a].node, members[b].node) })
	for _, m := range machines {
		if err := w.syncKubelet(ctx, c, m, members[m]); err != nil {
			return err
		}
	}
	if c.cp == nil {
		return nil
	}
	return c.cp.SyncPods(ctx)
}

// kubeletRunning reports whether m's kubelet runs with a cluster
// identity.
func kubeletRunning(m *ubuntu.Machine) bool {
	return m.Server().FS().Exists(kubeletConf) && kubeletHealthy(m) == nil
}

func (w *World) syncKubelet(ctx context.Context, c *Cluster, m *ubuntu.Machine, mb *member) error {
	obj, err := c.API.Get(ctx, KindNode, "", mb.node)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var node *corev1.Node
	if err == nil {
		node = obj.(*corev1.Node)
	}
	now := metav1.NewTime(w.now())
	if mb.gone || !kubeletRunning(m) {
		if node == nil {
			return nil
		}
		want := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}
		if setCondition(node, want, now) {
			if _, err := c.API.Update(ctx, node); err != nil {
				return err
			}
		}
		return nil
	}
	created := false
	if node == nil {
		node = w.newNode(c, m, mb)
		created = true
	}
	changed := false
	if v := kubeVersion(m, "kubelet"); node.Status.NodeInfo.KubeletVersion != v {
		node.Status.NodeInfo.KubeletVersion = v
		changed = true
	}
	if rt := "containerd://" + containers.Containerd(m).Config().Release; node.Status.NodeInfo.ContainerRuntimeVersion != rt {
		node.Status.NodeInfo.ContainerRuntimeVersion = rt
		changed = true
	}
	status, reason, msg := w.nodeReady(ctx, c, m, mb)
	if setCondition(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: reason, Message: msg}, now) {
		changed = true
	}
	switch {
	case created:
		out, err := c.API.Create(ctx, node)
		if err != nil {
			return err
		}
		node = out.(*corev1.Node)
	case changed:
		out, err := c.API.Update(ctx, node)
		if err != nil {
			return err
		}
		node = out.(*corev1.Node)
	}
	return w.syncMirrorPods(ctx, c, m, mb, node)
}

// setCondition sets a condition, reporting a change of status, reason
// or message (the transition time moves only then).
func setCondition(n *corev1.Node, want corev1.NodeCondition, now metav1.Time) bool {
	for i, c := range n.Status.Conditions {
		if c.Type != want.Type {
			continue
		}
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return false
		}
		want.LastHeartbeatTime, want.LastTransitionTime = now, now
		n.Status.Conditions[i] = want
		return true
	}
	want.LastHeartbeatTime, want.LastTransitionTime = now, now
	n.Status.Conditions = append(n.Status.Conditions, want)
	return true
}

// newNode is the Node a kubelet registers (kubelet_node_status.go
// initialNode: the well-known labels, the addresses, node info), with
// kubeadm's control-plane label and taints (phases/markcontrolplane).
func (w *World) newNode(c *Cluster, m *ubuntu.Machine, mb *member) *corev1.Node {
	arch := m.Arch()
	labels := map[string]string{
		"kubernetes.io/hostname":  mb.node,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      arch,
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": arch,
	}
	var taints []corev1.Taint
	if mb.controlPlane {
		labels[controlPlaneLabel] = ""
		labels[excludeLBLabel] = ""
		taints = append(taints, mb.taints...)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   mb.node,
			Labels: labels,
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: mb.address}, {Type: corev1.NodeHostName, Address: mb.node}},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4026100Ki"), corev1.ResourcePods: resource.MustParse("110"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("3923700Ki"), corev1.ResourcePods: resource.MustParse("110"),
			},
			NodeInfo: corev1.NodeSystemInfo{
				OSImage: "Ubuntu 22.04.4 LTS", KernelVersion: "5.15.0-105-generic", OperatingSystem: "linux", Architecture: arch,
				MachineID: machineID(mb.node), SystemUUID: machineID(mb.node + "/uuid"),
			},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
			},
		},
	}
	return n
}

func machineID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// nodeReady is the kubelet's Ready condition
// (pkg/kubelet/nodestatus/setters.go ReadyCondition: the runtime's
// status and network status):
//
//   - containerd must run and serve the CRI ("container runtime is
//     down", "container runtime not ready");
//   - with containerd 1.x the kubelet's cgroupDriver must match
//     containerd's runc SystemdCgroup: kubeadm configures the kubelet with
//     the systemd driver, and containerd 1.x defaults to cgroupfs
//     (SystemdCgroup = false), which leaves pods unable to start
//     (kubernetes.io/docs/setup/production-environment/container-runtimes
//     "Configuring the systemd cgroup driver"); containerd 2.x tells the
//     kubelet its driver through the CRI RuntimeConfig call and the
//     kubelet follows it (KEP-4033, KubeletCgroupDriverFromCRI, GA in
//     1.34), so there is no mismatch to make;
//   - the pod network must have reached the node (a CNI DaemonSet's pod
//     there, [PodNetworkReady]): "container runtime network not ready:
//     NetworkReady=false reason:NetworkPluginNotReady message:Network
//     plugin returns error: cni plugin not initialized".
func (w *World) nodeReady(ctx context.Context, c *Cluster, m *ubuntu.Machine, mb *member) (corev1.ConditionStatus, string, string) {
	const notReady = "KubeletNotReady"
	st := containers.Containerd(m)
	if !st.Running() {
		return corev1.ConditionFalse, notReady, "container runtime is down"
	}
	if err := criError(m); err != "" {
		return corev1.ConditionFalse, notReady, "container runtime not ready: RuntimeReady=false reason:RuntimeNotReady message:" + err
	}
	kc, _ := readKubeletConfig(m)
	driver := kc.cgroupDriver
	if driver == "" {
		driver = "cgroupfs" // the kubelet's own default without kubeadm
	}
	if systemd, major := containerdSystemdCgroup(m); major < 2 {
		rt := "cgroupfs"
		if systemd {
			rt = "systemd"
		}
		if rt != driver {
			return corev1.ConditionFalse, notReady, fmt.Sprintf("container runtime cgroup driver %q (SystemdCgroup = %v in /etc/containerd/config.toml) does not match the kubelet's cgroupDriver %q: pod sandboxes cannot be created", rt, systemd, driver)
		}
	}
	if ok, _ := PodNetworkReady(ctx, c.API, mb.node); !ok {
		return corev1.ConditionFalse, notReady, "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	}
	return corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
}

// kubeletSettings are the fields of the kubelet's configuration file
// that the kubelet model acts on.
type kubeletSettings struct {
	cgroupDriver string
	failSwapOn   bool // failSwapOn, true when unset
}

// parsedKubeletConfig holds what readKubeletConfig parsed.
type parsedKubeletConfig struct {
	settings kubeletSettings
	ok       bool
}

var kubeletConfigs parseCache[parsedKubeletConfig]

// readKubeletConfig reads /var/lib/kubelet/config.yaml, reporting
// whether it exists and parses.
func readKubeletConfig(m *ubuntu.Machine) (kubeletSettings, bool) {
	data, err := m.Server().FS().ReadFile(kubeletConfigFile)
	if err != nil {
		return kubeletSettings{}, false
	}
	p := kubeletConfigs.get(data, func(data []byte) parsedKubeletConfig {
		var kc kubeletConfig
		if err := yaml.Unmarshal(data, &kc); err != nil {
			return parsedKubeletConfig{}
		}
		return parsedKubeletConfig{settings: kubeletSettings{cgroupDriver: kc.CgroupDriver, failSwapOn: kc.FailSwapOn == nil || *kc.FailSwapOn}, ok: true}
	})
	return p.settings, p.ok
}

// containerdSystemdCgroup reads runc's SystemdCgroup option from
// /etc/containerd/config.toml (version 2: plugins."io.containerd.grpc.v1.cri"
// .containerd.runtimes.runc.options; version 3, containerd 2:
// plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options),
// false when unset, and the major version of the containerd that runs.
func containerdSystemdCgroup(m *ubuntu.Machine) (bool, int) {
	cfg := containers.Containerd(m).Config()
	major := 1
	fmt.Sscanf(cfg.Release, "%d.", &major)
	data, err := m.Server().FS().ReadFile("/etc/containerd/config.toml")
	if err != nil {
		return false, major
	}
	options := containerdRuncOptions.get(data, parseRuncOptions)
	plugin := "io.containerd.grpc.v1.cri"
	if cfg.Version >= 3 {
		plugin = "io.containerd.cri.v1.runtime"
	}
	return options[plugin], major
}

var containerdRuncOptions parseCache[map[string]bool]

// parseRuncOptions returns the SystemdCgroup option of runc in the
// containerd configuration data under each of the two CRI plugins that
// have it (version 2 and version 3 configurations), false when unset.
func parseRuncOptions(data []byte) map[string]bool {
	out := map[string]bool{}
	var doc map[string]any
	if toml.Unmarshal(data, &doc) != nil {
		return out
	}
	for _, plugin := range []string{"io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"} {
		t, ok := doc, true
		for _, k := range []string{"plugins", plugin, "containerd", "runtimes", "runc", "options"} {
			if t, ok = t[k].(map[string]any); !ok {
				break
			}
		}
		if ok {
			out[plugin], _ = t["SystemdCgroup"].(bool)
		}
	}
	return out
}

// syncMirrorPods keeps one mirror pod per static pod manifest of the
// node, deleting those whose manifest is gone.
func (w *World) syncMirrorPods(ctx context.Context, c *Cluster, m *ubuntu.Machine, mb *member, node *corev1.Node) error {
	fsys := m.Server().FS()
	entries, _ := fsys.ReadDir(manifestsDir)
	want := map[string]*corev1.Pod{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := fsys.ReadFile(manifestsDir + "/" + e.Name())
		if err != nil {
			continue
		}
		manifest := staticPodManifests.get(data, parseStaticPod)
		if manifest.pod == nil {
			continue
		}
		pod := *manifest.pod.DeepCopy()
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		pod.Name = pod.Name + "-" + mb.node
		isController := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &isController}}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		hash := manifest.hash
		pod.Annotations["kubernetes.io/config.mirror"] = hash
		pod.Annotations["kubernetes.io/config.hash"] = hash
		pod.Annotations["kubernetes.io/config.source"] = "file"
		pod.Spec.NodeName = mb.node
		pod.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: mb.address, PodIP: mb.address,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		}
		want[pod.Namespace+"/"+pod.Name] = &pod
	}
	objs, err := podsOnNode(ctx, c.API, mb.node)
	if err != nil {
		return err
	}
	have := map[string]*corev1.Pod{}
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.Annotations["kubernetes.io/config.mirror"] != "" {
			have[p.Namespace+"/"+p.Name] = p
		}
	}
	for k, p := range have {
		if w, ok := want[k]; !ok || w.Annotations["kubernetes.io/config.mirror"] != p.Annotations["kubernetes.io/config.mirror"] {
			if err := c.API.Delete(ctx, KindPod, p.Namespace, p.Name); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			delete(have, k)
		}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := have[k]; ok {
			continue
		}
		if _, err := c.API.Create(ctx, want[k]); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// staticPod is a parsed static pod manifest: the pod (nil when the
// manifest does not parse or names no pod) and the hash of the file.
type staticPod struct {
	pod  *corev1.Pod
	hash string
}

var staticPodManifests parseCache[staticPod]

func parseStaticPod(data []byte) staticPod {
	var pod corev1.Pod
	if yaml.Unmarshal(data, &pod) != nil || pod.Name == "" {
		return staticPod{}
	}
	sum := sha256.Sum256(data)
	return staticPod{pod: &pod, hash: hex.EncodeToString(sum[:16])}
}

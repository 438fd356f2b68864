package kube

import (
	"context"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// CNIConfDir is where a CNI plugin's DaemonSet writes the network
// configuration the container runtime reads (containerd's
// plugins."io.containerd.grpc.v1.cri".cni conf_dir default).
const CNIConfDir = "/etc/cni/net.d"

// PodNetworkReady reports whether node has a pod network: a DaemonSet
// whose pod template mounts the hostPath /etc/cni/net.d (as flannel's,
// calico's and cilium's do, to write their CNI configuration there) has
// a running, Ready pod on the node. Until then the real kubelet reports
// the node NotReady with "container runtime network not ready:
// NetworkReady=false reason:NetworkPluginNotReady message:Network plugin
// returns error: cni plugin not initialized" (pkg/kubelet/kubelet.go
// updateRuntimeUp, from the CRI's NetworkReady condition); the kubelet
// model calls this to decide its Ready condition.
func PodNetworkReady(ctx context.Context, api API, node string) (bool, error) {
	dss, err := api.List(ctx, KindDaemonSet, "")
	if err != nil {
		return false, err
	}
	cni := map[string]bool{} // DaemonSet uid
	for _, o := range dss {
		ds, ok := o.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.HostPath != nil && path.Clean(v.HostPath.Path) == CNIConfDir {
				cni[string(ds.UID)] = true
			}
		}
	}
	if len(cni) == 0 {
		return false, nil
	}
	pods, err := api.List(ctx, KindPod, "")
	if err != nil {
		return false, err
	}
	for _, o := range pods {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.NodeName != node || p.Status.Phase != corev1.PodRunning || !podReady(p) {
			continue
		}
		if ref := controllerOf(p); ref != nil && ref.Kind == "DaemonSet" && cni[string(ref.UID)] {
			return true, nil
		}
	}
	return false, nil
}

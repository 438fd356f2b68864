package kube

import (
	"context"
	"path"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// CNIConfDir is where a CNI plugin's DaemonSet writes the network
// configuration the container runtime reads (containerd's
// plugins."io.containerd.grpc.v1.cri".cni conf_dir default).
const CNIConfDir = "/etc/cni/net.d"

// subnetManager reports whether a pod spec runs flanneld with
// --kube-subnet-mgr, which takes the node's subnet from spec.podCIDR and
// fails without one ("Error registering network: failed to acquire
// lease: node \"NAME\" pod cidr not assigned", flannel's
// pkg/subnet/kube/kube.go).
func subnetManager(spec *corev1.PodSpec) bool {
	for _, c := range spec.Containers {
		for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
			if a == "--kube-subnet-mgr" {
				return true
			}
		}
	}
	return false
}

// PodNetworkReady reports whether node has a pod network: a DaemonSet
// whose pod template mounts the hostPath /etc/cni/net.d (as flannel's,
// calico's and cilium's do, to write their CNI configuration there) has
// a running, Ready pod on the node. Until then the real kubelet reports
// the node NotReady with "container runtime network not ready:
// NetworkReady=false reason:NetworkPluginNotReady message:Network plugin
// returns error: cni plugin not initialized" (pkg/kubelet/kubelet.go
// updateRuntimeUp, from the CRI's NetworkReady condition); the kubelet
// model calls this to decide its Ready condition. A flannel running with
// --kube-subnet-mgr also needs the node's spec.podCIDR (see
// [MemoryOptions.ClusterCIDR]): without it flanneld exits and never
// writes the CNI configuration.
func PodNetworkReady(ctx context.Context, api API, node string) (bool, error) {
	dss, err := api.List(ctx, KindDaemonSet, "")
	if err != nil {
		return false, err
	}
	cni := map[string]bool{} // DaemonSet uid → needs the node's podCIDR
	for _, o := range dss {
		ds, ok := o.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.HostPath != nil && path.Clean(v.HostPath.Path) == CNIConfDir {
				cni[string(ds.UID)] = subnetManager(&ds.Spec.Template.Spec)
			}
		}
	}
	if len(cni) == 0 {
		return false, nil
	}
	var podCIDR string
	if o, err := api.Get(ctx, KindNode, "", node); err == nil {
		podCIDR = o.(*corev1.Node).Spec.PodCIDR
	} else if !apierrors.IsNotFound(err) {
		return false, err
	}
	pods, err := podsOnNode(ctx, api, node)
	if err != nil {
		return false, err
	}
	for _, o := range pods {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Status.Phase != corev1.PodRunning || !podReady(p) {
			continue
		}
		ref := controllerOf(p)
		if ref == nil || ref.Kind != "DaemonSet" {
			continue
		}
		if needsCIDR, ok := cni[string(ref.UID)]; ok && (!needsCIDR || podCIDR != "") {
			return true, nil
		}
	}
	return false, nil
}

// NodePodLister is an [API] that can list the pods bound to one node
// without copying the others, as a list with the field selector
// spec.nodeName=NODE does on a real API server (the kubelet's own pod
// source, pkg/kubelet/config/apiserver.go NewSourceApiserver).
// [MemoryAPI] is one; the kubelet model uses it when the API is one.
type NodePodLister interface {
	// ListPodsOnNode returns the pods whose spec.nodeName is node,
	// sorted by namespace and name, as List would return them.
	ListPodsOnNode(ctx context.Context, node string) ([]Object, error)
}

// podsOnNode lists the pods bound to node, sorted by namespace and name.
func podsOnNode(ctx context.Context, api API, node string) ([]Object, error) {
	if l, ok := api.(NodePodLister); ok {
		return l.ListPodsOnNode(ctx, node)
	}
	pods, err := api.List(ctx, KindPod, "")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pods, func(o Object) bool {
		p, ok := o.(*corev1.Pod)
		return !ok || p.Spec.NodeName != node
	}), nil
}

package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// podNetworkReady reports whether the pod network reached node: a pod of
// a DaemonSet that mounts the hostPath /etc/cni/net.d (where a CNI
// plugin's installer writes its configuration: flannel's kube-flannel.yml,
// calico.yaml) runs there.
func (w *World) podNetworkReady(ctx context.Context, c *Cluster, node string) bool {
	objs, err := c.API.List(ctx, KindPod, "")
	if err != nil {
		return false
	}
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.NodeName != node {
			continue
		}
		owned := false
		for _, ref := range p.OwnerReferences {
			owned = owned || ref.Kind == "DaemonSet"
		}
		if !owned {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.HostPath != nil && (v.HostPath.Path == "/etc/cni/net.d" || v.HostPath.Path == "/etc/cni/net.d/") {
				return true
			}
		}
	}
	return false
}

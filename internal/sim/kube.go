package sim

import (
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// The cloud's Kubernetes: one [kube.World] whose clusters kubeadm creates
// on the hosts, reached through the cloud's network.

// Kube returns the cloud's Kubernetes world: the clusters kubeadm init
// made on its hosts, their API servers and nodes.
func (c *Cloud) Kube() *kube.World { return c.kube }

// addKubePackages adds the Kubernetes packages (kubeadm, kubelet,
// kubectl, cri-tools, kubernetes-cni from pkgs.k8s.io; haproxy and
// keepalived) bound to the cloud's world to a host's catalog.
func (c *Cloud) addKubePackages(cat *ubuntu.Catalog) {
	kube.AddPackages(cat, c.kube, c.kubectlTool())
}

// kubectlTool is the kubectl of the hosts, the backend's: it reaches the
// API server its kubeconfig names through the world, and runs etcdctl in
// etcd pods.
func (c *Cloud) kubectlTool() ubuntu.Tool {
	return c.kube.Backend().Kubectl(c.kube)
}

// vipHolder is the host machine holding a virtual IP by VRRP, for
// [Cloud.Machine]: the VIP answers where keepalived put it.
func (c *Cloud) vipHolder(ip string) *ubuntu.Machine { return c.kube.VIPHolder(ip) }

// forgetKube tells the world a host's machine is gone: its kubelet stops
// posting status and its keepalived gives its VIPs up.
func (c *Cloud) forgetKube(m *ubuntu.Machine) { c.kube.Forget(m) }

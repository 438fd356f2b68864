// Package kube is the simulated cloud's Kubernetes: a world model of
// clusters built with the k8s.io/api types, and the programs of a
// Kubernetes node that act on it (kubeadm, kubectl, the kubelet, etcdctl
// run through kubectl exec, HAProxy and keepalived in front of the API
// servers).
//
// The API side sits behind one seam, [API]: the fake programs read and
// write Kubernetes objects only through it, so that a real kube-apiserver
// (with its controllers and etcd) can replace [MemoryAPI] and judge the
// same scenarios. What the in-memory model decides on its own (scheduling,
// evictions and PodDisruptionBudgets, the token controller, node
// readiness, pod addresses from the node's podCIDR or from Calico's IPAM
// blocks, [CalicoIPAM], static PersistentVolumes with their binding and
// their protection finalizers) cites the upstream source it models.
//
// NFS volumes are mounted by the kubelet of the pod's node before the
// pod starts, through the one seam the simulated cloud fills:
// [World.SetNFSMounter] gives the world the mount of its machines, which
// reaches both backends' kubelets as [ControlPlaneSpec.MountNFS]. A pod
// whose mount fails is bound, Pending, ContainerCreating, with the
// kubelet's FailedMount event ([NFSVolume.FailedMountMessage],
// [MountWaitStatus]), and starts once a retry mounts: the model's
// kubelets retry at each [World.Sync] ([ControlPlane.SyncPods]).
package kube

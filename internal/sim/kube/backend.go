package kube

import (
	"context"
	"net/netip"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// Backend is what a [World]'s clusters run on: the API server with its
// controllers and etcd that kubeadm init starts, and the kubectl of the
// hosts. [MemoryBackend] is the fast model of this package; a real
// kube-apiserver with kube-controller-manager, the scheduler and embedded
// etcd (the module cloudtest/realkube) is the other, and the same
// scenarios run on both (cloudtest/conformance, internal/kubescenarios).
type Backend interface {
	// StartControlPlane starts the control plane of a cluster kubeadm
	// init creates, with the PKI kubeadm generated.
	StartControlPlane(ctx context.Context, spec ControlPlaneSpec) (ControlPlane, error)
	// Kubectl returns the kubectl program of the hosts of w.
	Kubectl(w *World) ubuntu.Tool
}

// ControlPlaneSpec is what kubeadm init decided for a new cluster: the
// PKI it generated and the networks of its ClusterConfiguration.
type ControlPlaneSpec struct {
	// Name names the cluster in logs and errors: the first control
	// plane's node name.
	Name string
	// CACert and CAKey are the PEM of the cluster CA (/etc/kubernetes/
	// pki/ca.crt and ca.key): the API server trusts the client
	// certificates it signed (admin.conf's) and serves with a
	// certificate it signed, which kubeconfigs' certificate-authority-
	// data verify.
	CACert, CAKey []byte
	// ServiceAccountKey and ServiceAccountPub are the PEM of sa.key and
	// sa.pub: the token controller signs with the key, the API server
	// verifies with the public key.
	ServiceAccountKey, ServiceAccountPub []byte
	// ServiceSubnet is networking.serviceSubnet ("10.96.0.0/12").
	ServiceSubnet netip.Prefix
	// PodSubnet is networking.podSubnet; invalid when unset (no node
	// IPAM).
	PodSubnet netip.Prefix
	// NodeCIDRMaskSize is the size of each node's pod subnet.
	NodeCIDRMaskSize int
	// Now is the world's clock (time.Now unless a test set it); only the
	// model follows it, a real API server keeps real time.
	Now func() time.Time
	// FirstEtcdMember is the stacked etcd member of the first control
	// plane: its node name and advertise address.
	FirstEtcdMember EtcdPeer
	// MountNFS is how the kubelet of node mounts the NFS volume
	// server:path at target (the pod's volume directory, [NFSVolume.MountTarget]) before it starts the containers of a pod that uses it
	// (an inline nfs volume, or a claim bound to an NFS
	// PersistentVolume): nil, or an error whose message is mount's
	// output. The kubelets of both backends call it and keep such a pod
	// Pending, ContainerCreating, with a FailedMount event, until it
	// succeeds (kubelet_volumes.go). The World sets it to its mounter
	// ([World.SetNFSMounter]) applied to the node's machine. Nil: the
	// kubelets start such pods as any other.
	MountNFS func(ctx context.Context, node, server, path, target string) error
}

// EtcdPeer is a control plane's stacked etcd member as kubeadm starts
// it: --name is the node name, the URLs are on the advertise address.
type EtcdPeer struct {
	Name, Address string
}

// ControlPlane is one cluster's running control plane.
type ControlPlane interface {
	// API is the API server as cluster-admin (system:masters) sees it.
	API() API
	// Etcd is the cluster's stacked etcd.
	Etcd() Etcd
	// RunsBootstrapControllers reports whether kube-controller-manager's
	// bootstrapsigner and tokencleaner run on their own; when they do not
	// (the model), the World runs its own at the moments kubeadm needs
	// them.
	RunsBootstrapControllers() bool
	// SyncPods is the moment the kubelets retry the pods that wait for
	// their NFS mounts ([ControlPlaneSpec.MountNFS]); [World.Sync] calls
	// it after the Nodes are up to date. The model's kubelets act only
	// then ([MemoryAPI.SyncPods]): it returns once they have. A real
	// control plane's node simulator retries on its own as well; there
	// it only hurries the retries, which land a moment later.
	SyncPods(ctx context.Context) error
	// Close stops the control plane; its API answers no more.
	Close() error
}

// Etcd is a cluster's stacked etcd as kubeadm and etcdctl act on it.
type Etcd interface {
	// Members lists the members in the order they were added, with the
	// cluster ID.
	Members(ctx context.Context) (clusterID uint64, members []EtcdMember, err error)
	// Add adds the member of a joining control plane and starts it
	// (kubeadm join --control-plane: the member added as a learner, its
	// static pod started, then the learner promoted, cmd/kubeadm/app/
	// phases/etcd/local.go). A member of that name is replaced.
	Add(ctx context.Context, peer EtcdPeer) error
	// Remove removes a member by ID (etcdctl member remove); an unknown
	// ID is [ErrEtcdMemberNotFound].
	Remove(ctx context.Context, id uint64) error
}

// ErrEtcdMemberNotFound is etcd's answer to removing an unknown member
// (go.etcd.io/etcd/server/v3/etcdserver/errors: ErrIDNotFound, "member
// not found"; etcdctl prints "etcdserver: member not found").
var ErrEtcdMemberNotFound = errorString("etcdserver: member not found")

type errorString string

func (e errorString) Error() string { return string(e) }

// MemoryBackend is the in-memory model: a [MemoryAPI] per cluster, an
// etcd membership list, and the kubectl of [KubectlTool].
type MemoryBackend struct{}

var _ Backend = MemoryBackend{}

// StartControlPlane returns a [MemoryAPI] with spec's CA and networks,
// and a one-member etcd.
func (MemoryBackend) StartControlPlane(_ context.Context, spec ControlPlaneSpec) (ControlPlane, error) {
	opts := MemoryOptions{CACert: spec.CACert, Now: spec.Now, ClusterCIDR: spec.PodSubnet, NodeCIDRMaskSize: spec.NodeCIDRMaskSize, MountNFS: spec.MountNFS}
	cp := &memoryControlPlane{api: NewMemoryAPI(opts), etcd: &memoryEtcd{clusterID: randomUint64()}}
	cp.etcd.add(spec.FirstEtcdMember)
	return cp, nil
}

// Kubectl is [KubectlTool] resolving kubeconfigs through w and running
// etcdctl in etcd pods with [World.EtcdExec].
func (MemoryBackend) Kubectl(w *World) ubuntu.Tool {
	return KubectlTool(w.ResolveKubeconfig, WithExec(w.EtcdExec))
}

type memoryControlPlane struct {
	api  *MemoryAPI
	etcd *memoryEtcd
}

func (c *memoryControlPlane) API() API                           { return c.api }
func (c *memoryControlPlane) Etcd() Etcd                         { return c.etcd }
func (c *memoryControlPlane) RunsBootstrapControllers() bool     { return false }
func (c *memoryControlPlane) SyncPods(ctx context.Context) error { return c.api.SyncPods(ctx) }
func (c *memoryControlPlane) Close() error                       { return nil }

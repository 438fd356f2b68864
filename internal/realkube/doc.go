// Package realkube runs a real Kubernetes control plane inside the test
// process, as a kube.Backend of the simulated cloud: the judge of the
// in-memory model (kube.MemoryBackend). The same scenarios run on both;
// where they disagree, the model is wrong.
//
// For each cluster kubeadm init creates in the simulation,
// [Backend.StartControlPlane] starts, on loopback addresses only:
//
//   - embedded etcd 3.6 (go.etcd.io/etcd/server/v3/embed), one member
//     named after the first control plane, plain http on random ports,
//     data in a temporary directory. [ControlPlane.Etcd] changes the real
//     membership: Add starts a new embedded member that joins the cluster
//     as kubeadm 1.36 joins one (MemberAddAsLearner, the member with
//     --initial-cluster-state=existing, MemberPromote), Remove removes one
//     and stops it. The API server reaches etcd through a small TCP proxy
//     that forwards each connection to a member still in the cluster, so
//     removing the first member does not cut it off. etcd refuses a
//     membership change within 5 s of a member joining ("unhealthy
//     cluster"); Add and Remove retry, as kubeadm does, so they can take
//     that long, and a joining member often waits 7 s (etcd's request
//     timeout) before it publishes its name.
//   - kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver/app) with the
//     flags kubeadm's static pod has (cmd/kubeadm/app/phases/controlplane/
//     manifests.go): the cluster CA of the spec for client certificates
//     and for its serving certificate (names kubernetes,
//     kubernetes.default, kubernetes.default.svc, localhost, 127.0.0.1
//     and the first service IP), sa.pub and sa.key for service account
//     tokens, bootstrap token authentication, Node,RBAC authorization.
//     The default admission plugins stay on, StorageObjectInUseProtection
//     among them (pkg/kubeapiserver/options/plugins.go), which gives
//     PersistentVolumes and claims their protection finalizers.
//   - kube-controller-manager with every default controller plus
//     bootstrapsigner and tokencleaner (kubeadm's --controllers), node
//     IPAM when the spec has a pod subnet, and each controller under its
//     own service account (--use-service-account-credentials): the
//     persistentvolume-binder, pv-protection and pvc-protection among
//     them.
//   - kube-scheduler.
//   - a node simulator, the kubelets that never run containers: it does
//     not register Nodes (the simulation's kubelet model does, through
//     [ControlPlane.API]); while a Node's Ready condition is True it
//     renews the node's Lease, so that the node lifecycle controller
//     keeps it Ready (and marks a node whose Ready condition is Unknown
//     or absent unreachable on its own), makes the pods bound to it
//     Running and Ready with a pod IP from the node's podCIDR, and
//     confirms their deletion. When the spec has a mount function
//     ([kube.ControlPlaneSpec.MountNFS]) a pod's NFS volumes (inline, or
//     its claims' NFS PersistentVolumes) are mounted first: while a mount
//     fails the pod stays Pending, ContainerCreating, the kubelet's
//     FailedMount event is recorded (client-go's event recorder, source
//     kubelet on the node), and the mount is retried every second or at
//     [ControlPlane.SyncPods]. The pods of a node that is not Ready stay
//     as they are: Terminating forever once deleted, as with a dead
//     kubelet. A node whose Ready condition is False gets no Lease
//     renewal either, so unless the node's status is written again within
//     --node-monitor-grace-period (50 s) the node lifecycle controller
//     turns it Unknown, where a real kubelet that reports NotReady keeps
//     renewing its Lease.
//
// The controller manager and scheduler run without leader election (with
// it, a scheduler whose context ends exits the process) and with higher
// client rate limits than kubeadm's (the default 20 QPS make the start
// of the controllers, each under its own service account, take 5 s). All
// clocks are real: [kube.ControlPlaneSpec.Now] is not followed. Several
// control planes may run at once in a process; two process-wide
// registrations of kube-controller-manager and kube-scheduler that
// assume one per process are undone after each start (components.go).
//
// [ControlPlane.API] is a kube.API over client-go as cluster-admin (a
// client certificate with O=system:masters). Nothing dials an address
// outside 127.0.0.0/8: the API server has no kubelet client certificate
// and is never asked to exec, stream logs or port-forward.
//
// The components log through klog, which is silenced unless REALKUBE_LOG
// is set to a verbosity (REALKUBE_LOG=2); etcd logs errors only.
// A control plane takes some seconds to start and some 350 MB of memory.
package realkube

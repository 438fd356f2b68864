// Package realkube runs a real Kubernetes control plane inside the test
// process, as the Kubernetes of mgmtkit's simulated cloud: the judge of
// the in-memory model the cloud runs by default. The same scenarios run
// on both; where they disagree, the model is wrong. Switch a test of
// the kit to it with [New]:
//
//	conformance.Run(t, conformance.Options{Driver: newDriver, Kube: realkube.New(t)})
//
// # Your go.mod
//
// This is a module of its own, github.com/mgmtkit/mgmtkit/cloudtest/realkube,
// so that k8s.io/kubernetes stays out of the SDK's dependencies. Require
// it in the module of your tests (go get
// github.com/mgmtkit/mgmtkit/cloudtest/realkube; with a checkout of
// mgmtkit, a replace of both github.com/mgmtkit/mgmtkit and
// github.com/mgmtkit/mgmtkit/cloudtest/realkube to it). k8s.io/kubernetes
// requires its staging modules at v0.0.0 and replaces them in its own
// go.mod, which Go ignores in a dependency: your go.mod needs the same
// replace directives as this module's, for the Kubernetes release it
// builds (1.36.3):
//
//	replace (
//		k8s.io/api => k8s.io/api v0.36.3
//		k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.36.3
//		k8s.io/apimachinery => k8s.io/apimachinery v0.36.3
//		k8s.io/apiserver => k8s.io/apiserver v0.36.3
//		k8s.io/cli-runtime => k8s.io/cli-runtime v0.36.3
//		k8s.io/client-go => k8s.io/client-go v0.36.3
//		k8s.io/cloud-provider => k8s.io/cloud-provider v0.36.3
//		k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.36.3
//		k8s.io/code-generator => k8s.io/code-generator v0.36.3
//		k8s.io/component-base => k8s.io/component-base v0.36.3
//		k8s.io/component-helpers => k8s.io/component-helpers v0.36.3
//		k8s.io/controller-manager => k8s.io/controller-manager v0.36.3
//		k8s.io/cri-api => k8s.io/cri-api v0.36.3
//		k8s.io/cri-client => k8s.io/cri-client v0.36.3
//		k8s.io/cri-streaming => k8s.io/cri-streaming v0.36.3
//		k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.36.3
//		k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.36.3
//		k8s.io/endpointslice => k8s.io/endpointslice v0.36.3
//		k8s.io/externaljwt => k8s.io/externaljwt v0.36.3
//		k8s.io/kms => k8s.io/kms v0.36.3
//		k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.36.3
//		k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.36.3
//		k8s.io/kube-proxy => k8s.io/kube-proxy v0.36.3
//		k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.36.3
//		k8s.io/kubectl => k8s.io/kubectl v0.36.3
//		k8s.io/kubelet => k8s.io/kubelet v0.36.3
//		k8s.io/metrics => k8s.io/metrics v0.36.3
//		k8s.io/mount-utils => k8s.io/mount-utils v0.36.3
//		k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.36.3
//		k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.36.3
//		k8s.io/sample-controller => k8s.io/sample-controller v0.36.3
//		k8s.io/streaming => k8s.io/streaming v0.36.3
//	)
//
// The first build compiles kube-apiserver, kube-controller-manager,
// kube-scheduler, kubectl and etcd from source: once per machine, about
// 11 to 13 minutes on 2 cores and 2.9 GB of build cache; later test runs
// relink in seconds. The conformance suite then takes a few minutes (a
// control plane starts in seconds, three etcd members join one after the
// other) against well under a second on the model.
//
// # What runs
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

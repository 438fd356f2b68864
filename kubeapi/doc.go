// Package kubeapi is the Kubernetes API as the SDK's steps reach it:
// kubectl on a control-plane node, over that node's SSH connection
// ([Kubectl]). It is a floor package: the domain packages that work on a
// Kubernetes cluster (kubeadm, nfs, kubespray, lb) talk to the API
// through it, and none of them needs another's steps to do so.
//
// It owns:
//
//   - reading: [Kubectl.Get] of any object, [Kubectl.Nodes],
//     [Kubectl.Node], [Kubectl.PodsOn], every answer requested as
//     `-o json` and decoded into the k8s.io/api types, never matched as
//     text; [IsNotFound] tells kubectl's NotFound from other failures;
//   - writing: [Kubectl.Apply] of a manifest (diffed first, so an
//     unchanged cluster is [lcm.Unchanged]), checked beforehand by
//     [CheckManifest]; [Kubectl.Delete] of any object; [Kubectl.Label],
//     [Kubectl.Annotate] and [Kubectl.Taint], each reading first and
//     changing only what differs; [Kubectl.Exec] of a command in a pod;
//   - nodes: [DrainNode] (a [*DrainError] names the pods that stop it),
//     [DeleteNode] and [WaitNodeReady];
//   - the VIM: [CreateVIMCredentials] and [DeleteVIMCredentials], the
//     service account and long-lived token the VNFM deploys CNFs with.
//
// # Why kubectl over SSH
//
// The VNFM reaches a cluster's VMs over SSH and nothing else: the API
// server may listen on an address only the VMs reach, behind a VIP, or
// not yet at all. So, as Tacker's management drivers, k0sctl and kubekey
// do, every call runs `sudo kubectl --kubeconfig=/etc/kubernetes/admin.conf
// ...` on a control-plane node ([AdminKubeconfig], which kubeadm and
// kubespray both write; [Kubectl.Kubeconfig] names another). No client
// certificate leaves the node, and kubectl's own behaviour (apply's
// merge, drain's evictions and PodDisruptionBudgets, delete's wait for
// finalizers) is what runs, not a re-implementation of it.
//
// Arguments are an argv, never a shell string; every name, kind, label
// and taint is validated as the API server validates it before any
// command runs, so that none can be read by kubectl as an option; a
// manifest travels on standard input. A bad argument is an
// *lcm.ParamsError naming it, and nothing runs.
package kubeapi

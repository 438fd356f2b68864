// Package mgmtkit is an SDK for managing Kubernetes-cluster VNFs from a Go
// VNF manager (VNFM) or a Tacker-style management driver.
//
// A VNFM calls a management driver at fixed points of each ETSI NFV-SOL003
// lifecycle operation: the hooks instantiate_end, scale_start, scale_end,
// heal_start, heal_end and terminate_end. mgmtkit gives that driver typed,
// idempotent steps (install a container runtime, trust a private registry,
// export NFS volumes, register PersistentVolumes, drain a node, ...) and the
// machinery to compose them: decode the request's additionalParams into
// typed structs with every mistake reported before anything runs, find the
// VMs from Heat, run the steps on many nodes in parallel with a bound, and
// report what changed on which host.
//
// The packages, from the bottom up; imports only point down, and domain
// packages never import each other (kubespray reuses kubeadm's parameter
// types where the spec nests them):
//
//   - remote: the SSH transport. Quoted argv commands and script
//     templates, sudo without a PTY, secrets that never print, host-key
//     policies, one reused connection per host with redial, atomic
//     checksummed file writes, managed blocks.
//   - remote/sshtest: a real SSH server in-process over an in-memory
//     filesystem with a bash interpreter, fake programs, a transcript and
//     fault injection, for tests (like net/http/httptest).
//   - lcm: the vocabulary. SOL003 request and instance types, hooks and the
//     Driver interface, step results, bounded fan-out over hosts, structured
//     events, params decoding with path-qualified errors, VNF package access
//     that cannot escape the package.
//   - heat: a VNF's topology from Heat (gophercloud): the nodes of each
//     group, the cluster VIP, volumes, scale and heal targets.
//   - heat/heattest: Keystone and Heat over real HTTP, for tests.
//   - system: host steps every VNF's VMs share, one owner per machine
//     file: apt packages and repositories, systemd units and daemons
//     whose configuration their own validator checks before it is used,
//     containerd's config.toml, the proxy settings, bounded waits, kernel
//     modules and sysctls, hostname, the managed /etc/hosts block, OS
//     facts, container-runtime detection.
//   - kubeapi: the Kubernetes API over a master's SSH connection (kubectl
//     as root with the admin kubeconfig, answers decoded into k8s.io/api
//     types): apply, get, delete, label, annotate, taint, exec, manifest
//     checks, drain and delete of a node, waiting for Ready, the VIM's
//     credentials; the floor kubeadm, nfs, kubespray and lb share.
//   - plumbing: how a driver reaches the VIM and the VMs, and runs a
//     hook: the Heat client, the stack, SSH settings and logins per role,
//     one connection per node for the whole hook; the hook runner
//     (bounded per-node steps recorded in the hook's result); and
//     extensions, another package's work at named moments of a cluster's
//     hooks, with VMs of its own.
//   - registry: the private registry VNF's driver, and registry trust on
//     cluster nodes (Docker, containerd, CRI-O, kubelet credentials).
//   - kubeadm: the kubeadm-built Kubernetes cluster: its parameters
//     (master_node, worker_node, proxy, ...) and their validation; the
//     node steps (prepare, container runtime, packages, HAProxy and
//     keepalived, kubeadm init, join and reset, the CNI, VIM
//     credentials, the reference's install script); and Hooks, the
//     cluster's lifecycle: instantiate, scale, heal and terminate.
//   - nfs, lb, kubespray: the parameters of storage servers and NFS
//     PersistentVolumes, external load balancers, and kubespray runs,
//     with their validation; their steps come in the next issues.
//   - samples: the specs' sample request bodies and the sample VNF
//     package, embedded, for tests, examples and the tour.
//   - examples: complete drivers composed from the packages
//     (examples/drivers) and the runnable tour of every spec in the
//     simulated cloud (examples/tour).
//
// Under internal/ is test infrastructure: the simulated cloud (Heat, and
// Ubuntu VMs with their container runtimes as semantic fakes), which only
// tests and the tour import.
//
// A step is a plain function: context first, the host it acts on, typed
// options; it reads the current state, changes only what differs and says
// whether it changed anything. Running it twice changes nothing the second
// time. A hook is ordinary Go that calls steps, fanning out with
// [lcm.OnHosts] (or a plumbing.Runner's OnNodes); see the package example.
package mgmtkit

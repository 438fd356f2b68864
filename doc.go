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
// The packages, from the bottom up (imports only point down):
//
//   - remote: the SSH transport. Quoted argv commands, sudo without a PTY,
//     secrets that never print, host-key policies, one reused connection
//     per host with redial, atomic checksummed file writes, managed blocks.
//   - remote/sshtest: a real SSH server in-process over an in-memory
//     filesystem with a bash interpreter, fake programs and fault injection,
//     for tests (like net/http/httptest).
//   - lcm: the vocabulary. SOL003 request and instance types, hooks and the
//     Driver interface, step results, bounded fan-out over hosts, structured
//     events, params decoding with path-qualified errors, VNF package access
//     that cannot escape the package.
//
// Later packages (heat, registry, kubeadm, nfs, kubespray, lb) add the
// topology and the domain steps; see the README for the roadmap.
//
// A step is a plain function: context first, the host it acts on, typed
// options; it reads the current state, changes only what differs and says
// whether it changed anything. Running it twice changes nothing the second
// time. A hook is ordinary Go that calls steps, fanning out with
// [lcm.OnHosts]; see the package example.
package mgmtkit

// Package cloudtest is mgmtkit's public test kit: the simulated cloud that
// mgmtkit's own tests run against, for the tests of your steps and drivers.
//
// It is to a management driver what net/http/httptest is to an HTTP
// handler and controller-runtime's envtest is to a controller: a small,
// versioned facade over machinery that stays internal (the fake Ubuntu
// VMs, Heat and Keystone over real HTTP, the container runtimes and
// registries, NFS, Kubernetes), handing your code the same clients it uses
// in production (a [remote.Host], a [plumbing.Config], a VIM connection)
// and letting your test assert outcomes, not command strings.
//
//   - [NewVM] starts one Ubuntu 22.04 VM behind a real SSH server on
//     loopback, for a step's test: apt and dpkg with a package catalog you
//     extend with your own packages ([Package], with their files and
//     systemd units), systemd with per-unit counters, the kernel's modules
//     and sysctls, files, block devices; and assertions on them.
//   - [Start] starts the whole simulated cloud, for a hook's or a driver's
//     test: build a VNF from the typed parameters, hand your driver the
//     plumbing configuration and the VIM connection, scale and heal through
//     Heat, reach a VM or the Kubernetes world to assert outcomes.
//   - Package conformance runs the cluster scenarios mgmtkit's own drivers
//     pass against any [lcm.Driver] of a Kubernetes cluster VNF, on the
//     in-memory Kubernetes model or on a real control plane.
//
// The kit takes a [TB] (a *testing.T satisfies it) and does not link the
// testing package itself.
//
// # A step's test
//
// [NewVM] returns a [VM]: [VM.Host] is a remote.Host for the step under
// test (its host key pinned, never ignored), and the VM's methods read the
// machine's state as root sees it: [VM.Installed], [VM.Unit] (is it
// enabled, active, failed; how many starts, restarts and reloads),
// [VM.ReadFile], [VM.Modules], [VM.Sysctl], [VM.Mounts], a [Volume]'s
// filesystem. Every program of the VM is a semantic fake that exits and
// complains as the real one does, and a program nobody modelled fails
// with "command not found", so a step's test needs no fake of its own.
// Faults are injected on the VM: a program that fails or hangs, a
// connection dropped mid-command, the dpkg lock held after boot.
//
// Your packages are [Package] values: their files, and [Unit]s that
// start when installed. A unit's Requires names the files its daemon
// reads at start; while one is missing the unit fails to start, so a
// test sees a driver that installed a daemon and forgot to configure it.
//
// # A driver's test
//
// [Start] returns a [Cloud]. [Cloud.NewCluster] builds a Kubernetes
// cluster VNF in Heat from an InstantiateVnfRequest, every role its
// parameters name, and [Cloud.NewVNF] any other [Topology];
// [Cloud.SampleRequest] gives the specs' sample requests made to work
// here. Your driver gets [Cloud.Plumbing], and reaches Heat through the
// VIM connection of the VNF's instance, as in production.
//
// A [VNF]'s lifecycle operations run your driver's hooks around what Heat
// does, in the VNFM's order: [VNF.Instantiate] (instantiate_start,
// instantiate_end), [VNF.ScaleOut] and [VNF.ScaleIn] (scale_start, Heat
// adds or removes the members, scale_end), [VNF.Heal] (heal_start, Heat
// replaces the VMs, heal_end), [VNF.Terminate] (terminate_start, Heat
// deletes the stack, terminate_end). [VNF.Instance] is the instance as the
// VNFM keeps it between them: additionalParams stored at instantiation,
// VIM connections added and removed as the hooks' results say. Each
// operation returns an [Outcome], whose Changed tells a rerun that did
// nothing from one that did. An operation whose start hook fails stops
// there, Heat untouched; [VNF.AfterStart] runs a test's checks between a
// start hook and Heat's part (a drained worker before Heat deletes it). [Cloud.NewInstantiatedCluster] starts from a
// cluster mgmtkit's kubeadm driver built, every node Ready, so that a
// scale or heal test has a cluster to act on. [VNF.Kubectl] reaches the
// Kubernetes world through a master, on either [KubeBackend]; a worker's
// [VM.OpenNFS] reads and writes through a storage server's export as a
// client would.
//
// # Compatibility
//
// The kit is versioned with the rest of mgmtkit's API. Its types are its
// own, except the documented aliases ([Topology], [GroupSpec],
// [ServerSpec], [Login], [VolumeSpec], [VIPSpec], [Shape], [DiskBus],
// [KubeBackend]) of the machinery's descriptions.
package cloudtest

import "github.com/mgmtkit/mgmtkit/internal/sim/kube"

// TB is the part of testing.TB the kit uses; *testing.T, *testing.B and
// *testing.F satisfy it.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// KubeBackend is what the simulated cloud's Kubernetes clusters run on
// once kubeadm init (or kubespray's cluster.yml) has created one: nil for
// the in-memory model, fast and the default; the module
// github.com/mgmtkit/mgmtkit/cloudtest/realkube gives a real
// kube-apiserver with kube-controller-manager's controllers, the scheduler
// and etcd.
type KubeBackend = kube.Backend

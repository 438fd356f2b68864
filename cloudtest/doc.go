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

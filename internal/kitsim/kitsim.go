// Package kitsim lets code of this module reach the simulated machinery
// behind a cloudtest value, which cloudtest's public API does not show:
// the conformance suite's assertions (package internal/kubescenarios's
// World) read the Kubernetes clusters and Heat of a cloudtest.VNF's
// cloud directly, and so do the checks of kubeadm's own promises that
// its conformance runs add (package internal/kubescenarios/hachecks,
// given a cloudtest.VNF by the suite). It sits under the module's
// internal/, not cloudtest's, so that those can import it.
//
// cloudtest.VNF embeds a [Sim] under an unexported name. Sim has no
// exported method, so nothing is added to cloudtest's API; its one
// unexported method is promoted to the VNF, which therefore satisfies
// this package's unexported interface, and [Of] reads it back. Only
// packages that may import this internal package can.
package kitsim

import "github.com/mgmtkit/mgmtkit/internal/sim"

// Sim is the simulated cloud and VNF behind a cloudtest.VNF.
type Sim struct {
	cloud *sim.Cloud
	vnf   *sim.VNF
}

// New returns the Sim of vnf in cloud, for cloudtest to embed.
func New(cloud *sim.Cloud, vnf *sim.VNF) Sim { return Sim{cloud: cloud, vnf: vnf} }

// kitsim returns s; promoted to the value that embeds s, it marks that
// value as one [Of] can read.
func (s Sim) kitsim() Sim { return s }

// carrier is a value that embeds a [Sim].
type carrier interface{ kitsim() Sim }

// Of returns the simulated cloud and VNF behind x, a *cloudtest.VNF; ok
// is false for any other value.
func Of(x any) (cloud *sim.Cloud, vnf *sim.VNF, ok bool) {
	c, ok := x.(carrier)
	if !ok {
		return nil, nil, false
	}
	s := c.kitsim()
	return s.cloud, s.vnf, s.cloud != nil && s.vnf != nil
}

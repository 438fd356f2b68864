package drivers_test

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest/conformance"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The kubeadm cluster driver passes the public conformance suite on the
// in-memory Kubernetes model; the module cloudtest/realkube runs it on a
// real control plane.
func TestConformanceClusterDriver(t *testing.T) {
	t.Parallel()
	conformance.Run(t, conformance.Options{
		Driver: func(cfg plumbing.Config) lcm.Driver {
			return &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: cfg}}
		},
		MasterHeal: true,
	})
}

// The kubespray driver passes it too, with the spec's request (the
// Ansible server it names, an external load balancer); kubespray cannot
// heal a master, which the driver refuses before anything changes.
func TestConformanceKubesprayDriver(t *testing.T) {
	t.Parallel()
	conformance.Run(t, conformance.Options{
		Driver: func(cfg plumbing.Config) lcm.Driver {
			return &drivers.KubesprayDriver{Cluster: kubespray.Hooks{Plumbing: cfg}}
		},
		Sample: samples.InstantiateKubespray,
	})
}

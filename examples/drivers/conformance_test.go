package drivers_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest/conformance"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/kubescenarios/hachecks"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The kubeadm cluster driver passes the public conformance suite on the
// in-memory Kubernetes model, and at the suite's stages what kubeadm
// promises of its HA control plane on three masters (package hachecks:
// the VIP, etcd, HAProxy and /etc/hosts across the heals, the VIP's
// failover before terminate); the module cloudtest/realkube runs both on
// a real control plane. The stages come in the order the suite
// documents.
func TestConformanceClusterDriver(t *testing.T) {
	t.Parallel()
	stages := stageRecorder{}
	conformance.Run(t, conformance.Options{
		Driver: func(cfg plumbing.Config) lcm.Driver {
			return &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: cfg}}
		},
		MasterHeal: true,
		Check:      stages.check(hachecks.Check),
	})
	stages.assert(t, map[string][]conformance.Stage{
		"SingleMaster":  {conformance.AfterInstantiate, conformance.BeforeTerminate},
		"ThreeMasters":  {conformance.AfterInstantiate, conformance.AfterWorkerHeal, conformance.AfterMasterHeal, conformance.AfterEntireHeal, conformance.BeforeTerminate},
		"ScaleOutAndIn": {conformance.AfterInstantiate, conformance.AfterScaleOut, conformance.AfterScaleIn, conformance.AfterScaleIn},
	})
}

// The kubespray driver passes it too, with the spec's request (the
// Ansible server it names, an external load balancer); kubespray cannot
// heal a master, which the driver refuses before anything changes: the
// suite reaches no AfterMasterHeal.
func TestConformanceKubesprayDriver(t *testing.T) {
	t.Parallel()
	stages := stageRecorder{}
	conformance.Run(t, conformance.Options{
		Driver: func(cfg plumbing.Config) lcm.Driver {
			return &drivers.KubesprayDriver{Cluster: kubespray.Hooks{Plumbing: cfg}}
		},
		Sample: samples.InstantiateKubespray,
		Check:  stages.check(nil),
	})
	stages.assert(t, map[string][]conformance.Stage{
		"SingleMaster":  {conformance.AfterInstantiate, conformance.BeforeTerminate},
		"ThreeMasters":  {conformance.AfterInstantiate, conformance.AfterWorkerHeal, conformance.AfterEntireHeal, conformance.BeforeTerminate},
		"ScaleOutAndIn": {conformance.AfterInstantiate, conformance.AfterScaleOut, conformance.AfterScaleIn, conformance.AfterScaleIn},
	})
}

// stageRecorder records the stages the suite calls Options.Check at, by
// scenario (the check subtest's name is Test/scenario/step/stage).
type stageRecorder map[string][]conformance.Stage

// check returns an Options.Check that records the stage, checks the Env
// the suite hands it (the scenario's VNF; at a heal's stage the VM
// replaced, of the role healed, no longer among the VNF's) and then runs
// next, when not nil.
func (r stageRecorder) check(next func(*testing.T, conformance.Stage, *conformance.Env)) func(*testing.T, conformance.Stage, *conformance.Env) {
	return func(t *testing.T, stage conformance.Stage, env *conformance.Env) {
		parts := strings.Split(t.Name(), "/")
		if len(parts) != 4 || parts[3] != string(stage) {
			t.Errorf("the check of %s runs as %s, want Test/scenario/step/%s", stage, t.Name(), stage)
		}
		if len(parts) > 1 {
			r[parts[1]] = append(r[parts[1]], stage)
		}
		if env.Cloud == nil || env.Request == nil || env.VNF == nil {
			t.Fatalf("at %s the Env lacks the cloud, the request or the VNF: %+v", stage, env)
		}
		role := map[conformance.Stage]lcm.Role{conformance.AfterWorkerHeal: lcm.RoleWorker, conformance.AfterMasterHeal: lcm.RoleMaster}[stage]
		switch {
		case role == "" && env.Healed != nil:
			t.Errorf("at %s the Env names a healed VM %s", stage, env.Healed.Name())
		case role != "" && env.Healed == nil:
			t.Errorf("at %s the Env names no healed VM", stage)
		case role != "" && env.Healed.Role() != role:
			t.Errorf("at %s the Env's healed VM %s is a %s, want the %s replaced", stage, env.Healed.Name(), env.Healed.Role(), role)
		case role != "":
			for _, vm := range env.VNF.VMs(role) {
				if vm.Node().NICAddress == env.Healed.Node().NICAddress {
					t.Errorf("at %s the healed VM's address %s is still the VNF's %s", stage, vm.Node().NICAddress, vm.Name())
				}
			}
		}
		if next != nil {
			next(t, stage, env)
		}
	}
}

// assert checks the stages recorded, by scenario.
func (r stageRecorder) assert(t *testing.T, want map[string][]conformance.Stage) {
	t.Helper()
	for _, s := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(r[s], want[s]) {
			t.Errorf("the checks of %s ran at %v, want %v", s, r[s], want[s])
		}
	}
	if len(r) != len(want) {
		t.Errorf("the checks ran in the scenarios %v, want %v", r, want)
	}
}

// Package conformance is the conformance suite of management drivers of a
// Kubernetes cluster VNF: does a driver survive instantiate (one master
// and three), a rerun that changes nothing, scale out, scale in (the
// drain moves the pods; a PodDisruptionBudget that blocks the drain fails
// scale_start, naming the pods), the heal of a worker, of a master and of
// the entire VNF, and terminate (the VIM token revoked, the VIM
// connection removed)? mgmtkit's own cluster drivers pass it, kubeadm's
// (examples/drivers.ClusterDriver) and kubespray's
// (examples/drivers.KubesprayDriver); run it on yours:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Options{
//			Driver: func(cfg plumbing.Config) lcm.Driver { return &MyDriver{Plumbing: cfg} },
//		})
//	}
//
// [Run] is a user of package cloudtest: each scenario starts a
// [cloudtest.Cloud], builds the sample request's VNF in Heat
// ([cloudtest.Cloud.NewCluster]) and runs the VNF's lifecycle operations
// with the driver ([cloudtest.VNF.Instantiate], ScaleOut, ScaleIn, Heal,
// Terminate), which play the VNFM as Tacker does: every hook called
// through the [lcm.Driver] interface ([lcm.Invoke]) with the SOL003
// operation a VNFM builds (the instance with its vimConnectionInfo and,
// after instantiation, instantiatedVnfInfo with the stored
// additionalParams), Heat changed between the start and end hooks in
// Tacker's order (a scale-out's new VMs, a scale-in's removed ones, a
// healed VM replaced with new addresses, every VM of an entire heal, the
// stack deleted at terminate), and the VIM connections the hooks add and
// remove kept as a VNFM persists them. What a start hook must have done
// is asserted between it and Heat's part ([cloudtest.VNF.AfterStart]).
//
// The assertions are outcomes in the cloud, whatever the driver did to
// get there: the cluster's nodes are exactly the VNF's masters and
// workers (a node is found by its InternalIP, the VM's address), every
// one Ready and the masters labelled control-plane; a rerun reports no
// change; a scale-in's drain moves the workload's pods to the workers
// that stay and the removed VM leaves the cluster; a healed VM's old node
// is gone and its new one Ready; the Kubernetes VIM's endpoint reaches
// the cluster's API server, its ssl_ca_cert is the cluster's CA, its
// bearer token authenticates as a service account that may list nodes,
// and it is revoked at terminate_start (and before an entire heal) and
// removed from the instance's vimConnectionInfo at the end.
//
// What a driver promises beyond that, the suite checks with the driver's
// own function ([Options.Check]) at named stages of its scenarios
// ([Stage]): mgmtkit's kubeadm driver has its HA control plane checked
// there (the VIP, etcd's members, HAProxy's backends and /etc/hosts
// across the heals, the VIP's failover before terminate), in the same
// run as the suite's assertions.
//
// The Kubernetes behind the clusters is the in-memory model by default,
// fast; [Options.Kube] switches to a real control plane (kube-apiserver,
// the controllers, the scheduler and etcd) from the module
// github.com/mgmtkit/mgmtkit/cloudtest/realkube, which judges the same
// scenarios in a few minutes.
package conformance

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// Options configure [Run].
type Options struct {
	// Driver returns the driver under test, reaching the scenario's cloud
	// through cfg (its SSH settings: the cloud's network and host keys;
	// Heat through the instance's OpenStack VIM connection). It is called
	// once per scenario. Required.
	Driver func(cfg plumbing.Config) lcm.Driver
	// Kube is the Kubernetes the clusters run on: nil for the in-memory
	// model; realkube.New(t) (module
	// github.com/mgmtkit/mgmtkit/cloudtest/realkube) for a real control
	// plane.
	Kube cloudtest.KubeBackend
	// Packages are added to every VM's apt catalog, for a driver that
	// installs packages of its own (see cloudtest.Options.Packages).
	Packages []cloudtest.Package
	// Sample is the instantiate request, one of package samples' cluster
	// requests (samples.InstantiateCIRCluster when empty,
	// samples.InstantiatePVCluster, samples.InstantiateKubespray), with
	// its placeholders made to work in the simulated cloud (a kubespray
	// request's Ansible server is started there). The VNF has the VMs
	// its parameters name.
	Sample string
	// Setup, when set, runs in each scenario before the VNF is built,
	// with the scenario's cloud and the request it is about to send: the
	// place for what the sample needs around it, such as a shorter drain
	// timeout of the driver's own parameters (a drain a
	// PodDisruptionBudget blocks must fail within the scenario) or a
	// server of its own the request names (built with
	// [cloudtest.Cloud.NewVNF]).
	Setup func(t *testing.T, env *Env)
	// MasterHeal says whether the driver heals a master. False: a
	// master's heal must be refused at heal_start before anything
	// changes (kubespray cannot heal a control-plane node), and the
	// VNFM goes no further.
	MasterHeal bool
	// Check, when set, checks what the driver promises beyond what the
	// suite asks of every driver, at each [Stage] of the scenarios (its
	// constants say which scenario and step each belongs to). It runs
	// after the suite's own assertions of the step, as a subtest of the
	// step named after the stage
	// (TestConformance/ThreeMasters/HealMaster/AfterMasterHeal): its
	// failure fails the step, and the scenario goes no further. env is
	// the scenario's, with its VNF as the stage left it; a check may
	// tell the scenarios apart by the VNF's shape (one master or three).
	Check func(t *testing.T, stage Stage, env *Env)
}

// Env is a scenario as [Options.Setup] and [Options.Check] see it.
type Env struct {
	// Cloud is the scenario's simulated cloud; in Setup with no VNF yet.
	Cloud *cloudtest.Cloud
	// Request is the instantiate request the scenario sends; Setup may
	// change it (its additionalParams with samples.Patch). The VNF is
	// built from it after Setup. A Check reads it (the driver's
	// parameters) and must not change it.
	Request *lcm.InstantiateVnfRequest
	// VNF is the scenario's VNF at a Check's stage: its VMs and VIP, and
	// its instance as the VNFM stores it (the VIM connections the hooks
	// added). Nil in Setup, which runs before it is built.
	VNF *cloudtest.VNF
	// Healed is, at [AfterWorkerHeal] and [AfterMasterHeal], the VM the
	// heal replaced: it no longer answers, and its Name, Role and Node
	// (the addresses it had, which the new VM does not) stay as they
	// were. Nil at the other stages.
	Healed *cloudtest.VM
}

// Stage is a point in [Run]'s scenarios where [Options.Check] runs, its
// value the name of the check's subtest. A stage "after" an operation
// comes once the operation's end hook has run and the suite has
// asserted the outcome.
type Stage string

// The stages, in the order a scenario reaches them.
const (
	// AfterInstantiate: the VNF instantiated, in every scenario
	// (SingleMaster, ThreeMasters, ScaleOutAndIn; not after
	// SingleMaster's Rerun). The Kubernetes VIM connection is in the
	// instance.
	AfterInstantiate Stage = "AfterInstantiate"
	// AfterScaleOut: ScaleOutAndIn's scale-out by two workers done.
	AfterScaleOut Stage = "AfterScaleOut"
	// AfterScaleIn: a scale-in by one worker done, in ScaleOutAndIn:
	// after its ScaleIn step's, and after its ScaleInBlockedByABudget
	// step's last scale-in (the budget deleted).
	AfterScaleIn Stage = "AfterScaleIn"
	// AfterWorkerHeal: ThreeMasters' heal of a worker done (Heat gave
	// the new VM new addresses); [Env.Healed] is the worker replaced.
	AfterWorkerHeal Stage = "AfterWorkerHeal"
	// AfterMasterHeal: ThreeMasters' heal of a master done, as for a
	// worker; [Env.Healed] is the master replaced. Not reached with
	// [Options.MasterHeal] false: the heal is refused.
	AfterMasterHeal Stage = "AfterMasterHeal"
	// AfterEntireHeal: ThreeMasters' heal of the entire VNF done: every
	// VM replaced (same addresses), a new cluster built.
	AfterEntireHeal Stage = "AfterEntireHeal"
	// BeforeTerminate: the last stage of SingleMaster and ThreeMasters
	// (in ThreeMasters after AfterEntireHeal), at the start of their
	// Terminate step, before terminate_start. A check may leave the
	// cluster degraded here as a fault would (kubeadm's stops HAProxy
	// on the VIP's holder): terminate must still succeed after it.
	BeforeTerminate Stage = "BeforeTerminate"
)

// Run runs the scenarios as subtests, each on a simulated cloud of its
// own, one after the other (a real control plane holds a few hundred
// megabytes):
//
//   - SingleMaster (one master, two workers): Instantiate, Rerun (the
//     same request again changes nothing), Terminate;
//   - ThreeMasters (three masters, two workers): Instantiate,
//     HealWorker, HealMaster (or HealMasterRefused), HealEntire,
//     Terminate;
//   - ScaleOutAndIn (one master, one worker): Instantiate, ScaleOut by
//     two, ScaleIn by one (the drain moves the pods of a Deployment),
//     ScaleInBlockedByABudget (a PodDisruptionBudget forbids the drain:
//     scale_start fails naming the pods, the node is kept; without the
//     budget the scale-in is done).
//
// A step runs only when those before it passed. [Options.Check] runs at
// the [Stage]s of the steps, within them.
func Run(t *testing.T, opts Options) {
	t.Helper()
	if opts.Driver == nil {
		t.Fatal("conformance: Options.Driver is required")
	}
	if opts.Sample == "" {
		opts.Sample = samples.InstantiateCIRCluster
	}
	for _, s := range scenarios(opts) {
		t.Run(s.name, func(t *testing.T) {
			v := start(t, opts, s.shape)
			for _, st := range s.steps {
				if !t.Run(st.name, func(t *testing.T) { st.run(t, v) }) {
					return
				}
			}
		})
	}
}

package plumbing_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// modulesDriver loads br_netfilter on every worker at instantiate_end,
// through the hook runner of its Config.
type modulesDriver struct {
	lcm.NopDriver
	Plumbing plumbing.Config
	// Workers and Login would come from the driver's typed
	// additionalParams (worker_node).
	Workers heat.Group
	Login   plumbing.Login
}

func (d *modulesDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	creds := plumbing.Credentials{lcm.RoleWorker: d.Login}
	return d.Plumbing.Run(ctx, lcm.InstantiateEnd, op.Instance, creds, func(ctx context.Context, r *plumbing.Runner) error {
		nodes, err := r.Session().Nodes(ctx, d.Workers)
		if err != nil {
			return err
		}
		return r.OnNodes(ctx, "load-modules", nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			return system.LoadKernelModules(ctx, h, system.ModulesOptions{Name: "acme", Modules: []string{"br_netfilter"}})
		})
	})
}

// A hook tested on the simulated cloud of package cloudtest: the driver
// gets the cloud's Config (SSH verified against the cloud's known_hosts,
// Heat through the instance's VIM connection), resolves the worker group
// in Heat and runs a step of package system on every worker with
// Runner.OnNodes; the HookResult says what changed where. Run again,
// the step changes nothing.
func ExampleConfig_Run_simulatedCloud() {
	t := &exampleT{} // in a test: the test's *testing.T
	defer t.done()
	ctx := context.Background()

	cloud := cloudtest.Start(t, cloudtest.Options{})
	vnf := cloud.NewVNF(cloudtest.Topology{Groups: []cloudtest.GroupSpec{{
		Role: lcm.RoleWorker, Aspect: "worker_instance", Count: 2, SSHCP: "workerNode_CP2",
		Login: cloudtest.Login{User: "ubuntu", Password: "ubuntu"},
	}}})
	d := &modulesDriver{
		Plumbing: cloud.Plumbing(),
		Workers:  heat.Group{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP2"},
		Login:    plumbing.Login{Username: "ubuntu", Password: remote.NewSecret("ubuntu")},
	}
	req := &lcm.InstantiateVnfRequest{FlavourID: "simple"}
	for range 2 {
		out, err := vnf.Instantiate(ctx, d, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range out.End.Steps {
			for _, h := range s.Hosts {
				fmt.Printf("%s on a worker: %v\n", s.Step, h.Result)
			}
		}
	}
	for _, vm := range vnf.VMs(lcm.RoleWorker) {
		fmt.Println(slices.Contains(vm.Modules(), "br_netfilter"))
	}
	// Output:
	// load-modules on a worker: changed: wrote /etc/modules-load.d/acme.conf; loaded br_netfilter
	// load-modules on a worker: changed: wrote /etc/modules-load.d/acme.conf; loaded br_netfilter
	// load-modules on a worker: unchanged
	// load-modules on a worker: unchanged
	// true
	// true
}

// exampleT stands in for the *testing.T an Example function has none
// of. It panics where testing.T would fail the test, and runs the
// cleanups when done.
type exampleT struct{ cleanups []func() }

func (t *exampleT) Helper()                           {}
func (t *exampleT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }

func (t *exampleT) done() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
}

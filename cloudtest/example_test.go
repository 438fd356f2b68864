package cloudtest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// A step's test: your package acme-agent, whose daemon reads
// /etc/acme/agent.yaml when it starts, installed and then configured
// with package system's steps on one VM. Installing alone leaves the
// daemon failed, which is how a test catches a driver that forgot to
// configure it.
func ExampleNewVM() {
	t := newExampleT() // in a test: the test's *testing.T
	defer t.done()
	ctx := context.Background()

	vm := cloudtest.NewVM(t, cloudtest.VMOptions{Packages: []cloudtest.Package{{
		Name: "acme-agent", Version: "2.1-1",
		Units: []cloudtest.Unit{{Name: "acme-agent.service", Requires: []string{"/etc/acme/agent.yaml"}}},
	}}})
	h := vm.Host()

	if _, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{"acme-agent"}}); err != nil {
		t.Fatal(err)
	}
	u := vm.Unit("acme-agent")
	fmt.Println("installed", vm.Version("acme-agent"), "- running:", u.Active, "- starts:", u.Starts)

	configure := system.UnitOptions{
		Unit:              "acme-agent",
		Inputs:            map[string]string{"/etc/acme/agent.yaml": "server: 10.0.0.1\n"},
		InputsNeedRestart: true,
	}
	res, err := system.ConfigureUnit(ctx, h, configure)
	if err != nil {
		t.Fatal(err)
	}
	u = vm.Unit("acme-agent")
	fmt.Println("configured:", res.Changed, "- running:", u.Active, "- starts:", u.Starts)

	res, err = system.ConfigureUnit(ctx, h, configure)
	if err != nil {
		t.Fatal(err)
	}
	u = vm.Unit("acme-agent")
	fmt.Println("again:", res.Changed, "- starts:", u.Starts, "- restarts:", u.Restarts)
	// Output:
	// installed 2.1-1 - running: false - starts: 1
	// configured: true - running: true - starts: 2
	// again: false - starts: 2 - restarts: 0
}

// A driver's test: a Kubernetes cluster VNF built from the spec's sample
// request, instantiated by mgmtkit's kubeadm driver (yours goes in its
// place), then scaled out by one worker as the VNFM does it: scale_start,
// Heat adds the VM, scale_end joins it.
func ExampleStart() {
	t := newExampleT() // in a test: the test's *testing.T
	defer t.done()
	ctx := context.Background()

	cloud := cloudtest.Start(t, cloudtest.Options{})
	req := cloud.SampleRequest(samples.InstantiateCIRCluster)
	vnf := cloud.NewCluster(req, cloudtest.Shape{Masters: 1, Workers: 1})
	driver := &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: cloud.Plumbing()}}

	if _, err := vnf.Instantiate(ctx, driver, req); err != nil {
		t.Fatal(err)
	}
	out, err := vnf.ScaleOut(ctx, driver, "worker_instance", 1)
	if err != nil {
		t.Fatal(err)
	}

	k, err := vnf.Kubectl(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := k.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	fmt.Println("new VMs:", len(out.VMs), "- workers:", len(vnf.VMs(lcm.RoleWorker)))
	fmt.Println("nodes:", len(nodes), "- Ready:", ready)
	// Output:
	// new VMs: 1 - workers: 2
	// nodes: 3 - Ready: 3
}

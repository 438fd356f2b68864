package heat_test

import (
	"context"
	"fmt"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/heat/heattest"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// A hook resolves the nodes of the groups its additionalParams describe.
// Here the VIM is a fake Heat holding the specs' cluster: three masters
// and two workers in AutoScalingGroups, and a VIP port.
func ExampleClient_Nodes() {
	srv, err := heattest.NewServer(heattest.Config{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	top := srv.CreateStack("vnf-example")
	top.AddPort("vip_CP", "10.10.0.100")
	top.AddGroup("master_instance", heattest.GroupSpec{MinSize: 3, MaxSize: 3, Desired: 3,
		Member: memberWithPort("masterNode_CP1", "10.10.0.", 11)})
	top.AddGroup("worker_instance", heattest.GroupSpec{MinSize: 1, MaxSize: 5, Desired: 2,
		Member: memberWithPort("workerNode_CP2", "10.10.0.", 21)})

	ctx := context.Background()
	// A VNFM has the OpenStack VIM in the VNF's vimConnectionInfo.
	ao := srv.AuthOptions()
	vim := lcm.VimConnectionInfo{
		ID: "vim-1", VimType: "openstack",
		InterfaceInfo: map[string]any{"endpoint": srv.IdentityEndpoint()},
		AccessInfo:    lcm.AccessInfo{"username": ao.Username, "password": ao.Password, "project": ao.TenantName, "region": srv.Region()},
	}
	client, err := heat.ConnectVIM(ctx, vim, nil)
	if err != nil {
		panic(err)
	}

	masters := heat.Group{Role: lcm.RoleMaster, AspectID: "master_instance", SSHCP: "masterNode_CP1"}
	workers := heat.Group{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP2"}
	nodes, err := client.Nodes(ctx, "vnf-example", masters, workers)
	if err != nil {
		panic(err)
	}
	for _, n := range nodes {
		fmt.Println(n.Role, n.SSHAddress)
	}
	vip, err := client.ClusterAddress(ctx, "vnf-example", masters, "vip_CP", "")
	if err != nil {
		panic(err)
	}
	fmt.Println("cluster", vip.IP)
	// Output:
	// master 10.10.0.11
	// master 10.10.0.12
	// master 10.10.0.13
	// worker 10.10.0.21
	// worker 10.10.0.22
	// cluster 10.10.0.100
}

// An empty vnfcInstanceId list heals the entire VNF; otherwise each VNFC
// maps through the VnfInstance's vnfcResourceInfo to the node whose server
// it names.
func ExampleHealTargets() {
	nodes := []lcm.Node{
		{Resource: "m1", Role: lcm.RoleMaster, ServerID: "srv-a"},
		{Resource: "w1", Role: lcm.RoleWorker, ServerID: "srv-b"},
	}
	inst := &lcm.VnfInstance{InstantiatedVnfInfo: &lcm.InstantiatedVnfInfo{VnfcResourceInfo: []lcm.VnfcResourceInfo{
		{ID: "vnfc-1", ComputeResource: lcm.ResourceHandle{ResourceID: "srv-a"}},
		{ID: "vnfc-2", ComputeResource: lcm.ResourceHandle{ResourceID: "srv-b"}},
	}}}
	plan, _ := heat.HealTargets(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{"vnfc-2"}}, nodes)
	fmt.Println(plan.Entire, plan.Nodes[0].Role, plan.Nodes[0].Resource)
	plan, _ = heat.HealTargets(inst, lcm.HealVnfRequest{}, nodes)
	fmt.Println(plan.Entire, len(plan.Nodes))
	// Output:
	// false worker w1
	// true 0
}

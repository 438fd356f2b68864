package heattest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mgmtkit/mgmtkit/heat/heattest"
)

// A VNF stack with a three-member master group, walked with gophercloud the
// way Tacker's drivers walk it: top stack, group resource, the group's
// nested stack, each member's stack, the member's port. Tests use
// heattest.Start, which closes the server at cleanup.
func Example() {
	srv, err := heattest.NewServer(heattest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	top := srv.CreateStack("vnf-k8s")
	top.AddGroup("master_instance", heattest.GroupSpec{
		MinSize: 3, MaxSize: 5, Desired: 3,
		Member: func(m *heattest.Stack, i int) {
			m.AddPort("masterNode_CP1", fmt.Sprintf("10.10.0.%d", 11+i))
			m.AddServer("masterNode", "masterNode_CP1")
		},
	})

	ctx := context.Background()
	pc, err := config.NewProviderClient(ctx, srv.AuthOptions())
	if err != nil {
		log.Fatal(err)
	}
	orch, err := openstack.NewOrchestrationV1(pc, gophercloud.EndpointOpts{Region: srv.Region()})
	if err != nil {
		log.Fatal(err)
	}

	st, err := stacks.Find(ctx, orch, "vnf-k8s").Extract()
	if err != nil {
		log.Fatal(err)
	}
	pages, err := stackresources.List(orch, st.Name, st.ID, nil).AllPages(ctx)
	if err != nil {
		log.Fatal(err)
	}
	resources, err := stackresources.ExtractResources(pages)
	if err != nil {
		log.Fatal(err)
	}
	group := resources[0]
	fmt.Println(group.Name, group.Type, group.Status)

	// The group's physical id is its nested stack; its resources are the
	// members, whose physical ids are the members' stacks.
	members, err := stackresources.Find(ctx, orch, group.PhysicalID).Extract()
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range members {
		ms, err := stacks.Find(ctx, orch, m.PhysicalID).Extract()
		if err != nil {
			log.Fatal(err)
		}
		port, err := stackresources.Get(ctx, orch, ms.Name, ms.ID, "masterNode_CP1").Extract()
		if err != nil {
			log.Fatal(err)
		}
		ip := port.Attributes["fixed_ips"].([]any)[0].(map[string]any)["ip_address"]
		fmt.Println(m.Type, m.CreationTime.Format("15:04:05"), ip)
	}
	// Output:
	// master_instance OS::Heat::AutoScalingGroup CREATE_COMPLETE
	// master_instance.hot.yaml 00:00:03 10.10.0.11
	// master_instance.hot.yaml 00:00:07 10.10.0.12
	// master_instance.hot.yaml 00:00:11 10.10.0.13
}

package heat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/heat/heattest"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// The groups of the specs' sample requests.
var (
	masters = heat.Group{Role: lcm.RoleMaster, AspectID: "master_instance", SSHCP: "masterNode_CP1", NICCP: "masterNode_CP1"}
	workers = heat.Group{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP2", NICCP: "workerNode_CP2"}
	storage = heat.Group{Role: lcm.RoleStorage, SSHCP: "storage_server_CP"}
)

// cluster is a Kubernetes cluster VNF in the fake Heat.
type cluster struct {
	srv     *heattest.Server
	top     *heattest.Stack
	masters *heattest.Group
	workers *heattest.Group
	client  *heat.Client
}

// memberWithPort returns a member template: one server with one port whose
// fixed IP is prefix + (base + index).
func memberWithPort(port, prefix string, base int) func(*heattest.Stack, int) {
	return func(m *heattest.Stack, i int) {
		m.AddPort(port, fmt.Sprintf("%s%d", prefix, base+i))
		m.AddServer("server", port)
	}
}

// newCluster builds the samples' cluster: nMasters masters in
// master_instance, nWorkers workers in worker_instance (min_size 1), a VIP
// port vip_CP with floating IP vip_FIP, and a storage server with a volume.
func newCluster(t *testing.T, nMasters, nWorkers int) *cluster {
	t.Helper()
	srv := heattest.Start(t, heattest.Config{})
	top := srv.CreateStack("vnf-k8s")
	top.AddPort("vip_CP", "10.10.0.100")
	top.AddFloatingIP("vip_FIP", "192.0.2.100", "vip_CP")
	c := &cluster{srv: srv, top: top}
	c.masters = top.AddGroup("master_instance", heattest.GroupSpec{MinSize: nMasters, MaxSize: nMasters, Desired: nMasters,
		Member: memberWithPort("masterNode_CP1", "10.10.0.", 11)})
	c.workers = top.AddGroup("worker_instance", heattest.GroupSpec{MinSize: 1, MaxSize: 10, Desired: nWorkers,
		Member: memberWithPort("workerNode_CP2", "10.10.0.", 21)})
	top.AddScalingPolicy("worker_instance_scale_out", "worker_instance", 1)
	top.AddScalingPolicy("worker_instance_scale_in", "worker_instance", -1)
	top.AddPort("storage_server_CP", "10.10.0.50")
	top.AddServer("storage_server", "storage_server_CP")
	top.AddVolume("storage_server_volume", "storage_server", "/dev/vdb", 10)
	c.client = connect(t, srv)
	return c
}

func connect(t testing.TB, srv *heattest.Server) *heat.Client {
	t.Helper()
	c, err := heat.Connect(context.Background(), clouds.WithCloudsYAML(strings.NewReader(string(srv.CloudsYAML("sim")))), clouds.WithCloudName("sim"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNodesOfTheSamplesCluster(t *testing.T) {
	c := newCluster(t, 3, 2)
	nodes, err := c.client.Nodes(context.Background(), c.top.ID(), masters, workers, storage)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes {
		got = append(got, fmt.Sprintf("%s %s/%s", n.Role, n.SSHAddress, n.NICAddress))
	}
	want := []string{
		"master 10.10.0.11/10.10.0.11", "master 10.10.0.12/10.10.0.12", "master 10.10.0.13/10.10.0.13",
		"worker 10.10.0.21/10.10.0.21", "worker 10.10.0.22/10.10.0.22",
		"storage 10.10.0.50/10.10.0.50",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("nodes:\n got %v\nwant %v", got, want)
	}
	members := append(c.masters.Members(), c.workers.Members()...)
	for i, m := range members {
		n := nodes[i]
		if n.Resource != m.Name || n.StackID != m.Stack.ID() || !n.CreatedAt.Equal(m.CreatedAt) {
			t.Errorf("node %d = %+v, want member %s in stack %s created %s", i, n, m.Name, m.Stack.ID(), m.CreatedAt)
		}
		if want := m.Stack.Resource("server").PhysicalID(); n.ServerID != want {
			t.Errorf("node %d server %s, want %s", i, n.ServerID, want)
		}
	}
	if i := 1; !nodes[i].CreatedAt.After(nodes[i-1].CreatedAt) {
		t.Errorf("creation times do not increase: %s, %s", nodes[i-1].CreatedAt, nodes[i].CreatedAt)
	}
	st := nodes[5]
	if st.Resource != "storage_server" || st.Aspect != "" || st.StackID != c.top.ID() || st.ServerID != c.top.Resource("storage_server").PhysicalID() {
		t.Errorf("storage node = %+v", st)
	}

	// Several masters: cluster_cp_name is the top-level VIP port.
	addr, err := c.client.ClusterAddress(context.Background(), c.top.Name(), masters, "vip_CP", "vip_FIP")
	if err != nil {
		t.Fatal(err)
	}
	if addr != (heat.ClusterAddress{IP: "10.10.0.100", FloatingIP: "192.0.2.100"}) {
		t.Errorf("cluster address %+v", addr)
	}

	vol, err := c.client.Volume(context.Background(), c.top.ID(), "storage_server_volume")
	if err != nil {
		t.Fatal(err)
	}
	if vol.Device != "/dev/vdb" || vol.ServerID != st.ServerID || vol.ID != c.top.Resource("storage_server_volume").PhysicalID() {
		t.Errorf("volume %+v", vol)
	}
	ip, err := c.client.CPAddress(context.Background(), c.top.ID(), "storage_server_CP")
	if err != nil || ip != "10.10.0.50" {
		t.Errorf("CPAddress(storage_server_CP) = %q, %v", ip, err)
	}
}

func TestSingleMasterClusterAddressIsInTheMemberStack(t *testing.T) {
	c := newCluster(t, 1, 1)
	addr, err := c.client.ClusterAddress(context.Background(), c.top.ID(), masters, "masterNode_CP1", "")
	if err != nil {
		t.Fatal(err)
	}
	if addr.IP != "10.10.0.11" || addr.FloatingIP != "" {
		t.Errorf("cluster address %+v, want the single master's port", addr)
	}
	// With three masters the same name must be a top-level resource.
	c3 := newCluster(t, 3, 1)
	_, err = c3.client.ClusterAddress(context.Background(), c3.top.ID(), masters, "masterNode_CP1", "")
	if !errors.Is(err, heat.ErrNotFound) || !strings.Contains(err.Error(), "resource masterNode_CP1") || !strings.Contains(err.Error(), "vnf-k8s") {
		t.Errorf("err = %v, want masterNode_CP1 not found in the top-level stack", err)
	}
}

func TestFloatingIPIsTheSSHAddress(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top := srv.CreateStack("vnf-fip")
	top.AddGroup("worker_instance", heattest.GroupSpec{MinSize: 1, MaxSize: 3, Desired: 2, Member: func(m *heattest.Stack, i int) {
		m.AddPort("workerNode_CP2", fmt.Sprintf("10.10.0.%d", 21+i))
		m.AddFloatingIP("workerNode_FIP", fmt.Sprintf("192.0.2.%d", 21+i), "workerNode_CP2")
		m.AddServer("server", "workerNode_CP2")
	}})
	client := connect(t, srv)
	for _, g := range []heat.Group{
		{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_FIP", NICCP: "workerNode_CP2"},
		{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_FIP"}, // NIC: the port the FIP maps to
	} {
		nodes, err := client.Nodes(context.Background(), top.ID(), g)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 2 || nodes[0].SSHAddress != "192.0.2.21" || nodes[0].NICAddress != "10.10.0.21" || nodes[1].SSHAddress != "192.0.2.22" || nodes[1].ServerID == "" {
			t.Errorf("NICCP %q: nodes %+v", g.NICCP, nodes)
		}
	}
}

func TestMissingAndIncompleteResources(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		break_ func(c *cluster)
		groups []heat.Group
		want   []string // substrings of the error
		is     error
	}{
		{"no such stack", func(c *cluster) {}, nil, nil, heat.ErrNotFound},
		{"no such group", func(c *cluster) {}, []heat.Group{{Role: lcm.RoleWorker, AspectID: "wrkr_instance", SSHCP: "workerNode_CP2"}},
			[]string{"stack vnf-k8s", "resource wrkr_instance", "no such resource"}, heat.ErrNotFound},
		{"no such CP in the members", func(c *cluster) {}, []heat.Group{{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP9"}},
			[]string{"resource workerNode_CP9", "no such resource"}, heat.ErrNotFound},
		{"aspect is not a group", func(c *cluster) {}, []heat.Group{{Role: lcm.RoleWorker, AspectID: "vip_CP", SSHCP: "x"}},
			[]string{"resource vip_CP", "OS::Neutron::Port", "AutoScalingGroup"}, heat.ErrWrongType},
		{"port without fixed IPs", func(c *cluster) {
			c.workers.Members()[1].Stack.Resource("workerNode_CP2").SetAttribute("fixed_ips", []any{})
		}, []heat.Group{workers}, []string{"resource workerNode_CP2", "attribute fixed_ips"}, heat.ErrNotFound},
		{"stack being updated", func(c *cluster) { c.top.SetStatus("UPDATE_IN_PROGRESS", "Stack UPDATE started") },
			[]heat.Group{masters}, []string{"stack vnf-k8s", "UPDATE_IN_PROGRESS", "Stack UPDATE started"}, heat.ErrNotComplete},
		{"member failed", func(c *cluster) {
			c.workers.NestedStack().Resource(c.workers.Members()[0].Name).SetStatus("CREATE_FAILED", "Quota exceeded")
		}, []heat.Group{workers}, []string{"group worker_instance", "CREATE_FAILED", "Quota exceeded"}, heat.ErrNotComplete},
		{"CP failed", func(c *cluster) {
			c.masters.Members()[2].Stack.Resource("masterNode_CP1").SetStatus("UPDATE_FAILED", "")
		}, []heat.Group{masters}, []string{"resource masterNode_CP1", "UPDATE_FAILED"}, heat.ErrNotComplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 3, 2)
			tt.break_(c)
			stack := c.top.ID()
			if tt.groups == nil {
				stack = "vnf-nonexistent"
				tt.groups = []heat.Group{masters}
			}
			_, err := c.client.Nodes(ctx, stack, tt.groups...)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			if !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			var he *heat.Error
			if !errors.As(err, &he) {
				t.Errorf("%v is not a *heat.Error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestScaleOutTargetsAreTheNewMembers(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1, 2)
	before, err := c.client.Nodes(ctx, c.top.ID(), workers)
	if err != nil {
		t.Fatal(err)
	}
	added, err := c.workers.ScaleOut(2)
	if err != nil {
		t.Fatal(err)
	}
	after, err := c.client.Nodes(ctx, c.top.ID(), workers)
	if err != nil {
		t.Fatal(err)
	}
	got := heat.ScaleOutTargets(before, after)
	if len(got) != 2 || got[0].Resource != added[0].Name || got[1].Resource != added[1].Name {
		t.Fatalf("scale-out targets %v, want members %s and %s", got, added[0].Name, added[1].Name)
	}
	// A heal between the two listings does not make an old member new.
	c.workers.Members()[0].Stack.ReplaceServer("server")
	healed, err := c.client.Nodes(ctx, c.top.ID(), workers)
	if err != nil {
		t.Fatal(err)
	}
	if got := heat.ScaleOutTargets(after, healed); len(got) != 0 {
		t.Errorf("after a heal: targets %v, want none", got)
	}
}

func scaleIn(steps int, additional string) lcm.ScaleVnfRequest {
	r := lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: "worker_instance", NumberOfSteps: lcm.Int(steps)}
	if additional != "" {
		r.AdditionalParams = json.RawMessage(additional)
	}
	return r
}

func TestScaleInTargets(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1, 4)
	ms := c.workers.Members() // oldest first
	tests := []struct {
		req  lcm.ScaleVnfRequest
		want []string
	}{
		{scaleIn(1, ""), []string{ms[0].Name}},
		{scaleIn(2, `{"is_reverse": "False"}`), []string{ms[0].Name, ms[1].Name}},
		{scaleIn(1, `{"is_reverse": "True"}`), []string{ms[3].Name}},
		{scaleIn(2, `{"is_reverse": true}`), []string{ms[3].Name, ms[2].Name}},
		{scaleIn(9, ""), []string{ms[0].Name, ms[1].Name, ms[2].Name}}, // min_size 1 stays
	}
	for _, tt := range tests {
		nodes, err := c.client.ScaleInTargets(ctx, c.top.ID(), workers, tt.req)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range nodes {
			got = append(got, n.Resource)
			if n.SSHAddress == "" || n.ServerID == "" {
				t.Errorf("target %s is not resolved: %+v", n.Resource, n)
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%d steps, %s: targets %v, want %v", tt.req.Steps(), tt.req.AdditionalParams, got, tt.want)
		}
	}
	if _, err := c.client.ScaleInTargets(ctx, c.top.ID(), workers, scaleIn(1, `{"is_reverse": "maybe"}`)); err == nil || !strings.Contains(err.Error(), "is_reverse") {
		t.Errorf("is_reverse maybe: err = %v", err)
	}
}

func TestScaleInTiesAndPolicyFromTheTemplate(t *testing.T) {
	ctx := context.Background()
	srv := heattest.Start(t, heattest.Config{})
	top := srv.CreateStack("vnf-tie")
	top.SetParameter("worker_min", "2")
	grp := top.AddGroup("worker_instance", heattest.GroupSpec{MinSizeParam: "worker_min", MinSize: 2, MaxSize: 9, Desired: 6,
		Member: memberWithPort("workerNode_CP2", "10.10.0.", 21)})
	top.AddScalingPolicy("worker_instance_scale_in", "worker_instance", -2)
	client := connect(t, srv)
	ms := grp.Members()
	nodes, err := client.ScaleInTargets(ctx, top.ID(), workers, scaleIn(1, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Resource != ms[0].Name || nodes[1].Resource != ms[1].Name {
		t.Errorf("adjustment -2, 1 step: %v, want the two oldest", nodes)
	}
	nodes, err = client.ScaleInTargets(ctx, top.ID(), workers, scaleIn(3, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Errorf("6 members, min_size 2 (get_param), 3 steps of 2: %d targets, want 4", len(nodes))
	}
}

func TestHealTargets(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 3, 2)
	nodes, err := c.client.Nodes(ctx, c.top.ID(), masters, workers, storage)
	if err != nil {
		t.Fatal(err)
	}
	inst := &lcm.VnfInstance{ID: "inst-1", InstantiatedVnfInfo: &lcm.InstantiatedVnfInfo{}}
	for i, n := range nodes {
		inst.InstantiatedVnfInfo.VnfcResourceInfo = append(inst.InstantiatedVnfInfo.VnfcResourceInfo, lcm.VnfcResourceInfo{
			ID: fmt.Sprintf("vnfc-%d", i), ComputeResource: lcm.ResourceHandle{ResourceID: n.ServerID},
		})
	}
	plan, err := heat.HealTargets(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{"vnfc-4", "vnfc-1", "vnfc-5", "vnfc-4"}}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Entire || len(plan.Nodes) != 3 || plan.Nodes[0] != nodes[4] || plan.Nodes[1] != nodes[1] || plan.Nodes[2] != nodes[5] {
		t.Errorf("plan %+v", plan)
	}
	if plan.Nodes[0].Role != lcm.RoleWorker || plan.Nodes[1].Role != lcm.RoleMaster || plan.Nodes[2].Role != lcm.RoleStorage {
		t.Errorf("roles %s %s %s", plan.Nodes[0].Role, plan.Nodes[1].Role, plan.Nodes[2].Role)
	}
	if plan, err := heat.HealTargets(inst, lcm.HealVnfRequest{}, nodes); err != nil || !plan.Entire || len(plan.Nodes) != 0 {
		t.Errorf("empty vnfcInstanceId: %+v, %v; want the entire VNF", plan, err)
	}
	if _, err := heat.HealTargets(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{"vnfc-1", "vnfc-x"}}, nodes); err == nil || !strings.Contains(err.Error(), `vnfcInstanceId[1] "vnfc-x"`) {
		t.Errorf("unknown VNFC: %v", err)
	}

	// heal_end: Heat replaced the worker's server and the VNFM refreshed
	// vnfcResourceInfo; the new server resolves to the same member.
	member := c.workers.Members()[0]
	oldID, newID := member.Stack.ReplaceServer("server")
	if oldID != nodes[3].ServerID {
		t.Fatalf("replaced %s, want %s", oldID, nodes[3].ServerID)
	}
	inst.InstantiatedVnfInfo.VnfcResourceInfo[3].ComputeResource.ResourceID = newID
	if _, err := heat.HealTargets(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{"vnfc-3"}}, nodes); err == nil || !strings.Contains(err.Error(), newID) {
		t.Errorf("stale node list: err = %v, want server %s unknown", err, newID)
	}
	fresh, err := c.client.Nodes(ctx, c.top.ID(), masters, workers, storage)
	if err != nil {
		t.Fatal(err)
	}
	plan, err = heat.HealTargets(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{"vnfc-3"}}, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.Nodes[0]; n.ServerID != newID || n.Resource != member.Name || n.Role != lcm.RoleWorker {
		t.Errorf("healed node %+v", n)
	}
}

func TestConnect(t *testing.T) {
	ctx := context.Background()
	srv := heattest.Start(t, heattest.Config{})
	srv.CreateStack("vnf-1")
	ao := srv.AuthOptions()

	t.Run("OS environment", func(t *testing.T) {
		t.Setenv("OS_CLOUD", "")
		t.Setenv("OS_AUTH_URL", srv.IdentityEndpoint())
		t.Setenv("OS_USERNAME", ao.Username)
		t.Setenv("OS_PASSWORD", ao.Password)
		t.Setenv("OS_PROJECT_NAME", ao.TenantName)
		t.Setenv("OS_USER_DOMAIN_NAME", ao.DomainName)
		t.Setenv("OS_PROJECT_DOMAIN_NAME", ao.DomainName)
		t.Setenv("OS_REGION_NAME", srv.Region())
		c, err := heat.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Nodes(ctx, "vnf-1", storage); !errors.Is(err, heat.ErrNotFound) {
			t.Errorf("Nodes on a stack without the CP: %v", err)
		}
	})
	t.Run("OS_CLOUD and a clouds.yaml file", func(t *testing.T) {
		file := t.TempDir() + "/clouds.yaml"
		if err := os.WriteFile(file, srv.CloudsYAML("mycloud"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("OS_CLIENT_CONFIG_FILE", file)
		t.Setenv("OS_CLOUD", "mycloud")
		c, err := heat.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Nodes(ctx, "vnf-1", storage); !errors.Is(err, heat.ErrNotFound) {
			t.Errorf("Nodes on a stack without the CP: %v", err)
		}
		t.Setenv("OS_CLOUD", "othercloud")
		if _, err := heat.Connect(ctx); err == nil || !strings.Contains(err.Error(), "othercloud") {
			t.Errorf("an unknown cloud: %v", err)
		}
	})
	t.Run("vimConnectionInfo", func(t *testing.T) {
		vim := lcm.VimConnectionInfo{ID: "v", VimType: "openstack", InterfaceInfo: map[string]any{"endpoint": srv.IdentityEndpoint()},
			AccessInfo: lcm.AccessInfo{"username": ao.Username, "password": ao.Password, "project": ao.TenantName, "region": srv.Region()}}
		if _, err := heat.ConnectVIM(ctx, vim, nil); err != nil {
			t.Fatal(err)
		}
		vim.AccessInfo = lcm.AccessInfo{"username": ao.Username, "password": "wrong", "project": ao.TenantName}
		_, err := heat.ConnectVIM(ctx, vim, nil)
		if err == nil {
			t.Fatal("a wrong password authenticated")
		}
		if strings.Contains(err.Error(), ao.Password) || strings.Contains(err.Error(), "wrong\"") {
			t.Errorf("the error shows a password: %v", err)
		}
		vim.VimType = "kubernetes"
		if _, err := heat.ConnectVIM(ctx, vim, nil); err == nil || !strings.Contains(err.Error(), "not an OpenStack VIM") {
			t.Errorf("kubernetes VIM: %v", err)
		}
	})
	t.Run("ConnectInstance picks the OpenStack entry by vimType", func(t *testing.T) {
		access := lcm.AccessInfo{"username": ao.Username, "password": ao.Password, "project": ao.TenantName, "region": srv.Region()}
		endpoint := map[string]any{"endpoint": srv.IdentityEndpoint()}
		for _, vimType := range []string{"ETSINFV.OPENSTACK_KEYSTONE.V_3", "openstack"} {
			inst := &lcm.VnfInstance{ID: "i", VimConnectionInfo: []lcm.VimConnectionInfo{
				{ID: "k8s", VimType: "ETSINFV.KUBERNETES.V_1", InterfaceInfo: map[string]any{"endpoint": "https://127.0.0.1:6443"}},
				{ID: "os", VimType: vimType, InterfaceInfo: endpoint, AccessInfo: access},
			}}
			if _, err := heat.ConnectInstance(ctx, inst, nil); err != nil {
				t.Errorf("%s after a Kubernetes VIM: %v", vimType, err)
			}
		}
		inst := &lcm.VnfInstance{ID: "i", VimConnectionInfo: []lcm.VimConnectionInfo{{ID: "k8s", VimType: "kubernetes"}}}
		if _, err := heat.ConnectInstance(ctx, inst, nil); err == nil || !strings.Contains(err.Error(), "no OpenStack entry") {
			t.Errorf("only a Kubernetes VIM: %v", err)
		}
	})
}

// A cluster driver manages masters and workers only: the storage server's
// VNFC is left out of its plan and named as unmanaged; a VNFC the
// instance does not list is still an error; KnownNodes lists what the
// VNFM stored.
func TestHealTargetsAmong(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1, 2)
	all, err := c.client.Nodes(ctx, c.top.ID(), masters, workers, storage)
	if err != nil {
		t.Fatal(err)
	}
	inst := &lcm.VnfInstance{ID: "inst-1", InstantiatedVnfInfo: &lcm.InstantiatedVnfInfo{}}
	vnfc := map[lcm.Role]string{}
	for i, n := range all {
		id := fmt.Sprintf("vnfc-%d", i)
		vnfc[n.Role] = id
		inst.InstantiatedVnfInfo.VnfcResourceInfo = append(inst.InstantiatedVnfInfo.VnfcResourceInfo, lcm.VnfcResourceInfo{
			ID: id, ComputeResource: lcm.ResourceHandle{ResourceID: n.ServerID},
		})
	}
	known := heat.KnownNodes(inst)
	if len(known) != len(all) || known[0].ServerID != all[0].ServerID || known[0].Resource != "vnfc-0" {
		t.Errorf("KnownNodes = %+v", known)
	}
	if heat.KnownNodes(&lcm.VnfInstance{}) != nil {
		t.Error("KnownNodes of an instance without instantiatedVnfInfo is not empty")
	}
	cluster, err := c.client.Nodes(ctx, c.top.ID(), masters, workers)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := heat.HealTargetsAmong(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc[lcm.RoleStorage], vnfc[lcm.RoleWorker]}}, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Entire || len(plan.Nodes) != 1 || plan.Nodes[0].Role != lcm.RoleWorker || !slices.Equal(plan.Unmanaged, []string{vnfc[lcm.RoleStorage]}) {
		t.Errorf("plan %+v: want the worker, the storage server unmanaged", plan)
	}
	plan, err = heat.HealTargetsAmong(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc[lcm.RoleStorage]}}, cluster)
	if err != nil || plan.Entire || len(plan.Nodes) != 0 || len(plan.Unmanaged) != 1 {
		t.Errorf("storage only: %+v, %v; want an empty plan that is not the entire VNF", plan, err)
	}
	if _, err := heat.HealTargetsAmong(inst, lcm.HealVnfRequest{VnfcInstanceID: []string{"vnfc-x"}}, cluster); err == nil || !strings.Contains(err.Error(), `"vnfc-x"`) {
		t.Errorf("unknown VNFC: %v", err)
	}
	if plan, err := heat.HealTargetsAmong(inst, lcm.HealVnfRequest{}, cluster); err != nil || !plan.Entire {
		t.Errorf("no VNFC: %+v, %v; want the entire VNF", plan, err)
	}
}

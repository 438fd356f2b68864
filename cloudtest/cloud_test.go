package cloudtest_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// nodeNames returns the cluster's node names, sorted, through kubectl on
// a master.
func nodeNames(t *testing.T, v *cloudtest.VNF) []string {
	t.Helper()
	k, err := v.Kubectl(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := k.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names
}

func vimIDs(inst *lcm.VnfInstance) []string {
	var ids []string
	for _, v := range inst.VimConnectionInfo {
		ids = append(ids, v.ID)
	}
	return ids
}

// The kubeadm driver through every operation the VNF offers: the
// instance the VNFM keeps follows each hook's result, and Heat and the
// cluster follow each operation.
func TestClusterLifecycleAsTheVNFMRunsIt(t *testing.T) {
	ctx := ctx(t)
	c := cloudtest.Start(t, cloudtest.Options{})
	req := c.SampleRequest(samples.InstantiateCIRCluster)
	v := c.NewCluster(req, cloudtest.Shape{Masters: 1, Workers: 1, MinWorkers: 1})
	if inst := v.Instance(); inst.InstantiationState != lcm.NotInstantiated || inst.InstantiatedVnfInfo != nil {
		t.Errorf("before instantiate: %s, %+v", inst.InstantiationState, inst.InstantiatedVnfInfo)
	}
	d := &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: c.Plumbing()}}

	out, err := v.Instantiate(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Changed() || len(out.VMs) != 2 || out.Start == nil || out.End.Hook != lcm.InstantiateEnd {
		t.Errorf("instantiate: changed %v, %d VMs, %+v", out.Changed(), len(out.VMs), out.Start)
	}
	inst := v.Instance()
	if inst.InstantiationState != lcm.Instantiated || string(inst.InstantiatedVnfInfo.AdditionalParams) != string(req.AdditionalParams) {
		t.Errorf("after instantiate: %s, additionalParams %s", inst.InstantiationState, inst.InstantiatedVnfInfo.AdditionalParams)
	}
	if got := vimIDs(inst); !slices.Equal(got, []string{c.VimConnection().ID, "kubernetes_vim"}) {
		t.Errorf("vimConnectionInfo %v, want the cloud's and the cluster's", got)
	}
	if got := nodeNames(t, v); len(got) != 2 {
		t.Fatalf("nodes %v", got)
	}

	again, err := v.Instantiate(ctx, d, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed() {
		t.Errorf("a rerun of instantiate changed something: %+v", again.End.Steps)
	}
	if got := vimIDs(v.Instance()); len(got) != 2 {
		t.Errorf("after the rerun: vimConnectionInfo %v", got)
	}

	aspect := "worker_instance"
	out, err = v.ScaleOut(ctx, d, aspect, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.VMs) != 1 || len(v.VMs(lcm.RoleWorker)) != 2 || len(nodeNames(t, v)) != 3 {
		t.Errorf("scale-out: %d new VMs, %d workers, nodes %v", len(out.VMs), len(v.VMs(lcm.RoleWorker)), nodeNames(t, v))
	}
	if lvl := v.Instance().InstantiatedVnfInfo.ScaleStatus; !slices.ContainsFunc(lvl, func(s lcm.ScaleInfo) bool { return s.AspectID == aspect && s.ScaleLevel == 1 }) {
		t.Errorf("scale status %+v", lvl)
	}
	oldest := v.VMs(lcm.RoleWorker)[0]

	out, err = v.ScaleIn(ctx, d, aspect, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.VMs) != 1 || out.VMs[0] != oldest {
		t.Fatalf("scale-in removed %v, want the oldest worker %s", out.VMs, oldest.Name())
	}
	gone := out.VMs[0]
	hc, err := heat.ConnectInstance(ctx, v.Instance(), nil)
	if err != nil {
		t.Fatal(err)
	}
	workers, err := hc.Nodes(ctx, heat.StackName(v.Instance()), heat.Group{Role: lcm.RoleWorker, AspectID: aspect, SSHCP: "workerNode_CP2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(workers) != 1 || slices.ContainsFunc(workers, func(n lcm.Node) bool { return n.ServerID == gone.Node().ServerID }) {
		t.Errorf("Heat's workers after the scale-in: %v", workers)
	}
	// A VM that is gone refuses connections, which the client retries
	// until its context ends.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := gone.Host().Run(short, remote.Command("true")); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("the removed worker: %v, want its connection refused", err)
	}
	if got := nodeNames(t, v); len(got) != 2 {
		t.Errorf("nodes after the scale-in %v", got)
	}
	if _, err := v.ScaleIn(ctx, d, aspect, 1); err == nil || !strings.Contains(err.Error(), "min_size") {
		t.Errorf("a scale-in below min_size: %v", err)
	}

	worker := v.VMs(lcm.RoleWorker)[0]
	out, err = v.Heal(ctx, d, worker)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.VMs) != 1 || out.VMs[0].Addr() == worker.Addr() || out.VMs[0].Node().ServerID == worker.Node().ServerID {
		t.Fatalf("the healed worker: %v, was %s at %s", out.VMs, worker.Node().ServerID, worker.Addr())
	}
	want := kubeadm.NodeName(lcm.RoleWorker, out.VMs[0].Node().NICAddress)
	if got := nodeNames(t, v); len(got) != 2 || !slices.Contains(got, want) {
		t.Errorf("nodes after the heal %v, want %s among 2", got, want)
	}

	out, err = v.Terminate(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	inst = v.Instance()
	if len(out.VMs) != 2 || len(v.All()) != 0 || inst.InstantiationState != lcm.NotInstantiated {
		t.Errorf("terminate removed %d VMs, %d left, %s", len(out.VMs), len(v.All()), inst.InstantiationState)
	}
	if got := vimIDs(inst); !slices.Equal(got, []string{c.VimConnection().ID}) {
		t.Errorf("vimConnectionInfo after terminate %v", got)
	}
	if _, err := hc.Nodes(ctx, heat.StackName(inst), heat.Group{Role: lcm.RoleMaster, AspectID: "master_instance", SSHCP: "masterNode_CP1"}); err == nil {
		t.Error("Heat still has the stack")
	}
	if _, err := v.Heal(ctx, d); err == nil {
		t.Error("a heal of a terminated VNF ran")
	}
}

// The entire heal: heal_start revokes the VIM, heal_end builds the
// cluster again on the new VMs, at the same addresses.
func TestHealOfTheEntireVNF(t *testing.T) {
	ctx := ctx(t)
	c := cloudtest.Start(t, cloudtest.Options{})
	v := c.NewInstantiatedCluster(ctx, c.SampleRequest(samples.InstantiateCIRCluster), cloudtest.Shape{Masters: 1, Workers: 1})
	d := &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: c.Plumbing()}}
	before := v.All()
	out, err := v.Heal(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Start.RemoveVimConnections, []string{"kubernetes_vim"}) || len(out.End.AddVimConnections) != 1 {
		t.Errorf("heal_start removes %v, heal_end adds %v", out.Start.RemoveVimConnections, out.End.AddVimConnections)
	}
	if len(out.VMs) != 2 {
		t.Fatalf("%d VMs healed", len(out.VMs))
	}
	for i, vm := range out.VMs {
		if vm.Addr() != before[i].Addr() || vm.Node().ServerID == before[i].Node().ServerID {
			t.Errorf("%s: %s at %s, was %s at %s", vm.Name(), vm.Node().ServerID, vm.Addr(), before[i].Node().ServerID, before[i].Addr())
		}
	}
	if got := vimIDs(v.Instance()); !slices.Equal(got, []string{c.VimConnection().ID, "kubernetes_vim"}) {
		t.Errorf("vimConnectionInfo %v", got)
	}
	if got := nodeNames(t, v); len(got) != 2 {
		t.Errorf("nodes %v", got)
	}
}

// A driver that forgets to join the new workers at scale_end: the
// cluster does not grow, which a test sees.
func TestAScaleOutThatJoinsNothingIsSeen(t *testing.T) {
	ctx := ctx(t)
	c := cloudtest.Start(t, cloudtest.Options{})
	v := c.NewInstantiatedCluster(ctx, c.SampleRequest(samples.InstantiateCIRCluster), cloudtest.Shape{Masters: 1, Workers: 1})
	if _, err := v.ScaleOut(ctx, lcm.NopDriver{}, "worker_instance", 1); err != nil {
		t.Fatal(err)
	}
	if got := nodeNames(t, v); len(got) != 2 || len(v.VMs(lcm.RoleWorker)) != 2 {
		t.Errorf("nodes %v with %d workers", got, len(v.VMs(lcm.RoleWorker)))
	}
}

// NewInstantiatedCluster fails the test when the driver cannot build
// the cluster: here, a Kubernetes release the package repository lacks.
func TestNewInstantiatedClusterFailsWithoutACluster(t *testing.T) {
	ctx := ctx(t)
	ft := &fatalTB{TB: t}
	func() {
		defer func() { recover() }()
		c := cloudtest.Start(ft, cloudtest.Options{})
		body, err := json.Marshal(c.SampleRequest(samples.InstantiateCIRCluster))
		if err != nil {
			t.Fatal(err)
		}
		body, err = samples.Patch(body, map[string]any{"additionalParams.k8s_cluster_installation_param.kubernetes_version": "1.30.99"})
		if err != nil {
			t.Fatal(err)
		}
		var req lcm.InstantiateVnfRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		c.NewInstantiatedCluster(ctx, &req, cloudtest.Shape{Masters: 1})
	}()
	if !strings.Contains(ft.msg, "instantiating the cluster with the kubeadm driver") {
		t.Errorf("NewInstantiatedCluster without a cluster: %q", ft.msg)
	}
}

// The pv sample's storage server is built with its volume; once the
// driver set it up, a worker reads and writes its exports over NFS.
func TestStorageServerAndNFS(t *testing.T) {
	ctx := ctx(t)
	c := cloudtest.Start(t, cloudtest.Options{})
	v := c.NewInstantiatedCluster(ctx, c.SampleRequest(samples.InstantiatePVCluster), cloudtest.Shape{Masters: 1, Workers: 1})
	storage := v.VMs(lcm.RoleStorage)
	if len(storage) != 1 {
		t.Fatalf("%d storage servers", len(storage))
	}
	vol := storage[0].Volume("/dev/vdb")
	if vol == nil || vol.FSType() != "ext4" || vol.Formats() != 1 || vol.Serial() == "" {
		t.Fatalf("the storage server's volume: %+v", vol)
	}
	worker := v.VMs(lcm.RoleWorker)[0]
	x, err := worker.OpenNFS(ctx, storage[0].Node().NICAddress+":/volume/nfs/pv1")
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WriteFile("hello.txt", []byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := vol.ReadFile("nfs/pv1/hello.txt"); err != nil || string(got) != "hi\n" {
		t.Errorf("the file on the volume: %q, %v", got, err)
	}
	if got, err := x.As(1000, 1000).ReadFile("hello.txt"); err != nil || string(got) != "hi\n" {
		t.Errorf("read back as uid 1000: %q, %v", got, err)
	}
	if _, err := worker.OpenNFS(ctx, storage[0].Node().NICAddress+":/etc"); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("mounting an unexported path: %v", err)
	}
}

// The kubespray sample's roles: the load balancer in the VNF, the
// Ansible server outside it.
func TestNewClusterBuildsEveryRole(t *testing.T) {
	c := cloudtest.Start(t, cloudtest.Options{})
	req := c.SampleRequest(samples.InstantiateKubespray)
	v := c.NewCluster(req, cloudtest.Shape{Masters: 1, Workers: 2})
	for role, n := range map[lcm.Role]int{lcm.RoleMaster: 1, lcm.RoleWorker: 2, lcm.RoleLoadBalancer: 1} {
		if got := len(v.VMs(role)); got != n {
			t.Errorf("%d %s VMs, want %d", got, role, n)
		}
	}
	a := c.AnsibleServer()
	if a == nil || slices.Contains(v.All(), a) {
		t.Fatalf("the Ansible server %v is missing or in the VNF", a)
	}
	var p struct {
		K8s struct {
			Ansible struct {
				IP string `json:"ip_address"`
			} `json:"ansible"`
		} `json:"k8s_cluster_installation_param"`
	}
	if err := json.Unmarshal(req.AdditionalParams, &p); err != nil || p.K8s.Ansible.IP != a.Addr() {
		t.Errorf("the request's ansible.ip_address %q, the server's %q (%v)", p.K8s.Ansible.IP, a.Addr(), err)
	}

	ft := &fatalTB{TB: t}
	func() {
		defer func() { recover() }()
		bad := *req
		bad.AdditionalParams = json.RawMessage(`{"k8s_cluster_installation_param": {"master_nodes": {}}}`)
		cloudtest.Start(ft, cloudtest.Options{}).NewCluster(&bad, cloudtest.Shape{Masters: 1})
	}()
	if !strings.Contains(ft.msg, "master_nodes") {
		t.Errorf("NewCluster with parameters the driver refuses: %q", ft.msg)
	}
}

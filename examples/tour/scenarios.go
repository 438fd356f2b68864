package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
)

// A scenario is one spec's operations.
type scenario struct {
	name, title string
	run         func(ctx context.Context, t *tour, s scenario) error
}

func scenarios() []scenario {
	return []scenario{
		{"cir", "Private container registry VNF and a Kubernetes cluster that uses it (cir-k8s-cluster)", runCIR},
		{"pv", "Kubernetes cluster with a storage server for PersistentVolumes (pv-k8s-cluster)", runPV},
		{"kubespray", "Kubernetes cluster deployed with kubespray behind an external load balancer (k8s-mgmtdriver-kubespray)", runKubespray},
		{"scale", "Worker scale-out, scale-in and heal (mgmt-driver-for-k8s-scale)", runScale},
	}
}

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios() {
		names = append(names, s.name)
	}
	return names
}

func (t *tour) runScenario(ctx context.Context, name string) {
	for _, s := range scenarios() {
		if s.name == name {
			t.printf("\n=== %s: %s\n", s.name, s.title)
			if err := s.run(ctx, t, s); err != nil {
				t.printf("  scenario stopped: %v\n", err)
			}
		}
	}
}

// clusterRequest returns the InstantiateVnfRequest of the Kubernetes
// cluster: -request's, or the sample request named.
func (t *tour) clusterRequest(sample string) (*lcm.InstantiateVnfRequest, string, error) {
	if t.in.clusterRequest != nil {
		return t.in.clusterRequest, t.in.clusterFile, nil
	}
	b, ok := t.in.requests[sample]
	if !ok {
		return nil, "", fmt.Errorf("no sample request %s", sample)
	}
	req, err := decodeInstantiate(b)
	if err != nil {
		return nil, "", fmt.Errorf("sample %s: %w", sample, err)
	}
	return req, "sample " + sample, nil
}

// deployed is a VNF built in the simulated cloud with what the hooks know
// of it: its additionalParams, node groups and logins.
type deployed struct {
	label   string
	vnf     *sim.VNF
	request *lcm.InstantiateVnfRequest
	params  json.RawMessage
	groups  []heat.Group
	logins  map[lcm.Role]login
	master  heat.Group
	refs    heatRefs
}

// build creates a VNF in the cloud from a topology and reads what its
// hooks need from the params.
func (t *tour) build(label string, topo sim.Topology) (*deployed, error) {
	v, err := t.cloud.Build(topo)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", label, err)
	}
	t.vnfs[label] = v
	d := &deployed{label: label, vnf: v, params: topo.AdditionalParams}
	if d.groups, d.logins, d.master, d.refs, err = readParams(topo.AdditionalParams); err != nil {
		return nil, err
	}
	return d, nil
}

// instantiate runs the instantiate_end operations that exist so far on a
// deployed VNF: resolve its nodes through Heat, print them, check each.
func (t *tour) instantiate(ctx context.Context, s scenario, d *deployed) ([]lcm.Node, error) {
	var nodes []lcm.Node
	err := t.operation(ctx, s.name, d.label, lcm.InstantiateEnd, "resolve nodes in Heat, check each over SSH", func(ctx context.Context) ([]string, []string, error) {
		var err error
		if nodes, err = t.heat.Nodes(ctx, d.vnf.StackID(), d.groups...); err != nil {
			return nil, nil, err
		}
		t.printTopology(fmt.Sprintf("  Heat reports for stack %s:", d.vnf.StackName()), nodes)
		if d.refs.cp != "" {
			addr, err := t.heat.ClusterAddress(ctx, d.vnf.StackID(), d.master, d.refs.cp, d.refs.fip)
			if err != nil {
				return nil, nil, err
			}
			t.printf("  cluster address (%s): %s", d.refs.cp, addr.IP)
			if addr.FloatingIP != "" {
				t.printf(", floating %s", addr.FloatingIP)
			}
			t.printf("\n")
		}
		for _, vol := range d.refs.volumes {
			v, err := t.heat.Volume(ctx, d.vnf.StackID(), vol)
			if err != nil {
				return nil, nil, err
			}
			t.printf("  volume %s: %s on server %s\n", vol, v.Device, short(v.ServerID))
		}
		hosts, err := t.checkNodes(ctx, nodes, d.logins)
		return hosts, nil, err
	})
	return nodes, err
}

// runCIR deploys the private registry VNF (instantiate, then heal), and
// connects a Kubernetes cluster's nodes to it and to an HTTPS registry
// outside the VNFs, with the spec's sample requests unmodified; then every
// node pulls app:1 from both, under Docker and containerd.
func runCIR(ctx context.Context, t *tour, s scenario) error {
	b, ok := t.in.requests["instantiate_cir_registry.json"]
	if !ok {
		return errors.New("no sample request instantiate_cir_registry.json")
	}
	regReq, err := decodeInstantiate(b)
	if err != nil {
		return err
	}
	topo, err := sim.RegistryVNF(regReq.AdditionalParams)
	if err != nil {
		return err
	}
	reg, err := t.build("registry", topo)
	if err != nil {
		return err
	}
	if _, err := t.instantiate(ctx, s, reg); err != nil {
		return err
	}
	vnfDriver := &registry.VNFDriver{Plumbing: t.plumbing}
	if err := t.hook(ctx, s.name, reg.label, vnfDriver, lcm.InstantiateEnd, "install Docker, load the registry image from the package, run the registry",
		&lcm.InstantiateOp{Instance: reg.vnf.Instance(), Request: regReq, Package: t.in.pkg}); err != nil {
		return err
	}
	if err := t.hook(ctx, s.name, reg.label, vnfDriver, lcm.InstantiateEnd, "the same again: nothing to change",
		&lcm.InstantiateOp{Instance: reg.vnf.Instance(), Request: regReq, Package: t.in.pkg}); err != nil {
		return err
	}
	vm := reg.vnf.HostsWithRole(lcm.RoleRegistry)[0]
	vnfc := vnfcOf(reg.vnf.Instance(), vm.ServerID)
	if _, err := reg.vnf.Heal(vm.ServerID, sim.HealOptions{}); err != nil {
		return fmt.Errorf("healing through Heat: %w", err)
	}
	if err := t.hook(ctx, s.name, reg.label, vnfDriver, lcm.HealEnd, "re-create the registry on the new VM from the stored parameters",
		&lcm.HealOp{Instance: reg.vnf.Instance(), Request: &lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}, Package: t.in.pkg}); err != nil {
		return err
	}
	vm = reg.vnf.HostsWithRole(lcm.RoleRegistry)[0]
	if err := t.operation(ctx, s.name, reg.label, "operator", "route "+world.RegistryVNFAddress+" to the VM, push "+world.Image, func(ctx context.Context) ([]string, []string, error) {
		return []string{vm.Resource}, []string{vm.Resource}, world.PublishRegistryVNF(ctx, t.cloud, vm)
	}); err != nil {
		return err
	}

	cluster, err := t.buildCluster("cir-cluster", "instantiate_cir_k8s_cluster.json", sim.ClusterShape{Masters: 3, Workers: 2, Packages: runtimePackages})
	if err != nil {
		return err
	}
	if _, err := t.instantiate(ctx, s, cluster); err != nil {
		return err
	}
	return t.trustAndPull(ctx, s, cluster, cluster.vnf.Instance(), nil)
}

// images are what the nodes must pull: app:1 from the external registry,
// and from the registry VNF once the cir scenario has deployed it.
func (t *tour) images() []string {
	if t.vnfs["registry"] == nil {
		return []string{world.ExternalRegistryName + "/" + world.Image}
	}
	return world.Images()
}

// runtimePackages are installed on the cluster's nodes until the kubeadm
// package installs a container runtime itself.
var runtimePackages = []string{"docker.io", "cri-tools"}

// trustAndPull runs the cluster driver's instantiate_end (registry trust
// on every node) when req is nil, and checks that the nodes pull from both
// of the sample's registries.
func (t *tour) trustAndPull(ctx context.Context, s scenario, d *deployed, inst *lcm.VnfInstance, hosts []*sim.Host) error {
	if d.request == nil || !strings.Contains(string(d.params), "private_registry_connection_info") {
		return nil
	}
	if hosts == nil {
		if err := t.hook(ctx, s.name, d.label, &drivers.ClusterDriver{Plumbing: t.plumbing}, lcm.InstantiateEnd,
			"make every node trust and log in to the private registries",
			&lcm.InstantiateOp{Instance: inst, Request: d.request, Package: t.in.pkg}); err != nil {
			return err
		}
		hosts = append(d.vnf.HostsWithRole(lcm.RoleMaster), d.vnf.HostsWithRole(lcm.RoleWorker)...)
	}
	return t.operation(ctx, s.name, d.label, "check", "pull "+world.Image+" from the registries with Docker and containerd", func(ctx context.Context) ([]string, []string, error) {
		var names []string
		var errs []error
		for _, h := range hosts {
			names = append(names, h.Resource)
		}
		for _, p := range world.CheckPulls(ctx, t.cloud, hosts, t.images()) {
			status := "ok"
			if p.Err != nil {
				status = "FAILED " + p.Err.Error()
				errs = append(errs, fmt.Errorf("%s: %s pull %s: %w", p.Host, p.Runtime, p.Image, p.Err))
			}
			t.printf("  %-26s %-22s %-36s %s\n", p.Host, p.Runtime, p.Image, status)
		}
		return names, nil, errors.Join(errs...)
	})
}

func runPV(ctx context.Context, t *tour, s scenario) error {
	cluster, err := t.buildCluster("pv-cluster", "instantiate_pv_k8s_cluster.json", sim.ClusterShape{Masters: 3, Workers: 2})
	if err != nil {
		return err
	}
	_, err = t.instantiate(ctx, s, cluster)
	return err
}

func runKubespray(ctx context.Context, t *tour, s scenario) error {
	cluster, err := t.buildCluster("kubespray", "instantiate_kubespray.json", sim.ClusterShape{Masters: 3, Workers: 2})
	if err != nil {
		return err
	}
	if _, err = t.instantiate(ctx, s, cluster); err != nil {
		return err
	}
	a := cluster.vnf.Ansible()
	if a == nil {
		return nil
	}
	// The Ansible server is not in Heat: the request names it by address.
	// The sample's ansible.ip_address is a placeholder (0.0.0.0); in the
	// simulated cloud the server has a loopback address of its own.
	node := a.Node()
	return t.operation(ctx, s.name, cluster.label, lcm.InstantiateEnd, "check the Ansible server (ansible.ip_address)", func(ctx context.Context) ([]string, []string, error) {
		t.printTopology("  Ansible server, outside Heat:", []lcm.Node{node})
		hosts, err := t.checkNodes(ctx, []lcm.Node{node}, cluster.logins)
		return hosts, nil, err
	})
}

func (t *tour) buildCluster(label, sample string, shape sim.ClusterShape) (*deployed, error) {
	req, source, err := t.clusterRequest(sample)
	if err != nil {
		return nil, err
	}
	topo, err := sim.KubernetesCluster(req.AdditionalParams, shape)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	d, err := t.build(label, topo)
	if err != nil {
		return nil, err
	}
	d.request = req
	return d, nil
}

// runScale scales the worker group in and out with the spec's sample
// requests and heals one worker and then the entire VNF, resolving each
// operation's targets as its hooks do.
func runScale(ctx context.Context, t *tour, s scenario) error {
	d, err := t.buildCluster("scale-cluster", "instantiate_cir_k8s_cluster.json", sim.ClusterShape{Masters: 1, Workers: 3, MinWorkers: 1, Packages: runtimePackages})
	if err != nil {
		return err
	}
	if _, err := t.instantiate(ctx, s, d); err != nil {
		return err
	}
	if err := t.trustAndPull(ctx, s, d, d.vnf.Instance(), nil); err != nil {
		return err
	}
	cluster := &drivers.ClusterDriver{Plumbing: t.plumbing}
	workers, err := groupWithRole(d.groups, lcm.RoleWorker)
	if err != nil {
		return err
	}

	// SCALE_IN: scale_start picks the members, Heat removes them.
	var in lcm.ScaleVnfRequest
	if err := json.Unmarshal(t.in.requests["scale_in.json"], &in); err != nil {
		return err
	}
	var victims []lcm.Node
	err = t.operation(ctx, s.name, d.label, lcm.ScaleStart, fmt.Sprintf("SCALE_IN %s by %d: pick the oldest members", in.AspectID, in.Steps()), func(ctx context.Context) ([]string, []string, error) {
		var err error
		if victims, err = t.heat.ScaleInTargets(ctx, d.vnf.StackID(), workers, in); err != nil {
			return nil, nil, err
		}
		t.printTopology("  scale-in targets:", victims)
		return names(victims), nil, nil
	})
	if err != nil {
		return err
	}
	if _, err := d.vnf.ScaleIn(in.AspectID, names(victims)...); err != nil {
		return fmt.Errorf("scaling in through Heat: %w", err)
	}

	// SCALE_OUT: Heat adds members, scale_end finds and checks them.
	var out lcm.ScaleVnfRequest
	if err := json.Unmarshal(t.in.requests["scale_out.json"], &out); err != nil {
		return err
	}
	before, err := t.heat.Nodes(ctx, d.vnf.StackID(), workers)
	if err != nil {
		return err
	}
	instBefore := d.vnf.Instance()
	added, err := d.vnf.ScaleOut(out.AspectID, out.Steps())
	if err != nil {
		return fmt.Errorf("scaling out through Heat: %w", err)
	}
	err = t.operation(ctx, s.name, d.label, lcm.ScaleEnd, fmt.Sprintf("SCALE_OUT %s by %d: find and check the new members", out.AspectID, out.Steps()), func(ctx context.Context) ([]string, []string, error) {
		after, err := t.heat.Nodes(ctx, d.vnf.StackID(), workers)
		if err != nil {
			return nil, nil, err
		}
		added := heat.ScaleOutTargets(before, after)
		t.printTopology("  new members:", added)
		hosts, err := t.checkNodes(ctx, added, d.logins)
		return hosts, nil, err
	})
	if err != nil {
		return err
	}
	if err := t.hook(ctx, s.name, d.label, cluster, lcm.ScaleEnd, "registry trust on the new workers only",
		&lcm.ScaleOp{Instance: instBefore, Request: &out, Package: t.in.pkg}); err != nil {
		return err
	}
	if err := t.trustAndPull(ctx, s, d, nil, added); err != nil {
		return err
	}

	// Heal one worker: heal_start resolves the VNFC to the old server,
	// Heat replaces it, heal_end finds the fresh VM at the address Heat
	// now reports.
	inst := d.vnf.Instance()
	worker := d.vnf.HostsWithRole(lcm.RoleWorker)[0]
	vnfc := vnfcOf(inst, worker.ServerID)
	req := lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}
	err = t.operation(ctx, s.name, d.label, lcm.HealStart, "heal "+vnfc+": resolve the VNFC to its node", func(ctx context.Context) ([]string, []string, error) {
		plan, err := t.resolveHeal(ctx, d, inst, req)
		return names(plan.Nodes), nil, err
	})
	if err != nil {
		return err
	}
	if _, err := d.vnf.Heal(worker.ServerID, sim.HealOptions{NewAddresses: true}); err != nil {
		return fmt.Errorf("healing through Heat: %w", err)
	}
	inst = d.vnf.Instance() // the VNFM refreshes vnfcResourceInfo before heal_end
	err = t.operation(ctx, s.name, d.label, lcm.HealEnd, "heal "+vnfc+": find the new VM and check it", func(ctx context.Context) ([]string, []string, error) {
		plan, err := t.resolveHeal(ctx, d, inst, req)
		if err != nil {
			return nil, nil, err
		}
		hosts, err := t.checkNodes(ctx, plan.Nodes, d.logins)
		return hosts, nil, err
	})
	if err != nil {
		return err
	}
	if err := t.hook(ctx, s.name, d.label, cluster, lcm.HealEnd, "registry trust on the healed worker",
		&lcm.HealOp{Instance: inst, Request: &req, Package: t.in.pkg}); err != nil {
		return err
	}
	if err := t.trustAndPull(ctx, s, d, nil, []*sim.Host{t.cloud.HostByServer(serverOf(inst, vnfc))}); err != nil {
		return err
	}

	// Entire heal: no vnfcInstanceId.
	return t.operation(ctx, s.name, d.label, lcm.HealStart, "heal with no vnfcInstanceId: the entire VNF", func(ctx context.Context) ([]string, []string, error) {
		plan, err := t.resolveHeal(ctx, d, inst, lcm.HealVnfRequest{})
		if err == nil && !plan.Entire {
			err = errors.New("an empty vnfcInstanceId list did not mean the entire VNF")
		}
		return nil, nil, err
	})
}

func (t *tour) resolveHeal(ctx context.Context, d *deployed, inst *lcm.VnfInstance, req lcm.HealVnfRequest) (heat.HealPlan, error) {
	nodes, err := t.heat.Nodes(ctx, d.vnf.StackID(), d.groups...)
	if err != nil {
		return heat.HealPlan{}, err
	}
	plan, err := heat.HealTargets(inst, req, nodes)
	if err != nil {
		return plan, err
	}
	if plan.Entire {
		t.printf("  the entire VNF: terminate_end then instantiate_end with the stored additionalParams\n")
	} else {
		t.printTopology("  heal targets:", plan.Nodes)
	}
	return plan, nil
}

func vnfcOf(inst *lcm.VnfInstance, serverID string) string {
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ComputeResource.ResourceID == serverID {
			return v.ID
		}
	}
	return ""
}

// serverOf returns the server of a VNFC.
func serverOf(inst *lcm.VnfInstance, vnfc string) string {
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ID == vnfc {
			return v.ComputeResource.ResourceID
		}
	}
	return ""
}

func names(nodes []lcm.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Resource)
	}
	return out
}

func groupWithRole(groups []heat.Group, r lcm.Role) (heat.Group, error) {
	for _, g := range groups {
		if g.Role == r {
			return g, nil
		}
	}
	return heat.Group{}, fmt.Errorf("the additionalParams describe no %s nodes", r)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
)

// A scenario is one spec's operations.
//
// Its plan validates, before anything runs, every request body the
// scenario uses (with the drivers' own decoders, and for what the scenario
// itself needs beyond them) and returns the operations in order. An error
// from plan rejects the scenario: nothing runs on any of its VNFs.
type scenario struct {
	name, title string
	plan        func(t *tour, s scenario) ([]step, error)
}

// A step is one planned operation of a scenario: a hook, a VIM action or a
// check. run may use what earlier steps of the same plan left behind; it
// runs only when every earlier step passed.
type step struct {
	vnf  string
	hook lcm.Hook
	what string
	run  func(ctx context.Context) (hosts, changed []string, err error)
}

// The "hooks" of operations that are not management driver hooks.
const (
	hookVIM      lcm.Hook = "vim"      // what the VNFM has the VIM do between hooks
	hookOperator lcm.Hook = "operator" // what an operator does by hand
	hookCheck    lcm.Hook = "check"    // the tour checking an outcome
)

func scenarios() []scenario {
	return []scenario{
		{"cir", "Private container registry VNF and a Kubernetes cluster that uses it (cir-k8s-cluster)", planCIR},
		{"pv", "Kubernetes cluster with a storage server for PersistentVolumes (pv-k8s-cluster)", planPV},
		{"kubespray", "Kubernetes cluster deployed with kubespray behind an external load balancer (k8s-mgmtdriver-kubespray)", planKubespray},
		{"scale", "Worker scale-out, scale-in and heal (mgmt-driver-for-k8s-scale)", planScale},
	}
}

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios() {
		names = append(names, s.name)
	}
	return names
}

// runScenario plans the scenario and runs its steps in order. A rejected
// plan runs nothing; after a failed step, every later step is reported as
// skipped, with the failure as its reason.
func (t *tour) runScenario(ctx context.Context, name string) {
	for _, s := range scenarios() {
		if s.name != name {
			continue
		}
		t.printf("\n=== %s: %s\n", s.name, s.title)
		steps, err := s.plan(t, s)
		if err != nil {
			t.reject(s.name, err)
			return
		}
		var failed error
		var failedName string // the failed operation, for the skipped ones
		for _, st := range steps {
			if failed != nil {
				t.skip(s.name, st, "not run: "+failedName)
				continue
			}
			if err := t.operation(ctx, s.name, st.vnf, st.hook, st.what, st.run); err != nil {
				failedName = fmt.Sprintf("%s %s (%s) failed", st.vnf, st.hook, st.what)
				failed = fmt.Errorf("%s: %w", failedName, err)
			}
		}
		t.endScenario(s.name, failed)
	}
}

// sampleRequest decodes one of the specs' sample request bodies.
func (t *tour) sampleRequest(name string) (*lcm.InstantiateVnfRequest, string, error) {
	b, ok := t.in.requests[name]
	if !ok {
		return nil, "", fmt.Errorf("no sample request %s", name)
	}
	source := "sample " + name
	req, err := decodeInstantiate(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", source, err)
	}
	return req, source, nil
}

// clusterRequest returns the InstantiateVnfRequest of the Kubernetes
// cluster and where it comes from: -request's, or the sample request
// named.
func (t *tour) clusterRequest(sample string) (*lcm.InstantiateVnfRequest, string, error) {
	if t.in.clusterRequest != nil {
		return t.in.clusterRequest, "-request " + t.in.clusterFile, nil
	}
	return t.sampleRequest(sample)
}

// scaleRequest decodes one of the spec's sample ScaleVnfRequests.
func (t *tour) scaleRequest(name string) (lcm.ScaleVnfRequest, error) {
	var req lcm.ScaleVnfRequest
	b, ok := t.in.requests[name]
	if !ok {
		return req, fmt.Errorf("no sample request %s", name)
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("sample %s: %w", name, err)
	}
	if req.AspectID == "" || req.Steps() < 1 {
		return req, fmt.Errorf("sample %s: want an aspectId and numberOfSteps ≥ 1", name)
	}
	return req, nil
}

// deployed is a VNF the scenario builds in the simulated cloud, with what
// the hooks know of it: its request, node groups and logins. vnf is set by
// the step that creates it.
type deployed struct {
	label   string
	topo    sim.Topology
	vnf     *sim.VNF
	request *lcm.InstantiateVnfRequest
	groups  []heat.Group
	logins  map[lcm.Role]login
	master  heat.Group
	refs    heatRefs
}

// planVNF reads what a VNF's hooks need from its topology's parameters.
func planVNF(label string, req *lcm.InstantiateVnfRequest, topo sim.Topology) (*deployed, error) {
	d := &deployed{label: label, topo: topo, request: req}
	var err error
	if d.groups, d.logins, d.master, d.refs, err = readParams(topo.AdditionalParams); err != nil {
		return nil, err
	}
	return d, nil
}

// planRegistry validates the private registry VNF's request with the
// registry package's decoder and plans the VNF.
func (t *tour) planRegistry(label string, req *lcm.InstantiateVnfRequest, source string) (*deployed, error) {
	if _, err := registry.DecodeInstallParams(req.AdditionalParams, t.in.pkg); err != nil {
		return nil, inputError(source, err)
	}
	topo, err := sim.RegistryVNF(req.AdditionalParams)
	return planBody(label, req, source, topo, err)
}

// planCluster validates a Kubernetes cluster VNF's request with the
// cluster driver's decoder and for what the scenario needs (needs: paths
// in additionalParams, with why), and plans the VNF with the shape given.
func (t *tour) planCluster(label string, req *lcm.InstantiateVnfRequest, source string, shape sim.ClusterShape, scenario string, needs ...need) (*deployed, error) {
	const k8s = registry.ClusterParamKey + "."
	if shape.Masters > 1 {
		needs = append(needs, need{k8s + "master_node.aspect_id", fmt.Sprintf("the %d masters are a scaling group", shape.Masters)})
	}
	if shape.Workers > 0 {
		needs = append(needs, need{k8s + "worker_node", fmt.Sprintf("the VNF has %d workers", shape.Workers)})
	}
	if _, err := drivers.DecodeClusterParams(req.AdditionalParams, t.in.pkg); err != nil {
		return nil, inputError(source, err)
	}
	if err := require(req.AdditionalParams, scenario, needs...); err != nil {
		return nil, inputError(source, err)
	}
	topo, err := sim.KubernetesCluster(req.AdditionalParams, shape)
	return planBody(label, req, source, topo, err)
}

// planBody plans the VNF of a validated request body from the topology
// built for it (or the error building it); a problem names the body.
func planBody(label string, req *lcm.InstantiateVnfRequest, source string, topo sim.Topology, err error) (*deployed, error) {
	if err != nil {
		return nil, inputError(source, err)
	}
	d, err := planVNF(label, req, topo)
	if err != nil {
		return nil, inputError(source, err)
	}
	return d, nil
}

// inputError is a request body's problems, prefixed with where the body
// comes from; several problems go one per line.
func inputError(source string, err error) error {
	var pe *lcm.ParamsError
	if errors.As(err, &pe) && len(pe.Problems) > 1 {
		return fmt.Errorf("%s:\n%w", source, err)
	}
	return fmt.Errorf("%s: %w", source, err)
}

// need is a path in additionalParams that a scenario needs, and why.
type need struct{ path, why string }

// require reports every need that raw lacks (absent, null, "", [] or {}),
// as an *lcm.ParamsError with the path of each.
func require(raw json.RawMessage, scenario string, needs ...need) error {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return &lcm.ParamsError{Problems: []lcm.Problem{{Path: "additionalParams", Message: "is not valid JSON: " + err.Error()}}}
	}
	var problems []lcm.Problem
	for _, n := range needs {
		if !present(doc, strings.Split(n.path, ".")) {
			problems = append(problems, lcm.Problem{Path: n.path, Message: fmt.Sprintf("is missing: the %s scenario needs it (%s)", scenario, n.why)})
		}
	}
	if len(problems) > 0 {
		return &lcm.ParamsError{Problems: problems}
	}
	return nil
}

// present reports whether the value at path in v is there and not null
// or empty.
func present(v any, path []string) bool {
	if len(path) > 0 {
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		return present(obj[path[0]], path[1:])
	}
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// create is the VIM's part of instantiate: the stack and its VMs.
func (t *tour) create(d *deployed) step {
	vms := len(d.topo.Servers)
	for _, g := range d.topo.Groups {
		vms += g.Count
	}
	what := fmt.Sprintf("create the stack and its %d VMs", vms)
	return step{d.label, hookVIM, what, func(context.Context) ([]string, []string, error) {
		v, err := t.cloud.Build(d.topo)
		if err != nil {
			return nil, nil, err
		}
		d.vnf = v
		t.vnfs[d.label] = v
		var hosts []string
		for _, h := range v.Hosts() {
			hosts = append(hosts, h.Resource)
		}
		return hosts, hosts, nil
	}}
}

// instantiate is the instantiate_end check that every scenario runs on a
// VNF it created: resolve its nodes through Heat, print them, check each.
func (t *tour) instantiate(d *deployed) step {
	return step{d.label, lcm.InstantiateEnd, "resolve nodes in Heat, check each over SSH", func(ctx context.Context) ([]string, []string, error) {
		nodes, err := t.heat.Nodes(ctx, d.vnf.StackID(), d.groups...)
		if err != nil {
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
	}}
}

// hookStep runs one hook of a driver; op builds the hook's argument when
// the step runs, from the state earlier steps left.
func (t *tour) hookStep(vnf string, drv lcm.Driver, hook lcm.Hook, what string, op func() any) step {
	return step{vnf, hook, what, func(ctx context.Context) ([]string, []string, error) {
		res, err := lcm.Invoke(ctx, drv, hook, op())
		hosts, changed := hookHosts(res)
		return hosts, changed, err
	}}
}

// The additionalParams paths the scenarios need beyond what the drivers
// require.
var (
	needRegistries   = need{registry.ClusterParamKey + ".private_registry_connection_info", "the nodes are made to trust and pull from the registries it lists"}
	needWorkerAspect = need{registry.ClusterParamKey + ".worker_node.aspect_id", "the workers are scaled by this aspect"}
)

// planCIR deploys the private registry VNF (instantiate, then heal), and
// connects a Kubernetes cluster's nodes to it and to an HTTPS registry
// outside the VNFs, with the spec's sample requests unmodified; then every
// node pulls app:1 from both, under Docker and containerd.
func planCIR(t *tour, s scenario) ([]step, error) {
	regReq, regSource, err := t.sampleRequest("instantiate_cir_registry.json")
	if err != nil {
		return nil, err
	}
	reg, err := t.planRegistry("registry", regReq, regSource)
	if err != nil {
		return nil, err
	}
	req, source, err := t.clusterRequest("instantiate_cir_k8s_cluster.json")
	if err != nil {
		return nil, err
	}
	cluster, err := t.planCluster("cir-cluster", req, source, sim.ClusterShape{Masters: 3, Workers: 2, Packages: runtimePackages}, s.name, needRegistries)
	if err != nil {
		return nil, err
	}

	vnfDriver := &registry.VNFDriver{Plumbing: t.plumbing}
	instantiateOp := func() any {
		return &lcm.InstantiateOp{Instance: reg.vnf.Instance(), Request: regReq, Package: t.in.pkg}
	}
	var vnfc string // the registry VM's VNFC, which the heal replaces
	steps := []step{
		t.create(reg),
		t.instantiate(reg),
		t.hookStep(reg.label, vnfDriver, lcm.InstantiateEnd, "install Docker, load the registry image from the package, run the registry", instantiateOp),
		t.hookStep(reg.label, vnfDriver, lcm.InstantiateEnd, "the same again: nothing to change", instantiateOp),
		{reg.label, hookVIM, "heal the registry VM: Heat replaces its server", func(context.Context) ([]string, []string, error) {
			vm := reg.vnf.HostsWithRole(lcm.RoleRegistry)[0]
			vnfc = vnfcOf(reg.vnf.Instance(), vm.ServerID)
			h, err := reg.vnf.Heal(vm.ServerID, sim.HealOptions{})
			if err != nil {
				return nil, nil, fmt.Errorf("healing through Heat: %w", err)
			}
			return []string{h.Resource}, []string{h.Resource}, nil
		}},
		t.hookStep(reg.label, vnfDriver, lcm.HealEnd, "re-create the registry on the new VM from the stored parameters", func() any {
			return &lcm.HealOp{Instance: reg.vnf.Instance(), Request: &lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}, Package: t.in.pkg}
		}),
		{reg.label, hookOperator, "route " + world.RegistryVNFAddress + " to the VM, push " + world.Image, func(ctx context.Context) ([]string, []string, error) {
			vm := reg.vnf.HostsWithRole(lcm.RoleRegistry)[0]
			return []string{vm.Resource}, []string{vm.Resource}, world.PublishRegistryVNF(ctx, t.cloud, vm)
		}},
		t.create(cluster),
		t.instantiate(cluster),
	}
	return append(steps, t.trustAndPull(cluster, func() any {
		return &lcm.InstantiateOp{Instance: cluster.vnf.Instance(), Request: cluster.request, Package: t.in.pkg}
	})...), nil
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
// on every node) and checks that the nodes pull from the registries.
func (t *tour) trustAndPull(d *deployed, op func() any) []step {
	return []step{
		t.hookStep(d.label, &drivers.ClusterDriver{Plumbing: t.plumbing}, lcm.InstantiateEnd, "make every node trust and log in to the private registries", op),
		t.pull(d, "every node", func() []*sim.Host {
			return append(d.vnf.HostsWithRole(lcm.RoleMaster), d.vnf.HostsWithRole(lcm.RoleWorker)...)
		}),
	}
}

// pull checks that hosts pull app:1 from the registries with Docker and
// containerd.
func (t *tour) pull(d *deployed, who string, hosts func() []*sim.Host) step {
	return step{d.label, hookCheck, who + ": pull " + world.Image + " from the registries with Docker and containerd", func(ctx context.Context) ([]string, []string, error) {
		var names []string
		var errs []error
		hs := hosts()
		if len(hs) == 0 || slices.Contains(hs, nil) {
			return nil, nil, errors.New("the simulated cloud has no such hosts")
		}
		for _, h := range hs {
			names = append(names, h.Resource)
		}
		for _, p := range world.CheckPulls(ctx, t.cloud, hs, t.images()) {
			status := "ok"
			if p.Err != nil {
				status = "FAILED " + p.Err.Error()
				errs = append(errs, fmt.Errorf("%s: %s pull %s: %w", p.Host, p.Runtime, p.Image, p.Err))
			}
			t.printf("  %-26s %-22s %-36s %s\n", p.Host, p.Runtime, p.Image, status)
		}
		return names, nil, errors.Join(errs...)
	}}
}

func planPV(t *tour, s scenario) ([]step, error) {
	req, source, err := t.clusterRequest("instantiate_pv_k8s_cluster.json")
	if err != nil {
		return nil, err
	}
	const storage = registry.ClusterParamKey + ".storage_server."
	cluster, err := t.planCluster("pv-cluster", req, source, sim.ClusterShape{Masters: 3, Workers: 2}, s.name,
		need{storage + "ssh_cp_name", "the storage server is built and checked"},
		need{storage + "cinder_volume_setup_params", "the storage server's volumes are resolved in Heat"})
	if err != nil {
		return nil, err
	}
	return []step{t.create(cluster), t.instantiate(cluster)}, nil
}

func planKubespray(t *tour, s scenario) ([]step, error) {
	req, source, err := t.clusterRequest("instantiate_kubespray.json")
	if err != nil {
		return nil, err
	}
	const k8s = registry.ClusterParamKey + "."
	cluster, err := t.planCluster("kubespray", req, source, sim.ClusterShape{Masters: 3, Workers: 2}, s.name,
		need{k8s + "ansible", "the Ansible server is checked"},
		need{k8s + "external_lb_param.ssh_cp_name", "the external load balancer is built and checked"})
	if err != nil {
		return nil, err
	}
	return []step{
		t.create(cluster),
		t.instantiate(cluster),
		// The Ansible server is not in Heat: the request names it by
		// address. The sample's ansible.ip_address is a placeholder
		// (0.0.0.0); in the simulated cloud the server has a loopback
		// address of its own.
		{cluster.label, lcm.InstantiateEnd, "check the Ansible server (ansible.ip_address)", func(ctx context.Context) ([]string, []string, error) {
			a := cluster.vnf.Ansible()
			if a == nil {
				return nil, nil, errors.New("the simulated cloud built no Ansible server")
			}
			node := a.Node()
			t.printTopology("  Ansible server, outside Heat:", []lcm.Node{node})
			hosts, err := t.checkNodes(ctx, []lcm.Node{node}, cluster.logins)
			return hosts, nil, err
		}},
	}, nil
}

// planScale scales the worker group in and out with the spec's sample
// requests and heals one worker and then the entire VNF, resolving each
// operation's targets as its hooks do.
func planScale(t *tour, s scenario) ([]step, error) {
	req, source, err := t.clusterRequest("instantiate_cir_k8s_cluster.json")
	if err != nil {
		return nil, err
	}
	d, err := t.planCluster("scale-cluster", req, source, sim.ClusterShape{Masters: 1, Workers: 3, MinWorkers: 1, Packages: runtimePackages}, s.name,
		needWorkerAspect, needRegistries)
	if err != nil {
		return nil, err
	}
	workers, err := groupWithRole(d.groups, lcm.RoleWorker)
	if err != nil {
		return nil, inputError(source, err)
	}
	in, err := t.scaleRequest("scale_in.json")
	if err != nil {
		return nil, err
	}
	out, err := t.scaleRequest("scale_out.json")
	if err != nil {
		return nil, err
	}
	for _, r := range []lcm.ScaleVnfRequest{in, out} {
		if r.AspectID != workers.AspectID {
			return nil, fmt.Errorf("%s: %s.worker_node.aspect_id is %q, but the sample %s request scales %q", source, registry.ClusterParamKey, workers.AspectID, r.Type, r.AspectID)
		}
	}
	cluster := &drivers.ClusterDriver{Plumbing: t.plumbing}

	// What earlier steps leave for later ones.
	var (
		victims    []lcm.Node
		before     []lcm.Node       // the workers before the scale-out
		instBefore *lcm.VnfInstance // the instance before the scale-out
		added      []*sim.Host      // the scale-out's new workers
		inst       *lcm.VnfInstance // the instance around the heal
		heal       lcm.HealVnfRequest
		worker     *sim.Host // the worker healed
	)
	steps := []step{t.create(d), t.instantiate(d)}
	steps = append(steps, t.trustAndPull(d, func() any {
		return &lcm.InstantiateOp{Instance: d.vnf.Instance(), Request: d.request, Package: t.in.pkg}
	})...)
	steps = append(steps,
		// SCALE_IN: scale_start picks the members, Heat removes them.
		step{d.label, lcm.ScaleStart, fmt.Sprintf("SCALE_IN %s by %d: pick the oldest members", in.AspectID, in.Steps()), func(ctx context.Context) ([]string, []string, error) {
			var err error
			if victims, err = t.heat.ScaleInTargets(ctx, d.vnf.StackID(), workers, in); err != nil {
				return nil, nil, err
			}
			t.printTopology("  scale-in targets:", victims)
			return names(victims), nil, nil
		}},
		step{d.label, hookVIM, fmt.Sprintf("SCALE_IN %s: Heat removes the members", in.AspectID), func(context.Context) ([]string, []string, error) {
			if _, err := d.vnf.ScaleIn(in.AspectID, names(victims)...); err != nil {
				return nil, nil, fmt.Errorf("scaling in through Heat: %w", err)
			}
			return names(victims), names(victims), nil
		}},

		// SCALE_OUT: Heat adds members, scale_end finds and checks them.
		step{d.label, hookVIM, fmt.Sprintf("SCALE_OUT %s by %d: Heat adds members", out.AspectID, out.Steps()), func(ctx context.Context) ([]string, []string, error) {
			var err error
			if before, err = t.heat.Nodes(ctx, d.vnf.StackID(), workers); err != nil {
				return nil, nil, err
			}
			instBefore = d.vnf.Instance()
			if added, err = d.vnf.ScaleOut(out.AspectID, out.Steps()); err != nil {
				return nil, nil, fmt.Errorf("scaling out through Heat: %w", err)
			}
			var hosts []string
			for _, h := range added {
				hosts = append(hosts, h.Resource)
			}
			return hosts, hosts, nil
		}},
		step{d.label, lcm.ScaleEnd, fmt.Sprintf("SCALE_OUT %s by %d: find and check the new members", out.AspectID, out.Steps()), func(ctx context.Context) ([]string, []string, error) {
			after, err := t.heat.Nodes(ctx, d.vnf.StackID(), workers)
			if err != nil {
				return nil, nil, err
			}
			added := heat.ScaleOutTargets(before, after)
			t.printTopology("  new members:", added)
			hosts, err := t.checkNodes(ctx, added, d.logins)
			return hosts, nil, err
		}},
		t.hookStep(d.label, cluster, lcm.ScaleEnd, "registry trust on the new workers only", func() any {
			return &lcm.ScaleOp{Instance: instBefore, Request: &out, Package: t.in.pkg}
		}),
		t.pull(d, "the new workers", func() []*sim.Host { return added }),

		// Heal one worker: heal_start resolves the VNFC to the old server,
		// Heat replaces it, heal_end finds the fresh VM at the address Heat
		// now reports.
		step{d.label, lcm.HealStart, "heal a worker's VNFC: resolve it to its node", func(ctx context.Context) ([]string, []string, error) {
			inst = d.vnf.Instance()
			worker = d.vnf.HostsWithRole(lcm.RoleWorker)[0]
			heal = lcm.HealVnfRequest{VnfcInstanceID: []string{vnfcOf(inst, worker.ServerID)}}
			t.printf("  VNFC %s\n", heal.VnfcInstanceID[0])
			plan, err := t.resolveHeal(ctx, d, inst, heal)
			return names(plan.Nodes), nil, err
		}},
		step{d.label, hookVIM, "heal the worker: Heat replaces its server, with new addresses", func(context.Context) ([]string, []string, error) {
			h, err := d.vnf.Heal(worker.ServerID, sim.HealOptions{NewAddresses: true})
			if err != nil {
				return nil, nil, fmt.Errorf("healing through Heat: %w", err)
			}
			inst = d.vnf.Instance() // the VNFM refreshes vnfcResourceInfo before heal_end
			return []string{h.Resource}, []string{h.Resource}, nil
		}},
		step{d.label, lcm.HealEnd, "heal the worker's VNFC: find the new VM and check it", func(ctx context.Context) ([]string, []string, error) {
			plan, err := t.resolveHeal(ctx, d, inst, heal)
			if err != nil {
				return nil, nil, err
			}
			hosts, err := t.checkNodes(ctx, plan.Nodes, d.logins)
			return hosts, nil, err
		}},
		t.hookStep(d.label, cluster, lcm.HealEnd, "registry trust on the healed worker", func() any {
			return &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg}
		}),
		t.pull(d, "the healed worker", func() []*sim.Host {
			return []*sim.Host{t.cloud.HostByServer(serverOf(inst, heal.VnfcInstanceID[0]))}
		}),

		// Entire heal: no vnfcInstanceId.
		step{d.label, lcm.HealStart, "heal with no vnfcInstanceId: the entire VNF", func(ctx context.Context) ([]string, []string, error) {
			plan, err := t.resolveHeal(ctx, d, inst, lcm.HealVnfRequest{})
			if err == nil && !plan.Entire {
				err = errors.New("an empty vnfcInstanceId list did not mean the entire VNF")
			}
			return nil, nil, err
		}},
	)
	return steps, nil
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

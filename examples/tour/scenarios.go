package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/samples"
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
		{"scale", "The whole cluster VNF (both registries, the storage server): worker scale-out and scale-in, heal of a worker, a master and the entire VNF, terminate (mgmt-driver-for-k8s-scale)", planScale},
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
		t.sayf("\n=== %s: %s\n", s.name, s.title)
		steps, err := s.plan(t, s)
		if err != nil {
			t.reject(s.name, err)
			return
		}
		var failed error
		var failedName string // the failed operation, for the skipped ones
		var rejectedBy string // the operation whose hook refused the parameters
		for _, st := range steps {
			if failed != nil {
				t.skip(s.name, st, "not run: "+failedName)
				continue
			}
			if err := t.operation(ctx, s.name, st.vnf, st.hook, st.what, st.run); err != nil {
				failedName = fmt.Sprintf("%s %s (%s) failed", st.vnf, st.hook, st.what)
				failed = fmt.Errorf("%s: %w", failedName, err)
				if last := t.report.Operations[len(t.report.Operations)-1]; last.Status == StatusRejected {
					rejectedBy = st.vnf + " " + string(st.hook)
					failedName = fmt.Sprintf("%s %s (%s) rejected the parameters", st.vnf, st.hook, st.what)
					failed = err // RejectedBy names the operation
				}
			}
		}
		t.endScenario(s.name, failed, rejectedBy)
	}
}

// sampleRequest decodes one of the specs' sample request bodies, its
// placeholders replaced by values that work in the simulated cloud (see
// sim.Cloud.Request), and says so.
func (t *tour) sampleRequest(name string) (*lcm.InstantiateVnfRequest, string, error) {
	b, err := t.cloud.Request(name)
	if err != nil {
		return nil, "", err
	}
	source := "sample " + name
	if wv := workingValues(name); wv != "" {
		t.sayf("  %s: the spec's placeholders (%s) made to work in the simulated cloud\n", source, wv)
	}
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
	b, err := samples.Request(name)
	if err != nil {
		return req, err
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
// the hooks know of it: its request, the typed parameters of a cluster,
// where its VMs are and their logins. vnf is set by the step that
// creates it.
type deployed struct {
	label   string
	topo    sim.Topology
	vnf     *sim.VNF
	request *lcm.InstantiateVnfRequest
	cluster *drivers.ClusterParams // nil for the registry VNF
	driver  lcm.Driver             // the cluster's driver; nil: the kubeadm cluster driver
	vim     *lcm.VimConnectionInfo // the cluster's VIM, once instantiate_end returned it
	vms     plumbing.VMs
}

// planRegistry validates the private registry VNF's request with the
// registry package's decoder and plans the VNF from its parameters.
func (t *tour) planRegistry(label string, req *lcm.InstantiateVnfRequest, source string) (*deployed, error) {
	p, err := registry.DecodeInstallParams(req.AdditionalParams, t.in.pkg)
	if err != nil {
		return nil, inputError(source, err)
	}
	d := &deployed{label: label, request: req, topo: sim.RegistryVNF(p, req.AdditionalParams)}
	d.vms = registryVMs(p)
	return d, nil
}

// planCluster validates a Kubernetes cluster VNF's request with the
// cluster driver's decoder and for what the scenario needs, and plans the
// VNF with the shape given from the typed parameters.
func (t *tour) planCluster(label string, req *lcm.InstantiateVnfRequest, source string, shape sim.ClusterShape, scenario string, needs ...need) (*deployed, error) {
	shape = t.shape(shape)
	if shape.Masters > 1 {
		needs = append(needs, needMasterAspect)
	}
	if shape.Workers > 0 {
		needs = append(needs, needWorkers)
	}
	p, err := drivers.DecodeClusterParams(req.AdditionalParams, t.in.pkg)
	if err != nil {
		return nil, inputError(source, err)
	}
	if err := missing(p, scenario, needs...); err != nil {
		return nil, inputError(source, err)
	}
	topo, err := sim.KubernetesCluster(p, shape, req.AdditionalParams)
	if err != nil {
		return nil, inputError(source, err)
	}
	d := &deployed{label: label, request: req, topo: topo, cluster: &p}
	d.vms = p.VMs()
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
		nodes, err := t.heat.Nodes(ctx, d.vnf.StackID(), d.vms.Groups...)
		if err != nil {
			return nil, nil, err
		}
		t.printTopology(fmt.Sprintf("  Heat reports for stack %s:", d.vnf.StackName()), nodes)
		if c := d.cluster; c != nil && c.MasterNode.ClusterCPName != "" {
			m := c.MasterNode
			addr, err := t.heat.ClusterAddress(ctx, d.vnf.StackID(), m.Group(lcm.RoleMaster), m.ClusterCPName, m.ClusterFIPName)
			if err != nil {
				return nil, nil, err
			}
			t.printf("  cluster address (%s): %s", m.ClusterCPName, addr.IP)
			if addr.FloatingIP != "" {
				t.printf(", floating %s", addr.FloatingIP)
			}
			t.printf("\n")
		}
		if c := d.cluster; c != nil && c.StorageServer != nil {
			for _, vol := range c.StorageServer.CinderVolumeSetupParams {
				v, err := t.heat.Volume(ctx, d.vnf.StackID(), vol.VolumeResourceID)
				if err != nil {
					return nil, nil, err
				}
				t.printf("  volume %s: %s on server %s\n", vol.VolumeResourceID, v.Device, short(v.ServerID))
			}
		}
		hosts, err := t.checkNodes(ctx, nodes, d.vms.Logins)
		return hosts, nil, err
	}}
}

// hookStep runs one hook of a driver; op builds the hook's argument when
// the step runs, from the state earlier steps left.
func (t *tour) hookStep(vnf string, drv lcm.Driver, hook lcm.Hook, what string, op func() any) step {
	return step{vnf, hook, what, func(ctx context.Context) ([]string, []string, error) {
		res, err := t.invoke(ctx, drv, hook, op())
		hosts, changed := hookHosts(res)
		return hosts, changed, err
	}}
}

// planCIR deploys the private registry VNF (instantiate, then heal), and
// builds a Kubernetes cluster whose nodes trust it and an HTTPS registry
// outside the VNFs, with the spec's sample requests (their placeholders
// made to work); then every node pulls app:1 from both as the kubelet
// does.
func planCIR(t *tour, s scenario) ([]step, error) {
	regReq, regSource, err := t.sampleRequest(samples.InstantiateCIRRegistry)
	if err != nil {
		return nil, err
	}
	reg, err := t.planRegistry("registry", regReq, regSource)
	if err != nil {
		return nil, err
	}
	req, source, err := t.clusterRequest(samples.InstantiateCIRCluster)
	if err != nil {
		return nil, err
	}
	cluster, err := t.planCluster("cir-cluster", req, source, sim.ClusterShape{Masters: 3, Workers: 2}, s.name, needRegistries)
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

// trustAndPull builds the cluster with the cluster driver's
// instantiate_end (registry trust on every node before it joins), shows
// its nodes, checks that every node pulls from the registries, and runs
// the hook again, which must change nothing.
func (t *tour) trustAndPull(d *deployed, op func() any) []step {
	return []step{
		t.clusterHook(d, lcm.InstantiateEnd, "build the kubeadm cluster: containerd, registry trust, kubeadm init, CNI, joins, VIM credentials", false, op),
		t.nodeTable(d, clusterSize(d)),
		t.vimToken(d, false),
		t.pull(d, "every node", func() []*sim.Host {
			return append(d.vnf.HostsWithRole(lcm.RoleMaster), d.vnf.HostsWithRole(lcm.RoleWorker)...)
		}),
		t.clusterHook(d, lcm.InstantiateEnd, "the same again: nothing to change", true, op),
	}
}

// pull checks that hosts pull app:1 from the registries with Docker and
// containerd.
func (t *tour) pull(d *deployed, who string, hosts func() []*sim.Host) step {
	return step{d.label, hookCheck, who + ": pull " + world.Image + " from the registries (containerd, and Docker where installed)", func(ctx context.Context) ([]string, []string, error) {
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

// planScale builds a three-master, two-worker cluster with the cluster
// driver, scales its worker group out by two and in by one (the spec's
// sample requests), heals a worker, a master and then the entire VNF,
// and terminates it: each hook as the VNFM calls it around what Heat
// does, each followed by kubectl's node table.
func planScale(t *tour, s scenario) ([]step, error) {
	req, source, err := t.clusterRequest(samples.InstantiateCIRCluster)
	if err != nil {
		return nil, err
	}
	needs := []need{needWorkerAspect, needRegistries}
	if t.in.clusterRequest == nil {
		// The whole cluster VNF: the cir sample's registries and the pv
		// sample's storage server with its PersistentVolumes.
		if req, err = t.withSampleStorage(req); err != nil {
			return nil, err
		}
		source += " with the storage_server and pv_registration_params of " + samples.InstantiatePVCluster
		t.sayf("  %s\n", source)
		needs = append(needs, needStorage)
	}
	d, err := t.planCluster("scale-cluster", req, source, sim.ClusterShape{Masters: 3, Workers: 2, MinWorkers: 1}, s.name, needs...)
	if err != nil {
		return nil, err
	}
	workers, err := groupWithRole(d.vms.Groups, lcm.RoleWorker)
	if err != nil {
		return nil, inputError(source, err)
	}
	in, err := t.scaleRequest(samples.ScaleIn)
	if err != nil {
		return nil, err
	}
	out, err := t.scaleRequest(samples.ScaleOut)
	if err != nil {
		return nil, err
	}
	for _, r := range []lcm.ScaleVnfRequest{in, out} {
		if r.AspectID != workers.AspectID {
			return nil, fmt.Errorf("%s: %s.worker_node.aspect_id is %q, but the sample %s request scales %q", source, registry.ClusterParamKey, workers.AspectID, r.Type, r.AspectID)
		}
	}
	out.NumberOfSteps = 2 // two new workers at once: they join in parallel

	// What earlier steps leave for later ones.
	var (
		victims    []lcm.Node
		instBefore *lcm.VnfInstance // the instance before the scale-out
		added      []*sim.Host      // the scale-out's new workers
		inst       *lcm.VnfInstance // the instance around a heal
		heal       lcm.HealVnfRequest
	)
	table := t.nodeTable(d, clusterSize(d))
	steps := []step{t.create(d), t.instantiate(d)}
	steps = append(steps, t.trustAndPull(d, func() any {
		return &lcm.InstantiateOp{Instance: d.vnf.Instance(), Request: d.request, Package: t.in.pkg}
	})...)
	// With the storage server: its PersistentVolumes, after the build and
	// after the entire heal.
	var pvs []step
	if d.cluster.StorageServer != nil {
		pvs = append(pvs, t.pvTable(d, func() string { return d.vnf.HostsWithRole(lcm.RoleStorage)[0].NICAddress }, corev1.VolumeAvailable))
	}
	steps = append(steps, pvs...)

	// SCALE_OUT: Heat adds members, scale_end joins them.
	steps = append(steps,
		step{d.label, hookVIM, fmt.Sprintf("SCALE_OUT %s by %d: Heat adds members", out.AspectID, out.Steps()), func(context.Context) ([]string, []string, error) {
			instBefore = d.vnf.Instance()
			var err error
			if added, err = d.vnf.ScaleOut(out.AspectID, out.Steps()); err != nil {
				return nil, nil, fmt.Errorf("scaling out through Heat: %w", err)
			}
			var hosts []string
			for _, h := range added {
				hosts = append(hosts, h.Resource)
			}
			return hosts, hosts, nil
		}},
		t.clusterHook(d, lcm.ScaleEnd, "build and join the new workers (registry trust included), in parallel", false, func() any {
			return &lcm.ScaleOp{Instance: instBefore, Request: &out, Package: t.in.pkg}
		}),
		table,
		t.pull(d, "the new workers", func() []*sim.Host { return added }),
	)

	// SCALE_IN: scale_start drains and removes the victims, Heat deletes them.
	steps = append(steps,
		step{d.label, hookVIM, fmt.Sprintf("SCALE_IN %s by %d: the members Heat will remove", in.AspectID, in.Steps()), func(ctx context.Context) ([]string, []string, error) {
			var err error
			if victims, err = t.heat.ScaleInTargets(ctx, d.vnf.StackID(), workers, in); err != nil {
				return nil, nil, err
			}
			t.printTopology("  scale-in targets:", victims)
			return names(victims), nil, nil
		}},
		t.clusterHook(d, lcm.ScaleStart, "drain the victims, kubeadm reset them, delete them from the cluster", false, func() any {
			return &lcm.ScaleOp{Instance: d.vnf.Instance(), Request: &in, Package: t.in.pkg}
		}),
		step{d.label, hookVIM, fmt.Sprintf("SCALE_IN %s: Heat removes the members", in.AspectID), func(context.Context) ([]string, []string, error) {
			if _, err := d.vnf.ScaleIn(in.AspectID, names(victims)...); err != nil {
				return nil, nil, fmt.Errorf("scaling in through Heat: %w", err)
			}
			return names(victims), names(victims), nil
		}},
		table,
	)

	// Heal a worker, then a master: heal_start takes the node out, Heat
	// replaces the VM (new addresses), heal_end joins the new one.
	for _, role := range []lcm.Role{lcm.RoleWorker, lcm.RoleMaster} {
		var vm *sim.Host
		if role == lcm.RoleMaster && d.masters() == 1 {
			steps = append(steps, t.onlyMasterHeal(d))
			continue
		}
		steps = append(steps,
			step{d.label, hookVIM, fmt.Sprintf("heal a %s's VNFC: resolve it to its node", role), func(ctx context.Context) ([]string, []string, error) {
				inst = d.vnf.Instance()
				vm = d.vnf.HostsWithRole(role)[len(d.vnf.HostsWithRole(role))-1]
				heal = lcm.HealVnfRequest{VnfcInstanceID: []string{vnfcOf(inst, vm.ServerID)}}
				t.printf("  VNFC %s\n", heal.VnfcInstanceID[0])
				plan, err := t.resolveHeal(ctx, d, inst, heal)
				return names(plan.Nodes), nil, err
			}},
			t.clusterHook(d, lcm.HealStart, fmt.Sprintf("take the %s out of the cluster", role)+map[lcm.Role]string{lcm.RoleMaster: " (HAProxy backends, etcd member)"}[role], false, func() any {
				return &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg}
			}),
			step{d.label, hookVIM, fmt.Sprintf("heal the %s: Heat replaces its server, with new addresses", role), func(context.Context) ([]string, []string, error) {
				h, err := d.vnf.Heal(vm.ServerID, sim.HealOptions{NewAddresses: true})
				if err != nil {
					return nil, nil, fmt.Errorf("healing through Heat: %w", err)
				}
				inst = d.vnf.Instance() // the VNFM refreshes vnfcResourceInfo before heal_end
				return []string{h.Resource}, []string{h.Resource}, nil
			}},
			t.clusterHook(d, lcm.HealEnd, fmt.Sprintf("build the new VM and join it as a %s", map[lcm.Role]string{lcm.RoleMaster: "control plane", lcm.RoleWorker: "worker"}[role]), false, func() any {
				return &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg}
			}),
			table,
		)
	}

	// Entire heal: no vnfcInstanceId. heal_start revokes the VIM, Heat
	// replaces every VM, heal_end builds the cluster again.
	steps = append(steps, t.entireHeal(d, "heal with no vnfcInstanceId, the entire VNF: revoke the VIM credentials",
		"build the whole cluster again from the stored parameters")...)
	steps = append(steps, table)
	steps = append(steps, pvs...)
	steps = append(steps,
		t.vimToken(d, false),
		t.pull(d, "every node", func() []*sim.Host {
			return append(d.vnf.HostsWithRole(lcm.RoleMaster), d.vnf.HostsWithRole(lcm.RoleWorker)...)
		}),

		// Terminate: terminate_start revokes the VIM on the live cluster,
		// terminate_end has the VNFM forget it.
		t.clusterHook(d, lcm.TerminateStart, "revoke the VIM credentials on the cluster", false, func() any {
			return &lcm.TerminateOp{Instance: d.vnf.Instance(), Package: t.in.pkg}
		}),
		t.vimToken(d, true),
		t.clusterHook(d, lcm.TerminateEnd, "forget the VIM connection", false, func() any {
			return &lcm.TerminateOp{Instance: d.vnf.Instance(), Package: t.in.pkg}
		}),
	)
	return steps, nil
}

// entireHeal is the heal of the entire VNF (no vnfcInstanceId):
// heal_start (what startWhat says), Heat replacing every server at the
// same addresses, heal_end (endWhat).
func (t *tour) entireHeal(d *deployed, startWhat, endWhat string) []step {
	entire := lcm.HealVnfRequest{}
	op := func() any { return &lcm.HealOp{Instance: d.vnf.Instance(), Request: &entire, Package: t.in.pkg} }
	return []step{
		t.clusterHook(d, lcm.HealStart, startWhat, false, op),
		{d.label, hookVIM, "heal the entire VNF: Heat replaces every server", func(context.Context) ([]string, []string, error) {
			var hosts []string
			for _, h := range d.vnf.Hosts() {
				nh, err := d.vnf.Heal(h.ServerID, sim.HealOptions{})
				if err != nil {
					return hosts, hosts, fmt.Errorf("healing through Heat: %w", err)
				}
				hosts = append(hosts, nh.Resource)
			}
			return hosts, hosts, nil
		}},
		t.clusterHook(d, lcm.HealEnd, endWhat, false, op),
	}
}

// masters is how many masters the cluster's topology has.
func (d *deployed) masters() int {
	n := 0
	for _, g := range d.topo.Groups {
		if g.Role == lcm.RoleMaster {
			n += g.Count
		}
	}
	for _, s := range d.topo.Servers {
		if s.Role == lcm.RoleMaster {
			n++
		}
	}
	return n
}

// onlyMasterHeal is heal_start of a single-master cluster's master: the
// driver must refuse it before changing anything (its cluster would
// lose its control plane and etcd) and point at an entire heal.
func (t *tour) onlyMasterHeal(d *deployed) step {
	return step{d.label, lcm.HealStart, "heal the only master's VNFC: refused, an entire heal is the way", func(ctx context.Context) ([]string, []string, error) {
		inst := d.vnf.Instance()
		vm := d.vnf.HostsWithRole(lcm.RoleMaster)[0]
		heal := lcm.HealVnfRequest{VnfcInstanceID: []string{vnfcOf(inst, vm.ServerID)}}
		res, err := t.invoke(ctx, t.clusterDriver, lcm.HealStart, &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg})
		hosts, changed := hookHosts(res)
		switch {
		case err == nil:
			return hosts, changed, errors.New("heal_start accepted the heal of the only master")
		case len(changed) > 0:
			return hosts, changed, fmt.Errorf("heal_start refused the heal of the only master after changing %v: %w", changed, err)
		}
		t.printf("  refused: %v\n", err)
		return hosts, nil, nil
	}}
}

// withSampleStorage returns req with the storage_server and
// pv_registration_params of the pv sample (made to work here, as
// sim.Cloud.Request makes it) added to its k8s_cluster_installation_param.
func (t *tour) withSampleStorage(req *lcm.InstantiateVnfRequest) (*lcm.InstantiateVnfRequest, error) {
	b, err := t.cloud.Request(samples.InstantiatePVCluster)
	if err != nil {
		return nil, err
	}
	var pv struct {
		AdditionalParams struct {
			K8s struct {
				StorageServer json.RawMessage `json:"storage_server"`
				PVs           json.RawMessage `json:"pv_registration_params"`
			} `json:"k8s_cluster_installation_param"`
		} `json:"additionalParams"`
	}
	if err := json.Unmarshal(b, &pv); err != nil {
		return nil, fmt.Errorf("sample %s: %w", samples.InstantiatePVCluster, err)
	}
	params, err := samples.Patch(req.AdditionalParams, map[string]any{
		k8s + "storage_server":         pv.AdditionalParams.K8s.StorageServer,
		k8s + "pv_registration_params": pv.AdditionalParams.K8s.PVs,
	})
	if err != nil {
		return nil, err
	}
	out := *req
	out.AdditionalParams = params
	return &out, nil
}

func (t *tour) resolveHeal(ctx context.Context, d *deployed, inst *lcm.VnfInstance, req lcm.HealVnfRequest) (heat.HealPlan, error) {
	nodes, err := t.heat.Nodes(ctx, d.vnf.StackID(), d.vms.Groups...)
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

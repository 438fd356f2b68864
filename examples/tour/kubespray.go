package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// planKubespray builds the k8s-mgmtdriver-kubespray spec's cluster (three
// masters, two workers, the external load balancer) with the kubespray
// driver from the spec's sample request, on the simulated Ansible server,
// then scales it out by one worker and in by one, heals a worker and the
// entire VNF, and terminates it, printing the nodes and the load
// balancer's backends after each operation.
func planKubespray(t *tour, s scenario) ([]step, error) {
	req, source, err := t.clusterRequest(samples.InstantiateKubespray)
	if err != nil {
		return nil, err
	}
	// The Ansible server is not in Heat: the request names it by address,
	// which no request can know in the simulated cloud, where the server
	// has a loopback address of its own.
	addr, err := t.cloud.AnsibleServerAddress()
	if err != nil {
		return nil, err
	}
	if t.in.clusterRequest != nil { // a sample's placeholder already is
		if r, ok := withAnsibleServer(req, addr); ok {
			t.sayf("  %s: ansible.ip_address, the sample's placeholder 0.0.0.0, is the simulated Ansible server's, %s\n", source, addr)
			req = r
		}
	}
	d, err := t.planCluster("kubespray", req, source, sim.ClusterShape{Masters: 3, Workers: 2, MinWorkers: 1}, s.name, needAnsible, needLB, needWorkerAspect)
	if err != nil {
		return nil, err
	}
	d.driver = &drivers.KubesprayDriver{Cluster: kubespray.Hooks{Plumbing: t.plumbing}}
	workers, err := groupWithRole(d.vms.Groups, lcm.RoleWorker)
	if err != nil {
		return nil, inputError(source, err)
	}
	ansible := d.cluster.Ansible
	var (
		before  *lcm.VnfInstance
		victims []lcm.Node
		inst    *lcm.VnfInstance
		heal    lcm.HealVnfRequest
	)
	instantiate := func() any {
		return &lcm.InstantiateOp{Instance: d.vnf.Instance(), Request: d.request, Package: t.in.pkg}
	}
	table, backends := t.nodeTable(d, clusterSize(d)), t.lbBackends(d)
	out := lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: workers.AspectID, NumberOfSteps: 1}
	in := lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: workers.AspectID, NumberOfSteps: 1}
	steps := []step{
		{d.label, hookOperator, "the Ansible server kubespray runs on, outside the VNF: " + addr, func(context.Context) ([]string, []string, error) {
			a, err := t.cloud.AddAnsibleServer(sim.Login{User: ansible.Username, Password: ansible.Password.Reveal()})
			if err != nil {
				return nil, nil, err
			}
			t.outside[a] = d.label
			return []string{a.Resource}, []string{a.Resource}, nil
		}},
		t.create(d),
		t.instantiate(d),
		{d.label, lcm.InstantiateEnd, "check the Ansible server (ansible.ip_address)", func(ctx context.Context) ([]string, []string, error) {
			node := ansible.Node()
			t.printTopology("  Ansible server, outside Heat:", []lcm.Node{node})
			hosts, err := t.checkNodes(ctx, []lcm.Node{node}, d.vms.Logins)
			return hosts, nil, err
		}},
		t.clusterHook(d, lcm.InstantiateEnd, "the inventory from Heat, cluster.yml on the Ansible server, HAProxy on the load balancer, the VIM through it", false, instantiate),
		table, backends, t.vimToken(d, false),
		t.clusterHook(d, lcm.InstantiateEnd, "the same again: nothing to change", true, instantiate),
		{d.label, hookVIM, fmt.Sprintf("SCALE_OUT %s by 1: Heat adds a member", workers.AspectID), func(context.Context) ([]string, []string, error) {
			before = d.vnf.Instance()
			added, err := d.vnf.ScaleOut(workers.AspectID, 1)
			if err != nil {
				return nil, nil, fmt.Errorf("scaling out through Heat: %w", err)
			}
			return []string{added[0].Resource}, []string{added[0].Resource}, nil
		}},
		t.clusterHook(d, lcm.ScaleEnd, "facts.yml, scale.yml --limit the new worker, its load balancer backend", false, func() any {
			return &lcm.ScaleOp{Instance: before, Request: &out, Package: t.in.pkg}
		}),
		table, backends,
		{d.label, hookVIM, fmt.Sprintf("SCALE_IN %s by 1: the member Heat will remove", workers.AspectID), func(ctx context.Context) ([]string, []string, error) {
			var err error
			if victims, err = t.heat.ScaleInTargets(ctx, d.vnf.StackID(), workers, in); err != nil {
				return nil, nil, err
			}
			t.printTopology("  scale-in targets:", victims)
			return names(victims), nil, nil
		}},
		t.clusterHook(d, lcm.ScaleStart, "its load balancer backend removed, then remove-node.yml -e node=NAME", false, func() any {
			return &lcm.ScaleOp{Instance: d.vnf.Instance(), Request: &in, Package: t.in.pkg}
		}),
		{d.label, hookVIM, fmt.Sprintf("SCALE_IN %s: Heat removes the member", workers.AspectID), func(context.Context) ([]string, []string, error) {
			if _, err := d.vnf.ScaleIn(workers.AspectID, names(victims)...); err != nil {
				return nil, nil, fmt.Errorf("scaling in through Heat: %w", err)
			}
			return names(victims), names(victims), nil
		}},
		table, backends,
		{d.label, hookVIM, "heal a worker's VNFC: resolve it", func(ctx context.Context) ([]string, []string, error) {
			inst = d.vnf.Instance()
			w := d.vnf.HostsWithRole(lcm.RoleWorker)[0]
			heal = lcm.HealVnfRequest{VnfcInstanceID: []string{vnfcOf(inst, w.ServerID)}}
			plan, err := t.resolveHeal(ctx, d, inst, heal)
			return names(plan.Nodes), nil, err
		}},
		t.clusterHook(d, lcm.HealStart, "the worker out of the load balancer, remove-node.yml", false, func() any {
			return &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg}
		}),
		{d.label, hookVIM, "heal the worker: Heat replaces its server, with new addresses", func(context.Context) ([]string, []string, error) {
			w := d.vnf.HostsWithRole(lcm.RoleWorker)[0]
			h, err := d.vnf.Heal(w.ServerID, sim.HealOptions{NewAddresses: true})
			if err != nil {
				return nil, nil, fmt.Errorf("healing through Heat: %w", err)
			}
			inst = d.vnf.Instance()
			return []string{h.Resource}, []string{h.Resource}, nil
		}},
		t.clusterHook(d, lcm.HealEnd, "facts.yml, scale.yml for the new VM, its backend", false, func() any {
			return &lcm.HealOp{Instance: inst, Request: &heal, Package: t.in.pkg}
		}),
		table, backends,
	}
	steps = append(steps, t.entireHeal(d, "heal the entire VNF: revoke the VIM credentials",
		"cluster.yml on the new VMs from the stored parameters, the load balancer, the VIM")...)
	steps = append(steps,
		table, backends, t.vimToken(d, false),
		t.clusterHook(d, lcm.TerminateStart, "revoke the VIM credentials", false, func() any {
			return &lcm.TerminateOp{Instance: d.vnf.Instance(), Package: t.in.pkg}
		}),
		t.vimToken(d, true),
		t.clusterHook(d, lcm.TerminateEnd, "remove this VNF's inventory from the Ansible server, forget the VIM", false, func() any {
			return &lcm.TerminateOp{Instance: d.vnf.Instance(), Package: t.in.pkg}
		}),
	)
	return steps, nil
}

// lbBackends prints the load balancer's HAProxy backends and checks
// them against the cluster: the API backend holds the masters, the
// NodePort backend every node, each by its node name.
func (t *tour) lbBackends(d *deployed) step {
	return step{d.label, hookCheck, "the load balancer's HAProxy backends: the masters' API servers, every node's NodePorts", func(context.Context) ([]string, []string, error) {
		vms := d.vnf.HostsWithRole(lcm.RoleLoadBalancer)
		if len(vms) != 1 {
			return nil, nil, fmt.Errorf("%d load balancer VMs", len(vms))
		}
		cfg, err := vms[0].FS().ReadFile(lb.ConfigFile)
		if err != nil {
			return nil, nil, err
		}
		got := lb.Backends(cfg)
		want := map[string][]string{}
		for _, h := range d.vnf.Hosts() {
			name := nodeName(h)
			switch h.Role {
			case lcm.RoleMaster:
				want[lb.APIBackend] = append(want[lb.APIBackend], name)
				want[lb.NodePortBackend] = append(want[lb.NodePortBackend], name)
			case lcm.RoleWorker:
				want[lb.NodePortBackend] = append(want[lb.NodePortBackend], name)
			}
		}
		var errs []string
		for _, b := range []string{lb.APIBackend, lb.NodePortBackend} {
			var have []string
			for _, s := range got[b] {
				have = append(have, s.Name)
			}
			slices.Sort(have)
			slices.Sort(want[b])
			t.printf("  %-20s %s\n", b, strings.Join(have, " "))
			if !slices.Equal(have, want[b]) {
				errs = append(errs, fmt.Sprintf("%s holds %v, want %v", b, have, want[b]))
			}
		}
		if len(errs) > 0 {
			return []string{vms[0].Resource}, nil, fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return []string{vms[0].Resource}, nil, nil
	}}
}

// nodeName is a cluster VM's Kubernetes node name.
func nodeName(h *sim.Host) string { return kubeapi.NodeName(h.Role, h.NICAddress) }

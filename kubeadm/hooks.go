package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// DefaultReadyTimeout bounds the wait for a node that joined to be
// registered and Ready, when [Hooks.ReadyTimeout] is 0.
const DefaultReadyTimeout = 5 * time.Minute

// The names of the steps the hooks run, as they appear in
// [lcm.HookResult.Steps].
const (
	StepPrepare          = "prepare-node"
	StepContainerd       = "install-containerd"
	StepKubernetes       = "install-kubernetes"
	StepHosts            = "cluster-hosts"
	StepHAProxy          = "configure-haproxy"
	StepKeepalived       = "configure-keepalived"
	StepInit             = "kubeadm-init"
	StepCNI              = "apply-cni"
	StepJoinControlPlane = "join-control-plane"
	StepJoinWorker       = "join-worker"
	StepDrain            = "drain-node"
	StepDeleteNode       = "delete-node"
	StepRemoveEtcdMember = "remove-etcd-member"
	StepReset            = "kubeadm-reset"
	StepVIM              = "vim-credentials"
	StepRevokeVIM        = "revoke-vim-credentials"
	StepInstallScript    = "install-script"
)

// Extension is another package's work in the cluster's hooks: what the
// registry package (trust of private registries) and the nfs package (the
// NFS client) add to every node that joins. A driver passes its
// extensions in [Op.Extensions]; the hooks run them in order on every
// node that joins the cluster (at instantiate_end, scale_end and
// heal_end), after the container runtime is installed and before the
// node joins, so that the node can pull from a private registry from its
// first pod on.
type Extension struct {
	// Name names the extension's step in the hook's result, such as
	// "registry-trust".
	Name string
	// NoProxy are host names, addresses or CIDRs the nodes must reach
	// without the proxy (a private registry's host); they join the
	// no_proxy the nodes' runtime and kubelet use.
	NoProxy []string
	// Node runs on one node, over its connection. It must be idempotent,
	// as every step is. Nil: the extension only adds NoProxy.
	Node func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error)
}

// Hooks builds, scales, heals and tears down a kubeadm cluster on a VNF's
// VMs: the work of the Kubernetes cluster VNF's management driver, hook by
// hook. A driver keeps one Hooks and calls its methods from its own hook
// methods with the decoded parameters ([Op]); see
// examples/drivers.ClusterDriver. Every method is idempotent: run again
// after a failure half-way, it converges, and run twice, the second run
// changes nothing. It is safe for concurrent use.
type Hooks struct {
	// Plumbing reaches Heat and the nodes; its SSH field is required.
	Plumbing plumbing.Config
	// Limit bounds how many nodes a step works on at once;
	// lcm.DefaultLimit when 0. Masters join one at a time whatever it is.
	Limit int
	// ReadyTimeout bounds the wait for a node to be registered and Ready
	// after it joins; [DefaultReadyTimeout] when 0.
	ReadyTimeout time.Duration
	// ForceDrain removes a node whose drain cannot finish (pods a
	// PodDisruptionBudget protects, pods no controller manages): it is
	// drained with --force (unmanaged pods deleted) and, when the drain
	// still fails, deleted anyway, the failure reported in the step's
	// result. Off: such a drain fails the hook with a [*DrainError]
	// naming the pods, and the node stays in the cluster, cordoned.
	ForceDrain bool
	// InstallScript opts in to the reference's compatibility mode: when
	// script_path is set, the package's install script
	// (install_k8s_cluster.sh) installs the runtime and Kubernetes and
	// runs kubeadm on each node ([RunInstallScript], with the
	// reference's flags: the first master's run initialises, the others
	// join with a token, CA hash and certificate key mgmtkit creates),
	// after [PrepareNode]; the extensions run once the node has joined,
	// as the reference configures registries after its script; the CNI
	// manifest, optional then, is applied when given (the reference's
	// script applies its own). Off: mgmtkit's steps build the nodes, and
	// a script_path is reported as not used in the hook's result.
	InstallScript bool
}

// Op is what one hook acts on.
type Op struct {
	// Instance is the VNF instance as the VNFM stores it. For scale_end,
	// pass it as it was before the scale (Tacker's v1 API does): the new
	// workers are those its vnfcResourceInfo does not list.
	Instance *lcm.VnfInstance
	// Package is the VNF package, which holds the CNI manifest and the
	// install script.
	Package *lcm.Package
	// Params are the cluster's parameters: the request's at
	// instantiate_end, the stored ones (with a request's credential
	// overrides applied, see [CredentialOverrides]) afterwards.
	Params ClusterParams
	// Extensions run on every node that joins; see [Extension].
	Extensions []Extension
}

// Instantiate builds the cluster on every node Heat reports
// (instantiate_end, and heal_end of the entire VNF): each node prepared
// (host name, swap, kernel, the cluster's /etc/hosts block, the proxy),
// containerd installed, the extensions run, the Kubernetes packages
// installed; HAProxy and keepalived on the masters when there are
// several; kubeadm init on the first master; the CNI applied; the other
// masters joined one at a time as control planes, the workers in
// parallel; each node waited for until Ready; and the VIM credentials
// created, returned in the result's AddVimConnections.
func (c *Hooks) Instantiate(ctx context.Context, hook lcm.Hook, op Op) (*lcm.HookResult, error) {
	cni, err := readCNI(op, c.compat(op.Params))
	if err != nil {
		return nil, err // nothing has run
	}
	return c.do(ctx, hook, op, func(ctx context.Context, r *run) error { return r.instantiate(ctx, cni) })
}

// instantiate is [Hooks.Instantiate]'s work, cni the pod network's
// manifest (nil: none to apply).
func (r *run) instantiate(ctx context.Context, cni []byte) error {
	if err := checkPodCapacity(r.op.Params, len(r.topo.Nodes())); err != nil {
		return err // nothing has run
	}
	if err := r.build(ctx, r.topo.Nodes()); err != nil {
		return err
	}
	if r.topo.HA() {
		if err := r.loadBalancers(ctx, r.topo.Masters, r.topo); err != nil {
			return err
		}
	}
	k, cp, err := r.initialize(ctx)
	if err != nil {
		return err
	}
	if cni != nil {
		if err := r.onControlPlane(ctx, StepCNI, cp, func(ctx context.Context) (lcm.Result, error) {
			return ApplyCNI(ctx, k, cni)
		}); err != nil {
			return err
		}
	}
	if err := r.join(ctx, k, cp, r.topo.Nodes()); err != nil {
		return err
	}
	if r.compat(r.op.Params) {
		if err := r.extensions(ctx, r.topo.Nodes()); err != nil {
			return err
		}
	}
	return r.createVIM(ctx, k, cp)
}

// Revoke deletes the VIM credentials from the cluster, when a master still
// answers: terminate_start, and heal_start of the entire VNF (which also
// reports the VIM connection for the VNFM to remove, see
// [Hooks.HealStart]). A cluster none of whose masters answers has
// nothing to revoke (the credentials die with it); that is reported in
// the result, not an error.
func (c *Hooks) Revoke(ctx context.Context, hook lcm.Hook, op Op) (*lcm.HookResult, error) {
	return c.do(ctx, hook, op, func(ctx context.Context, r *run) error {
		k, cp, err := kubectlOn(ctx, r.s, r.topo.Masters)
		if err != nil {
			r.res.Add(StepRevokeVIM, lcm.Results{{Host: r.topo.Masters[0].Resource, Result: lcm.Result{Detail: "no master answers: nothing to revoke"}}})
			return nil
		}
		return r.onControlPlane(ctx, StepRevokeVIM, cp, func(ctx context.Context) (lcm.Result, error) {
			return DeleteVIMCredentials(ctx, k, r.vimOptions())
		})
	})
}

// Forget reports the VIM connection for the VNFM to remove, without
// reaching the cluster: terminate_end, after the VIM deleted the VMs.
func (c *Hooks) Forget(hook lcm.Hook, op Op) *lcm.HookResult {
	id := op.Params.VimNameFor(instanceID(op.Instance))
	return &lcm.HookResult{Hook: hook, RemoveVimConnections: []string{id}}
}

// ScaleIn removes the workers a SCALE_IN of worker_node's aspect will
// delete (scale_start): the members Heat removes first, each cordoned and
// drained (one at a time, so that no node receives pods it is about to
// lose too), reset when still reachable, deleted from the cluster, and
// dropped from the other nodes' /etc/hosts block. Another aspect, or a
// SCALE_OUT, is not this hook's business: an empty result.
func (c *Hooks) ScaleIn(ctx context.Context, hook lcm.Hook, op Op, req lcm.ScaleVnfRequest) (*lcm.HookResult, error) {
	if !c.scales(op, req, lcm.ScaleIn) {
		return &lcm.HookResult{Hook: hook}, nil
	}
	return c.do(ctx, hook, op, func(ctx context.Context, r *run) error {
		targets, err := r.s.Heat().ScaleInTargets(ctx, r.s.Stack(), op.Params.WorkerNode.Group(lcm.RoleWorker), req)
		if err != nil {
			return err
		}
		return r.removeWorkers(ctx, targets)
	})
}

// ScaleOut joins the workers a SCALE_OUT of worker_node's aspect created
// (scale_end): those op.Instance, as it was before the scale, does not
// list. Each is built and joined as at instantiation (extensions
// included), and every node's /etc/hosts block names it.
func (c *Hooks) ScaleOut(ctx context.Context, hook lcm.Hook, op Op, req lcm.ScaleVnfRequest) (*lcm.HookResult, error) {
	if !c.scales(op, req, lcm.ScaleOut) {
		return &lcm.HookResult{Hook: hook}, nil
	}
	return c.do(ctx, hook, op, func(ctx context.Context, r *run) error {
		if err := checkPodCapacity(op.Params, len(r.topo.Nodes())); err != nil {
			return err // nothing has run
		}
		return r.addNodes(ctx, heat.ScaleOutTargets(KnownNodes(op.Instance), r.topo.Workers))
	})
}

// scales reports whether req is a scale of type t of worker_node's aspect.
func (c *Hooks) scales(op Op, req lcm.ScaleVnfRequest, t lcm.ScaleType) bool {
	w := op.Params.WorkerNode
	return req.Type == t && w != nil && w.AspectID != "" && req.AspectID == w.AspectID
}

// HealStart removes the nodes a heal replaces (heal_start): a worker is
// drained, reset and deleted as at scale-in; a master (the cluster must
// keep at least one) is first taken out of every other master's HAProxy
// backends, then drained, reset (which removes its etcd member when the
// VM answers), deleted, and its etcd member removed if still there
// (found by name, removed by ID). The entire VNF (no vnfcInstanceId):
// [Hooks.Revoke], and the VIM connection reported for the VNFM to remove
// (heal_end adds the new cluster's). VNFCs that are not Kubernetes nodes (the storage server)
// are ignored.
func (c *Hooks) HealStart(ctx context.Context, hook lcm.Hook, op Op, req lcm.HealVnfRequest) (*lcm.HookResult, error) {
	if req.Entire() {
		res, err := c.Revoke(ctx, hook, op)
		if res != nil {
			res.RemoveVimConnections = []string{op.Params.VimNameFor(instanceID(op.Instance))}
		}
		return res, err
	}
	return c.do(ctx, hook, op, func(ctx context.Context, r *run) error {
		plan, err := r.healTargets(req)
		if err != nil || len(plan) == 0 {
			return err
		}
		if masters := lcm.NodesWithRole(plan, lcm.RoleMaster); len(masters) > 0 {
			if err := r.removeMasters(ctx, masters); err != nil {
				return err
			}
		}
		return r.removeWorkers(ctx, lcm.NodesWithRole(plan, lcm.RoleWorker))
	})
}

// HealEnd rebuilds the nodes a heal replaced (heal_end), at the addresses
// Heat reports now: a worker joins as at scale-out; a master joins as a
// control plane, gets HAProxy and keepalived, and goes back into every
// master's HAProxy backends. The entire VNF: [Hooks.Instantiate] with the
// stored parameters.
func (c *Hooks) HealEnd(ctx context.Context, hook lcm.Hook, op Op, req lcm.HealVnfRequest) (*lcm.HookResult, error) {
	if req.Entire() {
		return c.Instantiate(ctx, hook, op)
	}
	return c.do(ctx, hook, op, func(ctx context.Context, r *run) error {
		plan, err := r.healTargets(req)
		if err != nil || len(plan) == 0 {
			return err
		}
		return r.addNodes(ctx, plan)
	})
}

// KnownNodes returns the servers a VNF instance's vnfcResourceInfo lists,
// as nodes that [heat.ScaleOutTargets] can compare with the nodes Heat
// reports.
func KnownNodes(inst *lcm.VnfInstance) []lcm.Node {
	if inst == nil || inst.InstantiatedVnfInfo == nil {
		return nil
	}
	var nodes []lcm.Node
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		nodes = append(nodes, lcm.Node{Resource: v.ID, ServerID: v.ComputeResource.ResourceID})
	}
	return nodes
}

// run is one hook's work: its session, the topology and the result.
type run struct {
	*Hooks
	op   Op
	s    *plumbing.Session
	topo Topology
	res  *lcm.HookResult
}

// start opens the hook's session and resolves the topology.
func (c *Hooks) start(ctx context.Context, hook lcm.Hook, op Op) (*run, context.Context, error) {
	ctx = lcm.WithHook(ctx, hook)
	s, err := c.Plumbing.Open(ctx, op.Instance, op.Params.Credentials())
	if err != nil {
		return nil, ctx, err
	}
	topo, err := Resolve(ctx, s, op.Params)
	if err != nil {
		return nil, ctx, errors.Join(err, s.Close())
	}
	return &run{Hooks: c, op: op, s: s, topo: topo, res: &lcm.HookResult{Hook: hook}}, ctx, nil
}

// close ends the session.
func (r *run) close() { _ = r.s.Close() }

// do runs one hook's work in its own session and returns what it did.
func (c *Hooks) do(ctx context.Context, hook lcm.Hook, op Op, work func(ctx context.Context, r *run) error) (*lcm.HookResult, error) {
	r, ctx, err := c.start(ctx, hook, op)
	if err != nil {
		return nil, err
	}
	defer r.close()
	return r.res, work(ctx, r)
}

// fanout returns the options of a parallel step.
func (r *run) fanout(extra ...lcm.Option) []lcm.Option {
	if r.Limit > 0 {
		return append([]lcm.Option{lcm.Limit(r.Limit)}, extra...)
	}
	return extra
}

// onNodes runs a step on nodes over their connections and records it.
func (r *run) onNodes(ctx context.Context, step string, nodes []lcm.Node, fn func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error), opts ...lcm.Option) error {
	if len(nodes) == 0 {
		return nil
	}
	rs, err := r.s.OnNodes(ctx, step, nodes, fn, r.fanout(opts...)...)
	r.res.Add(step, rs)
	return err
}

// each runs a step for nodes that does not connect to them (it works
// through the control plane's kubectl), and records it.
func (r *run) each(ctx context.Context, step string, nodes []lcm.Node, fn func(ctx context.Context, n lcm.Node) (lcm.Result, error), opts ...lcm.Option) error {
	if len(nodes) == 0 {
		return nil
	}
	rs, err := lcm.OnHosts(ctx, step, nodes, fn, r.fanout(opts...)...)
	r.res.Add(step, rs)
	return err
}

// onControlPlane runs a cluster-wide step, recorded against the master
// whose kubectl it uses.
func (r *run) onControlPlane(ctx context.Context, step string, cp lcm.Node, fn func(ctx context.Context) (lcm.Result, error)) error {
	return r.each(ctx, step, []lcm.Node{cp}, func(ctx context.Context, _ lcm.Node) (lcm.Result, error) { return fn(ctx) })
}

// proxy returns the nodes' proxy settings, nil without a proxy.
func (r *run) proxy() *ProxySettings {
	var direct []string
	for _, e := range r.op.Extensions {
		direct = append(direct, e.NoProxy...)
	}
	var masters []string
	for _, m := range r.topo.Masters {
		masters = append(masters, m.NICAddress)
	}
	endpoint, _, _ := net.SplitHostPort(r.topo.Endpoint())
	return ProxyFor(r.op.Params, masters, endpoint, direct)
}

// build makes nodes ready to join: prepared, containerd, the extensions,
// the Kubernetes packages; in compatibility mode only prepared (the
// script and then the extensions do the rest as the nodes join).
func (r *run) build(ctx context.Context, nodes []lcm.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	if r.op.Params.ScriptPath != "" && !r.InstallScript {
		var rs lcm.Results
		for _, n := range nodes {
			rs = append(rs, lcm.HostResult{Host: n.Resource, Result: lcm.Result{Detail: "script_path " + r.op.Params.ScriptPath + " not used: mgmtkit's steps build the node"}})
		}
		r.res.Add(StepInstallScript, rs)
	}
	proxy := r.proxy()
	hosts := r.topo.HostsEntries()
	version := r.op.Params.KubernetesVersion
	if err := r.onNodes(ctx, StepPrepare, nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		return PrepareNode(ctx, h, NodeOptions{Name: NodeName(n.Role, n.NICAddress), Hosts: hosts, Proxy: proxy})
	}); err != nil || r.compat(r.op.Params) {
		return err
	}
	if err := r.onNodes(ctx, StepContainerd, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return InstallContainerd(ctx, h, RuntimeOptions{Version: version, Proxy: proxy})
	}); err != nil {
		return err
	}
	if err := r.extensions(ctx, nodes); err != nil {
		return err
	}
	return r.onNodes(ctx, StepKubernetes, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return InstallKubernetes(ctx, h, PackagesOptions{Version: version, Proxy: proxy})
	})
}

// extensions runs the extensions on nodes, in order.
func (r *run) extensions(ctx context.Context, nodes []lcm.Node) error {
	for _, e := range r.op.Extensions {
		if e.Node == nil {
			continue
		}
		if err := r.onNodes(ctx, e.Name, nodes, e.Node); err != nil {
			return err
		}
	}
	return nil
}

// compat reports whether the package's install script builds the nodes
// of a cluster with parameters p (see [Hooks.InstallScript]).
func (c *Hooks) compat(p ClusterParams) bool { return c.InstallScript && p.ScriptPath != "" }

// script returns the install script's options for node n: a master's run
// (every master, the first first, and the cluster's networks) or a
// worker's, joining with ji unless it is the first master's run.
func (r *run) script(n lcm.Node, ji *JoinInfo) ScriptOptions {
	p := r.op.Params
	endpoint, _, _ := net.SplitHostPort(r.topo.Endpoint())
	o := ScriptOptions{Script: p.ScriptPath, ClusterIP: endpoint, HA: r.topo.HA(), Proxy: r.proxy()}
	if n.Role == lcm.RoleMaster {
		for _, m := range r.topo.Masters {
			o.Masters = append(o.Masters, m.NICAddress)
		}
		o.PodCIDR, o.ServiceCIDR = p.MasterNode.PodCIDR, p.MasterNode.ClusterCIDR
	} else {
		o.Worker = n.NICAddress
	}
	if ji != nil {
		o.Token, o.CACertHash = ji.Token, ji.CACertHash
		if n.Role == lcm.RoleMaster {
			o.CertificateKey = ji.CertificateKey
		}
	}
	return o
}

// hosts makes the /etc/hosts block of nodes name exactly t's nodes.
func (r *run) hosts(ctx context.Context, nodes []lcm.Node, t Topology) error {
	entries := t.HostsEntries()
	return r.onNodes(ctx, StepHosts, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return UpdateHosts(ctx, h, entries)
	})
}

// loadBalancers configures HAProxy and keepalived on masters, with t's
// masters as the backends.
func (r *run) loadBalancers(ctx context.Context, masters []lcm.Node, t Topology) error {
	if err := r.onNodes(ctx, StepHAProxy, masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		return ConfigureHAProxy(ctx, h, t.LoadBalancer(n))
	}); err != nil {
		return err
	}
	return r.onNodes(ctx, StepKeepalived, masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		return ConfigureKeepalived(ctx, h, t.LoadBalancer(n))
	})
}

// initialize returns the control plane: a master whose API answers, or
// else the first master after kubeadm init.
func (r *run) initialize(ctx context.Context) (Kubectl, lcm.Node, error) {
	if k, cp, err := kubectlOn(ctx, r.s, r.topo.Masters); err == nil {
		return k, cp, nil
	}
	first := r.topo.Masters[0]
	p := r.op.Params
	var sans []string
	if r.topo.HA() {
		sans = append(sans, r.topo.VIP.String())
	}
	if r.topo.FloatingIP != "" {
		sans = append(sans, r.topo.FloatingIP)
	}
	var k Kubectl
	err := r.onNodes(ctx, StepInit, []lcm.Node{first}, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		k = Kubectl{Host: h}
		if r.compat(r.op.Params) {
			return RunInstallScript(ctx, h, r.op.Package, r.script(n, nil))
		}
		return InitControlPlane(ctx, h, InitOptions{
			NodeName:         NodeName(n.Role, n.NICAddress),
			AdvertiseAddress: n.NICAddress,
			Endpoint:         r.topo.Endpoint(),
			PodCIDR:          p.MasterNode.PodCIDR,
			ServiceCIDR:      p.MasterNode.ClusterCIDR,
			Version:          p.KubernetesVersion,
			CertSANs:         sans,
		})
	})
	return k, first, err
}

// join joins those of nodes that are not members yet: the masters as
// control planes one at a time (etcd grows one member at a time, as
// kubeadm requires), then the workers in parallel; every node of nodes is
// waited for until Ready. A join token (and, for masters, an upload of
// the control-plane certificates) is created only when a node needs it.
func (r *run) join(ctx context.Context, k Kubectl, cp lcm.Node, nodes []lcm.Node) error {
	registered, err := k.Nodes(ctx)
	if err != nil {
		return err
	}
	member := func(n lcm.Node) bool {
		name := NodeName(n.Role, n.NICAddress)
		return slices.ContainsFunc(registered, func(o corev1.Node) bool { return o.Name == name })
	}
	cpHost, err := r.s.Host(ctx, cp)
	if err != nil {
		return err
	}
	endpoint := r.topo.Endpoint()
	wait := r.ReadyTimeout
	if wait <= 0 {
		wait = DefaultReadyTimeout
	}
	// info returns join information, created at most once per kind.
	infos := map[bool]*JoinInfo{}
	info := func(ctx context.Context, controlPlane bool) (JoinInfo, error) {
		if i := infos[controlPlane]; i != nil {
			return *i, nil
		}
		i, err := NewJoinInfo(ctx, cpHost, cp.NICAddress, endpoint, controlPlane)
		if err != nil {
			return JoinInfo{}, err
		}
		infos[controlPlane] = &i
		return i, nil
	}
	joinOne := func(controlPlane bool) func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		return func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			name := NodeName(n.Role, n.NICAddress)
			res := lcm.Unchanged
			if !member(n) {
				ji, err := info(ctx, controlPlane)
				if err != nil {
					return lcm.Unchanged, err
				}
				if r.compat(r.op.Params) {
					res, err = RunInstallScript(ctx, h, r.op.Package, r.script(n, &ji))
				} else {
					res, err = JoinNode(ctx, h, JoinOptions{NodeName: name, AdvertiseAddress: n.NICAddress, ControlPlane: controlPlane, Info: ji})
				}
				if err != nil {
					return res, err
				}
			}
			return res, WaitNodeReady(ctx, k, name, wait)
		}
	}
	if err := r.onNodes(ctx, StepJoinControlPlane, lcm.NodesWithRole(nodes, lcm.RoleMaster), joinOne(true), lcm.Limit(1)); err != nil {
		return err
	}
	workers := lcm.NodesWithRole(nodes, lcm.RoleWorker)
	if slices.ContainsFunc(workers, func(n lcm.Node) bool { return !member(n) }) {
		// One token for all workers, created before they fan out.
		if _, err := info(ctx, false); err != nil {
			return err
		}
	}
	// Best effort: a worker that fails to join does not cut the others'
	// joins short, which would leave them half-joined.
	return r.onNodes(ctx, StepJoinWorker, workers, joinOne(false), lcm.WithPolicy(lcm.BestEffort))
}

// addNodes builds and joins nodes that replace or add to the cluster
// (scale_end, heal_end), then updates every node's /etc/hosts block and,
// when masters joined, every master's HAProxy backends.
func (r *run) addNodes(ctx context.Context, nodes []lcm.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	others := r.topo.Without(nodes)
	k, cp, err := kubectlOn(ctx, r.s, others.Masters)
	if err != nil {
		return err
	}
	if err := r.build(ctx, nodes); err != nil {
		return err
	}
	masters := lcm.NodesWithRole(nodes, lcm.RoleMaster)
	if r.topo.HA() && len(masters) > 0 {
		if err := r.loadBalancers(ctx, masters, r.topo); err != nil {
			return err
		}
	}
	if err := r.join(ctx, k, cp, nodes); err != nil {
		return err
	}
	if r.compat(r.op.Params) {
		if err := r.extensions(ctx, nodes); err != nil {
			return err
		}
	}
	if err := r.hosts(ctx, others.Nodes(), r.topo); err != nil {
		return err
	}
	if r.topo.HA() && len(masters) > 0 {
		return r.onNodes(ctx, StepHAProxy, others.Masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			return ConfigureHAProxy(ctx, h, r.topo.LoadBalancer(n))
		})
	}
	return nil
}

// removeWorkers drains, resets and deletes workers, then drops them from
// the other nodes' /etc/hosts block.
func (r *run) removeWorkers(ctx context.Context, targets []lcm.Node) error {
	if len(targets) == 0 {
		return nil
	}
	rest := r.topo.Without(targets)
	k, _, err := kubectlOn(ctx, r.s, rest.Masters)
	if err != nil {
		return err
	}
	if err := r.drain(ctx, k, targets); err != nil {
		return err
	}
	if err := r.remove(ctx, k, targets); err != nil {
		return err
	}
	return r.hosts(ctx, rest.Nodes(), rest)
}

// removeMasters takes masters out of the cluster for a heal: out of the
// other masters' HAProxy backends, drained, reset, deleted, out of etcd;
// then out of the other nodes' /etc/hosts block.
func (r *run) removeMasters(ctx context.Context, targets []lcm.Node) error {
	rest := r.topo.Without(targets)
	if len(rest.Masters) == 0 {
		return fmt.Errorf("kubeadm: heal of master %s: the cluster has no other master to keep its control plane and etcd: heal the entire VNF instead", targets[0].Resource)
	}
	k, cp, err := kubectlOn(ctx, r.s, rest.Masters)
	if err != nil {
		return err
	}
	if rest.HA() {
		if err := r.onNodes(ctx, StepHAProxy, rest.Masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			return ConfigureHAProxy(ctx, h, rest.LoadBalancer(n))
		}); err != nil {
			return err
		}
	}
	if err := r.drain(ctx, k, targets); err != nil {
		return err
	}
	if err := r.remove(ctx, k, targets); err != nil {
		return err
	}
	// kubeadm reset removed the member of a master it reached; the member
	// of one it could not is removed here, by name.
	via := NodeName(cp.Role, cp.NICAddress)
	if err := r.each(ctx, StepRemoveEtcdMember, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		return RemoveEtcdMember(ctx, k, via, NodeName(n.Role, n.NICAddress))
	}, lcm.Limit(1)); err != nil {
		return err
	}
	return r.hosts(ctx, rest.Nodes(), rest)
}

// drain drains targets one at a time. A drain that cannot finish stops
// the hook here, before the node is reset or deleted, unless ForceDrain. A node whose kubelet no longer reports (Ready
// Unknown: the VM a heal replaces is often dead) is not drained: no pod
// of it could confirm its end, so the drain could only time out. It is
// deleted, and the pod garbage collector removes its pods, which their
// controllers re-create elsewhere (kubernetes/kubernetes
// pkg/controller/podgc: pods bound to a node that no longer exists).
func (r *run) drain(ctx context.Context, k Kubectl, targets []lcm.Node) error {
	opts := DrainOptions{Timeout: r.op.Params.Drain(), Force: r.ForceDrain}
	return r.each(ctx, StepDrain, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		name := NodeName(n.Role, n.NICAddress)
		node, err := k.Node(ctx, name)
		if err != nil || node == nil {
			return lcm.Unchanged, err
		}
		if readyStatus(node) == corev1.ConditionUnknown {
			return lcm.Result{Detail: "not drained: its kubelet stopped reporting (Ready Unknown); deleting the node moves its pods"}, nil
		}
		res, err := DrainNode(ctx, k, name, opts)
		var de *DrainError
		if r.ForceDrain && errors.As(err, &de) {
			return res.And(lcm.Changed("drain did not finish, the node is removed anyway (ForceDrain): " + de.Error())), nil
		}
		return res, err
	}, lcm.Limit(1))
}

// remove takes drained targets out of the cluster in the order kubeadm's
// documentation gives ("Remove the node"): kubeadm reset on the node,
// which stops its kubelet (and, on a control plane, removes its etcd
// member), then the Node object deleted. Deleted first, the node would
// come back: a running kubelet registers its Node again
// (pkg/kubelet/kubelet_node_status.go registerWithAPIServer).
func (r *run) remove(ctx context.Context, k Kubectl, targets []lcm.Node) error {
	if err := r.reset(ctx, targets); err != nil {
		return err
	}
	return r.each(ctx, StepDeleteNode, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		return DeleteNode(ctx, k, NodeName(n.Role, n.NICAddress))
	})
}

// readyStatus is the status of a node's Ready condition, Unknown when it
// has none.
func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// reset runs kubeadm reset on the targets that can still be reached; one
// that cannot (a VM the heal replaces because it is broken) is reported
// as not reset, not as a failure.
func (r *run) reset(ctx context.Context, targets []lcm.Node) error {
	return r.each(ctx, StepReset, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		h, err := r.s.Host(ctx, n)
		if dial := (*plumbing.DialError)(nil); errors.As(err, &dial) && ctx.Err() == nil {
			return lcm.Result{Detail: "not reachable, not reset: " + err.Error()}, nil
		}
		if err != nil {
			return lcm.Unchanged, err
		}
		return ResetNode(ctx, h)
	})
}

// healTargets maps a heal request to the cluster's nodes it replaces;
// VNFCs that are not Kubernetes nodes are left out.
func (r *run) healTargets(req lcm.HealVnfRequest) ([]lcm.Node, error) {
	nodes := r.topo.Nodes()
	servers := map[string]bool{}
	for _, n := range nodes {
		servers[n.ServerID] = true
	}
	var ids []string
	if inst := r.op.Instance; inst != nil && inst.InstantiatedVnfInfo != nil {
		for _, id := range req.VnfcInstanceID {
			i := slices.IndexFunc(inst.InstantiatedVnfInfo.VnfcResourceInfo, func(v lcm.VnfcResourceInfo) bool { return v.ID == id })
			if i >= 0 && !servers[inst.InstantiatedVnfInfo.VnfcResourceInfo[i].ComputeResource.ResourceID] {
				continue // not a node of the cluster (a storage server)
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	req.VnfcInstanceID = ids
	plan, err := heat.HealTargets(r.op.Instance, req, nodes)
	return plan.Nodes, err
}

// vimName returns the VIM's name, which is also its connection's ID.
func (r *run) vimName() string { return r.op.Params.VimNameFor(instanceID(r.op.Instance)) }

// vimOptions returns where the VIM credentials live and how the VNFM
// reaches the API.
func (r *run) vimOptions() VIMOptions {
	return VIMOptions{Name: r.vimName(), Endpoint: r.topo.APIURL()} // the default service account
}

// createVIM creates the VIM credentials and adds the connection to the
// result.
func (r *run) createVIM(ctx context.Context, k Kubectl, cp lcm.Node) error {
	var info lcm.VimConnectionInfo
	err := r.onControlPlane(ctx, StepVIM, cp, func(ctx context.Context) (lcm.Result, error) {
		var res lcm.Result
		var err error
		info, res, err = CreateVIMCredentials(ctx, k, r.vimOptions())
		return res, err
	})
	if err != nil {
		return err
	}
	info.ID = r.vimName()
	r.res.AddVimConnections = append(r.res.AddVimConnections, info)
	return nil
}

// The pod network's share per node: kube-controller-manager's
// --node-cidr-mask-size defaults, which kubeadm keeps
// (kubernetes/kubernetes pkg/controller/nodeipam/ipam/cidrset: one
// subnet of this size per node, from the cluster's pod CIDR).
const (
	nodeMaskIPv4 = 24
	nodeMaskIPv6 = 64
)

// checkPodCapacity refuses a pod network too small for nodes nodes: with
// a /24 per node, pod_cidr 192.168.3.0/24 (the cir sample's) holds the
// pods of one node only, and every other node would stay NotReady
// without a podCIDR.
func checkPodCapacity(p ClusterParams, nodes int) error {
	pod := p.MasterNode.PodCIDR
	if !pod.IsValid() {
		return nil
	}
	mask := nodeMaskIPv4
	if pod.Addr().Is6() {
		mask = nodeMaskIPv6
	}
	room := 0
	if bits := mask - pod.Bits(); bits >= 0 {
		room = 1 << min(bits, 30)
	}
	if room >= nodes {
		return nil
	}
	return &lcm.ParamsError{Problems: []lcm.Problem{{
		Path: ClusterParamKey + ".master_node.pod_cidr",
		Message: fmt.Sprintf("%s has room for the pods of %d nodes (a /%d each, kube-controller-manager's --node-cidr-mask-size), the cluster has %d: give a larger network, such as a /16",
			pod, room, mask, nodes),
	}}}
}

// readCNI reads cni_manifest_path from the package: the native steps need
// a pod network, or no node becomes Ready; the reference's install script
// (optional) applies its own, so without one there is nothing to read.
func readCNI(op Op, optional bool) ([]byte, error) {
	p := op.Params
	field := ClusterParamKey + ".cni_manifest_path"
	if p.CNIManifestPath == "" && optional {
		return nil, nil
	}
	if p.CNIManifestPath == "" {
		return nil, &lcm.ParamsError{Problems: []lcm.Problem{{Path: field, Message: "is required: the cluster's pod network (a CNI manifest in the VNF package); without one no node becomes Ready"}}}
	}
	if op.Package == nil {
		return nil, &lcm.ParamsError{Problems: []lcm.Problem{{Path: field, Message: "names a file in the VNF package, but the hook has no package"}}}
	}
	b, err := op.Package.ReadFile(p.CNIManifestPath)
	if err != nil {
		return nil, &lcm.ParamsError{Problems: []lcm.Problem{{Path: field, Message: err.Error()}}}
	}
	return b, nil
}

// instanceID is the VNF instance's ID, empty without one.
func instanceID(inst *lcm.VnfInstance) string {
	if inst == nil {
		return ""
	}
	return inst.ID
}

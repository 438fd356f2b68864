package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
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
	StepHealUnmanaged    = plumbing.StepHealUnmanaged
	StepDeleteTokens     = "delete-bootstrap-tokens"
)

// Hooks builds, scales, heals and tears down a kubeadm cluster on a VNF's
// VMs: the work of the Kubernetes cluster VNF's management driver, hook by
// hook. A driver keeps one Hooks and calls its methods from its own hook
// methods with the decoded parameters ([Op]); see
// examples/drivers.ClusterDriver. Every method is idempotent: run again
// after a failure half-way, it converges, and run twice, the second run
// changes nothing. It is safe for concurrent use.
//
// Each method is one hook run on the floor's hook runner
// ([plumbing.Config.Run]): one session, every node dialed once, at most
// Plumbing.Limit nodes at once in each step, every step recorded in the
// returned result, also when the hook fails half-way.
type Hooks struct {
	// Plumbing reaches Heat and the nodes; its SSH field is required,
	// and its Limit bounds how many nodes a step works on at once
	// (lcm.DefaultLimit when 0). Masters join one at a time whatever it
	// is.
	Plumbing plumbing.Config
	// ReadyTimeout bounds the wait for a node to be registered and Ready
	// after it joins; [DefaultReadyTimeout] when 0.
	ReadyTimeout time.Duration
	// ForceDrain removes a node whose drain cannot finish (pods a
	// PodDisruptionBudget protects, pods no controller manages): it is
	// drained with --force (unmanaged pods deleted) and, when the drain
	// still fails, deleted anyway, the failure reported in the step's
	// result. Off: such a drain fails the hook with a [*kubeapi.DrainError]
	// naming the pods, and the node stays in the cluster, cordoned.
	ForceDrain bool
	// InstallScript opts in to the reference's compatibility mode: when
	// script_path is set, the package's install script
	// (install_k8s_cluster.sh) installs the runtime and Kubernetes and
	// runs kubeadm on each node ([RunInstallScript], with the
	// reference's flags: the first master's run initialises, the others
	// join with a token, CA hash and certificate key mgmtkit creates),
	// after [PrepareNode]; the extensions' per-node work before the join
	// runs once the node has joined, as the reference configures
	// registries after its script; the CNI manifest, optional then, is
	// applied when given (the reference's script applies its own). Off:
	// mgmtkit's steps build the nodes, and a script_path is reported as
	// not used in the hook's result.
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
	// Extensions are the other packages' work in the cluster's hooks
	// (registry trust, the NFS client and storage server, ...), run at
	// the moments each names, with their own VMs resolved, connected to
	// and healed with the cluster's; see [plumbing.Extension].
	Extensions plumbing.Extensions
}

// Instantiate builds the cluster on every node Heat reports
// (instantiate_end, and heal_end of the entire VNF). First, read-only,
// what only Heat and the nodes can tell: the pod network's room for the
// nodes, the extensions' checks ([plumbing.Extension]'s Check: the
// storage server's volumes in the stack, ...), no node address inside
// the pod or Service network, the kubernetes_version in the package
// repository; a problem there is an
// [*lcm.ParamsError] and nothing has changed. Then each node prepared
// (host name, swap, kernel, the cluster's /etc/hosts block, the proxy),
// containerd installed, the extensions' work before the join, the
// Kubernetes packages installed; HAProxy and keepalived on the masters
// when there are several; kubeadm init on the first master (its unused
// bootstrap token deleted); the CNI applied; the other masters joined
// one at a time as control planes, the workers in parallel, each waited
// for until Ready (the join tokens deleted after); the extensions' work
// after the join and once the cluster is built; and the VIM credentials
// created, returned in the result's AddVimConnections.
func (c *Hooks) Instantiate(ctx context.Context, hook lcm.Hook, op Op) (*lcm.HookResult, error) {
	b := c.builder(op.Params)
	cni, err := b.cni(op)
	if err != nil {
		return nil, err // nothing has run
	}
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		if err := checkPodCapacity(r.op.Params, cni.net, len(r.topo.Nodes())); err != nil {
			return err // nothing has run
		}
		if err := r.op.Extensions.Check(ctx, r.Runner, r.topo.All()); err != nil {
			return err // nothing has changed
		}
		if err := r.preflight(ctx, r.topo.Nodes()); err != nil {
			return err // nothing has changed
		}
		return r.instantiate(ctx, cni)
	})
}

// instantiate is [Hooks.Instantiate]'s work, cni the pod network to
// install.
func (r *run) instantiate(ctx context.Context, cni cniPlan) error {
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
	if cni.manifest != nil || cni.calico {
		if err := r.Once(ctx, StepCNI, cp, func(ctx context.Context) (lcm.Result, error) {
			if cni.calico {
				return InstallCalico(ctx, k, CalicoOptions{Proxy: r.proxy()})
			}
			return ApplyCNI(ctx, k, cni.manifest)
		}); err != nil {
			return err
		}
	}
	if err := r.join(ctx, k, cp, r.topo.Nodes()); err != nil {
		return err
	}
	if err := r.op.Extensions.Ready(ctx, r.Runner, cluster(k, cp, r.topo)); err != nil {
		return err
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
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error { return r.revoke(ctx) })
}

// revoke is [Hooks.Revoke]'s work.
func (r *run) revoke(ctx context.Context) error {
	k, cp, err := r.ControlPlane(ctx, r.topo.Masters)
	if err != nil {
		r.Note(StepRevokeVIM, r.topo.Masters[:1], "no master answers: nothing to revoke")
		return nil
	}
	return r.Once(ctx, StepRevokeVIM, cp, func(ctx context.Context) (lcm.Result, error) {
		return kubeapi.DeleteVIMCredentials(ctx, k, r.vimOptions())
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
// dropped from the other nodes' /etc/hosts block. A SCALE_OUT is not
// this hook's business: an empty result. A scale of master_node's
// aspect, or of an aspect the cluster does not have, is refused before
// anything runs (the specs scale workers only; Heat would delete a master
// whose Node, etcd member and HAProxy backend would stay behind).
func (c *Hooks) ScaleIn(ctx context.Context, hook lcm.Hook, op Op, req lcm.ScaleVnfRequest) (*lcm.HookResult, error) {
	if ok, err := c.scales(op, req, lcm.ScaleIn); !ok {
		return emptyUnless(hook, err)
	}
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		targets, err := r.Session().Heat().ScaleInTargets(ctx, r.Session().Stack(), op.Params.WorkerNode.Group(lcm.RoleWorker), req)
		if err != nil {
			return err
		}
		return r.removeWorkers(ctx, targets)
	})
}

// ScaleOut joins the workers a SCALE_OUT of worker_node's aspect created
// (scale_end): those op.Instance, as it was before the scale, does not
// list. Each is built and joined as at instantiation (extensions
// included), and every node's /etc/hosts block names it. A SCALE_IN is
// not this hook's business (an empty result); another aspect is refused
// as [Hooks.ScaleIn] refuses it.
func (c *Hooks) ScaleOut(ctx context.Context, hook lcm.Hook, op Op, req lcm.ScaleVnfRequest) (*lcm.HookResult, error) {
	if ok, err := c.scales(op, req, lcm.ScaleOut); !ok {
		return emptyUnless(hook, err)
	}
	cni, err := c.builder(op.Params).cni(op)
	if err != nil {
		return nil, err // nothing has run
	}
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		if err := checkPodCapacity(op.Params, cni.net, len(r.topo.Nodes())); err != nil {
			return err // nothing has run
		}
		targets := heat.ScaleOutTargets(heat.KnownNodes(op.Instance), r.topo.Workers)
		if err := r.preflight(ctx, targets); err != nil {
			return err // nothing has changed
		}
		return r.addNodes(ctx, targets)
	})
}

// emptyUnless returns err, or an empty result of hook when it is nil.
func emptyUnless(hook lcm.Hook, err error) (*lcm.HookResult, error) {
	if err != nil {
		return nil, err
	}
	return &lcm.HookResult{Hook: hook}, nil
}

// scales reports whether req is a scale of type t of worker_node's
// aspect. A scale of any other aspect is an [*lcm.ParamsError] naming
// it: master_node's cannot be scaled node by node, and an aspect the
// cluster does not have is a mistake the VNFM must hear of.
func (c *Hooks) scales(op Op, req lcm.ScaleVnfRequest, t lcm.ScaleType) (bool, error) {
	if req.Type != t {
		return false, nil
	}
	w := op.Params.WorkerNode
	if w != nil && w.AspectID != "" && req.AspectID == w.AspectID {
		return true, nil
	}
	msg := fmt.Sprintf("is %q, which is not worker_node's aspect_id", req.AspectID)
	switch {
	case req.AspectID != "" && req.AspectID == op.Params.MasterNode.AspectID:
		msg = fmt.Sprintf("is %q, master_node's aspect_id: the masters are not scaled (the cluster would keep the removed master's Node, etcd member and HAProxy backend); heal a master instead", req.AspectID)
	case w == nil || w.AspectID == "":
		msg = fmt.Sprintf("is %q, but worker_node has no aspect_id: the cluster has no scalable workers", req.AspectID)
	}
	return false, &lcm.ParamsError{Problems: []lcm.Problem{{Path: "aspectId", Message: msg}}}
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
		return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
			r.RemoveVimConnection(r.vimName())
			return r.revoke(ctx)
		})
	}
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		plan, err := r.healTargets(req)
		if err != nil || len(plan) == 0 {
			return err
		}
		if masters := lcm.NodesWithRole(plan, lcm.RoleMaster); len(masters) > 0 {
			if err := r.removeMasters(ctx, masters); err != nil {
				return err
			}
		}
		if err := r.removeWorkers(ctx, lcm.NodesWithRole(plan, lcm.RoleWorker)); err != nil {
			return err
		}
		return r.op.Extensions.HealOthers(ctx, r.Runner, r.topo.Masters, r.topo.All(), plan, false)
	})
}

// HealEnd rebuilds the nodes a heal replaced (heal_end), at the addresses
// Heat reports now: a worker joins as at scale-out; a master joins as a
// control plane, gets HAProxy and keepalived, and goes back into every
// master's HAProxy backends; an extension's VM (the storage server) is
// handed to the extension's HealEnd, after its Check. The entire VNF:
// [Hooks.Instantiate] with the stored parameters.
func (c *Hooks) HealEnd(ctx context.Context, hook lcm.Hook, op Op, req lcm.HealVnfRequest) (*lcm.HookResult, error) {
	if req.Entire() {
		return c.Instantiate(ctx, hook, op)
	}
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		plan, err := r.healTargets(req)
		if err != nil || len(plan) == 0 {
			return err
		}
		nodes := append(lcm.NodesWithRole(plan, lcm.RoleMaster), lcm.NodesWithRole(plan, lcm.RoleWorker)...)
		if len(nodes) < len(plan) { // the extensions' VMs heal too
			if err := r.op.Extensions.Check(ctx, r.Runner, r.topo.All()); err != nil {
				return err // nothing has changed
			}
		}
		if err := r.preflight(ctx, nodes); err != nil {
			return err // nothing has changed
		}
		if err := r.addNodes(ctx, nodes); err != nil {
			return err
		}
		return r.op.Extensions.HealOthers(ctx, r.Runner, r.topo.Masters, r.topo.All(), plan, true)
	})
}

// run is one hook's work: the floor's runner (session, recorded steps,
// fan-out), the hook's operation, the topology and how nodes are built.
type run struct {
	*plumbing.Runner
	hooks *Hooks
	op    Op
	topo  Topology
	nodes nodeBuilder
}

// run runs work as one hook in its own session, with the topology
// resolved, and returns what it did.
func (c *Hooks) run(ctx context.Context, hook lcm.Hook, op Op, work func(ctx context.Context, r *run) error) (*lcm.HookResult, error) {
	vms, err := op.Extensions.VMs(op.Params.VMs())
	if err != nil {
		return nil, err // nothing has run
	}
	var resolved bool
	extra := slices.DeleteFunc(slices.Clone(vms.Groups), func(g heat.Group) bool { return g.Role == lcm.RoleMaster || g.Role == lcm.RoleWorker })
	res, err := c.Plumbing.Run(ctx, hook, op.Instance, vms.Logins, func(ctx context.Context, pr *plumbing.Runner) error {
		topo, err := Resolve(ctx, pr.Session(), op.Params, extra...)
		if err != nil {
			return err
		}
		resolved = true
		return work(ctx, &run{Runner: pr, hooks: c, op: op, topo: topo, nodes: c.builder(op.Params)})
	})
	if !resolved {
		return nil, err // nothing has run
	}
	return res, err
}

// proxy returns the nodes' proxy settings, nil without a proxy.
func (r *run) proxy() *system.Proxy {
	direct := r.op.Extensions.NoProxy()
	var masters []string
	for _, m := range r.topo.Masters {
		masters = append(masters, m.NICAddress)
	}
	endpoint, _, _ := net.SplitHostPort(r.topo.Endpoint())
	return ProxyFor(r.op.Params, masters, endpoint, direct)
}

// build makes nodes ready to join: prepared (host name, swap, kernel,
// /etc/hosts, proxy), then the rest as the node builder does it.
func (r *run) build(ctx context.Context, nodes []lcm.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	proxy := r.proxy()
	hosts := r.topo.HostsEntries()
	if err := r.OnNodes(ctx, StepPrepare, nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		return PrepareNode(ctx, h, NodeOptions{Name: NodeName(n.Role, n.NICAddress), Hosts: hosts, Proxy: proxy})
	}); err != nil {
		return err
	}
	return r.nodes.build(ctx, r, nodes)
}

// hosts makes the /etc/hosts block of nodes name exactly t's nodes.
func (r *run) hosts(ctx context.Context, nodes []lcm.Node, t Topology) error {
	entries := t.HostsEntries()
	return r.OnNodes(ctx, StepHosts, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return UpdateHosts(ctx, h, entries)
	})
}

// loadBalancers configures HAProxy and keepalived on masters, with t's
// masters as the backends.
func (r *run) loadBalancers(ctx context.Context, masters []lcm.Node, t Topology) error {
	if err := r.haproxy(ctx, masters, t); err != nil {
		return err
	}
	return r.OnNodes(ctx, StepKeepalived, masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		return ConfigureKeepalived(ctx, h, t.LoadBalancer(n))
	})
}

// haproxy configures HAProxy on masters, with t's masters as the
// backends.
func (r *run) haproxy(ctx context.Context, masters []lcm.Node, t Topology) error {
	return r.OnNodes(ctx, StepHAProxy, masters, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		return ConfigureHAProxy(ctx, h, t.LoadBalancer(n))
	})
}

// initialize returns the control plane: a master whose API answers, or
// else the first master after the node builder initialised it.
func (r *run) initialize(ctx context.Context) (kubeapi.Kubectl, lcm.Node, error) {
	if k, cp, err := r.ControlPlane(ctx, r.topo.Masters); err == nil {
		return k, cp, nil
	}
	first := r.topo.Masters[0]
	var k kubeapi.Kubectl
	if err := r.OnNodes(ctx, StepInit, []lcm.Node{first}, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		k = kubeapi.Kubectl{Host: h}
		return r.nodes.initialize(ctx, r, n, h)
	}); err != nil {
		return k, first, err
	}
	// No node joins with init's token: each join gets one of its own.
	return k, first, r.Once(ctx, StepDeleteTokens, first, func(ctx context.Context) (lcm.Result, error) {
		return DeleteBootstrapTokens(ctx, k, nil, InitTokenDescription, kubeadmInitTokenDescription)
	})
}

// initOptions returns kubeadm init's options for the first master n.
func (r *run) initOptions(n lcm.Node) InitOptions {
	p := r.op.Params
	var sans []string
	if r.topo.HA() {
		sans = append(sans, r.topo.VIP.String())
	}
	if r.topo.FloatingIP != "" {
		sans = append(sans, r.topo.FloatingIP)
	}
	return InitOptions{
		NodeName:         NodeName(n.Role, n.NICAddress),
		AdvertiseAddress: n.NICAddress,
		Endpoint:         r.topo.Endpoint(),
		PodCIDR:          p.MasterNode.PodCIDR,
		ServiceCIDR:      p.MasterNode.ClusterCIDR,
		Version:          p.KubernetesVersion,
		CertSANs:         sans,
	}
}

// join joins those of nodes that are not members yet: the masters as
// control planes one at a time (etcd grows one member at a time, as
// kubeadm requires), then the workers in parallel; every node of nodes is
// waited for until Ready, and then handed to the node builder's joined.
// A join token (and, for masters, an upload of the control-plane
// certificates) is created only when a node needs it, by the first join
// step that does, once for all the nodes of its kind. The members are
// read, and the tokens made, inside the join steps, so that a failure of
// either is the step's, and a plan sees each step (see lcm.Plan).
func (r *run) join(ctx context.Context, k kubeapi.Kubectl, cp lcm.Node, nodes []lcm.Node) (err error) {
	cpHost, err := r.Session().Host(ctx, cp)
	if err != nil {
		return err
	}
	// member reports whether n is a member: of the nodes registered when
	// the first join step asked (read once; a failed read is tried again
	// by the next step).
	var memberMu sync.Mutex
	var registered []corev1.Node
	read := false
	member := func(ctx context.Context, n lcm.Node) (bool, error) {
		memberMu.Lock()
		defer memberMu.Unlock()
		if !read {
			ns, err := k.Nodes(ctx)
			if err != nil {
				return false, err
			}
			registered, read = ns, true
		}
		name := NodeName(n.Role, n.NICAddress)
		return slices.ContainsFunc(registered, func(o corev1.Node) bool { return o.Name == name }), nil
	}
	endpoint := r.topo.Endpoint()
	wait := r.hooks.ReadyTimeout
	if wait <= 0 {
		wait = DefaultReadyTimeout
	}
	// info returns join information, created at most once per kind (the
	// workers wait for the first of them to make it, and share it); a
	// failure is every node's of that kind.
	var infoMu sync.Mutex
	infos := map[bool]*JoinInfo{}
	infoErrs := map[bool]error{}
	info := func(ctx context.Context, controlPlane bool) (JoinInfo, error) {
		infoMu.Lock()
		defer infoMu.Unlock()
		if i := infos[controlPlane]; i != nil {
			return *i, nil
		}
		if err := infoErrs[controlPlane]; err != nil {
			return JoinInfo{}, err
		}
		i, err := NewJoinInfo(ctx, cpHost, cp.NICAddress, endpoint, controlPlane)
		if err != nil {
			infoErrs[controlPlane] = err
			return JoinInfo{}, err
		}
		infos[controlPlane] = &i
		return i, nil
	}
	// planned says a plan stopped a join step after it had withheld a
	// change: the step may have made tokens for the deletion below.
	var planned atomic.Bool
	// The tokens made here, and the control-plane certificates uploaded
	// for them, are deleted once the joins are over, whether they
	// succeeded or not: a run again makes fresh ones.
	defer func() {
		infoMu.Lock()
		defer infoMu.Unlock()
		if len(infos) == 0 {
			if planned.Load() {
				// A plan cannot tell which tokens the joins would
				// have made: the deletion is undetermined.
				err = errors.Join(err, r.Once(ctx, StepDeleteTokens, cp, func(ctx context.Context) (lcm.Result, error) {
					return lcm.Unchanged, errors.New("deletes the join tokens that the joins before it make")
				}))
			}
			return
		}
		var ids, descs []string
		for _, i := range infos {
			ids = append(ids, i.TokenID())
		}
		if infos[true] != nil {
			descs = append(descs, certsTokenDescription)
		}
		err = errors.Join(err, r.Once(ctx, StepDeleteTokens, cp, func(ctx context.Context) (lcm.Result, error) {
			return DeleteBootstrapTokens(ctx, k, ids, descs...)
		}))
	}()
	joinOne := func(controlPlane bool) plumbing.NodeFunc {
		return func(ctx context.Context, n lcm.Node, h remote.Host) (res lcm.Result, err error) {
			defer func() {
				if err != nil && remote.AnyWithheld(ctx) {
					planned.Store(true)
				}
			}()
			in, err := member(ctx, n)
			if err != nil {
				return lcm.Unchanged, err
			}
			res = lcm.Unchanged
			if !in {
				ji, err := info(ctx, controlPlane)
				if err != nil {
					return lcm.Unchanged, err
				}
				if res, err = r.nodes.join(ctx, r, n, h, ji); err != nil {
					return res, err
				}
			}
			return res, kubeapi.WaitNodeReady(ctx, k, NodeName(n.Role, n.NICAddress), wait)
		}
	}
	if err := r.OnNodes(ctx, StepJoinControlPlane, lcm.NodesWithRole(nodes, lcm.RoleMaster), joinOne(true), lcm.Limit(1)); err != nil {
		return err
	}
	// Best effort: a worker that fails to join does not cut the others'
	// joins short, which would leave them half-joined.
	if err := r.OnNodes(ctx, StepJoinWorker, lcm.NodesWithRole(nodes, lcm.RoleWorker), joinOne(false), lcm.WithPolicy(lcm.BestEffort)); err != nil {
		return err
	}
	if err := r.nodes.joined(ctx, r, nodes); err != nil {
		return err
	}
	return r.op.Extensions.AfterJoin(ctx, r.Runner, nodes)
}

// cluster returns what the extensions' cluster-wide moments are handed:
// the control plane k on cp, and every VM of t.
func cluster(k kubeapi.Kubectl, cp lcm.Node, t Topology) plumbing.Cluster {
	return plumbing.Cluster{API: k, ControlPlane: cp, Nodes: t.All()}
}

// addNodes builds and joins nodes that replace or add to the cluster
// (scale_end, heal_end), then updates every node's /etc/hosts block and,
// when masters joined, every master's HAProxy backends.
func (r *run) addNodes(ctx context.Context, nodes []lcm.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	others := r.topo.Without(nodes)
	k, cp, err := r.ControlPlane(ctx, others.Masters)
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
	if err := r.op.Extensions.Joined(ctx, r.Runner, cluster(k, cp, r.topo), nodes); err != nil {
		return err
	}
	if err := r.hosts(ctx, others.Nodes(), r.topo); err != nil {
		return err
	}
	if r.topo.HA() && len(masters) > 0 {
		return r.haproxy(ctx, others.Masters, r.topo)
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
	k, cp, err := r.ControlPlane(ctx, rest.Masters)
	if err != nil {
		return err
	}
	if err := r.op.Extensions.Removing(ctx, r.Runner, cluster(k, cp, r.topo), targets); err != nil {
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
	k, cp, err := r.ControlPlane(ctx, rest.Masters)
	if err != nil {
		return err
	}
	if err := r.op.Extensions.Removing(ctx, r.Runner, cluster(k, cp, r.topo), targets); err != nil {
		return err
	}
	if rest.HA() {
		if err := r.haproxy(ctx, rest.Masters, rest); err != nil {
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
	if err := r.Each(ctx, StepRemoveEtcdMember, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		resetWithheld := remote.AnyWithheld(ctx)
		res, err := RemoveEtcdMember(ctx, k, via, NodeName(n.Role, n.NICAddress))
		if resetWithheld && errors.Is(err, remote.ErrWithheld) {
			// A plan that withheld the reset: the reset removes the member
			// of a master it reaches, so whether this step has one left to
			// remove is not known.
			return lcm.Result{Undetermined: true, Detail: "the member is still listed, but the withheld kubeadm reset removes it"}, nil
		}
		return res, err
	}, lcm.Limit(1)); err != nil {
		return err
	}
	return r.hosts(ctx, rest.Nodes(), rest)
}

// drain drains targets one at a time. A drain that cannot finish stops
// the hook here, before the node is reset or deleted, unless ForceDrain.
// A node whose kubelet no longer reports (Ready Unknown: the VM a heal
// replaces is often dead) is not drained: no pod of it could confirm its
// end, so the drain could only time out. It is deleted, and the pod
// garbage collector removes its pods, which their controllers re-create
// elsewhere (kubernetes/kubernetes pkg/controller/podgc: pods bound to a
// node that no longer exists).
func (r *run) drain(ctx context.Context, k kubeapi.Kubectl, targets []lcm.Node) error {
	force := r.hooks.ForceDrain
	opts := kubeapi.DrainOptions{Timeout: r.op.Params.Drain(), Force: force}
	return r.Each(ctx, StepDrain, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		name := NodeName(n.Role, n.NICAddress)
		node, err := k.Node(ctx, name)
		if err != nil || node == nil {
			return lcm.Unchanged, err
		}
		if c := kubeapi.ReadyCondition(node); c == nil || c.Status == corev1.ConditionUnknown {
			return lcm.Result{Detail: "not drained: its kubelet stopped reporting (Ready Unknown); deleting the node moves its pods"}, nil
		}
		res, err := kubeapi.DrainNode(ctx, k, name, opts)
		var de *kubeapi.DrainError
		if force && errors.As(err, &de) {
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
func (r *run) remove(ctx context.Context, k kubeapi.Kubectl, targets []lcm.Node) error {
	if err := r.reset(ctx, targets); err != nil {
		return err
	}
	return r.Each(ctx, StepDeleteNode, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		return kubeapi.DeleteNode(ctx, k, NodeName(n.Role, n.NICAddress))
	})
}

// reset runs kubeadm reset on the targets that can still be reached. One
// that cannot be reached at all (a VM the heal replaces because it is
// broken: no answer, connection refused, no route) is reported as not
// reset, not as a failure. One that answers but refuses the login (a
// wrong password) or shows another host key is a failure: its kubelet
// may well run on, and deleting its Node would only have it registered
// again.
func (r *run) reset(ctx context.Context, targets []lcm.Node) error {
	return r.Each(ctx, StepReset, targets, func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		h, err := r.Session().Host(ctx, n)
		if remote.IsUnreachable(err) && ctx.Err() == nil {
			return lcm.Result{Detail: "not reachable, not reset: " + err.Error()}, nil
		}
		if err != nil {
			return lcm.Unchanged, err
		}
		return ResetNode(ctx, h)
	})
}

// healTargets maps a heal request to the VMs it replaces: the cluster's
// nodes and the extensions' VMs ([plumbing.Runner.HealTargets]).
func (r *run) healTargets(req lcm.HealVnfRequest) ([]lcm.Node, error) {
	return r.HealTargets(r.op.Instance, req, r.topo.All())
}

// vimName returns the VIM's name, which is also its connection's ID.
func (r *run) vimName() string { return r.op.Params.VimNameFor(instanceID(r.op.Instance)) }

// vimOptions returns where the VIM credentials live and how the VNFM
// reaches the API.
func (r *run) vimOptions() kubeapi.VIMOptions {
	return kubeapi.VIMOptions{Name: r.vimName(), Endpoint: r.topo.APIURL()} // the default service account
}

// createVIM creates the VIM credentials and adds the connection to the
// result.
func (r *run) createVIM(ctx context.Context, k kubeapi.Kubectl, cp lcm.Node) error {
	var info lcm.VimConnectionInfo
	err := r.Once(ctx, StepVIM, cp, func(ctx context.Context) (lcm.Result, error) {
		var res lcm.Result
		var err error
		info, res, err = kubeapi.CreateVIMCredentials(ctx, k, r.vimOptions())
		return res, err
	})
	if err != nil {
		return err
	}
	info.ID = r.vimName()
	r.AddVimConnection(info)
	return nil
}

// instanceID is the VNF instance's ID, empty without one.
func instanceID(inst *lcm.VnfInstance) string {
	if inst == nil {
		return ""
	}
	return inst.ID
}

package kubespray

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// The step names the hooks report under.
const (
	StepDetect       = "kubespray-detect"
	StepHostKeys     = "host-keys"
	StepMTU          = "nic-mtu"
	StepInventory    = "kubespray-inventory"
	StepCluster      = "kubespray-cluster"
	StepFacts        = "kubespray-facts"
	StepScale        = "kubespray-scale"
	StepRemoveNode   = "kubespray-remove-node"
	StepVIM          = "vim-credentials"
	StepRevokeVIM    = "vim-revoke"
	StepRemoveInv    = "kubespray-remove-inventory"
	StepHealNoMaster = "heal-refused"
)

// Hooks are the lifecycle hooks of a Kubernetes cluster VNF that kubespray
// builds from an Ansible server (the k8s-mgmtdriver-kubespray spec), on
// the shared hook runner ([plumbing.Config.Run]): a hooks type of its
// own, not a mode of kubeadm's. The nodes are never configured by mgmtkit
// itself: kubespray's playbooks do it, from an inventory mgmtkit renders
// from Heat; mgmtkit checks, prepares the Ansible server, runs and judges
// the playbooks, and runs the extensions' moments (the NFS client, the
// storage server, the external load balancer).
type Hooks struct {
	// Plumbing connects to the VIM and the VMs; Plumbing.SSH is required.
	Plumbing plumbing.Config
}

// Params are the cluster's parameters as this package reads them: the
// nodes, their networks, the proxy and the VIM's name (master_node,
// worker_node, proxy, vim_name: kubeadm's types, as the spec nests them),
// and ansible.
type Params struct {
	Cluster kubeadm.ClusterParams
	Ansible Ansible
}

// Op is what each hook acts on.
type Op struct {
	// Instance is the VNF instance: its ID names what the hooks own (the
	// inventory directory's [OwnerFile]), its vnfcResourceInfo tells
	// scale_end the new workers and a heal its targets.
	Instance *lcm.VnfInstance
	// Package is the VNF package.
	Package *lcm.Package
	// Params are the stored (or, at instantiate_end, the request's)
	// parameters.
	Params Params
	// Extensions are the other packages' work (registry trust, NFS,
	// the external load balancer), run at their moments; a kubespray
	// node joins inside a playbook, so BeforeJoin runs after it joined.
	Extensions plumbing.Extensions
	// APIEndpoint returns the URL the VNFM reaches the API server at
	// ("https://host:port"), from the VNF's VMs: the external load
	// balancer's frontend (package lb). Its host goes into the API
	// server's certificate (supplementary_addresses_in_ssl_keys), so
	// that the VIM verifies it there. nil: the first master's
	// https://NIC:6443.
	APIEndpoint func(vms []lcm.Node) (string, error)
}

// topology is the VNF's VMs as Heat reports them.
type topology struct {
	masters, workers, others []lcm.Node
	ansible                  lcm.Node
}

// all returns every VM of the VNF (the Ansible server is not one).
func (t topology) all() []lcm.Node { return slices.Concat(t.masters, t.workers, t.others) }

// nodes returns the masters then the workers.
func (t topology) nodes() []lcm.Node { return slices.Concat(t.masters, t.workers) }

// without returns t without the nodes gone.
func (t topology) without(gone []lcm.Node) topology {
	drop := func(n lcm.Node) bool {
		return slices.ContainsFunc(gone, func(g lcm.Node) bool { return g.Resource == n.Resource })
	}
	t.masters = slices.DeleteFunc(slices.Clone(t.masters), drop)
	t.workers = slices.DeleteFunc(slices.Clone(t.workers), drop)
	t.others = slices.DeleteFunc(slices.Clone(t.others), drop)
	return t
}

// run is one hook's work.
type run struct {
	*plumbing.Runner
	op   Op
	topo topology
	// nicMTU is the first master's NIC MTU once read (0 before).
	nicMTU int
}

// run runs work in a session of its own, with the VMs resolved.
func (c *Hooks) run(ctx context.Context, hook lcm.Hook, op Op, work func(ctx context.Context, r *run) error) (*lcm.HookResult, error) {
	base, err := plumbing.MergeVMs(op.Params.Cluster.VMs(), op.Params.Ansible.VMs())
	if err != nil {
		return nil, err
	}
	vms, err := op.Extensions.VMs(base)
	if err != nil {
		return nil, err
	}
	var resolved bool
	res, err := c.Plumbing.Run(ctx, hook, op.Instance, vms.Logins, func(ctx context.Context, pr *plumbing.Runner) error {
		nodes, err := pr.Session().Nodes(ctx, vms.Groups...)
		if err != nil {
			return err
		}
		t := topology{ansible: op.Params.Ansible.Node()}
		for _, n := range nodes {
			switch n.Role {
			case lcm.RoleMaster:
				t.masters = append(t.masters, n)
			case lcm.RoleWorker:
				t.workers = append(t.workers, n)
			default:
				t.others = append(t.others, n)
			}
		}
		slices.SortFunc(t.masters, func(a, b lcm.Node) int { return cmp.Compare(a.Resource, b.Resource) })
		slices.SortFunc(t.workers, lcm.CompareNodes)
		if len(t.masters) == 0 {
			return errors.New("kubespray: the VNF has no master node")
		}
		resolved = true
		return work(ctx, &run{Runner: pr, op: op, topo: t})
	})
	if !resolved {
		return nil, err
	}
	return res, err
}

// nodeName is the Kubernetes node name (and inventory host name) of n.
func nodeName(n lcm.Node) string { return kubeapi.NodeName(n.Role, n.NICAddress) }

// host returns n as an inventory host.
func host(n lcm.Node) (Host, error) {
	ssh, err1 := netip.ParseAddr(n.SSHAddress)
	nic, err2 := netip.ParseAddr(n.NICAddress)
	if err := errors.Join(err1, err2); err != nil {
		return Host{}, fmt.Errorf("kubespray: %s: %w", n.Resource, err)
	}
	return Host{Name: nodeName(n), AnsibleHost: ssh.Unmap(), IP: nic.Unmap()}, nil
}

// inventory returns t's inventory; an inventory kubespray would refuse
// (an even number of etcd members) is an [*lcm.ParamsError] at
// master_node, before anything runs.
func (t topology) inventory() (Inventory, error) {
	var inv Inventory
	for _, m := range t.masters {
		h, err := host(m)
		if err != nil {
			return inv, err
		}
		inv.ControlPlane = append(inv.ControlPlane, h)
	}
	for _, w := range t.workers {
		h, err := host(w)
		if err != nil {
			return inv, err
		}
		inv.Nodes = append(inv.Nodes, h)
	}
	if len(t.masters)%2 == 0 {
		return inv, &lcm.ParamsError{Problems: []lcm.Problem{{
			Path:    ClusterParamKey + ".master_node",
			Message: fmt.Sprintf("Heat reports %d masters: kubespray puts every master in etcd and refuses an even number of etcd members (roles/validate_inventory); use 1, 3 or 5", len(t.masters)),
		}}}
	}
	return inv, inv.Check()
}

// endpoint returns the API URL the VIM connection names.
func (r *run) endpoint() (string, error) {
	if f := r.op.APIEndpoint; f != nil {
		return f(r.topo.all())
	}
	return "https://" + netip.MustParseAddr(r.topo.masters[0].NICAddress).String() + ":6443", nil
}

// prepare checks, read-only, what the hook needs before anything changes
// (the inventory kubespray would accept, the extensions' checks, kubespray
// and ansible-core on the Ansible server, sshpass), then collects the
// nodes' host keys and NIC MTU and writes the inventory directory.
func (r *run) prepare(ctx context.Context, inv Inventory) (Server, error) {
	if err := r.op.Extensions.Check(ctx, r.Runner, r.topo.all()); err != nil {
		return Server{}, err
	}
	var srv Server
	if err := r.Once(ctx, StepDetect, r.topo.ansible, func(ctx context.Context) (lcm.Result, error) {
		h, err := r.Session().Host(ctx, r.topo.ansible)
		if err != nil {
			return lcm.Unchanged, err
		}
		srv, err = Detect(ctx, h, r.op.Params.Ansible)
		if err == nil && !srv.SSHPass {
			err = errors.New("kubespray: the Ansible server has no sshpass, which Ansible needs to log in to the nodes with their passwords (install the sshpass package there)")
		}
		if err != nil {
			return lcm.Unchanged, err
		}
		return lcm.Result{Detail: fmt.Sprintf("kubespray %s, ansible-core %s", cmp.Or(srv.Release, "(release unknown)"), srv.Core)}, nil
	}); err != nil {
		return srv, err
	}
	return srv, r.writeInventory(ctx, srv, inv)
}

// writeInventory writes inv and its files into the inventory directory.
func (r *run) writeInventory(ctx context.Context, srv Server, inv Inventory) error {
	files, err := r.inventoryFiles(ctx, inv)
	if err != nil {
		return err
	}
	return r.Once(ctx, StepInventory, r.topo.ansible, func(ctx context.Context) (lcm.Result, error) {
		h, err := r.Session().Host(ctx, r.topo.ansible)
		if err != nil {
			return lcm.Unchanged, err
		}
		return PrepareInventory(ctx, h, srv, instanceID(r.op.Instance), files)
	})
}

// inventoryFiles renders the inventory directory's files: hosts.yaml,
// the group_vars, the logins (0600), the known_hosts of every node (read
// from this hook's own verified connections to them).
func (r *run) inventoryFiles(ctx context.Context, inv Inventory) (InventoryFiles, error) {
	keys := map[netip.Addr]string{}
	var mu sync.Mutex
	if err := r.Each(ctx, StepHostKeys, r.topo.nodes(), func(ctx context.Context, n lcm.Node) (lcm.Result, error) {
		h, err := r.Session().Host(ctx, n)
		if remote.IsUnreachable(err) && ctx.Err() == nil {
			// A VM the hook removes because it is gone: Ansible will not
			// reach it either (remove-node.yml is told so).
			return lcm.Result{Detail: "not reachable, no host key: " + err.Error()}, nil
		}
		if err != nil {
			return lcm.Unchanged, err
		}
		k, ok := h.(interface{ HostKey() string })
		if !ok || k.HostKey() == "" {
			return lcm.Unchanged, fmt.Errorf("kubespray: no verified host key for %s: the Ansible server's known_hosts needs it", n.Resource)
		}
		addr, err := netip.ParseAddr(n.SSHAddress)
		if err != nil {
			return lcm.Unchanged, err
		}
		mu.Lock()
		keys[addr.Unmap()] = k.HostKey()
		mu.Unlock()
		return lcm.Unchanged, nil
	}); err != nil {
		return InventoryFiles{}, err
	}
	mtu, err := r.mtu(ctx)
	if err != nil {
		return InventoryFiles{}, err
	}
	y, err := inv.YAML()
	if err != nil {
		return InventoryFiles{}, err
	}
	known, err := KnownHosts(keys)
	if err != nil {
		return InventoryFiles{}, err
	}
	p := r.op.Params.Cluster
	gv := GroupVars{
		PodsSubnet: p.MasterNode.PodCIDR, ServiceAddresses: p.MasterNode.ClusterCIDR, MTU: mtu,
		KnownHostsFile: path.Join(r.op.Params.Ansible.TransferringInventoryPath, KnownHostsFile),
	}
	secretProxy := false
	if pr := p.Proxy; pr != nil {
		gv.HTTPProxy, gv.HTTPSProxy = pr.HTTPProxy.Reveal(), pr.HTTPSProxy.Reveal()
		gv.AdditionalNoProxy = append(pr.NoProxyEntries(), r.op.Extensions.NoProxy()...)
		secretProxy = pr.HasCredentials()
	}
	if r.op.APIEndpoint != nil {
		u, err := r.endpoint()
		if err != nil {
			return InventoryFiles{}, err
		}
		gv.SupplementaryAddresses = []string{endpointHost(u)}
	}
	groupVars, err := gv.Files()
	if err != nil {
		return InventoryFiles{}, err
	}
	login := func(n *kubeadm.NodeParams) Login { return Login{User: n.Username, Password: n.Password} }
	masters, workers := login(&p.MasterNode), login(&p.MasterNode)
	if p.WorkerNode != nil {
		workers = login(p.WorkerNode)
	}
	logins, err := LoginFiles(masters, workers)
	if err != nil {
		return InventoryFiles{}, err
	}
	files := InventoryFiles{Files: map[string][]byte{HostsFile: y, KnownHostsFile: known}, Secret: map[string]bool{}}
	for name, b := range groupVars {
		files.Files[name] = b
		files.Secret[name] = secretProxy && strings.HasPrefix(name, "group_vars/all/")
	}
	for name, b := range logins {
		files.Files[name] = b
		files.Secret[name] = true
	}
	for _, name := range LoginFilePaths() {
		if _, ok := files.Files[name]; !ok {
			files.Absent = append(files.Absent, name)
		}
	}
	return files, nil
}

// mtu reads the MTU of the first master's cluster NIC (the calico_mtu
// kubespray derives the pods' MTU from): `ip addr show`, the interface
// that holds the NIC address.
func (r *run) mtu(ctx context.Context) (int, error) {
	if r.nicMTU > 0 { // read once per hook, whatever the inventory's rewrites
		return r.nicMTU, nil
	}
	m := r.topo.masters[0]
	var mtu int
	err := r.Once(ctx, StepMTU, m, func(ctx context.Context) (lcm.Result, error) {
		h, err := r.Session().Host(ctx, m)
		if err != nil {
			return lcm.Unchanged, err
		}
		out, err := h.Run(ctx, remote.Cmd{Args: []string{"ip", "addr", "show"}, Idempotent: true, Brief: true, ReadOnly: true})
		if err != nil {
			return lcm.Unchanged, err
		}
		if mtu, err = parseMTU(out.Stdout, m.NICAddress); err != nil {
			return lcm.Unchanged, fmt.Errorf("kubespray: %s: %w", m.Resource, err)
		}
		return lcm.Result{Detail: "MTU " + strconv.Itoa(mtu)}, nil
	})
	r.nicMTU = mtu
	return mtu, err
}

// parseMTU finds, in `ip addr show` output (iproute2 ip/ipaddress.c: an
// interface line "N: NAME: <FLAGS> mtu M ...", then its "inet A/P ..."
// lines), the MTU of the interface that holds addr.
func parseMTU(out []byte, addr string) (int, error) {
	mtu := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasSuffix(f[0], ":") && len(f) > 2 {
			mtu = 0
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "mtu" {
					mtu, _ = strconv.Atoi(f[i+1])
				}
			}
			continue
		}
		if (f[0] == "inet" || f[0] == "inet6") && len(f) > 1 {
			if a, _, ok := strings.Cut(f[1], "/"); ok && a == addr && mtu > 0 {
				return mtu, nil
			}
		}
	}
	return 0, fmt.Errorf("no interface with the address %s and an MTU in `ip addr show`", addr)
}

// Instantiate builds the cluster (instantiate_end, and heal_end of the
// entire VNF): the inventory from Heat's masters and workers, checked as
// kubespray would (an odd number of etcd members, host names); the
// extensions' checks; kubespray and ansible-core on the Ansible server
// (a version kubespray's playbooks would refuse is refused here, before
// any playbook); the inventory directory (kubespray's sample copied on
// first use, hosts.yaml, group_vars, the logins 0600, known_hosts with
// the nodes' verified keys); cluster.yml, every node expected in its
// RECAP; the extensions' work on the nodes and once the cluster is Ready;
// and the VIM credentials, at [Op.APIEndpoint].
func (c *Hooks) Instantiate(ctx context.Context, hook lcm.Hook, op Op) (*lcm.HookResult, error) {
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		inv, err := r.topo.inventory()
		if err != nil {
			return err // nothing has run
		}
		srv, err := r.prepare(ctx, inv)
		if err != nil {
			return err
		}
		if err := r.playbook(ctx, StepCluster, srv, Play{Playbook: PlaybookCluster, Expect: nodeNames(r.topo.nodes())}); err != nil {
			return err
		}
		if err := r.joined(ctx, r.topo.nodes()); err != nil {
			return err
		}
		k, cp, err := r.ControlPlane(ctx, r.topo.masters)
		if err != nil {
			return err
		}
		if err := r.op.Extensions.Ready(ctx, r.Runner, r.cluster(k, cp)); err != nil {
			return err
		}
		return r.createVIM(ctx, k, cp)
	})
}

// cluster is what the extensions' cluster-wide moments are handed.
func (r *run) cluster(k kubeapi.Kubectl, cp lcm.Node) plumbing.Cluster {
	return plumbing.Cluster{API: k, ControlPlane: cp, Nodes: r.topo.all()}
}

// joined runs the extensions' per-node moments on nodes that kubespray
// joined: BeforeJoin (registry trust, the NFS client: there is no earlier
// moment, the playbook installs the runtime as it joins) and AfterJoin.
func (r *run) joined(ctx context.Context, nodes []lcm.Node) error {
	if err := r.op.Extensions.BeforeJoin(ctx, r.Runner, nodes); err != nil {
		return err
	}
	return r.op.Extensions.AfterJoin(ctx, r.Runner, nodes)
}

// playbook runs play on the Ansible server, recorded as step.
func (r *run) playbook(ctx context.Context, step string, srv Server, play Play) error {
	return r.Once(ctx, step, r.topo.ansible, func(ctx context.Context) (lcm.Result, error) {
		h, err := r.Session().Host(ctx, r.topo.ansible)
		if err != nil {
			return lcm.Unchanged, err
		}
		recap, err := RunPlaybook(ctx, h, srv, play)
		if errors.Is(err, remote.ErrWithheld) {
			// A plan: only the playbook can tell what it would change (its
			// PLAY RECAP), and a converged cluster's run changes nothing.
			return lcm.Result{Undetermined: true, Detail: "would run " + play.Playbook + ": what it changes, only its PLAY RECAP can tell"}, nil
		}
		if err != nil {
			return lcm.Unchanged, err
		}
		return recapResult(recap), nil
	})
}

// createVIM creates the VIM credentials and adds the connection to the
// result.
func (r *run) createVIM(ctx context.Context, k kubeapi.Kubectl, cp lcm.Node) error {
	endpoint, err := r.endpoint()
	if err != nil {
		return err
	}
	var info lcm.VimConnectionInfo
	err = r.Once(ctx, StepVIM, cp, func(ctx context.Context) (lcm.Result, error) {
		var res lcm.Result
		var err error
		info, res, err = kubeapi.CreateVIMCredentials(ctx, k, kubeapi.VIMOptions{Name: r.vimName(), Endpoint: endpoint})
		return res, err
	})
	if err != nil {
		return err
	}
	r.AddVimConnection(info)
	return nil
}

// vimName is the VIM's name, which is its connection's ID.
func (r *run) vimName() string { return r.op.Params.Cluster.VimNameFor(instanceID(r.op.Instance)) }

// ScaleOut joins the workers a SCALE_OUT of worker_node's aspect created
// (scale_end; op.Instance is the instance before the scale): the
// inventory rewritten with them, kubespray's facts playbook run on every
// host (kubespray refuses `--limit` without a fact cache for the hosts it
// excludes, since v2.27), then scale.yml limited to the new workers, each
// expected in its RECAP; the extensions' work on them, and their Joined
// moment (the load balancer's backends). Another scale is not this hook's
// business: an empty result.
func (c *Hooks) ScaleOut(ctx context.Context, hook lcm.Hook, op Op, req lcm.ScaleVnfRequest) (*lcm.HookResult, error) {
	if ok, err := scales(op, req, lcm.ScaleOut); !ok {
		return emptyUnless(hook, err)
	}
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		targets := heat.ScaleOutTargets(heat.KnownNodes(op.Instance), r.topo.workers)
		return r.addWorkers(ctx, targets)
	})
}

// addWorkers joins new workers with facts.yml and scale.yml --limit.
func (r *run) addWorkers(ctx context.Context, targets []lcm.Node) error {
	if len(targets) == 0 {
		return nil
	}
	inv, err := r.topo.inventory()
	if err != nil {
		return err
	}
	srv, err := r.prepare(ctx, inv)
	if err != nil {
		return err
	}
	if err := r.playbook(ctx, StepFacts, srv, Play{Playbook: srv.FactsPlaybook, Expect: nodeNames(r.topo.nodes())}); err != nil {
		return err
	}
	if err := r.playbook(ctx, StepScale, srv, Play{Playbook: PlaybookScale, Limit: nodeNames(targets), Expect: nodeNames(targets)}); err != nil {
		return err
	}
	if err := r.joined(ctx, targets); err != nil {
		return err
	}
	k, cp, err := r.ControlPlane(ctx, r.topo.masters)
	if err != nil {
		return err
	}
	return r.op.Extensions.Joined(ctx, r.Runner, r.cluster(k, cp), targets)
}

// ScaleIn removes the workers a SCALE_IN of worker_node's aspect will
// delete (scale_start): the extensions' Removing moment first (the load
// balancer stops sending them traffic), then, one worker at a time,
// kubespray's remove-node.yml with the node named explicitly (`-e
// node=NAME`: before v2.28 a missing node removed every node) and the
// confirmation given as variables (no terminal: a prompt would fail the
// play), which drains, resets and deletes it; a worker whose VM does not
// answer is removed with reset_nodes=false and
// allow_ungraceful_removal=true. The node must be in the RECAP and gone
// from the API; then it is dropped from the inventory.
func (c *Hooks) ScaleIn(ctx context.Context, hook lcm.Hook, op Op, req lcm.ScaleVnfRequest) (*lcm.HookResult, error) {
	if ok, err := scales(op, req, lcm.ScaleIn); !ok {
		return emptyUnless(hook, err)
	}
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error {
		targets, err := r.Session().Heat().ScaleInTargets(ctx, r.Session().Stack(), op.Params.Cluster.WorkerNode.Group(lcm.RoleWorker), req)
		if err != nil {
			return err
		}
		return r.removeWorkers(ctx, targets)
	})
}

// removeWorkers removes workers with remove-node.yml, one at a time.
func (r *run) removeWorkers(ctx context.Context, targets []lcm.Node) error {
	if len(targets) == 0 {
		return nil
	}
	inv, err := r.topo.inventory()
	if err != nil {
		return err
	}
	srv, err := r.prepare(ctx, inv) // the targets still in the inventory
	if err != nil {
		return err
	}
	rest := r.topo.without(targets)
	k, cp, err := r.ControlPlane(ctx, rest.masters)
	if err != nil {
		return err
	}
	if err := r.op.Extensions.Removing(ctx, r.Runner, r.cluster(k, cp), targets); err != nil {
		return err
	}
	for _, t := range targets {
		name := nodeName(t)
		play := Play{Playbook: PlaybookRemoveNode, Expect: []string{name}, ExtraVars: [][2]string{
			{"node", name}, {"skip_confirmation", "true"}, {"delete_nodes_confirmation", "yes"},
		}}
		if _, err := r.Session().Host(ctx, t); remote.IsUnreachable(err) {
			// The VM is gone: nothing to reset, nothing to drain to.
			play.ExtraVars = append(play.ExtraVars, [2]string{"reset_nodes", "false"}, [2]string{"allow_ungraceful_removal", "true"})
			play.Expect = nil // an unreachable host may not be in the RECAP
		}
		if err := r.playbook(ctx, StepRemoveNode, srv, play); err != nil {
			return err
		}
		node, err := k.Node(ctx, name)
		if err != nil {
			return err
		}
		if node != nil {
			return fmt.Errorf("kubespray: remove-node.yml ran for %s but the node is still in the cluster", name)
		}
		r.topo = r.topo.without([]lcm.Node{t})
		if inv, err = r.topo.inventory(); err != nil {
			return err
		}
		if err := r.writeInventory(ctx, srv, inv); err != nil {
			return err
		}
	}
	return nil
}

// HealStart prepares a heal (heal_start): a worker is removed as at
// scale-in; a master is refused before anything runs (kubespray cannot
// heal a control-plane node); an extension's VM (the storage server) is
// the extension's ([plumbing.Extension] HealStart). The entire VNF:
// [Hooks.Revoke], and the VIM connection reported for the VNFM to remove.
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
		if err := r.removeWorkers(ctx, lcm.NodesWithRole(plan, lcm.RoleWorker)); err != nil {
			return err
		}
		return r.op.Extensions.HealOthers(ctx, r.Runner, r.topo.masters, r.topo.all(), plan, false)
	})
}

// HealEnd finishes a heal (heal_end): a healed worker's new VM joins as
// at scale-out; an extension's VM is the extension's. The entire VNF:
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
		workers := lcm.NodesWithRole(plan, lcm.RoleWorker)
		if len(workers) == 0 { // addWorkers checks the extensions when it has workers to add
			if err := r.op.Extensions.Check(ctx, r.Runner, r.topo.all()); err != nil {
				return err // nothing has changed
			}
		}
		if err := r.addWorkers(ctx, workers); err != nil {
			return err
		}
		return r.op.Extensions.HealOthers(ctx, r.Runner, r.topo.masters, r.topo.all(), plan, true)
	})
}

// healTargets resolves a heal's VNFCs to the VMs the hooks manage; a
// master among them is refused, naming it, before anything runs.
func (r *run) healTargets(req lcm.HealVnfRequest) ([]lcm.Node, error) {
	plan, err := r.HealTargets(r.op.Instance, req, r.topo.all())
	if err != nil {
		return nil, err
	}
	if masters := lcm.NodesWithRole(plan, lcm.RoleMaster); len(masters) > 0 {
		r.Note(StepHealNoMaster, masters, errNoMaster.Error())
		return nil, &lcm.ParamsError{Problems: []lcm.Problem{{Path: "vnfcInstanceId", Message: fmt.Sprintf("names the master %s: %v", masters[0].Resource, errNoMaster)}}}
	}
	return plan, nil
}

// Revoke deletes the VIM credentials from the cluster when a master
// answers (terminate_start; heal_start of the entire VNF).
func (c *Hooks) Revoke(ctx context.Context, hook lcm.Hook, op Op) (*lcm.HookResult, error) {
	return c.run(ctx, hook, op, func(ctx context.Context, r *run) error { return r.revoke(ctx) })
}

// revoke is [Hooks.Revoke]'s work.
func (r *run) revoke(ctx context.Context) error {
	k, cp, err := r.ControlPlane(ctx, r.topo.masters)
	if err != nil {
		r.Note(StepRevokeVIM, r.topo.masters[:1], "no master answers: nothing to revoke")
		return nil
	}
	return r.Once(ctx, StepRevokeVIM, cp, func(ctx context.Context) (lcm.Result, error) {
		return kubeapi.DeleteVIMCredentials(ctx, k, kubeapi.VIMOptions{Name: r.vimName()})
	})
}

// Terminate is terminate_end: the inventory directory removed from the
// Ansible server (when it is this VNF's) and the VIM connection reported
// for the VNFM to forget. The VMs are gone; the Ansible server, outside
// the VNF, is not. Its known_hosts and everything else of its login are
// left alone.
func (c *Hooks) Terminate(ctx context.Context, hook lcm.Hook, op Op) (*lcm.HookResult, error) {
	a := op.Params.Ansible
	res, err := c.Plumbing.Run(ctx, hook, op.Instance, a.VMs().Logins, func(ctx context.Context, r *plumbing.Runner) error {
		r.RemoveVimConnection(op.Params.Cluster.VimNameFor(instanceID(op.Instance)))
		return r.Once(ctx, StepRemoveInv, a.Node(), func(ctx context.Context) (lcm.Result, error) {
			h, err := r.Session().Host(ctx, a.Node())
			if err != nil {
				return lcm.Unchanged, err
			}
			return RemoveInventory(ctx, h, a, instanceID(op.Instance))
		})
	})
	return res, err
}

// scales reports whether req is a scale of type t of worker_node's
// aspect; any other aspect is an [*lcm.ParamsError].
func scales(op Op, req lcm.ScaleVnfRequest, t lcm.ScaleType) (bool, error) {
	if req.Type != t {
		return false, nil
	}
	w := op.Params.Cluster.WorkerNode
	if w != nil && w.AspectID != "" && req.AspectID == w.AspectID {
		return true, nil
	}
	return false, &lcm.ParamsError{Problems: []lcm.Problem{{Path: "aspectId", Message: fmt.Sprintf("is %q, which is not worker_node's aspect_id: kubespray scales workers only", req.AspectID)}}}
}

// emptyUnless returns err, or an empty result of hook when it is nil.
func emptyUnless(hook lcm.Hook, err error) (*lcm.HookResult, error) {
	if err != nil {
		return nil, err
	}
	return &lcm.HookResult{Hook: hook}, nil
}

// instanceID returns the instance's ID, "" without one.
func instanceID(inst *lcm.VnfInstance) string {
	if inst == nil {
		return ""
	}
	return inst.ID
}

// nodeNames returns the node names of nodes.
func nodeNames(nodes []lcm.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, nodeName(n))
	}
	return out
}

// endpointHost returns the host of an "https://host:port" URL.
func endpointHost(u string) string {
	h := strings.TrimPrefix(u, "https://")
	if i := strings.LastIndexByte(h, ':'); i > 0 {
		h = h[:i]
	}
	return strings.Trim(h, "[]")
}

// recapResult summarises a playbook's RECAP as a step's result: changed
// when a task changed a host.
func recapResult(r Recap) lcm.Result {
	var changed []string
	total := 0
	for _, h := range slices.Sorted(maps.Keys(r.Hosts)) {
		s := r.Hosts[h]
		total += s.Changed
		if s.Changed > 0 {
			changed = append(changed, h)
		}
	}
	detail := fmt.Sprintf("%d hosts in the PLAY RECAP", len(r.Hosts))
	if total == 0 {
		return lcm.Result{Detail: detail + ", nothing changed"}
	}
	return lcm.Changed(fmt.Sprintf("%s, %d tasks changed %s", detail, total, strings.Join(changed, ", ")))
}

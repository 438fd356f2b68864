package kubeadm

import (
	"context"
	"net"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// nodeBuilder is how a hook makes prepared VMs into the cluster's nodes.
// Two exist: mgmtkit's own steps ([nativeBuilder]) and the VNF package's
// install script ([scriptBuilder], the reference's compatibility mode,
// which [Hooks.InstallScript] opts in to). [Hooks.builder] picks one per
// hook; the hooks call it at the same points whatever it is, and no
// other code asks which it is.
type nodeBuilder interface {
	// cni returns the pod network to install after kubeadm init; an
	// error is an [*lcm.ParamsError]: nothing has run.
	cni(op Op) (cniPlan, error)
	// build makes prepared nodes ready to join.
	build(ctx context.Context, r *run, nodes []lcm.Node) error
	// initialize makes the first master n the cluster's first control
	// plane.
	initialize(ctx context.Context, r *run, n lcm.Node, h remote.Host) (lcm.Result, error)
	// join makes n, not a member yet, a member with ji: a control plane
	// when n is a master.
	join(ctx context.Context, r *run, n lcm.Node, h remote.Host, ji JoinInfo) (lcm.Result, error)
	// joined finishes nodes once every one of them is a member and Ready.
	joined(ctx context.Context, r *run, nodes []lcm.Node) error
	// installsPackages reports whether build installs kubeadm, kubelet
	// and kubectl at kubernetes_version from pkgs.k8s.io, which the
	// preflight then checks the repository offers.
	installsPackages() bool
}

// builder returns how the hooks build the nodes of a cluster with
// parameters p: the install script when [Hooks.InstallScript] is set and
// p names one, mgmtkit's steps otherwise.
func (c *Hooks) builder(p ClusterParams) nodeBuilder {
	if c.InstallScript && p.ScriptPath != "" {
		return scriptBuilder{}
	}
	return nativeBuilder{}
}

// nativeBuilder builds nodes with mgmtkit's steps: containerd, the
// extensions' per-node work, the Kubernetes packages, then kubeadm init
// and join with configurations mgmtkit renders.
type nativeBuilder struct{}

// cni reads cni_manifest_path, or plans Calico without one: the native
// steps need a pod network, or no node becomes Ready.
func (nativeBuilder) cni(op Op) (cniPlan, error) { return readCNI(op, false) }

// build installs containerd, runs the extensions, and installs the
// Kubernetes packages. A script_path is reported as not used.
func (nativeBuilder) build(ctx context.Context, r *run, nodes []lcm.Node) error {
	if script := r.op.Params.ScriptPath; script != "" {
		r.Note(StepInstallScript, nodes, "script_path "+script+" not used: mgmtkit's steps build the node")
	}
	proxy := r.proxy()
	version := r.op.Params.KubernetesVersion
	if err := r.OnNodes(ctx, StepContainerd, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return InstallContainerd(ctx, h, RuntimeOptions{Version: version, Proxy: proxy})
	}); err != nil {
		return err
	}
	if err := r.op.Extensions.BeforeJoin(ctx, r.Runner, nodes); err != nil {
		return err
	}
	return r.OnNodes(ctx, StepKubernetes, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return InstallKubernetes(ctx, h, PackagesOptions{Version: version, Proxy: proxy})
	})
}

// initialize runs kubeadm init.
func (nativeBuilder) initialize(ctx context.Context, r *run, n lcm.Node, h remote.Host) (lcm.Result, error) {
	return InitControlPlane(ctx, h, r.initOptions(n))
}

// join runs kubeadm join.
func (nativeBuilder) join(ctx context.Context, _ *run, n lcm.Node, h remote.Host, ji JoinInfo) (lcm.Result, error) {
	return JoinNode(ctx, h, JoinOptions{
		NodeName:         NodeName(n.Role, n.NICAddress),
		AdvertiseAddress: n.NICAddress,
		ControlPlane:     n.Role == lcm.RoleMaster,
		Info:             ji,
	})
}

// joined has nothing left to do: the extensions ran before the join.
func (nativeBuilder) joined(context.Context, *run, []lcm.Node) error { return nil }

// installsPackages is true: build installs kubernetes_version.
func (nativeBuilder) installsPackages() bool { return true }

// scriptBuilder builds nodes with the VNF package's install script
// ([RunInstallScript]): the script installs the runtime and Kubernetes
// and runs kubeadm itself, so building only prepares the node, and the
// extensions' per-node work runs once the node has joined, as the
// reference configures its registries after the script.
type scriptBuilder struct{}

// cni reads cni_manifest_path when given: the reference's script
// installs a pod network of its own (Calico).
func (scriptBuilder) cni(op Op) (cniPlan, error) { return readCNI(op, true) }

// build has nothing to add to the prepared node: the script does it.
func (scriptBuilder) build(context.Context, *run, []lcm.Node) error { return nil }

// initialize runs the script's main-master form.
func (scriptBuilder) initialize(ctx context.Context, r *run, n lcm.Node, h remote.Host) (lcm.Result, error) {
	return RunInstallScript(ctx, h, r.op.Package, scriptOptions(r, n, nil))
}

// join runs the script with the join credentials.
func (scriptBuilder) join(ctx context.Context, r *run, n lcm.Node, h remote.Host, ji JoinInfo) (lcm.Result, error) {
	return RunInstallScript(ctx, h, r.op.Package, scriptOptions(r, n, &ji))
}

// joined runs the extensions' per-node work of the moment before the
// join: the runtime they configure exists only now.
func (scriptBuilder) joined(ctx context.Context, r *run, nodes []lcm.Node) error {
	return r.op.Extensions.BeforeJoin(ctx, r.Runner, nodes)
}

// installsPackages is false: the script installs Kubernetes its own way.
func (scriptBuilder) installsPackages() bool { return false }

// scriptOptions returns the install script's options for node n: a
// master's run (every master, the first first, and the cluster's
// networks) or a worker's, joining with ji unless it is the first
// master's run.
func scriptOptions(r *run, n lcm.Node, ji *JoinInfo) ScriptOptions {
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

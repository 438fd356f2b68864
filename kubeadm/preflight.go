package kubeadm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// StepPreflight is the read-only step the hooks that build nodes
// (instantiate_end, scale_end, heal_end) run right after Heat resolution,
// before any command that changes a node: it asks dpkg whether the nodes
// to build have kubeadm, kubelet and kubectl at kubernetes_version, and,
// when one lacks them, reads the package repository's index to see that
// it offers that version. Its result is always unchanged.
const StepPreflight = "preflight"

// preflight refuses, after Heat resolution and before the first command
// that changes a node, what only the topology or a read-only look at a
// node can tell; nodes are those the hook builds:
//   - a pod or Service network that holds one of the cluster's own
//     addresses ([clusterAddresses]: every node's, the virtual IP, the
//     floating IP), an [*lcm.ParamsError] naming the network's field,
//     the node and the address; no command runs for it;
//   - a kubernetes_version the package repository does not offer
//     ([run.checkVersion]), an [*lcm.ParamsError] at kubernetes_version
//     naming what it offers, found with read-only commands only.
func (r *run) preflight(ctx context.Context, nodes []lcm.Node) error {
	if err := checkAddresses(r.op.Params, clusterAddresses(r.topo)); err != nil {
		return err
	}
	if len(nodes) == 0 || !r.nodes.installsPackages() {
		// The install script installs Kubernetes its own way, from
		// versions of its own: kubernetes_version is not what it asks
		// the repository for.
		return nil
	}
	return r.checkVersion(ctx, nodes)
}

// clusterAddress is an address of the cluster's own and whose it is.
type clusterAddress struct {
	addr netip.Addr
	who  string // "node master-0 (master), its NIC address"
}

// clusterAddresses returns the cluster's own addresses: each node's NIC
// and SSH addresses, the virtual IP and the floating IP. Every VM the
// hook resolves belongs here, the extensions' own VMs (the storage
// server) included.
func clusterAddresses(t Topology) []clusterAddress {
	var out []clusterAddress
	add := func(s, who string) {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, clusterAddress{a.Unmap(), who})
		}
	}
	for _, n := range t.All() {
		node := fmt.Sprintf("node %s (%s)", n.Resource, n.Role)
		if n.SSHAddress == n.NICAddress {
			add(n.NICAddress, node+", its NIC and SSH address")
			continue
		}
		add(n.NICAddress, node+", its NIC address")
		add(n.SSHAddress, node+", its SSH address")
	}
	if t.VIP.IsValid() {
		add(t.VIP.String(), "the virtual IP (cluster_cp_name)")
	}
	add(t.FloatingIP, "the floating IP (cluster_fip_name)")
	return out
}

// checkAddresses refuses a pod network (pod_cidr) or Service network
// (cluster_cidr) that holds one of addrs. A node whose address is in the
// pod network has its own traffic routed to pods by the CNI's routes
// (Calico's per-block routes, flannel's per-node subnets); an address in
// the Service network may become a Service's ClusterIP, which kube-proxy
// then rewrites on every node. Neither is seen before the cluster runs:
// kubeadm checks only that the two networks do not overlap each other
// (cmd/kubeadm/app/apis/kubeadm/validation ValidateNetworking).
func checkAddresses(p ClusterParams, addrs []clusterAddress) error {
	var probs optProblems
	for _, nw := range []struct {
		field, what string
		prefix      netip.Prefix
	}{
		{"pod_cidr", "pod network", p.MasterNode.PodCIDR},
		{"cluster_cidr", "Service network", p.MasterNode.ClusterCIDR},
	} {
		if !nw.prefix.IsValid() {
			continue
		}
		var in []string
		for _, a := range addrs {
			if nw.prefix.Contains(a.addr) {
				in = append(in, a.addr.String()+" of "+a.who)
			}
		}
		if in != nil {
			probs.addf(ClusterParamKey+".master_node."+nw.field, "the %s %s holds the cluster's own addresses, which must lie outside it: %s",
				nw.what, nw.prefix, strings.Join(in, "; "))
		}
	}
	return probs.err()
}

// checkVersion refuses a kubernetes_version the package repository does
// not offer, before anything is installed (a missing version otherwise
// fails at apt-get install, after every node was prepared and given a
// container runtime).
//
// dpkg is asked first, on every node of nodes: a node that has kubeadm,
// kubelet and kubectl at the version needs nothing from the repository,
// and when every node has them (a converged cluster, a second run) the
// check ends there, one read-only command per node, without reaching the
// Internet. Otherwise the repository's package index is read once, on the
// first node that lacks them, the node that installs from it first (the
// first master at instantiation), with curl through the cluster's proxy
// as the install's own curl and apt go ([FetchManifest]).
//
// A repository that cannot be read fails the hook here, naming the URL:
// the install would fail the same way (it fetches the repository's key
// with curl from that node, through that proxy), after changing the
// nodes; failing first leaves them as they were.
func (r *run) checkVersion(ctx context.Context, nodes []lcm.Node) error {
	v := cmp.Or(r.op.Params.KubernetesVersion, DefaultKubernetesVersion)
	var opts []lcm.Option
	if l := r.hooks.Plumbing.Limit; l > 0 {
		opts = append(opts, lcm.Limit(l))
	}
	var mu sync.Mutex
	lacking := map[string]bool{}
	rs, err := r.Session().OnNodes(ctx, StepPreflight, nodes, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		have, err := system.InstalledVersions(ctx, h, kubernetesPackages()...)
		if err != nil {
			return lcm.Unchanged, stepErr(h, "asking dpkg for kubeadm, kubelet and kubectl", err)
		}
		for _, name := range kubernetesPackages() {
			if !versionOffered(v, have[name]) {
				mu.Lock()
				lacking[n.Resource] = true
				mu.Unlock()
				return lcm.Result{Detail: fmt.Sprintf("kubeadm, kubelet and kubectl %s are not all installed", v)}, nil
			}
		}
		return lcm.Result{Detail: fmt.Sprintf("kubeadm, kubelet and kubectl %s installed", have["kubeadm"])}, nil
	}, opts...)
	defer func() { r.Record(StepPreflight, rs) }()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(nodes, func(n lcm.Node) bool { return lacking[n.Resource] })
	if i < 0 {
		return nil
	}
	n := nodes[i]
	h, err := r.Session().Host(ctx, n)
	if err == nil {
		var offered []string
		offered, err = repositoryVersions(ctx, h, v, r.proxy())
		if err == nil {
			rs[i].Result.Detail += "; " + KubernetesRepo(v) + " offers " + strings.Join(newest(offered, 3), ", ")
			if !slices.ContainsFunc(offered, func(o string) bool { return versionOffered(v, o) }) {
				return versionMissing(v, offered)
			}
			return nil
		}
	}
	rs[i].Err = fmt.Errorf("kubeadm: kubernetes_version %s: reading its package repository failed (nothing was changed): %w", v, err)
	return &lcm.HostError{Host: n.Name(), Step: StepPreflight, Err: rs[i].Err}
}

// versionOffered reports whether the Debian version deb of kubeadm,
// kubelet or kubectl is what installing v takes: for a patch release
// exactly [PackageVersion] (the version [InstallKubernetes] pins), for a
// minor any patch of it.
func versionOffered(v Version, deb string) bool {
	if v.IsPatch() {
		return deb == PackageVersion(v)
	}
	return deb != "" && strings.HasPrefix(deb, string(v)+".")
}

// repositoryVersions reads the package index of v's repository on h
// ([KubernetesRepo] + "Packages": pkgs.k8s.io's repositories are flat,
// named in sources.list as "deb URI /", and apt reads the index from the
// directory itself, sources.list(5) and
// https://wiki.debian.org/DebianRepository/Format#Flat_Repository_Format)
// and returns the Debian versions at which it offers kubeadm, kubelet and
// kubectl all three, the versions [InstallKubernetes] can install.
func repositoryVersions(ctx context.Context, h remote.Host, v Version, proxy *system.Proxy) ([]string, error) {
	index, err := FetchManifest(ctx, h, KubernetesRepo(v)+"Packages", proxy)
	if err != nil {
		return nil, err
	}
	byPackage := packageVersions(index)
	var all []string
	for i, name := range kubernetesPackages() {
		if i == 0 {
			all = byPackage[name]
			continue
		}
		all = slices.DeleteFunc(all, func(v string) bool { return !slices.Contains(byPackage[name], v) })
	}
	return all, nil
}

// packageVersions reads a binary package index (a Packages file:
// paragraphs separated by blank lines, each a package version's control
// fields, "Package:" and "Version:" among them; continuation lines begin
// with a space or tab; https://wiki.debian.org/DebianRepository/Format,
// "Packages Indices", and deb822(5)) and returns every version of each
// package, once each, in the order of the index.
func packageVersions(index []byte) map[string][]string {
	out := map[string][]string{}
	var name, version string
	flush := func() {
		if name != "" && version != "" && !slices.Contains(out[name], version) {
			out[name] = append(out[name], version)
		}
		name, version = "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(index))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			// A continuation line (Description's long part).
		default:
			k, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch strings.ToLower(k) { // field names are case-insensitive
			case "package":
				name = strings.TrimSpace(val)
			case "version":
				version = strings.TrimSpace(val)
			}
		}
	}
	flush()
	return out
}

// versionMissing is the ParamsError of a kubernetes_version the
// repository does not offer, naming the newest versions it does.
func versionMissing(v Version, offered []string) error {
	want := "of any " + string(v) + " patch release"
	if v.IsPatch() {
		want = "at " + PackageVersion(v)
	}
	has := "offers no version of all three"
	if len(offered) > 0 {
		has = "offers " + strings.Join(newest(offered, 5), ", ")
		if len(offered) > 5 {
			has += fmt.Sprintf(" (the newest 5 of %d)", len(offered))
		}
	}
	return &lcm.ParamsError{Problems: []lcm.Problem{{
		Path: ClusterParamKey + ".kubernetes_version",
		Message: fmt.Sprintf("is %q, but the package repository %s has no kubeadm, kubelet and kubectl %s: it %s",
			v, KubernetesRepo(v), want, has),
	}}}
}

// newest returns at most n of the Debian versions vs, newest first.
func newest(vs []string, n int) []string {
	vs = slices.Clone(vs)
	slices.SortFunc(vs, func(a, b string) int { return compareDebVersions(b, a) })
	return vs[:min(n, len(vs))]
}

// compareDebVersions orders the versions pkgs.k8s.io gives its packages
// ("1.36.3-1.1": dot-separated numbers, a hyphen, the build's revision)
// by their numbers, upstream version first; what is not a number
// compares as text.
func compareDebVersions(a, b string) int {
	fields := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}
	fa, fb := fields(a), fields(b)
	for i := range min(len(fa), len(fb)) {
		na, ea := strconv.Atoi(fa[i])
		nb, eb := strconv.Atoi(fb[i])
		if ea == nil && eb == nil {
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(fa[i], fb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(fa), len(fb))
}

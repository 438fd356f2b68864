package kubeadm

import (
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// ClusterParamKey is the top-level additionalParams key of a Kubernetes
// cluster VNF's parameters; this package owns its base keys
// ([ClusterParams]).
const ClusterParamKey = "k8s_cluster_installation_param"

// The defaults of [ClusterParams] and [NodeParams], as the reference's.
const (
	// DefaultPodCIDR is master_node.pod_cidr when absent: the pod network
	// (kubeadm's podSubnet, --pod-network-cidr).
	DefaultPodCIDR = "192.168.0.0/16"
	// DefaultClusterCIDR is master_node.cluster_cidr when absent: the
	// Service network (kubeadm's serviceSubnet, --service-cidr).
	DefaultClusterCIDR = "10.96.0.0/12"
	// VimNamePrefix starts the default vim_name, "kubernetes_vim_" and the
	// VNF instance ID (see [ClusterParams.VimNameFor]).
	VimNamePrefix = "kubernetes_vim_"
	// DefaultKubernetesVersion is kubernetes_version when absent: the
	// newest minor the real-control-plane tests run.
	DefaultKubernetesVersion Version = "1.36"
	// DefaultDrainTimeout is drain_timeout when absent or 0.
	DefaultDrainTimeout = kubeapi.DefaultDrainTimeout
	// MaxDrainTimeout caps drain_timeout: a drain is bounded, and a day is
	// more than any drain that can finish needs.
	MaxDrainTimeout = 24 * time.Hour
)

// ClusterParams is this package's part of k8s_cluster_installation_param:
// the cluster's base keys. A driver embeds it in its own parameter struct
// next to other packages' parts (registry.TrustParams, ...); see the
// package documentation.
//
// Validation checks every field, fills in the defaults (master_node's
// CIDRs, kubernetes_version, drain_timeout), makes package paths canonical
// and clears host bits of CIDRs, and refuses pod, Service and node
// networks that overlap or are not all of one IP family (a single-stack
// cluster), all before anything runs.
type ClusterParams struct {
	// ScriptPath is script_path: the reference's install script in the VNF
	// package (Scripts/install_k8s_cluster.sh), for drivers that run it
	// instead of mgmtkit's steps. Optional; when given, it must be a file
	// in the package, and validation makes it the canonical package path.
	ScriptPath string `json:"script_path" params:"nonempty"`
	// VimName is vim_name: the name under which the cluster is registered
	// as a VIM. Empty: [VimNamePrefix] and the VNF instance ID (see
	// [ClusterParams.VimNameFor]).
	VimName string `json:"vim_name" params:"max=255"`
	// MasterNode is master_node: the control-plane VMs. Its pod_cidr and
	// cluster_cidr are the cluster's networks.
	MasterNode NodeParams `json:"master_node" params:"required"`
	// WorkerNode is worker_node: the worker VMs; nil when the cluster has
	// only masters. It takes neither the cluster's CIDRs nor
	// cluster_cp_name and cluster_fip_name: those are master_node's, and
	// a worker_node that names them is refused rather than ignored (the
	// reference ignores them).
	WorkerNode *NodeParams `json:"worker_node"`
	// Proxy is proxy: the HTTP proxy the nodes reach package repositories
	// and public images through; nil without one.
	Proxy *Proxy `json:"proxy"`
	// HelmInstallationScriptPath is helm_installation_script_path: a
	// script in the VNF package that installs Helm on the masters.
	// Optional; validated as ScriptPath is.
	HelmInstallationScriptPath string `json:"helm_installation_script_path" params:"nonempty"`

	// KubernetesVersion is kubernetes_version, an mgmtkit extension: the
	// Kubernetes release to install, "1.36" (the newest patch of that
	// minor) or "1.36.3"; a leading "v" is accepted and dropped.
	// [DefaultKubernetesVersion] when absent. pkgs.k8s.io, where the
	// packages come from, starts at 1.24.
	KubernetesVersion Version `json:"kubernetes_version"`
	// CNIManifestPath is cni_manifest_path, an mgmtkit extension: the
	// manifest of the pod network (Calico, Flannel, ...) in the VNF
	// package, applied after kubeadm init. Optional; validated as
	// ScriptPath is. Absent, the cluster gets Calico
	// [DefaultCalicoVersion] from its release manifest
	// ([DefaultCalicoManifestURL], downloaded by the first master through
	// the proxy), as the reference's install script installs Calico;
	// with an IPv6 pod_cidr it is required (Calico's manifest is
	// IPv4-only). pod_cidr must hold every node's share of the pod
	// network under the CNI's IPAM: a /24 per node for flannel and
	// plugins that use the node's podCIDR, a /26 block per node for
	// Calico (see [PodNetwork.CheckPodCapacity]).
	CNIManifestPath string `json:"cni_manifest_path" params:"nonempty"`
	// DrainTimeout is drain_timeout, an mgmtkit extension: how many
	// seconds a node's drain may take before scale-in or heal gives up on
	// it, 1 to 86400; a number or a decimal string. Validation sets it to
	// [DefaultDrainTimeout] when absent or 0. See [ClusterParams.Drain].
	DrainTimeout lcm.Int `json:"drain_timeout"`
}

// VimNameFor returns vim_name, or the reference's default for the VNF
// instance instanceID: "kubernetes_vim_<instanceID>".
func (p ClusterParams) VimNameFor(instanceID string) string {
	if p.VimName != "" {
		return p.VimName
	}
	return VimNamePrefix + instanceID
}

// Drain returns drain_timeout as a duration, [DefaultDrainTimeout] when
// it is 0.
func (p ClusterParams) Drain() time.Duration {
	if p.DrainTimeout <= 0 {
		return DefaultDrainTimeout
	}
	return time.Duration(p.DrainTimeout) * time.Second
}

// Groups returns where Heat keeps the nodes: master_node's group, and
// worker_node's when there is one.
func (p ClusterParams) Groups() []heat.Group {
	groups := []heat.Group{p.MasterNode.Group(lcm.RoleMaster)}
	if p.WorkerNode != nil {
		groups = append(groups, p.WorkerNode.Group(lcm.RoleWorker))
	}
	return groups
}

// Validate checks the fields that depend on each other, after each
// node's and the proxy's own Validate: the package paths, the version,
// the drain timeout, which keys worker_node may have, master_node's
// networks (defaults filled in) and that the pod, Service and node
// networks do not overlap.
func (p *ClusterParams) Validate(v *lcm.Validator) {
	for _, f := range []struct {
		key  string
		path *string
	}{
		{"script_path", &p.ScriptPath},
		{"helm_installation_script_path", &p.HelmInstallationScriptPath},
		{"cni_manifest_path", &p.CNIManifestPath},
	} {
		if *f.path == "" {
			continue
		}
		if resolved, ok := v.PackageFile(f.key, *f.path); ok {
			*f.path = resolved
		}
	}
	switch {
	case strings.ContainsFunc(p.VimName, unicode.IsControl):
		v.At("vim_name").Errorf("must not contain control characters, got %q", p.VimName)
	case strings.ContainsFunc(p.VimName, invisibleRune):
		v.At("vim_name").Errorf("must not contain invisible formatting characters (bidirectional controls, zero-width characters), got %+q", p.VimName)
	case p.VimName != "" && strings.TrimSpace(p.VimName) == "":
		// CreateVIMCredentials refuses it too, but only once the cluster
		// is built.
		v.At("vim_name").Errorf("must not be blank: it is the VIM connection's ID, got %q", p.VimName)
	}
	if p.KubernetesVersion == "" {
		p.KubernetesVersion = DefaultKubernetesVersion
	} else if canonical, msg := parseVersion(string(p.KubernetesVersion)); msg != "" {
		v.At("kubernetes_version").Errorf("%s, got %q", msg, p.KubernetesVersion)
	} else {
		p.KubernetesVersion = canonical
	}
	switch limit := lcm.Int(MaxDrainTimeout / time.Second); {
	case p.DrainTimeout == 0:
		p.DrainTimeout = lcm.Int(DefaultDrainTimeout / time.Second)
	case p.DrainTimeout < 0 || p.DrainTimeout > limit:
		v.At("drain_timeout").Errorf("must be a number of seconds from 1 to %d, got %d", limit, p.DrainTimeout)
	}
	if w := p.WorkerNode; w != nil {
		wv := v.At("worker_node")
		for _, f := range []struct {
			key string
			set bool
		}{
			{"pod_cidr", w.PodCIDR.IsValid()},
			{"cluster_cidr", w.ClusterCIDR.IsValid()},
			{"cluster_cp_name", w.ClusterCPName != ""},
			{"cluster_fip_name", w.ClusterFIPName != ""},
		} {
			if f.set {
				wv.At(f.key).Errorf("is a master_node key: the cluster has one pod network, one Service network and one API address, given with its masters")
			}
		}
	}
	p.checkNetworks(v)
}

// checkNetworks fills in master_node's CIDRs and checks them as kubeadm
// would (ValidateNetworking in
// cmd/kubeadm/app/apis/kubeadm/validation/validation.go), and checks that
// the pod, Service and node networks are disjoint: a Service or pod
// address that is also a node's would route to the wrong place.
func (p *ClusterParams) checkNetworks(v *lcm.Validator) {
	m := &p.MasterNode
	mv := v.At("master_node")
	if !m.PodCIDR.IsValid() {
		m.PodCIDR = netip.MustParsePrefix(DefaultPodCIDR)
	}
	if !m.ClusterCIDR.IsValid() {
		m.ClusterCIDR = netip.MustParsePrefix(DefaultClusterCIDR)
	}
	// kubeadm: the Service subnet holds at least 10 addresses
	// (MinimumAddressesInServiceSubnet: the DNS Service takes the tenth)
	// and at most 2^20 (MaximumBitsForServiceSubnet).
	if hostBits := m.ClusterCIDR.Addr().BitLen() - m.ClusterCIDR.Bits(); hostBits > 20 {
		mv.At("cluster_cidr").Errorf("%s is too large: kubeadm takes a Service network of at most 2^20 addresses (a /%d)", m.ClusterCIDR, m.ClusterCIDR.Addr().BitLen()-20)
	} else if hostBits < 4 {
		mv.At("cluster_cidr").Errorf("%s is too small: kubeadm needs at least 10 Service addresses (a /%d)", m.ClusterCIDR, m.ClusterCIDR.Addr().BitLen()-4)
	}
	// kubeadm: with the controller manager's default node CIDR mask (/24
	// for IPv4, /64 for IPv6), the pod subnet holds at least one node's
	// CIDR and is at most 16 bits shorter (PodSubnetNodeMaskMaxDiff).
	nodeMask := 24
	if m.PodCIDR.Addr().Is6() {
		nodeMask = 64
	}
	if bits := m.PodCIDR.Bits(); bits > nodeMask {
		mv.At("pod_cidr").Errorf("%s is too small: kubeadm gives every node a /%d of the pod network", m.PodCIDR, nodeMask)
	} else if nodeMask-bits > 16 {
		mv.At("pod_cidr").Errorf("%s is too large: kubeadm takes a pod network of at most 2^16 node subnets (a /%d)", m.PodCIDR, nodeMask-16)
	}

	for _, n := range []struct {
		key    string
		at     *lcm.Validator
		prefix netip.Prefix
		kind   string
	}{
		{"pod_cidr", mv, m.PodCIDR, "pod"},
		{"cluster_cidr", mv, m.ClusterCIDR, "Service"},
		{"k8s_node_cidr", v.At("proxy"), nodeCIDR(p.Proxy), "node"},
	} {
		if msg := unusableNetworkMsg(n.prefix); msg != "" {
			n.at.At(n.key).Errorf("%s %s: it cannot hold %s addresses", n.prefix, msg, n.kind)
		}
	}

	// The default is named as such whether it was given or filled in, so
	// that a second run reports what the first did.
	type network struct {
		path   string
		prefix netip.Prefix
		dflt   string
	}
	pod := network{"master_node.pod_cidr", m.PodCIDR, DefaultPodCIDR}
	svc := network{"master_node.cluster_cidr", m.ClusterCIDR, DefaultClusterCIDR}
	pairs := [][2]network{{svc, pod}}
	if p.Proxy != nil && p.Proxy.K8sNodeCIDR.IsValid() {
		node := network{"proxy.k8s_node_cidr", p.Proxy.K8sNodeCIDR, ""}
		pairs = append(pairs, [2]network{pod, node}, [2]network{svc, node})
	}
	name := func(n network) string {
		if s := n.prefix.String(); s != n.dflt {
			return s
		}
		return n.prefix.String() + " (the default)"
	}
	at := func(n network) *lcm.Validator {
		at := v
		for _, k := range strings.Split(n.path, ".") {
			at = at.At(k)
		}
		return at
	}
	for _, pair := range pairs {
		a, b := pair[0], pair[1]
		switch {
		case a.prefix.Addr().Is4In6() || b.prefix.Addr().Is4In6():
			n := a
			if !n.prefix.Addr().Is4In6() {
				n = b
			}
			at(n).Errorf("%s is an IPv4 network written as IPv6: write it as IPv4", name(n))
		case a.prefix.Addr().Is4() != b.prefix.Addr().Is4():
			// A single-stack cluster: kubeadm and the CNI take the pod and
			// Service networks, and the nodes' addresses, in one family.
			at(a).Errorf("%s and %s %s are of different IP families: the pod, Service and node networks must all be IPv4 or all IPv6", name(a), b.path, b.prefix)
		case a.prefix.Overlaps(b.prefix):
			at(a).Errorf("%s overlaps %s %s: the pod, Service and node networks must be disjoint", name(a), b.path, b.prefix)
		}
	}
}

// nodeCIDR is proxy.k8s_node_cidr, invalid when absent.
func nodeCIDR(p *Proxy) netip.Prefix {
	if p == nil {
		return netip.Prefix{}
	}
	return p.K8sNodeCIDR
}

// The networks no pod, Service or node address may come from.
var (
	multicast4  = netip.MustParsePrefix("224.0.0.0/4")
	multicast6  = netip.MustParsePrefix("ff00::/8")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8") // RFC 1122 3.2.1.3: the unspecified source addresses
)

// unusableNetworkMsg says why a pod, Service or node network cannot
// hold such addresses ("" when it can): it overlaps the multicast
// addresses or the unspecified ones (0.0.0.0/8, ::).
func unusableNetworkMsg(p netip.Prefix) string {
	switch {
	case !p.IsValid():
		return ""
	case p.Overlaps(multicast4):
		return "overlaps the multicast network " + multicast4.String()
	case p.Overlaps(multicast6):
		return "overlaps the multicast network " + multicast6.String()
	case p.Overlaps(thisNetwork):
		return `overlaps 0.0.0.0/8, the unspecified ("this network") addresses`
	case p.Contains(netip.IPv6Unspecified()):
		return "holds ::, the unspecified address"
	}
	return ""
}

// invisibleRune reports a character that changes how text around it is
// shown without being seen itself: a format character (Unicode's Cf:
// the bidirectional controls U+202A-U+202E and U+2066-U+2069, the
// zero-width U+200B-U+200D, U+2060, U+FEFF, ...) or a line or paragraph
// separator (U+2028, U+2029). In a name an operator reads, such as
// vim_name, they make two different names look alike.
func invisibleRune(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// passwordMsg says what is wrong with a login password ("" if nothing):
// sudo -S reads it from standard input up to the first line break, and
// SSH's keyboard-interactive and password prompts take one line too, so
// a password holding one can never work, and a NUL ends a C string.
func passwordMsg(pw remote.Secret) string {
	if strings.ContainsAny(pw.Reveal(), "\n\r\x00") {
		return "must not contain a line break or NUL: sudo and SSH read it as one line"
	}
	return ""
}

// Version is a Kubernetes release: "1.36" (a minor) or "1.36.3" (a
// patch), without a leading "v" once validated.
type Version string

// Minor returns the minor release, "1.36" for "1.36" and "1.36.3": the
// pkgs.k8s.io repository (https://pkgs.k8s.io/core:/stable:/v1.36/deb/).
func (v Version) Minor() Version {
	major, rest, _ := strings.Cut(string(v), ".")
	minor, _, _ := strings.Cut(rest, ".")
	return Version(major + "." + minor)
}

// IsPatch reports whether v names a patch release, "1.36.3", rather than
// a minor.
func (v Version) IsPatch() bool { return strings.Count(string(v), ".") == 2 }

// parseVersion checks a kubernetes_version and returns it without its
// "v", or a message saying what is wrong.
func parseVersion(s string) (Version, string) {
	const form = `must be a Kubernetes version like "1.36" or "1.36.3"`
	t := strings.TrimPrefix(s, "v")
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return "", form
	}
	nums := make([]int, len(parts))
	for i, part := range parts {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 || part != strconv.Itoa(n) { // digits only, no sign or leading zeros
			return "", form
		}
		nums[i] = n
	}
	if nums[0] != 1 || nums[1] < 24 {
		// https://kubernetes.io/blog/2023/08/15/pkgs-k8s-io-introduction/:
		// the community-owned repositories start at v1.24.
		return "", "must be 1.24 or later (pkgs.k8s.io has no older packages)"
	}
	return Version(t), ""
}

// NodeParams is master_node or worker_node of
// k8s_cluster_installation_param: where Heat keeps a group of nodes and
// how to log in to them. kubespray's parameters use it too.
//
// CIDRs may be written with host bits set, as the specs' own samples do
// ("192.168.3.0/16"); validation clears them (192.168.0.0/16), which is
// the network kubeadm and the CNI would use anyway.
type NodeParams struct {
	// AspectID is aspect_id: the OS::Heat::AutoScalingGroup whose members
	// are the nodes. Empty: one node, in the top-level stack.
	AspectID string `json:"aspect_id"`
	// SSHCPName is ssh_cp_name: the port (or floating IP) the driver
	// connects to over SSH.
	SSHCPName string `json:"ssh_cp_name" params:"required"`
	// NICCPName is nic_cp_name: the port on the cluster network; empty
	// means SSHCPName's.
	NICCPName string `json:"nic_cp_name"`
	// Username and Password are the nodes' SSH login. Username is a Unix
	// user name.
	Username string        `json:"username" params:"required"`
	Password remote.Secret `json:"password" params:"required"`
	// PodCIDR is pod_cidr, master_node only: the pod network,
	// [DefaultPodCIDR] when absent.
	PodCIDR netip.Prefix `json:"pod_cidr"`
	// ClusterCIDR is cluster_cidr, master_node only: the Service network,
	// [DefaultClusterCIDR] when absent.
	ClusterCIDR netip.Prefix `json:"cluster_cidr"`
	// ClusterCPName is cluster_cp_name, master_node only: the port whose
	// address is the cluster's API endpoint (the virtual IP of several
	// masters). Empty: the master's own address, for a single master.
	ClusterCPName string `json:"cluster_cp_name"`
	// ClusterFIPName is cluster_fip_name, master_node only: the floating
	// IP in front of ClusterCPName, for a VIM reached from outside.
	ClusterFIPName string `json:"cluster_fip_name"`
}

// Validate checks the Heat resource names (see heat.CheckResourceName),
// the user name and the password (one line), and clears the host bits of
// the CIDRs.
func (p *NodeParams) Validate(v *lcm.Validator) {
	heat.ValidateResourceName(v, "aspect_id", p.AspectID)
	heat.ValidateResourceName(v, "ssh_cp_name", p.SSHCPName)
	heat.ValidateResourceName(v, "nic_cp_name", p.NICCPName)
	heat.ValidateResourceName(v, "cluster_cp_name", p.ClusterCPName)
	heat.ValidateResourceName(v, "cluster_fip_name", p.ClusterFIPName)
	v.Username("username", p.Username)
	if msg := passwordMsg(p.Password); msg != "" {
		v.At("password").Errorf("%s", msg)
	}
	p.PodCIDR = p.PodCIDR.Masked()
	p.ClusterCIDR = p.ClusterCIDR.Masked()
}

// Group returns where Heat keeps the nodes, for role.
func (p NodeParams) Group(role lcm.Role) heat.Group {
	return heat.Group{Role: role, AspectID: p.AspectID, SSHCP: p.SSHCPName, NICCP: p.NICCPName}
}

// Proxy is proxy of k8s_cluster_installation_param: the shared proxy
// keys ([system.Proxy]) and k8s_node_cidr.
type Proxy struct {
	system.Proxy
	// K8sNodeCIDR is k8s_node_cidr: the network of the nodes' cluster
	// addresses, whose addresses go into no_proxy. Host bits are cleared.
	// Zero when absent: the first master's address /24, as the reference
	// does, which only the steps know.
	K8sNodeCIDR netip.Prefix `json:"k8s_node_cidr"`
}

// Validate clears the host bits of k8s_node_cidr. The embedded
// system.Proxy's Validate checks the URLs and no_proxy: [lcm.DecodeParams]
// runs it too, as it runs every embedded part's.
func (p *Proxy) Validate(*lcm.Validator) {
	p.K8sNodeCIDR = p.K8sNodeCIDR.Masked()
}

// The top-level additionalParams keys of [CredentialOverrides].
const (
	MasterNodeUsernameKey = "master_node_username"
	MasterNodePasswordKey = "master_node_password"
	WorkerNodeUsernameKey = "worker_node_username"
	WorkerNodePasswordKey = "worker_node_password"
)

// CredentialOverrides are the logins a scale or heal request may give in
// its additionalParams (master_node_username, master_node_password,
// worker_node_username, worker_node_password), replacing the ones stored
// at instantiation, as the reference accepts. Decode them with the
// request's other keys through [CredentialOverrides.Params], then
// [CredentialOverrides.Apply] them to the stored parameters.
type CredentialOverrides struct {
	MasterNodeUsername string
	MasterNodePassword remote.Secret
	WorkerNodeUsername string
	WorkerNodePassword remote.Secret
}

// Params returns the [lcm.Target]s that decode the four keys into c, for
// [lcm.DecodeParams].
func (c *CredentialOverrides) Params() []lcm.Target {
	return []lcm.Target{
		lcm.Param(MasterNodeUsernameKey, &c.MasterNodeUsername),
		lcm.Param(MasterNodePasswordKey, &c.MasterNodePassword),
		lcm.Param(WorkerNodeUsernameKey, &c.WorkerNodeUsername),
		lcm.Param(WorkerNodePasswordKey, &c.WorkerNodePassword),
	}
}

// Apply returns p with the overrides in place of master_node's and
// worker_node's logins; p itself, and the NodeParams it points to, are
// not changed. A username comes with its password or not at all (the
// reference takes a half override and then fails to log in), and worker
// overrides need a worker_node: otherwise Apply returns an
// [*lcm.ParamsError] whose problems name the keys, before anything runs.
func (c CredentialOverrides) Apply(p ClusterParams) (ClusterParams, error) {
	var problems []lcm.Problem
	add := func(key, msg string) { problems = append(problems, lcm.Problem{Path: key, Message: msg}) }
	pair := func(userKey, passKey, user string, pass remote.Secret) bool {
		switch {
		case user == "" && pass.IsZero():
			return false
		case user == "":
			add(userKey, "is required when "+passKey+" is given")
		case pass.IsZero():
			add(passKey, "is required when "+userKey+" is given")
		case !lcm.IsUsername(user):
			add(userKey, "must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "+strconv.Quote(clip(user)))
		case passwordMsg(pass) != "":
			add(passKey, passwordMsg(pass))
		default:
			return true
		}
		return false
	}
	if pair(MasterNodeUsernameKey, MasterNodePasswordKey, c.MasterNodeUsername, c.MasterNodePassword) {
		p.MasterNode.Username, p.MasterNode.Password = c.MasterNodeUsername, c.MasterNodePassword
	}
	if pair(WorkerNodeUsernameKey, WorkerNodePasswordKey, c.WorkerNodeUsername, c.WorkerNodePassword) {
		if p.WorkerNode == nil {
			add(WorkerNodeUsernameKey, "is for worker_node, which the cluster's parameters do not have")
		} else {
			w := *p.WorkerNode
			w.Username, w.Password = c.WorkerNodeUsername, c.WorkerNodePassword
			p.WorkerNode = &w
		}
	}
	if problems != nil {
		return ClusterParams{}, &lcm.ParamsError{Problems: problems}
	}
	return p, nil
}

// clip cuts s to 100 bytes for a message, as lcm's messages do.
func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:100] + "…"
}

// Credentials returns the SSH login of each node role: master_node's for
// the masters, worker_node's for the workers.
func (p ClusterParams) Credentials() plumbing.Credentials {
	creds := plumbing.Credentials{lcm.RoleMaster: p.MasterNode.Login()}
	if p.WorkerNode != nil {
		creds[lcm.RoleWorker] = p.WorkerNode.Login()
	}
	return creds
}

// VMs returns the masters' and workers' groups and logins ([ClusterParams.Groups],
// [ClusterParams.Credentials]).
func (p ClusterParams) VMs() plumbing.VMs {
	return plumbing.VMs{Groups: p.Groups(), Logins: p.Credentials()}
}

// Login returns the nodes' SSH login.
func (p NodeParams) Login() plumbing.Login {
	return plumbing.Login{Username: p.Username, Password: p.Password}
}

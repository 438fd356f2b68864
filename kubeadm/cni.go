package kubeadm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// ApplyCNI applies the pod network's manifest (Calico, Flannel, ...;
// cni_manifest_path in the VNF package) with [Kubectl.Apply]: nothing
// changes when the cluster holds it already. The manifest is checked
// first, before any remote command: YAML documents (or JSON), each an
// object with apiVersion and kind; a manifest that is not is an
// *lcm.ParamsError naming the document. Until a CNI runs, nodes are not
// Ready.
func ApplyCNI(ctx context.Context, k kubeapi.Kubectl, manifest []byte) (lcm.Result, error) {
	if err := kubeapi.CheckManifest(manifest); err != nil {
		return lcm.Unchanged, err
	}
	res, err := k.Apply(ctx, manifest)
	if err != nil {
		return res, fmt.Errorf("applying the CNI manifest: %w", err)
	}
	return res, nil
}

// The pod network mgmtkit installs when a cluster names no
// cni_manifest_path: Calico, which the reference's install script
// applies too (from docs.projectcalico.org, unpinned and in a retry
// loop); here a pinned release, fetched from the release's tag as
// Calico's manifest-based install does ("curl
// https://raw.githubusercontent.com/projectcalico/calico/v3.32.1/manifests/calico.yaml -O",
// docs.tigera.io, "Install Calico networking and network policy for
// on-premises deployments"). The manifest is applied as released:
// calico-node takes its IP pool from kubeadm's podSubnet (pod_cidr) when
// CALICO_IPV4POOL_CIDR is unset, as the manifest ships it (calico's
// node/pkg/lifecycle/startup/startup.go configureIPPools and
// extractKubeadmCIDRs read the kubeadm-config ConfigMap; the docs: "If
// you are using a different pod CIDR with kubeadm, no changes are
// required - Calico will automatically detect the CIDR based on the
// running configuration").
const (
	// DefaultCalicoVersion is the Calico release installed by default.
	DefaultCalicoVersion = "v3.32.1"
	// DefaultCalicoManifestURL is the manifest of [DefaultCalicoVersion]:
	// manifests/calico.yaml at its tag of github.com/projectcalico/calico.
	DefaultCalicoManifestURL = "https://raw.githubusercontent.com/projectcalico/calico/" + DefaultCalicoVersion + "/manifests/calico.yaml"
)

// CNIKind is the family of a pod network, as far as its share of the pod
// network per node goes.
type CNIKind string

// The kinds [InspectCNI] tells apart.
const (
	// CNICalico is Calico with its own IPAM (calico-ipam): each node
	// takes blocks of the IP pool (a /26 for IPv4, a /122 for IPv6, by
	// default) and ignores the node's spec.podCIDR.
	CNICalico CNIKind = "calico"
	// CNIFlannel is flannel (and canal, Calico's policy over flannel's
	// network) with the kube subnet manager: each node's subnet is its
	// spec.podCIDR, which kube-controller-manager's node IPAM gives it.
	CNIFlannel CNIKind = "flannel"
	// CNIOther is any other pod network. mgmtkit assumes it takes the
	// node's spec.podCIDR as most plugins' host-local IPAM does
	// ("subnet": "usePodCidr"), which is the stricter assumption.
	CNIOther CNIKind = "other"
)

// The share of the pod network each node gets.
const (
	// NodeMaskIPv4 and NodeMaskIPv6 are the sizes of a node's
	// spec.podCIDR: kube-controller-manager's --node-cidr-mask-size
	// defaults, which kubeadm keeps (kubernetes/kubernetes
	// pkg/controller/nodeipam/ipam/cidrset: one subnet of this size per
	// node, from the cluster's pod network).
	NodeMaskIPv4 = 24
	NodeMaskIPv6 = 64
	// CalicoBlockIPv4 and CalicoBlockIPv6 are the default blockSize of a
	// Calico IPPool (api/pkg/apis/projectcalico/v3/ippool.go: "Defaults
	// to 26 for IPv4 and 122 for IPv6"; docs.tigera.io reference
	// resources/ippool). A node claims a block when it starts its first
	// pod (a block affinity) and more when those are full; the pool's
	// prefix may not be longer than the block size
	// (libcalico-go/lib/validator/v3/validator.go).
	CalicoBlockIPv4 = 26
	CalicoBlockIPv6 = 122
)

// PodNetwork is what a CNI manifest says about how pod addresses are
// given out.
type PodNetwork struct {
	// Kind is the pod network's family.
	Kind CNIKind
	// IPv4Pool and IPv6Pool are calico-node's CALICO_IPV4POOL_CIDR and
	// CALICO_IPV6POOL_CIDR when the manifest sets them (to a prefix);
	// unset, calico-node creates its pool from kubeadm's podSubnet.
	IPv4Pool, IPv6Pool netip.Prefix
	// IPv4BlockSize and IPv6BlockSize are CALICO_IPV4POOL_BLOCK_SIZE and
	// CALICO_IPV6POOL_BLOCK_SIZE, 0 when unset ([CalicoBlockIPv4],
	// [CalicoBlockIPv6]).
	IPv4BlockSize, IPv6BlockSize int
}

// InspectCNI reads a pod network's manifest (checked as [ApplyCNI]
// checks it) and tells its kind:
//   - flannel when a container runs flanneld or passes
//     --kube-subnet-mgr (flannel's kube-flannel.yml; canal's canal.yaml);
//   - calico when a calico-node container (Calico's node image, or the
//     CALICO_NETWORKING_BACKEND variable it reads) runs and the CNI
//     configuration (a ConfigMap's, or the CNI_NETWORK_CONFIG variable of
//     calico's install-cni) names the calico-ipam plugin, as Calico's
//     calico.yaml does; the pool and block size come from calico-node's
//     variables;
//   - other otherwise.
func InspectCNI(manifest []byte) (PodNetwork, error) {
	if err := kubeapi.CheckManifest(manifest); err != nil {
		return PodNetwork{}, err
	}
	var (
		flannel, calicoNode, calicoIPAM bool
		net                             = PodNetwork{Kind: CNIOther}
	)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		b, err := r.Read()
		if err != nil {
			break // checkManifest read it to the end
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if yaml.Unmarshal(b, &meta) != nil {
			continue
		}
		var spec *corev1.PodSpec
		switch meta.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if yaml.Unmarshal(b, &cm) == nil {
				for _, v := range cm.Data {
					calicoIPAM = calicoIPAM || strings.Contains(v, `"calico-ipam"`)
				}
			}
		case "DaemonSet":
			var ds appsv1.DaemonSet
			if yaml.Unmarshal(b, &ds) == nil {
				spec = &ds.Spec.Template.Spec
			}
		case "Deployment":
			var d appsv1.Deployment
			if yaml.Unmarshal(b, &d) == nil {
				spec = &d.Spec.Template.Spec
			}
		}
		if spec == nil {
			continue
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			for _, a := range append(slices.Clone(c.Command), c.Args...) {
				flannel = flannel || a == "--kube-subnet-mgr" || path.Base(a) == "flanneld"
			}
			isNode := strings.Contains(c.Image, "calico/node:")
			for _, e := range c.Env {
				isNode = isNode || e.Name == "CALICO_NETWORKING_BACKEND"
				if e.Name == "CNI_NETWORK_CONFIG" {
					calicoIPAM = calicoIPAM || strings.Contains(e.Value, `"calico-ipam"`)
				}
			}
			if !isNode {
				continue
			}
			calicoNode = true
			for _, e := range c.Env {
				v := strings.TrimSpace(e.Value)
				switch e.Name {
				case "CALICO_IPV4POOL_CIDR":
					net.IPv4Pool, _ = netip.ParsePrefix(v)
				case "CALICO_IPV6POOL_CIDR":
					net.IPv6Pool, _ = netip.ParsePrefix(v)
				case "CALICO_IPV4POOL_BLOCK_SIZE":
					net.IPv4BlockSize, _ = strconv.Atoi(v)
				case "CALICO_IPV6POOL_BLOCK_SIZE":
					net.IPv6BlockSize, _ = strconv.Atoi(v)
				}
			}
		}
	}
	switch {
	case flannel:
		return PodNetwork{Kind: CNIFlannel}, nil
	case calicoNode && calicoIPAM:
		net.Kind = CNICalico
		return net, nil
	}
	return PodNetwork{Kind: CNIOther}, nil
}

// PodShare is how the pod network divides among the nodes.
type PodShare struct {
	// Pool is the network the nodes' shares come from: pod_cidr, or
	// Calico's pool when its manifest names one.
	Pool netip.Prefix
	// Bits is the prefix length of one node's share: its spec.podCIDR
	// (/24, /64) or one Calico block (/26, /122).
	Bits int
	// Nodes is how many nodes get a share of their own (at most 2^30;
	// 0 when the pool is smaller than one share).
	Nodes int
}

// Share returns how the pod network podCIDR divides among nodes under n:
// a spec.podCIDR per node for flannel and other kinds, at least one
// block of the pool per node for Calico. A Calico node whose blocks are
// full borrows addresses from other nodes' blocks (IPAMConfig's
// strictAffinity is false by default, libcalico-go/lib/ipam/ipam.go), so
// one block per node is the capacity at which every node still has its
// own route aggregate, not a hard limit.
func (n PodNetwork) Share(podCIDR netip.Prefix) PodShare {
	v6 := podCIDR.Addr().Is6()
	s := PodShare{Pool: podCIDR, Bits: NodeMaskIPv4}
	if v6 {
		s.Bits = NodeMaskIPv6
	}
	if n.Kind == CNICalico {
		pool, block := n.IPv4Pool, n.IPv4BlockSize
		s.Bits = CalicoBlockIPv4
		if v6 {
			pool, block = n.IPv6Pool, n.IPv6BlockSize
			s.Bits = CalicoBlockIPv6
		}
		if pool.IsValid() {
			s.Pool = pool.Masked()
		}
		if block > 0 {
			s.Bits = block
		}
	}
	if bits := s.Bits - s.Pool.Bits(); bits >= 0 {
		s.Nodes = 1 << min(bits, 30)
	}
	return s
}

// CheckPodCapacity refuses a pod network podCIDR that cannot give each of
// nodes nodes its share under n ([PodNetwork.Share]), and a Calico pool
// named in the manifest outside podCIDR (the manifest's own comment:
// "This should fall within `--cluster-cidr`", kube-proxy's and the
// controller manager's pod network). Problems are reported at
// podCIDRPath, or at manifestPath when the manifest's own pool is at
// fault.
func (n PodNetwork) CheckPodCapacity(podCIDR netip.Prefix, nodes int, podCIDRPath, manifestPath string) error {
	if !podCIDR.IsValid() {
		return nil
	}
	s := n.Share(podCIDR)
	at := podCIDRPath
	if s.Pool != podCIDR.Masked() {
		at = manifestPath
		if !podCIDR.Contains(s.Pool.Addr()) || s.Pool.Bits() < podCIDR.Bits() {
			return optProblem(at, "Calico's pool %s (calico-node's CALICO_IPV4POOL_CIDR or CALICO_IPV6POOL_CIDR) is not inside pod_cidr %s", s.Pool, podCIDR)
		}
	}
	if s.Nodes >= nodes {
		return nil
	}
	what := fmt.Sprintf("a /%d each, kube-controller-manager's --node-cidr-mask-size", s.Bits)
	if n.Kind == CNICalico {
		what = fmt.Sprintf("a Calico IPAM block of /%d each", s.Bits)
	}
	if s.Nodes == 0 {
		return optProblem(at, "%s is smaller than one node's share (%s)", s.Pool, what)
	}
	return optProblem(at, "%s has room for the pods of %d nodes (%s), the cluster has %d: give a larger network, such as a /16",
		s.Pool, s.Nodes, what, nodes)
}

// fetchScript prints the file at URL $1 with curl, failing on an HTTP
// error. The proxy URL (for http and https alike) and the no_proxy list
// come on standard input, one line each, never in argv.
const fetchScript = `set -eu
IFS= read -r proxy || true
IFS= read -r no_proxy || true
if [ -n "$proxy" ]; then
	http_proxy=$proxy https_proxy=$proxy
	export http_proxy https_proxy
else
	unset http_proxy https_proxy
fi
if [ -n "$no_proxy" ]; then export no_proxy; else unset no_proxy; fi
unset HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy NO_PROXY
curl -fsSL --retry 3 --connect-timeout 30 --max-time 300 "$1"`

// FetchManifest downloads the file at rawURL (http or https) on host h
// with curl, as the node's login user, through proxy when it is not nil
// (its HTTPS proxy for an https URL, else its HTTP proxy; its NoProxy
// honoured), and returns it. Nothing changes on the host; the proxy URL
// reaches curl on standard input, never on a command line. A bad URL or
// proxy is an *lcm.ParamsError ("URL", "Proxy...") before any command.
func FetchManifest(ctx context.Context, h remote.Host, rawURL string, proxy *system.Proxy) ([]byte, error) {
	var probs optProblems
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsFunc(rawURL, unsafeValueRune) {
		probs.addf("URL", "%q is not an http:// or https:// URL", rawURL)
	}
	probs = append(probs, proxy.Check("Proxy")...)
	if err := probs.err(); err != nil {
		return nil, err
	}
	var stdin string
	// A download to standard output: nothing on the host changes.
	cmd := remote.Cmd{Args: []string{"sh", "-c", fetchScript, "mgmtkit-fetch", rawURL}, Idempotent: true, ReadOnly: true}
	if proxy != nil {
		p := proxy.HTTPProxy
		if strings.HasPrefix(rawURL, "https:") && !proxy.HTTPSProxy.IsZero() || p.IsZero() {
			p = proxy.HTTPSProxy
		}
		stdin = p.Reveal() + "\n" + proxy.NoProxy + "\n"
		cmd.Secrets = []remote.Secret{proxy.HTTPProxy, proxy.HTTPSProxy}
	}
	cmd.Stdin = strings.NewReader(stdin)
	out, err := h.Run(ctx, cmd)
	if err != nil {
		return nil, stepErr(h, "downloading "+rawURL, err)
	}
	return out.Stdout, nil
}

// CalicoOptions configure [InstallCalico].
type CalicoOptions struct {
	// URL is the manifest's address; [DefaultCalicoManifestURL] when
	// empty.
	URL string
	// Proxy is the proxy the master downloads the manifest through; nil
	// for none.
	Proxy *system.Proxy
}

// InstallCalico installs Calico, the pod network of a cluster that names
// no cni_manifest_path: the manifest is downloaded on the control-plane
// node k runs on ([FetchManifest]), must be a Calico manifest with
// Calico's IPAM ([InspectCNI]), and is applied as [ApplyCNI] applies one:
// nothing changes when the cluster holds it already. Its pool is
// kubeadm's podSubnet (see [DefaultCalicoVersion]). The result's detail
// names the URL.
func InstallCalico(ctx context.Context, k kubeapi.Kubectl, o CalicoOptions) (lcm.Result, error) {
	if k.Host == nil {
		return lcm.Unchanged, errors.New("kubeadm: Kubectl has no Host")
	}
	u := o.URL
	if u == "" {
		u = DefaultCalicoManifestURL
	}
	manifest, err := FetchManifest(ctx, k.Host, u, o.Proxy)
	if err != nil {
		return lcm.Unchanged, err
	}
	net, err := InspectCNI(manifest)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("kubeadm: %s: %s is not a manifest: %w", k.Host.Name(), u, err)
	}
	if net.Kind != CNICalico {
		return lcm.Unchanged, fmt.Errorf("kubeadm: %s: %s is not Calico's manifest (no calico-node with calico-ipam in it)", k.Host.Name(), u)
	}
	res, err := ApplyCNI(ctx, k, manifest)
	if err != nil || !res.Changed {
		return res, err
	}
	return lcm.Changed("Calico from " + u + ": " + res.Detail), nil
}

// checkPodCapacity refuses a pod network too small for nodes nodes under
// the cluster's CNI net ([PodNetwork.CheckPodCapacity]): with flannel's
// /24 per node, pod_cidr 192.168.3.0/24 (the cir sample's) holds the
// pods of one node only, and every other node would stay NotReady
// without a podCIDR; with Calico's /26 blocks it holds four nodes.
func checkPodCapacity(p ClusterParams, net PodNetwork, nodes int) error {
	return net.CheckPodCapacity(p.MasterNode.PodCIDR, nodes, ClusterParamKey+".master_node.pod_cidr", ClusterParamKey+".cni_manifest_path")
}

// cniPlan is the cluster's pod network: the manifest cni_manifest_path
// names, or Calico's release manifest ([InstallCalico]) without one.
type cniPlan struct {
	manifest []byte     // the package's manifest; nil: none to apply
	calico   bool       // install [DefaultCalicoManifestURL]
	net      PodNetwork // how it gives out pod addresses
}

// readCNI reads cni_manifest_path from the package and inspects it
// ([InspectCNI]). Without one the native steps install Calico, as the
// reference's install script does; in compatibility mode the script
// installs its own pod network (the reference's: Calico), so there is
// nothing to read or apply. Calico's manifest is IPv4-only as released
// (FELIX_IPV6SUPPORT "false", no assign_ipv6 in its CNI
// configuration): an IPv6 pod_cidr needs a manifest of its own.
func readCNI(op Op, compat bool) (cniPlan, error) {
	p := op.Params
	field := ClusterParamKey + ".cni_manifest_path"
	bad := func(msg string) error { return &lcm.ParamsError{Problems: []lcm.Problem{{Path: field, Message: msg}}} }
	if p.CNIManifestPath == "" {
		calico := cniPlan{calico: !compat, net: PodNetwork{Kind: CNICalico}}
		if !compat && p.MasterNode.PodCIDR.Addr().Is6() {
			return cniPlan{}, bad(fmt.Sprintf("is required with an IPv6 pod_cidr (%s): the default pod network, Calico's calico.yaml %s, is IPv4-only", p.MasterNode.PodCIDR, DefaultCalicoVersion))
		}
		return calico, nil
	}
	if op.Package == nil {
		return cniPlan{}, bad("names a file in the VNF package, but the hook has no package")
	}
	b, err := op.Package.ReadFile(p.CNIManifestPath)
	if err != nil {
		return cniPlan{}, bad(err.Error())
	}
	net, err := InspectCNI(b)
	if err != nil {
		return cniPlan{}, bad(fmt.Sprintf("%s: %v", p.CNIManifestPath, err))
	}
	return cniPlan{manifest: b, net: net}, nil
}

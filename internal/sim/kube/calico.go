package kube

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Calico's defaults for the IP pool calico-node creates at its first
// start (github.com/projectcalico/calico v3.32.1
// node/pkg/lifecycle/startup/startup.go: DEFAULT_IPV4_POOL_CIDR,
// DEFAULT_IPV4_POOL_BLOCK_SIZE).
const (
	calicoDefaultPool  = "192.168.0.0/16"
	calicoDefaultBlock = 26
)

// CalicoIPAM is Calico's IP address management (the calico-ipam CNI
// plugin) as a cluster whose pod network is Calico runs it: pod
// addresses come from /BlockBits blocks of Pool, each block affine to
// one node, and a node's spec.podCIDR plays no part.
type CalicoIPAM struct {
	// Pool is the IPv4 pool calico-node created.
	Pool netip.Prefix
	// BlockBits is the pool's blockSize.
	BlockBits int
}

// podSubnetLine is how calico-node finds kubeadm's pod network in the
// kubeadm-config ConfigMap (startup.go extractKubeadmCIDRs).
var podSubnetLine = regexp.MustCompile(`podSubnet: (.*)`)

// DetectCalico reports the Calico IPAM of a cluster with these DaemonSets
// and ConfigMaps: ok when a DaemonSet runs calico-node (a container that
// reads CALICO_NETWORKING_BACKEND, as calico.yaml's does) and a ConfigMap
// holds a CNI configuration with the calico-ipam plugin (calico.yaml's
// calico-config cni_network_config). The pool is what calico-node's
// configureIPPools creates (startup.go): CALICO_IPV4POOL_CIDR when the
// container sets it, else the IPv4 podSubnet of kube-system's
// kubeadm-config ConfigMap, else 192.168.0.0/16; the block size
// CALICO_IPV4POOL_BLOCK_SIZE, else 26.
func DetectCalico(daemonSets []*appsv1.DaemonSet, configMaps []*corev1.ConfigMap) (CalicoIPAM, bool) {
	var node *corev1.Container
	for _, ds := range daemonSets {
		for i, c := range ds.Spec.Template.Spec.Containers {
			if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CALICO_NETWORKING_BACKEND" }) {
				node = &ds.Spec.Template.Spec.Containers[i]
			}
		}
	}
	ipam := false
	var kubeadm *corev1.ConfigMap
	for _, cm := range configMaps {
		for _, v := range cm.Data {
			ipam = ipam || strings.Contains(v, `"calico-ipam"`)
		}
		if cm.Namespace == "kube-system" && cm.Name == "kubeadm-config" {
			kubeadm = cm
		}
	}
	if node == nil || !ipam {
		return CalicoIPAM{}, false
	}
	c := CalicoIPAM{BlockBits: calicoDefaultBlock}
	pool := ""
	for _, e := range node.Env {
		switch e.Name {
		case "CALICO_IPV4POOL_CIDR":
			pool = e.Value
		case "CALICO_IPV4POOL_BLOCK_SIZE":
			if n, err := strconv.Atoi(e.Value); err == nil {
				c.BlockBits = n
			}
		}
	}
	if pool == "" && kubeadm != nil {
		for _, v := range kubeadm.Data {
			if m := podSubnetLine.FindStringSubmatch(v); m != nil {
				for s := range strings.SplitSeq(strings.TrimSpace(m[1]), ",") {
					if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
						pool = s
						break
					}
				}
				break
			}
		}
	}
	if pool == "" {
		pool = calicoDefaultPool
	}
	p, err := netip.ParsePrefix(pool)
	if err != nil || !p.Addr().Is4() || p.Bits() > c.BlockBits {
		// calico-node refuses such a pool and exits (startup.go
		// "Invalid CIDR specified in CALICO_IPV4POOL_CIDR"; the
		// validator's block size rule): no address is given out.
		return CalicoIPAM{}, true
	}
	c.Pool = p.Masked()
	return c, true
}

// Allocate returns the address the calico-ipam plugin gives a new pod on
// node, given the cluster's pods (those with hostNetwork or without an
// address ignored), or "" when the pool is exhausted or invalid. As
// libcalico-go/lib/ipam/ipam.go autoAssign does: from a block affine to
// the node, else a new block the node claims (the first without
// affinity), else, strictAffinity being false by default, an address
// borrowed from another node's block. The first address of a node's
// block is its IPIP tunnel's (calico.yaml sets CALICO_IPV4POOL_IPIP
// Always; calico-node's allocateip takes it from the node's block), so
// pods start at the second. Affinities are read from the pods' addresses:
// a block belongs to the node of its lowest pod address (the real IPAM
// keeps a node's affinity until the node is deleted).
func (c CalicoIPAM) Allocate(node string, pods []*corev1.Pod) string {
	if !c.Pool.IsValid() {
		return ""
	}
	used := map[netip.Addr]bool{}
	owner := map[netip.Prefix]string{}
	lowest := map[netip.Prefix]netip.Addr{}
	for _, p := range pods {
		a, err := netip.ParseAddr(p.Status.PodIP)
		if p.Spec.HostNetwork || err != nil || !c.Pool.Contains(a) {
			continue
		}
		used[a] = true
		b := netip.PrefixFrom(a, c.BlockBits).Masked()
		if l, ok := lowest[b]; !ok || a.Less(l) {
			lowest[b], owner[b] = a, p.Spec.NodeName
		}
	}
	free := func(b netip.Prefix) string {
		for a := b.Addr().Next(); b.Contains(a); a = a.Next() {
			if !used[a] {
				return a.String()
			}
		}
		return ""
	}
	var blocks []netip.Prefix
	count := 1 << min(c.BlockBits-c.Pool.Bits(), 16) // a bounded search
	for b, i := netip.PrefixFrom(c.Pool.Addr(), c.BlockBits), 0; i < count && c.Pool.Contains(b.Addr()); i++ {
		blocks = append(blocks, b)
		next := nextPrefixAddr(b.Addr(), c.BlockBits)
		if !next.IsValid() {
			break
		}
		b = netip.PrefixFrom(next, c.BlockBits)
	}
	for _, b := range blocks {
		if owner[b] == node {
			if a := free(b); a != "" {
				return a
			}
		}
	}
	for _, b := range blocks {
		if _, taken := owner[b]; !taken {
			return free(b)
		}
	}
	for _, b := range blocks {
		if a := free(b); a != "" {
			return a
		}
	}
	return ""
}

package kube

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rootCAConfigMap is the ConfigMap every namespace gets with the cluster
// CA (pkg/controller/certificates/rootcacertpublisher/publisher.go).
const rootCAConfigMap = "kube-root-ca.crt"

// namespacesLocked runs the per-namespace controllers: the service
// account controller (pkg/controller/serviceaccount/serviceaccounts_controller.go)
// creates the ServiceAccount "default" in every namespace, and the root
// CA publisher the ConfigMap kube-root-ca.crt holding the cluster CA
// (when the API was given one), restoring both when deleted.
func (m *MemoryAPI) namespacesLocked() {
	for _, o := range m.listLocked(KindNamespace, "") {
		ns := o.GetName()
		if _, ok := m.objs[KindServiceAccount][key(ns, "default")]; !ok {
			_, _ = m.createLocked(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}})
		}
		if len(m.caCert) == 0 {
			continue
		}
		want := map[string]string{"ca.crt": string(m.caCert)}
		cur, ok := m.objs[KindConfigMap][key(ns, rootCAConfigMap)]
		if !ok {
			_, _ = m.createLocked(&corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: rootCAConfigMap, Namespace: ns, Annotations: map[string]string{
					"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.",
				}},
				Data: want,
			})
			continue
		}
		if cm := cur.(*corev1.ConfigMap); cm.Data["ca.crt"] != want["ca.crt"] || len(cm.Data) != 1 {
			cm = cm.DeepCopy()
			cm.Data = want
			m.put(cm)
		}
	}
}

// nodeIPAMLocked is kube-controller-manager's node IPAM with
// --allocate-node-cidrs (pkg/controller/nodeipam/ipam/range_allocator.go,
// which kubeadm turns on when networking.podSubnet is set): a node
// without spec.podCIDR gets the first free subnet of the cluster CIDR of
// the configured mask size, in order of creation. When the range is
// exhausted the node keeps none (the controller reports
// CIDRNotAvailable).
func (m *MemoryAPI) nodeIPAMLocked() {
	if !m.clusterCIDR.IsValid() {
		return
	}
	nodes := m.nodes()
	used := map[netip.Prefix]bool{}
	for _, n := range nodes {
		if p, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil {
			used[p.Masked()] = true
		}
	}
	sortByCreation(nodes)
	for _, n := range nodes {
		if n.Spec.PodCIDR != "" {
			continue
		}
		sub, ok := m.freeSubnet(used)
		if !ok {
			return
		}
		used[sub] = true
		n.Spec.PodCIDR, n.Spec.PodCIDRs = sub.String(), []string{sub.String()}
		m.put(n)
	}
}

// freeSubnet returns the first subnet of the cluster CIDR not in used.
func (m *MemoryAPI) freeSubnet(used map[netip.Prefix]bool) (netip.Prefix, bool) {
	bits := m.nodeMaskSize
	base := m.clusterCIDR.Masked()
	if bits < base.Bits() || bits > base.Addr().BitLen() {
		return netip.Prefix{}, false
	}
	count := 1 << min(bits-base.Bits(), 16) // a bounded search
	a := base.Addr()
	for range count {
		p := netip.PrefixFrom(a, bits)
		if !base.Contains(a) {
			break
		}
		if !used[p] {
			return p, true
		}
		a = nextPrefixAddr(a, bits)
		if !a.IsValid() {
			break
		}
	}
	return netip.Prefix{}, false
}

// nextPrefixAddr returns the first address after the prefix a/bits.
func nextPrefixAddr(a netip.Addr, bits int) netip.Addr {
	b := a.AsSlice()
	// Add 1 at bit position bits-1 (counted from the left).
	i := (bits - 1) / 8
	inc := byte(1) << (7 - uint((bits-1)%8))
	for i >= 0 {
		s := uint16(b[i]) + uint16(inc)
		b[i] = byte(s)
		if s < 256 {
			out, _ := netip.AddrFromSlice(b)
			return out
		}
		inc = 1
		i--
	}
	return netip.Addr{}
}

func sortByCreation(nodes []*corev1.Node) {
	for i := 1; i < len(nodes); i++ {
		for j := i; j > 0; j-- {
			a, b := nodes[j-1], nodes[j]
			if b.CreationTimestamp.Before(&a.CreationTimestamp) || (b.CreationTimestamp.Equal(&a.CreationTimestamp) && b.UID < a.UID) {
				nodes[j-1], nodes[j] = b, a
			}
		}
	}
}

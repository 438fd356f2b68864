package kube

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errList is one field.Invalid error, as apierrors.NewInvalid takes it.
func errList(path string, value any, detail string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, detail)}
}

// allocatePodIP returns the first free address of cidr from .2 on (.1 is
// the bridge's, as flannel's host-local IPAM leaves it: the range starts
// after the gateway), or "" without a valid cidr or a free address.
func allocatePodIP(cidr string, pods []*corev1.Pod, node string) string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	used := map[string]bool{}
	for _, q := range pods {
		if q.Spec.NodeName == node && !q.Spec.HostNetwork {
			used[q.Status.PodIP] = true
		}
	}
	a := p.Masked().Addr().Next().Next()
	for ; p.Contains(a); a = a.Next() {
		if !used[a.String()] {
			if !p.Contains(a.Next()) && a.Is4() {
				return "" // the broadcast address
			}
			return a.String()
		}
	}
	return ""
}

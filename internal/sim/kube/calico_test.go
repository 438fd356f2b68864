package kube_test

import (
	"net/netip"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

func calicoNode(env ...corev1.EnvVar) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "calico-node"}}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "calico-node", Env: append([]corev1.EnvVar{{Name: "CALICO_NETWORKING_BACKEND", Value: "bird"}}, env...)}}
	return ds
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}, Data: data}
}

var (
	calicoConfig  = configMap("calico-config", map[string]string{"cni_network_config": `{"plugins": [{"type": "calico", "ipam": {"type": "calico-ipam"}}]}`})
	kubeadmConfig = configMap("kubeadm-config", map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nnetworking:\n  podSubnet: 192.168.3.0/24\n  serviceSubnet: 10.96.0.0/12\n"})
)

// calico-node's pool: CALICO_IPV4POOL_CIDR, else kubeadm's podSubnet,
// else 192.168.0.0/16; no Calico without calico-ipam.
func TestDetectCalico(t *testing.T) {
	for _, tc := range []struct {
		name string
		ds   *appsv1.DaemonSet
		cms  []*corev1.ConfigMap
		want kube.CalicoIPAM
		ok   bool
	}{
		{"kubeadm's podSubnet", calicoNode(), []*corev1.ConfigMap{calicoConfig, kubeadmConfig}, kube.CalicoIPAM{Pool: netip.MustParsePrefix("192.168.3.0/24"), BlockBits: 26}, true},
		{"no kubeadm-config", calicoNode(), []*corev1.ConfigMap{calicoConfig}, kube.CalicoIPAM{Pool: netip.MustParsePrefix("192.168.0.0/16"), BlockBits: 26}, true},
		{"the manifest's pool", calicoNode(corev1.EnvVar{Name: "CALICO_IPV4POOL_CIDR", Value: "10.244.0.0/16"}, corev1.EnvVar{Name: "CALICO_IPV4POOL_BLOCK_SIZE", Value: "28"}),
			[]*corev1.ConfigMap{calicoConfig, kubeadmConfig}, kube.CalicoIPAM{Pool: netip.MustParsePrefix("10.244.0.0/16"), BlockBits: 28}, true},
		{"a pool smaller than a block", calicoNode(corev1.EnvVar{Name: "CALICO_IPV4POOL_CIDR", Value: "10.244.0.0/27"}), []*corev1.ConfigMap{calicoConfig}, kube.CalicoIPAM{}, true},
		{"host-local IPAM", calicoNode(), []*corev1.ConfigMap{kubeadmConfig}, kube.CalicoIPAM{}, false},
	} {
		got, ok := kube.DetectCalico([]*appsv1.DaemonSet{tc.ds}, tc.cms)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Each node takes a block of its own (its first address the tunnel's),
// fills it, then claims another; with every block claimed it borrows.
func TestCalicoAllocate(t *testing.T) {
	c := kube.CalicoIPAM{Pool: netip.MustParsePrefix("192.168.3.0/24"), BlockBits: 26}
	var pods []*corev1.Pod
	add := func(node string) string {
		ip := c.Allocate(node, pods)
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{PodIP: ip}}
		pods = append(pods, p)
		return ip
	}
	for _, want := range []struct{ node, ip string }{
		{"a", "192.168.3.1"}, {"b", "192.168.3.65"}, {"a", "192.168.3.2"}, {"c", "192.168.3.129"}, {"d", "192.168.3.193"},
	} {
		if got := add(want.node); got != want.ip {
			t.Fatalf("a pod on %s got %q, want %s", want.node, got, want.ip)
		}
	}
	// a fills its block (63 pod addresses), then borrows: every block is
	// claimed.
	for range 61 {
		add("a")
	}
	if got := add("a"); got != "192.168.3.66" {
		t.Fatalf("a's 64th pod got %q, want an address borrowed from b's block", got)
	}
	// Host-network pods take no pool address.
	pods = append(pods, &corev1.Pod{Spec: corev1.PodSpec{NodeName: "b", HostNetwork: true}, Status: corev1.PodStatus{PodIP: "192.168.3.67"}})
	if got := add("b"); got != "192.168.3.67" {
		t.Fatalf("b's pod got %q, want 192.168.3.67", got)
	}
	if got := (kube.CalicoIPAM{}).Allocate("a", nil); got != "" {
		t.Fatalf("no pool: %q", got)
	}
}

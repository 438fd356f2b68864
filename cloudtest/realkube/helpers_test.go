package realkube_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/mgmtkit/mgmtkit/cloudtest/realkube"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// testSpec returns a ControlPlaneSpec with a fresh PKI, as kubeadm init
// makes one (ECDSA keys, as the simulation's kubeadm generates them).
func testSpec(t testing.TB, name string) kube.ControlPlaneSpec {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		t.Fatal(err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		t.Fatal(err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	return kube.ControlPlaneSpec{
		Name:              name,
		CACert:            pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		CAKey:             pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKeyDER}),
		ServiceAccountKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saKeyDER}),
		ServiceAccountPub: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		ServiceSubnet:     netip.MustParsePrefix("10.96.0.0/12"),
		PodSubnet:         netip.MustParsePrefix("10.244.0.0/16"),
		NodeCIDRMaskSize:  24,
		Now:               time.Now,
		FirstEtcdMember:   kube.EtcdPeer{Name: name, Address: "192.168.0.10"},
	}
}

// start starts a control plane for t.
func start(t *testing.T, name string) (*realkube.ControlPlane, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cp, err := realkube.New(t).StartControlPlane(ctx, testSpec(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return cp.(*realkube.ControlPlane), ctx
}

// clientset is a client-go client of cp as cluster-admin.
func clientset(t *testing.T, cp *realkube.ControlPlane) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls cond every 100 ms until it returns true, failing t
// with what describe says after timeout.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error), describe func() string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("%s: %v", describe(), err)
	}
}

// readyNode is a Node as the simulation's kubelet registers it: capacity
// and allocatable, an InternalIP, and the given Ready status.
func readyNode(name, ip string, ready corev1.ConditionStatus) *corev1.Node {
	now := metav1.Now()
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
		Status: corev1.NodeStatus{
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}},
			Capacity:    res,
			Allocatable: res,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady", Message: "kubelet is posting ready status",
				LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
}

// createNode creates a node through the kube.API.
func createNode(t *testing.T, ctx context.Context, api kube.API, name, ip string, ready corev1.ConditionStatus) *corev1.Node {
	t.Helper()
	o, err := api.Create(ctx, readyNode(name, ip, ready))
	if err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	return o.(*corev1.Node)
}

// podReady reports whether a pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pod is a one-container pod.
func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

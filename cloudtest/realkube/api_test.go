package realkube_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// TestAPI: the kube.API of a control plane: typed kinds come back typed
// and others unstructured, lists are sorted, Update writes a Node's
// status, a stale resourceVersion is a Conflict, and after Close the API
// answers no more.
func TestAPI(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "api-cp")
	api := cp.API()

	// The serving certificate: signed by the cluster CA, with the names
	// of the kubernetes Service and its ClusterIP.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.RESTConfig().CAData)
	conn, err := tls.Dial("tcp", cp.Addr(), &tls.Config{RootCAs: pool, ServerName: cp.ServerName()})
	if err != nil {
		t.Fatalf("TLS to %s as %q: %v", cp.Addr(), cp.ServerName(), err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	for _, name := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost"} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "10.96.0.1"} {
		if err := leaf.VerifyHostname(ip); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}

	for _, name := range []string{"zeta", "alpha", "mid"} {
		if _, err := api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := api.List(ctx, kube.KindConfigMap, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(objs); i++ {
		a, b := objs[i-1], objs[i]
		if a.GetNamespace() > b.GetNamespace() || a.GetNamespace() == b.GetNamespace() && a.GetName() >= b.GetName() {
			t.Errorf("List not sorted: %s/%s before %s/%s", a.GetNamespace(), a.GetName(), b.GetNamespace(), b.GetName())
		}
	}
	for _, o := range objs {
		if _, ok := o.(*corev1.ConfigMap); !ok {
			t.Fatalf("List returned %T, want *corev1.ConfigMap", o)
		}
		if o.GetObjectKind().GroupVersionKind() != kube.KindConfigMap {
			t.Errorf("object kind %v", o.GetObjectKind().GroupVersionKind())
		}
	}

	// A kind outside kube.NewScheme: unstructured.
	lease := &unstructured.Unstructured{}
	lease.SetGroupVersionKind(schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"})
	lease.SetNamespace("default")
	lease.SetName("lock")
	if err := unstructured.SetNestedField(lease.Object, "me", "spec", "holderIdentity"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	o, err := api.Get(ctx, lease.GroupVersionKind(), "default", "lock")
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := o.(*unstructured.Unstructured); !ok || u.Object["spec"].(map[string]any)["holderIdentity"] != "me" {
		t.Errorf("Lease came back as %#v", o)
	}

	// Update writes spec and status; a stale resourceVersion conflicts.
	node := createNode(t, ctx, api, "worker-1", "192.168.0.51", corev1.ConditionTrue)
	eventually(t, ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kube.KindNode, "", node.Name)
		if err != nil {
			return false, err
		}
		node = o.(*corev1.Node)
		return node.Spec.PodCIDR != "", nil // node IPAM done: no more writes of the controller
	}, func() string { return "no podCIDR" })
	// Controllers may still write the node after IPAM (node lifecycle's
	// taints, for one): a conflict then is the API server doing its job,
	// and the update is made again on the node as it now is, as a client
	// would (client-go's retry.RetryOnConflict).
	var stale *corev1.Node
	for attempt := 0; ; attempt++ {
		stale = node.DeepCopy()
		node.Labels["role"] = "worker"
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				node.Status.Conditions[i].Status = corev1.ConditionFalse
				node.Status.Conditions[i].Reason = "KubeletNotReady"
			}
		}
		o, err = api.Update(ctx, node)
		if !apierrors.IsConflict(err) || attempt == 4 {
			break
		}
		if o, err = api.Get(ctx, kube.KindNode, "", node.Name); err != nil {
			t.Fatal(err)
		}
		node = o.(*corev1.Node)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*corev1.Node)
	if got.Labels["role"] != "worker" || readyStatus(got) != corev1.ConditionFalse {
		t.Errorf("Update returned labels %v, Ready %s; want role=worker, False", got.Labels, readyStatus(got))
	}
	o, err = api.Get(ctx, kube.KindNode, "", node.Name)
	if err != nil {
		t.Fatal(err)
	}
	if readyStatus(o.(*corev1.Node)) != corev1.ConditionFalse {
		t.Errorf("stored Ready = %s, want False", readyStatus(o.(*corev1.Node)))
	}
	stale.Labels["role"] = "stale"
	if _, err := api.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Errorf("Update with a stale resourceVersion: %v, want Conflict", err)
	}

	if err := api.Delete(ctx, kube.KindConfigMap, "kube-public", "mid"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Get(ctx, kube.KindConfigMap, "kube-public", "mid"); !apierrors.IsNotFound(err) {
		t.Errorf("Get after Delete: %v, want NotFound", err)
	}

	if err := cp.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := cp.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := api.Get(ctx2, kube.KindNode, "", node.Name); err == nil {
		t.Error("the API answers after Close")
	}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

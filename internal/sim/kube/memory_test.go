package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func newTestAPI(t *testing.T) *MemoryAPI {
	t.Helper()
	now := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	return NewMemoryAPI(MemoryOptions{CACert: []byte("-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n"), Now: func() time.Time { return now }, Seed: 1})
}

func TestMemorySystemNamespaces(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	nss, err := m.List(ctx, KindNamespace, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nss {
		names = append(names, n.GetName())
	}
	if got, want := len(names), 4; got != want {
		t.Fatalf("namespaces %v, want default, kube-node-lease, kube-public, kube-system", names)
	}
	if names[0] != "default" || names[3] != "kube-system" {
		t.Errorf("namespaces not sorted: %v", names)
	}
	if _, err := m.Get(ctx, KindClusterRole, "", "cluster-admin"); err != nil {
		t.Errorf("cluster-admin: %v", err)
	}
}

func TestMemoryCreateGetUpdateDelete(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	out, err := m.Create(ctx, cm)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetUID() == "" || out.GetResourceVersion() == "" || out.GetCreationTimestamp().Time.IsZero() {
		t.Errorf("server fields not set: %+v", out)
	}
	if cm.UID != "" {
		t.Error("Create modified its argument")
	}
	if gvk := out.GetObjectKind().GroupVersionKind(); gvk != KindConfigMap {
		t.Errorf("kind %v", gvk)
	}
	if _, err := m.Create(ctx, cm); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
	// Mutating what Get returned changes nothing stored.
	got, _ := m.Get(ctx, KindConfigMap, "default", "c")
	got.(*corev1.ConfigMap).Data["a"] = "2"
	again, _ := m.Get(ctx, KindConfigMap, "default", "c")
	if again.(*corev1.ConfigMap).Data["a"] != "1" {
		t.Error("Get returned the stored object, not a copy")
	}
	// An unchanged update keeps the resourceVersion; a change bumps it;
	// a stale one conflicts.
	same, err := m.Update(ctx, again)
	if err != nil || same.GetResourceVersion() != again.GetResourceVersion() {
		t.Errorf("no-op update: %v, rv %s→%s", err, again.GetResourceVersion(), same.GetResourceVersion())
	}
	upd, err := m.Update(ctx, got)
	if err != nil || upd.GetResourceVersion() == again.GetResourceVersion() {
		t.Fatalf("update: %v", err)
	}
	if _, err := m.Update(ctx, again); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v, want Conflict", err)
	}
	if err := m.Delete(ctx, KindConfigMap, "default", "c"); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, KindConfigMap, "default", "c"); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	} else if err.Error() != `configmaps "c" not found` {
		t.Errorf("message %q", err.Error())
	}
}

func TestMemoryNamespaceRules(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	_, err := m.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "nope"}})
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nope" not found` {
		t.Errorf("create in a missing namespace: %v", err)
	}
	if _, err := m.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}); !apierrors.IsBadRequest(err) {
		t.Errorf("namespaced kind without namespace: %v", err)
	}
	if _, err := m.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "default"}}); !apierrors.IsInvalid(err) {
		t.Errorf("node with a namespace: %v", err)
	}
	if _, err := m.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}); !apierrors.IsInvalid(err) {
		t.Errorf("invalid name: %v", err)
	}
	// Deleting a namespace deletes its content.
	if _, err := m.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, KindNamespace, "", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, KindConfigMap, "x", "c"); !apierrors.IsNotFound(err) {
		t.Errorf("content of a deleted namespace: %v", err)
	}
}

func TestMemoryGarbageCollection(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	owner, err := m.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.GetUID()}
	dep, _ := m.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Namespace: "default", OwnerReferences: []metav1.OwnerReference{ref}}})
	ref2 := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "dep", UID: dep.GetUID()}
	if _, err := m.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "grandchild", Namespace: "default", OwnerReferences: []metav1.OwnerReference{ref2}}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, KindConfigMap, "default", "owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, KindSecret, "default", "grandchild"); !apierrors.IsNotFound(err) {
		t.Errorf("dependents not collected: %v", err)
	}
}

func TestMemoryUnstructured(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	// A known kind given unstructured is stored typed.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "namespace": "default"},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "d"}}},
	}}
	out, err := m.Create(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := out.(*appsv1.Deployment)
	if !ok || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Fatalf("deployment %T %+v", out, out)
	}
	// An unknown kind is stored as it comes.
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "kube-system"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if _, err := m.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	w, err := m.Get(ctx, crd.GroupVersionKind(), "kube-system", "w")
	if err != nil || w.(*unstructured.Unstructured).Object["spec"].(map[string]any)["size"] != int64(3) {
		t.Errorf("widget %v %v", w, err)
	}
}

func TestMemoryConcurrentUse(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	done := make(chan error, 8)
	for w := range 8 {
		go func() {
			for i := range 20 {
				name := fmt.Sprintf("c-%d-%d", w, i)
				if _, err := m.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}); err != nil {
					done <- err
					return
				}
				if _, err := m.List(ctx, KindConfigMap, "default"); err != nil {
					done <- err
					return
				}
				if i%2 == 0 {
					if err := m.Delete(ctx, KindConfigMap, "default", name); err != nil {
						done <- err
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	objs, _ := m.List(ctx, KindConfigMap, "default")
	if got := len(objs); got != 8*10+1 { // + kube-root-ca.crt
		t.Errorf("%d config maps, want %d", got, 8*10+1)
	}
}

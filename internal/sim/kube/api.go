package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Object is a typed Kubernetes object of k8s.io/api (*corev1.Node,
// *corev1.Pod, *policyv1.PodDisruptionBudget, ...).
type Object interface {
	metav1.Object
	runtime.Object
}

// API is a Kubernetes API server as the simulation's programs use it:
// typed objects in, typed objects out, errors as the API server returns
// them (k8s.io/apimachinery/pkg/api/errors: NotFound, AlreadyExists,
// Conflict, TooManyRequests for a refused eviction, Unauthorized,
// Forbidden). [MemoryAPI] implements it in memory; a client of a real
// kube-apiserver can implement it too, which is the point of the seam.
//
// Kinds are addressed by GroupVersionKind (corev1.SchemeGroupVersion
// .WithKind("Node")); namespace is "" for cluster-scoped kinds.
type API interface {
	// Create stores a new object and returns it as stored (uid,
	// resourceVersion, creationTimestamp set; a generateName resolved).
	Create(ctx context.Context, obj Object) (Object, error)
	// Get returns one object.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (Object, error)
	// List returns the objects of a kind, in one namespace or in all
	// ("" for a namespaced kind), sorted by namespace and name.
	List(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]Object, error)
	// Update replaces an object; a stale resourceVersion is a Conflict.
	// An empty resourceVersion updates unconditionally.
	Update(ctx context.Context, obj Object) (Object, error)
	// Delete removes an object (and what the API server's garbage
	// collector removes with it).
	Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error
	// Evict is the pods/eviction subresource: it deletes the pod unless
	// a PodDisruptionBudget forbids it (TooManyRequests).
	Evict(ctx context.Context, namespace, name string) error
	// Authenticate returns the user a bearer token belongs to, and its
	// groups, as the API server's authenticators do (service account
	// tokens, bootstrap tokens); Unauthorized otherwise.
	Authenticate(ctx context.Context, bearerToken string) (user string, groups []string, err error)
	// Authorize reports whether user (with groups) may do verb on
	// resource (plural, e.g. "nodes") in namespace, as RBAC decides.
	Authorize(ctx context.Context, user string, groups []string, verb, group, resource, namespace string) (bool, error)
}

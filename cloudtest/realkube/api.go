package realkube

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// clientAPI is kube.API over client-go: typed objects are converted to
// and from unstructured ones and go through the dynamic client, so any
// kind the API server serves (CRDs included) works; kinds of
// kube.NewScheme come back typed, others as *unstructured.Unstructured.
type clientAPI struct {
	scheme    *runtime.Scheme
	client    kubernetes.Interface
	dynamic   dynamic.Interface
	discovery discovery.CachedDiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper

	mu          sync.Mutex
	subresource map[schema.GroupVersion]map[string]bool // "pods/status" → true
}

var _ kube.API = (*clientAPI)(nil)

func newClientAPI(cfg *rest.Config) (*clientAPI, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco := memory.NewMemCacheClient(client.Discovery())
	return &clientAPI{
		scheme:      kube.NewScheme(),
		client:      client,
		dynamic:     dyn,
		discovery:   disco,
		mapper:      restmapper.NewDeferredDiscoveryRESTMapper(disco),
		subresource: map[schema.GroupVersion]map[string]bool{},
	}, nil
}

// kindOf returns the kind of obj: its TypeMeta, or what the scheme knows
// of its Go type.
func (a *clientAPI) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	gvks, _, err := a.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, apierrors.NewBadRequest(fmt.Sprintf("object %T has no kind", obj))
	}
	return gvks[0], nil
}

// mapping finds the resource of a kind, refreshing discovery once when
// the kind is unknown (a CRD created since).
func (a *clientAPI) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		a.mu.Lock()
		a.subresource = map[schema.GroupVersion]map[string]bool{}
		a.mu.Unlock()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		// What kubectl reports for a kind the server does not serve:
		// 'no matches for kind "Foo" in version "example.com/v1"'.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: err.Error(),
			Details: &metav1.StatusDetails{Group: gvk.Group, Kind: gvk.Kind},
		}}
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// What a request for a namespaced kind without a namespace gets.
type noNamespace int

const (
	allNamespaces noNamespace = iota // List: all of them
	badRequest                       // Create, Update: as MemoryAPI.checkScope
	notFound                         // Get, Delete: no object has that key
)

// resource returns the dynamic client of a kind in namespace (ignored for
// cluster-scoped kinds).
func (a *clientAPI) resource(gvk schema.GroupVersionKind, namespace, name string, empty noNamespace) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	m, err := a.mapping(gvk)
	if err != nil {
		return nil, nil, err
	}
	ri := a.dynamic.Resource(m.Resource)
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return ri, m, nil
	}
	if namespace == "" {
		switch empty {
		case badRequest:
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("an empty namespace may not be set when a resource name is provided for namespaced kind %s", gvk.Kind))
		case notFound:
			return nil, nil, apierrors.NewNotFound(m.Resource.GroupResource(), name)
		}
	}
	return ri.Namespace(namespace), m, nil
}

// hasStatus reports whether the resource has a status subresource.
func (a *clientAPI) hasStatus(m *meta.RESTMapping) bool {
	gv := m.Resource.GroupVersion()
	a.mu.Lock()
	subs, ok := a.subresource[gv]
	a.mu.Unlock()
	if !ok {
		subs = map[string]bool{}
		list, err := a.discovery.ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			return false
		}
		for _, r := range list.APIResources {
			subs[r.Name] = true
		}
		a.mu.Lock()
		a.subresource[gv] = subs
		a.mu.Unlock()
	}
	return subs[m.Resource.Resource+"/status"]
}

func (a *clientAPI) toUnstructured(obj kube.Object) (*unstructured.Unstructured, schema.GroupVersionKind, error) {
	if obj == nil {
		return nil, schema.GroupVersionKind{}, apierrors.NewBadRequest("no object")
	}
	gvk, err := a.kindOf(obj)
	if err != nil {
		return nil, gvk, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u = u.DeepCopy()
		u.SetGroupVersionKind(gvk)
		return u, gvk, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, gvk, apierrors.NewBadRequest(err.Error())
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, gvk, nil
}

// fromUnstructured returns u typed when the scheme knows its kind.
func (a *clientAPI) fromUnstructured(u *unstructured.Unstructured) (kube.Object, error) {
	gvk := u.GroupVersionKind()
	if !a.scheme.Recognizes(gvk) {
		return u, nil
	}
	typed, err := a.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return typed.(kube.Object), nil
}

// Create implements kube.API: a POST. What the API server drops on
// create (the status of most kinds, e.g. a Pod's,
// pkg/registry/core/pod/strategy.go PrepareForCreate; a Node keeps its
// status, pkg/registry/core/node/strategy.go PrepareForCreate) stays
// dropped.
func (a *clientAPI) Create(ctx context.Context, obj kube.Object) (kube.Object, error) {
	u, gvk, err := a.toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	ri, _, err := a.resource(gvk, u.GetNamespace(), u.GetName(), badRequest)
	if err != nil {
		return nil, err
	}
	out, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return a.fromUnstructured(out)
}

// Get implements kube.API.
func (a *clientAPI) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (kube.Object, error) {
	ri, _, err := a.resource(gvk, namespace, name, notFound)
	if err != nil {
		return nil, err
	}
	out, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return a.fromUnstructured(out)
}

// List implements kube.API, sorted by namespace and name.
func (a *clientAPI) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]kube.Object, error) {
	ri, _, err := a.resource(gvk, namespace, "", allNamespaces)
	if err != nil {
		return nil, err
	}
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]kube.Object, 0, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		if item.GetKind() == "" {
			item.SetGroupVersionKind(gvk)
		}
		o, err := a.fromUnstructured(item)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out, nil
}

// Update implements kube.API: a PUT of the object, then, when the object
// has a non-empty status and its resource a status subresource, a PUT of
// the status: the main resource keeps the stored status (e.g.
// pkg/registry/core/node/strategy.go PrepareForUpdate: "newNode.Status =
// oldNode.Status"), the status subresource keeps the stored spec. A
// Conflict of the second PUT (a controller wrote in between)
// is retried on the fresh object.
func (a *clientAPI) Update(ctx context.Context, obj kube.Object) (kube.Object, error) {
	u, gvk, err := a.toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	ri, m, err := a.resource(gvk, u.GetNamespace(), u.GetName(), badRequest)
	if err != nil {
		return nil, err
	}
	out, err := ri.Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	status, ok := u.Object["status"]
	if !ok || isEmpty(status) || !a.hasStatus(m) {
		return a.fromUnstructured(out)
	}
	for attempt := 0; ; attempt++ {
		if apiequality.Semantic.DeepEqual(out.Object["status"], status) {
			return a.fromUnstructured(out)
		}
		next := out.DeepCopy()
		next.Object["status"] = runtime.DeepCopyJSONValue(status)
		res, err := ri.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			return a.fromUnstructured(res)
		}
		if !apierrors.IsConflict(err) || attempt == 4 {
			return nil, err
		}
		if out, err = ri.Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
}

// isEmpty reports whether an unstructured value is nil or an empty map.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// Delete implements kube.API with the API server's default options
// (graceful deletion of pods, background propagation to dependents).
func (a *clientAPI) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	ri, _, err := a.resource(gvk, namespace, name, notFound)
	if err != nil {
		return err
	}
	return ri.Delete(ctx, name, metav1.DeleteOptions{})
}

// Evict implements kube.API: a policy/v1 Eviction, the pods/eviction
// subresource (pkg/registry/core/pod/storage/eviction.go).
func (a *clientAPI) Evict(ctx context.Context, namespace, name string) error {
	return a.client.PolicyV1().Evictions(namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	})
}

// Authenticate implements kube.API with a TokenReview: the API server's
// authenticators (service account tokens, bootstrap tokens, ...) decide.
func (a *clientAPI) Authenticate(ctx context.Context, bearerToken string) (string, []string, error) {
	if bearerToken == "" {
		// A TokenReview without a token is Invalid; a request without
		// one is anonymous, not authenticated.
		return "", nil, apierrors.NewUnauthorized("Unauthorized")
	}
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: bearerToken},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, err
	}
	if !tr.Status.Authenticated {
		return "", nil, apierrors.NewUnauthorized("Unauthorized")
	}
	return tr.Status.User.Username, tr.Status.User.Groups, nil
}

// Authorize implements kube.API with a SubjectAccessReview: the API
// server's authorizers (Node, RBAC) decide.
func (a *clientAPI) Authorize(ctx context.Context, user string, groups []string, verb, group, resource, namespace string) (bool, error) {
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Namespace: namespace,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

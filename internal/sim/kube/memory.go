package kube

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kinds of the objects [MemoryAPI] models with behaviour (the others are
// stored as they come). They are values to read, never to reassign.
var (
	// KindNamespace is core/v1 Namespace.
	KindNamespace = corev1.SchemeGroupVersion.WithKind("Namespace")
	// KindNode is core/v1 Node.
	KindNode = corev1.SchemeGroupVersion.WithKind("Node")
	// KindPod is core/v1 Pod.
	KindPod = corev1.SchemeGroupVersion.WithKind("Pod")
	// KindServiceAccount is core/v1 ServiceAccount.
	KindServiceAccount = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	// KindSecret is core/v1 Secret.
	KindSecret = corev1.SchemeGroupVersion.WithKind("Secret")
	// KindConfigMap is core/v1 ConfigMap.
	KindConfigMap = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	// KindService is core/v1 Service: stored as it comes (no
	// ClusterIP allocation, no endpoints, no kube-proxy).
	KindService = corev1.SchemeGroupVersion.WithKind("Service")
	// KindClusterRole is rbac.authorization.k8s.io/v1 ClusterRole.
	KindClusterRole = rbacv1.SchemeGroupVersion.WithKind("ClusterRole")
	// KindClusterRoleBinding is rbac.authorization.k8s.io/v1 ClusterRoleBinding.
	KindClusterRoleBinding = rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding")
	// KindRole is rbac.authorization.k8s.io/v1 Role.
	KindRole = rbacv1.SchemeGroupVersion.WithKind("Role")
	// KindRoleBinding is rbac.authorization.k8s.io/v1 RoleBinding.
	KindRoleBinding = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	// KindPodDisruptionBudget is policy/v1 PodDisruptionBudget.
	KindPodDisruptionBudget = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")
	// KindDeployment is apps/v1 Deployment.
	KindDeployment = appsv1.SchemeGroupVersion.WithKind("Deployment")
	// KindReplicaSet is apps/v1 ReplicaSet.
	KindReplicaSet = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	// KindDaemonSet is apps/v1 DaemonSet.
	KindDaemonSet = appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	// KindEvent is core/v1 Event.
	KindEvent = corev1.SchemeGroupVersion.WithKind("Event")
)

// clusterScoped are the kinds without a namespace, as the API server's
// REST storage declares them (NamespaceScoped() false in
// pkg/registry/*/*/strategy.go of kubernetes/kubernetes); a kind not
// listed here is namespaced.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                       true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                 true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                    true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                             true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                    true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                              true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                           true,
}

// Namespaced reports whether objects of kind gvk live in a namespace.
func Namespaced(gvk schema.GroupVersionKind) bool { return !clusterScoped[gvk.GroupKind()] }

// Resource returns the REST resource of a kind (Node → nodes,
// PodDisruptionBudget → poddisruptionbudgets, NetworkPolicy →
// networkpolicies), the name apierrors and RBAC use.
func Resource(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// NewScheme returns a scheme of the typed kinds the simulation knows
// (core/v1, apps/v1, rbac/v1, policy/v1). Each caller gets its own: the
// package keeps no mutable state.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, policyv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // the k8s.io/api registrations cannot fail
		}
	}
	return s
}

// MemoryOptions configure a [MemoryAPI].
type MemoryOptions struct {
	// CACert is the PEM of the cluster CA, which the token controller puts
	// into service account token Secrets (data["ca.crt"]).
	CACert []byte
	// Now is the clock (creationTimestamp, bootstrap token expiry);
	// time.Now when nil.
	Now func() time.Time
	// Seed makes generated names (pod suffixes, tokens, uids)
	// reproducible; 0 is a fixed seed as well.
	Seed uint64
	// ClusterCIDR is the pod network (kubeadm's networking.podSubnet):
	// when set, nodes without spec.podCIDR get a subnet of it, as
	// kube-controller-manager's node IPAM does. Unset: nodes keep the
	// podCIDR they are created with.
	ClusterCIDR netip.Prefix
	// NodeCIDRMaskSize is the size of each node's subnet
	// (--node-cidr-mask-size: 24 for IPv4 and 64 for IPv6 when 0).
	NodeCIDRMaskSize int
	// MountNFS is how the kubelet of a node mounts an NFS volume
	// (server:path) before it starts the containers of a pod using it
	// ([ControlPlaneSpec.MountNFS]). When set, a pod with NFS volumes is
	// bound and waits, ContainerCreating, until [MemoryAPI.SyncPods]
	// mounts them; when nil, such a pod runs at once, as every other pod.
	MountNFS func(ctx context.Context, node, server, path, target string) error
}

// MemoryAPI is an in-memory [API]: a kube-apiserver with its storage and
// the controllers the simulation needs, run synchronously after every
// write so that the world is deterministic (controllers.go).
//
// At start the namespaces default, kube-system, kube-public and
// kube-node-lease exist (as the API server's system namespaces
// controller creates them, pkg/controlplane/controller/systemnamespaces),
// and the ClusterRole cluster-admin with its ClusterRoleBinding to the
// group system:masters (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go).
//
// Objects are deep-copied in and out; every stored object gets a uid, a
// resourceVersion (one counter for the whole store, as etcd's revision),
// a creationTimestamp and its apiVersion/kind. Namespaced kinds need an
// existing namespace. Deleting an object deletes its dependents (the
// garbage collector, background propagation: objects whose
// ownerReferences name only deleted owners); deleting a namespace deletes
// its content (the namespace controller); deleting a node deletes its
// pods (pod GC).
//
// Kinds outside the scheme of [NewScheme] are stored as
// *unstructured.Unstructured without behaviour; their scope is guessed
// from a small table of cluster-scoped kinds.
//
// The controllers (each cites what it models): Deployment → ReplicaSet
// → Pods; DaemonSet → one pod per node it fits; the scheduler (taints and
// tolerations, cordoned nodes, node selectors and affinity, fewest pods
// first; a bound pod runs and is Ready at once); the node lifecycle
// controller's not-ready/unreachable NoSchedule taints; pod GC; node
// IPAM ([MemoryOptions.ClusterCIDR]); the service account controller and
// the root CA publisher of every namespace; the token controller and the
// bootstrap token cleaner; the disruption controller (PodDisruptionBudget
// status); the persistent volume controller for static volumes and the
// pv-protection and pvc-protection controllers (controllers_volume.go).
// The ServiceAccount admission plugin checks new pods; the
// StorageObjectInUseProtection plugin gives PersistentVolumes and claims
// their protection finalizers. Pod deletion is graceful: immediate unless
// the pod's node reports Ready Unknown (its kubelet stopped), where the
// pod stays Terminating.
//
// Finalizers hold a deletion as the API server's generic store does
// (k8s.io/apiserver/pkg/registry/generic/registry/store.go): deleting an
// object with finalizers sets its deletionTimestamp (and
// deletionGracePeriodSeconds 0) and keeps it; the update that removes
// its last finalizer deletes it (ShouldDeleteDuringUpdate); an update
// may not add a finalizer to an object being deleted. The garbage
// collector's deletions go the same way; a namespace's deletion removes
// its content at once.
//
// The kubelets' part of a pod: a bound pod runs at once, except one with
// NFS volumes when [MemoryOptions.MountNFS] is set, which waits for
// [MemoryAPI.SyncPods] (kubelet_volumes.go).
//
// A cluster has a pod network on a node once a DaemonSet mounting the
// hostPath /etc/cni/net.d has a pod there: see [PodNetworkReady].
//
// Not modelled: watches, patches and subresources other than eviction
// (Update writes status too), field managers, Services and their
// endpoints, Jobs, StatefulSets, graceful deletion periods (time does not
// pass), the garbage collector's foreground and orphan finalizers,
// admission beyond service accounts and storage protection.
//
// MemoryAPI is safe for concurrent use.
type MemoryAPI struct {
	scheme       *runtime.Scheme
	caCert       []byte
	now          func() time.Time
	clusterCIDR  netip.Prefix
	nodeMaskSize int
	mountNFS     func(ctx context.Context, node, server, path, target string) error

	mu   sync.Mutex
	rng  *rand.Rand
	rv   uint64
	uids uint64
	objs map[schema.GroupVersionKind]map[string]Object // key: namespace/name
}

var _ API = (*MemoryAPI)(nil)

// NewMemoryAPI returns a MemoryAPI holding the system namespaces and the
// cluster-admin role.
func NewMemoryAPI(o MemoryOptions) *MemoryAPI {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	m := &MemoryAPI{
		scheme:   NewScheme(),
		caCert:   append([]byte(nil), o.CACert...),
		now:      now,
		rng:      rand.New(rand.NewPCG(o.Seed, 0x6d676d746b6974)),
		objs:     map[schema.GroupVersionKind]map[string]Object{},
		mountNFS: o.MountNFS,
	}
	if o.ClusterCIDR.IsValid() {
		m.clusterCIDR = o.ClusterCIDR.Masked()
		m.nodeMaskSize = o.NodeCIDRMaskSize
		if m.nodeMaskSize == 0 {
			m.nodeMaskSize = 24
			if m.clusterCIDR.Addr().Is6() {
				m.nodeMaskSize = 64
			}
		}
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		m.mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	// plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: cluster-admin
	// may do everything; clusterrolebindings.go binds it to system:masters.
	m.mustCreate(&rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin", Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
		},
	})
	m.mustCreate(&rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin", Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:masters"}},
	})
	return m
}

func (m *MemoryAPI) mustCreate(obj Object) {
	if _, err := m.Create(context.Background(), obj); err != nil {
		panic(err)
	}
}

// Scheme returns the scheme of the typed kinds MemoryAPI stores.
func (m *MemoryAPI) Scheme() *runtime.Scheme { return m.scheme }

// kindOf returns the kind of obj: its TypeMeta, or what the scheme knows
// of its Go type.
func (m *MemoryAPI) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() && gvk.Kind != "" {
		return gvk, nil
	}
	gvks, _, err := m.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, apierrors.NewBadRequest(fmt.Sprintf("object %T has no kind", obj))
	}
	return gvks[0], nil
}

// normalize returns a deep copy of obj, typed when the scheme knows its
// kind (an *unstructured.Unstructured of a known kind is converted, as
// the API server decodes a request body), with apiVersion/kind set.
func (m *MemoryAPI) normalize(obj Object) (Object, schema.GroupVersionKind, error) {
	if obj == nil {
		return nil, schema.GroupVersionKind{}, apierrors.NewBadRequest("no object")
	}
	gvk, err := m.kindOf(obj)
	if err != nil {
		return nil, gvk, err
	}
	var out Object
	if u, ok := obj.(*unstructured.Unstructured); ok && m.scheme.Recognizes(gvk) {
		typed, err := m.scheme.New(gvk)
		if err != nil {
			return nil, gvk, apierrors.NewBadRequest(err.Error())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return nil, gvk, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
		}
		out = typed.(Object)
	} else {
		c, ok := obj.DeepCopyObject().(Object)
		if !ok {
			return nil, gvk, apierrors.NewBadRequest(fmt.Sprintf("object %T has no metadata", obj))
		}
		out = c
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, gvk, nil
}

func key(namespace, name string) string { return namespace + "/" + name }

// checkScope validates the namespace and name of an object of kind gvk.
func (m *MemoryAPI) checkScope(gvk schema.GroupVersionKind, obj Object) error {
	gk := schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}
	if Namespaced(gvk) {
		if obj.GetNamespace() == "" {
			return apierrors.NewBadRequest(fmt.Sprintf("an empty namespace may not be set when a resource name is provided for namespaced kind %s", gvk.Kind))
		}
		if _, ok := m.objs[KindNamespace][key("", obj.GetNamespace())]; !ok {
			return apierrors.NewNotFound(corev1.Resource("namespaces"), obj.GetNamespace())
		}
	} else if obj.GetNamespace() != "" {
		return apierrors.NewInvalid(gk, obj.GetName(), errList("metadata.namespace", obj.GetNamespace(), "not allowed on this type"))
	}
	name := obj.GetName()
	if name == "" {
		return apierrors.NewInvalid(gk, name, errList("metadata.name", name, "name or generateName is required"))
	}
	// Most kinds take DNS-1123 subdomain names
	// (apimachinery/pkg/api/validation.NameIsDNSSubdomain); RBAC kinds
	// take path segment names (pkg/apis/rbac/validation: ValidateRBACName),
	// which allows ':' as system:masters bindings show.
	if gvk.Group == rbacv1.GroupName {
		if strings.ContainsAny(name, "/%") || name == "." || name == ".." {
			return apierrors.NewInvalid(gk, name, errList("metadata.name", name, "may not contain '/' or '%'"))
		}
	} else if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return apierrors.NewInvalid(gk, name, errList("metadata.name", name, strings.Join(errs, "; ")))
	}
	return nil
}

// Create implements [API].
func (m *MemoryAPI) Create(_ context.Context, obj Object) (Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := m.createLocked(obj)
	if err != nil {
		return nil, err
	}
	m.reconcileLocked()
	return m.copyOut(out), nil
}

func (m *MemoryAPI) createLocked(in Object) (Object, error) {
	obj, gvk, err := m.normalize(in)
	if err != nil {
		return nil, err
	}
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		// apiserver/pkg/storage/names/generate.go: 5 random alphanumerics.
		for {
			name := obj.GetGenerateName() + m.randString(5)
			if _, taken := m.objs[gvk][key(obj.GetNamespace(), name)]; !taken {
				obj.SetName(name)
				break
			}
		}
	}
	if err := m.checkScope(gvk, obj); err != nil {
		return nil, err
	}
	if p, ok := obj.(*corev1.Pod); ok {
		if err := m.admitPodLocked(p); err != nil {
			return nil, err
		}
	}
	admitStorageProtection(obj)
	k := key(obj.GetNamespace(), obj.GetName())
	if _, ok := m.objs[gvk][k]; ok {
		return nil, apierrors.NewAlreadyExists(Resource(gvk), obj.GetName())
	}
	if ns, ok := m.objs[KindNamespace][key("", obj.GetNamespace())].(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
		return nil, apierrors.NewForbidden(Resource(gvk), obj.GetName(),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns.Name))
	}
	m.uids++
	obj.SetUID(types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", m.uids, m.rng.Uint32()&0xffff, m.rng.Uint32()&0xfff, m.rng.Uint32()&0xfff, m.rng.Uint64()&0xffffffffffff)))
	obj.SetCreationTimestamp(metav1.NewTime(m.now().Truncate(time.Second)))
	obj.SetDeletionTimestamp(nil)
	obj.SetGeneration(1)
	m.defaultLocked(obj)
	return m.storeLocked(gvk, obj), nil
}

// defaultLocked applies the API server's defaults the simulation relies
// on (pkg/apis/*/v1/defaults.go).
func (m *MemoryAPI) defaultLocked(obj Object) {
	one := int32(1)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = &one
		}
	case *appsv1.ReplicaSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = &one
		}
	case *corev1.Pod:
		if o.Status.Phase == "" {
			o.Status.Phase = corev1.PodPending
		}
	case *corev1.Namespace:
		if o.Status.Phase == "" {
			o.Status.Phase = corev1.NamespaceActive
		}
		// The NamespaceDefaultLabelName admission (pkg/apis/core/v1/defaults.go:
		// SetDefaults_Namespace) labels every namespace with its name.
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["kubernetes.io/metadata.name"] = o.Name
		o.SetLabels(l)
	}
}

// storeLocked stores obj with a new resourceVersion.
func (m *MemoryAPI) storeLocked(gvk schema.GroupVersionKind, obj Object) Object {
	m.rv++
	obj.SetResourceVersion(fmt.Sprint(m.rv))
	if m.objs[gvk] == nil {
		m.objs[gvk] = map[string]Object{}
	}
	m.objs[gvk][key(obj.GetNamespace(), obj.GetName())] = obj
	return obj
}

func (m *MemoryAPI) copyOut(obj Object) Object {
	return obj.DeepCopyObject().(Object)
}

// Get implements [API].
func (m *MemoryAPI) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	obj, ok := m.objs[gvk][key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(Resource(gvk), name)
	}
	return m.copyOut(obj), nil
}

// List implements [API].
func (m *MemoryAPI) List(_ context.Context, gvk schema.GroupVersionKind, namespace string) ([]Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Object
	for _, o := range m.listLocked(gvk, namespace) {
		out = append(out, m.copyOut(o))
	}
	return out, nil
}

// ListPodsOnNode implements [NodePodLister]: only the pods bound to node
// are copied.
func (m *MemoryAPI) ListPodsOnNode(_ context.Context, node string) ([]Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Object
	for _, o := range m.objs[KindPod] {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == node {
			out = append(out, o)
		}
	}
	sortObjects(out)
	for i, o := range out {
		out[i] = m.copyOut(o)
	}
	return out, nil
}

// listLocked returns the stored objects (not copies), sorted.
func (m *MemoryAPI) listLocked(gvk schema.GroupVersionKind, namespace string) []Object {
	var out []Object
	for _, o := range m.objs[gvk] {
		if namespace == "" || o.GetNamespace() == namespace {
			out = append(out, o)
		}
	}
	sortObjects(out)
	return out
}

// sortObjects sorts objects by namespace and name.
func sortObjects(out []Object) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
}

// Update implements [API]. An update that changes nothing keeps the
// resourceVersion, as the API server skips writing an unchanged object
// (apiserver/pkg/storage/etcd3/store.go GuaranteedUpdate: "if
// !origState.stale && bytes.Equal(data, origState.data)").
func (m *MemoryAPI) Update(_ context.Context, in Object) (Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := m.updateLocked(in)
	if err != nil {
		return nil, err
	}
	m.reconcileLocked()
	return m.copyOut(out), nil
}

func (m *MemoryAPI) updateLocked(in Object) (Object, error) {
	obj, gvk, err := m.normalize(in)
	if err != nil {
		return nil, err
	}
	old, ok := m.objs[gvk][key(obj.GetNamespace(), obj.GetName())]
	if !ok {
		return nil, apierrors.NewNotFound(Resource(gvk), obj.GetName())
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return nil, apierrors.NewConflict(Resource(gvk), obj.GetName(),
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := obj.GetUID(); uid != "" && uid != old.GetUID() {
		return nil, apierrors.NewConflict(Resource(gvk), obj.GetName(),
			//lint:ignore ST1005 the API server's message (apiserver/pkg/registry/rest/update.go)
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, old.GetUID()))
	}
	// Fields the server owns.
	obj.SetUID(old.GetUID())
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
	obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	obj.SetGeneration(old.GetGeneration())
	obj.SetResourceVersion(old.GetResourceVersion())
	m.defaultLocked(obj)
	if apiequality.Semantic.DeepEqual(obj, old) {
		return old, nil
	}
	if old.GetDeletionTimestamp() != nil {
		// apimachinery/pkg/api/validation/objectmeta.go
		// ValidateNoNewFinalizers, from ValidateObjectMetaUpdate.
		if extra := newFinalizers(old.GetFinalizers(), obj.GetFinalizers()); len(extra) > 0 {
			return nil, apierrors.NewInvalid(gvk.GroupKind(), obj.GetName(), field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
				fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", extra))})
		}
		// store.go ShouldDeleteDuringUpdate: the last finalizer of an
		// object being deleted without a grace period is gone.
		if g := old.GetDeletionGracePeriodSeconds(); len(obj.GetFinalizers()) == 0 && (g == nil || *g == 0) {
			m.removeLocked(gvk, obj.GetNamespace(), obj.GetName())
			obj.SetResourceVersion(fmt.Sprint(m.rv))
			return obj, nil
		}
	}
	if specChanged(old, obj) {
		obj.SetGeneration(old.GetGeneration() + 1)
	}
	return m.storeLocked(gvk, obj), nil
}

// newFinalizers returns the finalizers of next not in prev, sorted.
func newFinalizers(prev, next []string) []string {
	var extra []string
	for _, f := range next {
		if !slices.Contains(prev, f) && !slices.Contains(extra, f) {
			extra = append(extra, f)
		}
	}
	slices.Sort(extra)
	return extra
}

// specChanged reports whether anything but metadata and status differs,
// which bumps metadata.generation (the registry strategies'
// PrepareForUpdate, e.g. pkg/registry/apps/deployment/strategy.go).
func specChanged(a, b Object) bool {
	ua, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	ub, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err1 != nil || err2 != nil {
		return true
	}
	for _, f := range []string{"metadata", "status"} {
		delete(ua, f)
		delete(ub, f)
	}
	return !apiequality.Semantic.DeepEqual(ua, ub)
}

// Delete implements [API].
func (m *MemoryAPI) Delete(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	del := m.deleteLocked
	if gvk == KindPod {
		del = func(_ schema.GroupVersionKind, ns, n string) error { return m.deletePodLocked(ns, n) }
	}
	if err := del(gvk, namespace, name); err != nil {
		return err
	}
	m.reconcileLocked()
	return nil
}

// deleteLocked deletes an object, or marks it as being deleted while it
// has finalizers (store.go Delete: updateForGracefulDeletionAndFinalizers
// and markAsDeleting set the deletionTimestamp, a grace period of 0, and
// bump the generation once).
func (m *MemoryAPI) deleteLocked(gvk schema.GroupVersionKind, namespace, name string) error {
	o, ok := m.objs[gvk][key(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(Resource(gvk), name)
	}
	if len(o.GetFinalizers()) > 0 {
		m.markDeletingLocked(gvk, o)
		return nil
	}
	m.removeLocked(gvk, namespace, name)
	return nil
}

// markDeletingLocked stores a copy of o with a deletionTimestamp, unless
// it has one.
func (m *MemoryAPI) markDeletingLocked(gvk schema.GroupVersionKind, o Object) {
	if o.GetDeletionTimestamp() != nil {
		return
	}
	c := o.DeepCopyObject().(Object)
	now := metav1.NewTime(m.now().Truncate(time.Second))
	zero := int64(0)
	c.SetDeletionTimestamp(&now)
	c.SetDeletionGracePeriodSeconds(&zero)
	if c.GetGeneration() > 0 {
		c.SetGeneration(c.GetGeneration() + 1)
	}
	m.storeLocked(gvk, c)
}

// removeLocked removes a stored object, what a namespace holds with it,
// and what the garbage collector deletes after it.
func (m *MemoryAPI) removeLocked(gvk schema.GroupVersionKind, namespace, name string) {
	delete(m.objs[gvk], key(namespace, name))
	m.rv++
	if gvk == KindNamespace {
		// pkg/controller/namespace/deletion/namespaced_resources_deleter.go:
		// everything in the namespace goes with it.
		for kind, objs := range m.objs {
			for k, o := range objs {
				if Namespaced(kind) && o.GetNamespace() == name {
					delete(objs, k)
				}
			}
		}
	}
	m.collectGarbageLocked()
}

// collectGarbageLocked deletes the objects all of whose owners are gone,
// repeatedly, as the garbage collector does with background propagation
// (pkg/controller/garbagecollector/garbagecollector.go: attemptToDeleteItem
// deletes an object whose owners are all absent; a namespaced owner is
// looked up in the dependent's namespace); one with finalizers is marked
// as being deleted and stays until they are removed.
func (m *MemoryAPI) collectGarbageLocked() {
	for {
		uids := map[types.UID]bool{}
		for _, objs := range m.objs {
			for _, o := range objs {
				uids[o.GetUID()] = true
			}
		}
		removed := false
		for gvk, objs := range m.objs {
			for k, o := range objs {
				refs := o.GetOwnerReferences()
				if len(refs) == 0 {
					continue
				}
				alive := false
				for _, r := range refs {
					if uids[r.UID] {
						alive = true
						break
					}
				}
				switch {
				case alive:
				case len(o.GetFinalizers()) > 0:
					m.markDeletingLocked(gvk, o)
				default:
					delete(objs, k)
					removed = true
				}
			}
		}
		if !removed {
			return
		}
		m.rv++
	}
}

func (m *MemoryAPI) randString(n int) string {
	// apiserver/pkg/storage/names: utilrand.String, which avoids vowels and
	// look-alike digits.
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[m.rng.IntN(len(alphabet))]
	}
	return string(b)
}

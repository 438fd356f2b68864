package kube

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// addNode creates a Ready node with an InternalIP; master nodes carry
// kubeadm's control-plane taint.
func addNode(t *testing.T, m *MemoryAPI, name, ip string, master bool) {
	t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244." + ip[len(ip)-1:] + ".0/24"},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if master {
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
		n.Spec.Taints = []corev1.Taint{{Key: TaintControlPlane, Effect: corev1.TaintEffectNoSchedule}}
	}
	if _, err := m.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func podsOf(t *testing.T, m *MemoryAPI, ns, prefix string) []*corev1.Pod {
	t.Helper()
	objs, err := m.List(context.Background(), KindPod, ns)
	if err != nil {
		t.Fatal(err)
	}
	var out []*corev1.Pod
	for _, o := range objs {
		if p := o.(*corev1.Pod); strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
		}
	}
	return out
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
			},
		},
	}
}

func TestDeploymentSchedulesOnWorkersSpread(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	addNode(t, m, "master-10-0-0-5", "10.0.0.5", true)
	addNode(t, m, "worker-10-0-0-6", "10.0.0.6", false)
	addNode(t, m, "worker-10-0-0-7", "10.0.0.7", false)
	if _, err := m.Create(ctx, deployment("web", 4)); err != nil {
		t.Fatal(err)
	}
	pods := podsOf(t, m, "default", "web-")
	if len(pods) != 4 {
		t.Fatalf("%d pods, want 4", len(pods))
	}
	per := map[string]int{}
	for _, p := range pods {
		if !podReady(p) || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Errorf("pod %s not running/ready: %+v", p.Name, p.Status)
		}
		per[p.Spec.NodeName]++
	}
	if per["worker-10-0-0-6"] != 2 || per["worker-10-0-0-7"] != 2 {
		t.Errorf("spread %v, want 2 per worker and none on the master", per)
	}
	d, _ := m.Get(ctx, KindDeployment, "default", "web")
	if st := d.(*appsv1.Deployment).Status; st.ReadyReplicas != 4 || st.AvailableReplicas != 4 {
		t.Errorf("deployment status %+v", st)
	}
	// Scaling down deletes pods; the ReplicaSet is owned by the Deployment.
	dd := d.(*appsv1.Deployment)
	two := int32(2)
	dd.Spec.Replicas = &two
	if _, err := m.Update(ctx, dd); err != nil {
		t.Fatal(err)
	}
	if n := len(podsOf(t, m, "default", "web-")); n != 2 {
		t.Errorf("%d pods after scale down", n)
	}
	// Deleting the Deployment collects ReplicaSet and pods.
	if err := m.Delete(ctx, KindDeployment, "default", "web"); err != nil {
		t.Fatal(err)
	}
	if n := len(podsOf(t, m, "default", "web-")); n != 0 {
		t.Errorf("%d pods after deleting the deployment", n)
	}
	if rss, _ := m.List(ctx, KindReplicaSet, ""); len(rss) != 0 {
		t.Errorf("replicasets left: %d", len(rss))
	}
}

func TestUnschedulableWithoutWorkers(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	addNode(t, m, "master-10-0-0-5", "10.0.0.5", true)
	if _, err := m.Create(ctx, deployment("web", 1)); err != nil {
		t.Fatal(err)
	}
	p := podsOf(t, m, "default", "web-")[0]
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		t.Fatalf("pod scheduled on a tainted master: %+v", p.Spec.NodeName)
	}
	msg := p.Status.Conditions[0].Message
	if want := "0/1 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }."; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	// A worker arriving gets the pod.
	addNode(t, m, "worker-10-0-0-6", "10.0.0.6", false)
	if p := podsOf(t, m, "default", "web-")[0]; p.Spec.NodeName != "worker-10-0-0-6" {
		t.Errorf("pod on %q after a worker joined", p.Spec.NodeName)
	}
}

func TestNotReadyNodeTaintedAndDaemonSet(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	addNode(t, m, "master-10-0-0-5", "10.0.0.5", true)
	addNode(t, m, "worker-10-0-0-6", "10.0.0.6", false)
	// The worker turns NotReady: tainted not-ready, ordinary pods avoid it.
	o, _ := m.Get(ctx, KindNode, "", "worker-10-0-0-6")
	n := o.(*corev1.Node)
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := m.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	o, _ = m.Get(ctx, KindNode, "", "worker-10-0-0-6")
	if taints := o.(*corev1.Node).Spec.Taints; len(taints) != 1 || taints[0].Key != "node.kubernetes.io/not-ready" {
		t.Errorf("taints %v", taints)
	}
	if _, err := m.Create(ctx, deployment("web", 1)); err != nil {
		t.Fatal(err)
	}
	if p := podsOf(t, m, "default", "web-")[0]; p.Spec.NodeName != "" {
		t.Errorf("pod scheduled on a not-ready node")
	}
	// A CNI-like DaemonSet tolerating NoSchedule runs on every node.
	if ok, _ := PodNetworkReady(ctx, m, "worker-10-0-0-6"); ok {
		t.Error("pod network ready without a CNI")
	}
	ds := cniDaemonSet()
	if _, err := m.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	pods := podsOf(t, m, "kube-system", "kube-flannel-ds-")
	if len(pods) != 2 {
		t.Fatalf("%d daemon pods, want 2", len(pods))
	}
	for _, node := range []string{"master-10-0-0-5", "worker-10-0-0-6"} {
		if ok, err := PodNetworkReady(ctx, m, node); !ok || err != nil {
			t.Errorf("pod network on %s: %v %v", node, ok, err)
		}
	}
	// The node turns Ready: the taint goes and the pending pod lands.
	o, _ = m.Get(ctx, KindNode, "", "worker-10-0-0-6")
	n = o.(*corev1.Node)
	n.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := m.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if p := podsOf(t, m, "default", "web-")[0]; p.Spec.NodeName != "worker-10-0-0-6" {
		t.Errorf("pod on %q after the node became ready", p.Spec.NodeName)
	}
	// Deleting the node deletes its pods (pod GC), daemon pods included.
	if err := m.Delete(ctx, KindNode, "", "worker-10-0-0-6"); err != nil {
		t.Fatal(err)
	}
	if pods := podsOf(t, m, "kube-system", "kube-flannel-ds-"); len(pods) != 1 || pods[0].Spec.NodeName != "master-10-0-0-5" {
		t.Errorf("daemon pods after node deletion: %d", len(pods))
	}
	if p := podsOf(t, m, "default", "web-")[0]; p.Spec.NodeName != "" {
		t.Errorf("replacement pod on %q", p.Spec.NodeName)
	}
}

func cniDaemonSet() *appsv1.DaemonSet {
	l := map[string]string{"app": "flannel"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-flannel-ds", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{
					HostNetwork: true,
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers:  []corev1.Container{{Name: "kube-flannel", Image: "ghcr.io/flannel-io/flannel:v0.26.1"}},
					Volumes: []corev1.Volume{{Name: "cni", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: "/etc/cni/net.d"}}}},
				},
			},
		},
	}
}

func TestEvictionAndPDB(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	addNode(t, m, "worker-10-0-0-6", "10.0.0.6", false)
	addNode(t, m, "worker-10-0-0-7", "10.0.0.7", false)
	if _, err := m.Create(ctx, deployment("web", 2)); err != nil {
		t.Fatal(err)
	}
	minAvail := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvail, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	if _, err := m.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	o, _ := m.Get(ctx, KindPodDisruptionBudget, "default", "web")
	if st := o.(*policyv1.PodDisruptionBudget).Status; st.DisruptionsAllowed != 0 || st.CurrentHealthy != 2 || st.DesiredHealthy != 2 {
		t.Errorf("pdb status %+v", st)
	}
	victim := podsOf(t, m, "default", "web-")[0]
	err := m.Evict(ctx, "default", victim.Name)
	if !apierrors.IsTooManyRequests(err) || err.Error() != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Fatalf("evict under a PDB: %v", err)
	}
	causes := err.(apierrors.APIStatus).Status().Details.Causes
	if len(causes) != 1 || causes[0].Message != "The disruption budget web needs 2 healthy pods and has 2 currently" {
		t.Errorf("causes %+v", causes)
	}
	// maxUnavailable 1 allows one eviction; the replacement is scheduled.
	o, _ = m.Get(ctx, KindPodDisruptionBudget, "default", "web")
	p := o.(*policyv1.PodDisruptionBudget)
	one := intstr.FromInt32(1)
	p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, &one
	if _, err := m.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Cordon the victim's node: the replacement goes to the other one.
	o, _ = m.Get(ctx, KindNode, "", victim.Spec.NodeName)
	n := o.(*corev1.Node)
	n.Spec.Unschedulable = true
	if _, err := m.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := m.Evict(ctx, "default", victim.Name); err != nil {
		t.Fatalf("evict with maxUnavailable 1: %v", err)
	}
	pods := podsOf(t, m, "default", "web-")
	if len(pods) != 2 {
		t.Fatalf("%d pods after eviction", len(pods))
	}
	for _, q := range pods {
		if q.Name == victim.Name || q.Spec.NodeName == victim.Spec.NodeName {
			t.Errorf("pod %s on %s after evicting %s from a cordoned node", q.Name, q.Spec.NodeName, victim.Name)
		}
	}
}

func TestServiceAccountTokenAndRBAC(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "mgmtkit-vim", Namespace: "kube-system"}}
	if _, err := m.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "mgmtkit-vim-token", Namespace: "kube-system",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "mgmtkit-vim"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if _, err := m.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	o, _ := m.Get(ctx, KindSecret, "kube-system", "mgmtkit-vim-token")
	s := o.(*corev1.Secret)
	token := string(s.Data["token"])
	if strings.Count(token, ".") != 2 || string(s.Data["namespace"]) != "kube-system" || !strings.Contains(string(s.Data["ca.crt"]), "BEGIN CERTIFICATE") {
		t.Fatalf("token secret data %q", s.Data)
	}
	user, groups, err := m.Authenticate(ctx, token)
	if err != nil || user != "system:serviceaccount:kube-system:mgmtkit-vim" || len(groups) != 3 {
		t.Fatalf("authenticate: %q %v %v", user, groups, err)
	}
	if ok, _ := m.Authorize(ctx, user, groups, "list", "", "nodes", ""); ok {
		t.Error("authorized without a binding")
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mgmtkit-vim"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "mgmtkit-vim", Namespace: "kube-system"}},
	}
	if _, err := m.Create(ctx, crb); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.Authorize(ctx, user, groups, "delete", "apps", "deployments", "default"); !ok {
		t.Error("cluster-admin binding does not authorize")
	}
	// A narrower role: only get pods in default.
	if _, err := m.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.Authorize(ctx, "alice", nil, "get", "", "pods", "default"); !ok {
		t.Error("role binding does not authorize")
	}
	if ok, _ := m.Authorize(ctx, "alice", nil, "get", "", "pods", "kube-system"); ok {
		t.Error("role binding authorizes in another namespace")
	}
	// Deleting the Secret revokes the token.
	if err := m.Delete(ctx, KindSecret, "kube-system", "mgmtkit-vim-token"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Authenticate(ctx, token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token after secret deletion: %v", err)
	}
	// A token Secret for a missing service account is deleted.
	sec2 := sec.DeepCopy()
	sec2.Annotations[corev1.ServiceAccountNameKey] = "ghost"
	if _, err := m.Create(ctx, sec2); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, KindSecret, "kube-system", sec2.Name); !apierrors.IsNotFound(err) {
		t.Errorf("token secret of a missing service account: %v", err)
	}
	// Deleting the service account deletes its tokens.
	if _, err := m.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	o, _ = m.Get(ctx, KindSecret, "kube-system", sec.Name)
	token = string(o.(*corev1.Secret).Data["token"])
	if err := m.Delete(ctx, KindServiceAccount, "kube-system", "mgmtkit-vim"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Authenticate(ctx, token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token after SA deletion: %v", err)
	}
}

func TestBootstrapToken(t *testing.T) {
	now := new(time.Time)
	*now = time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	m := NewMemoryAPI(MemoryOptions{Now: func() time.Time { return *now }})
	ctx := context.Background()
	mk := func(id, exp string) {
		t.Helper()
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
			Type:       corev1.SecretTypeBootstrapToken,
			StringData: nil,
			Data: map[string][]byte{
				"token-id": []byte(id), "token-secret": []byte("0123456789abcdef"), "expiration": []byte(exp),
				"usage-bootstrap-authentication": []byte("true"), "usage-bootstrap-signing": []byte("true"),
				"auth-extra-groups": []byte("system:bootstrappers:kubeadm:default-node-token"),
			},
		}
		if _, err := m.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	mk("abcdef", "2026-11-23T17:00:00Z")
	mk("zzzzzz", "2026-11-23T16:00:01Z")
	user, groups, err := m.Authenticate(ctx, "abcdef.0123456789abcdef")
	if err != nil || user != "system:bootstrap:abcdef" || strings.Join(groups, ",") != "system:bootstrappers,system:bootstrappers:kubeadm:default-node-token,system:authenticated" {
		t.Errorf("bootstrap token: %q %v %v", user, groups, err)
	}
	if _, _, err := m.Authenticate(ctx, "abcdef.0123456789abcdeX"); !apierrors.IsUnauthorized(err) {
		t.Errorf("wrong secret: %v", err)
	}
	if _, _, err := m.Authenticate(ctx, "zzzzzz.0123456789abcdef"); err != nil {
		t.Errorf("token expiring in a second: %v", err)
	}
	// Time passes: the token no longer authenticates, and the token
	// cleaner deletes it (and what it owns) on the next write.
	*now = now.Add(2 * time.Second)
	if _, _, err := m.Authenticate(ctx, "zzzzzz.0123456789abcdef"); !apierrors.IsUnauthorized(err) {
		t.Errorf("expired token: %v", err)
	}
	tok, _ := m.Get(ctx, KindSecret, "kube-system", "bootstrap-token-zzzzzz")
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: tok.GetName(), UID: tok.GetUID()}
	if _, err := m.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-certs", Namespace: "kube-system", OwnerReferences: []metav1.OwnerReference{ref}}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"bootstrap-token-zzzzzz", "kubeadm-certs"} {
		if _, err := m.Get(ctx, KindSecret, "kube-system", n); !apierrors.IsNotFound(err) {
			t.Errorf("%s after expiry: %v", n, err)
		}
	}
	if _, err := m.Get(ctx, KindSecret, "kube-system", "bootstrap-token-abcdef"); err != nil {
		t.Errorf("unexpired token: %v", err)
	}
}

func TestServiceAccountAdmissionAndNamespaceControllers(t *testing.T) {
	m := newTestAPI(t)
	ctx := context.Background()
	addNode(t, m, "worker-10-0-0-6", "10.0.0.6", false)
	if _, err := m.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	// Every namespace has its default service account and the CA.
	for _, ns := range []string{"default", "kube-system", "app"} {
		if _, err := m.Get(ctx, KindServiceAccount, ns, "default"); err != nil {
			t.Errorf("default service account in %s: %v", ns, err)
		}
		o, err := m.Get(ctx, KindConfigMap, ns, "kube-root-ca.crt")
		if err != nil || !strings.Contains(o.(*corev1.ConfigMap).Data["ca.crt"], "BEGIN CERTIFICATE") {
			t.Errorf("kube-root-ca.crt in %s: %v", ns, err)
		}
	}
	// A pod naming a missing service account is refused; a Deployment's
	// ReplicaSet reports it and creates the pods once it exists.
	_, err := m.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "app"},
		Spec: corev1.PodSpec{ServiceAccountName: "ghost", Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
	if !apierrors.IsForbidden(err) || err.Error() != `pods "p" is forbidden: error looking up service account app/ghost: serviceaccount "ghost" not found` {
		t.Errorf("pod with a missing service account: %v", err)
	}
	d := deployment("web", 2)
	d.Namespace = "app"
	d.Spec.Template.Spec.ServiceAccountName = "web"
	if _, err := m.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if n := len(podsOf(t, m, "app", "web-")); n != 0 {
		t.Fatalf("%d pods without their service account", n)
	}
	o, _ := m.Get(ctx, KindDeployment, "app", "web")
	var failure string
	for _, c := range o.(*appsv1.Deployment).Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure {
			failure = c.Message
		}
	}
	if !strings.Contains(failure, `serviceaccount "web" not found`) {
		t.Errorf("deployment conditions %+v", o.(*appsv1.Deployment).Status.Conditions)
	}
	if _, err := m.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"}}); err != nil {
		t.Fatal(err)
	}
	if n := len(podsOf(t, m, "app", "web-")); n != 2 {
		t.Errorf("%d pods once the service account exists", n)
	}
}

func TestNodeIPAM(t *testing.T) {
	m := NewMemoryAPI(MemoryOptions{ClusterCIDR: netip.MustParsePrefix("10.244.0.0/23"), NodeCIDRMaskSize: 24})
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := m.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"a": "10.244.0.0/24", "b": "10.244.1.0/24", "c": ""}
	for n, cidr := range want {
		o, _ := m.Get(ctx, KindNode, "", n)
		if got := o.(*corev1.Node).Spec.PodCIDR; got != cidr {
			t.Errorf("node %s podCIDR %q, want %q", n, got, cidr)
		}
	}
	// A deleted node's subnet is reused.
	if err := m.Delete(ctx, KindNode, "", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "d"}}); err != nil {
		t.Fatal(err)
	}
	for n, cidr := range map[string]string{"c": "10.244.0.0/24", "d": ""} {
		o, _ := m.Get(ctx, KindNode, "", n)
		if got := o.(*corev1.Node).Spec.PodCIDR; got != cidr {
			t.Errorf("node %s podCIDR %q, want %q", n, got, cidr)
		}
	}
	// IPv6.
	m6 := NewMemoryAPI(MemoryOptions{ClusterCIDR: netip.MustParsePrefix("fd00:10:244::/56")})
	for _, n := range []string{"a", "b"} {
		if _, err := m6.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	o, _ := m6.Get(ctx, KindNode, "", "b")
	if got := o.(*corev1.Node).Spec.PodCIDR; got != "fd00:10:244:1::/64" {
		t.Errorf("IPv6 podCIDR %q", got)
	}
}

func TestFlannelNeedsPodCIDR(t *testing.T) {
	m := NewMemoryAPI(MemoryOptions{})
	ctx := context.Background()
	if _, err := m.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	ds := cniDaemonSet()
	ds.Spec.Template.Spec.Containers[0].Args = []string{"--ip-masq", "--kube-subnet-mgr"}
	if _, err := m.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if ok, err := PodNetworkReady(ctx, m, "a"); ok || err != nil {
		t.Errorf("flannel without a podCIDR: %v %v", ok, err)
	}
	o, _ := m.Get(ctx, KindNode, "", "a")
	n := o.(*corev1.Node)
	n.Spec.PodCIDR = "10.244.0.0/24"
	if _, err := m.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if ok, err := PodNetworkReady(ctx, m, "a"); !ok || err != nil {
		t.Errorf("flannel with a podCIDR: %v %v", ok, err)
	}
}

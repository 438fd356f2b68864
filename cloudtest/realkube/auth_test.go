package realkube_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mgmtkit/mgmtkit/cloudtest/realkube"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// tokenClient is a client of cp's API server with a bearer token only.
func tokenClient(t *testing.T, cp *realkube.ControlPlane, token string) kubernetes.Interface {
	t.Helper()
	admin := cp.RESTConfig()
	c, err := kubernetes.NewForConfig(&rest.Config{
		Host:            admin.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, ServerName: cp.ServerName()},
		WarningHandler:  rest.NoWarnings{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tamper changes one character in the middle of a JWT's signature.
func tamper(token string) string {
	i := strings.LastIndexByte(token, '.') + (len(token)-strings.LastIndexByte(token, '.'))/2
	b := []byte(token)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestServiceAccountTokenRBAC: the token controller fills a service
// account token Secret; the token authenticates as the service account,
// which RBAC lets list nodes but not secrets; a tampered token is
// Unauthorized.
func TestServiceAccountTokenRBAC(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "auth-cp")
	api := cp.API()

	for _, o := range []kube.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot"}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "robot"}},
			Type:       corev1.SecretTypeServiceAccountToken,
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "robot-reads-nodes"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "node-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: "robot"}},
		},
	} {
		if _, err := api.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	createNode(t, ctx, api, "worker-1", "192.168.0.41", corev1.ConditionTrue)

	var token string
	var secret *corev1.Secret
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kube.KindSecret, "team", "robot-token")
		if err != nil {
			return false, err
		}
		secret = o.(*corev1.Secret)
		token = string(secret.Data[corev1.ServiceAccountTokenKey])
		return token != "", nil
	}, func() string { return "the token controller did not fill the secret" })
	if string(secret.Data[corev1.ServiceAccountRootCAKey]) != string(testCA(t, cp)) {
		t.Errorf("secret ca.crt is not the cluster CA")
	}
	if string(secret.Data[corev1.ServiceAccountNamespaceKey]) != "team" {
		t.Errorf("secret namespace = %q", secret.Data[corev1.ServiceAccountNamespaceKey])
	}

	robot := tokenClient(t, cp, token)
	var listErr error
	eventually(t, ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		nodes, err := robot.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		listErr = err
		return err == nil && len(nodes.Items) == 1, nil
	}, func() string { return "the service account cannot list nodes: " + errString(listErr) })
	if _, err := robot.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets with the token: %v, want 403 Forbidden", err)
	}
	if _, err := tokenClient(t, cp, tamper(token)).CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("listing nodes with a tampered token: %v, want 401 Unauthorized", err)
	}

	user, groups, err := api.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if user != "system:serviceaccount:team:robot" {
		t.Errorf("Authenticate = %q, want system:serviceaccount:team:robot", user)
	}
	for _, g := range []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"} {
		if !slices.Contains(groups, g) {
			t.Errorf("groups %v lack %s", groups, g)
		}
	}
	if _, _, err := api.Authenticate(ctx, tamper(token)); !apierrors.IsUnauthorized(err) {
		t.Errorf("Authenticate(tampered) = %v, want Unauthorized", err)
	}
	for _, tc := range []struct {
		verb, resource, namespace string
		want                      bool
	}{
		{"list", "nodes", "", true},
		{"get", "nodes", "", true},
		{"delete", "nodes", "", false},
		{"list", "secrets", "team", false},
	} {
		got, err := api.Authorize(ctx, user, groups, tc.verb, "", tc.resource, tc.namespace)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Authorize(%s %s in %q) = %v, want %v", tc.verb, tc.resource, tc.namespace, got, tc.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// testCA is the cluster CA certificate cp trusts.
func testCA(t *testing.T, cp *realkube.ControlPlane) []byte {
	t.Helper()
	return cp.RESTConfig().CAData
}

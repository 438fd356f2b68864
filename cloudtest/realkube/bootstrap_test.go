package realkube_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

// TestBootstrapToken: kube-controller-manager's bootstrapsigner signs
// cluster-info with a bootstrap token, which authenticates as
// system:bootstrap:<id>; a token the server does not hold does not.
func TestBootstrapToken(t *testing.T) {
	t.Parallel()
	cp, ctx := start(t, "boot-cp")
	api := cp.API()
	if !cp.RunsBootstrapControllers() {
		t.Fatal("RunsBootstrapControllers = false")
	}

	// As kubeadm init writes them (cmd/kubeadm/app/phases/bootstraptoken).
	if _, err := api.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id":                       "abcdef",
			"token-secret":                   "0123456789abcdef",
			"usage-bootstrap-signing":        "true",
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              "system:bootstrappers:kubeadm:default-node-token",
			"expiration":                     time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: "https://192.168.0.10:6443", CertificateAuthorityData: testCA(t, cp)}
	kubeconfig, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: "cluster-info"},
		Data:       map[string]string{"kubeconfig": string(kubeconfig)},
	}); err != nil {
		t.Fatal(err)
	}

	var data map[string]string
	eventually(t, ctx, time.Minute, func(ctx context.Context) (bool, error) {
		o, err := api.Get(ctx, kube.KindConfigMap, "kube-public", "cluster-info")
		if err != nil {
			return false, err
		}
		data = o.(*corev1.ConfigMap).Data
		return data["jws-kubeconfig-abcdef"] != "", nil
	}, func() string { return "bootstrapsigner did not sign cluster-info" })
	if data["kubeconfig"] != string(kubeconfig) {
		t.Error("cluster-info kubeconfig changed")
	}

	user, groups, err := api.Authenticate(ctx, "abcdef.0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if user != "system:bootstrap:abcdef" {
		t.Errorf("Authenticate = %q, want system:bootstrap:abcdef", user)
	}
	for _, g := range []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"} {
		if !slices.Contains(groups, g) {
			t.Errorf("groups %v lack %s", groups, g)
		}
	}
	for _, token := range []string{"zzzzzz.0123456789abcdef", "abcdef.0123456789abcdee"} {
		if _, _, err := api.Authenticate(ctx, token); !apierrors.IsUnauthorized(err) {
			t.Errorf("Authenticate(%s) = %v, want Unauthorized", token, err)
		}
	}
}

package kubeapi

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// The defaults of [VIMOptions].
const (
	// DefaultVIMServiceAccount is the service account whose token the VIM
	// connection carries.
	DefaultVIMServiceAccount = "mgmtkit-vim"
	// DefaultVIMNamespace is its namespace.
	DefaultVIMNamespace = "kube-system"
	// VimTypeKubernetes is the vimType of a Kubernetes VIM (Tacker's v1
	// API: "kubernetes").
	VimTypeKubernetes = "kubernetes"
	// vimTokenTimeout bounds the wait for the token controller to fill
	// the token Secret in.
	vimTokenTimeout = 2 * time.Minute
)

// VIMOptions says which VIM credentials [CreateVIMCredentials] makes
// and [DeleteVIMCredentials] removes.
type VIMOptions struct {
	// Name is the VIM's name (vim_name): the ID of the returned
	// VimConnectionInfo.
	Name string
	// Endpoint is the URL the VNFM reaches the API server at,
	// "https://host:port": the VIP (or the single master) at the
	// cluster's endpoint, or cluster_fip_name's floating IP.
	Endpoint string
	// ServiceAccount and Namespace name the service account;
	// [DefaultVIMServiceAccount] and [DefaultVIMNamespace] when empty.
	// Its ClusterRoleBinding is named after it, and its token Secret is
	// "<ServiceAccount>-token".
	ServiceAccount, Namespace string
}

// withDefaults fills in the defaults and checks the options.
func (o VIMOptions) withDefaults() (VIMOptions, error) {
	if o.ServiceAccount == "" {
		o.ServiceAccount = DefaultVIMServiceAccount
	}
	if o.Namespace == "" {
		o.Namespace = DefaultVIMNamespace
	}
	var p optProblems
	if msg := ObjectNameProblem(o.ServiceAccount); msg != "" {
		p.addf("VIMOptions.ServiceAccount", "%s", msg)
	}
	if msg := namespaceMsg(o.Namespace); msg != "" {
		p.addf("VIMOptions.Namespace", "must be a namespace name (RFC 1123 label), got %q", clip(o.Namespace))
	}
	return o, p.err()
}

// checkEndpoint checks that the options' Endpoint is an https URL of a
// host and port, and nothing else.
func (o VIMOptions) checkEndpoint() error {
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return optProblem("VIMOptions.Endpoint", "must be https://host:port, got %q", clip(o.Endpoint))
	}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
		return optProblem("VIMOptions.Endpoint", "must name the port (https://host:port), got %q", clip(o.Endpoint))
	}
	return nil
}

// tokenSecret is the name of the service account's token Secret.
func (o VIMOptions) tokenSecret() string { return o.ServiceAccount + "-token" }

// vimManifest renders the service account, its cluster-admin binding and
// its token Secret as YAML documents. The Secret holds no data: the
// token controller fills it in (a Secret of type
// kubernetes.io/service-account-token annotated with the account's name:
// pkg/controller/serviceaccount/tokens_controller.go).
func vimManifest(o VIMOptions) ([]byte, error) {
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: o.ServiceAccount, Namespace: o.Namespace},
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: o.ServiceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: o.ServiceAccount, Namespace: o.Namespace}},
	}
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        o.tokenSecret(),
			Namespace:   o.Namespace,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: o.ServiceAccount},
		},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	var b bytes.Buffer
	for i, obj := range []any{sa, binding, secret} {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// CreateVIMCredentials makes the credentials the VNFM uses to deploy
// CNFs on the cluster, and returns them as the Kubernetes
// VimConnectionInfo to persist: a service account bound to
// cluster-admin and a long-lived token Secret for it (applied with
// [Kubectl.Apply], so a second run changes nothing), whose token the
// token controller fills in; the step waits for it (at most two
// minutes).
//
// The token does not expire: it is revoked when the Secret is deleted,
// which [DeleteVIMCredentials] does at terminate. (Since Kubernetes 1.24
// no such Secret is made unless asked for, as here; `kubectl create
// token` would make a token that expires instead.)
//
// The VimConnectionInfo has ID o.Name, VimType "kubernetes",
// InterfaceInfo {"endpoint": o.Endpoint, "ssl_ca_cert": the cluster CA
// in PEM, from the Secret's ca.crt} and AccessInfo {"bearer_token": the
// token}: the CA always comes along, also for a floating IP (where the
// reference dropped it). The token is never in a command line, a log,
// an error or the result's detail.
func CreateVIMCredentials(ctx context.Context, k Kubectl, o VIMOptions) (lcm.VimConnectionInfo, lcm.Result, error) {
	o, err := o.withDefaults()
	if err == nil {
		err = o.checkEndpoint()
	}
	if err == nil && strings.TrimSpace(o.Name) == "" {
		err = optProblem("VIMOptions.Name", "must not be empty: it is the VIM connection's ID")
	}
	if err != nil {
		return lcm.VimConnectionInfo{}, lcm.Unchanged, err
	}
	manifest, err := vimManifest(o)
	if err != nil {
		return lcm.VimConnectionInfo{}, lcm.Unchanged, err
	}
	res, err := k.Apply(ctx, manifest)
	if err != nil {
		return lcm.VimConnectionInfo{}, res, fmt.Errorf("VIM credentials: %w", err)
	}
	var token remote.Secret
	var caPEM string
	what := fmt.Sprintf("the token of Secret %s/%s", o.Namespace, o.tokenSecret())
	err = system.Wait(ctx, what, vimTokenTimeout, time.Second, func(ctx context.Context) (bool, error) {
		s, err := k.secret(ctx, o.Namespace, o.tokenSecret())
		if err != nil {
			return false, err
		}
		if s == nil {
			return false, fmt.Errorf("the Secret %s/%s does not exist", o.Namespace, o.tokenSecret())
		}
		if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
			return false, fmt.Errorf("the Secret %s/%s has no %s yet", o.Namespace, o.tokenSecret(), corev1.ServiceAccountTokenKey)
		}
		ca := s.Data[corev1.ServiceAccountRootCAKey]
		if block, _ := pem.Decode(ca); block == nil || block.Type != "CERTIFICATE" {
			return false, fmt.Errorf("the Secret %s/%s has no PEM certificate in %s", o.Namespace, o.tokenSecret(), corev1.ServiceAccountRootCAKey)
		} else if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return false, fmt.Errorf("the Secret %s/%s: %s: %w", o.Namespace, o.tokenSecret(), corev1.ServiceAccountRootCAKey, err)
		}
		token = remote.NewSecret(string(s.Data[corev1.ServiceAccountTokenKey]))
		caPEM = string(ca)
		return true, nil
	})
	if err != nil {
		return lcm.VimConnectionInfo{}, res, fmt.Errorf("VIM credentials: %w", err)
	}
	info := lcm.VimConnectionInfo{
		ID:      o.Name,
		VimType: VimTypeKubernetes,
		InterfaceInfo: map[string]any{
			"endpoint":    o.Endpoint,
			"ssl_ca_cert": caPEM,
		},
		AccessInfo: lcm.AccessInfo{"bearer_token": token.Reveal()},
	}
	return info, res, nil
}

// DeleteVIMCredentials removes what [CreateVIMCredentials] made (`kubectl
// delete -f - --ignore-not-found` with the same objects): deleting the
// token Secret revokes the token, though the API server may accept it for
// up to 10 more seconds: it caches successful token authentications that
// long (TokenSuccessCacheTTL in pkg/kubeapiserver/options/
// authentication.go; the real control plane's tests showed it). Nothing
// left to delete is
// [lcm.Unchanged]; the detail lists what kubectl deleted (it prints a
// line per deleted object: staging/src/k8s.io/kubectl/pkg/cmd/delete/delete.go).
func DeleteVIMCredentials(ctx context.Context, k Kubectl, o VIMOptions) (lcm.Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return lcm.Unchanged, err
	}
	manifest, err := vimManifest(o)
	if err != nil {
		return lcm.Unchanged, err
	}
	c := k.command("delete", "-f", "-", "--ignore-not-found")
	c.Stdin = bytes.NewReader(manifest)
	c.Idempotent = true
	out, err := k.run(ctx, c)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("deleting the VIM credentials: %w", err)
	}
	var deleted []string
	for line := range strings.Lines(string(out.Stdout)) {
		if line = strings.TrimSpace(line); line != "" {
			deleted = append(deleted, line)
		}
	}
	if len(deleted) == 0 {
		return lcm.Unchanged, nil
	}
	return lcm.Changed("kubectl delete: " + strings.Join(deleted, ", ")), nil
}

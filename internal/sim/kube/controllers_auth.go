package kube

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Groups the authenticators give (apiserver/pkg/authentication/user,
// pkg/serviceaccount/util.go, pkg/apis/bootstrap constants).
const (
	groupAuthenticated   = "system:authenticated"
	groupServiceAccounts = "system:serviceaccounts"
	groupBootstrappers   = "system:bootstrappers"
	groupMasters         = "system:masters"
)

// tokensLocked is pkg/controller/serviceaccount/tokens_controller.go
// syncSecret: a Secret of type kubernetes.io/service-account-token
// annotated kubernetes.io/service-account.name gets, once its service
// account exists, a token, the namespace, the cluster CA (ca.crt) and the
// kubernetes.io/service-account.uid annotation (generateTokenIfNeeded); a
// token Secret whose service account does not exist (or has another uid)
// is deleted (deleteToken) — which is also what happens to the tokens of
// a deleted service account.
func (m *MemoryAPI) tokensLocked() {
	for _, o := range m.listLocked(KindSecret, "") {
		s := o.(*corev1.Secret)
		if s.Type != corev1.SecretTypeServiceAccountToken {
			continue
		}
		saName := s.Annotations[corev1.ServiceAccountNameKey]
		sao, ok := m.objs[KindServiceAccount][key(s.Namespace, saName)]
		if !ok || (s.Annotations[corev1.ServiceAccountUIDKey] != "" && s.Annotations[corev1.ServiceAccountUIDKey] != string(sao.GetUID())) {
			_ = m.deleteLocked(KindSecret, s.Namespace, s.Name)
			continue
		}
		needCA := len(m.caCert) > 0 && string(s.Data[corev1.ServiceAccountRootCAKey]) != string(m.caCert)
		needNS := len(s.Data[corev1.ServiceAccountNamespaceKey]) == 0
		needToken := len(s.Data[corev1.ServiceAccountTokenKey]) == 0
		if !needCA && !needNS && !needToken && s.Annotations[corev1.ServiceAccountUIDKey] != "" {
			continue
		}
		s = s.DeepCopy()
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		if needCA {
			s.Data[corev1.ServiceAccountRootCAKey] = append([]byte(nil), m.caCert...)
		}
		if needNS {
			s.Data[corev1.ServiceAccountNamespaceKey] = []byte(s.Namespace)
		}
		if needToken {
			s.Data[corev1.ServiceAccountTokenKey] = []byte(m.legacyTokenLocked(s, sao.(*corev1.ServiceAccount)))
		}
		s.Annotations[corev1.ServiceAccountUIDKey] = string(sao.GetUID())
		m.put(s)
	}
}

// legacyTokenLocked returns a JWT shaped as pkg/serviceaccount/legacy.go
// LegacyClaims signs them (issuer kubernetes/serviceaccount), with a
// random signature: the simulation checks tokens by lookup, not by key.
func (m *MemoryAPI) legacyTokenLocked(s *corev1.Secret, sa *corev1.ServiceAccount) string {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": m.randString(43)})
	claims, _ := json.Marshal(map[string]string{
		"iss":                                    "kubernetes/serviceaccount",
		"kubernetes.io/serviceaccount/namespace": s.Namespace,
		"kubernetes.io/serviceaccount/secret.name":          s.Name,
		"kubernetes.io/serviceaccount/service-account.name": sa.Name,
		"kubernetes.io/serviceaccount/service-account.uid":  string(sa.UID),
		"sub": "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
	})
	sig := make([]byte, 256)
	for i := range sig {
		sig[i] = byte(m.rng.Uint32())
	}
	return enc.EncodeToString(header) + "." + enc.EncodeToString(claims) + "." + enc.EncodeToString(sig)
}

// Authenticate implements [API] with the two token authenticators the
// simulation needs:
//
//   - legacy service account tokens (pkg/serviceaccount/legacy.go
//     validator.Validate): valid while the Secret holding the token and its
//     service account (same uid) exist; user
//     system:serviceaccount:NS:NAME, groups system:serviceaccounts,
//     system:serviceaccounts:NS;
//   - bootstrap tokens (plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go):
//     "<id>.<secret>" matching the Secret bootstrap-token-<id> of type
//     bootstrap.kubernetes.io/token in kube-system, with
//     usage-bootstrap-authentication "true" and an expiration not passed;
//     user system:bootstrap:<id>, groups system:bootstrappers and the
//     Secret's auth-extra-groups.
//
// Both add system:authenticated. Anything else is Unauthorized.
func (m *MemoryAPI) Authenticate(_ context.Context, bearerToken string) (string, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	unauthorized := apierrors.NewUnauthorized("Unauthorized")
	if bearerToken == "" {
		return "", nil, unauthorized
	}
	if id, secret, ok := strings.Cut(bearerToken, "."); ok && bootstrapTokenShape(id, secret) {
		return m.bootstrapUserLocked(id, secret)
	}
	for _, o := range m.listLocked(KindSecret, "") {
		s := o.(*corev1.Secret)
		if s.Type != corev1.SecretTypeServiceAccountToken || len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
			continue
		}
		if subtle.ConstantTimeCompare(s.Data[corev1.ServiceAccountTokenKey], []byte(bearerToken)) != 1 {
			continue
		}
		name := s.Annotations[corev1.ServiceAccountNameKey]
		sa, ok := m.objs[KindServiceAccount][key(s.Namespace, name)]
		if !ok || string(sa.GetUID()) != s.Annotations[corev1.ServiceAccountUIDKey] {
			return "", nil, unauthorized
		}
		return "system:serviceaccount:" + s.Namespace + ":" + name,
			[]string{groupServiceAccounts, groupServiceAccounts + ":" + s.Namespace, groupAuthenticated}, nil
	}
	return "", nil, unauthorized
}

// bootstrapTokenShape is the token format of
// k8s.io/cluster-bootstrap/token/api: [a-z0-9]{6}.[a-z0-9]{16}.
func bootstrapTokenShape(id, secret string) bool {
	ok := func(s string, n int) bool {
		if len(s) != n {
			return false
		}
		for _, c := range s {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
				return false
			}
		}
		return true
	}
	return ok(id, 6) && ok(secret, 16)
}

func (m *MemoryAPI) bootstrapUserLocked(id, secret string) (string, []string, error) {
	unauthorized := apierrors.NewUnauthorized("Unauthorized")
	o, ok := m.objs[KindSecret][key("kube-system", "bootstrap-token-"+id)]
	if !ok {
		return "", nil, unauthorized
	}
	s := o.(*corev1.Secret)
	if s.Type != corev1.SecretTypeBootstrapToken || s.DeletionTimestamp != nil ||
		string(s.Data["token-id"]) != id ||
		subtle.ConstantTimeCompare(s.Data["token-secret"], []byte(secret)) != 1 ||
		string(s.Data["usage-bootstrap-authentication"]) != "true" {
		return "", nil, unauthorized
	}
	if exp := string(s.Data["expiration"]); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil || !m.now().Before(t) {
			return "", nil, unauthorized
		}
	}
	groups := []string{groupBootstrappers}
	for _, g := range strings.Split(string(s.Data["auth-extra-groups"]), ",") {
		if g = strings.TrimSpace(g); g != "" && g != groupBootstrappers {
			groups = append(groups, g)
		}
	}
	return "system:bootstrap:" + id, append(groups, groupAuthenticated), nil
}

// Authorize implements [API] as the RBAC authorizer does
// (plugin/pkg/auth/authorizer/rbac/rbac.go, rule matching in
// pkg/apis/rbac/v1/evaluation_helpers.go): a user is allowed when a
// ClusterRoleBinding, or a RoleBinding of the namespace, names the user,
// one of its groups or (for system:serviceaccount:NS:NAME) its service
// account, and the bound role has a rule matching verb, API group and
// resource ("*" matching all). The group system:masters is allowed
// everything, as the API server's privileged-group authorizer allows it
// before RBAC.
func (m *MemoryAPI) Authorize(_ context.Context, user string, groups []string, verb, group, resource, namespace string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range groups {
		if g == groupMasters {
			return true, nil
		}
	}
	allowedBy := func(kind, ns, name string) bool {
		var rules []rbacv1.PolicyRule
		switch kind {
		case "ClusterRole":
			if o, ok := m.objs[KindClusterRole][key("", name)]; ok {
				rules = o.(*rbacv1.ClusterRole).Rules
			}
		case "Role":
			if o, ok := m.objs[KindRole][key(ns, name)]; ok {
				rules = o.(*rbacv1.Role).Rules
			}
		}
		for _, r := range rules {
			if ruleAllows(r, verb, group, resource) {
				return true
			}
		}
		return false
	}
	for _, o := range m.listLocked(KindClusterRoleBinding, "") {
		b := o.(*rbacv1.ClusterRoleBinding)
		if subjectsMatch(b.Subjects, user, groups, "") && allowedBy(b.RoleRef.Kind, "", b.RoleRef.Name) {
			return true, nil
		}
	}
	if namespace != "" {
		for _, o := range m.listLocked(KindRoleBinding, namespace) {
			b := o.(*rbacv1.RoleBinding)
			if subjectsMatch(b.Subjects, user, groups, namespace) && allowedBy(b.RoleRef.Kind, namespace, b.RoleRef.Name) {
				return true, nil
			}
		}
	}
	return false, nil
}

// subjectsMatch is rbac.go appliesToUser.
func subjectsMatch(subjects []rbacv1.Subject, user string, groups []string, bindingNS string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user {
				return true
			}
		case rbacv1.GroupKind:
			for _, g := range groups {
				if g == s.Name {
					return true
				}
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNS
			}
			if ns != "" && user == fmt.Sprintf("system:serviceaccount:%s:%s", ns, s.Name) {
				return true
			}
		}
	}
	return false
}

// ruleAllows is evaluation_helpers.go RuleAllows for resource requests
// (a "resource/subresource" resource is matched whole or by "*/sub").
func ruleAllows(r rbacv1.PolicyRule, verb, group, resource string) bool {
	has := func(list []string, v string) bool {
		for _, x := range list {
			if x == "*" || x == v {
				return true
			}
		}
		return false
	}
	// A rule naming resourceNames does not match a request without a
	// name, and Authorize is not given one.
	if len(r.ResourceNames) > 0 || !has(r.Verbs, verb) || !has(r.APIGroups, group) {
		return false
	}
	if has(r.Resources, resource) {
		return true
	}
	if _, sub, ok := strings.Cut(resource, "/"); ok {
		for _, x := range r.Resources {
			if x == "*/"+sub {
				return true
			}
		}
	}
	return false
}

// tokenCleanerLocked is pkg/controller/bootstrap/tokencleaner.go: a
// bootstrap token Secret whose expiration has passed is deleted (and
// with it, by the garbage collector, what it owns: kubeadm makes the
// kubeadm-certs Secret of `init phase upload-certs` owned by such a token
// so that the certificates go when the token does). The clock is
// [MemoryOptions.Now], read whenever the API is written to.
func (m *MemoryAPI) tokenCleanerLocked() {
	for _, o := range m.listLocked(KindSecret, "kube-system") {
		s := o.(*corev1.Secret)
		if s.Type != corev1.SecretTypeBootstrapToken {
			continue
		}
		exp := string(s.Data["expiration"])
		if exp == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339, exp); err == nil && !m.now().Before(t) {
			_ = m.deleteLocked(KindSecret, s.Namespace, s.Name)
		}
	}
}

package kubeapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

const saToken = "eyJhbGciOiJSUzI1NiJ9.bWdtdGtpdC12aW0.c2lnbmF0dXJl"

// vimCluster answers the kubectl calls of the VIM steps: apply and
// delete of the manifest's objects, and the token controller, which
// fills a service-account-token Secret in after polls polls
// (pkg/controller/serviceaccount/tokens_controller.go: token, ca.crt
// and namespace).
type vimCluster struct {
	t       *testing.T
	ca      []byte
	objects map[string]bool // "kind/namespace/name"
	polls   int
}

func docs(t *testing.T, manifest string) []map[string]any {
	t.Helper()
	var out []map[string]any
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

func key(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return fmt.Sprintf("%s/%s/%s", obj["kind"], ns, name)
}

func (c *vimCluster) script() scripted.Script {
	return func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		switch line := inv.Line(); line {
		case "diff -f -", "apply -f -":
			var out strings.Builder
			differs := false
			for _, obj := range docs(c.t, inv.Stdin) {
				k := key(obj)
				kind := strings.ToLower(obj["kind"].(string))
				name := obj["metadata"].(map[string]any)["name"].(string)
				if c.objects[k] {
					fmt.Fprintf(&out, "%s/%s unchanged\n", kind, name)
					continue
				}
				differs = true
				if line == "apply -f -" {
					c.objects[k] = true
					fmt.Fprintf(&out, "%s/%s created\n", kind, name)
				}
			}
			if line == "diff -f -" {
				if differs {
					return scripted.Reply{Stdout: "diff -u -N ...\n", Code: 1}
				}
				return scripted.OK("")
			}
			return scripted.OK(out.String())
		case "get secret mgmtkit-vim-token --namespace=kube-system -o json":
			if !c.objects["Secret/kube-system/mgmtkit-vim-token"] {
				return scripted.NotFound("secrets", "mgmtkit-vim-token")
			}
			s := corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Name: "mgmtkit-vim-token", Namespace: "kube-system", Annotations: map[string]string{corev1.ServiceAccountNameKey: "mgmtkit-vim"}},
				Type:       corev1.SecretTypeServiceAccountToken,
			}
			if c.polls--; c.polls < 0 {
				s.Data = map[string][]byte{"token": []byte(saToken), "ca.crt": c.ca, "namespace": []byte("kube-system")}
			}
			return scripted.OK(scripted.AsJSON(c.t, s))
		case "delete -f - --ignore-not-found":
			var out strings.Builder
			for _, obj := range docs(c.t, inv.Stdin) {
				if k := key(obj); c.objects[k] {
					delete(c.objects, k)
					fmt.Fprintf(&out, "%s %q deleted\n", strings.ToLower(obj["kind"].(string)), obj["metadata"].(map[string]any)["name"])
				}
			}
			return scripted.OK(out.String())
		}
		return scripted.Reply{Stderr: "unexpected kubectl " + inv.Line(), Code: 2}
	}
}

func TestCreateVIMCredentials(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	ca, _ := scripted.TestCA(t)
	c := &vimCluster{t: t, ca: ca, objects: map[string]bool{}, polls: 1}
	n.Set("kubectl", c.script())
	o := kubeapi.VIMOptions{Name: "kubernetes_vim_1234", Endpoint: "https://10.0.0.100:16443"}

	info, res, err := kubeapi.CreateVIMCredentials(n.Ctx, n.Kubectl(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !strings.Contains(res.Detail, "serviceaccount/mgmtkit-vim created") {
		t.Fatalf("result %v", res)
	}
	if info.ID != "kubernetes_vim_1234" || info.VimType != "kubernetes" ||
		info.InterfaceInfo["endpoint"] != "https://10.0.0.100:16443" || info.InterfaceInfo["ssl_ca_cert"] != string(ca) ||
		info.AccessInfo["bearer_token"] != saToken {
		t.Fatalf("VimConnectionInfo %+v", info)
	}
	// The token reaches the VNFM in the JSON it persists, and nowhere
	// else.
	b, err := json.Marshal(info)
	if err != nil || !bytes.Contains(b, []byte(saToken)) {
		t.Fatalf("persisted JSON lacks the token: %s, %v", b, err)
	}
	n.AssertNoSecret(saToken, res.String(), fmt.Sprintf("%v %+v", info, info))

	// The manifest: a service account, its cluster-admin binding, a
	// token Secret without data, all typed objects.
	applied := n.Invocations("kubectl")[1]
	objs := docs(t, applied.Stdin)
	if len(objs) != 3 {
		t.Fatalf("manifest:\n%s", applied.Stdin)
	}
	var binding rbacv1.ClusterRoleBinding
	var secret corev1.Secret
	for _, obj := range objs {
		b, _ := json.Marshal(obj)
		switch obj["kind"] {
		case "ClusterRoleBinding":
			scripted.Must[struct{}](t)(struct{}{}, json.Unmarshal(b, &binding))
		case "Secret":
			scripted.Must[struct{}](t)(struct{}{}, json.Unmarshal(b, &secret))
		}
	}
	if binding.RoleRef.Name != "cluster-admin" || binding.RoleRef.Kind != "ClusterRole" || len(binding.Subjects) != 1 ||
		binding.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Name: "mgmtkit-vim", Namespace: "kube-system"}) {
		t.Fatalf("binding %+v", binding)
	}
	if secret.Type != corev1.SecretTypeServiceAccountToken || secret.Annotations[corev1.ServiceAccountNameKey] != "mgmtkit-vim" || len(secret.Data) != 0 {
		t.Fatalf("secret %+v", secret)
	}

	// Again: nothing changes, same credentials.
	n.Reset()
	again, res, err := kubeapi.CreateVIMCredentials(n.Ctx, n.Kubectl(), o)
	if err != nil || res.Changed || again.AccessInfo["bearer_token"] != saToken {
		t.Fatalf("second run: %v, %v", res, err)
	}
	if got := n.Lines("kubectl"); !slices.Equal(got, []string{"diff -f -", "get secret mgmtkit-vim-token --namespace=kube-system -o json"}) {
		t.Fatalf("second run: kubectl runs %q", got)
	}

	// Deleted, then nothing to delete.
	res, err = kubeapi.DeleteVIMCredentials(n.Ctx, n.Kubectl(), o)
	if err != nil || !res.Changed || !strings.Contains(res.Detail, `secret "mgmtkit-vim-token" deleted`) || len(c.objects) != 0 {
		t.Fatalf("delete: %v, %v, %v", res, err, c.objects)
	}
	res, err = kubeapi.DeleteVIMCredentials(n.Ctx, n.Kubectl(), o)
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("second delete: %v, %v", res, err)
	}
}

func TestCreateVIMCredentialsBadOptions(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	for field, o := range map[string]kubeapi.VIMOptions{
		"VIMOptions.Endpoint":       {Name: "v", Endpoint: "http://10.0.0.5:6443"},
		"VIMOptions.Name":           {Endpoint: "https://10.0.0.5:6443"},
		"VIMOptions.ServiceAccount": {Name: "v", Endpoint: "https://10.0.0.5:6443", ServiceAccount: "Admin"},
		"VIMOptions.Namespace":      {Name: "v", Endpoint: "https://10.0.0.5:6443", Namespace: "a.b"},
	} {
		_, _, err := kubeapi.CreateVIMCredentials(n.Ctx, n.Kubectl(), o)
		scripted.ParamsError(t, err, field)
	}
	_, _, err := kubeapi.CreateVIMCredentials(n.Ctx, n.Kubectl(), kubeapi.VIMOptions{Name: "v", Endpoint: "https://10.0.0.5"})
	scripted.ParamsError(t, err, "VIMOptions.Endpoint")
	if c := n.Commands(); len(c) != 0 {
		t.Fatalf("commands: %q", c)
	}
}

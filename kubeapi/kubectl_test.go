package kubeapi_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

func TestKubectlGetDecodesTypedObjects(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	nodes := corev1.NodeList{Items: []corev1.Node{*scripted.ReadyNode("master-10-0-0-5", corev1.ConditionTrue, "KubeletReady", "")}}
	pods := corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-1"}, Spec: corev1.PodSpec{NodeName: "worker-10-0-0-12"}}}}
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		switch inv.Line() {
		case "get nodes -o json":
			return scripted.OK(scripted.AsJSON(t, nodes))
		case "get node master-10-0-0-5 -o json":
			return scripted.OK(scripted.AsJSON(t, nodes.Items[0]))
		case "get node worker-10-0-0-99 -o json":
			return scripted.NotFound("nodes", "worker-10-0-0-99")
		case "get pods --all-namespaces --field-selector=spec.nodeName=worker-10-0-0-12 -o json":
			return scripted.OK(scripted.AsJSON(t, pods))
		case "get node broken -o json":
			return scripted.Reply{Stderr: "The connection to the server 10.0.0.5:6443 was refused - did you specify the right host or port?\n", Code: 1}
		}
		return scripted.Reply{Stderr: "unexpected", Code: 2}
	})
	k := n.Kubectl()

	got := scripted.Must[[]corev1.Node](t)(k.Nodes(n.Ctx))
	if len(got) != 1 || got[0].Name != "master-10-0-0-5" {
		t.Fatalf("Nodes = %+v", got)
	}
	one := scripted.Must[*corev1.Node](t)(k.Node(n.Ctx, "master-10-0-0-5"))
	if one == nil || one.Status.Conditions[1].Type != corev1.NodeReady {
		t.Fatalf("Node = %+v", one)
	}
	absent, err := k.Node(n.Ctx, "worker-10-0-0-99")
	if absent != nil || err != nil {
		t.Fatalf("absent node: %v, %v; want nil, nil", absent, err)
	}
	_, err = k.Node(n.Ctx, "broken")
	var ce *remote.CommandError
	if !errors.As(err, &ce) || kubeapi.IsNotFound(err) || !strings.Contains(err.Error(), "was refused") {
		t.Fatalf("an unreachable API server: %v; want a CommandError with kubectl's message, not NotFound", err)
	}
	onWorker := scripted.Must[[]corev1.Pod](t)(k.PodsOn(n.Ctx, "worker-10-0-0-12"))
	if len(onWorker) != 1 || onWorker[0].Name != "coredns-1" {
		t.Fatalf("PodsOn = %+v", onWorker)
	}
	// Every kubectl ran as root with the admin kubeconfig (the fake
	// refuses it without), as an argv.
	for _, c := range n.Server.CallsTo("kubectl") {
		if c.User != "root" {
			t.Errorf("kubectl ran as %s", c.User)
		}
	}
	for _, c := range n.Commands() {
		if !strings.Contains(c, "kubectl --kubeconfig=/etc/kubernetes/admin.conf get") {
			t.Errorf("command %q", c)
		}
	}
	// A name that is no object name never reaches kubectl.
	n.Reset()
	_, err = k.Node(n.Ctx, "--all")
	scripted.ParamsError(t, err, "name")
	_, err = k.PodsOn(n.Ctx, "a b")
	scripted.ParamsError(t, err, "node")
	if len(n.Commands()) != 0 {
		t.Fatalf("commands for bad names: %q", n.Commands())
	}
}

func TestKubectlApplyDiffsFirst(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	manifest := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n")
	exists := false
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		if inv.Stdin != string(manifest) {
			return scripted.Reply{Stderr: "wrong stdin", Code: 3}
		}
		switch inv.Line() {
		case "diff -f -":
			if exists {
				return scripted.OK("")
			}
			return scripted.Reply{Stdout: "diff -u -N /tmp/LIVE/v1.Namespace..demo /tmp/MERGED/v1.Namespace..demo\n+  name: demo\n", Code: 1}
		case "apply -f -":
			exists = true
			return scripted.OK("namespace/demo created\n")
		}
		return scripted.Reply{Code: 2}
	})
	k := n.Kubectl()

	res := scripted.Must[lcm.Result](t)(k.Apply(n.Ctx, manifest))
	if !res.Changed || !strings.Contains(res.Detail, "namespace/demo created") {
		t.Fatalf("first Apply = %v", res)
	}
	if got, want := n.Lines("kubectl"), []string{"diff -f -", "apply -f -"}; !slices.Equal(got, want) {
		t.Fatalf("kubectl runs %q, want %q", got, want)
	}
	n.Reset()
	res = scripted.Must[lcm.Result](t)(k.Apply(n.Ctx, manifest))
	if res != lcm.Unchanged {
		t.Fatalf("second Apply = %v, want unchanged", res)
	}
	if got, want := n.Lines("kubectl"), []string{"diff -f -"}; !slices.Equal(got, want) {
		t.Fatalf("kubectl runs %q, want %q", got, want)
	}

	// diff's exit status above 1 is a failure, not a difference: nothing
	// is applied.
	n.Reset()
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		if inv.Line() == "diff -f -" {
			return scripted.Reply{Stderr: "error: unable to recognize \"STDIN\": no matches for kind \"Foo\" in version \"v9\"\n", Code: 2}
		}
		return scripted.Reply{Code: 99}
	})
	_, err := k.Apply(n.Ctx, manifest)
	if err == nil || !strings.Contains(err.Error(), "no matches for kind") {
		t.Fatalf("diff failing: %v", err)
	}
	if got := n.Lines("kubectl"); !slices.Equal(got, []string{"diff -f -"}) {
		t.Fatalf("kubectl runs %q", got)
	}

	// An empty manifest is refused before anything runs.
	n.Reset()
	_, err = k.Apply(n.Ctx, []byte(" \n"))
	scripted.ParamsError(t, err, "manifest")
	if len(n.Commands()) != 0 {
		t.Fatalf("commands: %q", n.Commands())
	}
}

func TestKubectlApplyDetailSummarisesManyObjects(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		if inv.Line() == "diff -f -" {
			return scripted.Reply{Code: 1}
		}
		var b strings.Builder
		for _, s := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			b.WriteString("configmap/" + s + " created\n")
		}
		b.WriteString("configmap/h unchanged\n")
		return scripted.OK(b.String())
	})
	res := scripted.Must[lcm.Result](t)(n.Kubectl().Apply(n.Ctx, []byte("kind: List\napiVersion: v1\n")))
	if want := "kubectl apply: configmap/a created, configmap/b created, configmap/c created, configmap/d created, configmap/e created and 2 more"; res.Detail != want {
		t.Fatalf("detail %q, want %q", res.Detail, want)
	}
}

package kubeapi_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

func TestKubectlGetDecodesTypedObjects(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	nodes := corev1.NodeList{Items: []corev1.Node{*readyNode("master-10-0-0-5", corev1.ConditionTrue, "KubeletReady", "")}}
	pods := corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-1"}, Spec: corev1.PodSpec{NodeName: "worker-10-0-0-12"}}}}
	n.set(func(inv invocation, _ *sshtest.FS) reply {
		switch inv.line() {
		case "get nodes -o json":
			return ok(asJSON(t, nodes))
		case "get node master-10-0-0-5 -o json":
			return ok(asJSON(t, nodes.Items[0]))
		case "get node worker-10-0-0-99 -o json":
			return notFound("nodes", "worker-10-0-0-99")
		case "get pods --all-namespaces --field-selector=spec.nodeName=worker-10-0-0-12 -o json":
			return ok(asJSON(t, pods))
		case "get node broken -o json":
			return reply{stderr: "The connection to the server 10.0.0.5:6443 was refused - did you specify the right host or port?\n", code: 1}
		}
		return reply{stderr: "unexpected", code: 2}
	})
	k := n.kc()

	got := must[[]corev1.Node](t)(k.Nodes(n.ctx))
	if len(got) != 1 || got[0].Name != "master-10-0-0-5" {
		t.Fatalf("Nodes = %+v", got)
	}
	one := must[*corev1.Node](t)(k.Node(n.ctx, "master-10-0-0-5"))
	if one == nil || one.Status.Conditions[1].Type != corev1.NodeReady {
		t.Fatalf("Node = %+v", one)
	}
	absent, err := k.Node(n.ctx, "worker-10-0-0-99")
	if absent != nil || err != nil {
		t.Fatalf("absent node: %v, %v; want nil, nil", absent, err)
	}
	_, err = k.Node(n.ctx, "broken")
	var ce *remote.CommandError
	if !errors.As(err, &ce) || kubeapi.IsNotFound(err) || !strings.Contains(err.Error(), "was refused") {
		t.Fatalf("an unreachable API server: %v; want a CommandError with kubectl's message, not NotFound", err)
	}
	onWorker := must[[]corev1.Pod](t)(k.PodsOn(n.ctx, "worker-10-0-0-12"))
	if len(onWorker) != 1 || onWorker[0].Name != "coredns-1" {
		t.Fatalf("PodsOn = %+v", onWorker)
	}
	// Every kubectl ran as root with the admin kubeconfig (the fake
	// refuses it without), as an argv.
	for _, c := range n.srv.CallsTo("kubectl") {
		if c.User != "root" {
			t.Errorf("kubectl ran as %s", c.User)
		}
	}
	for _, c := range n.commands() {
		if !strings.Contains(c, "kubectl --kubeconfig=/etc/kubernetes/admin.conf get") {
			t.Errorf("command %q", c)
		}
	}
	// A name that is no object name never reaches kubectl.
	n.reset()
	_, err = k.Node(n.ctx, "--all")
	paramsError(t, err, "name")
	_, err = k.PodsOn(n.ctx, "a b")
	paramsError(t, err, "node")
	if len(n.commands()) != 0 {
		t.Fatalf("commands for bad names: %q", n.commands())
	}
}

func TestKubectlApplyDiffsFirst(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	manifest := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n")
	exists := false
	n.set(func(inv invocation, _ *sshtest.FS) reply {
		if inv.stdin != string(manifest) {
			return reply{stderr: "wrong stdin", code: 3}
		}
		switch inv.line() {
		case "diff -f -":
			if exists {
				return ok("")
			}
			return reply{stdout: "diff -u -N /tmp/LIVE/v1.Namespace..demo /tmp/MERGED/v1.Namespace..demo\n+  name: demo\n", code: 1}
		case "apply -f -":
			exists = true
			return ok("namespace/demo created\n")
		}
		return reply{code: 2}
	})
	k := n.kc()

	res := must[lcm.Result](t)(k.Apply(n.ctx, manifest))
	if !res.Changed || !strings.Contains(res.Detail, "namespace/demo created") {
		t.Fatalf("first Apply = %v", res)
	}
	if got, want := n.lines("kubectl"), []string{"diff -f -", "apply -f -"}; !slices.Equal(got, want) {
		t.Fatalf("kubectl runs %q, want %q", got, want)
	}
	n.reset()
	res = must[lcm.Result](t)(k.Apply(n.ctx, manifest))
	if res != lcm.Unchanged {
		t.Fatalf("second Apply = %v, want unchanged", res)
	}
	if got, want := n.lines("kubectl"), []string{"diff -f -"}; !slices.Equal(got, want) {
		t.Fatalf("kubectl runs %q, want %q", got, want)
	}

	// diff's exit status above 1 is a failure, not a difference: nothing
	// is applied.
	n.reset()
	n.set(func(inv invocation, _ *sshtest.FS) reply {
		if inv.line() == "diff -f -" {
			return reply{stderr: "error: unable to recognize \"STDIN\": no matches for kind \"Foo\" in version \"v9\"\n", code: 2}
		}
		return reply{code: 99}
	})
	_, err := k.Apply(n.ctx, manifest)
	if err == nil || !strings.Contains(err.Error(), "no matches for kind") {
		t.Fatalf("diff failing: %v", err)
	}
	if got := n.lines("kubectl"); !slices.Equal(got, []string{"diff -f -"}) {
		t.Fatalf("kubectl runs %q", got)
	}

	// An empty manifest is refused before anything runs.
	n.reset()
	_, err = k.Apply(n.ctx, []byte(" \n"))
	paramsError(t, err, "manifest")
	if len(n.commands()) != 0 {
		t.Fatalf("commands: %q", n.commands())
	}
}

func TestKubectlApplyDetailSummarisesManyObjects(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	n.set(func(inv invocation, _ *sshtest.FS) reply {
		if inv.line() == "diff -f -" {
			return reply{code: 1}
		}
		var b strings.Builder
		for _, s := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			b.WriteString("configmap/" + s + " created\n")
		}
		b.WriteString("configmap/h unchanged\n")
		return ok(b.String())
	})
	res := must[lcm.Result](t)(n.kc().Apply(n.ctx, []byte("kind: List\napiVersion: v1\n")))
	if want := "kubectl apply: configmap/a created, configmap/b created, configmap/c created, configmap/d created, configmap/e created and 2 more"; res.Detail != want {
		t.Fatalf("detail %q, want %q", res.Detail, want)
	}
}

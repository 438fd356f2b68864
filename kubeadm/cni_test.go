package kubeadm_test

import (
	"slices"
	"testing"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

func TestApplyCNI(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	manifest := []byte(`# Calico (abridged)
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: calico-node
  namespace: kube-system
---
# only a comment
---
{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "calico-node", "namespace": "kube-system"}}
`)
	n.set(func(inv invocation, _ *sshtest.FS) reply {
		if inv.stdin != string(manifest) {
			return reply{code: 3}
		}
		if inv.line() == "diff -f -" {
			return reply{code: 1}
		}
		return ok("serviceaccount/calico-node created\ndaemonset.apps/calico-node created\n")
	}, nil)
	res, err := kubeadm.ApplyCNI(n.ctx, n.kc(), manifest)
	if err != nil || !res.Changed {
		t.Fatalf("ApplyCNI: %v, %v", res, err)
	}
	if got := n.lines("kubectl"); !slices.Equal(got, []string{"diff -f -", "apply -f -"}) {
		t.Fatalf("kubectl runs %q", got)
	}
}

func TestApplyCNIRefusesWhatIsNoManifest(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	for _, bad := range []string{
		"",
		"# nothing\n---\n",
		"apiVersion: v1\nmetadata:\n  name: x\n",
		"kind: ConfigMap\n",
		"apiVersion: v1\nkind: ConfigMap\n---\n- a list\n",
		"apiVersion: v1\nkind: [\n",
		"just text",
	} {
		_, err := kubeadm.ApplyCNI(n.ctx, n.kc(), []byte(bad))
		paramsError(t, err, "manifest")
	}
	if c := n.commands(); len(c) != 0 {
		t.Fatalf("commands: %q", c)
	}
}

package kubeapi_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// metaCluster answers the reads and writes of Label, Annotate and Taint
// for one ConfigMap and one Node, recording what the writes ask.
func metaCluster(t *testing.T) scripted.Script {
	cm := corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "nfs", Labels: map[string]string{"tier": "storage", "old": "x"}, Annotations: map[string]string{"note": "kept"}},
	}
	node := scripted.ReadyNode("worker-10-0-0-12", corev1.ConditionTrue, "", "")
	node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "nfs", Effect: corev1.TaintEffectNoSchedule}, {Key: "gpu", Effect: corev1.TaintEffectNoExecute}}
	return func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		switch line := inv.Line(); {
		case line == "get configmap c --namespace=nfs -o json":
			return scripted.OK(scripted.AsJSON(t, cm))
		case line == "get configmap gone --namespace=nfs -o json":
			return scripted.NotFound("configmaps", "gone")
		case line == "get node worker-10-0-0-12 -o json":
			return scripted.OK(scripted.AsJSON(t, node))
		case strings.HasPrefix(line, "label "), strings.HasPrefix(line, "annotate "), strings.HasPrefix(line, "taint "):
			return scripted.OK("configmap/c labeled\n")
		}
		return scripted.Reply{Stderr: "unexpected kubectl " + inv.Line(), Code: 2}
	}
}

func TestLabelAnnotateTaintChangeOnlyWhatDiffers(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	n.Set("kubectl", metaCluster(t))
	k := n.Kubectl()

	for _, tc := range []struct {
		name  string
		step  func() (lcm.Result, error)
		write string // "" when nothing is to change
	}{
		{"label already set", func() (lcm.Result, error) {
			return k.Label(n.Ctx, "configmap", "nfs", "c", map[string]string{"tier": "storage"}, "absent")
		}, ""},
		{"label changed and removed", func() (lcm.Result, error) {
			return k.Label(n.Ctx, "configmap", "nfs", "c", map[string]string{"tier": "storage", "app": "nfs", "new": ""}, "old", "absent")
		}, "label configmap c --namespace=nfs --overwrite app=nfs new= old-"},
		{"annotation already set", func() (lcm.Result, error) {
			return k.Annotate(n.Ctx, "configmap", "nfs", "c", map[string]string{"note": "kept"})
		}, ""},
		{"annotation with spaces, = and a newline", func() (lcm.Result, error) {
			return k.Annotate(n.Ctx, "configmap", "nfs", "c", map[string]string{"mgmtkit.io/Note": "a = b\nc"}, "note")
		}, "annotate configmap c --namespace=nfs --overwrite mgmtkit.io/Note=a = b\nc note-"},
		{"taints already there", func() (lcm.Result, error) {
			return k.Taint(n.Ctx, "worker-10-0-0-12", []corev1.Taint{{Key: "dedicated", Value: "nfs", Effect: corev1.TaintEffectNoSchedule}}, corev1.Taint{Key: "absent"})
		}, ""},
		{"taint value changed, one added, one removed by key", func() (lcm.Result, error) {
			return k.Taint(n.Ctx, "worker-10-0-0-12", []corev1.Taint{
				{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule},
				{Key: "dedicated", Effect: corev1.TaintEffectPreferNoSchedule},
			}, corev1.Taint{Key: "gpu"})
		}, "taint nodes worker-10-0-0-12 --overwrite dedicated=storage:NoSchedule dedicated:PreferNoSchedule gpu-"},
	} {
		n.Reset()
		res, err := tc.step()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		lines := n.Lines("kubectl")
		if tc.write == "" {
			if res != lcm.Unchanged || len(lines) != 1 || !strings.HasPrefix(lines[0], "get ") {
				t.Errorf("%s: %v, kubectl runs %q; want unchanged after one read", tc.name, res, lines)
			}
			continue
		}
		if !res.Changed || len(lines) != 2 || lines[1] != tc.write {
			t.Errorf("%s: %v, kubectl runs %q; want the read, then %q", tc.name, res, lines, tc.write)
		}
	}

	// An object that does not exist is an error, and nothing is written.
	n.Reset()
	if _, err := k.Label(n.Ctx, "configmap", "nfs", "gone", map[string]string{"a": "b"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("label of a missing object: %v", err)
	}
	if got := n.Lines("kubectl"); len(got) != 1 {
		t.Fatalf("kubectl runs %q", got)
	}
}

func TestLabelAnnotateTaintRefuseBadInput(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	n.Set("kubectl", metaCluster(t))
	k := n.Kubectl()
	ok := map[string]string{"a": "b"}
	for path, step := range map[string]func() (lcm.Result, error){
		"kind":      func() (lcm.Result, error) { return k.Label(n.Ctx, "--all", "nfs", "c", ok) },
		"namespace": func() (lcm.Result, error) { return k.Label(n.Ctx, "configmap", "a.b", "c", ok) },
		"name":      func() (lcm.Result, error) { return k.Annotate(n.Ctx, "configmap", "nfs", "C", ok) },
		`set["a b"]`: func() (lcm.Result, error) {
			return k.Label(n.Ctx, "configmap", "nfs", "c", map[string]string{"a b": "x"})
		},
		`set["app"]`: func() (lcm.Result, error) {
			return k.Label(n.Ctx, "configmap", "nfs", "c", map[string]string{"app": "has space"})
		},
		`set["tier"]`: func() (lcm.Result, error) {
			return k.Label(n.Ctx, "configmap", "nfs", "c", map[string]string{"tier": "x=y"})
		},
		`set["-x"]`: func() (lcm.Result, error) {
			return k.Annotate(n.Ctx, "configmap", "nfs", "c", map[string]string{"-x": "v"})
		},
		"set": func() (lcm.Result, error) {
			return k.Annotate(n.Ctx, "configmap", "nfs", "c", map[string]string{"big": strings.Repeat("x", 70*1024)})
		},
		"remove[0]": func() (lcm.Result, error) { return k.Label(n.Ctx, "configmap", "nfs", "c", ok, "a") },
		"node":      func() (lcm.Result, error) { return k.Taint(n.Ctx, "-n", nil) },
		"set[0]": func() (lcm.Result, error) {
			return k.Taint(n.Ctx, "w", []corev1.Taint{{Key: "k", Value: "v:w", Effect: corev1.TaintEffectNoSchedule}})
		},
		"set[1]": func() (lcm.Result, error) {
			return k.Taint(n.Ctx, "w", []corev1.Taint{{Key: "k", Effect: "NoSchedule"}, {Key: "k", Effect: "NoSchedule"}})
		},
		"remove[1]": func() (lcm.Result, error) {
			return k.Taint(n.Ctx, "w", []corev1.Taint{{Key: "k", Effect: "NoExecute"}}, corev1.Taint{Key: "j"}, corev1.Taint{Key: "k"})
		},
		"ExecOptions.Container": func() (lcm.Result, error) {
			_, err := k.Exec(n.Ctx, "kube-system", "etcd-m", []string{"etcdctl"}, kubeapi.ExecOptions{Container: "--privileged"})
			return lcm.Unchanged, err
		},
		"argv": func() (lcm.Result, error) {
			_, err := k.Exec(n.Ctx, "kube-system", "etcd-m", nil, kubeapi.ExecOptions{})
			return lcm.Unchanged, err
		},
		"Kubectl.Kubeconfig": func() (lcm.Result, error) {
			return kubeapi.Kubectl{Host: n.Host, Kubeconfig: "admin.conf"}.Delete(n.Ctx, "configmap", "nfs", "c")
		},
	} {
		_, err := step()
		scripted.ParamsError(t, err, path)
	}
	// A taint without an effect cannot be set.
	_, err := k.Taint(n.Ctx, "w", []corev1.Taint{{Key: "k"}})
	scripted.ParamsError(t, err, "set[0]")
	if c := n.Commands(); len(c) != 0 {
		t.Fatalf("commands for bad input: %q", c)
	}
}

func TestGetAndDelete(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	exists := true
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		switch inv.Line() {
		case "get persistentvolume pv-1 -o json":
			if !exists {
				return scripted.NotFound("persistentvolumes", "pv-1")
			}
			return scripted.OK(`{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"capacity":{"storage":"1Gi"}}}`)
		case "delete persistentvolume pv-1 --ignore-not-found":
			if !exists {
				return scripted.OK("")
			}
			exists = false
			return scripted.OK(`persistentvolume "pv-1" deleted` + "\n")
		}
		return scripted.Reply{Stderr: "unexpected kubectl " + inv.Line(), Code: 2}
	})
	k := n.Kubectl()
	var pv corev1.PersistentVolume
	if found, err := k.Get(n.Ctx, &pv, "persistentvolume", "", "pv-1"); err != nil || !found || pv.Spec.Capacity.Storage().String() != "1Gi" {
		t.Fatalf("Get: %v, %v, %+v", found, err, pv)
	}
	res, err := k.Delete(n.Ctx, "persistentvolume", "", "pv-1")
	if err != nil || !res.Changed || !strings.Contains(res.Detail, `persistentvolume "pv-1" deleted`) {
		t.Fatalf("Delete: %v, %v", res, err)
	}
	if res, err := k.Delete(n.Ctx, "persistentvolume", "", "pv-1"); err != nil || res != lcm.Unchanged {
		t.Fatalf("second Delete: %v, %v", res, err)
	}
	var gone corev1.PersistentVolume
	if found, err := k.Get(n.Ctx, &gone, "persistentvolume", "", "pv-1"); err != nil || found || gone.Name != "" {
		t.Fatalf("Get after Delete: %v, %v, %+v", found, err, gone)
	}
	want := []string{"get persistentvolume pv-1 -o json", "delete persistentvolume pv-1 --ignore-not-found", "delete persistentvolume pv-1 --ignore-not-found", "get persistentvolume pv-1 -o json"}
	if got := n.Lines("kubectl"); !slices.Equal(got, want) {
		t.Fatalf("kubectl runs %q, want %q", got, want)
	}
}

func TestCheckManifest(t *testing.T) {
	for _, good := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"# c\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"n\"}}\n---\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n",
	} {
		if err := kubeapi.CheckManifest([]byte(good)); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{
		"",
		"# nothing\n---\n",
		"apiVersion: v1\nmetadata:\n  name: x\n",
		"kind: ConfigMap\n",
		"apiVersion: v1\nkind: ConfigMap\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n- a list\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n",
		"apiVersion: v1\nkind: [\n",
		"just text",
	} {
		scripted.ParamsError(t, kubeapi.CheckManifest([]byte(bad)), "manifest")
	}
}

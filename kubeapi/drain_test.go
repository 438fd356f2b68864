package kubeapi_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// pod returns a running pod on node, owned by a controller of kind (none
// when ""), with the given annotations.
func pod(ns, name, node, kind string, annotations map[string]string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if kind != "" {
		gv := appsv1.SchemeGroupVersion.String()
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: gv, Kind: kind, Name: name + "-owner", Controller: new(true)}}
	}
	return p
}

// cluster is the state a scripted kubectl answers drain questions from.
type drainCluster struct {
	t             *testing.T
	unschedulable bool
	exists        bool
	pods          []corev1.Pod
	// drain decides what `kubectl drain` does with the pods.
	drain func(force bool) scripted.Reply
}

func (c *drainCluster) script(node string) scripted.Script {
	return func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		switch line := inv.Line(); {
		case line == "get node "+node+" -o json":
			if !c.exists {
				return scripted.NotFound("nodes", node)
			}
			n := scripted.ReadyNode(node, corev1.ConditionTrue, "", "")
			n.Spec.Unschedulable = c.unschedulable
			return scripted.OK(scripted.AsJSON(c.t, n))
		case line == "cordon "+node:
			c.unschedulable = true
			return scripted.OK("node/" + node + " cordoned\n")
		case line == "get pods --all-namespaces --field-selector=spec.nodeName="+node+" -o json":
			return scripted.OK(scripted.AsJSON(c.t, corev1.PodList{Items: c.pods}))
		case strings.HasPrefix(line, "drain "+node+" --ignore-daemonsets --delete-emptydir-data --timeout="):
			return c.drain(strings.HasSuffix(line, " --force"))
		case line == "delete node "+node+" --ignore-not-found":
			c.exists = false
			return scripted.OK(`node "` + node + `" deleted` + "\n")
		}
		return scripted.Reply{Stderr: "unexpected kubectl " + inv.Line(), Code: 2}
	}
}

func TestDrainNode(t *testing.T) {
	const name = "worker-10-0-0-12"
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	c := &drainCluster{t: t, exists: true, pods: []corev1.Pod{
		pod("kube-system", "kube-proxy-x", name, "DaemonSet", nil),
		pod("default", "web-1", name, "ReplicaSet", nil),
		pod("default", "job-done", name, "", nil),
	}}
	c.pods[2].Status.Phase = corev1.PodSucceeded
	c.drain = func(force bool) scripted.Reply {
		// Evictions leave the DaemonSet pod (--ignore-daemonsets).
		c.pods = c.pods[:1]
		return scripted.OK("node/" + name + " drained\n")
	}
	n.Set("kubectl", c.script(name))

	res, err := kubeapi.DrainNode(n.Ctx, n.Kubectl(), name, kubeapi.DrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"get node " + name + " -o json",
		"cordon " + name,
		"get pods --all-namespaces --field-selector=spec.nodeName=" + name + " -o json",
		"drain " + name + " --ignore-daemonsets --delete-emptydir-data --timeout=300s",
	}
	if got := n.Lines("kubectl"); !slices.Equal(got, want) {
		t.Fatalf("kubectl runs\n%q\nwant\n%q", got, want)
	}
	if !res.Changed || !strings.Contains(res.Detail, "cordoned") || !strings.Contains(res.Detail, "1 pods evicted") {
		t.Fatalf("result %v", res)
	}

	// Cordoned, only a DaemonSet pod left: nothing to do.
	n.Reset()
	res, err = kubeapi.DrainNode(n.Ctx, n.Kubectl(), name, kubeapi.DrainOptions{})
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("second drain: %v, %v", res, err)
	}
	if got := n.Lines("kubectl"); len(got) != 2 {
		t.Fatalf("second drain ran %q", got)
	}

	// Deleted, then absent.
	res, err = kubeapi.DeleteNode(n.Ctx, n.Kubectl(), name)
	if err != nil || !res.Changed {
		t.Fatalf("delete: %v, %v", res, err)
	}
	n.Reset()
	for _, step := range []func() (lcm.Result, error){
		func() (lcm.Result, error) { return kubeapi.DeleteNode(n.Ctx, n.Kubectl(), name) },
		func() (lcm.Result, error) { return kubeapi.DrainNode(n.Ctx, n.Kubectl(), name, kubeapi.DrainOptions{}) },
	} {
		if res, err := step(); err != nil || res != lcm.Unchanged {
			t.Fatalf("absent node: %v, %v", res, err)
		}
	}
	if got := n.Lines("kubectl"); !slices.Equal(got, []string{"get node " + name + " -o json", "get node " + name + " -o json"}) {
		t.Fatalf("absent node: kubectl runs %q", got)
	}
}

func TestDrainNodeBlockedListsThePods(t *testing.T) {
	const name = "worker-10-0-0-12"
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	c := &drainCluster{t: t, exists: true, pods: []corev1.Pod{
		pod("kube-system", "calico-node-x", name, "DaemonSet", nil),
		pod("kube-system", "kube-apiserver-"+name, name, "Node", map[string]string{corev1.MirrorPodAnnotationKey: "abc"}),
		pod("default", "db-0", name, "StatefulSet", nil),
		pod("default", "standalone", name, "", nil),
	}}
	var forced []bool
	c.drain = func(force bool) scripted.Reply {
		forced = append(forced, force)
		// kubectl drain: db-0's eviction refused by its
		// PodDisruptionBudget (429 from the API server's eviction REST,
		// pkg/registry/core/pod/storage/eviction.go) until the timeout;
		// then RunDrain in staging/src/k8s.io/kubectl/pkg/cmd/drain/drain.go
		// reports the node and exits 1.
		return scripted.Reply{
			Stderr: "evicting pod default/db-0\n" +
				"error when evicting pods/\"db-0\" -n \"default\" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.\n" +
				"error: unable to drain node \"" + name + "\" due to error: [error when evicting pods/\"db-0\" -n \"default\": global timeout reached: 1m30s], continuing command...\n" +
				"There are pending nodes to be drained:\n " + name + "\n" +
				"error: [error when evicting pods/\"db-0\" -n \"default\": global timeout reached: 1m30s]\n",
			Code: 1,
		}
	}
	n.Set("kubectl", c.script(name))

	_, err := kubeapi.DrainNode(n.Ctx, n.Kubectl(), name, kubeapi.DrainOptions{Timeout: 90 * time.Second, Force: true})
	var de *kubeapi.DrainError
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a *DrainError", err)
	}
	if de.Node != name || !slices.Equal(de.Pods, []string{"default/db-0", "default/standalone"}) {
		t.Fatalf("DrainError %+v", de)
	}
	msg := err.Error()
	for _, want := range []string{name, "2 pods still on it: default/db-0, default/standalone", "global timeout reached"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if !slices.Equal(forced, []bool{true}) {
		t.Fatalf("drain runs (force) %v", forced)
	}
	if got := n.Lines("kubectl"); !slices.Contains(got, "drain "+name+" --ignore-daemonsets --delete-emptydir-data --timeout=90s --force") {
		t.Fatalf("kubectl runs %q", got)
	}
	if !c.exists {
		t.Fatal("node deleted")
	}
}

func TestDrainNodeBadOptions(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	_, err := kubeapi.DrainNode(n.Ctx, n.Kubectl(), "worker-1", kubeapi.DrainOptions{Timeout: -time.Second})
	scripted.ParamsError(t, err, "DrainOptions.Timeout")
	_, err = kubeapi.DrainNode(n.Ctx, n.Kubectl(), "--all-nodes", kubeapi.DrainOptions{})
	scripted.ParamsError(t, err, "name")
	_, err = kubeapi.DeleteNode(n.Ctx, n.Kubectl(), "")
	scripted.ParamsError(t, err, "name")
	if c := n.Commands(); len(c) != 0 {
		t.Fatalf("commands: %q", c)
	}
}

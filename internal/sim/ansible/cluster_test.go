package ansible_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim"
)

// readyNodes returns the names of the Ready nodes of the cloud's only
// cluster.
func (e *env) readyNodes() []string {
	e.t.Helper()
	cs := e.cloud.Kube().Clusters()
	if len(cs) != 1 {
		e.t.Fatalf("%d clusters", len(cs))
	}
	nodes, err := cs[0].Nodes(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				out = append(out, n.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestClusterYmlBuildsAReadyClusterAndARerunChangesNothing(t *testing.T) {
	e := newEnv(t, 1, 2, sim.AnsibleOptions{})
	e.inventory(e.masters(), e.workers(), "")
	out, stderr, code := e.playbook("cluster.yml")
	if code != 0 {
		t.Fatalf("cluster.yml: exit %d\n%s\n%s", code, out, stderr)
	}
	var want []string
	for _, h := range append(e.masters(), e.workers()...) {
		want = append(want, nodeName(h))
	}
	slices.Sort(want)
	if got := e.readyNodes(); !slices.Equal(got, want) {
		t.Fatalf("ready nodes %v, want %v\n%s", got, want, out)
	}
	for _, h := range append(e.masters(), e.workers()...) {
		for _, p := range []string{"containerd", "kubeadm", "kubelet", "kubectl"} {
			if !h.Machine.Installed(p) {
				t.Errorf("%s: %s not installed", h.Name(), p)
			}
		}
	}
	m := e.masters()[0]
	if !m.FS().Exists("/etc/kubernetes/admin.conf") || !m.FS().Exists("/root/.kube/config") {
		t.Error("no admin.conf or root's kubeconfig on the first control plane")
	}
	// A rerun changes nothing.
	out2, stderr2, code := e.playbook("cluster.yml")
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s\n%s", code, out2, stderr2)
	}
	for _, l := range recap(out2) {
		if !strings.Contains(l, " changed=0 ") || !strings.Contains(l, " failed=0 ") {
			t.Errorf("rerun changed something: %q\n%s", l, out2)
		}
	}
	if len(recap(out2)) != 3 {
		t.Errorf("recap %q", recap(out2))
	}
}

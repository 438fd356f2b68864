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

func TestClusterYmlJoinsTheOtherControlPlanes(t *testing.T) {
	e := newEnv(t, 3, 1, sim.AnsibleOptions{})
	e.inventory(e.masters(), e.workers(), "")
	out, stderr, code := e.playbook("cluster.yml")
	if code != 0 {
		t.Fatalf("cluster.yml: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := e.readyNodes(); len(got) != 4 {
		t.Fatalf("ready nodes %v", got)
	}
	members, err := e.cloud.Kube().Clusters()[0].EtcdMembers(e.ctx)
	if err != nil || len(members) != 3 {
		t.Fatalf("etcd members %v %v", members, err)
	}
	for _, m := range e.masters() {
		if !m.FS().Exists("/root/.kube/config") {
			t.Errorf("%s: no /root/.kube/config", m.Name())
		}
	}
	// Two masters in etcd: kubespray's validate_inventory refuses.
	e2 := newEnv(t, 2, 0, sim.AnsibleOptions{})
	e2.inventory(e2.masters(), nil, "")
	out, _, code = e2.playbook("cluster.yml")
	if code != 2 || !strings.Contains(out, "\"assertion\": \"groups.get('etcd', groups.kube_control_plane) | length is not divisibleby 2\"") {
		t.Fatalf("two etcd hosts: exit %d\n%s", code, out)
	}
}

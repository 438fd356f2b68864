package kube_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
)

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: want %q in:\n%s", what, w, got)
		}
	}
}

func nodeByName(nodes []corev1.Node, name string) *corev1.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}

func readyOf(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// cniDaemonSet applies a CNI DaemonSet (a pod on every node mounting
// /etc/cni/net.d, tolerating every taint), as a CNI manifest does: the
// pod network reaches the nodes.
func cniDaemonSet(t *testing.T, e *env, c *kube.Cluster) {
	t.Helper()
	labels := map[string]string{"app": "cni"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-cni"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostNetwork: true,
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:  []corev1.Container{{Name: "cni", Image: "cni:v1"}},
					Volumes:     []corev1.Volume{{Name: "cni", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/cni/net.d"}}}},
				},
			},
		},
	}
	if _, err := c.API.Create(e.ctx, ds); err != nil {
		t.Fatal(err)
	}
}

func TestInitJoinWorkerAndControlPlane(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.0.5")
	w1 := e.node("worker1", "10.0.0.12")
	m2 := e.node("master2", "10.0.0.6")

	out := m1.initMaster("10.0.0.5:6443")
	wantContains(t, "init output", out, "Your Kubernetes control-plane has initialized successfully!", "[upload-certs] Using certificate key:", certKey)
	for _, f := range []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/pki/ca.key", "/etc/kubernetes/manifests/etcd.yaml"} {
		fi, err := m1.Server().FS().Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	c := e.w.ClusterOf(m1.Machine)
	if c == nil || c.Endpoint != "10.0.0.5:6443" || c.Version != "v1.36.2" {
		t.Fatalf("cluster of m1: %+v", c)
	}
	if got := m1.run(false, "cat /etc/kubernetes/admin.conf"); got.code == 0 {
		t.Error("admin.conf is readable by ubuntu")
	}
	// The apiserver certificate carries the certSANs.
	if !strings.Contains(m1.mustRun(true, "cat /etc/kubernetes/manifests/kube-apiserver.yaml"), "--advertise-address=10.0.0.5") {
		t.Error("kube-apiserver manifest without the advertise address")
	}

	tok := m1.token()
	if len(tok) != 23 || tok[6] != '.' {
		t.Fatalf("token %q", tok)
	}
	hash := m1.caHash()
	if r := w1.join("10.0.0.5:6443", tok, hash, false, ""); r.code != 0 {
		t.Fatalf("worker join: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !w1.Server().FS().Exists("/etc/kubernetes/kubelet.conf") || w1.Server().FS().Exists("/etc/kubernetes/admin.conf") {
		t.Error("worker files: want kubelet.conf and no admin.conf")
	}
	if r := m2.join("10.0.0.5:6443", tok, hash, true, certKey); r.code != 0 {
		t.Fatalf("control-plane join: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if m2.read("/etc/kubernetes/pki/ca.crt") != m1.read("/etc/kubernetes/pki/ca.crt") || m2.read("/etc/kubernetes/pki/ca.key") != m1.read("/etc/kubernetes/pki/ca.key") {
		t.Error("the joined control plane has another CA")
	}

	members := etcdMembers(c)
	if len(members) != 2 || members[0].Name != "master-10-0-0-5" || members[1].Name != "master-10-0-0-6" || members[1].PeerURLs[0] != "https://10.0.0.6:2380" {
		t.Errorf("etcd members: %+v", members)
	}
	nodes, err := c.Nodes(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("nodes: %d", len(nodes))
	}
	cp := nodeByName(nodes, "master-10-0-0-6")
	wk := nodeByName(nodes, "worker-10-0-0-12")
	if cp == nil || wk == nil {
		t.Fatalf("nodes: %v", nodes)
	}
	if _, ok := cp.Labels["node-role.kubernetes.io/control-plane"]; !ok || len(cp.Spec.Taints) == 0 || cp.Spec.Taints[0].Key != "node-role.kubernetes.io/control-plane" {
		t.Errorf("control-plane node labels/taints: %v %v", cp.Labels, cp.Spec.Taints)
	}
	if _, ok := wk.Labels["node-role.kubernetes.io/control-plane"]; ok {
		t.Error("worker labelled control-plane")
	}
	if wk.Status.NodeInfo.KubeletVersion != "v1.36.2" || wk.Status.Addresses[0].Address != "10.0.0.12" || wk.Spec.PodCIDR == "" {
		t.Errorf("worker status: %+v %s", wk.Status, wk.Spec.PodCIDR)
	}
	if r := readyOf(wk); r.Status != corev1.ConditionFalse || !strings.Contains(r.Message, "cni plugin not initialized") {
		t.Errorf("worker Ready before the CNI: %+v", r)
	}
	cniDaemonSet(t, e, c)
	nodes, _ = c.Nodes(e.ctx)
	if r := readyOf(nodeByName(nodes, "worker-10-0-0-12")); r.Status != corev1.ConditionTrue {
		t.Errorf("worker Ready with the CNI: %+v", r)
	}
	// Mirror pods of the static pods, one set per control plane.
	pods, err := c.API.List(e.ctx, kube.KindPod, "kube-system")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.GetName())
	}
	wantContains(t, "mirror pods", strings.Join(names, " "), "etcd-master-10-0-0-5", "kube-apiserver-master-10-0-0-6")

	// The kubelet going away makes the node Unknown.
	m2.mustRun(true, "systemctl stop kubelet")
	nodes, _ = c.Nodes(e.ctx)
	if r := readyOf(nodeByName(nodes, "master-10-0-0-6")); r.Status != corev1.ConditionUnknown {
		t.Errorf("Ready with the kubelet stopped: %+v", r)
	}
	if len(e.w.ConfigWarnings()) != 0 {
		t.Errorf("config warnings: %v", e.w.ConfigWarnings())
	}
}

func TestCgroupDriverMismatchIsNotReady(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.0.5", nodeOpts{cgroupfs: true})
	m1.initMaster("")
	c := e.w.ClusterOf(m1.Machine)
	cniDaemonSet(t, e, c)
	nodes, err := c.Nodes(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := readyOf(nodeByName(nodes, "master-10-0-0-5"))
	if r.Status != corev1.ConditionFalse || !strings.Contains(r.Message, `cgroup driver "cgroupfs"`) {
		t.Errorf("Ready: %+v", r)
	}
}

func TestJoinRefusals(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.0.5")
	w1 := e.node("worker1", "10.0.0.12")
	m2 := e.node("master2", "10.0.0.6")
	m1.initMaster("10.0.0.5:6443")
	tok, hash := m1.token(), m1.caHash()
	id := tok[:6]
	for _, tc := range []struct {
		name, endpoint, token, hash string
		cp                          bool
		key, want                   string
	}{
		{"unknown token", "10.0.0.5:6443", "abcdef.0123456789abcdef", hash, false, "", `could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"`},
		{"wrong secret", "10.0.0.5:6443", id + ".0123456789abcdef", hash, false, "", "failed to verify JWS signature of received cluster info object, can't trust this API Server"},
		{"wrong CA hash", "10.0.0.5:6443", tok, "sha256:" + strings.Repeat("0", 64), false, "", "cluster CA found in cluster-info ConfigMap is invalid: none of the public keys"},
		{"unreachable endpoint", "10.0.0.5:7443", tok, hash, false, "", `failed to request the cluster-info ConfigMap: Get "https://10.0.0.5:7443/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s": dial tcp 10.0.0.5:7443: connect: connection refused`},
		{"no route", "10.0.0.99:6443", tok, hash, false, "", "no route to host"},
		{"wrong certificate key", "10.0.0.5:6443", tok, hash, true, strings.Repeat("ab", 32), "error decoding secret data with provided key: cipher: message authentication failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := w1
			if tc.cp {
				n = m2
			}
			r := n.join(tc.endpoint, tc.token, tc.hash, tc.cp, tc.key)
			if r.code != 1 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			wantContains(t, "stderr", r.stderr, tc.want, "To see the stack trace of this error execute with --v=5 or higher")
			if n.Server().FS().Exists("/etc/kubernetes/kubelet.conf") {
				t.Error("a refused join wrote kubelet.conf")
			}
		})
	}
	t.Run("secrets stay out of the output", func(t *testing.T) {
		r := w1.join("10.0.0.5:6443", id+".0123456789abcdef", hash, false, "")
		if strings.Contains(r.stderr+r.stdout, "0123456789abcdef") {
			t.Errorf("the token secret is in the output:\n%s", r.stderr)
		}
	})
	t.Run("expired token", func(t *testing.T) {
		e.w.SetClock(func() time.Time { return time.Now().Add(25 * time.Hour) })
		defer e.w.SetClock(nil)
		r := w1.join("10.0.0.5:6443", tok, hash, false, "")
		wantContains(t, "stderr", r.stderr, "could not find a JWS signature in the cluster-info ConfigMap for token ID \""+id+"\"")
	})
	t.Run("kubeadm-certs expired", func(t *testing.T) {
		tok2 := m1.token()
		e.w.SetClock(func() time.Time { return time.Now().Add(150 * time.Minute) })
		defer e.w.SetClock(nil)
		// The token of 1h is expired as well: make a fresh one "now".
		tok3 := m1.token()
		_ = tok2
		r := m2.join("10.0.0.5:6443", tok3, hash, true, certKey)
		wantContains(t, "stderr", r.stderr, `error downloading the secret: secrets "kubeadm-certs" not found`)
	})
	t.Run("control plane without controlPlaneEndpoint", func(t *testing.T) {
		e2 := newEnv(t)
		a := e2.node("master1", "10.0.1.5")
		b := e2.node("master2", "10.0.1.6")
		a.initMaster("")
		r := b.join("10.0.1.5:6443", a.token(), a.caHash(), true, certKey)
		wantContains(t, "stderr", r.stderr, "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address")
	})
}

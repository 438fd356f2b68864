package kubeapi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// simMaster is a control plane in the simulated cloud, initialised by the
// simulated kubeadm from a configuration written here (kubeadm's own
// steps are kubeadm's package's to test), and a Kubectl on it.
type simMaster struct {
	ctx  context.Context
	k    kubeapi.Kubectl
	api  kube.API
	node string
}

func newSimMaster(t *testing.T) *simMaster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, sim.Options{})
	_, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	m := v.HostsWithRole(lcm.RoleMaster)[0]
	h, err := cloud.Connect(ctx, m.Node(), "ubuntu", "ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	name := "master-" + strings.ReplaceAll(m.NICAddress, ".", "-")
	// containerd on the systemd cgroup driver and IP forwarding, which
	// kubeadm's preflight and the kubelet require.
	for file, content := range map[string]string{
		"/etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n",
		"/root/init.yaml": fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %s
  bindPort: 6443
nodeRegistration:
  name: %s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.2
networking:
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.96.0.0/12
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
`, m.NICAddress, name),
	} {
		if err := m.FS().MkdirAll(file[:strings.LastIndexByte(file, '/')], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := m.FS().WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Machine.InstallPackages("containerd", "kubelet", "kubeadm", "kubectl"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"sysctl", "-w", "net.ipv4.ip_forward=1"}, {"kubeadm", "init", "--config", "/root/init.yaml"}} {
		if _, err := h.Run(ctx, remote.Cmd{Args: args, Sudo: true}); err != nil {
			t.Fatal(err)
		}
	}
	c := cloud.Kube().ClusterOf(m.Machine)
	if c == nil {
		t.Fatal("kubeadm init made no cluster")
	}
	return &simMaster{ctx: ctx, k: kubeapi.Kubectl{Host: h}, api: c.ControlPlane().API(), node: name}
}

// twice runs step twice: the first run changes something, the second
// nothing.
func twice(t *testing.T, what string, step func() (lcm.Result, error)) lcm.Result {
	t.Helper()
	first, err := step()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !first.Changed {
		t.Errorf("%s: first run changed nothing", what)
	}
	second, err := step()
	if err != nil || second.Changed {
		t.Fatalf("%s, second run: %v, %v", what, second, err)
	}
	return first
}

// The generic steps against the simulated cluster's kubectl and API
// server: each changes the object as the API server holds it, and a
// second run changes nothing.
func TestGenericStepsInTheSimulatedCloud(t *testing.T) {
	s := newSimMaster(t)
	ctx, k := s.ctx, s.k
	cm := func() *corev1.ConfigMap {
		t.Helper()
		o, err := s.api.Get(ctx, kube.KindConfigMap, "default", "pv-registry")
		if err != nil {
			t.Fatal(err)
		}
		return o.(*corev1.ConfigMap)
	}

	// Get: a Node, and an object that is not there.
	var node corev1.Node
	if found, err := k.Get(ctx, &node, "node", "", s.node); err != nil || !found || node.Name != s.node {
		t.Fatalf("Get node: %v, %v, %q", found, err, node.Name)
	}
	var absent corev1.ConfigMap
	if found, err := k.Get(ctx, &absent, "configmap", "default", "pv-registry"); err != nil || found {
		t.Fatalf("Get of a missing ConfigMap: %v, %v", found, err)
	}

	manifest := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pv-registry\n  namespace: default\ndata:\n  a: b\n")
	if err := kubeapi.CheckManifest(manifest); err != nil {
		t.Fatal(err)
	}
	twice(t, "apply", func() (lcm.Result, error) { return k.Apply(ctx, manifest) })
	var got corev1.ConfigMap
	if found, err := k.Get(ctx, &got, "configmaps", "default", "pv-registry"); err != nil || !found || got.Data["a"] != "b" {
		t.Fatalf("Get: %v, %v, %+v", found, err, got)
	}

	// Labels and annotations: set, changed, removed.
	res := twice(t, "label", func() (lcm.Result, error) {
		return k.Label(ctx, "configmap", "default", "pv-registry", map[string]string{"app.kubernetes.io/name": "nfs", "tier": "storage"})
	})
	if !strings.Contains(res.Detail, "app.kubernetes.io/name=nfs") {
		t.Errorf("label detail %q", res.Detail)
	}
	twice(t, "relabel", func() (lcm.Result, error) {
		return k.Label(ctx, "configmap", "default", "pv-registry", map[string]string{"tier": "backend"}, "app.kubernetes.io/name")
	})
	if l := cm().Labels; len(l) != 1 || l["tier"] != "backend" {
		t.Fatalf("labels %v", l)
	}
	note := "registered by mgmtkit\nsecond line = with an equals sign"
	twice(t, "annotate", func() (lcm.Result, error) {
		return k.Annotate(ctx, "configmap", "default", "pv-registry", map[string]string{"mgmtkit.io/note": note})
	})
	if a := cm().Annotations["mgmtkit.io/note"]; a != note {
		t.Fatalf("annotation %q", a)
	}
	twice(t, "remove the annotation", func() (lcm.Result, error) {
		return k.Annotate(ctx, "configmap", "default", "pv-registry", nil, "mgmtkit.io/note")
	})
	if _, ok := cm().Annotations["mgmtkit.io/note"]; ok {
		t.Fatal("annotation left")
	}

	// Taints on the node: added, its value changed, removed by key.
	taint := corev1.Taint{Key: "mgmtkit.io/dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule}
	twice(t, "taint", func() (lcm.Result, error) { return k.Taint(ctx, s.node, []corev1.Taint{taint}) })
	taint.Value = "nfs"
	twice(t, "retaint", func() (lcm.Result, error) { return k.Taint(ctx, s.node, []corev1.Taint{taint}) })
	nodeTaints := func() []corev1.Taint {
		t.Helper()
		o, err := s.api.Get(ctx, kube.KindNode, "", s.node)
		if err != nil {
			t.Fatal(err)
		}
		var mine []corev1.Taint
		for _, x := range o.(*corev1.Node).Spec.Taints {
			if x.Key == taint.Key {
				mine = append(mine, x)
			}
		}
		return mine
	}
	if got := nodeTaints(); len(got) != 1 || got[0].Value != "nfs" || got[0].Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("taints %+v", got)
	}
	twice(t, "untaint", func() (lcm.Result, error) {
		return k.Taint(ctx, s.node, nil, corev1.Taint{Key: taint.Key})
	})
	if got := nodeTaints(); len(got) != 0 {
		t.Fatalf("taints left %+v", got)
	}

	// Exec: etcdctl in the etcd static pod, as kubeadm's etcd steps run it.
	out, err := k.Exec(ctx, "kube-system", "etcd-"+s.node, []string{"etcdctl", "--endpoints=https://127.0.0.1:2379",
		"--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/etcd/server.crt", "--key=/etc/kubernetes/pki/etcd/server.key",
		"member", "list", "-w", "json"}, kubeapi.ExecOptions{Idempotent: true})
	if err != nil || !strings.Contains(string(out.Stdout), s.node) {
		t.Fatalf("exec etcdctl: %v, %s", err, out.Stdout)
	}

	// Delete: gone from the API server, then nothing to delete.
	twice(t, "delete", func() (lcm.Result, error) { return k.Delete(ctx, "configmap", "default", "pv-registry") })
	if _, err := s.api.Get(ctx, kube.KindConfigMap, "default", "pv-registry"); err == nil {
		t.Fatal("ConfigMap still there")
	}

	// A label on an object that does not exist is an error, not a
	// success that changed nothing.
	if _, err := k.Label(ctx, "configmap", "default", "pv-registry", map[string]string{"a": "b"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("label of a missing object: %v", err)
	}
	if _, err := k.Taint(ctx, "worker-10-0-0-99", []corev1.Taint{taint}); err == nil {
		t.Fatal("taint of a missing node: no error")
	}
}

// List selects by field and by label, as kubectl does; a bad kind or
// namespace is refused naming the field before any command.
func TestListInTheSimulatedCloud(t *testing.T) {
	m := newSimMaster(t)
	var tokens corev1.SecretList
	if err := m.k.List(m.ctx, &tokens, "secrets", "kube-system", kubeapi.ListOptions{FieldSelector: "type=bootstrap.kubernetes.io/token"}); err != nil {
		t.Fatal(err)
	}
	if len(tokens.Items) == 0 {
		t.Error("kubeadm init's bootstrap token is not listed")
	}
	for _, s := range tokens.Items {
		if s.Type != "bootstrap.kubernetes.io/token" {
			t.Errorf("the field selector let %s of type %s through", s.Name, s.Type)
		}
	}
	var nodes corev1.NodeList
	if err := m.k.List(m.ctx, &nodes, "nodes", "", kubeapi.ListOptions{LabelSelector: "node-role.kubernetes.io/control-plane"}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Name != m.node {
		t.Errorf("control-plane nodes %v, want %s", nodes.Items, m.node)
	}
	for _, tc := range []struct{ kind, ns, field string }{{"", "", "kind"}, {"secrets", "Bad_NS", "namespace"}} {
		var l corev1.SecretList
		err := m.k.List(m.ctx, &l, tc.kind, tc.ns, kubeapi.ListOptions{})
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("List(%q, %q): %v, want a ParamsError naming %s", tc.kind, tc.ns, err, tc.field)
		}
	}
}

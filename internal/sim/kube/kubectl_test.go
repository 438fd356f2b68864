package kube_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

const adminConf = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTg==
    server: https://10.0.0.5:6443
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
users:
- name: kubernetes-admin
  user:
    client-certificate-data: LS0tLS1CRUdJTg==
    client-key-data: LS0tLS1CRUdJTg==
`

// cluster is a MemoryAPI behind a master reached over SSH, with kubectl
// installed and kubeadm's admin.conf (root 0600) in place.
type cluster struct {
	t    *testing.T
	ctx  context.Context
	api  *kube.MemoryAPI
	m    *ubuntu.Machine
	h    *remote.SSHHost
	exec []string // argv given to the exec handler
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx}
	c.api = kube.NewMemoryAPI(kube.MemoryOptions{CACert: []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"), Seed: 7})
	srv := sshtest.Start(t, sshtest.Config{
		Hostname: "master-10-0-0-5",
		Users: []sshtest.User{
			{Name: "root", Password: "root-pw"},
			{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword},
		},
	})
	cat := ubuntu.DefaultCatalog()
	resolve := func(m *ubuntu.Machine, path string) (kube.API, error) {
		b, err := m.Server().FS().ReadFile(path)
		if err != nil {
			return nil, err
		}
		server, err := kube.KubeconfigServer(string(b))
		if err != nil {
			return nil, err
		}
		if server != "https://10.0.0.5:6443" {
			return nil, fmt.Errorf("dial %s: %w", server, kube.ErrNoAPIServer)
		}
		return c.api, nil
	}
	execH := func(_ context.Context, p *sshtest.Process, pod *corev1.Pod, argv []string) int {
		c.exec = append([]string{pod.Name}, argv...)
		if argv[0] != "etcdctl" {
			fmt.Fprintf(p.Stderr, "OCI runtime exec failed: exec: %q: executable file not found in $PATH: unknown\n", argv[0])
			return 126
		}
		fmt.Fprintln(p.Stdout, `{"members":[]}`)
		return 0
	}
	cat.Add(ubuntu.Package{Name: "kubectl", Version: "1.36.6-1.1", Tools: map[string]ubuntu.Tool{
		"/usr/bin/kubectl": kube.KubectlTool(resolve, kube.WithExec(execH)),
	}})
	c.m = ubuntu.Install(srv, ubuntu.Options{Catalog: cat, Packages: []string{"kubectl"}})
	fs := srv.FS()
	if err := fs.MkdirAll("/etc/kubernetes", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile("/etc/kubernetes/admin.conf", []byte(adminConf), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	c.h, err = remote.NewSSHHost(remote.Config{Addr: srv.Addr(), Name: "master-10-0-0-5", User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.h.Close() })
	return c
}

type kcResult struct {
	stdout, stderr string
	code           int
}

var kcAnyExit = func() []int {
	var out []int
	for i := 1; i < 256; i++ {
		out = append(out, i)
	}
	return out
}()

// kubectl runs sudo kubectl --kubeconfig=/etc/kubernetes/admin.conf ARGS.
func (c *cluster) kubectl(stdin string, args ...string) kcResult {
	c.t.Helper()
	return c.run(true, stdin, append([]string{"kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"}, args...)...)
}

func (c *cluster) run(sudo bool, stdin string, argv ...string) kcResult {
	c.t.Helper()
	cmd := remote.Cmd{Args: argv, Sudo: sudo, OKExit: kcAnyExit}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := c.h.Run(c.ctx, cmd)
	if err != nil {
		c.t.Fatalf("%v: %v", argv, err)
	}
	return kcResult{string(out.Stdout), string(out.Stderr), out.ExitCode}
}

// ok runs kubectl and fails the test unless it exits 0.
func (c *cluster) ok(stdin string, args ...string) string {
	c.t.Helper()
	r := c.kubectl(stdin, args...)
	if r.code != 0 {
		c.t.Fatalf("kubectl %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func (c *cluster) node(name, ip string, master bool) {
	c.t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244." + ip[strings.LastIndex(ip, ".")+1:] + ".0/24"},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.6"},
		},
	}
	if master {
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
		n.Spec.Taints = []corev1.Taint{{Key: kube.TaintControlPlane, Effect: corev1.TaintEffectNoSchedule}}
	}
	if _, err := c.api.Create(c.ctx, n); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) pods(prefix string) []*corev1.Pod {
	c.t.Helper()
	objs, err := c.api.List(c.ctx, kube.KindPod, "")
	if err != nil {
		c.t.Fatal(err)
	}
	var out []*corev1.Pod
	for _, o := range objs {
		if p := o.(*corev1.Pod); strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
		}
	}
	return out
}

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 2
  selector:
    matchLabels:
      app: web
`

func TestKubectlGet(t *testing.T) {
	c := newCluster(t)
	c.node("master-10-0-0-5", "10.0.0.5", true)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	var list struct {
		APIVersion, Kind string
		Items            []corev1.Node
	}
	if err := json.Unmarshal([]byte(c.ok("", "get", "nodes", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || list.APIVersion != "v1" || len(list.Items) != 2 || list.Items[0].Kind != "Node" || list.Items[0].APIVersion != "v1" {
		t.Errorf("list %+v", list)
	}
	var n corev1.Node
	if err := json.Unmarshal([]byte(c.ok("", "get", "node", "worker-10-0-0-6", "-o", "json")), &n); err != nil || n.Name != "worker-10-0-0-6" || n.Kind != "Node" {
		t.Errorf("node %+v %v", n.ObjectMeta, err)
	}
	r := c.kubectl("", "get", "node", "nope", "-o", "json")
	if r.code != 1 || r.stderr != "Error from server (NotFound): nodes \"nope\" not found\n" {
		t.Errorf("missing node: %+v", r)
	}
	r = c.kubectl("", "get", "widgets")
	if r.code != 1 || !strings.Contains(r.stderr, `the server doesn't have a resource type "widgets"`) {
		t.Errorf("unknown type: %+v", r)
	}
	out := c.ok("", "get", "nodes")
	if !strings.Contains(out, "master-10-0-0-5   Ready    control-plane") || !strings.HasPrefix(out, "NAME") {
		t.Errorf("table:\n%s", out)
	}
	// Pods on a node, across namespaces.
	c.ok(webManifest, "apply", "-f", "-")
	var pods struct{ Items []corev1.Pod }
	if err := json.Unmarshal([]byte(c.ok("", "get", "pods", "--all-namespaces", "--field-selector=spec.nodeName=worker-10-0-0-6", "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Errorf("%d pods on the worker", len(pods.Items))
	}
	if err := json.Unmarshal([]byte(c.ok("", "get", "pods", "--all-namespaces", "--field-selector=spec.nodeName=master-10-0-0-5", "-o", "json")), &pods); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods on the master: %d %v", len(pods.Items), err)
	}
	// Secrets and service accounts by name and namespace.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "mgmtkit-vim", Namespace: "kube-system"}}
	if _, err := c.api.Create(c.ctx, sa); err != nil {
		t.Fatal(err)
	}
	var got corev1.ServiceAccount
	if err := json.Unmarshal([]byte(c.ok("", "get", "serviceaccount", "mgmtkit-vim", "--namespace=kube-system", "-o", "json")), &got); err != nil || got.Name != "mgmtkit-vim" {
		t.Errorf("service account %v %v", got.Name, err)
	}
	r = c.kubectl("", "get", "secret", "nope", "--namespace=kube-system", "-o", "json")
	if r.code != 1 || r.stderr != "Error from server (NotFound): secrets \"nope\" not found\n" {
		t.Errorf("missing secret: %+v", r)
	}
}

func TestKubectlKubeconfigPermissions(t *testing.T) {
	c := newCluster(t)
	// Without sudo the root-only admin.conf cannot be read.
	r := c.run(false, "", "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "get", "nodes")
	if r.code != 1 || r.stderr != "error: error loading config file \"/etc/kubernetes/admin.conf\": open /etc/kubernetes/admin.conf: permission denied\n" {
		t.Errorf("unreadable kubeconfig: %+v", r)
	}
	// No kubeconfig at all: the insecure default.
	r = c.run(true, "", "kubectl", "get", "nodes")
	if r.code != 1 || !strings.Contains(r.stderr, "The connection to the server localhost:8080 was refused") {
		t.Errorf("no kubeconfig: %+v", r)
	}
	// A server nothing answers at.
	if err := c.m.Server().FS().WriteFile("/root/other.conf", []byte(strings.Replace(adminConf, "10.0.0.5:6443", "10.0.0.9:6443", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r = c.run(true, "", "kubectl", "--kubeconfig", "/root/other.conf", "get", "nodes")
	if r.code != 1 || r.stderr != "The connection to the server 10.0.0.9:6443 was refused - did you specify the right host or port?\n" {
		t.Errorf("unreachable server: %+v", r)
	}
}

func TestKubectlCordonAndDelete(t *testing.T) {
	c := newCluster(t)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	if out := c.ok("", "cordon", "worker-10-0-0-6"); out != "node/worker-10-0-0-6 cordoned\n" {
		t.Errorf("cordon: %q", out)
	}
	if out := c.ok("", "cordon", "worker-10-0-0-6"); out != "node/worker-10-0-0-6 already cordoned\n" {
		t.Errorf("second cordon: %q", out)
	}
	o, _ := c.api.Get(c.ctx, kube.KindNode, "", "worker-10-0-0-6")
	if !o.(*corev1.Node).Spec.Unschedulable {
		t.Error("node not unschedulable")
	}
	if out := c.ok("", "uncordon", "worker-10-0-0-6"); out != "node/worker-10-0-0-6 uncordoned\n" {
		t.Errorf("uncordon: %q", out)
	}
	if out := c.ok("", "delete", "node", "worker-10-0-0-6", "--ignore-not-found"); out != "node \"worker-10-0-0-6\" deleted\n" {
		t.Errorf("delete: %q", out)
	}
	if out := c.ok("", "delete", "node", "worker-10-0-0-6", "--ignore-not-found"); out != "" {
		t.Errorf("delete again: %q", out)
	}
	r := c.kubectl("", "delete", "node", "worker-10-0-0-6")
	if r.code != 1 || r.stderr != "Error from server (NotFound): nodes \"worker-10-0-0-6\" not found\n" {
		t.Errorf("delete without --ignore-not-found: %+v", r)
	}
	r = c.kubectl("", "cordon", "nope")
	if r.code != 1 || r.stderr != "Error from server (NotFound): nodes \"nope\" not found\n" {
		t.Errorf("cordon missing: %+v", r)
	}
	r = c.kubectl("", "drain", "nope", "--bogus")
	if r.code != 1 || !strings.Contains(r.stderr, "unknown flag: --bogus") {
		t.Errorf("unknown flag: %+v", r)
	}
}

func TestKubectlApplyDiffDelete(t *testing.T) {
	c := newCluster(t)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	out := c.ok(webManifest, "apply", "-f", "-")
	if out != "deployment.apps/web created\npoddisruptionbudget.policy/web created\n" {
		t.Errorf("first apply: %q", out)
	}
	if out := c.ok(webManifest, "apply", "-f", "-"); out != "deployment.apps/web unchanged\npoddisruptionbudget.policy/web unchanged\n" {
		t.Errorf("second apply: %q", out)
	}
	if r := c.kubectl(webManifest, "diff", "-f", "-"); r.code != 0 || r.stdout != "" {
		t.Errorf("diff of an applied manifest: %+v", r)
	}
	changed := strings.Replace(webManifest, "replicas: 2", "replicas: 3", 1)
	r := c.kubectl(changed, "diff", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stdout, "-  replicas: 2\n+  replicas: 3\n") || !strings.Contains(r.stdout, "diff -u -N /tmp/LIVE-") {
		t.Errorf("diff of a change: %+v", r)
	}
	if out := c.ok(changed, "apply", "-f", "-"); out != "deployment.apps/web configured\npoddisruptionbudget.policy/web unchanged\n" {
		t.Errorf("apply of a change: %q", out)
	}
	if n := len(c.pods("web-")); n != 3 {
		t.Errorf("%d pods after scaling to 3", n)
	}
	// A field dropped from the manifest is removed from the live object;
	// one set by someone else stays.
	o, _ := c.api.Get(c.ctx, kube.KindDeployment, "default", "web")
	d := o.(*appsv1.Deployment)
	d.Labels = map[string]string{"added-by": "someone"}
	if _, err := c.api.Update(c.ctx, d); err != nil {
		t.Fatal(err)
	}
	withLabel := strings.Replace(changed, "    app: web\nspec:", "    app: web\n    tier: front\nspec:", 1)
	c.ok(withLabel, "apply", "-f", "-")
	c.ok(changed, "apply", "-f", "-")
	o, _ = c.api.Get(c.ctx, kube.KindDeployment, "default", "web")
	if l := o.GetLabels(); l["tier"] != "" || l["added-by"] != "someone" || l["app"] != "web" {
		t.Errorf("labels after three-way apply: %v", l)
	}
	// JSON manifests too.
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"kube-system"},"data":{"a":"1"}}`
	if out := c.ok(cm, "apply", "-f", "-"); out != "configmap/c created\n" {
		t.Errorf("json apply: %q", out)
	}
	// Unknown fields are refused as the API server's strict validation does.
	bad := strings.Replace(webManifest, "  replicas: 2\n", "  replicas: 2\n  replicaz: 2\n", 1)
	r = c.kubectl(bad, "apply", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stderr, `Error from server (BadRequest): error when patching "STDIN": Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.replicaz"`) {
		t.Errorf("unknown field: %+v", r)
	}
	// A kind the server does not serve.
	r = c.kubectl("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n", "apply", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stderr, `no matches for kind "Widget" in version "example.com/v1"`) {
		t.Errorf("unknown kind: %+v", r)
	}
	// delete -f.
	if out := c.ok(webManifest, "delete", "-f", "-", "--ignore-not-found"); out != "deployment.apps \"web\" deleted\npoddisruptionbudget.policy \"web\" deleted\n" {
		t.Errorf("delete -f: %q", out)
	}
	if out := c.ok(webManifest, "delete", "-f", "-", "--ignore-not-found"); out != "" {
		t.Errorf("delete -f again: %q", out)
	}
	if n := len(c.pods("web-")); n != 0 {
		t.Errorf("%d pods after deleting the deployment", n)
	}
}

func TestKubectlDrain(t *testing.T) {
	c := newCluster(t)
	c.node("master-10-0-0-5", "10.0.0.5", true)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	c.node("worker-10-0-0-7", "10.0.0.7", false)
	c.ok(strings.Replace(strings.SplitN(webManifest, "---", 2)[0], "replicas: 2", "replicas: 4", 1), "apply", "-f", "-")
	c.ok(cniManifest(t), "apply", "-f", "-")
	victim := "worker-10-0-0-6"
	var onVictim []string
	for _, p := range c.pods("web-") {
		if p.Spec.NodeName == victim {
			onVictim = append(onVictim, p.Name)
		}
	}
	if len(onVictim) != 2 {
		t.Fatalf("pods on %s: %v", victim, onVictim)
	}
	r := c.kubectl("", "drain", victim, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s")
	if r.code != 0 {
		t.Fatalf("drain: %+v", r)
	}
	for _, want := range []string{"node/" + victim + " cordoned\n", "evicting pod default/" + onVictim[0] + "\n", "pod/" + onVictim[1] + " evicted\n", "node/" + victim + " drained\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("drain stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.HasPrefix(r.stderr, "Warning: ignoring DaemonSet-managed Pods: kube-system/kube-flannel-ds-") {
		t.Errorf("drain stderr: %q", r.stderr)
	}
	pods := c.pods("web-")
	if len(pods) != 4 {
		t.Fatalf("%d web pods after drain", len(pods))
	}
	for _, p := range pods {
		if p.Spec.NodeName != "worker-10-0-0-7" {
			t.Errorf("pod %s on %s after draining %s", p.Name, p.Spec.NodeName, victim)
		}
	}
	// The flannel pod stays on the drained node.
	flannelOnVictim := false
	for _, p := range c.pods("kube-flannel-ds-") {
		flannelOnVictim = flannelOnVictim || p.Spec.NodeName == victim
	}
	if !flannelOnVictim {
		t.Error("DaemonSet pod evicted from the drained node")
	}
	// Draining again: nothing to evict.
	if r := c.kubectl("", "drain", victim, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s"); r.code != 0 || r.stdout != "node/"+victim+" already cordoned\nnode/"+victim+" drained\n" {
		t.Errorf("second drain: %+v", r)
	}
	// Without --ignore-daemonsets the DaemonSet pod is fatal.
	r = c.kubectl("", "drain", victim, "--delete-emptydir-data", "--timeout=300s")
	if r.code != 1 || !strings.Contains(r.stderr, "error: cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/kube-flannel-ds-") {
		t.Errorf("drain without --ignore-daemonsets: %+v", r)
	}
}

func TestKubectlDrainRefusals(t *testing.T) {
	c := newCluster(t)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	c.node("worker-10-0-0-7", "10.0.0.7", false)
	// An unmanaged pod with an emptyDir on worker 6.
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:   "worker-10-0-0-6",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if _, err := c.api.Create(c.ctx, bare); err != nil {
		t.Fatal(err)
	}
	r := c.kubectl("", "drain", "worker-10-0-0-6", "--ignore-daemonsets", "--timeout=300s")
	if r.code != 1 || !strings.Contains(r.stderr, "error: cannot delete Pods with local storage (use --delete-emptydir-data to override): default/bare\n") {
		t.Errorf("drain with an emptyDir pod: %+v", r)
	}
	r = c.kubectl("", "drain", "worker-10-0-0-6", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s")
	if r.code != 1 || !strings.HasSuffix(r.stderr, "There are pending nodes to be drained:\n worker-10-0-0-6\nerror: cannot delete Pods that declare no controller (use --force to override): default/bare\n") {
		t.Errorf("drain with an unmanaged pod: %+v", r)
	}
	// A PDB that allows no disruption: the drain fails naming the pods
	// and the node stays cordoned.
	c.ok("", "uncordon", "worker-10-0-0-6")
	c.ok(webManifest, "apply", "-f", "-")
	r = c.kubectl("", "drain", "worker-10-0-0-6", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=300s")
	if r.code != 1 {
		t.Fatalf("drain under a PDB succeeded: %+v", r)
	}
	var webOn6 []string
	for _, p := range c.pods("web-") {
		if p.Spec.NodeName == "worker-10-0-0-6" {
			webOn6 = append(webOn6, p.Name)
		}
	}
	if len(webOn6) == 0 {
		t.Fatal("no web pod on worker 6")
	}
	for _, want := range []string{
		fmt.Sprintf("error when evicting pods/%q -n \"default\" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.\n", webOn6[0]),
		"There are pending pods in node \"worker-10-0-0-6\" when an error occurred: ",
		"pod/" + webOn6[0] + "\n",
		fmt.Sprintf("error when evicting pods/%q -n \"default\": global timeout reached: 5m0s", webOn6[0]),
		"There are pending nodes to be drained:\n worker-10-0-0-6\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("drain stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "pod/bare evicted\n") {
		t.Errorf("the forced bare pod was not evicted:\n%s", r.stdout)
	}
	o, _ := c.api.Get(c.ctx, kube.KindNode, "", "worker-10-0-0-6")
	if !o.(*corev1.Node).Spec.Unschedulable {
		t.Error("node not left cordoned")
	}
}

func TestKubectlExecAndVersion(t *testing.T) {
	c := newCluster(t)
	c.node("master-10-0-0-5", "10.0.0.5", false)
	etcd := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-master-10-0-0-5", Namespace: "kube-system",
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}},
		Spec:   corev1.PodSpec{NodeName: "master-10-0-0-5", HostNetwork: true, Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.6.5-0"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if _, err := c.api.Create(c.ctx, etcd); err != nil {
		t.Fatal(err)
	}
	args := []string{"exec", "--namespace=kube-system", "etcd-master-10-0-0-5", "--", "etcdctl", "--endpoints=https://127.0.0.1:2379", "member", "list", "-w", "json"}
	if out := c.ok("", args...); out != "{\"members\":[]}\n" {
		t.Errorf("exec: %q", out)
	}
	if strings.Join(c.exec, " ") != "etcd-master-10-0-0-5 etcdctl --endpoints=https://127.0.0.1:2379 member list -w json" {
		t.Errorf("handler got %v", c.exec)
	}
	r := c.kubectl("", "exec", "--namespace=kube-system", "etcd-master-10-0-0-5", "--", "nope")
	if r.code != 126 || !strings.HasSuffix(r.stderr, "command terminated with exit code 126\n") {
		t.Errorf("exec of a missing program: %+v", r)
	}
	r = c.kubectl("", "exec", "--namespace=kube-system", "etcd-master-10-0-0-9", "--", "etcdctl")
	if r.code != 1 || r.stderr != "Error from server (NotFound): pods \"etcd-master-10-0-0-9\" not found\n" {
		t.Errorf("exec in a missing pod: %+v", r)
	}
	if out := c.ok("", "version"); !strings.Contains(out, "Server Version: v1.36.6") {
		t.Errorf("version: %q", out)
	}
}

func TestKubectlBearerToken(t *testing.T) {
	c := newCluster(t)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	vim := `apiVersion: v1
kind: ServiceAccount
metadata:
  name: mgmtkit-vim
  namespace: kube-system
---
apiVersion: v1
kind: Secret
metadata:
  name: mgmtkit-vim-token
  namespace: kube-system
  annotations:
    kubernetes.io/service-account.name: mgmtkit-vim
type: kubernetes.io/service-account-token
`
	c.ok(vim, "apply", "-f", "-")
	var sec corev1.Secret
	if err := json.Unmarshal([]byte(c.ok("", "get", "secret", "mgmtkit-vim-token", "--namespace=kube-system", "-o", "json")), &sec); err != nil {
		t.Fatal(err)
	}
	token := string(sec.Data["token"])
	if token == "" || string(sec.Data["ca.crt"]) == "" {
		t.Fatalf("token secret %v", sec.Data)
	}
	conf := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.5:6443\n  name: k\ncontexts:\n- context:\n    cluster: k\n    user: vim\n  name: vim\ncurrent-context: vim\nusers:\n- name: vim\n  user:\n    token: %s\n", token)
	if err := c.m.Server().FS().WriteFile("/root/vim.conf", []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	vimctl := func(args ...string) kcResult {
		return c.run(true, "", append([]string{"kubectl", "--kubeconfig=/root/vim.conf"}, args...)...)
	}
	r := vimctl("get", "nodes", "-o", "name")
	if r.code != 1 || r.stderr != "Error from server (Forbidden): nodes is forbidden: User \"system:serviceaccount:kube-system:mgmtkit-vim\" cannot list resource \"nodes\" in API group \"\" at the cluster scope\n" {
		t.Errorf("without a binding: %+v", r)
	}
	c.ok("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: mgmtkit-vim\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: mgmtkit-vim\n  namespace: kube-system\n", "apply", "-f", "-")
	if r := vimctl("get", "nodes", "-o", "name"); r.code != 0 || r.stdout != "node/worker-10-0-0-6\n" {
		t.Errorf("with cluster-admin: %+v", r)
	}
	c.ok(vim, "delete", "-f", "-", "--ignore-not-found")
	if r := vimctl("get", "nodes"); r.code != 1 || r.stderr != "error: You must be logged in to the server (Unauthorized)\n" {
		t.Errorf("after deleting the secret: %+v", r)
	}
}

// cniManifest is the sample package's pod network manifest.
func cniManifest(t *testing.T) string {
	t.Helper()
	b, err := fs.ReadFile(samples.VNFPackage(), "Files/kubernetes/cni.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSampleCNIGivesPodNetwork(t *testing.T) {
	c := newCluster(t)
	c.node("master-10-0-0-5", "10.0.0.5", true)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	for _, n := range []string{"master-10-0-0-5", "worker-10-0-0-6"} {
		if ok, err := kube.PodNetworkReady(c.ctx, c.api, n); ok || err != nil {
			t.Errorf("pod network on %s before the CNI: %v %v", n, ok, err)
		}
	}
	// A new object's diff is all additions.
	r := c.kubectl(cniManifest(t), "diff", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stdout, "@@ -0,0 +1,") || !strings.Contains(r.stdout, "/apps.v1.DaemonSet.kube-system.kube-flannel-ds\n") {
		t.Errorf("diff before apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := c.ok(cniManifest(t), "apply", "-f", "-")
	want := "serviceaccount/flannel created\nclusterrole.rbac.authorization.k8s.io/flannel created\n" +
		"clusterrolebinding.rbac.authorization.k8s.io/flannel created\nconfigmap/kube-flannel-cfg created\ndaemonset.apps/kube-flannel-ds created\n"
	if out != want {
		t.Errorf("apply:\n%s", out)
	}
	if out := c.ok(cniManifest(t), "apply", "-f", "-"); strings.Count(out, " unchanged\n") != 5 {
		t.Errorf("second apply:\n%s", out)
	}
	if r := c.kubectl(cniManifest(t), "diff", "-f", "-"); r.code != 0 || r.stdout != "" {
		t.Errorf("diff after apply: %+v", r)
	}
	for _, n := range []string{"master-10-0-0-5", "worker-10-0-0-6"} {
		if ok, err := kube.PodNetworkReady(c.ctx, c.api, n); !ok || err != nil {
			t.Errorf("pod network on %s: %v %v", n, ok, err)
		}
	}
	// The flannel service account may get nodes once the binding exists.
	if ok, _ := c.api.Authorize(c.ctx, "system:serviceaccount:kube-system:flannel", []string{"system:serviceaccounts"}, "list", "", "nodes", ""); !ok {
		t.Error("flannel may not list nodes")
	}
	if ok, _ := c.api.Authorize(c.ctx, "system:serviceaccount:kube-system:flannel", []string{"system:serviceaccounts"}, "delete", "", "nodes", ""); ok {
		t.Error("flannel may delete nodes")
	}
}

func TestKubectlDrainDeadNode(t *testing.T) {
	c := newCluster(t)
	c.node("worker-10-0-0-6", "10.0.0.6", false)
	c.node("worker-10-0-0-7", "10.0.0.7", false)
	c.ok(strings.SplitN(webManifest, "---", 2)[0], "apply", "-f", "-")
	var dead string
	for _, p := range c.pods("web-") {
		dead = p.Spec.NodeName
	}
	// The kubelet of that node stops reporting: Ready goes Unknown.
	o, _ := c.api.Get(c.ctx, kube.KindNode, "", dead)
	n := o.(*corev1.Node)
	n.Status.Conditions[0].Status = corev1.ConditionUnknown
	if _, err := c.api.Update(c.ctx, n); err != nil {
		t.Fatal(err)
	}
	var stuck string
	for _, p := range c.pods("web-") {
		if p.Spec.NodeName == dead {
			stuck = p.Name
		}
	}
	r := c.kubectl("", "drain", dead, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s")
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("error when waiting for pod %q in namespace \"default\" to terminate: global timeout reached: 5m0s", stuck)) {
		t.Errorf("drain of a dead node: %+v", r)
	}
	if out := c.ok("", "get", "pods"); !strings.Contains(out, stuck+"   1/1     Terminating") {
		t.Errorf("pods:\n%s", out)
	}
	// Its replacement runs on the other worker; deleting the node lets
	// pod GC remove the stuck pod.
	running := 0
	for _, p := range c.pods("web-") {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != dead {
			running++
		}
	}
	if running != 2 {
		t.Errorf("%d web pods running elsewhere", running)
	}
	c.ok("", "delete", "node", dead, "--ignore-not-found")
	if n := len(c.pods("web-")); n != 2 {
		t.Errorf("%d web pods after deleting the dead node", n)
	}
}

func TestKubectlApplyServerFields(t *testing.T) {
	c := newCluster(t)
	// As yaml.Marshal of a typed object writes it.
	m := `apiVersion: v1
kind: ServiceAccount
metadata:
  creationTimestamp: null
  name: mgmtkit-vim
  namespace: kube-system
---
apiVersion: v1
kind: Secret
metadata:
  annotations:
    kubernetes.io/service-account.name: mgmtkit-vim
  creationTimestamp: null
  name: mgmtkit-vim-token
  namespace: kube-system
type: kubernetes.io/service-account-token
---
apiVersion: apps/v1
kind: Deployment
metadata:
  creationTimestamp: null
  name: web
  namespace: default
spec:
  selector:
    matchLabels:
      app: web
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: web
    spec:
      containers:
      - image: nginx:1.27
        name: nginx
        resources: {}
status: {}
`
	if out := c.ok(m, "apply", "-f", "-"); strings.Count(out, " created\n") != 3 {
		t.Errorf("apply: %q", out)
	}
	if out := c.ok(m, "apply", "-f", "-"); strings.Count(out, " unchanged\n") != 3 {
		t.Errorf("second apply: %q", out)
	}
	if r := c.kubectl(m, "diff", "-f", "-"); r.code != 0 || r.stdout != "" {
		t.Errorf("diff: %+v", r)
	}
}

func TestKubectlAppliesTheSamplePersistentVolumes(t *testing.T) {
	c := newCluster(t)
	for _, n := range []string{"nfs-pv1", "nfs-pv2", "nfs-pv3"} {
		b, err := fs.ReadFile(samples.VNFPackage(), "Files/kubernetes/"+n+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if out := c.ok(string(b), "apply", "-f", "-"); out != "persistentvolume/"+n+" created\n" {
			t.Errorf("apply %s: %q", n, out)
		}
		if out := c.ok(string(b), "apply", "-f", "-"); out != "persistentvolume/"+n+" unchanged\n" {
			t.Errorf("re-apply %s: %q", n, out)
		}
	}
}

func TestKubectlApplyErrors(t *testing.T) {
	c := newCluster(t)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: nope\n"
	r := c.kubectl(cm, "apply", "-f", "-")
	if r.code != 1 || r.stderr != "Error from server (NotFound): error when creating \"STDIN\": namespaces \"nope\" not found\n" {
		t.Errorf("missing namespace: %+v", r)
	}
	r = c.kubectl(cm, "apply", "-f", "-", "--namespace=default")
	if r.code != 1 || !strings.Contains(r.stderr, `the namespace from the provided object "nope" does not match the namespace "default"`) {
		t.Errorf("namespace mismatch: %+v", r)
	}
	r = c.kubectl("metadata:\n  name: x\n", "apply", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "error validating data: [apiVersion not set, kind not set]") {
		t.Errorf("no kind: %+v", r)
	}
	r = c.kubectl("", "apply", "-f", "-")
	if r.code != 1 || r.stderr != "error: no objects passed to apply\n" {
		t.Errorf("empty manifest: %+v", r)
	}
	r = c.kubectl(cm, "diff", "-f", "-")
	if r.code != 2 {
		t.Errorf("diff error status: %+v", r)
	}
	// The namespace defaults to the context's (default).
	if out := c.ok("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", "apply", "-f", "-"); out != "configmap/c created\n" {
		t.Errorf("apply without namespace: %q", out)
	}
	if _, err := c.api.Get(c.ctx, kube.KindConfigMap, "default", "c"); err != nil {
		t.Error(err)
	}
}

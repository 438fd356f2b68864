package kubeapi_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// deadServerKubeconfig points kubectl at a port nothing listens on.
const deadServerKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: not-a-secret
contexts:
- name: dead
  context: {cluster: dead, user: u}
current-context: dead
`

// Every kubectl command line the steps run, replayed against the real
// kubectl (when installed) with a kubeconfig whose server is down: kubectl
// parses its flags before it calls the server, so each must fail only
// for want of the server, never with "unknown flag" or a bad value
// (--timeout=300s, --field-selector=..., -f -, --ignore-not-found, exec's
// "--" before etcdctl's own flags, label's and annotate's --overwrite
// and KEY=VALUE/KEY- pairs, taint's KEY=VALUE:EFFECT and KEY-). kubectl
// diff's failure is status 2, as Kubectl.Apply expects (above 1: an
// error, not a difference).
func TestKubectlCommandLinesParseWithTheRealKubectl(t *testing.T) {
	kubectlPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not installed: %v", err)
	}
	const worker = "worker-10-0-0-12"
	n := scripted.New(t, "master-10-0-0-5", "kubectl")

	// Drain and delete.
	c := &drainCluster{t: t, exists: true, pods: []corev1.Pod{pod("default", "web-1", worker, "ReplicaSet", nil)}}
	c.drain = func(bool) scripted.Reply { return scripted.Reply{Stderr: "error: timeout", Code: 1} }
	n.Set("kubectl", c.script(worker))
	_, _ = kubeapi.DrainNode(n.Ctx, n.Kubectl(), worker, kubeapi.DrainOptions{Force: true})
	_, _ = kubeapi.DeleteNode(n.Ctx, n.Kubectl(), worker)
	// VIM credentials (apply, diff, get secret, delete).
	ca, _ := scripted.TestCA(t)
	v := &vimCluster{t: t, ca: ca, objects: map[string]bool{}}
	n.Set("kubectl", v.script())
	o := kubeapi.VIMOptions{Name: "vim", Endpoint: "https://10.0.0.5:6443"}
	if _, _, err := kubeapi.CreateVIMCredentials(n.Ctx, n.Kubectl(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := kubeapi.DeleteVIMCredentials(n.Ctx, n.Kubectl(), o); err != nil {
		t.Fatal(err)
	}
	// Listing.
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		return scripted.OK(`{"apiVersion":"v1","kind":"List","items":[]}`)
	})
	_, _ = n.Kubectl().Nodes(n.Ctx)
	// Labels, annotations (a value with spaces, '=' and a newline), taints.
	n.Set("kubectl", metaCluster(t))
	k := n.Kubectl()
	for _, step := range []func() (lcm.Result, error){
		func() (lcm.Result, error) {
			return k.Label(n.Ctx, "configmap", "nfs", "c", map[string]string{"app.kubernetes.io/name": "nfs", "empty": ""}, "old")
		},
		func() (lcm.Result, error) {
			return k.Annotate(n.Ctx, "configmap", "nfs", "c", map[string]string{"mgmtkit.io/note": "a = b\nc"}, "note")
		},
		func() (lcm.Result, error) {
			return k.Taint(n.Ctx, "worker-10-0-0-12", []corev1.Taint{
				{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule},
				{Key: "example.com/x", Effect: corev1.TaintEffectPreferNoSchedule},
			}, corev1.Taint{Key: "gpu"})
		},
		func() (lcm.Result, error) {
			return k.Taint(n.Ctx, "worker-10-0-0-12", nil, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoExecute})
		},
	} {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
	}
	// Get, delete, and exec with the program's own flags after "--".
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		return scripted.OK(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
	})
	var cm corev1.ConfigMap
	_, _ = k.Get(n.Ctx, &cm, "configmaps", "nfs", "c")
	_, _ = k.Get(n.Ctx, &cm, "deployments.apps", "", "c")
	_, _ = k.Delete(n.Ctx, "configmap", "nfs", "c")
	_, _ = k.Exec(n.Ctx, "kube-system", "etcd-master-10-0-0-5", []string{"etcdctl", "--endpoints=https://127.0.0.1:2379", "member", "list", "-w", "json"}, kubeapi.ExecOptions{})
	_, _ = k.Exec(n.Ctx, "kube-system", "etcd-master-10-0-0-5", []string{"sh", "-c", "cat"}, kubeapi.ExecOptions{Container: "etcd", Stdin: strings.NewReader("x")})

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(deadServerKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, inv := range n.Invocations("kubectl") {
		if seen[inv.Line()] {
			continue
		}
		seen[inv.Line()] = true
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig=" + kubeconfig}, inv.Args...)...)
		cmd.Stdin = strings.NewReader(inv.Stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("kubectl %s: %v, want it to fail for the server", inv.Line(), err)
			continue
		}
		msg := stderr.String()
		for _, bad := range []string{"unknown flag", "unknown shorthand", "invalid argument", "flag needs an argument", "unknown command", "See 'kubectl"} {
			if strings.Contains(msg, bad) {
				t.Errorf("kubectl %s: real kubectl refuses the command line: %s", inv.Line(), msg)
			}
		}
		if !strings.Contains(msg, "connection refused") && !strings.Contains(msg, "was refused") {
			t.Errorf("kubectl %s: exit %d without reaching for the server: %s", inv.Line(), ee.ExitCode(), msg)
		}
		if inv.Args[0] == "diff" && ee.ExitCode() != 2 {
			t.Errorf("kubectl diff failing: exit %d, want 2", ee.ExitCode())
		}
	}
	if len(seen) < 8 {
		t.Fatalf("only %d command lines: %q", len(seen), n.Lines("kubectl"))
	}
	t.Logf("%d kubectl command lines parsed by %s", len(seen), kubectlPath)
}

package kubeadm_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

func initOptions() kubeadm.InitOptions {
	return kubeadm.InitOptions{
		NodeName:         "master-10-0-0-5",
		AdvertiseAddress: "10.0.0.5",
		Endpoint:         "10.0.0.5:6443",
		PodCIDR:          netip.MustParsePrefix("192.168.0.0/16"),
		ServiceCIDR:      netip.MustParsePrefix("10.96.0.0/12"),
		Version:          "1.36",
	}
}

// rootOnly checks that file exists, root's, mode 0600, and returns it.
func rootOnly(t *testing.T, fsys *sshtest.FS, file string) []byte {
	t.Helper()
	fi, err := fsys.Stat(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if uid, gid := sshtest.Owner(fi); uid != 0 || gid != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: owner %d:%d mode %v, want root:root 0600", file, uid, gid, fi.Mode().Perm())
	}
	b, err := fsys.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// initScript is kubeadm's version and init on a node: init requires its
// configuration file (root's, 0600) and writes what kubeadm init writes
// that the steps look at.
func initScript(t *testing.T, seen *[]byte) script {
	return func(inv invocation, fsys *sshtest.FS) reply {
		switch inv.line() {
		case "version -o short":
			return ok("v1.36.2\n")
		case "init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs --skip-token-print --skip-certificate-key-print":
			if inv.user != "root" {
				return reply{stderr: "[ERROR IsPrivilegedUser]: user is not running as root\n", code: 1}
			}
			*seen = rootOnly(t, fsys, kubeadm.InitConfigFile)
			for _, f := range []string{kubeapi.AdminKubeconfig, kubeadm.APIServerManifest, kubeadm.KubeletKubeconfig, kubeadm.CACert} {
				must[struct{}](t)(struct{}{}, fsys.MkdirAll(f[:strings.LastIndexByte(f, '/')], 0o755))
				must[struct{}](t)(struct{}{}, fsys.WriteFile(f, []byte("x"), 0o600))
			}
			return ok("Your Kubernetes control-plane has initialized successfully!\n[upload-certs] Using certificate key:\nsecretsecret\n")
		}
		return reply{stderr: "unexpected kubeadm " + inv.line(), code: 2}
	}
}

func TestInitControlPlane(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	var cfg []byte
	registered := false
	n.set(func(inv invocation, _ *sshtest.FS) reply {
		if inv.line() == "get node master-10-0-0-5 -o json" {
			if registered {
				return ok(asJSON(t, readyNode("master-10-0-0-5", corev1.ConditionFalse, "KubeletNotReady", "cni plugin not initialized")))
			}
			return notFound("nodes", "master-10-0-0-5")
		}
		return reply{code: 2}
	}, initScript(t, &cfg))

	res, err := kubeadm.InitControlPlane(n.ctx, n.h, initOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !strings.Contains(res.Detail, "v1.36.2") {
		t.Fatalf("result %v", res)
	}
	if got, want := n.lines("kubeadm"), []string{"version -o short", "init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs --skip-token-print --skip-certificate-key-print"}; !slices.Equal(got, want) {
		t.Fatalf("kubeadm runs %q, want %q", got, want)
	}
	for _, want := range []string{"kubernetesVersion: v1.36.2", "controlPlaneEndpoint: 10.0.0.5:6443", "name: master-10-0-0-5", "advertiseAddress: 10.0.0.5", "podSubnet: 192.168.0.0/16", "serviceSubnet: 10.96.0.0/12", "cgroupDriver: systemd"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("init.yaml lacks %q:\n%s", want, cfg)
		}
	}
	// Its standard output (the certificate key) is nowhere.
	if strings.Contains(res.String(), "secretsecret") {
		t.Fatal("init's output in the result")
	}

	// Initialised and registered: nothing runs but the checks.
	registered = true
	n.reset()
	res, err = kubeadm.InitControlPlane(n.ctx, n.h, initOptions())
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("second run: %v, %v; want unchanged", res, err)
	}
	if runs := n.lines("kubeadm"); len(runs) != 0 {
		t.Fatalf("second run ran kubeadm %q", runs)
	}
}

func TestInitControlPlaneRefusesHalfInitialisedNodes(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	var cfg []byte
	n.set(func(inv invocation, _ *sshtest.FS) reply { return notFound("nodes", "master-10-0-0-5") }, initScript(t, &cfg))
	fsys := n.srv.FS()

	// A joined worker (kubelet.conf, no control plane).
	must[struct{}](t)(struct{}{}, fsys.MkdirAll("/etc/kubernetes", 0o755))
	must[struct{}](t)(struct{}{}, fsys.WriteFile(kubeadm.KubeletKubeconfig, []byte("x"), 0o600))
	_, err := kubeadm.InitControlPlane(n.ctx, n.h, initOptions())
	if err == nil || !strings.Contains(err.Error(), kubeadm.KubeletKubeconfig) || !strings.Contains(err.Error(), "reset") {
		t.Fatalf("joined node: %v", err)
	}
	// A control plane whose node is not registered.
	must[struct{}](t)(struct{}{}, fsys.MkdirAll("/etc/kubernetes/manifests", 0o755))
	must[struct{}](t)(struct{}{}, fsys.WriteFile(kubeapi.AdminKubeconfig, []byte("x"), 0o600))
	must[struct{}](t)(struct{}{}, fsys.WriteFile(kubeadm.APIServerManifest, []byte("x"), 0o600))
	_, err = kubeadm.InitControlPlane(n.ctx, n.h, initOptions())
	if err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("unregistered control plane: %v", err)
	}
	if runs := n.lines("kubeadm"); len(runs) != 0 {
		t.Fatalf("kubeadm ran: %q", runs)
	}
}

func TestInitControlPlaneFailure(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	n.set(nil, func(inv invocation, _ *sshtest.FS) reply {
		// kubeadm's preflight (cmd/kubeadm/app/preflight/checks.go,
		// SwapCheck): errors on stderr, exit status 1.
		return reply{stderr: "error execution phase preflight: [preflight] Some fatal errors occurred:\n\t[ERROR Swap]: swap is supported for cgroup v2 only...\n", code: 1}
	})
	o := initOptions()
	o.Version = "1.36.4"
	res, err := kubeadm.InitControlPlane(n.ctx, n.h, o)
	if err == nil || !strings.Contains(err.Error(), "[ERROR Swap]") || !strings.Contains(err.Error(), "master-10-0-0-5") {
		t.Fatalf("preflight failure: %v", err)
	}
	// A patch version is written as is: no version probe.
	if got := n.lines("kubeadm"); len(got) != 1 || !strings.HasPrefix(got[0], "init ") {
		t.Fatalf("kubeadm runs %q", got)
	}
	if cfg := rootOnly(t, n.srv.FS(), kubeadm.InitConfigFile); !strings.Contains(string(cfg), "kubernetesVersion: v1.36.4") {
		t.Fatalf("init.yaml:\n%s", cfg)
	}
	if !res.Changed {
		t.Fatalf("result %v: init.yaml was written", res)
	}
}

func TestInitControlPlaneVersionMismatch(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	n.set(nil, func(inv invocation, _ *sshtest.FS) reply { return ok("v1.35.9\n") })
	_, err := kubeadm.InitControlPlane(n.ctx, n.h, initOptions())
	if err == nil || !strings.Contains(err.Error(), "v1.35.9") {
		t.Fatalf("mismatch: %v", err)
	}
	if got := n.lines("kubeadm"); !slices.Equal(got, []string{"version -o short"}) {
		t.Fatalf("kubeadm runs %q", got)
	}
}

func TestInitControlPlaneBadOptions(t *testing.T) {
	n := newNode(t, "master-10-0-0-5")
	for field, mutate := range map[string]func(*kubeadm.InitOptions){
		"InitOptions.NodeName":         func(o *kubeadm.InitOptions) { o.NodeName = "Master_1" },
		"InitOptions.AdvertiseAddress": func(o *kubeadm.InitOptions) { o.AdvertiseAddress = "master" },
		"InitOptions.Endpoint":         func(o *kubeadm.InitOptions) { o.Endpoint = "10.0.0.5" },
		"InitOptions.PodCIDR":          func(o *kubeadm.InitOptions) { o.PodCIDR = netip.Prefix{} },
		"InitOptions.ServiceCIDR":      func(o *kubeadm.InitOptions) { o.ServiceCIDR = netip.MustParsePrefix("192.168.3.0/24") },
		"InitOptions.Version":          func(o *kubeadm.InitOptions) { o.Version = "1.20" },
		"InitOptions.CertSANs[1]":      func(o *kubeadm.InitOptions) { o.CertSANs = []string{"ok.example", "a b"} },
	} {
		o := initOptions()
		mutate(&o)
		_, err := kubeadm.InitControlPlane(n.ctx, n.h, o)
		paramsError(t, err, field)
	}
	if c := n.commands(); len(c) != 0 {
		t.Fatalf("commands for bad options: %q", c)
	}
}

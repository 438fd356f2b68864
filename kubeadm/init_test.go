package kubeadm_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
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
func initScript(t *testing.T, seen *[]byte) scripted.Script {
	return func(inv scripted.Invocation, fsys *sshtest.FS) scripted.Reply {
		switch inv.Line() {
		case "version -o short":
			return scripted.OK("v1.36.2\n")
		case "init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs --skip-token-print --skip-certificate-key-print":
			if inv.User != "root" {
				return scripted.Reply{Stderr: "[ERROR IsPrivilegedUser]: user is not running as root\n", Code: 1}
			}
			*seen = rootOnly(t, fsys, kubeadm.InitConfigFile)
			for _, f := range []string{kubeapi.AdminKubeconfig, kubeadm.APIServerManifest, kubeadm.KubeletKubeconfig, kubeadm.CACert} {
				scripted.Must[struct{}](t)(struct{}{}, fsys.MkdirAll(f[:strings.LastIndexByte(f, '/')], 0o755))
				scripted.Must[struct{}](t)(struct{}{}, fsys.WriteFile(f, []byte("x"), 0o600))
			}
			return scripted.OK("Your Kubernetes control-plane has initialized successfully!\n[upload-certs] Using certificate key:\nsecretsecret\n")
		}
		return scripted.Reply{Stderr: "unexpected kubeadm " + inv.Line(), Code: 2}
	}
}

func TestInitControlPlane(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	var cfg []byte
	registered := false
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		if inv.Line() == "get node master-10-0-0-5 -o json" {
			if registered {
				return scripted.OK(scripted.AsJSON(t, scripted.ReadyNode("master-10-0-0-5", corev1.ConditionFalse, "KubeletNotReady", "cni plugin not initialized")))
			}
			return scripted.NotFound("nodes", "master-10-0-0-5")
		}
		return scripted.Reply{Code: 2}
	})
	n.Set("kubeadm", initScript(t, &cfg))

	res, err := kubeadm.InitControlPlane(n.Ctx, n.Host, initOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !strings.Contains(res.Detail, "v1.36.2") {
		t.Fatalf("result %v", res)
	}
	if got, want := n.Lines("kubeadm"), []string{"version -o short", "init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs --skip-token-print --skip-certificate-key-print"}; !slices.Equal(got, want) {
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
	n.Reset()
	res, err = kubeadm.InitControlPlane(n.Ctx, n.Host, initOptions())
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("second run: %v, %v; want unchanged", res, err)
	}
	if runs := n.Lines("kubeadm"); len(runs) != 0 {
		t.Fatalf("second run ran kubeadm %q", runs)
	}
}

func TestInitControlPlaneRefusesHalfInitialisedNodes(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	var cfg []byte
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		return scripted.NotFound("nodes", "master-10-0-0-5")
	})
	n.Set("kubeadm", initScript(t, &cfg))
	fsys := n.Server.FS()

	// A joined worker (kubelet.conf, no control plane).
	scripted.Must[struct{}](t)(struct{}{}, fsys.MkdirAll("/etc/kubernetes", 0o755))
	scripted.Must[struct{}](t)(struct{}{}, fsys.WriteFile(kubeadm.KubeletKubeconfig, []byte("x"), 0o600))
	_, err := kubeadm.InitControlPlane(n.Ctx, n.Host, initOptions())
	if err == nil || !strings.Contains(err.Error(), kubeadm.KubeletKubeconfig) || !strings.Contains(err.Error(), "reset") {
		t.Fatalf("joined node: %v", err)
	}
	// A control plane whose node is not registered.
	scripted.Must[struct{}](t)(struct{}{}, fsys.MkdirAll("/etc/kubernetes/manifests", 0o755))
	scripted.Must[struct{}](t)(struct{}{}, fsys.WriteFile(kubeapi.AdminKubeconfig, []byte("x"), 0o600))
	scripted.Must[struct{}](t)(struct{}{}, fsys.WriteFile(kubeadm.APIServerManifest, []byte("x"), 0o600))
	_, err = kubeadm.InitControlPlane(n.Ctx, n.Host, initOptions())
	if err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("unregistered control plane: %v", err)
	}
	if runs := n.Lines("kubeadm"); len(runs) != 0 {
		t.Fatalf("kubeadm ran: %q", runs)
	}
}

func TestInitControlPlaneFailure(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	n.Set("kubeadm", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		// kubeadm's preflight (cmd/kubeadm/app/preflight/checks.go,
		// SwapCheck): errors on stderr, exit status 1.
		return scripted.Reply{Stderr: "error execution phase preflight: [preflight] Some fatal errors occurred:\n\t[ERROR Swap]: swap is supported for cgroup v2 only...\n", Code: 1}
	})
	o := initOptions()
	o.Version = "1.36.4"
	res, err := kubeadm.InitControlPlane(n.Ctx, n.Host, o)
	if err == nil || !strings.Contains(err.Error(), "[ERROR Swap]") || !strings.Contains(err.Error(), "master-10-0-0-5") {
		t.Fatalf("preflight failure: %v", err)
	}
	// A patch version is written as is: no version probe.
	if got := n.Lines("kubeadm"); len(got) != 1 || !strings.HasPrefix(got[0], "init ") {
		t.Fatalf("kubeadm runs %q", got)
	}
	if cfg := rootOnly(t, n.Server.FS(), kubeadm.InitConfigFile); !strings.Contains(string(cfg), "kubernetesVersion: v1.36.4") {
		t.Fatalf("init.yaml:\n%s", cfg)
	}
	if !res.Changed {
		t.Fatalf("result %v: init.yaml was written", res)
	}
}

func TestInitControlPlaneVersionMismatch(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	n.Set("kubeadm", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply { return scripted.OK("v1.35.9\n") })
	_, err := kubeadm.InitControlPlane(n.Ctx, n.Host, initOptions())
	if err == nil || !strings.Contains(err.Error(), "v1.35.9") {
		t.Fatalf("mismatch: %v", err)
	}
	if got := n.Lines("kubeadm"); !slices.Equal(got, []string{"version -o short"}) {
		t.Fatalf("kubeadm runs %q", got)
	}
}

func TestInitControlPlaneBadOptions(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
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
		_, err := kubeadm.InitControlPlane(n.Ctx, n.Host, o)
		scripted.ParamsError(t, err, field)
	}
	if c := n.Commands(); len(c) != 0 {
		t.Fatalf("commands for bad options: %q", c)
	}
}

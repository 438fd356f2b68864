package kubeadm_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// k8sRepoCloud is a cloud whose catalog has pkgs.k8s.io's v1.36
// repository: kubeadm, kubelet and kubectl 1.36.2 and 1.36.3 ("-1.1",
// the OBS revision), cri-tools and kubernetes-cni, with the
// dependencies of kubernetes/release cmd/krel/templates/latest
// (metadata.yaml, kubelet.spec: kubelet needs kubernetes-cni, util-linux
// and mount; kubeadm from 1.32 nothing). A stand-in until the simulated
// cloud's own catalog has them.
func k8sRepoCloud() sim.Options {
	return sim.Options{Catalog: func() *ubuntu.Catalog {
		c := ubuntu.DefaultCatalog()
		repo := kubeadm.KubernetesRepo("1.36")
		c.Add(ubuntu.Package{Name: "cri-tools", Version: "1.36.0-1.1", Repo: repo})
		c.Add(ubuntu.Package{Name: "kubernetes-cni", Version: "1.8.0-1.1", Repo: repo})
		for _, v := range []string{"1.36.2-1.1", "1.36.3-1.1"} {
			c.Add(ubuntu.Package{Name: "kubectl", Version: v, Repo: repo})
			c.Add(ubuntu.Package{Name: "kubelet", Version: v, Repo: repo, Depends: []string{"kubernetes-cni", "util-linux", "mount"},
				Units: []ubuntu.Unit{{Name: "kubelet.service"}}})
			c.Add(ubuntu.Package{Name: "kubeadm", Version: v, Repo: repo})
		}
		return c
	}}
}

// The nodes' only way out is an HTTP proxy with a password: curl fetches
// the repository key through it (the proxy URL reaching curl on stdin),
// apt goes through PrepareNode's apt proxy.
func TestInstallKubernetesPinnedThroughAProxy(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	n.cloud.SetDirectInternet(false)
	proxy := n.cloud.AddProxy("10.10.0.1", 3128, containers.ProxyOptions{Username: "user", Password: "s3cr3t-pw"})
	settings := &system.Proxy{
		HTTPProxy:  remote.NewSecret("http://user:s3cr3t-pw@10.10.0.1:3128"),
		HTTPSProxy: remote.NewSecret("http://user:s3cr3t-pw@10.10.0.1:3128"),
		NoProxy:    "localhost,127.0.0.1",
	}
	if _, err := kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{}); err == nil {
		t.Fatal("no proxy, yet the key was fetched: the test proves nothing")
	}
	if _, err := kubeadm.PrepareNode(n.ctx, n.ssh, kubeadm.NodeOptions{Name: "master-1", Proxy: settings}); err != nil {
		t.Fatal(err)
	}
	opts := kubeadm.PackagesOptions{Version: "v1.36.2", Proxy: settings}
	res := n.twice("InstallKubernetes", func() (lcm.Result, error) { return kubeadm.InstallKubernetes(n.ctx, n.ssh, opts) })
	n.noSecretIn("s3cr3t-pw", res.Detail)
	var viaProxy []string
	for _, r := range proxy.Requests() {
		if r.Status == 200 && r.User == "user" {
			viaProxy = append(viaProxy, r.Method+" "+r.Target)
		}
	}
	if !slices.Contains(viaProxy, "CONNECT pkgs.k8s.io:443") {
		t.Errorf("nothing reached pkgs.k8s.io through the proxy: %q", viaProxy)
	}
	if got := n.read(kubeadm.KubernetesKeyring); len(got) == 0 || strings.Contains(got, "BEGIN PGP") || n.mode(kubeadm.KubernetesKeyring) != "0644 0" {
		t.Errorf("keyring %q, %s", got, n.mode(kubeadm.KubernetesKeyring))
	}
	if got := n.read(kubeadm.KubernetesSourcesList); !strings.Contains(got, "\ndeb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.36/deb/ /\n") {
		t.Errorf("kubernetes.list:\n%s", got)
	}
	for _, p := range []string{"kubeadm", "kubelet", "kubectl"} {
		if v := n.host.Machine.Version(p); v != "1.36.2-1.1" || !n.host.Machine.Held(p) {
			t.Errorf("%s: version %q, held %v", p, v, n.host.Machine.Held(p))
		}
	}
	if !n.host.Machine.Installed("cri-tools") || !n.host.Machine.Installed("kubernetes-cni") || n.host.Machine.Held("cri-tools") {
		t.Error("cri-tools or kubernetes-cni missing, or cri-tools held")
	}
	env := "/etc/systemd/system/kubelet.service.d/mgmtkit-proxy.env"
	if n.mode(env) != "0600 0" || !strings.Contains(n.read(env), "HTTPS_PROXY=http://user:s3cr3t-pw@") {
		t.Errorf("kubelet proxy %s:\n%s", n.mode(env), n.read(env))
	}
	if s := n.host.Machine.Service("kubelet"); !s.Enabled {
		t.Errorf("kubelet %+v", s)
	}

	// A new patch moves the packages, held; the proxy leaves the kubelet.
	restarts := n.host.Machine.Service("kubelet").Restarts
	opts = kubeadm.PackagesOptions{Version: "1.36.3"}
	n.twice("InstallKubernetes 1.36.3", func() (lcm.Result, error) { return kubeadm.InstallKubernetes(n.ctx, n.ssh, opts) })
	for _, p := range []string{"kubeadm", "kubelet", "kubectl"} {
		if v := n.host.Machine.Version(p); v != "1.36.3-1.1" || !n.host.Machine.Held(p) {
			t.Errorf("%s: version %q, held %v", p, v, n.host.Machine.Held(p))
		}
	}
	if n.host.FS().Exists(env) {
		t.Error("the kubelet's proxy stays")
	}
	if got := n.host.Machine.Service("kubelet").Restarts; got <= restarts {
		t.Error("the running kubelet was not restarted without its proxy")
	}
	if got := n.host.SSH.CallsTo("curl"); len(got) != 0 {
		t.Errorf("the key was fetched again: %v", got)
	}
}

func TestInstallKubernetesMinorIsHeld(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	n.twice("InstallKubernetes", func() (lcm.Result, error) { return kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{}) })
	for _, p := range []string{"kubeadm", "kubelet", "kubectl"} {
		if v := n.host.Machine.Version(p); v != "1.36.3-1.1" || !n.host.Machine.Held(p) {
			t.Errorf("%s: version %q, held %v", p, v, n.host.Machine.Held(p))
		}
	}
}

func TestInstallKubernetesFailsWithCurlsMessage(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	n.host.SSH.FailProgram("curl", 1, 22, "curl: (22) The requested URL returned error: 403")
	_, err := kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{})
	if err == nil || !strings.Contains(err.Error(), "returned error: 403") || !strings.Contains(err.Error(), "key") {
		t.Errorf("got %v", err)
	}
	if n.host.FS().Exists(kubeadm.KubernetesKeyring) {
		t.Error("a failed fetch left a keyring")
	}
	if ents, _ := n.host.FS().ReadDir("/etc/apt/keyrings"); len(ents) != 0 {
		t.Errorf("temporary files left: %v", ents)
	}
	n.commands()
	_, err = kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{Version: "1.23", Proxy: &system.Proxy{}})
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || len(pe.Problems) != 2 {
		t.Errorf("got %v, want two problems", err)
	}
	if cmds := n.commands(); len(cmds) != 0 {
		t.Errorf("commands ran: %q", cmds)
	}
}

// A run that changes the kubelet's proxy and fails before restarting it
// leaves the restart to the next run, which finds the files as it wants
// them.
func TestInstallKubernetesOwesTheKubeletRestartAcrossAFailure(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	if _, err := kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{}); err != nil {
		t.Fatal(err)
	}
	if !n.host.Machine.Service("kubelet").Active {
		t.Fatal("the kubelet does not run: the test proves nothing")
	}
	restarts := n.host.Machine.Service("kubelet").Restarts
	opts := kubeadm.PackagesOptions{Proxy: proxyWithPassword}
	if _, err := kubeadm.InstallKubernetes(n.ctx, failFirst(n.ssh, "systemctl", "daemon-reload"), opts); err == nil || !strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("got %v, want the daemon-reload failure", err)
	}
	if env := "/etc/systemd/system/kubelet.service.d/mgmtkit-proxy.env"; !n.host.FS().Exists(env) {
		t.Fatal("the proxy was not written before the failure: the test proves nothing")
	}
	if n.host.Machine.Service("kubelet").Restarts != restarts {
		t.Fatal("restarted despite the failure")
	}
	res, err := kubeadm.InstallKubernetes(n.ctx, n.ssh, opts)
	if err != nil || !strings.Contains(res.Detail, "restarted kubelet.service") {
		t.Fatalf("%v, %v", res, err)
	}
	if n.host.Machine.Service("kubelet").Restarts != restarts+1 {
		t.Error("the owed restart did not happen")
	}
	if res, err := kubeadm.InstallKubernetes(n.ctx, n.ssh, opts); err != nil || res.Changed {
		t.Errorf("then: %v, %v", res, err)
	}
}

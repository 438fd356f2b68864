package kubeadm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
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

// fakeKeyFetch installs a curl that serves pkgs.k8s.io's Release.key
// (curl(1): -f fails on HTTP errors, -o writes the body to a file) and
// records the https_proxy it saw, and a gpg whose --dearmor turns the
// armored key on standard input into binary on standard output
// (gpg(1), --dearmor).
func fakeKeyFetch(n *simNode) *[]string {
	proxies := new([]string)
	n.host.SSH.Handle("/usr/bin/curl", func(_ context.Context, p *sshtest.Process) int {
		if len(p.Args) != 5 || p.Args[1] != "-fsSL" || p.Args[2] != "-o" || !strings.HasPrefix(p.Args[4], "https://pkgs.k8s.io/core:/stable:/v1.36/deb/Release.key") {
			return p.Fail(2, "sshtest curl: only -fsSL -o FILE https://pkgs.k8s.io/.../Release.key is modelled, got %q", p.Args[1:])
		}
		*proxies = append(*proxies, p.Getenv("https_proxy"))
		if err := p.FS.WriteFile(p.Args[3], []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\nk8s\n-----END PGP PUBLIC KEY BLOCK-----\n"), 0o644); err != nil {
			return p.Fail(23, "curl: (23) Failure writing output to destination")
		}
		return 0
	})
	n.host.SSH.Handle("/usr/bin/gpg", func(_ context.Context, p *sshtest.Process) int {
		if !slices.Equal(p.Args[1:], []string{"--dearmor"}) {
			return p.Fail(2, "sshtest gpg: only --dearmor is modelled")
		}
		buf := make([]byte, 4096)
		k, _ := p.Stdin.Read(buf)
		if !strings.HasPrefix(string(buf[:k]), "-----BEGIN PGP PUBLIC KEY BLOCK-----") {
			return p.Fail(2, "gpg: no valid OpenPGP data found.")
		}
		_, _ = p.Stdout.Write([]byte("\x99\x01\x0dKEYRING"))
		return 0
	})
	return proxies
}

func TestInstallKubernetesPinnedWithProxy(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	proxies := fakeKeyFetch(n)
	opts := kubeadm.PackagesOptions{Version: "v1.36.2", Proxy: proxyWithPassword}
	res := n.twice("InstallKubernetes", func() (lcm.Result, error) { return kubeadm.InstallKubernetes(n.ctx, n.ssh, opts) })
	n.noSecretIn("s3cr3t-pw", res.Detail)
	if !slices.Equal(*proxies, []string{"http://user:s3cr3t-pw@proxy.example.com:3128"}) {
		t.Errorf("curl ran with proxies %q, want the proxy once", *proxies)
	}
	if got := n.read(kubeadm.KubernetesKeyring); got != "\x99\x01\x0dKEYRING" || n.mode(kubeadm.KubernetesKeyring) != "0644 0" {
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
	if len(*proxies) != 1 {
		t.Errorf("the key was fetched again")
	}
}

func TestInstallKubernetesMinorIsHeld(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	fakeKeyFetch(n)
	n.twice("InstallKubernetes", func() (lcm.Result, error) { return kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{}) })
	for _, p := range []string{"kubeadm", "kubelet", "kubectl"} {
		if v := n.host.Machine.Version(p); v != "1.36.3-1.1" || !n.host.Machine.Held(p) {
			t.Errorf("%s: version %q, held %v", p, v, n.host.Machine.Held(p))
		}
	}
}

func TestInstallKubernetesFailsWithCurlsMessage(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	fakeKeyFetch(n)
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
	_, err = kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{Version: "1.23", Proxy: &kubeadm.ProxySettings{}})
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || len(pe.Problems) != 2 {
		t.Errorf("got %v, want two problems", err)
	}
	if cmds := n.commands(); len(cmds) != 0 {
		t.Errorf("commands ran: %q", cmds)
	}
}

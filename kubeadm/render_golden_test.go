package kubeadm_test

// Golden files of every file the node steps render: what InstallContainerd,
// InstallKubernetes, ConfigureHAProxy, ConfigureKeepalived and PrepareNode's
// kernel settings leave on a simulated node, path, mode and owner first. A
// step that renders a file differently fails here with a line diff; when
// the change is intended, rewrite the files and review them in the same
// commit:
//
//	go test ./kubeadm -run GoldenRendered -update

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// dump renders files of n as "=== PATH MODE UID" and their content.
func (n *simNode) dump(files ...string) []byte {
	n.t.Helper()
	var b strings.Builder
	for _, f := range files {
		if !n.host.FS().Exists(f) {
			n.t.Fatalf("%s is missing", f)
		}
		fmt.Fprintf(&b, "=== %s %s\n%s", f, n.mode(f), n.read(f))
	}
	return []byte(b.String())
}

func TestGoldenRenderedContainerdFiles(t *testing.T) {
	dropIn, env := "/etc/systemd/system/containerd.service.d/mgmtkit-proxy.conf", "/etc/systemd/system/containerd.service.d/mgmtkit-proxy.env"
	t.Run("fresh containerd 1.x", func(t *testing.T) {
		n := newSimNode(t, sim.Options{}, "containerd")
		n.host.FS().Remove(kubeadm.ContainerdConfig)
		n.twice("InstallContainerd", func() (lcm.Result, error) {
			return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{Proxy: proxyWithPassword})
		})
		golden.Assert(t, "containerd-fresh", n.dump(kubeadm.ContainerdConfig, kubeadm.CrictlConfig, dropIn, env))
	})
	t.Run("merged into an existing version 2 file", func(t *testing.T) {
		n := newSimNode(t, sim.Options{}, "containerd")
		n.write(kubeadm.ContainerdConfig, `# The operator's own settings.
version = 2
root = "/data/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.tracing"]

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.6"
  max_concurrent_downloads = 5

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = "/usr/local/bin/runc"
`)
		n.twice("InstallContainerd", func() (lcm.Result, error) {
			return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{Version: "1.34.1"})
		})
		golden.Assert(t, "containerd-merged", n.dump(kubeadm.ContainerdConfig))
	})
	t.Run("containerd.io 2.x", func(t *testing.T) {
		opts := sim.Options{Catalog: func() *ubuntu.Catalog {
			c := ubuntu.DefaultCatalog()
			containers.AddContainerd2(c)
			return c
		}}
		n := newSimNode(t, opts, "containerd.io=2.2.0-1")
		n.twice("InstallContainerd", func() (lcm.Result, error) {
			return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{Package: "containerd.io"})
		})
		golden.Assert(t, "containerd-2-packaged", n.dump(kubeadm.ContainerdConfig))
	})
}

func TestGoldenRenderedKubeletProxy(t *testing.T) {
	n := newSimNode(t, k8sRepoCloud())
	n.twice("InstallKubernetes", func() (lcm.Result, error) {
		return kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{Version: "1.36.2", Proxy: proxyWithPassword})
	})
	golden.Assert(t, "kubelet-proxy", n.dump("/etc/systemd/system/kubelet.service.d/mgmtkit-proxy.conf", "/etc/systemd/system/kubelet.service.d/mgmtkit-proxy.env"))
}

func TestGoldenRenderedKernelSettings(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	name := kubeadm.NodeName(lcm.RoleMaster, n.host.NICAddress)
	n.twice("PrepareNode", func() (lcm.Result, error) {
		return kubeadm.PrepareNode(n.ctx, n.ssh, kubeadm.NodeOptions{Name: name})
	})
	golden.Assert(t, "kernel", n.dump("/etc/modules-load.d/"+kubeadm.KernelConfigName+".conf", "/etc/sysctl.d/90-"+kubeadm.KernelConfigName+".conf"))
}

func TestGoldenRenderedLoadBalancer(t *testing.T) {
	lb := threeMasters()
	lb.Interface = "ens3"
	lb6 := lb
	lb6.VIP = netip.MustParsePrefix("fd00::100/64")
	lb6.Backends = []kubeadm.Backend{{Name: "master-fd00--5", Address: "fd00::5"}, {Name: "master-fd00--6", Address: "fd00::6"}}
	for _, c := range []struct {
		name string
		lb   kubeadm.APIServerLB
	}{{"ipv4", lb}, {"ipv6", lb6}} {
		n := newSimNode(t, lbCloud())
		for _, step := range []func() (lcm.Result, error){
			func() (lcm.Result, error) { return kubeadm.ConfigureHAProxy(n.ctx, n.ssh, c.lb) },
			func() (lcm.Result, error) { return kubeadm.ConfigureKeepalived(n.ctx, n.ssh, c.lb) },
		} {
			n.twice("configure", step)
		}
		golden.Assert(t, "lb-"+c.name, n.dump(kubeadm.HAProxyConfig, kubeadm.KeepalivedConfig))
	}
}

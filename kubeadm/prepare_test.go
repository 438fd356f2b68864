package kubeadm_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/system"
)

const swapsHeader = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"

// withSwap gives the node an active swap file, listed in /etc/fstab, and
// a swapoff: util-linux swapoff(8) -a disables every area /proc/swaps
// lists (sys-utils/swapoff.c swapoff_all), which the kernel then no
// longer lists (mm/swapfile.c swap_show).
func (n *simNode) withSwap() *int {
	n.t.Helper()
	n.write("/etc/fstab", "LABEL=cloudimg-rootfs\t/\t ext4\tdiscard,errors=remount-ro\t0 1\n/swap.img\tnone\tswap\tsw\t0\t0\n# /old.img none swap sw 0 0\n")
	if err := n.host.FS().WriteFile("/proc/swaps", []byte(swapsHeader+"/swap.img                               file\t\t2097148\t\t0\t\t-2\n"), 0o444); err != nil {
		n.t.Fatal(err)
	}
	runs := new(int)
	n.host.SSH.Handle("/usr/sbin/swapoff", func(_ context.Context, p *sshtest.Process) int {
		*runs++
		if p.User != "root" {
			return p.Fail(1, "swapoff: Not superuser.")
		}
		if len(p.Args) != 2 || p.Args[1] != "-a" {
			return p.Fail(2, "sshtest swapoff: only -a is modelled")
		}
		if err := p.Host.FS().WriteFile("/proc/swaps", []byte(swapsHeader), 0o444); err != nil {
			return p.Fail(1, "%v", err)
		}
		return 0
	})
	return runs
}

var proxyWithPassword = &system.Proxy{
	HTTPProxy:  remote.NewSecret("http://user:s3cr3t-pw@proxy.example.com:3128"),
	HTTPSProxy: remote.NewSecret("http://user:s3cr3t-pw@proxy.example.com:3128"),
	NoProxy:    "localhost,127.0.0.1,10.0.0.0/24",
}

func TestPrepareNodeConvergesAndIsIdempotent(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	swapoffs := n.withSwap()
	addr := n.host.NICAddress
	name := kubeadm.NodeName(lcm.RoleMaster, addr)
	opts := kubeadm.NodeOptions{
		Name:  name,
		Hosts: []system.HostsEntry{{IP: addr, Names: []string{name}}, {IP: "10.0.0.12", Names: []string{"worker-10-0-0-12"}}},
		Proxy: proxyWithPassword,
	}
	res := n.twice("PrepareNode", func() (lcm.Result, error) { return kubeadm.PrepareNode(n.ctx, n.ssh, opts) })
	n.noSecretIn("s3cr3t-pw", res.Detail)

	if got := n.host.Machine.Hostname(); got != name {
		t.Errorf("host name %q, want %q", got, name)
	}
	if got := n.read("/proc/swaps"); got != swapsHeader {
		t.Errorf("swap still on:\n%s", got)
	}
	if *swapoffs != 1 {
		t.Errorf("swapoff ran %d times, want once", *swapoffs)
	}
	fstab := n.read("/etc/fstab")
	if !strings.Contains(fstab, "#/swap.img\tnone\tswap") || !strings.Contains(fstab, "\n# /old.img none swap sw 0 0\n") || !strings.HasPrefix(fstab, "LABEL=cloudimg-rootfs\t/\t ext4") {
		t.Errorf("fstab:\n%s", fstab)
	}
	for _, m := range []string{"overlay", "br_netfilter"} {
		if !slices.Contains(n.host.Machine.LoadedModules(), m) {
			t.Errorf("module %s not loaded", m)
		}
	}
	if got := n.read("/etc/modules-load.d/" + kubeadm.KernelConfigName + ".conf"); !strings.HasSuffix(got, "\noverlay\nbr_netfilter\n") {
		t.Errorf("modules-load.d: %q", got)
	}
	for _, k := range []string{"net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables", "net.ipv4.ip_forward"} {
		if v, _ := n.host.Machine.Sysctl(k); v != "1" {
			t.Errorf("%s = %q", k, v)
		}
	}
	if hosts := n.read("/etc/hosts"); !strings.Contains(hosts, addr+"\t"+name+"\n") || !strings.Contains(hosts, "10.0.0.12\tworker-10-0-0-12\n") {
		t.Errorf("/etc/hosts:\n%s", hosts)
	}
	// cloud-init renders /etc/hosts at boot (manage_etc_hosts): the block
	// and the host name survive a reboot.
	if err := n.host.Machine.Reboot(); err != nil {
		t.Fatal(err)
	}
	if hosts := n.read("/etc/hosts"); !strings.Contains(hosts, "10.0.0.12\tworker-10-0-0-12\n") {
		t.Errorf("/etc/hosts after a reboot:\n%s", hosts)
	}
	if got := n.host.Machine.Hostname(); got != name {
		t.Errorf("host name after a reboot %q", got)
	}
	if got := n.read(kubeadm.CloudPreserveHostname); !strings.HasSuffix(got, "\npreserve_hostname: true\n") {
		t.Errorf("%s: %q", kubeadm.CloudPreserveHostname, got)
	}
	if got := n.read("/proc/swaps"); got != swapsHeader {
		t.Errorf("swap on after a reboot:\n%s", got)
	}
	if v, _ := n.host.Machine.Sysctl("net.bridge.bridge-nf-call-iptables"); v != "1" {
		t.Errorf("bridge-nf-call-iptables after a reboot: %q", v)
	}
	if got := n.mode(kubeadm.AptProxyFile); got != "0600 0" {
		t.Errorf("%s: mode and owner %s, want 0600 0", kubeadm.AptProxyFile, got)
	}
	if conf := n.read(kubeadm.AptProxyFile); !strings.Contains(conf, `Acquire::http::Proxy "http://user:s3cr3t-pw@proxy.example.com:3128";`) ||
		!strings.Contains(conf, `Acquire::https::Proxy "http://user:s3cr3t-pw@proxy.example.com:3128";`) {
		t.Errorf("apt proxy:\n%s", conf)
	}
	n.noSecretIn("s3cr3t-pw")

	// A proxy without credentials is world-readable; none removes the
	// file; fewer hosts shrink the block.
	opts.Proxy = &system.Proxy{HTTPProxy: remote.NewSecret("http://proxy.example.com:3128")}
	if _, err := kubeadm.PrepareNode(n.ctx, n.ssh, opts); err != nil {
		t.Fatal(err)
	}
	if got := n.mode(kubeadm.AptProxyFile); got != "0644 0" {
		t.Errorf("%s without credentials: %s, want 0644 0", kubeadm.AptProxyFile, got)
	}
	opts.Proxy, opts.Hosts = nil, opts.Hosts[:1]
	res, err := kubeadm.PrepareNode(n.ctx, n.ssh, opts)
	if err != nil || !res.Changed {
		t.Fatalf("removing the proxy: %v, %v", res, err)
	}
	if n.host.FS().Exists(kubeadm.AptProxyFile) {
		t.Error("the apt proxy file is still there")
	}
	if strings.Contains(n.read("/etc/hosts"), "worker-10-0-0-12") {
		t.Error("a removed host stays in /etc/hosts")
	}
	if res, err := kubeadm.PrepareNode(n.ctx, n.ssh, opts); err != nil || res.Changed {
		t.Errorf("again: %v, %v", res, err)
	}
}

func TestPrepareNodeRefusesBadOptionsBeforeAnyCommand(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	for _, tc := range []struct {
		name  string
		opts  kubeadm.NodeOptions
		paths []string
	}{
		{"no name", kubeadm.NodeOptions{}, []string{"Name"}},
		{"dotted name", kubeadm.NodeOptions{Name: "master.example.com"}, []string{"Name"}},
		{"bad host entry", kubeadm.NodeOptions{Name: "master-1", Hosts: []system.HostsEntry{{IP: "10.0.0.256", Names: []string{"x"}}}}, []string{"Hosts[0].IP"}},
		{"empty proxy", kubeadm.NodeOptions{Name: "master-1", Proxy: &system.Proxy{}}, []string{"Proxy.HTTPProxy"}},
		{"proxy breaking out", kubeadm.NodeOptions{Name: "master-1", Proxy: &system.Proxy{
			HTTPProxy: remote.NewSecret("http://p:1\";\nAPT::x \"y"), HTTPSProxy: remote.NewSecret("ftp://p"), NoProxy: "a,b c"}},
			[]string{"Proxy.HTTPProxy", "Proxy.HTTPSProxy", "Proxy.NoProxy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.commands()
			_, err := kubeadm.PrepareNode(n.ctx, n.ssh, tc.opts)
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a ParamsError", err)
			}
			var paths []string
			for _, p := range pe.Problems {
				paths = append(paths, p.Path)
			}
			if !slices.Equal(paths, tc.paths) {
				t.Errorf("problems at %q, want %q (%v)", paths, tc.paths, err)
			}
			if strings.Contains(err.Error(), "APT::x") {
				t.Errorf("the message repeats the URL: %v", err)
			}
			if cmds := n.commands(); len(cmds) != 0 {
				t.Errorf("commands ran: %q", cmds)
			}
		})
	}
}

func TestProxyFor(t *testing.T) {
	p := kubeadm.ClusterParams{
		MasterNode: kubeadm.NodeParams{PodCIDR: netip.MustParsePrefix("192.168.0.0/16"), ClusterCIDR: netip.MustParsePrefix("10.96.0.0/12")},
	}
	if got := kubeadm.ProxyFor(p, []string{"10.0.0.5"}, "10.0.0.5", nil); got != nil {
		t.Errorf("no proxy: %+v", got)
	}
	p.Proxy = &kubeadm.Proxy{Proxy: system.Proxy{
		HTTPProxy: remote.NewSecret("http://proxy:3128"), HTTPSProxy: remote.NewSecret("http://proxy:3128"),
		NoProxy: "example.com,10.0.0.5,.internal",
	}}
	got := kubeadm.ProxyFor(p, []string{"10.0.0.5", "10.0.0.6", "10.0.0.12"}, "10.0.0.100:16443", []string{"registry.example.com:5000", "10.0.0.50:5000", "[fd00::50]:5000"})
	want := []string{"localhost", "127.0.0.1", "::1", "10.0.0.5", "10.0.0.6", "10.0.0.12", "10.0.0.100", "10.0.0.0/24",
		"192.168.0.0/16", "10.96.0.0/12", "registry.example.com", "10.0.0.50", "fd00::50", "example.com", ".internal"}
	if !slices.Equal(got.NoProxyEntries(), want) {
		t.Errorf("NoProxy\n got %q\nwant %q", got.NoProxy, want)
	}
	if got.HTTPProxy.Reveal() != "http://proxy:3128" {
		t.Error("HTTPProxy not passed on")
	}
	p.Proxy.K8sNodeCIDR = netip.MustParsePrefix("10.0.0.0/16")
	got = kubeadm.ProxyFor(p, []string{"10.0.0.5"}, "10.0.0.5", nil)
	if !slices.Contains(got.NoProxyEntries(), "10.0.0.0/16") || slices.Contains(got.NoProxyEntries(), "10.0.0.0/24") {
		t.Errorf("k8s_node_cidr not used: %q", got.NoProxy)
	}
}

func TestUpdateHostsOnScaleInAndOut(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	all := kubeadm.ClusterHosts([]string{"10.0.0.5"}, []string{"10.0.0.12", "10.0.0.13"})
	n.twice("UpdateHosts", func() (lcm.Result, error) { return kubeadm.UpdateHosts(n.ctx, n.ssh, all) })
	for _, f := range []string{"/etc/hosts", kubeadm.CloudHostsTemplate} {
		if got := n.read(f); !strings.Contains(got, "10.0.0.13\tworker-10-0-0-13\n") {
			t.Errorf("%s:\n%s", f, got)
		}
	}
	// worker-10-0-0-13 leaves.
	if res, err := kubeadm.UpdateHosts(n.ctx, n.ssh, all[:2]); err != nil || !res.Changed {
		t.Fatalf("%v, %v", res, err)
	}
	for _, f := range []string{"/etc/hosts", kubeadm.CloudHostsTemplate} {
		if got := n.read(f); strings.Contains(got, "10.0.0.13") || !strings.Contains(got, "10.0.0.12\tworker-10-0-0-12\n") {
			t.Errorf("%s after scale-in:\n%s", f, got)
		}
	}
	n.commands()
	_, err := kubeadm.UpdateHosts(n.ctx, n.ssh, []system.HostsEntry{{IP: "10.0.0.5"}})
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || pe.Problems[0].Path != "Hosts[0].Names" {
		t.Errorf("got %v", err)
	}
	if cmds := n.commands(); len(cmds) != 0 {
		t.Errorf("commands ran: %q", cmds)
	}
}

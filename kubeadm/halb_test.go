package kubeadm_test

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// lbCloud is a cloud whose hosts' catalog has haproxy and keepalived
// (the simulated world's: internal/sim/kube AddPackages) and whose `ip`
// lists the NIC address on ens3 (internal/sim/ubuntu ip.go).
func lbCloud() sim.Options { return sim.Options{} }

func threeMasters() kubeadm.APIServerLB {
	return kubeadm.APIServerLB{
		VIP:      netip.MustParsePrefix("127.0.1.200/24"),
		Priority: 103,
		Backends: []kubeadm.Backend{
			{Name: "master-10-0-0-5", Address: "10.0.0.5"},
			{Name: "master-10-0-0-6", Address: "10.0.0.6"},
			{Name: "master-10-0-0-7", Address: "10.0.0.7"},
		},
	}
}

func TestConfigureHAProxyAndKeepalived(t *testing.T) {
	n := newSimNode(t, lbCloud())
	lb := threeMasters()
	n.twice("ConfigureHAProxy", func() (lcm.Result, error) { return kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb) })
	n.twice("ConfigureKeepalived", func() (lcm.Result, error) { return kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb) })
	cfg := n.read(kubeadm.HAProxyConfig)
	for _, want := range []string{"\tbind *:16443\n", "\tserver master-10-0-0-5 10.0.0.5:6443 check\n", "\tserver master-10-0-0-7 10.0.0.7:6443 check\n", "\toption tcp-check\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}
	conf := n.read(kubeadm.KeepalivedConfig)
	for _, want := range []string{"\tinterface ens3\n", "\tvirtual_router_id 51\n", "\tpriority 103\n", "\t\t127.0.1.200/24 dev ens3\n", "\tstate BACKUP\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("keepalived.conf lacks %q:\n%s", want, conf)
		}
	}
	for _, unit := range []string{"haproxy", "keepalived"} {
		if s := n.host.Machine.Service(unit); !s.Active || !s.Enabled {
			t.Errorf("%s: %+v", unit, s)
		}
	}
	if n.host.FS().Exists(kubeadm.HAProxyConfig + ".mgmtkit-new") {
		t.Error("the staged file stays")
	}

	// A master leaves: HAProxy is reloaded, not restarted.
	before := n.host.Machine.Service("haproxy")
	lb.Backends = lb.Backends[:2]
	if res, err := kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb); err != nil || !res.Changed {
		t.Fatalf("%v, %v", res, err)
	}
	after := n.host.Machine.Service("haproxy")
	if after.Reloads != before.Reloads+1 || after.Restarts != before.Restarts {
		t.Errorf("haproxy: %d reloads and %d restarts, want one reload", after.Reloads-before.Reloads, after.Restarts-before.Restarts)
	}
	if strings.Contains(n.read(kubeadm.HAProxyConfig), "10.0.0.7") {
		t.Error("the removed master is still a backend")
	}

	// A configuration haproxy refuses never replaces the running one.
	good := n.read(kubeadm.HAProxyConfig)
	n.host.SSH.FailProgram("haproxy", 1, 1, "[ALERT] (1) : config : parsing [x:1]: unknown keyword")
	lb.Backends = lb.Backends[:1]
	_, err := kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb)
	if err == nil || !strings.Contains(err.Error(), "unknown keyword") || !strings.Contains(err.Error(), n.ssh.Name()) {
		t.Errorf("got %v, want haproxy's complaint and the host", err)
	}
	if n.read(kubeadm.HAProxyConfig) != good || n.host.FS().Exists(kubeadm.HAProxyConfig+".mgmtkit-new") {
		t.Error("a refused configuration was left or put in place")
	}
}

func TestConfigureLBRefusesBadOptionsBeforeAnyCommand(t *testing.T) {
	n := newSimNode(t, lbCloud())
	for _, tc := range []struct {
		name  string
		edit  func(*kubeadm.APIServerLB)
		paths []string
	}{
		{"no backends", func(lb *kubeadm.APIServerLB) { lb.Backends = nil }, []string{"Backends"}},
		{"bad backend", func(lb *kubeadm.APIServerLB) { lb.Backends[1] = kubeadm.Backend{Name: "a b", Address: "10.0.0.300"} }, []string{"Backends[1].Name", "Backends[1].Address"}},
		{"twice", func(lb *kubeadm.APIServerLB) { lb.Backends[1].Name = lb.Backends[0].Name }, []string{"Backends[1].Name"}},
		{"port", func(lb *kubeadm.APIServerLB) { lb.Port = 6443 }, []string{"Port"}},
		{"vrrp", func(lb *kubeadm.APIServerLB) {
			lb.VIP, lb.Priority, lb.RouterID, lb.Interface = netip.Prefix{}, 255, 256, "eth0;x"
		}, []string{"VIP", "Priority", "RouterID", "Interface"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := threeMasters()
			tc.edit(&lb)
			n.commands()
			_, errK := kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb)
			var pe *lcm.ParamsError
			if !errors.As(errK, &pe) {
				t.Fatalf("keepalived: %v, want a ParamsError", errK)
			}
			var paths []string
			for _, p := range pe.Problems {
				paths = append(paths, p.Path)
			}
			if !slices.Equal(paths, tc.paths) {
				t.Errorf("problems at %q, want %q", paths, tc.paths)
			}
			if !strings.HasPrefix(tc.name, "vrrp") { // HAProxy takes no VRRP fields
				if _, err := kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb); !errors.As(err, &pe) {
					t.Errorf("haproxy: %v, want a ParamsError", err)
				}
			}
			if cmds := n.commands(); len(cmds) != 0 {
				t.Errorf("commands ran: %q", cmds)
			}
		})
	}
}

func TestConfigureKeepalivedNeedsAnInterfaceOnTheVIPsNetwork(t *testing.T) {
	n := newSimNode(t, lbCloud())
	lb := threeMasters()
	lb.VIP = netip.MustParsePrefix("10.9.9.9/24")
	_, err := kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb)
	if err == nil || !strings.Contains(err.Error(), "no interface has an address in 10.9.9.0/24") {
		t.Errorf("got %v", err)
	}
	lb.Interface = "ens3"
	if _, err := kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb); err != nil {
		t.Error(err)
	}
}

// The rendered files are checked by the real programs when installed.
func TestRealHAProxyAndKeepalivedAcceptTheConfigs(t *testing.T) {
	lb := threeMasters()
	// keepalived refuses a loopback or missing interface: take this
	// machine's first other one.
	lb.Interface = "eth0"
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
				lb.Interface = i.Name
				break
			}
		}
	}
	lb6 := lb
	lb6.VIP = netip.MustParsePrefix("fd00::100/64")
	lb6.Backends = []kubeadm.Backend{{Name: "master-fd00--5", Address: "fd00::5"}, {Name: "master-fd00--6", Address: "fd00::6"}}
	for _, c := range []struct {
		prog   string
		args   []string
		render func(kubeadm.APIServerLB) ([]byte, error)
	}{
		{"/usr/sbin/haproxy", []string{"-c", "-f"}, kubeadm.HAProxyCfgForTest},
		{"/usr/sbin/keepalived", []string{"--config-test", "-f"}, kubeadm.KeepalivedConfForTest},
	} {
		if _, err := os.Stat(c.prog); err != nil {
			t.Logf("%s is not installed: not checked", c.prog)
			continue
		}
		for i, l := range []kubeadm.APIServerLB{lb, lb6} {
			b, err := c.render(l)
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(t.TempDir(), "conf")
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(c.prog, append(c.args, f)...).CombinedOutput()
			if err != nil {
				t.Errorf("%s refuses config %d: %v\n%s\n%s", c.prog, i, err, out, b)
			} else if strings.Contains(string(out), "WARNING") || strings.Contains(string(out), "ALERT") {
				t.Logf("%s config %d: %s", c.prog, i, out)
			}
		}
	}
}

// A run that replaces haproxy.cfg and fails before the reload leaves the
// reload to the next run, which finds the file as it wants it.
func TestConfigureHAProxyOwesTheReloadAcrossAFailure(t *testing.T) {
	n := newSimNode(t, lbCloud())
	lb := threeMasters()
	if _, err := kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb); err != nil {
		t.Fatal(err)
	}
	before := n.host.Machine.Service("haproxy")
	lb.Backends = lb.Backends[:2]
	if _, err := kubeadm.ConfigureHAProxy(n.ctx, failFirst(n.ssh, "systemctl", "reload-or-restart"), lb); err == nil {
		t.Fatal("no failure")
	}
	if got := n.host.Machine.Service("haproxy"); got.Reloads+got.Restarts != before.Reloads+before.Restarts {
		t.Fatal("reloaded despite the failure")
	}
	if strings.Contains(n.read(kubeadm.HAProxyConfig), "10.0.0.7") {
		t.Fatal("the file was not replaced before the failure: the test proves nothing")
	}
	if res, err := kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb); err != nil || !res.Changed {
		t.Fatalf("%v, %v", res, err)
	}
	if got := n.host.Machine.Service("haproxy"); got.Reloads+got.Restarts != before.Reloads+before.Restarts+1 {
		t.Errorf("reloads %d, restarts %d: want the owed one", got.Reloads-before.Reloads, got.Restarts-before.Restarts)
	}
	if res, err := kubeadm.ConfigureHAProxy(n.ctx, n.ssh, lb); err != nil || res.Changed {
		t.Errorf("then: %v, %v", res, err)
	}
}

// Given the master's own address, keepalived runs on the interface that
// holds it and the VIP (known to Heat as a single address) takes that
// address's prefix length.
func TestConfigureKeepalivedOnTheNodeAddressInterface(t *testing.T) {
	n := newSimNode(t, lbCloud())
	lb := threeMasters()
	lb.VIP = netip.MustParsePrefix("127.0.1.200/32")
	lb.NodeAddress = netip.MustParseAddr(n.host.NICAddress)
	if _, err := kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb); err != nil {
		t.Fatal(err)
	}
	conf := n.read(kubeadm.KeepalivedConfig)
	if !strings.Contains(conf, "\tinterface ens3\n") || strings.Contains(conf, "/32") || !strings.Contains(conf, "\t\t127.0.1.200/") {
		t.Errorf("keepalived.conf:\n%s", conf)
	}
	lb.NodeAddress = netip.MustParseAddr("10.9.9.9")
	if _, err := kubeadm.ConfigureKeepalived(n.ctx, n.ssh, lb); err == nil || !strings.Contains(err.Error(), "no interface has the address 10.9.9.9") {
		t.Errorf("got %v", err)
	}
}

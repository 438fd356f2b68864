package ubuntu

import (
	"slices"
	"strings"
	"testing"
)

func TestKernelModulesAndSysctls(t *testing.T) {
	v := newVM(t, Options{})
	want(t, "no bridge sysctl before br_netfilter", v.root("sysctl net.bridge.bridge-nf-call-iptables"), "",
		"sysctl: cannot stat /proc/sys/net/bridge/bridge-nf-call-iptables: No such file or directory\n", 1)
	want(t, "modprobe as a user", v.user("/usr/sbin/modprobe br_netfilter"), "", "modprobe: ERROR: could not insert 'br_netfilter': Operation not permitted\n", 1)
	want(t, "unknown module", v.root("modprobe -a overlay nosuch"), "", "modprobe: FATAL: Module nosuch not found in directory /lib/modules/5.15.0-fake\n", 1)
	want(t, "dry run", v.root("modprobe --dry-run br-netfilter"), "", "", 0)
	if len(v.LoadedModules()) != 0 {
		t.Fatalf("loaded %v", v.LoadedModules())
	}
	want(t, "modprobe -a", v.root("modprobe -a overlay br-netfilter"), "", "", 0)
	if got := v.LoadedModules(); !slices.Equal(got, []string{"br_netfilter", "bridge", "llc", "overlay", "stp"}) {
		t.Errorf("loaded %v", got)
	}
	want(t, "/proc/modules", v.user("grep -c Live /proc/modules"), "5\n", "", 0)
	want(t, "sysctl after br_netfilter", v.user("/usr/sbin/sysctl net.bridge.bridge-nf-call-iptables net.ipv4.ip_local_port_range"),
		"net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_local_port_range = 32768\t60999\n", "", 0)
	want(t, "sysctl -w as a user", v.user("/usr/sbin/sysctl -w net.ipv4.ip_forward=1"), "", "sysctl: permission denied on key \"net.ipv4.ip_forward\"\n", 1)
	v.mustOK("printf 'net.ipv4.ip_forward = 1\\n; comment\\nnet/ipv4/ip_local_port_range = 1024 65000\\n' > /etc/sysctl.d/90-test.conf")
	want(t, "sysctl -p", v.root("sysctl -p /etc/sysctl.d/90-test.conf"), "net.ipv4.ip_forward = 1\nnet.ipv4.ip_local_port_range = 1024 65000\n", "", 0)
	want(t, "/proc/sys", v.user("cat /proc/sys/net/ipv4/ip_forward"), "1\n", "", 0)

	// A reboot loads what modules-load.d lists and applies sysctl.d.
	v.mustOK("echo br_netfilter > /etc/modules-load.d/k8s.conf")
	v.mustOK("sysctl -w vm.swappiness=10")
	if err := v.Reboot(); err != nil {
		t.Fatal(err)
	}
	if got := v.LoadedModules(); !slices.Equal(got, []string{"br_netfilter", "bridge", "llc", "stp"}) {
		t.Errorf("after reboot, loaded %v", got)
	}
	if s, _ := v.Sysctl("vm.swappiness"); s != "60" {
		t.Errorf("vm.swappiness %q after reboot, want the default", s)
	}
	if s, _ := v.Sysctl("net.ipv4.ip_forward"); s != "1" {
		t.Errorf("net.ipv4.ip_forward %q after reboot, want sysctl.d's 1", s)
	}
}

// unattended-upgrades holds the locks for a number of attempts: apt-get
// update, apt-mark and an apt-get that does not wait each make one, one
// given DPkg::Lock::Timeout=N up to N.
func TestDpkgLockHeldForAWhile(t *testing.T) {
	v := newVM(t, Options{UpdatedLists: true})
	v.HoldAptLocks(10)
	want(t, "update", v.root("apt-get update -o DPkg::Lock::Timeout=60"), "",
		"E: Could not get lock /var/lib/apt/lists/lock. It is held by process 2425 (unattended-upgr)\n"+
			"N: Be aware that removing the lock file is not a solution and may break your system.\n"+
			"E: Unable to lock directory /var/lib/apt/lists/\n", 100)
	wantCode(t, "apt-mark", v.root("apt-mark hold socat"), 100, "", "dpkg frontend lock was locked by another process")
	wantCode(t, "too short a timeout", v.root("apt-get install -y -o DPkg::Lock::Timeout=0 socat"), 100, "", "It is held by process 2425 (unattended-upgr)")
	// 7 attempts left: 5 are not enough, 2 more and the third succeeds.
	wantCode(t, "gives up after 5", v.root("apt-get install -y -o DPkg::Lock::Timeout=5 socat"), 100, "Waiting for cache lock", "E: Could not get lock /var/lib/dpkg/lock-frontend")
	if v.Installed("socat") {
		t.Fatal("installed under a held lock")
	}
	wantCode(t, "waits", v.root("apt-get install -y -o DPkg::Lock::Timeout=5 socat"), 0, "Waiting for cache lock", "")
	wantCode(t, "free", v.root("apt-get install -y conntrack"), 0, "Setting up conntrack", "")
	if !v.Installed("socat") {
		t.Error("socat is not installed")
	}
}

// A built-in module is in modules.builtin, not in /proc/modules or lsmod,
// and modprobe of it succeeds without loading anything.
func TestBuiltInModules(t *testing.T) {
	v := newVM(t, Options{})
	wantCode(t, "modules.builtin", v.user("cat /lib/modules/$(uname -r)/modules.builtin"), 0, "kernel/fs/ext4/ext4.ko\n", "")
	want(t, "modprobe ext4", v.root("modprobe -a ext4 dm-mod overlay"), "", "", 0)
	if got := v.LoadedModules(); len(got) != 1 || got[0] != "overlay" {
		t.Errorf("loaded modules %v", got)
	}
	if r := v.user("cat /proc/modules; lsmod"); strings.Contains(r.stdout, "ext4") || strings.Contains(r.stdout, "dm_mod") {
		t.Errorf("a built-in module listed: %q", r.stdout)
	}
}

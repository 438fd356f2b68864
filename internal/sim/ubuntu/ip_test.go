package ubuntu

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"
)

// ip addr show prints the loopback and the NIC with the machine's
// addresses, one line per address with -o; the loopback's line is
// byte for byte the real iproute2's on this machine (when it has ip and
// the usual 127.0.0.1/8 on lo).
func TestIPAddrShow(t *testing.T) {
	v := newVM(t, Options{Addresses: []netip.Prefix{netip.MustParsePrefix("10.0.0.5/24"), netip.MustParsePrefix("fd00::5/64")}})
	got := v.user("ip -o -4 addr show")
	wantLines := []string{
		`1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever`,
		`2: ens3    inet 10.0.0.5/24 scope global ens3\       valid_lft forever preferred_lft forever`,
	}
	want(t, "ip -o -4 addr show", got, strings.Join(wantLines, "\n")+"\n", "", 0)
	if got := v.user("ip -o -6 addr show dev ens3"); !strings.Contains(got.stdout, "inet6 fd00::5/64 scope global ens3") || strings.Contains(got.stdout, "inet ") {
		t.Errorf("ip -o -6 addr show dev ens3: %v", got)
	}
	wantCode(t, "an unknown device", v.user("ip addr show dev eth9"), 1, "", `Device "eth9" does not exist.`)
	wantCode(t, "ip link", v.user("ip link"), 1, "", "not modelled")

	real, err := exec.Command("ip", "-o", "-4", "addr", "show", "dev", "lo").Output()
	if err != nil || !strings.Contains(string(real), " 127.0.0.1/8 ") {
		t.Skipf("no real ip, or lo without 127.0.0.1/8 here: %v", err)
	}
	if line := strings.TrimSuffix(string(real), "\n"); line != wantLines[0] {
		t.Errorf("the real ip prints %q, the fake %q", line, wantLines[0])
	}
}

// The machine has a default route per family its NIC has an address of,
// in `ip route` and in /proc/net/route and /proc/net/ipv6_route in the
// kernel's formats; SetDefaultRoute(false) takes them away (the link
// routes stay), and a reboot does not bring them back.
func TestDefaultRoute(t *testing.T) {
	v := newVM(t, Options{Addresses: []netip.Prefix{netip.MustParsePrefix("10.0.0.5/24"), netip.MustParsePrefix("fd00::5/64")}})
	if !v.HasDefaultRoute() {
		t.Fatal("a fresh machine has no default route")
	}
	want(t, "ip route", v.user("ip route"), "default via 10.0.0.1 dev ens3 proto dhcp src 10.0.0.5 metric 100\n10.0.0.0/24 dev ens3 proto kernel scope link src 10.0.0.5 metric 100\n", "", 0)
	wantCode(t, "ip -6 route show default", v.user("ip -6 route show default"), 0, "default via fe80::1 dev ens3 proto ra", "")
	// What the kernel prints (the lines padded to 127 characters), and
	// what k8s.io/apimachinery/pkg/util/net reads: a destination of 0
	// is a default route, through the interface of the first field.
	route := v.user("cat /proc/net/route").stdout
	lines := strings.Split(strings.TrimSuffix(route, "\n"), "\n")
	if len(lines) != 3 || len(lines[1]) != 127 || !strings.HasPrefix(lines[1], "ens3\t00000000\t0100000A\t0003\t") || !strings.HasPrefix(lines[2], "ens3\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t") {
		t.Errorf("/proc/net/route:\n%s", route)
	}
	v6 := v.user("cat /proc/net/ipv6_route").stdout
	if !strings.Contains(v6, "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     ens3\n") {
		t.Errorf("/proc/net/ipv6_route:\n%s", v6)
	}

	v.SetDefaultRoute(false)
	if err := v.Reboot(); err != nil {
		t.Fatal(err)
	}
	if v.HasDefaultRoute() {
		t.Error("a default route after SetDefaultRoute(false) and a reboot")
	}
	want(t, "ip route without a default route", v.user("ip route"), "10.0.0.0/24 dev ens3 proto kernel scope link src 10.0.0.5 metric 100\n", "", 0)
	if got := v.user("cat /proc/net/route").stdout; strings.Contains(got, "\t0003\t") || !strings.Contains(got, "ens3\t0000000A\t") {
		t.Errorf("/proc/net/route without a default route:\n%s", got)
	}
	if got := v.user("cat /proc/net/ipv6_route").stdout; strings.Contains(got, "fe80") {
		t.Errorf("/proc/net/ipv6_route without a default route:\n%s", got)
	}
	v.SetDefaultRoute(true)
	wantCode(t, "ip route show default", v.user("ip route show default"), 0, "default via 10.0.0.1 dev ens3", "")
}

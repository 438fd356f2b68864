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
	wantCode(t, "ip route", v.user("ip route"), 1, "", "not modelled")

	real, err := exec.Command("ip", "-o", "-4", "addr", "show", "dev", "lo").Output()
	if err != nil || !strings.Contains(string(real), " 127.0.0.1/8 ") {
		t.Skipf("no real ip, or lo without 127.0.0.1/8 here: %v", err)
	}
	if line := strings.TrimSuffix(string(real), "\n"); line != wantLines[0] {
		t.Errorf("the real ip prints %q, the fake %q", line, wantLines[0])
	}
}

package system

import (
	"os/exec"
	"testing"
)

// The parser reads what the real procps sysctl prints, missing keys and
// tab-separated values included. Skipped where sysctl is not installed.
func TestParseSysctlReadsTheRealSysctl(t *testing.T) {
	bin, err := exec.LookPath("sysctl")
	if err != nil {
		t.Skip("sysctl is not installed")
	}
	out, _ := exec.Command(bin, "kernel.ostype", "net.ipv4.ip_local_port_range", "mgmtkit.no.such.key").Output()
	got := parseSysctl(out)
	if got["kernel.ostype"] != "Linux" {
		t.Errorf("kernel.ostype = %q in %v (output %q)", got["kernel.ostype"], got, out)
	}
	if _, ok := got["mgmtkit.no.such.key"]; ok {
		t.Error("a missing key parsed")
	}
	if r, ok := got["net.ipv4.ip_local_port_range"]; ok && len(r) < 3 {
		t.Errorf("port range %q", r)
	}
}

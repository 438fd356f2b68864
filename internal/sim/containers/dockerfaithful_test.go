package containers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

func TestDockerdValidatesInsecureRegistries(t *testing.T) {
	w := newWorld(t)
	wk := w.node("worker", "192.168.0.11", "docker.io")
	for _, tc := range []struct {
		entry string
		err   string // dockerd's refusal; "" when it starts
		kept  string // what it keeps
	}{
		{"192.168.0.10:5000", "", "192.168.0.10:5000"},
		{"http://Reg.Example.com:5000", "", "Reg.Example.com:5000"},
		{"[fd00::1]:5000", "", "[fd00::1]:5000"},
		{"10.0.0.0/8", "", "10.0.0.0/8"},
		{"", `insecure registry  is not valid: invalid host ""`, ""},
		{"reg.example.com:5000/", `invalid host "reg.example.com"`, ""},
		{"-reg.example.com", "Cannot begin or end with a hyphen", ""},
		{"ftp://reg.example.com", "should not contain '://'", ""},
		{"reg.example.com:99999", `invalid port "99999"`, ""},
		{"reg example", `invalid host "reg example"`, ""},
	} {
		wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["192.168.0.9:5000", "`+tc.entry+`"]}`)
		if tc.err == "" {
			wk.ok("systemctl restart docker")
			if got := containers.Docker(wk.Machine).Config().InsecureRegistries; !slices.Equal(got, []string{"192.168.0.9:5000", tc.kept}) {
				t.Errorf("%q: loaded %v", tc.entry, got)
			}
			continue
		}
		// A reload keeps what was loaded; a start fails.
		wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["192.168.0.9:5000"]}`)
		wk.ok("systemctl restart docker")
		wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["192.168.0.9:5000", "`+tc.entry+`"]}`)
		wk.ok("systemctl reload docker")
		if got := containers.Docker(wk.Machine).Config().InsecureRegistries; !slices.Equal(got, []string{"192.168.0.9:5000"}) {
			t.Errorf("%q: a reload loaded %v", tc.entry, got)
		}
		wk.fails("systemctl restart docker", 1, "Job for docker.service failed")
		if err := containers.CheckInsecureRegistry(tc.entry); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: dockerd says %v, want %q", tc.entry, err, tc.err)
		}
	}
}

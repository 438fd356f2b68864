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

func TestDockerLoginWithTheDaemonDownLogsInClientSide(t *testing.T) {
	w := newWorld(t)
	ca := containers.GenerateCA("test CA")
	tlsReg := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca, Username: "user01", Password: "s3cret"})
	w.net.AddRegistry("192.168.0.20", 443, tlsReg)
	httpReg := containers.NewRegistry(containers.RegistryOptions{Username: "user01", Password: "s3cret"})
	w.net.AddRegistry("192.168.0.21", 5000, httpReg)
	n := w.node("worker", "192.168.0.11", "docker.io")
	n.ok("echo '192.168.0.20 registry.example.com' >> /etc/hosts; echo '192.168.0.21 plain.example.com' >> /etc/hosts")
	n.ok("mkdir -p /etc/docker/certs.d/registry.example.com")
	n.write("/etc/docker/certs.d/registry.example.com/ca.crt", string(ca))
	n.write("/etc/docker/daemon.json", `{"insecure-registries": ["plain.example.com:5000"]}`)
	n.ok("systemctl stop docker")

	// HTTPS: the CLI reads the CA itself and stores the credentials.
	if out := n.ok("docker login -u user01 --password-stdin registry.example.com", "s3cret\n"); !strings.Contains(out, "Login Succeeded") {
		t.Errorf("login: %q", out)
	}
	if b, _ := n.Server().FS().ReadFile("/root/.docker/config.json"); !strings.Contains(string(b), `"registry.example.com"`) {
		t.Errorf("config.json: %s", b)
	}
	r := n.root("docker login -u user01 --password-stdin registry.example.com", "wrong\n")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "login attempt to https://registry.example.com/v2/ failed with status: 401 Unauthorized") {
		t.Errorf("wrong password: %v", r)
	}
	// HTTP: daemon.json's insecure-registries are the daemon's, not the
	// CLI's.
	r = n.root("docker login -u user01 --password-stdin plain.example.com:5000", "s3cret\n")
	if r.code != 1 || !strings.HasPrefix(r.stderr, `Get "https://plain.example.com:5000/v2/": http: server gave HTTP response to HTTPS client`) {
		t.Errorf("HTTP registry with the daemon down: %v", r)
	}
	n.ok("systemctl start docker")
	n.ok("docker login -u user01 --password-stdin plain.example.com:5000", "s3cret\n")
}

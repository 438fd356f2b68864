package registry_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
)

// withContainerd2 is a cloud whose catalog also has containerd.io 2.2.0.
var withContainerd2 = sim.Options{Catalog: func() *ubuntu.Catalog {
	c := ubuntu.DefaultCatalog()
	containers.AddContainerd2(c)
	return c
}}

// serve puts an HTTP registry holding app:1 at 192.168.0.10:5000 (with
// basic auth when user is set) and returns the connection to it by name.
func (n *node) serve(user, password string) registry.Connection {
	n.t.Helper()
	r := containers.NewRegistry(containers.RegistryOptions{Username: user, Password: password})
	r.Push("app:1")
	n.cloud.AddExternalRegistry("192.168.0.10", 5000, r)
	c := httpConn("registry.example.com:5000")
	c.HostsString = "192.168.0.10 registry.example.com"
	c.Username, c.Password = user, remote.NewSecret(password)
	return c
}

// restartContainerd writes config.toml and restarts containerd.
func (n *node) restartContainerd(config string) {
	n.t.Helper()
	n.write(registry.ContainerdConfig, config)
	if _, err := n.ssh.Run(n.ctx, remote.Cmd{Args: []string{"systemctl", "restart", "containerd"}, Sudo: true}); err != nil {
		n.t.Fatal(err)
	}
}

// kubeletPull pulls the registry's app:1 as the kubelet does.
func (n *node) kubeletPull() error {
	return containers.KubeletPull(n.ctx, n.cloud, n.host.Machine, "registry.example.com:5000/app:1")
}

// Bug 1: config_path naming several directories is trusted on 1.x, which
// splits it, and on 2.2, whose transfer-service pulls take it whole
// (containerd#12808), and stays trusted once 2.x splits it.
func TestContainerdConfigPathListIsTrustedHoweverItIsRead(t *testing.T) {
	const list = `config_path = "/etc/containerd/certs.d:/etc/docker/certs.d"`
	for _, tc := range []struct{ name, pkg, config, fixed string }{
		{"debian 1.6.20", "containerd=1.6.20~ds1-1+deb12u3", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  " + list + "\n", ""},
		{"ubuntu 1.7.12", "containerd", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  " + list + "\n", ""},
		// containerd config default of 2.2.0; then as if #12808 were
		// fixed by splitting (2.2's local pulls already split).
		{"containerd.io 2.2.0", "containerd.io=2.2.0-1", "version = 3\n[plugins.\"io.containerd.cri.v1.images\".registry]\n  " + list + "\n",
			"version = 3\n[plugins.\"io.containerd.cri.v1.images\"]\n  use_local_image_pull = true\n[plugins.\"io.containerd.cri.v1.images\".registry]\n  " + list + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNodeIn(t, withContainerd2, tc.pkg, "cri-tools")
			conn := n.serve("", "")
			n.restartContainerd(tc.config)
			restarts := n.host.Machine.Service("containerd").Restarts
			if err := n.kubeletPull(); err == nil {
				t.Fatal("the pull works before trust: the test proves nothing")
			}
			if _, err := n.trust(conn); err != nil {
				t.Fatal(err)
			}
			if err := n.kubeletPull(); err != nil {
				t.Errorf("kubelet pull after trust: %v", err)
			}
			if b, _ := n.host.FS().ReadFile(registry.ContainerdConfig); string(b) != tc.config {
				t.Errorf("config.toml changed:\n%s", b)
			}
			if got := n.host.Machine.Service("containerd").Restarts; got != restarts {
				t.Errorf("containerd restarted %d times for a config_path it already had", got-restarts)
			}
			if res, err := n.trust(conn); err != nil || res.Changed {
				t.Errorf("second run: %+v, %v", res, err)
			}
			if tc.fixed != "" {
				n.restartContainerd(tc.fixed)
				if err := n.kubeletPull(); err != nil {
					t.Errorf("kubelet pull once containerd splits the list: %v", err)
				}
			}
		})
	}
}

// Bug 3: a Docker CE node (docker-ce with containerd.io's packaged
// config.toml, CRI disabled) gets Docker configured and containerd
// skipped, with a hint that exists for its containerd.
func TestDockerCENodeConfiguresDockerAndSkipsContainerd(t *testing.T) {
	for _, tc := range []struct{ name, containerdIO, hint, noHint string }{
		{"containerd 1.7", "containerd.io=1.7.12-1", "containerd config default", "config migrate"},
		{"containerd 1.6", "containerd.io=1.6.33-1", "containerd config default", "config migrate"},
		{"containerd 2.2", "containerd.io=2.2.0-1", "containerd config migrate", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNodeIn(t, withContainerd2, tc.containerdIO, "docker-ce", "cri-tools")
			conn := n.serve("", "")
			config, _ := n.host.FS().ReadFile(registry.ContainerdConfig)
			restarts := n.host.Machine.Service("containerd").Restarts
			res, err := n.trust(conn)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Detail, "containerd") || !strings.Contains(res.Detail, "CRI") || !strings.Contains(res.Detail, tc.hint) ||
				(tc.noHint != "" && strings.Contains(res.Detail, tc.noHint)) {
				t.Errorf("result %q: want the skipped containerd, why, and %q", res.Detail, tc.hint)
			}
			if _, err := n.ssh.Run(n.ctx, remote.Cmd{Args: []string{"docker", "pull", "registry.example.com:5000/app:1"}, Sudo: true}); err != nil {
				t.Errorf("docker pull: %v", err)
			}
			if b, _ := n.host.FS().ReadFile(registry.ContainerdConfig); string(b) != string(config) {
				t.Errorf("config.toml changed:\n%s", b)
			}
			if n.host.FS().Exists(registry.ContainerdCertsDir) || n.host.Machine.Service("containerd").Restarts != restarts {
				t.Error("the skipped containerd got hosts.toml files or a restart")
			}
			if res, err := n.trust(conn); err != nil || res.Changed {
				t.Errorf("second run: %+v, %v", res, err)
			}
		})
	}
}

// A versionless config.toml whose CRI is on is still refused, with a
// hint for the containerd found: 1.x has no `containerd config migrate`.
func TestVersionlessContainerdConfigHintsFitTheRelease(t *testing.T) {
	n := newNodeWith(t, "containerd", "cri-tools")
	n.write(registry.ContainerdConfig, "[plugins.cri]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n")
	_, err := n.trust(httpConn("10.0.0.5:5000"))
	if err == nil || strings.Contains(err.Error(), "config migrate") || !strings.Contains(err.Error(), "version = 2") {
		t.Errorf("err = %v, want a hint for containerd 1.7", err)
	}
}

// Bug 4: legacy credentials (registry.configs.HOST.auth) are what
// containerd accepts beside config_path: trust goes ahead and the kubelet
// pulls. configs.tls is still refused, with containerd's reason.
func TestContainerdLegacyCredentialsAreKeptBesideConfigPath(t *testing.T) {
	n := newNodeWith(t, "containerd", "cri-tools")
	conn := n.serve("user01", "s3cret")
	legacy := `version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com:5000".auth]
  username = "user01"
  password = "s3cret"
`
	n.restartContainerd(legacy)
	if _, err := n.trust(conn); err != nil {
		t.Fatal(err)
	}
	c := containers.Containerd(n.host.Machine).Config()
	if c.ConfigPath != registry.ContainerdCertsDir || c.CRIError != "" || !c.LegacyConfigs {
		t.Errorf("containerd loaded %+v", c)
	}
	if err := n.kubeletPull(); err != nil {
		t.Errorf("kubelet pull: %v", err)
	}
	if res, err := n.trust(conn); err != nil || res.Changed {
		t.Errorf("second run: %+v, %v", res, err)
	}

	n = newNodeWith(t, "containerd", "cri-tools")
	n.write(registry.ContainerdConfig, `version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com:5000".tls]
  insecure_skip_verify = true
`)
	_, err := n.trust(httpConn("registry.example.com:5000"))
	if err == nil || !strings.Contains(err.Error(), "`configs.tls` cannot be set when `config_path` is provided") {
		t.Errorf("err = %v, want containerd's own reason", err)
	}
}

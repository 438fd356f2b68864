package kubeadm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// tomlAt returns the value at the dotted keys of a TOML document.
func tomlAt(t *testing.T, doc string, keys ...string) any {
	t.Helper()
	var v any = map[string]any{}
	if err := toml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not TOML: %v\n%s", err, doc)
	}
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func httpRegistry(server string) registry.Connection {
	ct := registry.HTTP
	return registry.Connection{ConnectionType: &ct, Server: server}
}

func TestInstallContainerdAndRegistryTrustKeepEachOthersSettings(t *testing.T) {
	n := newSimNode(t, sim.Options{}, "containerd", "cri-tools")
	conn := []registry.Connection{httpRegistry("10.0.0.50:5000")}
	trust := func() (lcm.Result, error) {
		return registry.ConfigureRegistryTrust(n.ctx, n.ssh, conn, registry.TrustOptions{})
	}
	install := func() (lcm.Result, error) { return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{}) }
	n.twice("trust", trust)
	n.twice("InstallContainerd", install)
	for i, step := range []func() (lcm.Result, error){trust, install} {
		if res, err := step(); err != nil || res.Changed {
			t.Errorf("step %d again: %v, %v", i, res, err)
		}
	}
	cfg := n.read(kubeadm.ContainerdConfig)
	cri := []string{"plugins", "io.containerd.grpc.v1.cri"}
	for _, c := range []struct {
		keys []string
		want any
	}{
		{[]string{"version"}, int64(2)},
		{append(cri, "registry", "config_path"), registry.ContainerdCertsDir},
		{append(cri, "containerd", "runtimes", "runc", "options", "SystemdCgroup"), true},
		{append(cri, "containerd", "runtimes", "runc", "runtime_type"), "io.containerd.runc.v2"},
		{append(cri, "sandbox_image"), kubeadm.SandboxImage(kubeadm.DefaultKubernetesVersion)},
	} {
		if got := tomlAt(t, cfg, c.keys...); got != c.want {
			t.Errorf("%s = %v, want %v", strings.Join(c.keys, "."), got, c.want)
		}
	}
	if got := containers.Containerd(n.host.Machine).Config(); got.ConfigPath != registry.ContainerdCertsDir || got.CRIError != "" {
		t.Errorf("containerd runs with %+v", got)
	}
	if got := n.read(kubeadm.CrictlConfig); !strings.Contains(got, "runtime-endpoint: unix:///run/containerd/containerd.sock\n") {
		t.Errorf("crictl.yaml:\n%s", got)
	}
	checkWithRealContainerd(t, cfg, "SystemdCgroup = true", `runtime_type = "io.containerd.runc.v2"`, `config_path = "/etc/containerd/certs.d"`,
		`sandbox_image = "`+kubeadm.SandboxImage(kubeadm.DefaultKubernetesVersion)+`"`)
}

func TestInstallContainerdFromNothingWithProxy(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	opts := kubeadm.RuntimeOptions{Version: "1.36.2", Proxy: proxyWithPassword}
	res := n.twice("InstallContainerd", func() (lcm.Result, error) { return kubeadm.InstallContainerd(n.ctx, n.ssh, opts) })
	n.noSecretIn("s3cr3t-pw", res.Detail)
	if !n.host.Machine.Installed("containerd") || !n.host.Machine.Service("containerd").Active {
		t.Fatal("containerd not installed and running")
	}
	env := "/etc/systemd/system/containerd.service.d/mgmtkit-proxy.env"
	for _, f := range []string{env, "/etc/systemd/system/containerd.service.d/mgmtkit-proxy.conf"} {
		if got := n.mode(f); got != "0600 0" {
			t.Errorf("%s: %s, want 0600 0", f, got)
		}
	}
	if got := n.read(env); !strings.Contains(got, "HTTPS_PROXY=http://user:s3cr3t-pw@proxy.example.com:3128\n") || !strings.Contains(got, "NO_PROXY=localhost,127.0.0.1,10.0.0.0/24\n") {
		t.Errorf("proxy environment:\n%s", got)
	}
	if tomlAt(t, n.read(kubeadm.ContainerdConfig), "plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "runc", "options", "SystemdCgroup") != true {
		t.Errorf("config.toml:\n%s", n.read(kubeadm.ContainerdConfig))
	}
	restarts := n.host.Machine.Service("containerd").Restarts
	opts.Proxy = nil
	if res, err := kubeadm.InstallContainerd(n.ctx, n.ssh, opts); err != nil || !res.Changed {
		t.Fatalf("removing the proxy: %v, %v", res, err)
	}
	if n.host.FS().Exists(env) {
		t.Error("the proxy environment stays")
	}
	if n.host.Machine.Service("containerd").Restarts != restarts+1 {
		t.Error("containerd not restarted without its proxy")
	}
}

func TestInstallContainerd2EnablesTheCRIOfContainerdIO(t *testing.T) {
	opts := sim.Options{Catalog: func() *ubuntu.Catalog {
		c := ubuntu.DefaultCatalog()
		containers.AddContainerd2(c)
		return c
	}}
	n := newSimNode(t, opts, "containerd.io=2.2.0-1")
	if !containers.Containerd(n.host.Machine).Config().CRIDisabled {
		t.Fatal("containerd.io's CRI is on before the step: the test proves nothing")
	}
	n.twice("InstallContainerd", func() (lcm.Result, error) {
		return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{Package: "containerd.io"})
	})
	cfg := n.read(kubeadm.ContainerdConfig)
	if tomlAt(t, cfg, "version") != int64(3) || tomlAt(t, cfg, "disabled_plugins") != nil ||
		tomlAt(t, cfg, "plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", "runc", "options", "SystemdCgroup") != true ||
		tomlAt(t, cfg, "plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox") != kubeadm.SandboxImage(kubeadm.DefaultKubernetesVersion) {
		t.Errorf("config.toml:\n%s", cfg)
	}
	if got := containers.Containerd(n.host.Machine).Config(); got.CRIDisabled || got.Version != 3 || got.CRIError != "" {
		t.Errorf("containerd runs with %+v", got)
	}
}

func TestInstallContainerdRefusesWhatItCannotEdit(t *testing.T) {
	n := newSimNode(t, sim.Options{}, "containerd")
	for _, tc := range []struct{ name, config, want string }{
		{"not TOML", "version = = 2\n", "not valid TOML"},
		{"versionless", "[plugins.cri]\n  sandbox_image = \"x\"\n", "no version"},
		{"runc not a table", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  runtimes = 5\n", "not a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.write(kubeadm.ContainerdConfig, tc.config)
			_, err := kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), kubeadm.ContainerdConfig) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if n.read(kubeadm.ContainerdConfig) != tc.config {
				t.Error("the file was changed")
			}
		})
	}
	n.commands()
	_, err := kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{Version: "1.2", Package: "docker", Proxy: &system.Proxy{}})
	if pe, ok := err.(*lcm.ParamsError); !ok || len(pe.Problems) != 3 {
		t.Errorf("got %v, want 3 problems", err)
	}
	if cmds := n.commands(); len(cmds) != 0 {
		t.Errorf("commands ran: %q", cmds)
	}
}

// checkWithRealContainerd has the real containerd, when installed, load
// cfg (`containerd --config F config dump` parses and migrates the file
// and prints the configuration it would run with, without starting)
// and checks that the dump holds want.
func checkWithRealContainerd(t *testing.T, cfg string, want ...string) {
	t.Helper()
	bin, err := exec.LookPath("containerd")
	if err != nil {
		t.Log("no containerd on this machine: config.toml not checked by the real one")
		return
	}
	f := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", f, "config", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the real containerd's dump lacks %q:\n%s", w, out)
		}
	}
}

// A run that rewrites config.toml and fails before restarting containerd
// leaves the restart to the next run.
func TestInstallContainerdOwesTheRestartAcrossAFailure(t *testing.T) {
	n := newSimNode(t, sim.Options{}, "containerd")
	restarts := n.host.Machine.Service("containerd").Restarts
	if _, err := kubeadm.InstallContainerd(n.ctx, failFirst(n.ssh, "systemctl", "restart"), kubeadm.RuntimeOptions{}); err == nil {
		t.Fatal("no failure")
	}
	if n.host.Machine.Service("containerd").Restarts != restarts {
		t.Fatal("restarted despite the failure")
	}
	if !strings.Contains(n.read(kubeadm.ContainerdConfig), "SystemdCgroup") {
		t.Fatal("config.toml not written before the failure: the test proves nothing")
	}
	n.twice("InstallContainerd", func() (lcm.Result, error) { return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{}) })
	if got := n.host.Machine.Service("containerd").Restarts; got != restarts+1 {
		t.Errorf("containerd restarted %d times, want the owed restart", got-restarts)
	}
}

// The nodes reach the Internet only through a password proxy:
// containerd, given ProxyFor's settings, pulls public images through it
// and a private registry directly, because ProxyFor puts the registry in
// no_proxy; left out, the registry is unreachable through the proxy.
func TestInstallContainerdPullsThroughTheProxyAndRegistriesDirectly(t *testing.T) {
	n := newSimNode(t, sim.Options{}, "containerd", "cri-tools")
	n.cloud.SetDirectInternet(false)
	proxy := n.cloud.AddProxy("10.10.0.1", 3128, containers.ProxyOptions{Username: "user", Password: "s3cr3t-pw"})
	reg := containers.NewRegistry(containers.RegistryOptions{})
	reg.Push("app:1")
	n.cloud.AddExternalRegistry("192.168.0.10", 5000, reg)
	if _, err := registry.ConfigureRegistryTrust(n.ctx, n.ssh, []registry.Connection{httpRegistry("192.168.0.10:5000")}, registry.TrustOptions{}); err != nil {
		t.Fatal(err)
	}
	params := kubeadm.ClusterParams{Proxy: &kubeadm.Proxy{Proxy: system.Proxy{
		HTTPProxy: remote.NewSecret("http://user:s3cr3t-pw@10.10.0.1:3128"), HTTPSProxy: remote.NewSecret("http://user:s3cr3t-pw@10.10.0.1:3128"),
	}}}
	pull := func(image string) error { return containers.KubeletPull(n.ctx, n.cloud, n.host.Machine, image) }
	for _, tc := range []struct {
		name       string
		registries []string
		private    bool
	}{
		{"registry left out of no_proxy", nil, false},
		{"registry in no_proxy", []string{"192.168.0.10:5000"}, true},
	} {
		settings := kubeadm.ProxyFor(params, []string{n.host.NICAddress}, n.host.NICAddress, tc.registries)
		if _, err := kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{Proxy: settings}); err != nil {
			t.Fatal(err)
		}
		if err := pull("registry:2"); err != nil {
			t.Errorf("%s: Docker Hub through the proxy: %v", tc.name, err)
		}
		if err := pull("192.168.0.10:5000/app:1"); (err == nil) != tc.private {
			t.Errorf("%s: the private registry: %v", tc.name, err)
		}
	}
	var users []string
	for _, r := range proxy.Requests() {
		users = append(users, r.User)
	}
	if !slices.Contains(users, "user") {
		t.Errorf("nothing went through the proxy with its login: %+v", proxy.Requests())
	}
	n.noSecretIn("s3cr3t-pw")
}

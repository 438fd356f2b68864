package containers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

// configPath is the config.toml that sets config_path, as the trust step
// writes it.
const configPath = `version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "/etc/containerd/certs.d"
`

func TestContainerdReadsHostsTomlOnceConfigPathIsLoaded(t *testing.T) {
	w := newWorld(t)
	registryVM(w, "192.168.0.10")
	ca := containers.GenerateCA("test CA")
	tlsReg := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca})
	tlsReg.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 443, tlsReg)
	n := w.node("worker", "192.168.0.11", "containerd", "cri-tools")
	const pull = "crictl pull 192.168.0.10:5000/app:1"

	r := n.fails(pull, 1, `err="rpc error: code = Unknown desc = failed to pull and unpack image \"192.168.0.10:5000/app:1\": failed to resolve reference \"192.168.0.10:5000/app:1\": failed to do request: Head \"https://192.168.0.10:5000/v2/app/manifests/1\": http: server gave HTTP response to HTTPS client"`)
	if !strings.Contains(r.stderr, `level=warning msg="image connect using default endpoints: [unix:///run/containerd/containerd.sock`) ||
		!strings.Contains(r.stderr, `level=fatal msg="pulling image: rpc error: code = Unknown desc = failed to pull and unpack image`) {
		t.Errorf("crictl's log lines: %q", r.stderr)
	}
	n.write("/etc/crictl.yaml", "runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n")

	// hosts.toml alone does nothing: config_path is unset.
	n.write("/etc/containerd/certs.d/192.168.0.10:5000/hosts.toml", "server = \"http://192.168.0.10:5000\"\n\n[host.\"http://192.168.0.10:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n")
	r = n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("crictl warns with crictl.yaml: %q", r.stderr)
	}
	// config_path takes a restart.
	n.write("/etc/containerd/config.toml", configPath)
	n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
	if c := containers.Containerd(n.Machine).Config(); c.ConfigPath != "" {
		t.Errorf("config_path loaded without a restart: %+v", c)
	}
	n.ok("systemctl restart containerd")
	if c := containers.Containerd(n.Machine).Config(); c != (containers.ContainerdConfig{Release: "1.7.12", Exists: true, Version: 2, ConfigPath: "/etc/containerd/certs.d"}) {
		t.Errorf("loaded %+v", c)
	}
	if got := n.ok(pull); got != "Image is up to date for "+sampleID+"\n" {
		t.Errorf("crictl pull: %q", got)
	}
	if got := n.ok("crictl images -q"); got != sampleID+"\n" {
		t.Errorf("crictl images -q: %q", got)
	}
	if got := n.ok("crictl images"); !strings.Contains(got, "192.168.0.10:5000/app   1         b9de31fcec104   ") {
		t.Errorf("crictl images:\n%s", got)
	}
	if got := n.ok("crictl inspecti 192.168.0.10:5000/app:1"); !strings.Contains(got, `"repoTags": [`+"\n"+`      "192.168.0.10:5000/app:1"`) {
		t.Errorf("inspecti:\n%s", got)
	}
	n.fails("crictl inspecti 192.168.0.10:5000/app:2", 1, `no such image \"192.168.0.10:5000/app:2\" present`)
	if got := n.ok("ctr -n k8s.io images ls -q"); !strings.Contains(got, "192.168.0.10:5000/app:1\n") || !strings.Contains(got, sampleID+"\n") {
		t.Errorf("ctr images ls -q:\n%s", got)
	}
	if got := n.ok("ctr images ls -q"); got != "" {
		t.Errorf("the default namespace holds %q", got)
	}
	n.fails("crictl pull 192.168.0.10:5000/app:2", 1, `code = NotFound desc = failed to pull and unpack image \"192.168.0.10:5000/app:2\": failed to resolve reference \"192.168.0.10:5000/app:2\": 192.168.0.10:5000/app:2: not found`)

	// An HTTPS registry: its name through /etc/hosts, its CA through ca=,
	// both read at pull time.
	const pullTLS = "crictl pull registry.example.com/app:1"
	n.fails(pullTLS, 1, `Head \"https://registry.example.com/v2/app/manifests/1\": dial tcp: lookup registry.example.com on 127.0.0.53:53: no such host`)
	n.ok("echo '192.168.0.20 registry.example.com' >> /etc/hosts")
	n.fails(pullTLS, 1, "tls: failed to verify certificate: x509: certificate signed by unknown authority")
	n.write("/etc/containerd/certs.d/registry.example.com/hosts.toml", "server = \"https://registry.example.com\"\n\n[host.\"https://registry.example.com\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"ca.crt\"\n")
	n.fails(pullTLS, 1, `unable to read CA cert \"/etc/containerd/certs.d/registry.example.com/ca.crt\"`)
	n.write("/etc/containerd/certs.d/registry.example.com/ca.crt", string(containers.GenerateCA("another CA")))
	n.fails(pullTLS, 1, "x509: certificate signed by unknown authority")
	n.write("/etc/containerd/certs.d/registry.example.com/ca.crt", string(ca))
	n.ok(pullTLS)
	// skip_verify instead of a CA.
	n.write("/etc/containerd/certs.d/registry.example.com/hosts.toml", "server = \"https://registry.example.com\"\n\n[host.\"https://registry.example.com\"]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n")
	n.ok("rm /etc/containerd/certs.d/registry.example.com/ca.crt")
	n.ok(pullTLS)
	// Docker's layout without hosts.toml: *.crt are CAs.
	n.ok("rm /etc/containerd/certs.d/registry.example.com/hosts.toml")
	n.write("/etc/containerd/certs.d/registry.example.com/registry.crt", string(ca))
	n.ok(pullTLS)
	if got := len(tlsReg.Pulls()); got != 3 {
		t.Errorf("%d pulls reached the TLS registry, want 3", got)
	}
}

func TestContainerdConfigurations(t *testing.T) {
	w := newWorld(t)
	registryVM(w, "192.168.0.10")
	n := w.node("worker", "192.168.0.11", "containerd", "cri-tools")
	n.write("/etc/crictl.yaml", "runtime-endpoint: unix:///run/containerd/containerd.sock\n")
	const pull = "crictl pull 192.168.0.10:5000/app:1"

	// The legacy mirrors alone work, over http://.
	n.write("/etc/containerd/config.toml", `version = 2
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."192.168.0.10:5000"]
  endpoint = ["http://192.168.0.10:5000"]
`)
	n.ok("systemctl restart containerd")
	n.ok(pull)
	if err := containers.KubeletPull(w.ctx, w.net, n.Machine, "192.168.0.10:5000/app:1"); err != nil {
		t.Errorf("kubelet pull with legacy mirrors: %v", err)
	}

	// config_path with mirrors: containerd runs, its CRI plugin does not.
	n.write("/etc/containerd/config.toml", `version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."192.168.0.10:5000"]
  endpoint = ["http://192.168.0.10:5000"]
`)
	n.ok("systemctl restart containerd")
	c := containers.Containerd(n.Machine).Config()
	if !c.LegacyMirrors || c.ConfigPath == "" || c.CRIError != "invalid plugin config: `mirrors` cannot be set when `config_path` is provided" {
		t.Errorf("loaded %+v", c)
	}
	n.fails(pull, 1, `validate service connection: validate CRI v1 image API for endpoint \"unix:///run/containerd/containerd.sock\": rpc error: code = Unimplemented desc = unknown service runtime.v1.ImageService`)
	err := containers.KubeletPull(w.ctx, w.net, n.Machine, "192.168.0.10:5000/app:1")
	var pe *containers.PullError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "unknown service runtime.v1.ImageService") {
		t.Errorf("kubelet pull without CRI: %v", err)
	}
	// configs.tls cannot be combined either; configs.auth can.
	n.write("/etc/containerd/config.toml", configPath+`    [plugins."io.containerd.grpc.v1.cri".registry.configs."192.168.0.10:5000".tls]
      insecure_skip_verify = true
`)
	n.ok("systemctl restart containerd")
	if c := containers.Containerd(n.Machine).Config(); c.CRIError != "invalid plugin config: `configs.tls` cannot be set when `config_path` is provided" {
		t.Errorf("configs.tls: %+v", c)
	}
	n.write("/etc/containerd/config.toml", configPath+`    [plugins."io.containerd.grpc.v1.cri".registry.configs."192.168.0.10:5000".auth]
      username = "u"
      password = "p"
`)
	n.ok("systemctl restart containerd")
	if c := containers.Containerd(n.Machine).Config(); c.CRIError != "" || !c.LegacyConfigs {
		t.Errorf("configs.auth: %+v", c)
	}

	// Schema version 3 is containerd 2's: 1.7.12 reads it as version 2,
	// without a word, and ignores the v3 plugin's config_path.
	n.write("/etc/containerd/config.toml", `version = 3
[plugins."io.containerd.cri.v1.images".registry]
  config_path = "/etc/containerd/certs.d"
`)
	n.write("/etc/containerd/certs.d/192.168.0.10:5000/hosts.toml", "server = \"http://192.168.0.10:5000\"\n")
	n.ok("systemctl restart containerd")
	if c := containers.Containerd(n.Machine).Config(); c.Version != 3 || c.ConfigPath != "" || c.CRIError != "" {
		t.Errorf("version 3: %+v", c)
	}
	n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
	// Bad TOML stops it.
	n.write("/etc/containerd/config.toml", "version = \n")
	n.fails("systemctl restart containerd", 1, "Job for containerd.service failed")
	n.fails(pull, 1, "connect: no such file or directory")
	n.fails("systemctl restart containerd", 1, "Job for containerd.service failed")
	// containerd.io's own config disables the CRI plugin.
	n.ok("rm /etc/containerd/config.toml && systemctl start containerd")
	n.ok("echo 'disabled_plugins = [\"cri\"]' > /etc/containerd/config.toml && systemctl restart containerd")
	if c := containers.Containerd(n.Machine).Config(); !c.CRIDisabled || c.Version != 1 {
		t.Errorf("disabled cri: %+v", c)
	}
	n.fails(pull, 1, "unknown service runtime.v1.ImageService")
}

func TestCrictlErrors(t *testing.T) {
	w := newWorld(t)
	r := containers.NewRegistry(containers.RegistryOptions{Username: "user01", Password: "s3cret"})
	r.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 5000, r)
	n := w.node("worker", "192.168.0.11", "containerd", "cri-tools")
	n.write("/etc/crictl.yaml", "runtime-endpoint: unix:///run/containerd/containerd.sock\n")
	n.write("/etc/containerd/config.toml", configPath)
	n.write("/etc/containerd/certs.d/192.168.0.20:5000/hosts.toml", "server = \"http://192.168.0.20:5000\"\n")
	n.ok("systemctl restart containerd")
	const pull = "crictl pull 192.168.0.20:5000/app:1"

	n.fails(pull, 1, `failed to resolve reference \"192.168.0.20:5000/app:1\": unexpected status from HEAD request to http://192.168.0.20:5000/v2/app/manifests/1: 401 Unauthorized`)
	n.fails("crictl pull --creds user01:wrong 192.168.0.20:5000/app:1", 1, "401 Unauthorized")
	n.ok("crictl pull --creds user01:s3cret 192.168.0.20:5000/app:1")
	n.ok("crictl pull --auth dXNlcjAxOnMzY3JldA== 192.168.0.20:5000/app:1")

	rr := n.run(false, pull)
	if rr.code != 1 || !strings.Contains(rr.stderr, `dial unix /run/containerd/containerd.sock: connect: permission denied`) {
		t.Errorf("as ubuntu: %+v", rr)
	}
	n.ok("systemctl stop containerd")
	n.fails(pull, 1, `validate service connection: validate CRI v1 image API for endpoint \"unix:///run/containerd/containerd.sock\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\"`)
	if got := n.run(true, "crictl version").code; got != 1 {
		t.Errorf("crictl version with containerd down: exit %d", got)
	}
	n.ok("systemctl start containerd")
	if got := n.ok("crictl version"); !strings.Contains(got, "RuntimeName:  containerd\nRuntimeVersion:  v1.7.12\n") {
		t.Errorf("crictl version: %q", got)
	}
}

func TestKubeletPullUsesItsConfigJSON(t *testing.T) {
	w := newWorld(t)
	r := containers.NewRegistry(containers.RegistryOptions{Username: "user01", Password: "s3cret"})
	r.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 5000, r)
	n := w.node("worker", "192.168.0.11", "containerd")
	n.write("/etc/containerd/config.toml", configPath)
	n.write("/etc/containerd/certs.d/192.168.0.20:5000/hosts.toml", "server = \"http://192.168.0.20:5000\"\n")
	n.ok("systemctl restart containerd")
	ctx := context.Background()
	const image = "192.168.0.20:5000/app:1"

	err := containers.KubeletPull(ctx, w.net, n.Machine, image)
	want := `Failed to pull image "192.168.0.20:5000/app:1": rpc error: code = Unknown desc = failed to pull and unpack image "192.168.0.20:5000/app:1": failed to resolve reference "192.168.0.20:5000/app:1": unexpected status from HEAD request to http://192.168.0.20:5000/v2/app/manifests/1: 401 Unauthorized`
	if err == nil || err.Error() != want {
		t.Errorf("without credentials:\n got %v\nwant %s", err, want)
	}
	// root's Docker credentials are not the kubelet's.
	n.write("/root/.docker/config.json", `{"auths": {"192.168.0.20:5000": {"auth": "dXNlcjAxOnMzY3JldA=="}}}`)
	if err := containers.KubeletPull(ctx, w.net, n.Machine, image); err == nil {
		t.Error("the kubelet used root's Docker credentials")
	}
	n.write("/var/lib/kubelet/config.json", `{"auths": {"192.168.0.20:5000": {"auth": "dXNlcjAxOndyb25n"}}}`)
	if err := containers.KubeletPull(ctx, w.net, n.Machine, image); err == nil || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Errorf("wrong credentials: %v", err)
	}
	n.write("/var/lib/kubelet/config.json", `{"auths": {"http://192.168.0.20:5000/v1/": {"username": "user01", "password": "s3cret"}}}`)
	if err := containers.KubeletPull(ctx, w.net, n.Machine, image); err != nil {
		t.Errorf("username and password: %v", err)
	}
	n.write("/var/lib/kubelet/config.json", `{"auths": {"192.168.0.20:5000": {"auth": "dXNlcjAxOnMzY3JldA=="}}}`)
	if err := containers.KubeletPull(ctx, w.net, n.Machine, image); err != nil {
		t.Errorf("auth: %v", err)
	}
	if img, ok := containers.Containerd(n.Machine).Image(image); !ok || img.Source != "192.168.0.20:5000" {
		t.Errorf("containerd's image %+v %v", img, ok)
	}
	err = containers.KubeletPull(ctx, w.net, n.Machine, "192.168.0.20:5000/app:9")
	if err == nil || !strings.HasSuffix(err.Error(), `rpc error: code = NotFound desc = failed to pull and unpack image "192.168.0.20:5000/app:9": failed to resolve reference "192.168.0.20:5000/app:9": 192.168.0.20:5000/app:9: not found`) {
		t.Errorf("missing image: %v", err)
	}
	pulls := r.Pulls()
	if len(pulls) == 0 || pulls[len(pulls)-1] != (containers.PullRecord{Host: "worker", Runtime: "containerd", Image: "app:9"}) {
		t.Errorf("pulls %+v", pulls)
	}
}

// httpHostsToml is a hosts.toml that reaches a registry over HTTP.
func httpHostsToml(server string) string {
	return "server = \"http://" + server + "\"\n\n[host.\"http://" + server + "\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
}

func TestContainerdReleasesReadAConfigPathListTheirOwnWay(t *testing.T) {
	const list = "/etc/containerd/certs.d:/etc/docker/certs.d"
	for _, tc := range []struct {
		name, pkg, config string
		literal           bool
	}{
		// 1.6 and 1.7 split config_path (pkg/cri/server/image_pull.go).
		{"debian 1.6.20", "containerd=1.6.20~ds1-1+deb12u3", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"" + list + "\"\n", false},
		{"ubuntu 1.7.12", "containerd", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"" + list + "\"\n", false},
		// 2.2.0's default config_path is the list, and its transfer
		// service pulls take it literally (containerd#12808).
		{"2.2.0 default", "containerd.io=2.2.0-1", "version = 3\n", true},
		// Legacy credentials make 2.2.0 pull locally, which splits.
		{"2.2.0 local pull", "containerd.io=2.2.0-1", "version = 3\n[plugins.\"io.containerd.cri.v1.images\".registry.configs.\"192.168.0.10:5000\".auth]\n  username = \"u\"\n  password = \"p\"\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.containerd2 = true
			registryVM(w, "192.168.0.10")
			n := w.node("worker", "192.168.0.11", tc.pkg, "cri-tools")
			n.write("/etc/crictl.yaml", "runtime-endpoint: unix:///run/containerd/containerd.sock\n")
			n.write("/etc/containerd/config.toml", tc.config)
			n.ok("systemctl restart containerd")
			c := containers.Containerd(n.Machine).Config()
			if c.ConfigPath != list || c.ConfigPathLiteral != tc.literal || c.CRIDisabled || c.CRIError != "" {
				t.Fatalf("loaded %+v", c)
			}
			const pull = "crictl pull 192.168.0.10:5000/app:1"
			// The literal directory: only a literal reader finds it.
			n.write(list+"/192.168.0.10:5000/hosts.toml", httpHostsToml("192.168.0.10:5000"))
			if tc.literal {
				n.ok(pull)
			} else {
				n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
			}
			n.ok("rm -r '/etc/containerd/certs.d:'")
			// The second root of the list: only a splitting reader.
			n.write("/etc/docker/certs.d/192.168.0.10:5000/hosts.toml", httpHostsToml("192.168.0.10:5000"))
			if tc.literal {
				n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
			} else {
				n.ok(pull)
			}
			// The first root's _default hides the second root's host.
			n.write("/etc/containerd/certs.d/_default/hosts.toml", "server = \"https://192.168.0.10:5000\"\n")
			if !tc.literal {
				n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
			}
		})
	}
}

func TestContainerdHostDirectoryLookup(t *testing.T) {
	w := newWorld(t)
	registryVM(w, "192.168.0.10")
	n := w.node("worker", "192.168.0.11", "containerd", "cri-tools")
	n.write("/etc/crictl.yaml", "runtime-endpoint: unix:///run/containerd/containerd.sock\n")
	n.write("/etc/containerd/config.toml", configPath)
	n.ok("systemctl restart containerd")
	const pull = "crictl pull 192.168.0.10:5000/app:1"
	const dir = "/etc/containerd/certs.d/"

	// _default applies to every registry without its own directory.
	n.write(dir+"_default/hosts.toml", httpHostsToml("192.168.0.10:5000"))
	n.ok(pull)
	// host:port comes before _default...
	n.write(dir+"192.168.0.10:5000/hosts.toml", "server = \"https://192.168.0.10:5000\"\n")
	n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
	// ...and host_port_ before host:port (hosts.go hostDirectory).
	n.write(dir+"192.168.0.10_5000_/hosts.toml", httpHostsToml("192.168.0.10:5000"))
	n.ok(pull)
	n.ok("rm -r " + dir + "192.168.0.10_5000_ " + dir + "_default")

	// capabilities = [] is every capability, resolve included.
	n.write(dir+"192.168.0.10:5000/hosts.toml", "server = \"http://192.168.0.10:5000\"\ncapabilities = []\n")
	n.ok(pull)
	n.write(dir+"192.168.0.10:5000/hosts.toml", "server = \"http://192.168.0.10:5000\"\ncapabilities = [\"pull\"]\n")
	n.fails(pull, 1, "no resolve hosts: not found")

	// A hosts.toml containerd cannot parse falls back to the directory's
	// certificate files: the registry over HTTPS with *.crt as CAs.
	ca := containers.GenerateCA("test CA")
	tlsReg := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca})
	tlsReg.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 443, tlsReg)
	const pullTLS = "crictl pull 192.168.0.20/app:1"
	n.write(dir+"192.168.0.20/ca.crt", string(ca))
	for _, broken := range []string{
		"server = \"https://192.168.0.20\"\n[host.\"https://192.168.0.20\"]\n  ca = \"other.crt\"\n  capabilities = [\"fetch\"]\n",
		"server = \"https://192.168.0.20\"\n[host.\"https://192.168.0.20\"]\n  ca = \"other.crt\"\n  capabilities = [\n",
		"server = \"https://192.168.0.20\"\n[host.\"https://192.168.0.20\"]\n  ca = 5\n",
		"",
	} {
		n.write(dir+"192.168.0.20/hosts.toml", broken)
		n.ok(pullTLS)
	}
}

func TestContainerdRefusesWhatItsReleaseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, pkg, config string
		starts, cri       bool
	}{
		// containerd.io's file: version 1, CRI disabled by ID.
		{"1.7 containerd.io", "containerd.io=1.7.12-1", "disabled_plugins = [\"cri\"]\n", true, false},
		{"1.6 containerd.io", "containerd.io=1.6.33-1", "disabled_plugins = [\"cri\"]\n", true, false},
		{"2.2 containerd.io", "containerd.io=2.2.0-1", "disabled_plugins = [\"cri\"]\n", true, false},
		// A version 1 file disables by ID only: the URI disables nothing.
		{"1.7 v1 by URI", "containerd", "disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n", true, true},
		// Version 2 wants URIs: "cri" stops containerd (ValidateV2).
		{"1.7 v2 by ID", "containerd", "version = 2\ndisabled_plugins = [\"cri\"]\n", false, false},
		{"1.6 v2 by ID", "containerd=1.6.20~ds1-1+deb12u3", "version = 2\ndisabled_plugins = [\"cri\"]\n", false, false},
		{"2.2 v3 by ID", "containerd.io=2.2.0-1", "version = 3\ndisabled_plugins = [\"cri\"]\n", false, false},
		{"1.7 v2 by URI", "containerd", "version = 2\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n", true, false},
		{"2.2 v3 image plugin", "containerd.io=2.2.0-1", "version = 3\ndisabled_plugins = [\"io.containerd.cri.v1.images\"]\n", true, false},
		// Plugin keys: a URI in 1.7; 1.6 only counts the dots.
		{"1.7 v2 short key", "containerd", "version = 2\n[plugins.cri]\n  sandbox_image = \"x\"\n", false, false},
		{"1.7 v2 foreign key", "containerd", "version = 2\n[plugins.\"org.example.x.v1\"]\n", false, false},
		{"1.6 v2 foreign key", "containerd=1.6.20~ds1-1+deb12u3", "version = 2\n[plugins.\"org.example.x.v1\"]\n", true, true},
		{"2.2 v4", "containerd.io=2.2.0-1", "version = 4\n", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.containerd2 = true
			n := w.node("worker", "192.168.0.11", tc.pkg)
			n.write("/etc/containerd/config.toml", tc.config)
			if !tc.starts {
				n.fails("systemctl restart containerd", 1, "Job for containerd.service failed")
				return
			}
			n.ok("systemctl restart containerd")
			if c := containers.Containerd(n.Machine).Config(); c.CRIDisabled == tc.cri {
				t.Errorf("loaded %+v, want the CRI enabled: %v", c, tc.cri)
			}
		})
	}
}

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
	if c := containers.Containerd(n.Machine).Config(); c != (containers.ContainerdConfig{Exists: true, Version: 2, ConfigPath: "/etc/containerd/certs.d"}) {
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

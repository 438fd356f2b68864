package realtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// containerdProgram is Debian's containerd (1.6.20 in Debian 12).
const containerdProgram = "/usr/bin/containerd"

// caPath is where the VNF package the test builds holds the registries'
// CA, as certificate_path names it.
const caPath = "Files/registry/ca.crt"

// env is one simulated-free node: this machine, seen through the private
// view, with its registries, containerd and sshd.
type env struct {
	dir string
	// plain is reached over HTTP by name; secure over TLS by name with
	// the CA; private over TLS with the CA and basic auth.
	plain, secure, private *registryServer
	pkg                    *lcm.Package
	sshd                   *sshdtest.Server
	user                   sshdtest.User
	host                   *remote.SSHHost
	logs                   *syncBuffer
	containerd             *daemon
	kubelet                *kubelet
	// The node's files as the machine had them, to reset to.
	origHosts, origConfig []byte
	// origTemplate is cloud-init's hosts template as the cloud-init
	// package installed it.
	origTemplate []byte
}

// newEnv starts everything a scenario needs, all stopped when t ends.
func newEnv(t *testing.T) *env {
	t.Helper()
	needPrivateView(t)
	e := &env{dir: t.TempDir(), logs: &syncBuffer{}}
	var err error
	if e.origHosts, err = os.ReadFile(registry.HostsFile); err != nil {
		t.Fatal(err)
	}
	e.origConfig, _ = os.ReadFile(registry.ContainerdConfig)
	if e.origTemplate, err = os.ReadFile(registry.HostsTemplate); err != nil {
		t.Fatalf("cloud-init's hosts template (run ./test.sh, which installs cloud-init): %v", err)
	}
	// The private view outlives a test (go test -count=N runs it again in
	// the same namespace): leave /etc/hosts and config.toml as found.
	t.Cleanup(func() {
		writeFile(t, registry.HostsFile, e.origHosts, 0o644)
		writeFile(t, registry.ContainerdConfig, e.origConfig, 0o644)
		writeFile(t, registry.HostsTemplate, e.origTemplate, 0o644)
	})

	p := newPKI(t, filepath.Join(e.dir, "pki"), "secure.example.com", "private.example.com")
	e.plain = startRegistry(t, filepath.Join(e.dir, "plain"), "plain.example.com", nil, "", "")
	e.secure = startRegistry(t, filepath.Join(e.dir, "secure"), "secure.example.com", p, "", "")
	e.private = startRegistry(t, filepath.Join(e.dir, "private"), "private.example.com", p, "user01", "reg-"+randomWord()+` '$x" ;`)
	img := tinyImage(t)
	for _, r := range e.registries() {
		r.push(t, img)
	}

	pkgDir := filepath.Join(e.dir, "vnf-package")
	writeFile(t, filepath.Join(pkgDir, caPath), p.caPEM, 0o644)
	if e.pkg, err = lcm.OpenPackage(pkgDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.pkg.Close() })

	e.startContainerd(t)
	e.sshd = sshdtest.StartWith(t, sshdtest.Options{Transcript: true})
	e.user = e.sshd.User(sshdtest.SudoPassword)
	e.host = e.dial(t)
	return e
}

func (e *env) registries() []*registryServer {
	return []*registryServer{e.plain, e.secure, e.private}
}

// startContainerd runs the real containerd with the node's
// /etc/containerd/config.toml (in the private /etc) and its root, state
// and socket under the test's directory, registered as the unit
// "containerd" of the systemctl stand-in.
func (e *env) startContainerd(t *testing.T) {
	t.Helper()
	sock := filepath.Join(base, "containerd.sock")
	k, err := newKubelet(sock, registry.KubeletAuthFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.conn.Close() })
	e.kubelet = k
	e.containerd = &daemon{
		name: "containerd", path: need(t, containerdProgram),
		args: []string{"--config", registry.ContainerdConfig, "--address", sock,
			"--root", filepath.Join(base, "containerd", "root"), "--state", filepath.Join(base, "containerd", "state"), "--log-level", "warn"},
		log:   filepath.Join(e.dir, "containerd.log"),
		ready: k.ready,
	}
	if err := e.containerd.start(); err != nil {
		t.Fatal(err)
	}
	setUnit("containerd", e.containerd)
	t.Cleanup(func() { setUnit("containerd", nil); e.containerd.stop() })
}

// dial connects to the node over SSH as the user whose sudo needs a
// password, pinning sshd's host key, logging at debug level into e.logs.
func (e *env) dial(t *testing.T) *remote.SSHHost {
	t.Helper()
	pin, err := remote.PinnedHostKey(ssh.FingerprintSHA256(e.sshd.HostKey()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := remote.Dial(ctx, remote.Config{
		Addr: e.sshd.Addr(), Name: "node1", User: e.user.Name, Password: remote.NewSecret(e.user.Password), HostKey: pin,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("dial %s: %v\nsshd log:\n%s", e.sshd.Addr(), err, e.sshd.Log())
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// params is additionalParams as a VNFM passes it: every registry by name
// through hosts_string, the TLS ones with the package's CA, the private
// one with credentials.
func (e *env) params() json.RawMessage {
	conn := func(r *registryServer) map[string]any {
		c := map[string]any{"connection_type": "0", "server": r.server(), "hosts_string": "127.0.0.1 " + r.host}
		if r.tls != nil {
			c["connection_type"], c["certificate_path"] = "1", caPath
		}
		if r.user != "" {
			c["username"], c["password"] = r.user, r.password
		}
		return c
	}
	b, _ := json.Marshal(map[string]any{"k8s_cluster_installation_param": map[string]any{
		"private_registry_connection_info": []any{conn(e.plain), conn(e.secure), conn(e.private)},
	}})
	return b
}

// trust decodes the parameters through the package's real parameter path,
// as a driver does, and runs ConfigureRegistryTrust over SSH.
func (e *env) trust(t *testing.T, rts ...system.Runtime) (lcm.Result, error) {
	t.Helper()
	var p registry.TrustParams
	if err := lcm.DecodeParams(e.params(), lcm.DecodeOptions{Package: e.pkg}, lcm.Param(registry.ClusterParamKey, &p).Required()); err != nil {
		t.Fatalf("decoding the parameters: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return registry.ConfigureRegistryTrust(ctx, e.host, p.PrivateRegistryConnectionInfo, registry.TrustOptions{Package: e.pkg, Runtimes: rts})
}

// mustTrust is trust that fails t on an error.
func (e *env) mustTrust(t *testing.T, rts ...system.Runtime) lcm.Result {
	t.Helper()
	res, err := e.trust(t, rts...)
	if err != nil {
		t.Fatalf("ConfigureRegistryTrust: %v\nsystemctl calls: %q\ncontainerd log:\n%s", err, systemctlCalls(), e.containerd.logTail())
	}
	return res
}

// removeImages removes the tiny image of every registry from containerd.
func (e *env) removeImages(t *testing.T) {
	t.Helper()
	for _, r := range e.registries() {
		if err := e.kubelet.remove(context.Background(), r.image()); err != nil {
			t.Fatalf("CRI RemoveImage %s: %v", r.image(), err)
		}
	}
}

// checkPulls pulls every registry's image through containerd's CRI image
// service, each in a subtest named after what it shows.
func (e *env) checkPulls(t *testing.T) {
	t.Helper()
	for _, c := range []struct {
		name string
		r    *registryServer
	}{{"http_by_name", e.plain}, {"https_with_ca", e.secure}, {"https_with_basic_auth", e.private}} {
		t.Run(c.name, func(t *testing.T) {
			ref, err := e.kubelet.pull(context.Background(), c.r.image())
			if err != nil {
				t.Fatalf("CRI PullImage %s: %v\ncontainerd log:\n%s", c.r.image(), err, e.containerd.logTail())
			}
			t.Logf("pulled %s: %s", c.r.image(), ref)
		})
	}
}

// freshNode puts the node back as the machine had it, with config as
// containerd's config.toml, restarts containerd and removes the images:
// a node mgmtkit never touched.
func (e *env) freshNode(t *testing.T, config []byte) {
	t.Helper()
	e.containerd.stop()
	for _, p := range []string{registry.ContainerdCertsDir, registry.DockerCertsDir, registry.KubeletAuthFile,
		registry.DockerAuthFile, registry.DockerDaemonJSON, "/var/lib/mgmtkit", "/etc/containerd/certs.d:/etc/docker/certs.d"} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, registry.HostsFile, e.origHosts, 0o644)
	writeFile(t, registry.HostsTemplate, e.origTemplate, 0o644)
	writeFile(t, registry.ContainerdConfig, config, 0o644)
	if err := e.containerd.start(); err != nil {
		t.Fatal(err)
	}
	e.removeImages(t)
}

// checkNoSecrets fails t if a password appears in what sshd logged, in
// the commands the login shell ran, or in mgmtkit's debug log.
func (e *env) checkNoSecrets(t *testing.T) {
	t.Helper()
	where := map[string]string{
		"sshd's log":                 e.sshd.Log(),
		"the login shell's commands": strings.Join(e.sshd.Transcript(), "\n"),
		"mgmtkit's debug log":        e.logs.String(),
	}
	for what, text := range where {
		for _, secret := range []string{e.private.password, e.user.Password} {
			if strings.Contains(text, secret) {
				t.Errorf("a password appears in %s", what)
			}
		}
	}
	if len(e.sshd.Transcript()) == 0 {
		t.Error("the login shell recorded no command: the secret check saw nothing")
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// randomWord returns a random word of 26 base32 characters.
func randomWord() string { return rand.Text() }

package kubeadm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

const token = "7c2mqz.ydw5vq0q4k8hn3xa"

// writeFile puts a file on a fake host, parents included.
func writeFile(t *testing.T, fsys *sshtest.FS, file string, data []byte) {
	t.Helper()
	if err := fsys.MkdirAll(file[:strings.LastIndexByte(file, '/')], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNewJoinInfoWorker(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	ca, pin := testCA(t)
	writeFile(t, n.Server.FS(), kubeadm.CACert, ca)
	n.Set("kubeadm", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		if inv.Line() == "token create --ttl 1h0m0s" && inv.User == "root" {
			return scripted.OK(token + "\n")
		}
		return scripted.Reply{Code: 2}
	})
	info, err := kubeadm.NewJoinInfo(n.Ctx, n.Host, "10.0.0.5", "10.0.0.5:6443", false)
	if err != nil {
		t.Fatal(err)
	}
	if info.Token.Reveal() != token || info.CACertHash != pin || info.Endpoint != "10.0.0.5:6443" || !info.CertificateKey.IsZero() {
		t.Fatalf("JoinInfo %+v (hash %s, want %s)", info, info.CACertHash, pin)
	}
	if got := n.Lines("kubeadm"); !slices.Equal(got, []string{"token create --ttl 1h0m0s"}) {
		t.Fatalf("kubeadm runs %q", got)
	}
	n.AssertNoSecret(token, fmt.Sprintf("%v %+v %#v", info, info, info))
}

func TestNewJoinInfoControlPlaneUploadsCerts(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	ca, pin := testCA(t)
	writeFile(t, n.Server.FS(), kubeadm.CACert, ca)
	var uploaded string
	n.Set("kubeadm", func(inv scripted.Invocation, fsys *sshtest.FS) scripted.Reply {
		switch inv.Line() {
		case "version -o short":
			return scripted.OK("v1.36.2\n")
		case "init phase upload-certs --upload-certs --skip-certificate-key-print --config /etc/kubernetes/mgmtkit/upload-certs.yaml":
			cfg := rootOnly(t, fsys, kubeadm.UploadCertsConfigFile)
			for _, doc := range strings.Split(string(cfg), "---\n") {
				var c struct {
					Kind              string `json:"kind"`
					CertificateKey    string `json:"certificateKey"`
					KubernetesVersion string `json:"kubernetesVersion"`
				}
				if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
					t.Error(err)
				}
				switch c.Kind {
				case "InitConfiguration":
					uploaded = c.CertificateKey
				case "ClusterConfiguration":
					if c.KubernetesVersion != "v1.36.2" {
						t.Errorf("upload-certs kubernetesVersion %q", c.KubernetesVersion)
					}
				}
			}
			// kubeadm prints the key it used.
			return scripted.OK("[upload-certs] Using certificate key:\n" + uploaded + "\n")
		case "token create --ttl 1h0m0s":
			return scripted.OK(token + "\n")
		}
		return scripted.Reply{Code: 2}
	})
	info, err := kubeadm.NewJoinInfo(n.Ctx, n.Host, "10.0.0.5", "10.0.0.100:16443", true)
	if err != nil {
		t.Fatal(err)
	}
	key := info.CertificateKey.Reveal()
	if len(key) != 64 || key != uploaded || info.CACertHash != pin {
		t.Fatalf("certificate key %q, uploaded %q", key, uploaded)
	}
	if n.Server.FS().Exists(kubeadm.UploadCertsConfigFile) {
		t.Fatal("upload-certs.yaml (it holds the key) is still there")
	}
	n.AssertNoSecret(key, fmt.Sprintf("%v", info))
	n.AssertNoSecret(token)

	// Two calls make two keys.
	again, err := kubeadm.NewJoinInfo(n.Ctx, n.Host, "10.0.0.5", "10.0.0.100:16443", true)
	if err != nil {
		t.Fatal(err)
	}
	if again.CertificateKey.Reveal() == key {
		t.Fatal("the same certificate key twice")
	}
}

func TestNewJoinInfoFailures(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	_, err := kubeadm.NewJoinInfo(n.Ctx, n.Host, "10.0.0.5", "10.0.0.5", false)
	scripted.ParamsError(t, err, "endpoint")
	// A control-plane join needs the address upload-certs names.
	_, err = kubeadm.NewJoinInfo(n.Ctx, n.Host, "", "10.0.0.5:6443", true)
	scripted.ParamsError(t, err, "cpAddress")
	_, err = kubeadm.NewJoinInfo(n.Ctx, n.Host, "10.0.0.5:6443", "10.0.0.5:6443", false)
	scripted.ParamsError(t, err, "cpAddress")
	if c := n.Commands(); len(c) != 0 {
		t.Fatalf("commands: %q", c)
	}
	// No CA: the error says so.
	_, err = kubeadm.NewJoinInfo(n.Ctx, n.Host, "10.0.0.5", "10.0.0.5:6443", false)
	if err == nil || !strings.Contains(err.Error(), "CA") {
		t.Fatalf("no CA: %v", err)
	}
	// Output that is not a token is not echoed.
	ca, _ := testCA(t)
	writeFile(t, n.Server.FS(), kubeadm.CACert, ca)
	n.Set("kubeadm", func(scripted.Invocation, *sshtest.FS) scripted.Reply {
		return scripted.OK("W1123 warning\nabc.def-not-a-token\n")
	})
	_, err = kubeadm.NewJoinInfo(n.Ctx, n.Host, "10.0.0.5", "10.0.0.5:6443", false)
	if err == nil || strings.Contains(err.Error(), "not-a-token") {
		t.Fatalf("bad token output: %v", err)
	}
}

func TestCACertHash(t *testing.T) {
	ca, pin := testCA(t)
	got, err := kubeadm.CACertHash(ca)
	if err != nil || got != pin {
		t.Fatalf("CACertHash = %q, %v; want %q", got, err, pin)
	}
	if _, err := kubeadm.CACertHash([]byte("not pem")); err == nil {
		t.Fatal("no error for garbage")
	}
}

func joinOptions(info kubeadm.JoinInfo, controlPlane bool) kubeadm.JoinOptions {
	o := kubeadm.JoinOptions{NodeName: "worker-10-0-0-12", AdvertiseAddress: "10.0.0.12", Info: info}
	if controlPlane {
		o = kubeadm.JoinOptions{NodeName: "master-10-0-0-6", AdvertiseAddress: "10.0.0.6", ControlPlane: true, Info: info}
	}
	return o
}

// joinScript is kubeadm join and reset on a node: join reads its
// configuration file (root's, 0600), checks the token and CA pin, and
// writes the kubelet's kubeconfig (and, for a control plane, the
// API server's manifest).
func joinScript(t *testing.T, want kubeadm.JoinInfo, seen *string) scripted.Script {
	return func(inv scripted.Invocation, fsys *sshtest.FS) scripted.Reply {
		switch inv.Line() {
		case "join --config /etc/kubernetes/mgmtkit/join.yaml":
			cfg := string(rootOnly(t, fsys, kubeadm.JoinConfigFile))
			*seen = cfg
			// kubeadm's preflight: DirAvailable--etc-kubernetes-manifests,
			// FileAvailable--etc-kubernetes-pki-ca.crt
			// (cmd/kubeadm/app/cmd/phases/join/preflight.go).
			if fsys.Exists(kubeadm.CACert) {
				return scripted.Reply{Stderr: "[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists\n", Code: 1}
			}
			if !strings.Contains(cfg, "token: "+want.Token.Reveal()) || !strings.Contains(cfg, want.CACertHash) {
				return scripted.Reply{Stderr: "couldn't validate the identity of the API Server\n", Code: 1}
			}
			writeFile(t, fsys, kubeadm.CACert, []byte("ca"))
			writeFile(t, fsys, kubeadm.KubeletKubeconfig, []byte("x"))
			if strings.Contains(cfg, "controlPlane:") {
				writeFile(t, fsys, kubeadm.APIServerManifest, []byte("x"))
			}
			return scripted.OK("This node has joined the cluster\n")
		case "reset --force":
			for _, f := range []string{kubeadm.CACert, kubeadm.KubeletKubeconfig, kubeadm.APIServerManifest, "/etc/kubernetes/bootstrap-kubelet.conf"} {
				_ = fsys.Remove(f)
			}
			return scripted.OK("")
		}
		return scripted.Reply{Code: 2}
	}
}

func testJoinInfo(t *testing.T, controlPlane bool) kubeadm.JoinInfo {
	_, pin := testCA(t)
	info := kubeadm.JoinInfo{Endpoint: "10.0.0.100:16443", CACertHash: pin}
	info.Token = secret(token)
	if controlPlane {
		info.CertificateKey = secret(strings.Repeat("ab", 32))
	}
	return info
}

func TestJoinNodeWorker(t *testing.T) {
	n := scripted.New(t, "worker-10-0-0-12", "kubectl", "kubeadm")
	info := testJoinInfo(t, false)
	var cfg string
	n.Set("kubeadm", joinScript(t, info, &cfg))

	res, err := kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, false))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !strings.Contains(res.Detail, "worker-10-0-0-12 joined as a worker through 10.0.0.100:16443") {
		t.Fatalf("result %v", res)
	}
	if strings.Contains(cfg, "controlPlane") || !strings.Contains(cfg, "name: worker-10-0-0-12") {
		t.Fatalf("join.yaml:\n%s", cfg)
	}
	if n.Server.FS().Exists(kubeadm.JoinConfigFile) {
		t.Fatal("join.yaml (it holds the token) is still there")
	}
	n.AssertNoSecret(token, res.String())

	// A member: nothing runs but the check.
	n.Reset()
	res, err = kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, false))
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("second join: %v, %v", res, err)
	}
	if runs := n.Lines("kubeadm"); len(runs) != 0 {
		t.Fatalf("second join ran kubeadm %q", runs)
	}
	// A worker is not made a control plane.
	_, err = kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(testJoinInfo(t, true), true))
	if err == nil || !strings.Contains(err.Error(), "worker") {
		t.Fatalf("worker as control plane: %v", err)
	}
}

func TestJoinNodeControlPlane(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-6", "kubectl", "kubeadm")
	info := testJoinInfo(t, true)
	var cfg string
	n.Set("kubeadm", joinScript(t, info, &cfg))
	res, err := kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, true))
	if err != nil || !strings.Contains(res.Detail, "as a control plane") {
		t.Fatalf("join: %v, %v", res, err)
	}
	if !strings.Contains(cfg, "certificateKey: "+info.CertificateKey.Reveal()) || !strings.Contains(cfg, "advertiseAddress: 10.0.0.6") {
		t.Fatalf("join.yaml:\n%s", cfg)
	}
	n.AssertNoSecret(info.CertificateKey.Reveal(), res.String())
	n.AssertNoSecret(token)
	res, err = kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, true))
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("second join: %v, %v", res, err)
	}
}

// A join cut short leaves files that make kubeadm's preflight fail; the
// next run resets them first and converges.
func TestJoinNodeResetsWhatAnUnfinishedJoinLeft(t *testing.T) {
	n := scripted.New(t, "worker-10-0-0-12", "kubectl", "kubeadm")
	info := testJoinInfo(t, false)
	var cfg string
	n.Set("kubeadm", joinScript(t, info, &cfg))
	writeFile(t, n.Server.FS(), kubeadm.CACert, []byte("left over"))
	writeFile(t, n.Server.FS(), "/etc/kubernetes/bootstrap-kubelet.conf", []byte("left over"))

	res, err := kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, false))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.Lines("kubeadm"), []string{"reset --force", "join --config /etc/kubernetes/mgmtkit/join.yaml"}; !slices.Equal(got, want) {
		t.Fatalf("kubeadm runs %q, want %q", got, want)
	}
	if !strings.Contains(res.Detail, "kubeadm reset") || !strings.Contains(res.Detail, "joined") {
		t.Fatalf("result %v", res)
	}
}

func TestJoinNodeFailureRemovesTheToken(t *testing.T) {
	n := scripted.New(t, "worker-10-0-0-12", "kubectl", "kubeadm")
	info := testJoinInfo(t, false)
	n.Set("kubeadm", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		// kubeadm's discovery (cmd/kubeadm/app/discovery/token/token.go)
		// with a token the API server does not know.
		return scripted.Reply{Stderr: "error execution phase preflight: couldn't validate the identity of the API Server: could not find a JWS signature in the cluster-info ConfigMap for token ID \"7c2mqz\"\n", Code: 1}
	})
	_, err := kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, false))
	if err == nil || !strings.Contains(err.Error(), "JWS signature") || !strings.Contains(err.Error(), "worker-10-0-0-12") {
		t.Fatalf("failed join: %v", err)
	}
	if n.Server.FS().Exists(kubeadm.JoinConfigFile) {
		t.Fatal("join.yaml left after a failed join")
	}
	n.AssertNoSecret(token, err.Error())
}

// A node that has joined needs no JoinInfo: JoinNode looks first, and
// asks for the credentials only of a node that must join. Joined says
// which a node is.
func TestJoinNodeMemberNeedsNoJoinInfo(t *testing.T) {
	n := scripted.New(t, "worker-10-0-0-12", "kubectl", "kubeadm")
	noInfo := kubeadm.JoinOptions{NodeName: "worker-10-0-0-12", AdvertiseAddress: "10.0.0.12"}
	joined, err := kubeadm.Joined(n.Ctx, n.Host)
	if err != nil || joined {
		t.Fatalf("Joined on a fresh node: %v, %v", joined, err)
	}
	_, err = kubeadm.JoinNode(n.Ctx, n.Host, noInfo)
	scripted.ParamsError(t, err, "JoinOptions.Info.Token")
	if runs := n.Lines("kubeadm"); len(runs) != 0 {
		t.Fatalf("a join without credentials ran kubeadm %q", runs)
	}

	writeFile(t, n.Server.FS(), kubeadm.KubeletKubeconfig, []byte("x"))
	joined, err = kubeadm.Joined(n.Ctx, n.Host)
	if err != nil || !joined {
		t.Fatalf("Joined on a member: %v, %v", joined, err)
	}
	res, err := kubeadm.JoinNode(n.Ctx, n.Host, noInfo)
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("a member without JoinInfo: %v, %v", res, err)
	}
}

func TestJoinNodeBadOptions(t *testing.T) {
	n := scripted.New(t, "worker-10-0-0-12", "kubectl", "kubeadm")
	good := testJoinInfo(t, true)
	// The node's own options are refused before any command; the
	// credentials after the one read-only look at whether the node must
	// join at all.
	for field, mutate := range map[string]func(*kubeadm.JoinOptions){
		"JoinOptions.NodeName":            func(o *kubeadm.JoinOptions) { o.NodeName = "" },
		"JoinOptions.AdvertiseAddress":    func(o *kubeadm.JoinOptions) { o.AdvertiseAddress = "10.0.0" },
		"JoinOptions.Info.Endpoint":       func(o *kubeadm.JoinOptions) { o.Info.Endpoint = "https://10.0.0.5:6443" },
		"JoinOptions.Info.Token":          func(o *kubeadm.JoinOptions) { o.Info.Token = secret("ABCDEF.0123456789abcdef") },
		"JoinOptions.Info.CACertHash":     func(o *kubeadm.JoinOptions) { o.Info.CACertHash = "sha1:abc" },
		"JoinOptions.Info.CertificateKey": func(o *kubeadm.JoinOptions) { o.Info.CertificateKey = secret("") },
	} {
		n.Reset()
		o := joinOptions(good, true)
		mutate(&o)
		_, err := kubeadm.JoinNode(n.Ctx, n.Host, o)
		scripted.ParamsError(t, err, field)
		if strings.Contains(err.Error(), token) {
			t.Fatalf("token in %v", err)
		}
		want := 1
		if !strings.HasPrefix(field, "JoinOptions.Info.") {
			want = 0
		}
		if c := n.Commands(); len(c) != want {
			t.Fatalf("%s: commands %q, want %d", field, c, want)
		}
	}
}

// A connection dropped while kubeadm join runs (the join finished, its
// status lost) and a hung join: the step fails, the token file goes
// anyway, and the next run converges without joining twice.
func TestJoinNodeConvergesAfterFaults(t *testing.T) {
	info := testJoinInfo(t, false)

	// Where in the exec requests the join comes, on a fresh node.
	probe := scripted.New(t, "worker-10-0-0-11", "kubectl", "kubeadm")
	var cfg string
	probe.Set("kubeadm", joinScript(t, info, &cfg))
	if _, err := kubeadm.JoinNode(probe.Ctx, probe.Host, joinOptions(info, false)); err != nil {
		t.Fatal(err)
	}
	joinAt := slices.IndexFunc(probe.Commands(), func(c string) bool { return strings.Contains(c, "kubeadm join") })
	if joinAt < 0 {
		t.Fatalf("no join in %q", probe.Commands())
	}

	n := scripted.New(t, "worker-10-0-0-12", "kubectl", "kubeadm")
	n.Set("kubeadm", joinScript(t, info, &cfg))
	n.Server.DropConnectionDuring(joinAt + 1)
	_, err := kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, false))
	if !errors.Is(err, remote.ErrConnectionLost) {
		t.Fatalf("dropped join: %v, want ErrConnectionLost", err)
	}
	if n.Server.FS().Exists(kubeadm.JoinConfigFile) {
		t.Fatal("join.yaml left after a dropped connection")
	}
	res, err := kubeadm.JoinNode(n.Ctx, n.Host, joinOptions(info, false))
	if err != nil || res != lcm.Unchanged {
		t.Fatalf("rerun after the drop: %v, %v", res, err)
	}
	if got := n.Lines("kubeadm"); len(got) != 1 {
		t.Fatalf("kubeadm runs %q: joined twice", got)
	}

	h := scripted.New(t, "worker-10-0-0-13", "kubectl", "kubeadm")
	h.Set("kubeadm", joinScript(t, info, &cfg))
	h.Server.HangProgram("kubeadm", 1)
	ctx, cancel := context.WithTimeout(h.Ctx, 2*time.Second)
	defer cancel()
	_, err = kubeadm.JoinNode(ctx, h.Host, joinOptions(info, false))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung join: %v", err)
	}
	if h.Server.FS().Exists(kubeadm.JoinConfigFile) {
		t.Fatal("join.yaml left after a hung join")
	}
	res, err = kubeadm.JoinNode(h.Ctx, h.Host, joinOptions(info, false))
	if err != nil || !res.Changed {
		t.Fatalf("rerun after the hang: %v, %v", res, err)
	}
}

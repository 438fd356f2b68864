package kube_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

const ubuntuPW = "ubuntu-pw-7"

// env is a few machines on a StaticNetwork sharing one kube.World.
type env struct {
	t   *testing.T
	ctx context.Context
	net *containers.StaticNetwork
	w   *kube.World
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	net := &containers.StaticNetwork{}
	return &env{t: t, ctx: ctx, net: net, w: kube.NewWorld(net, nil)}
}

// node is a machine reached over SSH as ubuntu (passwordless sudo).
type node struct {
	*ubuntu.Machine
	e  *env
	h  *remote.SSHHost
	ip string
}

// systemdContainerd is a containerd 1.7 config.toml with runc's systemd
// cgroup driver, as a Kubernetes node needs.
const systemdContainerd = `version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
`

// nodeOpts vary a node's preparation.
type nodeOpts struct {
	cgroupfs   bool // leave containerd on its default cgroupfs driver
	noForward  bool // leave ip_forward at 0
	extraPkgs  []string
	noKubePkgs bool
	nic        bool // give the NIC the address ip/24 (and so a default route)
}

// node starts a machine at ip with containerd and the v1.36 packages,
// ip_forward on and containerd on the systemd cgroup driver.
func (e *env) node(hostname, ip string, o ...nodeOpts) *node {
	e.t.Helper()
	var opt nodeOpts
	if len(o) > 0 {
		opt = o[0]
	}
	srv := sshtest.Start(e.t, sshtest.Config{
		Hostname: hostname,
		Users: []sshtest.User{
			{Name: "root", Password: "root-pw"},
			{Name: "ubuntu", Password: ubuntuPW, Sudo: sshtest.SudoNoPassword},
		},
	})
	if !opt.cgroupfs {
		if err := srv.FS().MkdirAll("/etc/containerd", 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := srv.FS().WriteFile("/etc/containerd/config.toml", []byte(systemdContainerd), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	cat := ubuntu.DefaultCatalog()
	containers.AddPackages(cat, e.net)
	kube.AddPackages(cat, e.w, kube.KubectlTool(e.w.ResolveKubeconfig, kube.WithExec(e.w.EtcdExec)))
	pkgs := []string{"containerd"}
	if !opt.noKubePkgs {
		pkgs = append(pkgs, "kubelet", "kubeadm", "kubectl")
	}
	pkgs = append(pkgs, opt.extraPkgs...)
	var addrs []netip.Prefix
	if opt.nic {
		addrs = []netip.Prefix{netip.PrefixFrom(netip.MustParseAddr(ip), 24)}
	}
	m := ubuntu.Install(srv, ubuntu.Options{Catalog: cat, Packages: pkgs, UpdatedLists: true, Addresses: addrs})
	e.net.AddMachine(ip, m)
	h, err := remote.NewSSHHost(remote.Config{Addr: srv.Addr(), Name: hostname, User: "ubuntu", Password: remote.NewSecret(ubuntuPW), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { h.Close() })
	n := &node{Machine: m, e: e, h: h, ip: ip}
	if !opt.noForward {
		n.mustRun(true, "sysctl -w net.ipv4.ip_forward=1")
	}
	return n
}

// runResult is what one command gave.
type runResult struct {
	stdout, stderr string
	code           int
}

var everyExit = func() []int {
	var out []int
	for i := 1; i < 256; i++ {
		out = append(out, i)
	}
	return out
}()

// run runs a shell command line, as root when sudo is set.
func (n *node) run(sudo bool, command string, stdin ...string) runResult {
	n.e.t.Helper()
	cmd := remote.Cmd{Args: []string{"bash", "-c", command}, Sudo: sudo, OKExit: everyExit}
	if len(stdin) > 0 {
		cmd.Stdin = strings.NewReader(strings.Join(stdin, ""))
	}
	out, err := n.h.Run(n.e.ctx, cmd)
	if err != nil {
		n.e.t.Fatalf("%s: %s: %v", n.Hostname(), command, err)
	}
	return runResult{stdout: string(out.Stdout), stderr: string(out.Stderr), code: out.ExitCode}
}

// mustRun runs a command that must succeed and returns its stdout.
func (n *node) mustRun(sudo bool, command string, stdin ...string) string {
	n.e.t.Helper()
	r := n.run(sudo, command, stdin...)
	if r.code != 0 {
		n.e.t.Fatalf("%s: %s: exit %d\nstdout:\n%s\nstderr:\n%s", n.Hostname(), command, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// write writes a root-owned file.
func (n *node) write(name, content string, perm uint32) {
	n.e.t.Helper()
	fsys := n.Server().FS()
	dir := name[:strings.LastIndexByte(name, '/')]
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		n.e.t.Fatal(err)
	}
	if err := fsys.WriteFile(name, []byte(content), 0o644); err != nil {
		n.e.t.Fatal(err)
	}
	if err := fsys.Chmod(name, fsMode(perm)); err != nil {
		n.e.t.Fatal(err)
	}
}

func (n *node) read(name string) string {
	n.e.t.Helper()
	data, err := n.Server().FS().ReadFile(name)
	if err != nil {
		n.e.t.Fatal(err)
	}
	return string(data)
}

const certKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// initYAML is a kubeadm init configuration for a first control plane.
func initYAML(name, addr, endpoint, extraInit string) string {
	cpe := ""
	if endpoint != "" {
		cpe = "controlPlaneEndpoint: " + endpoint + "\n"
	}
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
certificateKey: %s
localAPIEndpoint:
  advertiseAddress: %s
  bindPort: 6443
nodeRegistration:
  name: %s
%s---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.2
%snetworking:
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.96.0.0/12
apiServer:
  certSANs:
  - api.example.test
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
`, certKey, addr, name, extraInit, cpe)
}

// joinYAML is a JoinConfiguration; cp adds the controlPlane part.
func joinYAML(name, addr, endpoint, token, hash string, cp bool, key string) string {
	s := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
nodeRegistration:
  name: %s
  kubeletExtraArgs:
  - name: node-ip
    value: %s
discovery:
  bootstrapToken:
    apiServerEndpoint: %s
    token: %s
    caCertHashes:
    - %s
`, name, addr, endpoint, token, hash)
	if cp {
		s += fmt.Sprintf("controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: %s\n    bindPort: 6443\n  certificateKey: %s\n", addr, key)
	}
	return s
}

// initMaster writes init.yaml and runs kubeadm init on n.
func (n *node) initMaster(endpoint string) string {
	n.e.t.Helper()
	n.write("/etc/kubernetes/mgmtkit/init.yaml", initYAML(nodeName("master", n.ip), n.ip, endpoint, ""), 0o600)
	return n.mustRun(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs")
}

// token creates a join token on a control plane.
func (n *node) token() string {
	n.e.t.Helper()
	return strings.TrimSpace(n.mustRun(true, "kubeadm token create --ttl 1h0m0s"))
}

// caHash is the CA pin of a control plane's cluster.
func (n *node) caHash() string {
	n.e.t.Helper()
	return kube.CACertHash([]byte(n.read("/etc/kubernetes/pki/ca.crt")))
}

// join writes join.yaml and runs kubeadm join, returning the runResult.
func (n *node) join(endpoint, token, hash string, cp bool, key string) runResult {
	n.e.t.Helper()
	prefix := "worker"
	if cp {
		prefix = "master"
	}
	n.write("/etc/kubernetes/mgmtkit/join.yaml", joinYAML(nodeName(prefix, n.ip), n.ip, endpoint, token, hash, cp, key), 0o600)
	return n.run(true, "kubeadm join --config /etc/kubernetes/mgmtkit/join.yaml")
}

// nodeName is the contract's node name: "master-10-0-0-5".
func nodeName(role, ip string) string {
	return role + "-" + strings.NewReplacer(".", "-", ":", "-").Replace(ip)
}

func fsMode(perm uint32) fs.FileMode { return fs.FileMode(perm) }

// etcdMembers is c's etcd membership (the model's never fails).
func etcdMembers(c *kube.Cluster) []kube.EtcdMember {
	ms, err := c.EtcdMembers(context.Background())
	if err != nil {
		panic(err)
	}
	return ms
}

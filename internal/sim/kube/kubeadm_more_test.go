package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

func TestInitPreflight(t *testing.T) {
	e := newEnv(t)
	t.Run("not root", func(t *testing.T) {
		n := e.node("m0", "10.0.2.4")
		n.write("/tmp/init.yaml", initYAML("m0", "10.0.2.4", "", ""), 0o644)
		r := n.run(false, "kubeadm init --config /tmp/init.yaml")
		wantContains(t, "stderr", r.stderr, "[ERROR IsPrivilegedUser]: user is not running as root")
	})
	t.Run("ip_forward and containerd", func(t *testing.T) {
		n := e.node("m1", "10.0.2.5", nodeOpts{noForward: true})
		n.mustRun(true, "systemctl stop containerd")
		n.write("/etc/kubernetes/mgmtkit/init.yaml", initYAML("m1", "10.0.2.5", "", ""), 0o600)
		r := n.run(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs")
		if r.code != 1 {
			t.Fatalf("exit %d", r.code)
		}
		wantContains(t, "stderr", r.stderr,
			"error execution phase preflight: [preflight] Some fatal errors occurred:",
			"[ERROR FileContent--proc-sys-net-ipv4-ip_forward]: /proc/sys/net/ipv4/ip_forward contents are not set to 1",
			"[ERROR CRI]: could not connect to the container runtime",
			"--ignore-preflight-errors=...")
		if e.w.ClusterOf(n.Machine) != nil || n.Server().FS().Exists("/etc/kubernetes/admin.conf") {
			t.Error("a refused init made a cluster")
		}
	})
	t.Run("swap", func(t *testing.T) {
		n := e.node("m2", "10.0.2.6")
		n.write("/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/swap.img                               file\t\t2097148\t\t0\t\t-2\n", 0o444)
		n.write("/etc/kubernetes/mgmtkit/init.yaml", initYAML("m2", "10.0.2.6", "", ""), 0o600)
		r := n.run(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml")
		wantContains(t, "stderr", r.stderr, "[WARNING Swap]", "error execution phase wait-control-plane: failed while waiting for the kubelet to start")
		if r.code != 1 || e.w.ClusterOf(n.Machine) != nil {
			t.Errorf("init with swap: exit %d", r.code)
		}
	})
	t.Run("already initialised", func(t *testing.T) {
		n := e.node("m3", "10.0.2.7")
		n.initMaster("")
		r := n.run(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs")
		wantContains(t, "stderr", r.stderr, "[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]: /etc/kubernetes/manifests/kube-apiserver.yaml already exists")
		// ignorePreflightErrors of the configuration downgrades them.
		n.write("/tmp/ignore.yaml", initYAML("m3", "10.0.2.7", "", "  ignorePreflightErrors:\n  - all\n"), 0o600)
		if r := n.run(true, "kubeadm init --config /tmp/ignore.yaml"); !strings.Contains(r.stderr, "[WARNING FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]") {
			t.Errorf("ignored: %s", r.stderr)
		}
	})
}

func TestStrictDecoding(t *testing.T) {
	e := newEnv(t)
	n := e.node("m1", "10.0.3.5")
	bad := initYAML("m1", "10.0.3.5", "", "  kubeletExtraArg:\n  - name: node-ip\n    value: 1.2.3.4\n") + "cgroupDriverr: systemd\n"
	n.write("/etc/kubernetes/mgmtkit/init.yaml", bad, 0o600)
	r := n.run(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml")
	// kubeadm 1.36 warns and goes on (strictErrors is only for kubeadm
	// config validate).
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantContains(t, "stderr", r.stderr,
		`error unmarshaling configuration schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta4", Kind:"InitConfiguration"}: strict decoding error: unknown field "nodeRegistration.kubeletExtraArg"`,
		`Kind:"KubeletConfiguration"}: strict decoding error: unknown field "cgroupDriverr"`)
	if got := e.w.ConfigWarnings(); len(got) != 2 {
		t.Errorf("ConfigWarnings: %q", got)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"type error", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: high\n", "cannot unmarshal string"},
		{"no kind", "apiVersion: kubeadm.k8s.io/v1beta4\n", "kind and apiVersion is mandatory information that must be specified"},
		{"old version", "apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\n", `"kubeadm.k8s.io/v1beta3"`},
		{"twice", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n", `kind "ClusterConfiguration" is specified twice in YAML file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.write("/tmp/c.yaml", tc.doc, 0o600)
			r := n.run(true, "kubeadm join --config /tmp/c.yaml")
			if r.code != 1 {
				t.Fatalf("exit %d", r.code)
			}
			wantContains(t, "stderr", r.stderr, tc.want)
		})
	}
}

func TestResetAndReinit(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.4.5")
	m2 := e.node("master2", "10.0.4.6")
	w1 := e.node("worker1", "10.0.4.12")
	m1.initMaster("10.0.4.5:6443")
	tok, hash := m1.token(), m1.caHash()
	if r := m2.join("10.0.4.5:6443", tok, hash, true, certKey); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := w1.join("10.0.4.5:6443", tok, hash, false, ""); r.code != 0 {
		t.Fatal(r.stderr)
	}
	c := e.w.ClusterOf(m1.Machine)
	if len(etcdMembers(c)) != 2 {
		t.Fatalf("etcd: %+v", etcdMembers(c))
	}
	out := m2.mustRun(true, "kubeadm reset --force")
	wantContains(t, "reset", out, "[reset] Deleted contents of the etcd data directory: /var/lib/etcd", "[reset] Stopping the kubelet service", "[reset] Deleting contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]")
	if members := etcdMembers(c); len(members) != 1 || members[0].Name != "master-10-0-4-5" {
		t.Errorf("etcd after reset: %+v", members)
	}
	for _, f := range []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/manifests/etcd.yaml"} {
		if m2.Server().FS().Exists(f) {
			t.Errorf("%s left after reset", f)
		}
	}
	if m2.Service("kubelet").Active || !m2.Server().FS().Exists("/etc/kubernetes/manifests") {
		t.Error("reset: want the kubelet stopped and the manifests directory kept")
	}
	if e.w.ClusterOf(m2.Machine) != nil {
		t.Error("a reset machine is still a member")
	}
	// The Node object stays, NotReady/Unknown: kubectl delete node is
	// what removes it.
	nodes, _ := c.Nodes(e.ctx)
	if n := nodeByName(nodes, "master-10-0-4-6"); n == nil {
		t.Error("reset deleted the Node")
	}
	// Without --force, reset asks.
	r := w1.run(true, "kubeadm reset", "n\n")
	wantContains(t, "reset without --force", r.stderr, "won't proceed")
	w1.mustRun(true, "kubeadm reset -f")
	// The reset master can join again (the kubelet is started by join).
	if r := m2.join("10.0.4.5:6443", m1.token(), hash, true, certKey); r.code != 0 {
		t.Fatalf("rejoin: %s", r.stderr)
	}
	if len(etcdMembers(c)) != 2 {
		t.Errorf("etcd after rejoin: %+v", etcdMembers(c))
	}
	// A Ready node of that name refuses a join under the same name.
	cniDaemonSet(t, e, c)
	w1.write("/tmp/clash.yaml", joinYAML("master-10-0-4-6", "10.0.4.12", "10.0.4.5:6443", m1.token(), hash, false, ""), 0o600)
	if r := w1.run(true, "kubeadm join --config /tmp/clash.yaml"); !strings.Contains(r.stderr, `a Node with name "master-10-0-4-6" and status "Ready" already exists in the cluster`) {
		t.Errorf("name clash: %d %s", r.code, r.stderr)
	}
}

func TestUploadCertsPhase(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.5.5")
	m2 := e.node("master2", "10.0.5.6")
	m1.write("/etc/kubernetes/mgmtkit/init.yaml", initYAML("master-10-0-5-5", "10.0.5.5", "10.0.5.5:6443", ""), 0o600)
	// init without --upload-certs: no kubeadm-certs yet.
	m1.mustRun(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml --skip-token-print")
	tok, hash := m1.token(), m1.caHash()
	if r := m2.join("10.0.5.5:6443", tok, hash, true, certKey); !strings.Contains(r.stderr, `secrets "kubeadm-certs" not found`) {
		t.Fatalf("join before upload-certs: %s", r.stderr)
	}
	const newKey = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	m1.write("/etc/kubernetes/mgmtkit/upload-certs.yaml", strings.Replace(initYAML("master-10-0-5-5", "10.0.5.5", "10.0.5.5:6443", ""), certKey, newKey, 1), 0o600)
	out := m1.mustRun(true, "kubeadm init phase upload-certs --upload-certs --config /etc/kubernetes/mgmtkit/upload-certs.yaml --skip-certificate-key-print")
	if strings.Contains(out, newKey) || !strings.Contains(out, "<value withheld>") {
		t.Errorf("upload-certs printed the key:\n%s", out)
	}
	if r := m2.join("10.0.5.5:6443", tok, hash, true, newKey); r.code != 0 {
		t.Fatalf("join after upload-certs: %s", r.stderr)
	}
}

// An init configuration without localAPIEndpoint.advertiseAddress, as
// an upload-certs phase may be given, makes kubeadm choose the address
// of the default route's interface; on a machine without a default
// route it warns, takes 0.0.0.0 and refuses it, before anything is
// uploaded. Named, the address needs no route.
func TestUploadCertsWithoutDefaultRoute(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.5.5", nodeOpts{nic: true})
	m1.write("/etc/kubernetes/mgmtkit/init.yaml", initYAML("master-10-0-5-5", "10.0.5.5", "10.0.5.5:6443", ""), 0o600)
	m1.mustRun(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml --skip-token-print")
	const upload = "kubeadm init phase upload-certs --upload-certs --config /etc/kubernetes/mgmtkit/upload-certs.yaml --skip-certificate-key-print"
	unnamed := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
certificateKey: %s
nodeRegistration:
  criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.2
`, certKey)
	m1.write("/etc/kubernetes/mgmtkit/upload-certs.yaml", unnamed, 0o600)
	m1.mustRun(true, upload)

	m1.SetDefaultRoute(false)
	r := m1.run(true, upload)
	if r.code != 1 || !strings.Contains(r.stderr, `cannot use "0.0.0.0" as the bind address for the API Server`) || !strings.Contains(r.stderr, `no default routes found in "/proc/net/route" or "/proc/net/ipv6_route"; using: 0.0.0.0`) || strings.Contains(r.stdout, "Storing the certificates") {
		t.Errorf("upload-certs without a default route nor an advertise address: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	named := strings.Replace(unnamed, "nodeRegistration:", "localAPIEndpoint:\n  advertiseAddress: 10.0.5.5\nnodeRegistration:", 1)
	m1.write("/etc/kubernetes/mgmtkit/upload-certs.yaml", named, 0o600)
	m1.mustRun(true, upload)

	// init itself, on a fresh machine without a default route.
	m2 := e.node("master2", "10.0.5.6", nodeOpts{nic: true})
	m2.SetDefaultRoute(false)
	m2.write("/etc/kubernetes/mgmtkit/init.yaml", strings.Replace(initYAML("master-10-0-5-6", "10.0.5.6", "", ""), "  advertiseAddress: 10.0.5.6\n", "", 1), 0o600)
	if r := m2.run(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml"); r.code != 1 || !strings.Contains(r.stderr, `cannot use "0.0.0.0" as the bind address`) {
		t.Errorf("init without a default route nor an advertise address: exit %d\n%s", r.code, r.stderr)
	}
}

// haproxyCfg is HAProxy's configuration as the SDK renders it (kubeadm
// package, ConfigureHAProxy).
func haproxyCfg(backends ...string) string {
	var b strings.Builder
	b.WriteString("global\n\tlog /dev/log local0\n\tchroot /var/lib/haproxy\n\tstats socket /run/haproxy/admin.sock mode 660 level admin\n\tstats timeout 30s\n\tuser haproxy\n\tgroup haproxy\n\tdaemon\n\n")
	b.WriteString("defaults\n\tlog global\n\tmode tcp\n\toption tcplog\n\toption dontlognull\n\ttimeout connect 5s\n\ttimeout client 1h\n\ttimeout server 1h\n\ttimeout check 5s\n\n")
	b.WriteString("frontend kube-apiserver\n\tbind *:16443\n\tdefault_backend kube-apiserver\n\nbackend kube-apiserver\n\tbalance roundrobin\n\toption tcp-check\n\tdefault-server inter 5s fall 3 rise 2\n")
	for _, a := range backends {
		fmt.Fprintf(&b, "\tserver master-%s %s:6443 check\n", strings.ReplaceAll(a, ".", "-"), a)
	}
	return b.String()
}

// keepalivedConf is keepalived's configuration as the SDK renders it.
func keepalivedConf(vip string, priority int) string {
	return fmt.Sprintf(`# Managed by mgmtkit: the Kubernetes API virtual IP.
global_defs {
	enable_script_security
	script_user root
}

vrrp_script chk_haproxy {
	script "/usr/bin/systemctl is-active --quiet haproxy.service"
	interval 2
	timeout 5
	fall 2
	rise 2
}

vrrp_instance kube_apiserver {
	state BACKUP
	interface ens3
	virtual_router_id 51
	priority %d
	advert_int 1
	virtual_ipaddress {
		%s/24 dev ens3
	}
	track_script {
		chk_haproxy
	}
}
`, priority, vip)
}

func TestHAProxyAndKeepalived(t *testing.T) {
	e := newEnv(t)
	addrs := []string{"10.0.6.5", "10.0.6.6", "10.0.6.7"}
	const vip = "10.0.6.100"
	var ms []*node
	for i, a := range addrs {
		n := e.node(fmt.Sprintf("master%d", i+1), a, nodeOpts{extraPkgs: []string{"haproxy", "keepalived"}})
		n.write("/etc/haproxy/haproxy.cfg", haproxyCfg(addrs...), 0o644)
		n.write("/etc/keepalived/keepalived.conf", keepalivedConf(vip+"", 103-i), 0o644)
		if out := n.mustRun(true, "haproxy -c -f /etc/haproxy/haproxy.cfg"); out != "Configuration file is valid\n" {
			t.Errorf("haproxy -c: %q", out)
		}
		n.mustRun(true, "keepalived --config-test -f /etc/keepalived/keepalived.conf")
		n.mustRun(true, "systemctl restart haproxy keepalived")
		ms = append(ms, n)
	}
	if e.w.VIPHolder(vip) != ms[0].Machine {
		t.Fatal("the VIP is not with the highest priority")
	}
	ms[0].write("/etc/kubernetes/mgmtkit/init.yaml", initYAML("master-10-0-6-5", "10.0.6.5", vip+":16443", ""), 0o600)
	ms[0].mustRun(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs")
	tok, hash := ms[0].token(), ms[0].caHash()
	for _, n := range ms[1:] {
		if r := n.join(vip+":16443", tok, hash, true, certKey); r.code != 0 {
			t.Fatalf("join through the VIP: %s", r.stderr)
		}
	}
	c := e.w.ClusterOf(ms[0].Machine)
	// The first backend's API server down: HAProxy's checks skip it.
	ms[0].mustRun(true, "systemctl stop kubelet")
	if got, err := e.w.Dial(ms[2].Machine, vip+":16443"); err != nil || got != c {
		t.Errorf("16443 with a dead backend: %v %v", got, err)
	}
	if _, err := e.w.Dial(ms[2].Machine, "10.0.6.5:6443"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a stopped API server answers: %v", err)
	}
	// keepalived stopping moves the VIP to the next priority; so does
	// HAProxy stopping (the tracked script fails).
	ms[0].mustRun(true, "systemctl stop keepalived")
	if e.w.VIPHolder(vip) != ms[1].Machine {
		t.Error("the VIP did not move to the second master")
	}
	ms[1].mustRun(true, "systemctl stop haproxy")
	if e.w.VIPHolder(vip) != ms[2].Machine {
		t.Error("the VIP stayed with a master whose HAProxy stopped")
	}
	ms[0].mustRun(true, "systemctl start keepalived")
	if e.w.VIPHolder(vip) != ms[0].Machine {
		t.Error("the highest priority did not take the VIP back")
	}
	// A reload with a broken configuration fails and keeps the old one.
	ms[2].write("/etc/haproxy/haproxy.cfg", "frontend x\n\tbind *:16443\n\tdefault_backend nowhere\n", 0o644)
	if r := ms[2].run(true, "haproxy -c -f /etc/haproxy/haproxy.cfg"); r.code != 1 || !strings.Contains(r.stderr, "unable to find required default_backend: 'nowhere'") {
		t.Errorf("haproxy -c of a broken file: %d %s", r.code, r.stderr)
	}
	if r := ms[2].run(true, "systemctl reload haproxy"); r.code == 0 {
		t.Error("reload with a broken configuration succeeded")
	}
	if _, err := e.w.Dial(ms[1].Machine, "10.0.6.7:16443"); err != nil {
		t.Errorf("the old configuration was dropped: %v", err)
	}
}

func TestConfigChecksRefuse(t *testing.T) {
	e := newEnv(t)
	n := e.node("lb", "10.0.7.5", nodeOpts{noKubePkgs: true, extraPkgs: []string{"haproxy", "keepalived"}})
	for _, tc := range []struct{ cfg, want string }{
		{"frontend f\n\tbind *:16443\n\tfrobnicate yes\n", "unknown keyword 'frobnicate' in 'frontend' section"},
		{"backend b\n\tserver s1 10.0.0.5 check\n", "config: backend 'b': server 's1' has neither service port nor check port nor tcp_check rule 'connect' with port information."},
		{"backend b\n\tserver s1 fd00::5\n", "could not resolve address 'fd00:'"},
		{"backend b\n\tserver s1 10.0.0.5\n\tserver s1 10.0.0.6\n", "parsing [/tmp/h.cfg:3] : backend 'b', another server named 's1' was already defined at line 2, please use distinct names."},
		{"backend b\n\tserver s1 10.0.0.5\nfrontend f\n\tbind *:30080\n\tdefault_backend b\n\tserver s2 10.0.0.6\n", "'server' not allowed because frontend 'f' has no backend capability."},
		{"defaults\n\tmode tls\n", "'mode' expects one of"},
	} {
		n.write("/tmp/h.cfg", tc.cfg, 0o644)
		r := n.run(false, "haproxy -c -f /tmp/h.cfg")
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("haproxy -c %q: %d %s", tc.cfg, r.code, r.stderr)
		}
	}
	// Valid without a port (the client's port is used), or with a check
	// port.
	for _, cfg := range []string{
		"backend b\n\tserver s1 10.0.0.5\n\tserver s2 [fd00::5]\n\tserver s3 10.0.0.7 check port 30080\n\tserver s4 [fd00::6]:6443 check\n",
	} {
		n.write("/tmp/h.cfg", cfg, 0o644)
		if r := n.run(false, "haproxy -c -f /tmp/h.cfg"); r.code != 0 {
			t.Errorf("haproxy -c %q: %d %s", cfg, r.code, r.stderr)
		}
	}
	for _, tc := range []struct{ cfg, want string }{
		{strings.Replace(keepalivedConf("10.0.7.100", 100), "priority 100", "priority 300", 1), "Priority not valid"},
		{strings.Replace(keepalivedConf("10.0.7.100", 100), "virtual_router_id 51", "virtual_router_id 0", 1), "VRID '0' not valid"},
		{strings.Replace(keepalivedConf("10.0.7.100", 100), "chk_haproxy\n\t}", "chk_nothing\n\t}", 1), "track script chk_nothing not found"},
		{keepalivedConf("10.0.7.100", 100) + "vrrp_instance x {\n", "Missing '}'"},
		{strings.Replace(keepalivedConf("10.0.7.100", 100), "advert_int 1", "advert_intt 1", 1), "Unknown keyword 'advert_intt'"},
	} {
		n.write("/tmp/k.conf", tc.cfg, 0o644)
		r := n.run(false, "keepalived --config-test -f /tmp/k.conf")
		if r.code != 4 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("keepalived -t: %d %s", r.code, r.stderr)
		}
	}
}

func TestEtcdExec(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.8.5")
	m2 := e.node("master2", "10.0.8.6")
	m1.initMaster("10.0.8.5:6443")
	if r := m2.join("10.0.8.5:6443", m1.token(), m1.caHash(), true, certKey); r.code != 0 {
		t.Fatal(r.stderr)
	}
	c := e.w.ClusterOf(m1.Machine)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-master-10-0-8-5"}, Spec: corev1.PodSpec{NodeName: "master-10-0-8-5"}}
	exec := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		p := &sshtest.Process{Args: []string{"kubectl"}, Stdout: &out, Stderr: &errb}
		argv := append([]string{"etcdctl", "--endpoints=https://127.0.0.1:2379", "--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/etcd/server.crt", "--key=/etc/kubernetes/pki/etcd/server.key"}, args...)
		code := e.w.EtcdExec(context.Background(), p, pod, argv)
		return out.String(), errb.String(), code
	}
	out, _, code := exec("member", "list", "-w", "json")
	var list struct {
		Header  map[string]uint64 `json:"header"`
		Members []struct {
			ID         uint64   `json:"ID"`
			Name       string   `json:"name"`
			PeerURLs   []string `json:"peerURLs"`
			ClientURLs []string `json:"clientURLs"`
		} `json:"members"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Members) != 2 || list.Members[1].Name != "master-10-0-8-6" || list.Header["cluster_id"] == 0 {
		t.Fatalf("member list: %d %s", code, out)
	}
	id := list.Members[1].ID
	out, _, code = exec("member", "remove", fmt.Sprintf("%x", id))
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("Member %16x removed from cluster ", id)) {
		t.Errorf("member remove: %d %q", code, out)
	}
	if len(etcdMembers(c)) != 1 {
		t.Errorf("members after remove: %+v", etcdMembers(c))
	}
	if _, errOut, code := exec("member", "remove", fmt.Sprintf("%x", id)); code != 1 || !strings.Contains(errOut, "Error: etcdserver: member not found") {
		t.Errorf("second remove: %d %s", code, errOut)
	}
}

// kubectl on a control plane reaches the cluster through admin.conf's
// server; etcdctl answers in the etcd static pods.
func TestKubectlThroughTheWorld(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.9.5")
	w1 := e.node("worker1", "10.0.9.12")
	m1.initMaster("10.0.9.5:6443")
	if r := w1.join("10.0.9.5:6443", m1.token(), m1.caHash(), false, ""); r.code != 0 {
		t.Fatal(r.stderr)
	}
	out := m1.mustRun(true, "kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes -o json")
	var list corev1.NodeList
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("get nodes: %v\n%s", err, out)
	}
	out = m1.mustRun(true, "kubectl --kubeconfig=/etc/kubernetes/admin.conf exec --namespace=kube-system etcd-master-10-0-9-5 -- etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key member list -w json")
	wantContains(t, "member list", out, `"name":"master-10-0-9-5"`, `"peerURLs":["https://10.0.9.5:2380"]`)
	// The API server down: kubectl is refused.
	m1.mustRun(true, "systemctl stop kubelet")
	r := m1.run(true, "kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes -o json")
	wantContains(t, "kubectl with the API server down", r.stderr, "The connection to the server 10.0.9.5:6443 was refused")
}

func TestKubeletNewerThanTheControlPlane(t *testing.T) {
	e := newEnv(t)
	n := e.node("m1", "10.0.10.5")
	n.write("/etc/kubernetes/mgmtkit/init.yaml", strings.Replace(initYAML("m1", "10.0.10.5", "", ""), "kubernetesVersion: v1.36.2", "kubernetesVersion: v1.35.3", 1), 0o600)
	r := n.run(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml")
	wantContains(t, "stderr", r.stderr, `[ERROR KubeletVersion]: the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: "1.36.2" Control plane version: "1.35.3"`)
}

// Workers join at the same time, as the SDK's fan-out runs them.
func TestConcurrentJoins(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.11.5")
	m1.initMaster("10.0.11.5:6443")
	tok, hash := m1.token(), m1.caHash()
	var ws []*node
	for i := range 4 {
		ws = append(ws, e.node(fmt.Sprintf("worker%d", i), fmt.Sprintf("10.0.11.%d", 20+i)))
	}
	var wg sync.WaitGroup
	codes := make([]runResult, len(ws))
	for i, w := range ws {
		w.write("/etc/kubernetes/mgmtkit/join.yaml", joinYAML(nodeName("worker", w.ip), w.ip, "10.0.11.5:6443", tok, hash, false, ""), 0o600)
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = w.run(true, "kubeadm join --config /etc/kubernetes/mgmtkit/join.yaml")
		}()
	}
	wg.Wait()
	for i, r := range codes {
		if r.code != 0 {
			t.Errorf("join %d: %s", i, r.stderr)
		}
	}
	c := e.w.ClusterOf(m1.Machine)
	nodes, err := c.Nodes(e.ctx)
	if err != nil || len(nodes) != 5 {
		t.Errorf("nodes: %d %v", len(nodes), err)
	}
	// A deleted VM: its Node turns Unknown.
	e.w.Forget(ws[0].Machine)
	nodes, _ = c.Nodes(e.ctx)
	if r := readyOf(nodeByName(nodes, "worker-10-0-11-20")); r.Status != corev1.ConditionUnknown || r.Message != "Kubelet stopped posting node status." {
		t.Errorf("forgotten node: %+v", r)
	}
}

// A healed VM: the old machine is gone, a new one joins under the same
// node name and address; the Node turns Ready again, deterministically.
func TestHealedMachineTakesTheNodeOver(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.12.5")
	w1 := e.node("worker1", "10.0.12.20")
	m1.initMaster("10.0.12.5:6443")
	tok, hash := m1.token(), m1.caHash()
	if r := w1.join("10.0.12.5:6443", tok, hash, false, ""); r.code != 0 {
		t.Fatal(r.stderr)
	}
	c := e.w.ClusterOf(m1.Machine)
	cniDaemonSet(t, e, c)
	e.w.Forget(w1.Machine)
	e2 := &env{t: t, ctx: e.ctx, net: &containers.StaticNetwork{}, w: e.w}
	e2.net.AddMachine("10.0.12.5", m1.Machine)
	w2 := e2.node("worker1", "10.0.12.20")
	if r := w2.join("10.0.12.5:6443", m1.token(), hash, false, ""); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for range 5 {
		nodes, err := c.Nodes(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := readyOf(nodeByName(nodes, "worker-10-0-12-20")); r.Status != corev1.ConditionTrue {
			t.Fatalf("healed node: %+v", r)
		}
	}
}

// The check script of kubeadm's HA guide (a file that curls the local
// HAProxy) with a negative weight: a failing check lowers the priority
// below the other master's instead of giving the VIP up.
func TestKeepalivedCurlCheckWithWeight(t *testing.T) {
	e := newEnv(t)
	const vip = "10.0.13.100"
	a := e.node("master1", "10.0.13.5", nodeOpts{extraPkgs: []string{"haproxy", "keepalived"}})
	b := e.node("master2", "10.0.13.6", nodeOpts{extraPkgs: []string{"haproxy", "keepalived"}})
	check := "#!/bin/sh\nerrorExit() { echo \"*** $*\" 1>&2; exit 1; }\ncurl -sfk --max-time 2 https://localhost:16443/healthz -o /dev/null || errorExit \"Error GET https://localhost:16443/healthz\"\n"
	for i, n := range []*node{a, b} {
		n.write("/etc/keepalived/check_apiserver.sh", check, 0o755)
		conf := strings.Replace(keepalivedConf(vip, 101-6*i), `script "/usr/bin/systemctl is-active --quiet haproxy.service"`, "script \"/etc/keepalived/check_apiserver.sh\"\n\tweight -10", 1)
		n.write("/etc/keepalived/keepalived.conf", conf, 0o644)
		n.write("/etc/haproxy/haproxy.cfg", haproxyCfg("10.0.13.5", "10.0.13.6"), 0o644)
		n.mustRun(true, "keepalived -t -f /etc/keepalived/keepalived.conf && systemctl restart haproxy keepalived")
	}
	// No API server yet: both checks fail, 91 against 85.
	if e.w.VIPHolder(vip) != a.Machine {
		t.Fatal("want master1 with both checks failing")
	}
	a.write("/etc/kubernetes/mgmtkit/init.yaml", initYAML("master-10-0-13-5", "10.0.13.5", vip+":16443", ""), 0o600)
	a.mustRun(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml --upload-certs")
	if r := b.join(vip+":16443", a.token(), a.caHash(), true, certKey); r.code != 0 {
		t.Fatal(r.stderr)
	}
	a.mustRun(true, "systemctl stop haproxy")
	if e.w.VIPHolder(vip) != b.Machine {
		t.Error("master1's failing check (101-10) did not hand the VIP to master2 (95)")
	}
	if _, err := e.w.Dial(a.Machine, vip+":16443"); err != nil {
		t.Errorf("the VIP through master2: %v", err)
	}
}

// A /24 pod subnet with the default node mask gives one node a podCIDR:
// flannel never starts on the others. node-cidr-mask-size makes room.
func TestPodSubnetNodeMask(t *testing.T) {
	e := newEnv(t)
	n := e.node("m1", "10.0.14.5")
	small := strings.Replace(initYAML("m1", "10.0.14.5", "", ""), "podSubnet: 10.244.0.0/16", "podSubnet: 10.244.0.0/25", 1)
	n.write("/tmp/small.yaml", small, 0o600)
	r := n.run(true, "kubeadm init --config /tmp/small.yaml")
	wantContains(t, "stderr", r.stderr, `networking.podSubnet: Invalid value: "10.244.0.0/25": the size of pod subnet with mask 25 is smaller than the size of node subnet with mask 24`)
	masked := strings.Replace(initYAML("m1", "10.0.14.5", "", ""), "podSubnet: 10.244.0.0/16", "podSubnet: 10.244.0.0/24", 1)
	masked = strings.Replace(masked, "apiServer:\n", "controllerManager:\n  extraArgs:\n  - name: node-cidr-mask-size\n    value: \"26\"\napiServer:\n", 1)
	n.write("/etc/kubernetes/mgmtkit/init.yaml", masked, 0o600)
	n.mustRun(true, "kubeadm init --config /etc/kubernetes/mgmtkit/init.yaml")
	nodes, err := e.w.ClusterOf(n.Machine).Nodes(e.ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Spec.PodCIDR != "10.244.0.0/26" {
		t.Errorf("podCIDR with node-cidr-mask-size 26: %v %v", nodes, err)
	}
}

// A control plane joins only while every etcd member answers: a deleted
// master's member must be removed first (check-etcd).
func TestControlPlaneJoinChecksEtcd(t *testing.T) {
	e := newEnv(t)
	m1 := e.node("master1", "10.0.15.5")
	m2 := e.node("master2", "10.0.15.6")
	m3 := e.node("master3", "10.0.15.7")
	m1.initMaster("10.0.15.5:6443")
	hash := m1.caHash()
	if r := m2.join("10.0.15.5:6443", m1.token(), hash, true, certKey); r.code != 0 {
		t.Fatal(r.stderr)
	}
	e.w.Forget(m2.Machine)
	r := m3.join("10.0.15.5:6443", m1.token(), hash, true, certKey)
	wantContains(t, "join with a dead member", r.stderr, "error execution phase check-etcd: etcd cluster is not healthy: failed to dial endpoint https://10.0.15.6:2379 with maintenance client: context deadline exceeded")
	c := e.w.ClusterOf(m1.Machine)
	var id uint64
	for _, em := range etcdMembers(c) {
		if em.Name == "master-10-0-15-6" {
			id = em.ID
		}
	}
	m1.mustRun(true, fmt.Sprintf("kubectl --kubeconfig=/etc/kubernetes/admin.conf exec --namespace=kube-system etcd-master-10-0-15-5 -- etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key member remove %x", id))
	// The failed join left its control-plane files: preflight refuses
	// until kubeadm reset.
	if r := m3.join("10.0.15.5:6443", m1.token(), hash, true, certKey); !strings.Contains(r.stderr, "[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]") {
		t.Errorf("rejoin without reset: %s", r.stderr)
	}
	m3.mustRun(true, "kubeadm reset --force")
	if r := m3.join("10.0.15.5:6443", m1.token(), hash, true, certKey); r.code != 0 {
		t.Fatalf("join after the member's removal: %s", r.stderr)
	}
}

// A whole cluster rebuilt on new machines under the same node names
// (Tacker's heal of the entire VNF): the old cluster's forgotten members
// do not count in the new cluster's etcd check, nor for etcdctl exec.
func TestRebuiltClusterWithTheSameNames(t *testing.T) {
	e := newEnv(t)
	a1 := e.node("master1", "10.0.16.5")
	a2 := e.node("master2", "10.0.16.6")
	a1.initMaster("10.0.16.5:6443")
	if r := a2.join("10.0.16.5:6443", a1.token(), a1.caHash(), true, certKey); r.code != 0 {
		t.Fatal(r.stderr)
	}
	e.w.Forget(a1.Machine)
	e.w.Forget(a2.Machine)
	e2 := &env{t: t, ctx: e.ctx, net: &containers.StaticNetwork{}, w: e.w}
	b1 := e2.node("master1", "10.0.16.5")
	b2 := e2.node("master2", "10.0.16.6")
	e.net.AddMachine("10.0.16.5", b1.Machine)
	e.net.AddMachine("10.0.16.6", b2.Machine)
	b1.initMaster("10.0.16.5:6443")
	if r := b2.join("10.0.16.5:6443", b1.token(), b1.caHash(), true, certKey); r.code != 0 {
		t.Fatalf("control-plane join in the rebuilt cluster: %s", r.stderr)
	}
	out := b1.mustRun(true, "kubectl --kubeconfig=/etc/kubernetes/admin.conf exec --namespace=kube-system etcd-master-10-0-16-5 -- etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key member list -w json")
	if strings.Count(out, `"name"`) != 2 || e.w.ClusterOf(b1.Machine) == e.w.ClusterOf(a1.Machine) {
		t.Errorf("member list of the rebuilt cluster: %s", out)
	}
}

package sim_test

import (
	"fmt"
	"io/fs"
	"path"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// prepareKubeNode gives a host what kubeadm needs (containerd on the
// systemd cgroup driver, ip_forward, the v1.36 packages) without the
// SDK's steps, which are tested elsewhere.
func prepareKubeNode(t *testing.T, w *world, h *sim.Host, ssh *remote.SSHHost) {
	t.Helper()
	if err := h.FS().MkdirAll("/etc/containerd", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.FS().WriteFile("/etc/containerd/config.toml", []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.Machine.InstallPackages("containerd", "kubelet", "kubeadm", "kubectl", "haproxy", "keepalived"); err != nil {
		t.Fatal(err)
	}
	if _, err := ssh.Run(w.ctx, remote.Cmd{Args: []string{"sysctl", "-w", "net.ipv4.ip_forward=1"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
}

// The cloud owns a Kubernetes world: its hosts' catalogs have the
// Kubernetes packages bound to it, kubeadm init on a host makes a
// cluster at the host's NIC address, a worker joins it over the cloud's
// network, and a VIP keepalived holds answers as Cloud.Machine.
func TestCloudKubernetesWorld(t *testing.T) {
	w := newWorld(t)
	v := w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1})
	master, worker := v.HostsWithRole(lcm.RoleMaster)[0], v.HostsWithRole(lcm.RoleWorker)[0]
	for _, pkg := range []string{"kubeadm", "kubelet", "kubectl", "cri-tools", "kubernetes-cni", "haproxy", "keepalived"} {
		if _, ok := master.Machine.Catalog().Lookup(pkg); !ok {
			t.Errorf("the hosts' catalog lacks %s", pkg)
		}
	}
	ms, ws := w.connect(master.Node()), w.connect(worker.Node())
	prepareKubeNode(t, w, master, ms)
	prepareKubeNode(t, w, worker, ws)

	initYAML := fmt.Sprintf("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: %s\nnodeRegistration:\n  name: m1\n", master.NICAddress)
	writeRoot(t, master, "/etc/kubernetes/mgmtkit/init.yaml", initYAML, 0o600)
	w.run(ms, "sudo", "kubeadm", "init", "--config", "/etc/kubernetes/mgmtkit/init.yaml", "--skip-token-print")
	c := w.cloud.Kube().ClusterOf(master.Machine)
	if c == nil || c.Endpoint != master.NICAddress+":6443" {
		t.Fatalf("cluster: %+v", c)
	}
	tok := w.run(ms, "sudo", "kubeadm", "token", "create", "--ttl", "1h0m0s")
	caPEM, err := master.FS().ReadFile("/etc/kubernetes/pki/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	// No node-ip: the kubelet's address is the NIC's, as the default
	// route's interface gives it.
	joinYAML := fmt.Sprintf("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  name: w1\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: %s\n    token: %s\n    caCertHashes: [%q]\n",
		c.Endpoint, tok, kube.CACertHash(caPEM))
	writeRoot(t, worker, "/etc/kubernetes/mgmtkit/join.yaml", joinYAML, 0o600)
	w.run(ws, "sudo", "kubeadm", "join", "--config", "/etc/kubernetes/mgmtkit/join.yaml")
	nodes, err := c.Nodes(w.ctx)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	for _, n := range nodes {
		if n.Name == "w1" && n.Status.Addresses[0].Address != worker.NICAddress {
			t.Errorf("w1's InternalIP %s, want the NIC's %s", n.Status.Addresses[0].Address, worker.NICAddress)
		}
	}

	// A VIP on the master's network, held by its keepalived in front of
	// its HAProxy.
	const vip = "192.168.0.100"
	haproxyCfg := fmt.Sprintf("defaults\n\tmode tcp\n\ttimeout connect 5s\n\ttimeout client 1h\n\ttimeout server 1h\nfrontend api\n\tbind *:16443\n\tdefault_backend api\nbackend api\n\toption tcp-check\n\tserver m1 %s:6443 check\n", master.NICAddress)
	kaCfg := fmt.Sprintf("vrrp_script chk {\n\tscript \"/usr/bin/systemctl is-active --quiet haproxy.service\"\n}\nvrrp_instance api {\n\tstate BACKUP\n\tinterface ens3\n\tvirtual_router_id 51\n\tpriority 101\n\tvirtual_ipaddress {\n\t\t%s/24 dev ens3\n\t}\n\ttrack_script {\n\t\tchk\n\t}\n}\n", vip)
	for path, content := range map[string]string{"/etc/haproxy/haproxy.cfg": haproxyCfg, "/etc/keepalived/keepalived.conf": kaCfg} {
		writeRoot(t, master, path, content, 0o644)
	}
	w.run(ms, "sudo", "systemctl", "restart", "haproxy", "keepalived")
	if w.cloud.Machine(vip) != master.Machine {
		t.Fatal("the VIP does not answer at its keepalived's host")
	}
	if got, err := w.cloud.Kube().Dial(worker.Machine, vip+":16443"); err != nil || got != c {
		t.Errorf("VIP:16443 from the worker: %v %v", got, err)
	}
	w.run(ms, "sudo", "systemctl", "stop", "haproxy")
	if w.cloud.Machine(vip) != nil {
		t.Error("the VIP stays with a master whose HAProxy stopped")
	}
}

func writeRoot(t *testing.T, h *sim.Host, name, content string, perm fs.FileMode) {
	t.Helper()
	if err := h.FS().MkdirAll(path.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.FS().WriteFile(name, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
}

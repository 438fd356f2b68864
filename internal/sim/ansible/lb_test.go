package ansible_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// The external LB VM, not a cluster member: HAProxy from its catalog,
// a frontend to the masters' API servers and a NodePort backend whose
// servers have no port.
func TestExternalLBRoutesToTheClusterAndParsesNodePortBackends(t *testing.T) {
	e := newEnv(t, 1, 1, sim.AnsibleOptions{})
	e.cluster(1)
	lbv, err := e.cloud.Build(sim.Topology{Servers: []sim.ServerSpec{{Role: lcm.RoleLoadBalancer, Name: "externalLB", SSHCP: "externalLB_CP1", Login: sim.Login{User: "ubuntu", Password: nodePW}}}})
	if err != nil {
		t.Fatal(err)
	}
	lb := lbv.HostsWithRole(lcm.RoleLoadBalancer)[0]
	conn, err := e.cloud.Connect(e.ctx, lb.Node(), "ubuntu", nodePW)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := func(cmd string, stdin string) remote.Output {
		t.Helper()
		out, err := conn.Run(e.ctx, remote.Cmd{Args: []string{"bash", "-c", cmd}, Sudo: true, Stdin: strings.NewReader(stdin), OKExit: allExits})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := run("apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y haproxy >/dev/null", ""); out.ExitCode != 0 {
		t.Fatalf("apt-get install haproxy: %s", out.Stderr)
	}
	m, w := e.masters()[0], e.workers()[0]
	bad := "defaults\n\tmode tcp\n\ttimeout connect 5s\n\ttimeout client 50s\n\ttimeout server 50s\nbackend kubernetes-nodeport\n\tserver " + nodeName(w) + " " + w.NICAddress + " check\n"
	if out := run("cat > /tmp/bad.cfg && haproxy -c -f /tmp/bad.cfg", bad); out.ExitCode != 1 || !strings.Contains(string(out.Stderr), "server '"+nodeName(w)+"' has neither service port nor check port nor tcp_check rule 'connect' with port information.") {
		t.Errorf("a port-less server with check: %d %s", out.ExitCode, out.Stderr)
	}
	dup := strings.Replace(bad, " check\n", "\n\tserver "+nodeName(w)+" "+w.NICAddress+"\n", 1)
	if out := run("cat > /tmp/dup.cfg && haproxy -c -f /tmp/dup.cfg", dup); out.ExitCode != 1 || !strings.Contains(string(out.Stderr), "another server named '"+nodeName(w)+"' was already defined at line 7, please use distinct names.") {
		t.Errorf("a duplicate server: %d %s", out.ExitCode, out.Stderr)
	}
	cfg := fmt.Sprintf(`defaults
	mode tcp
	timeout connect 5s
	timeout client 50s
	timeout server 50s
frontend kubernetes-apiserver
	bind *:8383
	default_backend kubernetes-apiserver
backend kubernetes-apiserver
	balance roundrobin
	server %s %s:6443 check
frontend default_nginx
	bind *:30080
	default_backend kubernetes-nodeport
backend kubernetes-nodeport
	server %s %s
	server %s %s:30080 check
`, nodeName(m), m.NICAddress, nodeName(m), m.NICAddress, nodeName(w), w.NICAddress)
	if out := run("cat > /etc/haproxy/haproxy.cfg && haproxy -c -f /etc/haproxy/haproxy.cfg && systemctl restart haproxy", cfg); out.ExitCode != 0 {
		t.Fatalf("haproxy: %s", out.Stderr)
	}
	loaded, ok := e.cloud.Kube().HAProxyConfig(lb.Machine)
	if !ok {
		t.Fatal("haproxy loaded nothing")
	}
	want := []kube.HAProxyServer{{Name: nodeName(m), Address: m.NICAddress}, {Name: nodeName(w), Address: w.NICAddress, Port: 30080, Check: true}}
	if got := loaded.Backends["kubernetes-nodeport"]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("nodeport backends %+v, want %+v", got, want)
	}
	// The API through the LB's address, from the LB itself and from a
	// master's kubectl.
	c, err := e.cloud.Kube().Dial(m.Machine, lb.SSHAddress+":8383")
	if err != nil || c != e.cloud.Kube().Clusters()[0] {
		t.Fatalf("dial the LB: %v", err)
	}
	admin, _ := m.FS().ReadFile("/etc/kubernetes/admin.conf")
	kc := strings.Replace(string(admin), m.NICAddress+":6443", lb.SSHAddress+":8383", 1)
	run("apt-get install -y kubectl >/dev/null 2>&1 || true", "")
	mc, err := e.cloud.Connect(e.ctx, m.Node(), "ubuntu", nodePW)
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	out, err := mc.Run(e.ctx, remote.Cmd{Args: []string{"bash", "-c", "cat > /tmp/lb.conf && kubectl --kubeconfig /tmp/lb.conf get nodes -o name"}, Stdin: strings.NewReader(kc), OKExit: allExits})
	if err != nil || out.ExitCode != 0 || !strings.Contains(string(out.Stdout), "node/"+nodeName(w)) {
		t.Fatalf("kubectl through the LB: %v %s %s", err, out.Stdout, out.Stderr)
	}
}

package ansible_test

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

const (
	root    = sim.KubesprayRootPath
	invDir  = sim.KubesprayInventoryPath
	nodePW  = "node-pw-3"
	ansPW   = "ansible-pw-5"
	ansUser = "ansible"
)

// env is a cloud with a cluster VNF's VMs and the Ansible server.
type env struct {
	t     *testing.T
	ctx   context.Context
	cloud *sim.Cloud
	vnf   *sim.VNF
	ans   *sim.Host
	conn  *remote.SSHHost
}

// newEnv builds masters and workers (Ubuntu VMs, nothing installed) and
// the Ansible server with opts.
func newEnv(t *testing.T, masters, workers int, opts sim.AnsibleOptions) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := sim.Start(t, sim.Options{Ansible: opts})
	login := sim.Login{User: "ubuntu", Password: nodePW}
	topo := sim.Topology{Groups: []sim.GroupSpec{
		{Role: lcm.RoleMaster, Aspect: "master_instance", Count: masters, MinSize: masters, MaxSize: masters, SSHCP: "masterNode_CP1", Login: login},
		{Role: lcm.RoleWorker, Aspect: "worker_instance", Count: workers, MaxSize: workers + 5, SSHCP: "workerNode_CP2", Login: login},
	}}
	v, err := c.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.AddAnsibleServer(sim.Login{User: ansUser, Password: ansPW})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.Connect(ctx, ans.Node(), ansUser, ansPW)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &env{t: t, ctx: ctx, cloud: c, vnf: v, ans: ans, conn: conn}
}

// nodeName is the contract's inventory name of a host: master-127-0-1-2.
func nodeName(h *sim.Host) string {
	return string(h.Role) + "-" + strings.ReplaceAll(h.SSHAddress, ".", "-")
}

// runAns runs a shell command on the Ansible server as its login user.
func (e *env) runAns(command string) (stdout, stderr string, code int) {
	e.t.Helper()
	out, err := e.conn.Run(e.ctx, remote.Cmd{Args: []string{"bash", "-c", command}, OKExit: allExits})
	if err != nil {
		e.t.Fatalf("%s: %v", command, err)
	}
	return string(out.Stdout), string(out.Stderr), out.ExitCode
}

var allExits = func() []int {
	var out []int
	for i := 1; i < 256; i++ {
		out = append(out, i)
	}
	return out
}()

// write writes a file on the Ansible server as its login user.
func (e *env) write(name, content string, perm uint32) {
	e.t.Helper()
	uid, gid, _ := e.ans.FS().LookupUser(ansUser)
	u := e.ans.FS().As(sshtest.Cred{UID: uid, GID: gid}, "/")
	if err := u.MkdirAll(path.Dir(name), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := u.WriteFile(name, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := u.Chmod(name, fsMode(perm)); err != nil {
		e.t.Fatal(err)
	}
}

// inventory writes INV as the SDK does (the contract): cp -a of the
// sample on first use, hosts.yaml with masters (etcd) and workers, the
// group_vars, known_hosts with the nodes' real keys.
func (e *env) inventory(masters, workers []*sim.Host, extraAll string) {
	e.t.Helper()
	if _, _, code := e.runAns("test -d " + invDir); code != 0 {
		if _, stderr, code := e.runAns("cp -a -- " + root + "/inventory/sample " + invDir); code != 0 {
			e.t.Fatalf("cp: %s", stderr)
		}
	}
	var b strings.Builder
	b.WriteString("all:\n  hosts:\n")
	for i, h := range masters {
		fmt.Fprintf(&b, "    %s: {ansible_host: %s, ip: %s, access_ip: %s, etcd_member_name: etcd%d}\n", nodeName(h), h.SSHAddress, h.NICAddress, h.NICAddress, i+1)
	}
	for _, h := range workers {
		fmt.Fprintf(&b, "    %s: {ansible_host: %s, ip: %s, access_ip: %s}\n", nodeName(h), h.SSHAddress, h.NICAddress, h.NICAddress)
	}
	b.WriteString("  children:\n    kube_control_plane:\n      hosts:\n")
	for _, h := range masters {
		fmt.Fprintf(&b, "        %s: {}\n", nodeName(h))
	}
	b.WriteString("    etcd:\n      hosts:\n")
	for _, h := range masters {
		fmt.Fprintf(&b, "        %s: {}\n", nodeName(h))
	}
	b.WriteString("    kube_node:\n      hosts:\n")
	if len(workers) == 0 {
		b.WriteString("        {}\n")
	}
	for _, h := range workers {
		fmt.Fprintf(&b, "        %s: {}\n", nodeName(h))
	}
	b.WriteString("    calico_rr: {hosts: {}}\n    k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}, calico_rr: {}}}\n")
	e.write(invDir+"/hosts.yaml", b.String(), 0o644)
	e.write(invDir+"/group_vars/all/mgmtkit.yml", "additional_no_proxy: \"\"\nno_proxy_exclude_workers: true\nansible_ssh_common_args: \"-o UserKnownHostsFile="+invDir+"/known_hosts -o StrictHostKeyChecking=yes\"\n"+extraAll, 0o644)
	e.write(invDir+"/group_vars/all/mgmtkit-login.yml", "ansible_user: ubuntu\nansible_password: "+nodePW+"\nansible_become_password: "+nodePW+"\n", 0o600)
	e.write(invDir+"/group_vars/k8s_cluster/mgmtkit.yml", "kube_pods_subnet: 10.244.0.0/16\nkube_service_addresses: 10.96.0.0/16\ncalico_mtu: 1500\ncalico_veth_mtu: 1450\nsupplementary_addresses_in_ssl_keys: [\"127.0.9.9\"]\n", 0o644)
	var kh strings.Builder
	for _, h := range append(append([]*sim.Host(nil), masters...), workers...) {
		fmt.Fprintf(&kh, "%s %s", h.SSHAddress, ssh.MarshalAuthorizedKey(h.SSH.HostKey()))
	}
	e.write(invDir+"/known_hosts", kh.String(), 0o644)
}

// playbook runs a playbook as the contract says.
func (e *env) playbook(pb string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	cmd := "env -C " + root + " ANSIBLE_NOCOLOR=1 ANSIBLE_NOCOWS=1 ANSIBLE_INVENTORY_UNPARSED_FAILED=True ANSIBLE_CONFIG=" + root + "/ansible.cfg ansible-playbook -i " + invDir + "/hosts.yaml --become --become-user=root"
	for _, a := range args {
		cmd += " " + a
	}
	return e.runAns(cmd + " " + pb)
}

// recap returns the PLAY RECAP block's host lines.
func recap(out string) []string {
	i := strings.Index(out, "PLAY RECAP ")
	if i < 0 {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(out[i:], "\n")[1:] {
		if l == "" {
			break
		}
		lines = append(lines, l)
	}
	return lines
}

func (e *env) masters() []*sim.Host { return e.vnf.HostsWithRole(lcm.RoleMaster) }
func (e *env) workers() []*sim.Host { return e.vnf.HostsWithRole(lcm.RoleWorker) }

func fsMode(p uint32) fs.FileMode { return fs.FileMode(p) }

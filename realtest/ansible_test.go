package realtest

// Package kubespray's inventory, group_vars and output parser against
// Debian 12's ansible-core (2.14.18), which test.sh installs:
//
//   - ansible-inventory reads every inventory kubespray renders, with
//     ANSIBLE_INVENTORY_UNPARSED_FAILED=True and without a warning, and
//     shows the groups, host variables and merged group_vars as kubespray's
//     playbooks would see them; the spec's Ansible_host is an ordinary
//     variable;
//   - ansible-playbook -c local runs small playbooks of the test's own over
//     the rendered inventory; their standard output, standard error and
//     exit status are kept in ../kubespray/testdata/ansible (rewritten
//     with -update), where kubespray's unit tests run RecapParser and
//     Judge over them;
//   - ansible-playbook over SSH to a real sshd (internal/sshdtest, as
//     root) with the login files and known_hosts kubespray renders,
//     through an ansible.cfg with kubespray's settings: the host key is
//     verified against the rendered known_hosts, although kubespray's
//     configuration turns checking off.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/remote"
)

// ansibleTestdata is where the captured outputs live: package kubespray's
// testdata, so that its unit tests parse real text where ansible-core is
// not installed.
const ansibleTestdata = "../kubespray/testdata/ansible"

// ansibleBin returns the path of an ansible-core program, failing t when
// it is not installed.
func ansibleBin(t *testing.T, name string) string {
	t.Helper()
	return need(t, "/usr/bin/"+name)
}

// ansibleRun is one run of an ansible-core program.
type ansibleRun struct {
	rc             int
	stdout, stderr []byte
}

// runAnsible runs an ansible-core program in dir as the SDK runs
// ansible-playbook on the Ansible server: ANSIBLE_NOCOLOR=1,
// ANSIBLE_NOCOWS=1, ANSIBLE_INVENTORY_UNPARSED_FAILED=True (env may
// override or unset them: "NAME=" removes NAME), standard input empty, no
// controlling terminal (setsid). HOME is dir/home, so that ~/.ansible is
// the test's, and ANSIBLE_CONFIG an empty file unless env sets it, so
// that no ansible.cfg of the machine applies.
func runAnsible(t *testing.T, dir string, env []string, prog string, args ...string) ansibleRun {
	t.Helper()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "empty-ansible.cfg")
	writeFile(t, cfg, nil, 0o644)
	vars := map[string]string{
		"PATH":                              "/usr/sbin:/usr/bin:/sbin:/bin",
		"LC_ALL":                            "C.UTF-8",
		"HOME":                              home,
		"ANSIBLE_CONFIG":                    cfg,
		"ANSIBLE_NOCOLOR":                   "1",
		"ANSIBLE_NOCOWS":                    "1",
		"ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			delete(vars, k)
			continue
		}
		vars[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		cmd.Env = append(cmd.Env, k+"="+vars[k])
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return ansibleRun{0, stdout.Bytes(), stderr.Bytes()}
	case ctx.Err() != nil:
		t.Fatalf("%s %s: did not end in 3 minutes\n%s\n%s", prog, strings.Join(args, " "), stdout.Bytes(), stderr.Bytes())
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return ansibleRun{exit.ExitCode(), stdout.Bytes(), stderr.Bytes()}
	}
	t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, stderr.Bytes())
	return ansibleRun{}
}

// ansibleDir returns a new empty directory for a run: /tmp/mk followed
// by 8 hex digits, removed when t ends. Not t.TempDir(): Ansible wraps its
// warnings at 79 columns and the test's directory appears in them, so
// its length must not vary for the captured output to be the same on
// every run, nor may it hold a hyphen, where the wrap may break it; and
// ssh refuses a ControlPath (under ~/.ansible/cp) of 108 bytes or more.
func ansibleDir(t *testing.T) string {
	t.Helper()
	for range 10 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		dir := fmt.Sprintf("/tmp/mk%x", b)
		err := os.Mkdir(dir, 0o700)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stopSSHMasters(dir)
			os.RemoveAll(dir)
		})
		return dir
	}
	t.Fatal("cannot make a directory /tmp/mkXXXXXXXX")
	return ""
}

// stopSSHMasters stops the ssh master connections that a run over SSH
// left behind in dir/home/.ansible/cp (ControlPersist keeps them for 30
// minutes with kubespray's ssh_args): ssh -O exit through each socket.
func stopSSHMasters(dir string) {
	sockets, _ := filepath.Glob(filepath.Join(dir, "home", ".ansible", "cp", "*"))
	for _, s := range sockets {
		cmd := exec.Command("ssh", "-O", "exit", "-o", "ControlPath="+s, "mgmtkit-test")
		cmd.Run() // a master that already ended is fine
	}
}

// writeTree writes files (path relative to dir -> content), mode 0600 as
// the SDK writes secrets.
func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), b, 0o600)
	}
}

// sampleGroupVars stands for the part of kubespray's inventory/sample
// group_vars that sets what mgmtkit overrides (the same lines in v2.16.0,
// v2.23.0 and v2.31.0: all/all.yml "no_proxy_exclude_workers: false",
// k8s_cluster/k8s-cluster.yml "kube_service_addresses: 10.233.0.0/18" and
// "kube_pods_subnet: 10.233.64.0/18"): mgmtkit's files must win.
var sampleGroupVars = map[string][]byte{
	"group_vars/all/all.yml":                 []byte("no_proxy_exclude_workers: false\n"),
	"group_vars/k8s_cluster/k8s-cluster.yml": []byte("kube_service_addresses: 10.233.0.0/18\nkube_pods_subnet: 10.233.64.0/18\n"),
}

// inventoryCase is an inventory directory as the SDK writes it.
type inventoryCase struct {
	name             string
	inv              kubespray.Inventory
	vars             kubespray.GroupVars
	masters, workers kubespray.Login
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// clusterHosts returns n hosts named PREFIX-127-0-X-Y at 127.0.X.Y from
// 127.0.x.first on, ip on the 10.10.x.0/24 cluster network.
func clusterHosts(prefix string, x, first, n int) []kubespray.Host {
	var hs []kubespray.Host
	for i := range n {
		y := first + i
		hs = append(hs, kubespray.Host{
			Name:        fmt.Sprintf("%s-127-0-%d-%d", prefix, x, y),
			AnsibleHost: addr(fmt.Sprintf("127.0.%d.%d", x, y)),
			IP:          addr(fmt.Sprintf("10.10.%d.%d", x, y)),
		})
	}
	return hs
}

// write renders the case into dir and returns the paths of hosts.yaml.
func (c inventoryCase) write(t *testing.T, dir string) string {
	t.Helper()
	hosts, err := c.inv.YAML()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"hosts.yaml": hosts}
	parts := []map[string][]byte{sampleGroupVars}
	gv, err := c.vars.Files()
	if err != nil {
		t.Fatal(err)
	}
	logins, err := kubespray.LoginFiles(c.masters, c.workers)
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, gv, logins)
	for _, m := range parts {
		for k, v := range m {
			files[k] = v
		}
	}
	writeTree(t, dir, files)
	return filepath.Join(dir, "hosts.yaml")
}

// str reads a variable that ansible-inventory printed either as a plain
// string or as an !unsafe one.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if s, ok := v["__ansible_unsafe"].(string); ok {
			return s
		}
	}
	return fmt.Sprintf("%#v", v)
}

// The inventories and group_vars package kubespray renders load into the
// real ansible-inventory without a warning, with the groups, host
// variables and merged group_vars kubespray's playbooks read.
func TestAnsibleInventory(t *testing.T) {
	inventory := ansibleBin(t, "ansible-inventory")
	// Passwords with what YAML, a shell and Jinja2 read specially.
	same := kubespray.Login{User: "ubuntu", Password: remote.NewSecret(`p'a"s s{{ 7*7 }}$x#`)}
	cases := []inventoryCase{{
		name:    "1 master 1 worker",
		inv:     kubespray.Inventory{ControlPlane: clusterHosts("master", 1, 2, 1), Nodes: clusterHosts("worker", 1, 3, 1)},
		masters: same, workers: same,
	}, {
		name: "3 masters 2 workers",
		inv:  kubespray.Inventory{ControlPlane: clusterHosts("master", 2, 11, 3), Nodes: clusterHosts("worker", 2, 21, 2)},
		vars: kubespray.GroupVars{
			PodsSubnet:             netip.MustParsePrefix("192.168.0.0/16"),
			ServiceAddresses:       netip.MustParsePrefix("10.199.187.0/24"),
			HTTPProxy:              "http://user1:pa{{ss}}@proxy.example:3128",
			HTTPSProxy:             "http://user2:password2@proxy.example:3129",
			AdditionalNoProxy:      []string{"192.168.246.0/24", "10.0.0.1"},
			MTU:                    1450,
			SupplementaryAddresses: []string{"127.0.2.100"},
			KnownHostsFile:         "/srv/mgmtkit/inventory/vnf-1/known_hosts",
		},
		masters: same, workers: same,
	}, {
		name: "different logins",
		// An IPv6 address that a YAML 1.1 reader would take for a
		// base-60 integer unless it is quoted.
		inv:     kubespray.Inventory{ControlPlane: clusterHosts("master", 3, 2, 1), Nodes: append(clusterHosts("worker", 3, 3, 2), kubespray.Host{Name: "worker-v6", AnsibleHost: addr("1:2:3:4:5:6:7:8"), IP: addr("10.10.3.9")})},
		vars:    kubespray.GroupVars{KnownHostsFile: "/srv/inv/known_hosts"},
		masters: kubespray.Login{User: "ubuntu", Password: remote.NewSecret("yes")},
		workers: kubespray.Login{User: "worker-admin", Password: remote.NewSecret(`w{%raw%}"'`)},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := ansibleDir(t)
			hostsFile := c.write(t, dir)
			run := runAnsible(t, dir, nil, inventory, "-i", hostsFile, "--list")
			if run.rc != 0 || len(run.stderr) != 0 {
				t.Fatalf("ansible-inventory --list: exit %d, stderr:\n%s", run.rc, run.stderr)
			}
			var list map[string]struct {
				Hosts    []string `json:"hosts"`
				Children []string `json:"children"`
				Hostvars map[string]map[string]any
			}
			if err := json.Unmarshal(run.stdout, &list); err != nil {
				t.Fatalf("ansible-inventory --list: %v\n%s", err, run.stdout)
			}
			masters, workers := hostNames(c.inv.ControlPlane), hostNames(c.inv.Nodes)
			groups := map[string][]string{"kube_control_plane": masters, "etcd": masters, "kube_node": workers}
			for g, want := range groups {
				if got := list[g].Hosts; !slices.Equal(got, want) {
					t.Errorf("group %s: hosts %v, want %v", g, got, want)
				}
			}
			// An empty group is absent as a key and present in its
			// parents' children (facts §2).
			if got, want := list["k8s_cluster"].Children, []string{"kube_control_plane", "kube_node", "calico_rr"}; !slices.Equal(got, want) {
				t.Errorf("k8s_cluster children %v, want %v", got, want)
			}
			if got := list["all"].Children; !slices.Contains(got, "calico_rr") || !slices.Contains(got, "k8s_cluster") {
				t.Errorf("all's children %v lack calico_rr or k8s_cluster", got)
			}
			for _, old := range []string{"kube-master", "kube-node", "k8s-cluster", "calico-rr"} {
				if _, ok := list[old]; ok {
					t.Errorf("old group name %s present", old)
				}
			}
			// --host shows what a play sees for the host: its variables
			// merged with group_vars (k8s_cluster's, all's, its group's).
			for i, h := range slices.Concat(c.inv.ControlPlane, c.inv.Nodes) {
				run := runAnsible(t, dir, nil, inventory, "-i", hostsFile, "--host", h.Name)
				if run.rc != 0 || len(run.stderr) != 0 {
					t.Fatalf("ansible-inventory --host %s: exit %d, stderr:\n%s", h.Name, run.rc, run.stderr)
				}
				var vars map[string]any
				if err := json.Unmarshal(run.stdout, &vars); err != nil {
					t.Fatal(err)
				}
				isMaster := i < len(c.inv.ControlPlane)
				login := c.workers
				if isMaster {
					login = c.masters
				}
				want := map[string]string{
					"ansible_host":            h.AnsibleHost.String(),
					"ip":                      h.IP.String(),
					"access_ip":               h.IP.String(),
					"ansible_user":            login.User,
					"ansible_password":        login.Password.Reveal(),
					"ansible_become_password": login.Password.Reveal(),
					// mgmtkit's all/mgmtkit.yml over the sample's all.yml.
					"no_proxy_exclude_workers": "true",
					// The sample's values stay when mgmtkit sets none.
					"kube_pods_subnet":       "10.233.64.0/18",
					"kube_service_addresses": "10.233.0.0/18",
				}
				if isMaster {
					want["etcd_member_name"] = fmt.Sprintf("etcd%d", i+1)
				}
				g := c.vars
				if g.PodsSubnet.IsValid() {
					want["kube_pods_subnet"] = g.PodsSubnet.String()
					want["kube_service_addresses"] = g.ServiceAddresses.String()
				}
				if g.HTTPProxy != "" {
					want["http_proxy"] = g.HTTPProxy
					want["https_proxy"] = g.HTTPSProxy
					want["additional_no_proxy"] = strings.Join(g.AdditionalNoProxy, ",")
				}
				if g.MTU != 0 {
					want["calico_mtu"] = strconv.Itoa(g.MTU)
					want["calico_veth_mtu"] = strconv.Itoa(g.MTU - 50)
				}
				if g.KnownHostsFile != "" {
					want["ansible_ssh_host_key_checking"] = "true"
					want["ansible_ssh_common_args"] = "-o UserKnownHostsFile=" + g.KnownHostsFile + " -o StrictHostKeyChecking=yes"
					want["ansible_ssh_args"] = want["ansible_ssh_common_args"] + " -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100"
				}
				for k, w := range want {
					v, ok := vars[k]
					if !ok {
						t.Errorf("host %s: no %s", h.Name, k)
						continue
					}
					got := str(v)
					switch v.(type) {
					case bool, float64:
						got = fmt.Sprint(v)
					}
					if got != w {
						t.Errorf("host %s: %s = %q, want %q", h.Name, k, got, w)
					}
				}
				if g.SupplementaryAddresses != nil {
					if got := fmt.Sprint(vars["supplementary_addresses_in_ssl_keys"]); got != fmt.Sprint(g.SupplementaryAddresses) {
						t.Errorf("host %s: supplementary_addresses_in_ssl_keys %s, want %v", h.Name, got, g.SupplementaryAddresses)
					}
				}
				for _, k := range []string{"no_proxy", "Ansible_host"} {
					if _, ok := vars[k]; ok {
						t.Errorf("host %s: %s is set", h.Name, k)
					}
				}
			}
			// What a play sees: the passwords and proxy reach a task as
			// the text given, not evaluated as Jinja2 (!unsafe).
			checkTemplating(t, dir, hostsFile, c)
		})
	}
}

func hostNames(hs []kubespray.Host) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

// checkTemplating runs a play (-c local) that writes each host's
// ansible_password and http_proxy through a template into a file, and
// compares the files with the values given.
func checkTemplating(t *testing.T, dir, hostsFile string, c inventoryCase) {
	t.Helper()
	playbook := ansibleBin(t, "ansible-playbook")
	out := filepath.Join(dir, "out")
	writeFile(t, filepath.Join(dir, "values.yml"), []byte(`- hosts: k8s_cluster
  gather_facts: false
  tasks:
    - name: write the values a task sees
      copy:
        dest: "`+out+`/{{ inventory_hostname }}"
        content: "{{ {'password': ansible_password, 'become': ansible_become_password, 'proxy': http_proxy | default('')} | to_json }}"
`), 0o644)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	run := runAnsible(t, dir, nil, playbook, "-i", hostsFile, "-c", "local", "-e", "ansible_python_interpreter=/usr/bin/python3", "values.yml")
	if run.rc != 0 {
		t.Fatalf("ansible-playbook values.yml: exit %d\n%s\n%s", run.rc, run.stdout, run.stderr)
	}
	for i, h := range slices.Concat(c.inv.ControlPlane, c.inv.Nodes) {
		login := c.workers
		if i < len(c.inv.ControlPlane) {
			login = c.masters
		}
		got, err := os.ReadFile(filepath.Join(out, h.Name))
		if err != nil {
			t.Fatal(err)
		}
		var seen struct{ Password, Become, Proxy string }
		if err := json.Unmarshal(got, &seen); err != nil {
			t.Fatalf("host %s: %v: %s", h.Name, err, got)
		}
		if pw := login.Password.Reveal(); seen.Password != pw || seen.Become != pw || seen.Proxy != c.vars.HTTPProxy {
			t.Errorf("host %s: a task saw %+v, want password and become %q, proxy %q", h.Name, seen, pw, c.vars.HTTPProxy)
		}
	}
	// The passwords are nowhere in what ansible-playbook printed.
	for _, l := range []kubespray.Login{c.masters, c.workers} {
		if pw := l.Password.Reveal(); bytes.Contains(run.stdout, []byte(pw)) || bytes.Contains(run.stderr, []byte(pw)) {
			t.Errorf("ansible-playbook printed a password:\n%s\n%s", run.stdout, run.stderr)
		}
	}
}

// The spec's INI sample writes Ansible_host (capital A): Ansible's
// variable names are case-sensitive, so it is an ordinary variable and
// ansible_host is unset — Ansible would connect to the name node1 (facts
// §1.3). Package kubespray writes ansible_host.
func TestAnsibleSpecSampleCapitalAIsAnOrdinaryVariable(t *testing.T) {
	inventory := ansibleBin(t, "ansible-inventory")
	dir := ansibleDir(t)
	// The first line and group of the spec's sample
	// (k8s-mgmtdriver-kubespray.rst, "The following is a sample of
	// inventory file").
	writeFile(t, filepath.Join(dir, "hosts.ini"), []byte(`[all]
node1 Ansible_host=95.54.0.12  ip=10.3.0.1 etcd_member_name=etcd1 Ansible_user=user1 Ansible_password=password1

[kube_control_plane]
node1
`), 0o644)
	run := runAnsible(t, dir, nil, inventory, "-i", "hosts.ini", "--host", "node1")
	if run.rc != 0 {
		t.Fatalf("exit %d: %s", run.rc, run.stderr)
	}
	var vars map[string]any
	if err := json.Unmarshal(run.stdout, &vars); err != nil {
		t.Fatal(err)
	}
	if vars["Ansible_host"] != "95.54.0.12" {
		t.Errorf("Ansible_host = %v, want the ordinary variable 95.54.0.12", vars["Ansible_host"])
	}
	for _, k := range []string{"ansible_host", "ansible_user", "ansible_password"} {
		if v, ok := vars[k]; ok {
			t.Errorf("%s = %v: Ansible read the capitalised name as its own variable", k, v)
		}
	}
}

// playbookCase is a playbook of the test's own, run -c local over an
// inventory package kubespray renders; its output is captured.
type playbookCase struct {
	name string
	// playbook is the playbook's text; roles are the roles it uses, role
	// path -> tasks/main.yml.
	playbook string
	roles    map[string]string
	args     []string
	env      []string
	// unreachable adds a host Ansible reaches by SSH on a closed port.
	unreachable bool
	rc          int
	// expected are the hosts Judge is given; judged says whether Judge
	// accepts the run.
	expected []string
	judged   bool
}

// The hosts of the playbook runs: one master, two workers, one with a
// name longer than the RECAP's 26-character column.
var (
	pbMaster = kubespray.Host{Name: "master-127-0-1-2", AnsibleHost: addr("127.0.1.2"), IP: addr("127.0.1.2")}
	pbWorker = kubespray.Host{Name: "worker-127-0-1-3", AnsibleHost: addr("127.0.1.3"), IP: addr("127.0.1.3")}
	pbLong   = kubespray.Host{Name: "worker-127-0-1-4-with-a-longer-name", AnsibleHost: addr("127.0.1.4"), IP: addr("127.0.1.4")}
	pbDown   = kubespray.Host{Name: "worker-127-0-1-5", AnsibleHost: addr("127.0.1.5"), IP: addr("127.0.1.5")}
	pbAllUp  = []string{pbMaster.Name, pbWorker.Name, pbLong.Name}
)

// The remove-node confirmation of kubespray (playbooks/remove_node.yml,
// v2.17.0 to v2.31.0): a pause prompt unless skip_confirmation, then a
// failure unless the answer was "yes", on the hosts node names (all
// nodes when node is unset, before v2.28.0). Written for this test after
// kubespray's two tasks and play header.
const removeNodeConfirm = `- name: Confirm node removal
  hosts: "{{ node | default('etcd:k8s_cluster:calico_rr') }}"
  gather_facts: false
  tasks:
    - name: Confirm Execution
      pause:
        prompt: "Are you sure you want to delete nodes state? Type 'yes' to delete nodes."
      register: pause_result
      run_once: true
      when:
        - not (skip_confirmation | default(false) | bool)

    - name: Fail if user does not confirm deletion
      fail:
        msg: "Delete nodes confirmation failed"
      when: pause_result.user_input | default('yes') != 'yes'
`

var playbookCases = []playbookCase{{
	name: "pass",
	playbook: `- name: Everything passes
  hosts: k8s_cluster
  gather_facts: false
  roles:
    - kubernetes/preinstall
  tasks:
    - name: Show a result
      debug:
        msg: "a multi-line {\"ok\"} result that is no failure"
    - name: Skipped
      command: "false"
      when: false
    - name: Ignored failure
      fail:
        msg: ignored
      ignore_errors: true
    - name: Rescued failure
      block:
        - name: Fails
          fail:
            msg: rescued
      rescue:
        - name: Rescues
          command: "true"
`,
	roles: map[string]string{"kubernetes/preinstall": `- name: Stop if bad hostname
  assert:
    that: inventory_hostname is match("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    msg: "Hostname must consist of lower case alphanumeric characters, '.' or '-', and must start and end with an alphanumeric character"
- name: Changes something
  command: "true"
`},
	rc: 0, expected: pbAllUp, judged: true,
}, {
	name: "fail-task",
	playbook: `- name: One host fails
  hosts: k8s_cluster
  gather_facts: false
  roles:
    - kubernetes/preinstall
  tasks:
    - name: The others go on
      command: "true"
`,
	roles: map[string]string{"kubernetes/preinstall": `- name: Stop if the memory is too small
  assert:
    that: inventory_hostname != 'worker-127-0-1-3'
    msg: "Not enough memory to run as a node"
`},
	rc: 2, expected: pbAllUp,
}, {
	name: "fail-command",
	playbook: `- name: A command fails with output
  hosts: kube_node
  gather_facts: false
  tasks:
    - name: Run kubeadm join
      shell: "echo joining; for i in 1 2 3 4 5 6; do echo line $i >&2; done; echo 'error execution phase preflight: couldn'\\''t validate the identity of the API Server' >&2; exit 1"
      when: inventory_hostname == 'worker-127-0-1-3'
`,
	rc: 2, expected: pbAllUp,
}, {
	name: "fail-item",
	playbook: `- name: A loop item fails
  hosts: kube_control_plane
  gather_facts: false
  tasks:
    - name: Download files
      fail:
        msg: "cannot download {{ item }}"
      when: item != 'kubeadm'
      loop: [kubeadm, kubelet, kubectl]
`,
	rc: 2, expected: []string{pbMaster.Name},
}, {
	name: "fail-delegated",
	playbook: `- name: A delegated task fails
  hosts: kube_node
  gather_facts: false
  tasks:
    - name: Drain the node
      fail:
        msg: "error: unable to drain node {{ inventory_hostname }}"
      delegate_to: "{{ groups['kube_control_plane'] | first }}"
      when: inventory_hostname == 'worker-127-0-1-3'
`,
	rc: 2, expected: pbAllUp[1:],
}, {
	name: "unreachable",
	playbook: `- name: A host is unreachable, another fails
  hosts: all
  gather_facts: false
  tasks:
    - name: Ping
      ping:
    - name: Fail on the master
      fail:
        msg: master failed
      when: inventory_hostname == 'master-127-0-1-2'
`,
	unreachable: true,
	rc:          4, expected: append(slices.Clone(pbAllUp), pbDown.Name),
}, {
	name: "version-assert",
	// kubespray's version check as it fails with Debian's ansible-core
	// (facts §1.2): the play of playbooks/ansible_version.yml v2.31.0,
	// written for this test with the same vars, assert and message.
	playbook: `- name: Check Ansible version
  hosts: all
  gather_facts: false
  become: false
  run_once: true
  vars:
    minimal_ansible_version: 2.18.0
    maximal_ansible_version: 2.19.0
  tasks:
    - name: "Check {{ minimal_ansible_version }} <= Ansible version < {{ maximal_ansible_version }}"
      assert:
        msg: "Ansible must be between {{ minimal_ansible_version }} and {{ maximal_ansible_version }} exclusive - you have {{ ansible_version.string }}"
        that:
          - ansible_version.string is version(minimal_ansible_version, ">=")
          - ansible_version.string is version(maximal_ansible_version, "<")
`,
	rc: 2, expected: pbAllUp,
}, {
	name:     "remove-node-no-tty",
	playbook: removeNodeConfirm,
	args:     []string{"-e", "node=" + pbWorker.Name},
	rc:       2, expected: []string{pbWorker.Name},
}, {
	name:     "remove-node-skip-confirmation",
	playbook: removeNodeConfirm,
	args:     []string{"-e", "node=" + pbWorker.Name, "-e", "skip_confirmation=true", "-e", "delete_nodes_confirmation=yes"},
	rc:       0, expected: []string{pbWorker.Name}, judged: true,
}, {
	name:     "remove-node-no-match",
	playbook: removeNodeConfirm,
	args:     []string{"-e", "node=worker-127-0-1-9", "-e", "skip_confirmation=true"},
	rc:       0, expected: []string{"worker-127-0-1-9"},
}, {
	name:     "limit-no-match",
	playbook: removeNodeConfirm,
	args:     []string{"-e", "skip_confirmation=true", "--limit", "worker-127-0-1-9"},
	rc:       1, expected: []string{"worker-127-0-1-9"},
}, {
	name:     "missing-inventory",
	playbook: removeNodeConfirm,
	args:     []string{"-i", "missing.yaml", "-e", "skip_confirmation=true"},
	env:      []string{"ANSIBLE_INVENTORY_UNPARSED_FAILED="},
	rc:       0, expected: pbAllUp,
}, {
	name:     "missing-inventory-unparsed-failed",
	playbook: removeNodeConfirm,
	args:     []string{"-i", "missing.yaml", "-e", "skip_confirmation=true"},
	rc:       1, expected: pbAllUp,
}}

// Normalisations of captured output: what differs between runs.
var (
	// A command result's times.
	commandTimesRE = regexp.MustCompile(`"(delta|end|start)": "[^"]*"`)
)

// normalise replaces what differs between runs: the test's directory,
// the closed port, a command result's times.
func normalise(b []byte, dir string, port int) []byte {
	s := strings.ReplaceAll(string(b), dir, "$DIR")
	if port != 0 {
		s = strings.ReplaceAll(s, "port "+strconv.Itoa(port)+":", "port PORT:")
	}
	s = commandTimesRE.ReplaceAllString(s, `"$1": "TIME"`)
	return []byte(s)
}

// closedPort returns a TCP port of ip that nothing listens on a moment
// ago.
func closedPort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// assertAnsibleOutput compares one captured stream with
// ansibleTestdata/name; with -update it rewrites the file.
func assertAnsibleOutput(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.AssertFile(t, filepath.Join(ansibleTestdata, name), got)
}

// Small playbooks of the test's own run with ansible-playbook -c local
// (one fork, so that the order of the hosts' lines is fixed) over an
// inventory package kubespray renders: the exit status is the one facts §2
// gives, the outputs are those kept in ../kubespray/testdata/ansible, and
// Judge reads them as the case says.
func TestAnsiblePlaybook(t *testing.T) {
	playbook := ansibleBin(t, "ansible-playbook")
	for _, c := range playbookCases {
		t.Run(c.name, func(t *testing.T) {
			dir := ansibleDir(t)
			inv := kubespray.Inventory{ControlPlane: []kubespray.Host{pbMaster}, Nodes: []kubespray.Host{pbWorker, pbLong}}
			hostVars := map[string][]byte{}
			port := 0
			if c.unreachable {
				inv = inv.WithNodes(pbDown)
				port = closedPort(t, pbDown.AnsibleHost.String())
				hostVars["host_vars/"+pbDown.Name+".yml"] = []byte("ansible_connection: ssh\nansible_port: " + strconv.Itoa(port) + "\n")
			}
			hosts, err := inv.YAML()
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{
				"hosts.yaml": hosts,
				// Every other host runs its tasks here.
				"group_vars/all/test.yml": []byte("ansible_connection: local\nansible_python_interpreter: /usr/bin/python3\n"),
				"playbook.yml":            []byte(c.playbook),
			}
			for k, v := range hostVars {
				files[k] = v
			}
			for role, tasks := range c.roles {
				files["roles/"+role+"/tasks/main.yml"] = []byte(tasks)
			}
			writeTree(t, dir, files)
			args := []string{"--forks", "1"}
			if !slices.Contains(c.args, "-i") {
				args = append(args, "-i", "hosts.yaml")
			}
			args = append(args, c.args...)
			run := runAnsible(t, dir, c.env, playbook, append(args, "playbook.yml")...)
			stdout, stderr := normalise(run.stdout, dir, port), normalise(run.stderr, dir, port)
			if run.rc != c.rc {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", run.rc, c.rc, stdout, stderr)
			}
			assertAnsibleOutput(t, c.name+".stdout", stdout)
			assertAnsibleOutput(t, c.name+".stderr", stderr)
			assertAnsibleOutput(t, c.name+".rc", []byte(strconv.Itoa(run.rc)+"\n"))

			var p kubespray.RecapParser
			for _, out := range [][]byte{stdout, stderr} {
				for l := range strings.SplitSeq(strings.TrimSuffix(string(out), "\n"), "\n") {
					p.Line(l)
				}
			}
			err = p.Recap().Judge(run.rc, c.expected)
			if (err == nil) != c.judged {
				t.Errorf("Judge(%d, %v) = %v, want accepted=%v", run.rc, c.expected, err, c.judged)
			}
		})
	}
}

// The login files and known_hosts package kubespray renders, used by
// ansible-playbook over SSH (password login through sshpass, sudo asking
// for the password) to a real sshd, through an ansible.cfg with
// kubespray's SSH settings (ansible.cfg v2.31.0: host_key_checking=False,
// ssh_args ending in -o UserKnownHostsFile=/dev/null). With mgmtkit's
// group_vars the host key is verified against the rendered known_hosts: a
// wrong key makes the host unreachable. Without them, or with only
// ansible_ssh_common_args, kubespray's settings win and any key is
// accepted.
func TestAnsibleVerifiesHostKeys(t *testing.T) {
	playbook := ansibleBin(t, "ansible-playbook")
	need(t, "/usr/bin/sshpass")
	s := sshdtest.Start(t)
	u := s.User(sshdtest.SudoPassword)
	node := kubespray.Host{Name: "node-127-0-0-1", AnsibleHost: addr("127.0.0.1"), IP: addr("127.0.0.1")}
	otherKey, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := ssh.NewPublicKey(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		key  ssh.PublicKey
		// vars: "all" is GroupVars.Files' all/mgmtkit.yml, "common" only
		// its ansible_ssh_common_args, "none" nothing.
		vars     string
		verified bool
	}{
		{"right key", s.HostKey(), "all", true},
		{"wrong key", wrong, "all", false},
		{"wrong key without mgmtkit's vars", wrong, "none", true},
		{"wrong key with ssh_common_args only", wrong, "common", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := ansibleDir(t)
			knownHosts := filepath.Join(dir, "inv", "known_hosts")
			kh, err := kubespray.KnownHosts(map[netip.Addr]string{node.AnsibleHost: string(ssh.MarshalAuthorizedKey(c.key))})
			if err != nil {
				t.Fatal(err)
			}
			hosts, err := kubespray.Inventory{ControlPlane: []kubespray.Host{node}}.YAML()
			if err != nil {
				t.Fatal(err)
			}
			logins, err := kubespray.LoginFiles(kubespray.Login{User: u.Name, Password: remote.NewSecret(u.Password)}, kubespray.Login{User: u.Name, Password: remote.NewSecret(u.Password)})
			if err != nil {
				t.Fatal(err)
			}
			gv, err := kubespray.GroupVars{KnownHostsFile: knownHosts}.Files()
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{
				"inv/hosts.yaml":  hosts,
				"inv/known_hosts": kh,
				// The test's sshd listens on a free port, not 22: ssh then
				// looks the host up as [127.0.0.1]:PORT, so HostKeyAlias
				// makes it look up the bare address, as KnownHosts writes
				// it for port 22.
				"inv/host_vars/" + node.Name + ".yml": []byte("ansible_port: " + s.Port() + "\nansible_ssh_extra_args: -o HostKeyAlias=127.0.0.1\nansible_python_interpreter: /usr/bin/python3\n"),
				"ansible.cfg": []byte(`[ssh_connection]
pipelining=True
ssh_args = -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 -o UserKnownHostsFile=/dev/null
[defaults]
host_key_checking=False
gathering = smart
`),
				"whoami.yml": []byte(`- hosts: k8s_cluster
  gather_facts: false
  tasks:
    - name: Become root with the login's password
      command: id -u
      become: true
      register: id
      changed_when: false
    - name: Root it is
      assert:
        that: id.stdout == '0'
`),
			}
			for k, v := range logins {
				files["inv/"+k] = v
			}
			switch c.vars {
			case "all":
				files["inv/"+kubespray.AllVarsFile] = gv[kubespray.AllVarsFile]
			case "common":
				files["inv/group_vars/all/common.yml"] = []byte("ansible_ssh_common_args: -o UserKnownHostsFile=" + knownHosts + " -o StrictHostKeyChecking=yes\n")
			}
			writeTree(t, dir, files)
			run := runAnsible(t, dir, []string{"ANSIBLE_CONFIG=" + filepath.Join(dir, "ansible.cfg")}, playbook, "-i", "inv/hosts.yaml", "whoami.yml")
			out := string(run.stdout) + string(run.stderr)
			if strings.Contains(out, u.Password) {
				t.Errorf("the password is in ansible-playbook's output:\n%s", out)
			}
			var p kubespray.RecapParser
			for l := range strings.SplitSeq(out, "\n") {
				p.Line(l)
			}
			judged := p.Recap().Judge(run.rc, []string{node.Name})
			switch {
			case c.verified && (run.rc != 0 || judged != nil):
				t.Fatalf("exit %d, Judge: %v\n%s", run.rc, judged, out)
			case !c.verified && run.rc != 4:
				t.Fatalf("exit %d, want 4 (unreachable: host key refused)\n%s", run.rc, out)
			case !c.verified && (judged == nil || !strings.Contains(judged.Error(), "host "+node.Name+" unreachable") || !strings.Contains(out, "Host key verification failed")):
				t.Fatalf("Judge: %v\n%s", judged, out)
			}
		})
	}
}

// `ansible-playbook --version` as the SDK reads it on the Ansible server,
// kept in ../kubespray/testdata/ansible/version.stdout (paths under the
// test's home normalised); ParseCoreVersion reads the version from it.
func TestAnsibleVersion(t *testing.T) {
	playbook := ansibleBin(t, "ansible-playbook")
	dir := ansibleDir(t)
	run := runAnsible(t, dir, nil, playbook, "--version")
	if run.rc != 0 {
		t.Fatalf("ansible-playbook --version: exit %d: %s", run.rc, run.stderr)
	}
	out := normalise(run.stdout, dir, 0)
	assertAnsibleOutput(t, "version.stdout", out)
	v, err := kubespray.ParseCoreVersion(out)
	if err != nil {
		t.Fatal(err)
	}
	// Debian 12's ansible-core (facts §6).
	if !strings.HasPrefix(v, "2.14.") {
		t.Errorf("ParseCoreVersion = %q, want Debian 12's 2.14.x", v)
	}
}

// CheckCore decides as kubespray's assert does: ansible-core's own
// version test (lib/ansible/plugins/test/core.py version_compare, loose
// by default), `core is version(min, ">=") and core is version(max,
// "<")`, run by Debian's Python over the same versions; where the test
// raises (a number meets a text), CheckCore reports that the versions do
// not compare.
func TestAnsibleVersionCompare(t *testing.T) {
	need(t, "/usr/bin/python3")
	ansibleBin(t, "ansible-playbook")
	cases := [][3]string{ // min, max, core
		{"2.16.4", "2.17.0", "2.14.18"},
		{"2.16.4", "2.17.0", "2.16.3"},
		{"2.16.4", "2.17.0", "2.16.4"},
		{"2.16.4", "2.17.0", "2.16.14"},
		{"2.16.4", "2.17.0", "2.17.0"},
		{"2.16.4", "2.17.0", "2.17.0rc1"},
		{"2.16.4", "2.17.0", "2.16.4rc1"},
		{"2.14.0", "2.15.0", "2.14.18"},
		{"2.9.0", "2.11.0", "2.9.20"},
		{"2.9.0", "2.11.0", "2.10.17"},
		{"2.9.0", "2.11.0", "2.11"},
		{"2.18.0", "2.19.0", "2.18.0.post1"},
		{"2.18.0", "2.19.0", "2.18.0-1"},
		{"2.18.0", "2.19.0", "2.18.dev0"},
		{"2.18.0", "2.19.0", "02.018.000"},
		{"2.18.0", "2.19.0", "2.18.0b2"},
		{"2.17.3", "2.18.0", "2.17.14"},
	}
	var script strings.Builder
	script.WriteString("import json, sys\nfrom ansible.plugins.test.core import version_compare\nout = []\n")
	for _, c := range cases {
		fmt.Fprintf(&script, "try:\n    out.append('ok' if version_compare(%q, %q, '>=') and version_compare(%q, %q, '<') else 'refused')\nexcept Exception as e:\n    out.append('error')\n", c[2], c[0], c[2], c[1])
	}
	script.WriteString("json.dump(out, sys.stdout)\n")
	cmd := exec.Command("/usr/bin/python3", "-c", script.String())
	rc, stdout, stderr := runCommand(t, cmd)
	if rc != 0 {
		t.Fatalf("python3: exit %d: %s", rc, stderr)
	}
	var verdicts []string
	if err := json.Unmarshal(stdout, &verdicts); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	for i, c := range cases {
		err := kubespray.CheckCore("2.99.0", c[0], c[1], c[2])
		got := "ok"
		switch {
		case err != nil && strings.Contains(err.Error(), "do not compare"):
			got = "error"
		case err != nil:
			got = "refused"
		}
		if got != verdicts[i] {
			t.Errorf("CheckCore(%s, %s, %s): %s (%v); Ansible's version test: %s", c[0], c[1], c[2], got, err, verdicts[i])
		}
	}
}

package ansible_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/ansible"
	"github.com/mgmtkit/mgmtkit/remote"
)

// cluster builds a cluster of the first master and the first nWorkers
// workers with cluster.yml.
func (e *env) cluster(nWorkers int) {
	e.t.Helper()
	e.inventory(e.masters(), e.workers()[:nWorkers], "")
	if out, stderr, code := e.playbook("cluster.yml"); code != 0 {
		e.t.Fatalf("cluster.yml: exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestScaleWithLimitNeedsTheFactCacheThenJoinsTheNewWorker(t *testing.T) {
	e := newEnv(t, 1, 2, sim.AnsibleOptions{})
	e.cluster(1)
	e.inventory(e.masters(), e.workers(), "")
	newW := nodeName(e.workers()[1])
	// The fact cache of an excluded host is gone (expired, or another
	// Ansible server): v2.28.1 refuses --limit.
	master := nodeName(e.masters()[0])
	if err := e.ans.FS().Remove("/tmp/" + master); err != nil {
		t.Fatal(err)
	}
	out, _, code := e.playbook("scale.yml", "--limit", newW)
	want := "The following excluded hosts are not cached: ['" + master + "']\\n"
	if code != 2 || !strings.Contains(out, "Kubespray does not support '--limit' without a populated facts cache for the excluded hosts.\\nPlease run the facts.yml playbook first without '--limit'.\\n") || !strings.Contains(out, want) {
		t.Fatalf("scale --limit without cache: exit %d\n%s", code, out)
	}
	if slices.Contains(e.readyNodes(), newW) {
		t.Fatal("the refused scale joined the worker")
	}
	// facts.yml without --limit, then scale.yml --limit NEW.
	if out, stderr, code := e.playbook("playbooks/facts.yml"); code != 0 {
		t.Fatalf("facts.yml: exit %d\n%s\n%s", code, out, stderr)
	}
	if !e.ans.FS().Exists("/tmp/" + master) {
		t.Fatal("facts.yml wrote no fact cache")
	}
	out, stderr, code := e.playbook("scale.yml", "--limit", newW)
	if code != 0 {
		t.Fatalf("scale.yml: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := recap(out); len(got) != 1 || !strings.HasPrefix(got[0], newW+" ") {
		t.Errorf("scale --limit recap %q", got)
	}
	if !slices.Contains(e.readyNodes(), newW) {
		t.Fatalf("%s did not join\n%s", newW, out)
	}
}

func TestRemoveNodeDrainsResetsAndDeletesTheNode(t *testing.T) {
	e := newEnv(t, 1, 2, sim.AnsibleOptions{})
	e.cluster(2)
	victim := e.workers()[1]
	name := nodeName(victim)
	out, stderr, code := e.playbook("remove-node.yml", "-e", "node="+name, "-e", "skip_confirmation=true", "-e", "delete_nodes_confirmation=yes")
	if code != 0 {
		t.Fatalf("remove-node: exit %d\n%s\n%s", code, out, stderr)
	}
	if slices.Contains(e.readyNodes(), name) || len(e.readyNodes()) != 2 {
		t.Fatalf("nodes after removal: %v", e.readyNodes())
	}
	if victim.FS().Exists("/etc/kubernetes/kubelet.conf") {
		t.Error("the removed node was not reset")
	}
	if !strings.Contains(out, "changed: ["+name+" -> "+nodeName(e.masters()[0])+"]") {
		t.Errorf("no delegated drain/delete line:\n%s", out)
	}
	// The other worker is untouched.
	if !e.workers()[0].FS().Exists("/etc/kubernetes/kubelet.conf") {
		t.Error("the other worker was reset")
	}
}

func TestRemoveNodeWithoutNodeOrConfirmation(t *testing.T) {
	e := newEnv(t, 1, 1, sim.AnsibleOptions{})
	e.cluster(1)
	// v2.28: node is required (the localhost assert).
	out, _, code := e.playbook("remove-node.yml", "-e", "skip_confirmation=true")
	if code != 2 || !strings.Contains(out, "fatal: [localhost]: FAILED! => {\n    \"assertion\": \"node is defined\",\n    \"changed\": false,\n    \"evaluated_to\": false,\n    \"msg\": \"No nodes specified for removal. The `node` variable must be set explicitly.\"\n}") {
		t.Fatalf("no node: exit %d\n%s", code, out)
	}
	if r := recap(out); len(r) != 1 || r[0] != ansible.RecapLine("localhost", ansible.Counts{Failed: 1}) {
		t.Errorf("recap %q", r)
	}
	// A node that matches no host: rc 0, nothing removed.
	out, stderr, code := e.playbook("remove-node.yml", "-e", "node=worker1typo", "-e", "skip_confirmation=true")
	if !strings.Contains(stderr, "[WARNING]: Could not match supplied host pattern, ignoring: worker1typo") {
		t.Errorf("no warning for the unmatched pattern: %s", stderr)
	}
	if code != 0 || !strings.Contains(out, "PLAY [Reset node] "+strings.Repeat("*", 62)+"\nskipping: no hosts matched\n") {
		t.Fatalf("unmatched node: exit %d\n%s", code, out)
	}
	if len(e.readyNodes()) != 2 {
		t.Fatal("an unmatched node removed something")
	}
	// Without skip_confirmation and no terminal: the pause does not wait
	// and the play fails.
	w := nodeName(e.workers()[0])
	out, stderr, code = e.playbook("remove-node.yml", "-e", "node="+w)
	if code != 2 || !strings.Contains(out, "fatal: ["+w+"]: FAILED! => {\"changed\": false, \"msg\": \"Delete nodes confirmation failed\"}") ||
		!strings.Contains(stderr, "[WARNING]: Not waiting for response to prompt as stdin is not interactive") {
		t.Fatalf("no confirmation: exit %d\n%s\n%s", code, out, stderr)
	}
	if len(e.readyNodes()) != 2 {
		t.Fatal("an unconfirmed removal removed something")
	}
}

func TestRemoveNodeBeforeV228WithoutNodeRemovesEveryNode(t *testing.T) {
	e := newEnv(t, 1, 1, sim.AnsibleOptions{CoreVersion: "2.14.18", KubesprayRelease: ansible.Release223})
	e.cluster(1)
	_, _, _ = e.playbook("remove-node.yml", "-e", "skip_confirmation=true")
	for _, h := range append(e.masters(), e.workers()...) {
		if h.FS().Exists("/etc/kubernetes/kubelet.conf") {
			t.Errorf("%s was not reset by remove-node.yml without node (v2.23.3)", h.Name())
		}
	}
}

func TestVersionMismatchFailsFirst(t *testing.T) {
	e := newEnv(t, 1, 1, sim.AnsibleOptions{CoreVersion: "2.14.18"})
	e.inventory(e.masters(), e.workers(), "")
	out, _, code := e.playbook("cluster.yml")
	first := nodeName(e.masters()[0])
	if code != 2 || !strings.Contains(out, "fatal: ["+first+"]: FAILED! => {\n    \"assertion\": \"ansible_version.string is version(minimal_ansible_version, \\\">=\\\")\",\n    \"changed\": false,\n    \"evaluated_to\": false,\n    \"msg\": \"Ansible must be between 2.16.4 and 2.17.0 exclusive - you have 2.14.18\"\n}\n\nNO MORE HOSTS LEFT *************************************************************\n") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if r := recap(out); len(r) != 1 || r[0] != ansible.RecapLine(first, ansible.Counts{Failed: 1}) {
		t.Errorf("recap %q", r)
	}
	if len(e.cloud.Kube().Clusters()) != 0 || e.masters()[0].Machine.Installed("kubeadm") {
		t.Error("a refused run changed the nodes")
	}
	// ansible-playbook --version tells the version.
	if stdout, _, _ := e.runAns("ansible-playbook --version"); !strings.HasPrefix(stdout, "ansible-playbook [core 2.14.18]\n  config file = None\n") {
		t.Errorf("--version: %q", stdout)
	}
	if stdout, _, _ := e.runAns("cd " + root + " && ansible-playbook --version"); !strings.Contains(stdout, "  config file = "+root+"/ansible.cfg\n") {
		t.Errorf("--version in the checkout: %q", stdout)
	}
}

func TestUnreachableAndDeadHosts(t *testing.T) {
	e := newEnv(t, 1, 2, sim.AnsibleOptions{})
	w := nodeName(e.workers()[0])
	ansible.FaultsOf(e.ans.Machine).Unreachable(w, true)
	e.inventory(e.masters(), e.workers(), "")
	out, _, code := e.playbook("cluster.yml")
	if code != 4 || !strings.Contains(out, "fatal: ["+w+"]: UNREACHABLE! => {\"changed\": false, \"msg\": \"Failed to connect to the host via ssh: ssh: connect to host "+e.workers()[0].SSHAddress+" port 22: Connection timed out\", \"unreachable\": true}") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "NO MORE HOSTS LEFT") {
		t.Error("any_errors_fatal did not end the run")
	}
	// A VM that is gone: connection refused.
	ansible.FaultsOf(e.ans.Machine).Unreachable(w, false)
	gone := e.workers()[1]
	if _, err := e.vnf.ScaleIn("worker_instance", gone.Name()); err != nil {
		t.Fatal(err)
	}
	out, _, code = e.playbook("playbooks/facts.yml")
	if code != 4 || !strings.Contains(out, "ssh: connect to host "+gone.SSHAddress+" port 22: Connection refused") {
		t.Fatalf("dead VM: exit %d\n%s", code, out)
	}
}

func TestHostKeys(t *testing.T) {
	e := newEnv(t, 1, 0, sim.AnsibleOptions{})
	m := e.masters()[0]
	// The contract's ansible_ssh_common_args come after kubespray's
	// ssh_args (UserKnownHostsFile=/dev/null) and host_key_checking=False
	// (StrictHostKeyChecking=no): OpenSSH keeps the first value, so a
	// wrong known_hosts is not even read.
	e.inventory(e.masters(), nil, "")
	e.write(invDir+"/known_hosts", m.SSHAddress+" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n", 0o644)
	if out, _, code := e.playbook("playbooks/facts.yml"); code != 0 {
		t.Fatalf("contract args with a wrong key: exit %d (kubespray's cfg should win)\n%s", code, out)
	}
	// With ssh_args and host_key_checking overridden in the inventory,
	// the known_hosts file is checked.
	over := "ansible_ssh_args: \"-o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 -o UserKnownHostsFile=" + invDir + "/known_hosts -o StrictHostKeyChecking=yes\"\nansible_host_key_checking: true\n"
	e.inventory(e.masters(), nil, over)
	if out, stderr, code := e.playbook("playbooks/facts.yml"); code != 0 {
		t.Fatalf("checked, right key: exit %d\n%s\n%s", code, out, stderr)
	}
	e.write(invDir+"/known_hosts", m.SSHAddress+" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n", 0o644)
	out, _, code := e.playbook("playbooks/facts.yml")
	if code != 4 || !strings.Contains(out, "WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!") || !strings.Contains(out, "Host key verification failed.\", \"unreachable\": true}") {
		t.Fatalf("wrong key: exit %d\n%s", code, out)
	}
	e.write(invDir+"/known_hosts", "", 0o644)
	out, _, code = e.playbook("playbooks/facts.yml")
	if code != 4 || !strings.Contains(out, "Failed to connect to the host via ssh: No ED25519 host key is known for "+m.SSHAddress+" and you have requested strict checking.\\r\\nHost key verification failed.") {
		t.Fatalf("unknown key: exit %d\n%s", code, out)
	}
}

func TestPasswordLoginNeedsSSHPass(t *testing.T) {
	e := newEnv(t, 1, 0, sim.AnsibleOptions{NoSSHPass: true})
	e.inventory(e.masters(), nil, "")
	out, _, code := e.playbook("playbooks/facts.yml")
	if code != 2 || !strings.Contains(out, "FAILED! => {\"msg\": \"to use the 'ssh' connection type with passwords or pkcs11_provider, you must install the sshpass program\"}") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestInventoryUnparsed(t *testing.T) {
	e := newEnv(t, 1, 0, sim.AnsibleOptions{})
	_, stderr, code := e.playbook("cluster.yml")
	if code != 1 || !strings.Contains(stderr, "ERROR! No inventory was parsed, please check your configuration and options.") {
		t.Fatalf("missing inventory, unparsed failed: exit %d %s", code, stderr)
	}
	out, _, code := e.runAns("cd " + root + " && ansible-playbook -i " + invDir + "/hosts.yaml cluster.yml")
	if code != 0 || recap(out) != nil || !strings.Contains(out, "skipping: no hosts matched") {
		t.Fatalf("missing inventory without ANSIBLE_INVENTORY_UNPARSED_FAILED: exit %d\n%s", code, out)
	}
}

func TestFailedTaskAndHang(t *testing.T) {
	e := newEnv(t, 1, 1, sim.AnsibleOptions{})
	e.inventory(e.masters(), e.workers(), "")
	w := nodeName(e.workers()[0])
	f := ansible.FaultsOf(e.ans.Machine)
	f.FailTask(w, "kubernetes/kubeadm : Join to cluster if needed", "kubeadm join timed out")
	out, _, code := e.playbook("cluster.yml")
	if code != 2 || !strings.Contains(out, "TASK [kubernetes/kubeadm : Join to cluster if needed] **************************\nfatal: ["+w+"]: FAILED! => {\"changed\": false, \"msg\": \"kubeadm join timed out\"}") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	f.FailTask(w, "kubernetes/kubeadm : Join to cluster if needed", "")
	reached := f.HangAt("Gather minimal facts")
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.conn.Run(ctx, remote.Cmd{Args: []string{"bash", "-c", "cd " + root + " && ansible-playbook -i " + invDir + "/hosts.yaml -b cluster.yml"}, OKExit: allExits})
		done <- err
	}()
	<-reached
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled hung run reported success")
	}
}

func TestRecapLineMatchesAnsible(t *testing.T) {
	// The PLAY RECAP line as ansible-core prints it (v2.14.17 and
	// v2.18.0rc1 lib/ansible/plugins/callback/default.py
	// v2_playbook_on_stats: "%-26s : ok=%-4s changed=%-4s ..."), checked
	// against a local run's RECAP.
	for _, c := range []struct {
		host string
		c    ansible.Counts
		want string
	}{
		{"a-very-long-inventory-hostname-node-0001", ansible.Counts{OK: 5, Changed: 2, Skipped: 2, Rescued: 1, Ignored: 1},
			"a-very-long-inventory-hostname-node-0001 : ok=5    changed=2    unreachable=0    failed=0    skipped=2    rescued=1    ignored=1   "},
		{"downhost", ansible.Counts{Unreachable: 1},
			"downhost                   : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0   "},
		{"failhost", ansible.Counts{OK: 4, Changed: 2, Failed: 1, Skipped: 1, Rescued: 1, Ignored: 1},
			"failhost                   : ok=4    changed=2    unreachable=0    failed=1    skipped=1    rescued=1    ignored=1   "},
	} {
		if got := ansible.RecapLine(c.host, c.c); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func TestRemoveNodeOfAGoneVMWithoutReset(t *testing.T) {
	e := newEnv(t, 1, 2, sim.AnsibleOptions{})
	e.cluster(2)
	gone := e.workers()[1]
	name := nodeName(gone)
	if _, err := e.vnf.ScaleIn("worker_instance", gone.Name()); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.playbook("remove-node.yml", "-e", "node="+name, "-e", "skip_confirmation=true", "-e", "delete_nodes_confirmation=yes", "-e", "reset_nodes=false", "-e", "allow_ungraceful_removal=true")
	if code != 0 {
		t.Fatalf("remove-node of a gone VM: exit %d\n%s\n%s", code, out, stderr)
	}
	cs := e.cloud.Kube().Clusters()
	nodes, err := cs[0].Nodes(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == name {
			t.Fatalf("%s is still a Node\n%s", name, out)
		}
	}
	// No password of the nodes reached a command line.
	for _, h := range append(e.masters(), e.workers()[0]) {
		for _, x := range h.SSH.Transcript() {
			if strings.Contains(x.Command, nodePW) {
				t.Fatalf("%s: the password in a command: %s", h.Name(), x.Command)
			}
		}
	}
}

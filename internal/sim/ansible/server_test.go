package ansible_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/ansible"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The kubespray sample's Ansible server has what the SDK reads before
// it runs anything (the contract): ansible-playbook --version,
// playbooks/ansible_version.yml, galaxy.yml, sshpass, inventory/sample.
func TestSampleAnsibleServerHasKubesprayAndAnsible(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := sim.Start(t, sim.Options{})
	if _, _, err := c.SampleCluster(samples.InstantiateKubespray, sim.ClusterShape{}); err != nil {
		t.Fatal(err)
	}
	a := c.AnsibleServer()
	h, err := c.Connect(ctx, a.Node(), "ansible", "ansible")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	run := func(cmd string) string {
		t.Helper()
		out, err := h.Run(ctx, remote.Cmd{Args: []string{"bash", "-c", cmd}})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return string(out.Stdout)
	}
	if got := run("ansible-playbook --version | head -1"); got != "ansible-playbook [core "+ansible.DefaultCoreVersion+"]\n" {
		t.Errorf("--version: %q", got)
	}
	if got := run("grep -E '^    (minimal|maximal)_ansible_version:' " + sim.KubesprayRootPath + "/playbooks/ansible_version.yml"); got != "    minimal_ansible_version: 2.16.4\n    maximal_ansible_version: 2.17.0\n" {
		t.Errorf("ansible_version.yml: %q", got)
	}
	if got := run("grep '^version:' " + sim.KubesprayRootPath + "/galaxy.yml"); got != "version: 2.28.1\n" {
		t.Errorf("galaxy.yml: %q", got)
	}
	if got := run("command -v sshpass; dpkg-query -W -f '${Version}' ansible-core"); got != "/usr/bin/sshpass\n2.16.12-0~pip" {
		t.Errorf("sshpass, ansible-core: %q", got)
	}
	if got := run("ls " + sim.KubesprayRootPath + "/inventory/sample"); !strings.Contains(got, "group_vars\ninventory.ini\n") {
		t.Errorf("inventory/sample: %q", got)
	}
	// The login user owns the checkout: the SDK's cp -a needs no sudo.
	run("cp -a -- " + sim.KubesprayRootPath + "/inventory/sample " + sim.KubesprayInventoryPath)
	if got := run("grep -c '^# supplementary_addresses_in_ssl_keys' " + sim.KubesprayInventoryPath + "/group_vars/k8s_cluster/k8s-cluster.yml"); got != "1\n" {
		t.Errorf("k8s-cluster.yml: %q", got)
	}
}

func TestOldLayoutAndReleases(t *testing.T) {
	e := newEnv(t, 1, 0, sim.AnsibleOptions{CoreVersion: "2.10.17", KubesprayRelease: ansible.Release216})
	for _, f := range []string{"facts.yml", "ansible_version.yml", "cluster.yml", "remove-node.yml"} {
		if !e.ans.FS().Exists(root + "/" + f) {
			t.Errorf("v2.16.0 has no top-level %s", f)
		}
	}
	if e.ans.FS().Exists(root+"/playbooks/facts.yml") || e.ans.FS().Exists(root+"/galaxy.yml") {
		t.Error("v2.16.0 has playbooks/facts.yml or galaxy.yml")
	}
	e.inventory(e.masters(), nil, "")
	out, stderr, code := e.playbook("facts.yml")
	if code != 0 || !strings.Contains(out, "TASK [Check 2.9.0 <= Ansible version < 2.11.0] ") {
		t.Fatalf("facts.yml on v2.16.0 with 2.10.17: exit %d\n%s\n%s", code, out, stderr)
	}
	_ = out
}

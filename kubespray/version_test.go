package kubespray

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCoreVersion(t *testing.T) {
	// Debian 12's ansible-core, captured by realtest (TestAnsibleVersion).
	real, err := os.ReadFile(filepath.Join("testdata", "ansible", "version.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{string(real), "2.14.18"},
		{"ansible-playbook [core 2.18.1]\n  config file = /srv/kubespray/ansible.cfg\n", "2.18.1"},
		{"ansible-playbook [core 2.19.0rc1]", "2.19.0rc1"},
		// Ansible 2.9 (kubespray v2.16's requirements.txt pins 2.9.20).
		{"ansible-playbook 2.9.20\n  config file = None\n", "2.9.20"},
		{"ansible-playbook 2.10.8\r\n", "2.10.8"},
	} {
		got, err := ParseCoreVersion([]byte(c.out))
		if err != nil || got != c.want {
			t.Errorf("ParseCoreVersion(%.40q) = %q, %v; want %q", c.out, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"",
		"bash: ansible-playbook: command not found\n",
		"ansible-playbook [core ]\n",
		"ansible-playbook [core devel]\n",
		"ansible [core 2.14.18]\n",
		"  config file = None\nansible-playbook [core 2.14.18]\n",
	} {
		if got, err := ParseCoreVersion([]byte(bad)); err == nil {
			t.Errorf("ParseCoreVersion(%q) = %q, want an error", bad, got)
		}
	}
}

// Plays in the shape of kubespray's ansible_version.yml at several
// releases (written for this test; the variables and their values are
// those of the tags, facts §1.2).
const (
	// v2.16.0: top-level ansible_version.yml, play on localhost.
	ansibleVersionV216 = `---
- hosts: localhost
  gather_facts: false
  become: no
  vars:
    minimal_ansible_version: 2.9.0
    maximal_ansible_version: 2.11.0
    ansible_connection: local
  tasks: []
`
	// v2.17.0 to v2.19.x: a higher minimum for ansible-base 2.10 too.
	ansibleVersionV219 = `---
- hosts: localhost
  gather_facts: false
  become: no
  vars:
    minimal_ansible_version: 2.9.0
    minimal_ansible_version_2_10: 2.10.11
    maximal_ansible_version: 2.13.0
    ansible_connection: local
  tags: always
  tasks: []
`
	// v2.22.0 on: playbooks/ansible_version.yml, on all hosts, run once.
	ansibleVersionV231 = `---
- name: Check Ansible version
  hosts: all
  gather_facts: false
  become: false
  run_once: true
  vars:
    minimal_ansible_version: 2.18.0
    maximal_ansible_version: 2.19.0
  tags: always
  tasks: []
`
)

func TestAnsibleRange(t *testing.T) {
	for _, c := range []struct{ text, min, max string }{
		{ansibleVersionV216, "2.9.0", "2.11.0"},
		{ansibleVersionV219, "2.9.0", "2.13.0"},
		{ansibleVersionV231, "2.18.0", "2.19.0"},
		// A bare 2.10 is a float to YAML; the text is what Ansible
		// compares.
		{"- hosts: all\n  vars: {minimal_ansible_version: 2.10, maximal_ansible_version: \"2.20\"}\n", "2.10", "2.20"},
		// The play that sets them need not be the first.
		{"- hosts: all\n  tasks: []\n- hosts: all\n  vars: {minimal_ansible_version: 2.16.4, maximal_ansible_version: 2.17.0}\n", "2.16.4", "2.17.0"},
	} {
		lo, hi, err := AnsibleRange([]byte(c.text))
		if err != nil || lo != c.min || hi != c.max {
			t.Errorf("AnsibleRange = %q, %q, %v; want %q, %q\n%s", lo, hi, err, c.min, c.max, c.text)
		}
	}
	for _, bad := range []string{
		"",
		"not: a list\n",
		"- hosts: all\n  tasks: []\n",
		"- hosts: all\n  vars: {minimal_ansible_version: 2.18.0}\n",
		"- hosts: all\n  vars: {minimal_ansible_version: 2.18.0, maximal_ansible_version: [2.19.0]}\n",
		"- hosts: all\n  vars: {minimal_ansible_version: '', maximal_ansible_version: 2.19.0}\n",
		"- [",
	} {
		if lo, hi, err := AnsibleRange([]byte(bad)); err == nil {
			t.Errorf("AnsibleRange(%q) = %q, %q, want an error", bad, lo, hi)
		}
	}
}

func TestReleaseOf(t *testing.T) {
	// In the shape of kubespray's galaxy.yml (v2.22.0 on).
	got, err := ReleaseOf([]byte("---\nnamespace: kubernetes_sigs\ndescription: Deploy a production ready Kubernetes cluster\nname: kubespray\nversion: 2.31.0\nreadme: README.md\n"))
	if err != nil || got != "2.31.0" {
		t.Errorf("ReleaseOf = %q, %v; want 2.31.0", got, err)
	}
	for _, bad := range []string{"", "name: kubespray\n", "version: [1]\n", "version: latest\n", "- version: 2.31.0\n", "version: {"} {
		if got, err := ReleaseOf([]byte(bad)); err == nil {
			t.Errorf("ReleaseOf(%q) = %q, want an error", bad, got)
		}
	}
}

func TestCheckCore(t *testing.T) {
	for _, c := range []struct {
		release, min, max, core string
		ok                      bool
	}{
		// Debian 12's ansible-core against each release range (facts §1.2).
		{"2.16.0", "2.9.0", "2.11.0", "2.14.18", false},
		{"2.23.3", "2.14.0", "2.15.0", "2.14.18", true},
		{"2.24.3", "2.15.5", "2.17.0", "2.14.18", false},
		{"2.28.1", "2.16.4", "2.17.0", "2.14.18", false},
		{"2.31.0", "2.18.0", "2.19.0", "2.14.18", false},
		// The bounds: min included, max excluded.
		{"2.28.1", "2.16.4", "2.17.0", "2.16.4", true},
		{"2.28.1", "2.16.4", "2.17.0", "2.16.3", false},
		{"2.28.1", "2.16.4", "2.17.0", "2.16.14", true},
		{"2.28.1", "2.16.4", "2.17.0", "2.17.0", false},
		// Loose versions: a pre-release sorts after its release.
		{"2.28.1", "2.16.4", "2.17.0", "2.17.0rc1", false},
		{"2.28.1", "2.16.4", "2.17.0", "2.16.4rc1", true},
		{"", "2.9.0", "2.11.0", "2.9.20", true},
		{"", "2.9.0", "2.11.0", "2.10.17", true},
	} {
		err := CheckCore(c.release, c.min, c.max, c.core)
		if (err == nil) != c.ok {
			t.Errorf("CheckCore(%q, %s, %s, %s) = %v, want ok=%v", c.release, c.min, c.max, c.core, err, c.ok)
		}
	}
	err := CheckCore("2.31.0", "2.18.0", "2.19.0", "2.14.18")
	for _, w := range []string{"kubespray 2.31.0 (galaxy.yml's version)", ">= 2.18.0 and < 2.19.0", "ansible-core 2.14.18", "requirements.txt"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("CheckCore: %v\nwant it to say %q", err, w)
		}
	}
	if err := CheckCore("", "2.18.0", "2.19.0", "2.14.18"); err == nil || !strings.Contains(err.Error(), "before v2.22.0") {
		t.Errorf("CheckCore without a release: %v", err)
	}
	// A number meeting a text: Ansible's version test raises, and so
	// does CheckCore.
	if err := CheckCore("2.31.0", "2.18.0", "2.19.0", "2.18.dev0"); err == nil || !strings.Contains(err.Error(), "do not compare") {
		t.Errorf("CheckCore(2.18.dev0): %v", err)
	}
	if err := CheckCore("2.31.0", "", "2.19.0", "2.18.1"); err == nil {
		t.Error("CheckCore with an empty minimum accepted")
	}
}

func TestLooseCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"2.14.18", "2.14.18", 0},
		{"2.14.18", "2.15.0", -1},
		{"2.10.0", "2.9.0", 1},
		{"2.18.0", "2.18.0rc1", -1},
		{"2.18", "2.18.0", -1},
		{"02.018.000", "2.18.0", 0},
		{"2.18.0-1", "2.18.0", 1},
		{"2.18.0-1", "2.18.0-2", -1},
		{"2.18.0b2", "2.18.0rc1", -1},
		{"100000000000000000000.1", "99999999999999999999.1", 1},
	} {
		got, err := looseCompare(c.a, c.b)
		if err != nil || got != c.want {
			t.Errorf("looseCompare(%s, %s) = %d, %v; want %d", c.a, c.b, got, err, c.want)
		}
		if back, _ := looseCompare(c.b, c.a); back != -c.want {
			t.Errorf("looseCompare(%s, %s) = %d, not the opposite of the other way", c.b, c.a, back)
		}
	}
	for _, c := range [][2]string{{"2.18.dev0", "2.18.0"}, {"2.a", "2.1"}, {"", "1"}} {
		if _, err := looseCompare(c[0], c[1]); err == nil {
			t.Errorf("looseCompare(%q, %q) compared", c[0], c[1])
		}
	}
}

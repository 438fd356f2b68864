package ansible

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Kubespray releases the simulation holds, oldest first.
const (
	// Release216 is v2.16.0, the release Tacker's driver supports: the
	// layout before v2.22.0 (top-level facts.yml and ansible_version.yml,
	// cluster.yml not a wrapper), remove-node.yml's vars_prompt
	// confirmation, no galaxy.yml.
	Release216 = "v2.16.0"
	// Release223 is v2.23.3, the newest release that accepts Debian 12's
	// ansible-core 2.14 (playbooks/ansible_version.yml: 2.14.0 <= core <
	// 2.15.0).
	Release223 = "v2.23.3"
	// Release228 is v2.28.1 (2.16.4 <= core < 2.17.0): remove-node.yml
	// requires `node` (first in v2.28.0), scale.yml --limit requires the
	// fact cache of the excluded hosts (first in v2.27.0).
	Release228 = "v2.28.1"
	// DefaultRelease is the release a cloud's Ansible server has unless
	// told otherwise; [DefaultCoreVersion] is in its range.
	DefaultRelease = Release228
)

// Releases returns the releases [InstallKubespray] can install, oldest
// first.
func Releases() []string { return []string{Release216, Release223, Release228} }

// InstallKubespray puts a kubespray checkout of release at root on a
// host's filesystem, owned by owner (the user who cloned it; the SDK's
// login copies inventory/sample next to it without sudo). It holds the
// files ansible-playbook and mgmtkit read, written by the simulation to
// say what the release's own files say where it matters
// ([kubesprayTree]); the playbooks' and roles' tasks are not there: the
// simulated ansible-playbook carries what they do (plays.go). An existing
// checkout at root is replaced file by file.
func InstallKubespray(fsys *sshtest.FS, root, release, owner string) error {
	if !slices.Contains(Releases(), release) {
		return fmt.Errorf("ansible: kubespray %s is not in the simulation (have %s)", release, strings.Join(Releases(), ", "))
	}
	uid, gid, ok := fsys.LookupUser(owner)
	if !ok {
		return fmt.Errorf("ansible: no user %s to own %s", owner, root)
	}
	if err := fsys.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := fsys.Chown(root, uid, gid); err != nil {
		return err
	}
	u := fsys.As(sshtest.Cred{UID: uid, GID: gid}, "/")
	tree := kubesprayTree(release)
	for _, name := range slices.Sorted(maps.Keys(tree)) {
		dst := path.Join(root, name)
		if err := u.MkdirAll(path.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := u.WriteFile(dst, []byte(tree[name]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// kubesprayTree returns the files of a checkout of release that the
// simulation reads, path (relative to the checkout) -> content. Each
// states, in the simulation's own words, the settings of the release's
// file of that name (kubernetes-sigs/kubespray at the tag):
//
//   - ansible.cfg: host_key_checking=False, ssh_args ending in
//     UserKnownHostsFile=/dev/null, the jsonfile fact cache in /tmp
//     (timeout 7200 in v2.16.0, 86400 since), display_skipped_hosts=no,
//     the profile_tasks callback (callback_whitelist before v2.17,
//     callbacks_enabled since), [inventory] ignore_patterns;
//   - the ansible-core range asserted by ansible_version.yml
//     (playbooks/ since v2.22.0, top level before: facts §1.2);
//   - galaxy.yml's version (since v2.22.0) and v2.16.0's
//     legacy_groups.yml, by which the simulated ansible-playbook tells the
//     layouts apart;
//   - the top-level playbooks, which since v2.22.0 import playbooks/NAME
//     (commit acbf44a1b), and facts.yml (top level before v2.22.0,
//     playbooks/ since);
//   - inventory/sample: inventory.ini and the group_vars files whose
//     variables mgmtkit sets (all/all.yml, k8s_cluster/k8s-cluster.yml,
//     k8s_cluster/k8s-net-calico.yml), their defaults commented out as
//     the release ships them.
func kubesprayTree(release string) map[string]string {
	const stub = "# Simulated: internal/sim/ansible models the plays of this playbook (plays.go).\n"
	r := kubespray{version: strings.TrimPrefix(release, "v")}
	legacy := !r.atLeast("2.22.0")
	cacheTimeout, callbacks := "86400", "callbacks_enabled = profile_tasks"
	if !r.atLeast("2.17.0") {
		cacheTimeout, callbacks = "7200", "callback_whitelist = profile_tasks"
	}
	lo, hi := ansibleRangeOf(release)
	t := map[string]string{
		"ansible.cfg": "[ssh_connection]\npipelining=True\nssh_args = -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 -o UserKnownHostsFile=/dev/null\n" +
			"[defaults]\nhost_key_checking=False\ngathering = smart\nfact_caching = jsonfile\nfact_caching_connection = /tmp\nfact_caching_timeout = " + cacheTimeout + "\n" +
			"timeout = 300\nstdout_callback = default\ndisplay_skipped_hosts = no\n" + callbacks + "\n" +
			"[inventory]\nignore_patterns = artifacts, credentials\n",
		"inventory/sample/inventory.ini":                             "# ## Configure 'ip' variable to bind kubernetes services on a\n# ## different ip than the default iface\n[kube_control_plane]\n# node1 ansible_host=95.54.0.12 ip=10.3.0.1\n\n[etcd]\n\n[kube_node]\n\n[calico_rr]\n\n[k8s_cluster:children]\nkube_control_plane\nkube_node\ncalico_rr\n",
		"inventory/sample/group_vars/all/all.yml":                    "---\n## Set these proxy values in order to update package manager and docker daemon to use proxies\n# http_proxy: \"\"\n# https_proxy: \"\"\n# no_proxy: \"\"\n# additional_no_proxy: \"\"\n# no_proxy_exclude_workers: false\n",
		"inventory/sample/group_vars/k8s_cluster/k8s-cluster.yml":    "---\nkube_service_addresses: 10.233.0.0/18\nkube_pods_subnet: 10.233.64.0/18\nkube_network_node_prefix: 24\n# supplementary_addresses_in_ssl_keys: [10.0.0.1, 10.0.0.2, 10.0.0.3]\n",
		"inventory/sample/group_vars/k8s_cluster/k8s-net-calico.yml": "---\n# calico_mtu: 1500\n# calico_veth_mtu: 1440\n",
	}
	version := "---\n- name: Check Ansible version\n  hosts: all\n  gather_facts: false\n  vars:\n    minimal_ansible_version: " + lo + "\n    maximal_ansible_version: " + hi + "\n"
	if legacy {
		t["ansible_version.yml"] = version
		t["legacy_groups.yml"] = stub
		for _, name := range []string{"cluster.yml", "scale.yml", "remove-node.yml", "reset.yml", "facts.yml"} {
			t[name] = stub
		}
		return t
	}
	t["galaxy.yml"] = "---\nnamespace: kubernetes_sigs\nname: kubespray\nversion: " + r.version + "\n"
	t["playbooks/ansible_version.yml"] = version
	t["playbooks/facts.yml"] = stub
	for _, name := range []string{"cluster", "scale", "remove_node", "reset"} {
		t["playbooks/"+name+".yml"] = stub
		top := strings.ReplaceAll(name, "_", "-") + ".yml"
		t[top] = "---\n- name: Import " + name + "\n  ansible.builtin.import_playbook: playbooks/" + name + ".yml\n"
	}
	return t
}

// ansibleRangeOf is the ansible-core range release's ansible_version.yml
// asserts (facts §1.2, from the file at each tag).
func ansibleRangeOf(release string) (minimal, maximal string) {
	switch release {
	case Release216:
		return "2.9.0", "2.11.0"
	case Release223:
		return "2.14.0", "2.15.0"
	default:
		return "2.16.4", "2.17.0"
	}
}

// versionRange reads minimal_ansible_version and maximal_ansible_version
// from a kubespray ansible_version.yml as the file on the server has them
// (playbooks/ansible_version.yml since v2.22.0, ansible_version.yml
// before).
func versionRange(data []byte) (minV, maxV string, ok bool) {
	minM := regexp.MustCompile(`(?m)^\s*minimal_ansible_version:\s*["']?([0-9][0-9.]*)`).FindSubmatch(data)
	maxM := regexp.MustCompile(`(?m)^\s*maximal_ansible_version:\s*["']?([0-9][0-9.]*)`).FindSubmatch(data)
	if minM == nil || maxM == nil {
		return "", "", false
	}
	return string(minM[1]), string(maxM[1]), true
}

// galaxyVersion reads `version:` of galaxy.yml ("2.28.1"), "" when absent.
func galaxyVersion(data []byte) string {
	m := regexp.MustCompile(`(?m)^version:\s*["']?([0-9][0-9.]*)`).FindSubmatch(data)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// compareVersions compares dotted versions numerically ("2.16.12" >
// "2.16.4"), as Ansible's `version` test does with LooseVersion for
// these strings.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscanf(as[i], "%d", &x)
		}
		if i < len(bs) {
			fmt.Sscanf(bs[i], "%d", &y)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

package ansible

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The kubespray checkouts the simulated Ansible server can hold: the files
// of a release that ansible-playbook and mgmtkit read, copied verbatim
// from github.com/kubernetes-sigs/kubespray at each tag (ansible.cfg,
// galaxy.yml, requirements.txt, the top-level playbooks, playbooks/ and
// inventory/sample/). The roles are not copied: the simulated
// ansible-playbook carries what the roles do (plays.go).
//
//go:embed kubespray
var kubesprayFiles embed.FS

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
// login copies inventory/sample next to it without sudo): the release's
// ansible.cfg, galaxy.yml, requirements.txt, top-level playbooks,
// playbooks/ and inventory/sample/ as the tag has them. An existing
// checkout at root is replaced file by file (files the release does not
// have are left, as after a `git checkout` of another tag with local
// files).
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
	base := "kubespray/" + release
	return fs.WalkDir(kubesprayFiles, base, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := path.Join(root, strings.TrimPrefix(name, base))
		if d.IsDir() {
			return u.MkdirAll(dst, 0o755)
		}
		data, err := kubesprayFiles.ReadFile(name)
		if err != nil {
			return err
		}
		return u.WriteFile(dst, data, 0o644)
	})
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

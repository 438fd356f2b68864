package kubespray

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Versions: the kubespray release and ansible-core on the Ansible server.
// Every kubespray playbook starts by asserting
// minimal_ansible_version <= ansible-core < maximal_ansible_version
// (playbooks/ansible_version.yml; the top-level ansible_version.yml
// before v2.22.0), but only after Ansible has loaded the inventory and
// connected: the driver reads the same range first and refuses a
// mismatch before anything runs (facts §1.2). Debian 12's ansible-core
// 2.14.18 is accepted only by kubespray v2.23.x.

// coreVersionRE matches the first line of `ansible-playbook --version`:
// "ansible-playbook [core 2.14.18]" since ansible-core 2.11, and
// "ansible-playbook 2.9.20" (Ansible 2.9, ansible-base 2.10) before
// (lib/ansible/cli/arguments/option_helpers.py version()).
var coreVersionRE = regexp.MustCompile(`^ansible-playbook (?:\[core ([^\]\s]+)\]|([0-9][^\s]*))\s*$`)

// ParseCoreVersion reads `ansible-playbook --version` output
// ("ansible-playbook [core 2.14.18]"; older "ansible-playbook 2.9.20")
// and returns the version, "2.14.18".
func ParseCoreVersion(out []byte) (string, error) {
	first, _, _ := strings.Cut(string(out), "\n")
	first = strings.TrimSpace(first)
	m := coreVersionRE.FindStringSubmatch(first)
	if m == nil {
		return "", fmt.Errorf("ansible-playbook --version: first line %q is not \"ansible-playbook [core VERSION]\"", cutLine(first))
	}
	v := m[1] + m[2]
	if !startsWithDigit(v) {
		return "", fmt.Errorf("ansible-playbook --version: %q is not a version", cutLine(v))
	}
	return v, nil
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

func cutLine(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// The variables of kubespray's ansible_version.yml.
const (
	minVar = "minimal_ansible_version"
	maxVar = "maximal_ansible_version"
)

// AnsibleRange reads kubespray's ansible_version.yml
// (playbooks/ansible_version.yml, or the top-level one before v2.22):
// minimal_ansible_version and maximal_ansible_version, the vars of its
// play, as written ("2.18.0").
//
// v2.17 to v2.19 also set minimal_ansible_version_2_10 (2.10.11), a higher
// minimum for ansible-base 2.10.x only; it is not read, as no supported
// Ansible server runs ansible-base 2.10 (the range is 2.9.0 to 2.11.0 in
// v2.17 and 2.9.0 to 2.13.0 in v2.19, which every later ansible-core
// passes).
func AnsibleRange(ansibleVersionYML []byte) (min, max string, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(ansibleVersionYML, &doc); err != nil {
		return "", "", fmt.Errorf("ansible_version.yml: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode {
		return "", "", errors.New("ansible_version.yml: not a list of plays")
	}
	for _, play := range doc.Content[0].Content {
		vars := child(play, "vars")
		lo, hi := child(vars, minVar), child(vars, maxVar)
		if lo == nil && hi == nil {
			continue
		}
		if lo == nil || hi == nil || lo.Kind != yaml.ScalarNode || hi.Kind != yaml.ScalarNode || lo.Value == "" || hi.Value == "" {
			return "", "", fmt.Errorf("ansible_version.yml: want both %s and %s in a play's vars", minVar, maxVar)
		}
		// The value as written: 2.18.0 is a string to YAML, and a bare
		// 2.10 would be a float that Ansible turns back into "2.10".
		return lo.Value, hi.Value, nil
	}
	return "", "", fmt.Errorf("ansible_version.yml: no play sets %s and %s", minVar, maxVar)
}

// child returns the value of key in mapping node n, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// ReleaseOf reads galaxy.yml's version, the kubespray release ("2.31.0").
// galaxy.yml exists since v2.22.0; in v2.22.0/v2.22.1 it says 2.21.0 and in
// v2.23.0/v2.23.1 2.22.1 (it was bumped after those tags), so the
// release it gives is what galaxy.yml says, which messages name as such.
func ReleaseOf(galaxyYML []byte) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(galaxyYML, &doc); err != nil {
		return "", fmt.Errorf("galaxy.yml: %w", err)
	}
	if len(doc.Content) != 1 {
		return "", errors.New("galaxy.yml: empty")
	}
	v := child(doc.Content[0], "version")
	if v == nil || v.Kind != yaml.ScalarNode || !startsWithDigit(v.Value) {
		return "", errors.New("galaxy.yml: no version")
	}
	return v.Value, nil
}

// CheckCore refuses a core version outside [min, max) with an error naming
// kubespray's release (from galaxy.yml's version, "" if unknown), the
// range and the installed version, as kubespray's own assert would after
// minutes of fact gathering (facts §1.2). Versions compare as Ansible's
// version test does by default, the "loose" way ([looseCompare]).
func CheckCore(release, min, max, core string) error {
	lo, err := looseCompare(core, min)
	if err != nil {
		return err
	}
	hi, err := looseCompare(core, max)
	if err != nil {
		return err
	}
	if lo >= 0 && hi < 0 {
		return nil
	}
	which := "this kubespray (no galaxy.yml version: a release before v2.22.0)"
	if release != "" {
		which = "kubespray " + release + " (galaxy.yml's version)"
	}
	return fmt.Errorf("%s requires ansible-core >= %s and < %s (its ansible_version.yml), but the Ansible server runs ansible-core %s: "+
		"install the Ansible that kubespray's requirements.txt pins (pip install -r requirements.txt, in a virtualenv) or use a kubespray release that accepts %s",
		which, min, max, core, core)
}

// looseCompare compares versions a and b as Ansible's LooseVersion does
// (lib/ansible/module_utils/compat/version.py, the default of the
// version test in lib/ansible/plugins/test/core.py): each is split into
// runs of digits (numbers), runs of a-z and whatever lies between (text),
// dots dropped; the lists compare element by element, a list that is a
// prefix of the other being smaller ("2.18.0" < "2.18.0rc1"). A number
// and a text at the same place do not compare (Python raises TypeError,
// and the version test fails): that is an error here too.
func looseCompare(a, b string) (int, error) {
	if a == "" || b == "" {
		return 0, errors.New("an empty version does not compare")
	}
	pa, pb := looseParts(a), looseParts(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, y := pa[i], pb[i]
		switch {
		case x.isNum && y.isNum:
			if c := x.num.Cmp(y.num); c != 0 {
				return c, nil
			}
		case !x.isNum && !y.isNum:
			if c := strings.Compare(x.text, y.text); c != 0 {
				return c, nil
			}
		default:
			return 0, fmt.Errorf("versions %q and %q do not compare: a number meets a text at part %d, which Ansible's version test refuses too", a, b, i+1)
		}
	}
	return cmpInt(len(pa), len(pb)), nil
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// loosePart is one element of a loose version.
type loosePart struct {
	isNum bool
	num   bigNat
	text  string
}

// bigNat is a decimal natural number of any length (Python's int): its
// digits without leading zeros.
type bigNat string

func (x bigNat) Cmp(y bigNat) int {
	if c := cmpInt(len(x), len(y)); c != 0 {
		return c
	}
	return strings.Compare(string(x), string(y))
}

// looseParts splits v as LooseVersion.parse does: re.split on
// (\d+ | [a-z]+ | \.) keeps the matches and the text between them; empty
// strings and "." are dropped; digit runs become numbers.
func looseParts(v string) []loosePart {
	var parts []loosePart
	kind := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return 1
		case c >= 'a' && c <= 'z':
			return 2
		case c == '.':
			return 3
		}
		return 0
	}
	for i := 0; i < len(v); {
		k := kind(v[i])
		j := i + 1
		if k != 3 {
			for j < len(v) && kind(v[j]) == k {
				j++
			}
		}
		switch s := v[i:j]; k {
		case 1:
			n := strings.TrimLeft(s, "0")
			parts = append(parts, loosePart{isNum: true, num: bigNat(n)})
		case 3:
		default:
			parts = append(parts, loosePart{text: s})
		}
		i = j
	}
	return parts
}

package kubespray

import (
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The files this package writes on the Ansible server are YAML built as
// node trees with go.yaml.in/yaml/v3 (the YAML organisation's
// continuation of gopkg.in/yaml.v3, which sigs.k8s.io/yaml uses too):
// nodes keep the order of keys, so the same data renders to the same
// bytes in the order a reader expects, and they carry Ansible's !unsafe
// tag, which sigs.k8s.io/yaml cannot write.

// mapping builds a mapping node, keys in the order they are added.
type mapping struct{ node *yaml.Node }

func newMapping() mapping {
	return mapping{&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}}
}

func (m mapping) add(key string, value *yaml.Node) mapping {
	m.node.Content = append(m.node.Content, scalar(key), value)
	return m
}

// scalar is a plain YAML value of Go value v, quoted when a YAML 1.1
// reader would otherwise read something else: yaml.v3's encoder quotes
// "yes", "on", "2.14" and "1:20" (isOldBool, isBase60Float in
// encode.go), which Ansible's PyYAML, a YAML 1.1 parser, would read as a
// boolean or a number.
func scalar(v any) *yaml.Node {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		// Encode fails only for values yaml cannot represent (channels,
		// functions); this package passes strings, ints and bools.
		panic(fmt.Sprintf("kubespray: encode %T: %v", v, err))
	}
	return &n
}

// unsafeTag is Ansible's tag for a value it must never template: without
// it, a password holding "{{" is evaluated as Jinja2 (a local experiment
// with ansible-core 2.14.18: ansible_password "p{{ 7*7 }}" reached the
// play as "p49"; realtest checks it). Ansible's YAML loader keeps the
// value as text (lib/ansible/parsing/yaml/constructor.py
// construct_yaml_unsafe; "Unsafe or raw strings" in Ansible's
// documentation).
const unsafeTag = "!unsafe"

// unsafe is s as a double-quoted !unsafe string.
func unsafe(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: unsafeTag, Value: s, Style: yaml.DoubleQuotedStyle}
}

// encodeYAML renders node as a YAML document, indented by two spaces.
func encodeYAML(node *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parsedMapping is a mapping node read back: its keys in order, and their
// values.
type parsedMapping struct {
	where  string
	keys   []string
	values []*yaml.Node
}

// mappingOf reads n as a mapping with scalar keys; where names it in
// errors. An empty value (null) is an empty mapping, as Ansible reads
// "hosts:" with nothing after it.
func mappingOf(n *yaml.Node, where string) (parsedMapping, error) {
	m := parsedMapping{where: where}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return m, nil
	}
	if n.Kind != yaml.MappingNode {
		return m, fmt.Errorf("hosts.yaml: %s is not a mapping (line %d)", where, n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return m, fmt.Errorf("hosts.yaml: %s has a key that is not a scalar (line %d)", where, k.Line)
		}
		for _, seen := range m.keys {
			if seen == k.Value {
				return m, fmt.Errorf("hosts.yaml: %s has %s twice (line %d)", where, k.Value, k.Line)
			}
		}
		m.keys = append(m.keys, k.Value)
		m.values = append(m.values, n.Content[i+1])
	}
	return m, nil
}

func (m parsedMapping) get(key string) (*yaml.Node, bool) {
	for i, k := range m.keys {
		if k == key {
			return m.values[i], true
		}
	}
	return nil, false
}

// only refuses a key that is not one of allowed.
func (m parsedMapping) only(allowed ...string) error {
	for _, k := range m.keys {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return fmt.Errorf("hosts.yaml: %s has %s, which this package does not write (it writes %s)", m.where, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

package kubespray

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mgmtkit/mgmtkit/internal/golden"
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// testHost is a host named ROLE-<ip with dashes>, as kubeadm names nodes,
// with one address for SSH and the cluster network.
func testHost(role, ip string) Host {
	return Host{Name: role + "-" + strings.ReplaceAll(ip, ".", "-"), AnsibleHost: addr(ip), IP: addr(ip)}
}

// The contract's hosts.yaml (/tmp/ks-contract.md, "What the SDK writes on
// the Ansible server"), in flow style.
const contractHostsYAML = `all:
  hosts:
    master-127-0-1-2: {ansible_host: 127.0.1.2, ip: 127.0.1.2, access_ip: 127.0.1.2, etcd_member_name: etcd1}
    worker-127-0-1-3: {ansible_host: 127.0.1.3, ip: 127.0.1.3, access_ip: 127.0.1.3}
  children:
    kube_control_plane: {hosts: {master-127-0-1-2: {}}}
    etcd: {hosts: {master-127-0-1-2: {}}}
    kube_node: {hosts: {worker-127-0-1-3: {}}}
    calico_rr: {hosts: {}}
    k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}, calico_rr: {}}}
`

// yamlValue decodes YAML into plain Go values, for comparing documents
// whatever their style.
func yamlValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return v
}

func TestInventoryYAMLIsTheContractsShape(t *testing.T) {
	inv := Inventory{ControlPlane: []Host{testHost("master", "127.0.1.2")}, Nodes: []Host{testHost("worker", "127.0.1.3")}}
	got, err := inv.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if g, w := yamlValue(t, got), yamlValue(t, []byte(contractHostsYAML)); !reflect.DeepEqual(g, w) {
		t.Errorf("hosts.yaml is not the contract's:\n%s\nwant the same data as:\n%s", got, contractHostsYAML)
	}
	golden.Assert(t, "hosts-1-master-1-worker", got)
}

func TestInventoryYAMLGolden(t *testing.T) {
	inv := Inventory{
		ControlPlane: []Host{testHost("master", "10.10.0.13"), testHost("master", "10.10.0.11"), testHost("master", "10.10.0.12")},
		Nodes: []Host{
			{Name: "worker-10-10-0-21", AnsibleHost: addr("192.168.10.21"), IP: addr("10.10.0.21")},
			{Name: "worker-10-10-0-22", AnsibleHost: addr("::ffff:192.168.10.22"), IP: addr("10.10.0.22")},
			{Name: "worker-2001-db8--1", AnsibleHost: addr("2001:db8::1"), IP: addr("10.10.0.23")},
		},
	}
	got, err := inv.YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "hosts-3-masters-3-workers", got)
	again, _ := inv.YAML()
	if string(again) != string(got) {
		t.Error("the same inventory renders to different bytes")
	}
	// The etcd members are numbered in the order of the control plane,
	// not of the names.
	for i, want := range []string{"master-10-10-0-13", "master-10-10-0-11", "master-10-10-0-12"} {
		line := fmt.Sprintf("etcd_member_name: etcd%d", i+1)
		if at, host := strings.Index(string(got), line), strings.Index(string(got), want+":"); at < host || host < 0 {
			t.Errorf("%s is not under %s", line, want)
		}
	}
	for _, old := range []string{"kube-master", "kube-node", "k8s-cluster", "calico-rr", "Ansible_host", "::ffff:"} {
		if strings.Contains(string(got), old) {
			t.Errorf("hosts.yaml holds %q", old)
		}
	}
}

func TestInventoryCheck(t *testing.T) {
	m1, m2, m3 := testHost("master", "10.0.0.1"), testHost("master", "10.0.0.2"), testHost("master", "10.0.0.3")
	w1 := testHost("worker", "10.0.0.11")
	for _, c := range []struct {
		name string
		inv  Inventory
		want []string // substrings of the error; none: valid
	}{
		{"one master", Inventory{ControlPlane: []Host{m1}}, nil},
		{"three masters, a worker", Inventory{ControlPlane: []Host{m1, m2, m3}, Nodes: []Host{w1}}, nil},
		{"separate SSH and cluster addresses", Inventory{ControlPlane: []Host{{Name: "m", AnsibleHost: addr("192.168.0.1"), IP: addr("10.0.0.1")}}}, nil},
		{"IPv6 SSH address", Inventory{ControlPlane: []Host{{Name: "m", AnsibleHost: addr("fd00::1"), IP: addr("10.0.0.1")}}}, nil},
		{"no control plane", Inventory{Nodes: []Host{w1}}, []string{"no control-plane host", "kube_control_plane is empty"}},
		{"two masters", Inventory{ControlPlane: []Host{m1, m2}}, []string{"2 control-plane hosts (master-10-0-0-1, master-10-0-0-2)", "even number of etcd hosts"}},
		{"four masters", Inventory{ControlPlane: []Host{m1, m2, m3, testHost("master", "10.0.0.4")}}, []string{"4 control-plane hosts"}},
		{"upper case", Inventory{ControlPlane: []Host{{Name: "Master-1", AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.1")}}}, []string{`host "Master-1"`, "lower case"}},
		{"underscore", Inventory{ControlPlane: []Host{m1}, Nodes: []Host{{Name: "worker_1", AnsibleHost: addr("10.0.0.9"), IP: addr("10.0.0.9")}}}, []string{`host "worker_1"`}},
		{"leading dash", Inventory{ControlPlane: []Host{{Name: "-m", AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.1")}}}, []string{`host "-m"`}},
		{"trailing dot", Inventory{ControlPlane: []Host{{Name: "m.", AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.1")}}}, []string{`host "m."`}},
		{"empty label", Inventory{ControlPlane: []Host{{Name: "m..x", AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.1")}}}, []string{`host "m..x"`}},
		{"too long", Inventory{ControlPlane: []Host{{Name: strings.Repeat("a", 254), AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.1")}}}, []string{"254 characters", "at most 253"}},
		{"no name", Inventory{ControlPlane: []Host{{AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.1")}}}, []string{"a host has no name"}},
		{"name twice", Inventory{ControlPlane: []Host{m1}, Nodes: []Host{{Name: m1.Name, AnsibleHost: addr("10.0.0.7"), IP: addr("10.0.0.7")}}}, []string{"host master-10-0-0-1 is in the inventory twice (as control plane and as worker)"}},
		{"SSH address twice", Inventory{ControlPlane: []Host{m1}, Nodes: []Host{{Name: "w", AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.9")}}}, []string{"host w: ansible_host 10.0.0.1 is also host master-10-0-0-1's address"}},
		{"IPv4-mapped address twice", Inventory{ControlPlane: []Host{m1}, Nodes: []Host{{Name: "w", AnsibleHost: addr("::ffff:10.0.0.1"), IP: addr("10.0.0.9")}}}, []string{"host w: ansible_host 10.0.0.1"}},
		{"cluster address twice", Inventory{ControlPlane: []Host{m1}, Nodes: []Host{{Name: "w", AnsibleHost: addr("192.168.0.9"), IP: addr("10.0.0.1")}}}, []string{"host w: ip 10.0.0.1 is also host master-10-0-0-1's address"}},
		{"no addresses", Inventory{ControlPlane: []Host{{Name: "m"}}}, []string{"host m: no ansible_host", "host m: no ip"}},
		{"IPv6 ip", Inventory{ControlPlane: []Host{{Name: "m", AnsibleHost: addr("fd00::1"), IP: addr("fd00::1")}}}, []string{"host m: ip fd00::1 is not IPv4"}},
		{"zone", Inventory{ControlPlane: []Host{{Name: "m", AnsibleHost: addr("fe80::1%eth0"), IP: addr("10.0.0.1")}}}, []string{"IPv6 zone"}},
		{"every problem", Inventory{ControlPlane: []Host{m1, {Name: "B", AnsibleHost: addr("10.0.0.1"), IP: addr("10.0.0.1")}}}, []string{"even number", `host "B"`, "host B: ansible_host 10.0.0.1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.inv.Check()
			if c.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if _, err := c.inv.YAML(); err != nil {
					t.Fatalf("YAML: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check accepted %+v", c.inv)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check: %v\nwant it to say %q", err, w)
				}
			}
			if _, yerr := c.inv.YAML(); yerr == nil || yerr.Error() != err.Error() {
				t.Errorf("YAML: %v, want Check's error", yerr)
			}
		})
	}
}

func TestInventoryWithoutAndWithNodes(t *testing.T) {
	m := testHost("master", "10.0.0.2")
	w1, w12, w3 := testHost("worker", "10.0.0.1"), testHost("worker", "10.0.0.12"), testHost("worker", "10.0.0.3")
	inv := Inventory{ControlPlane: []Host{m}, Nodes: []Host{w1, w12}}

	// Removing worker-10-0-0-1 does not touch worker-10-0-0-12 (the
	// reference's substring match would).
	without := inv.Without(w1.Name)
	if want := (Inventory{ControlPlane: []Host{m}, Nodes: []Host{w12}}); !reflect.DeepEqual(without, want) {
		t.Errorf("Without(%s) = %+v, want %+v", w1.Name, without, want)
	}
	if !reflect.DeepEqual(inv.Nodes, []Host{w1, w12}) {
		t.Errorf("Without changed the inventory it was called on: %+v", inv.Nodes)
	}
	if got := inv.Without("worker-10-0-0"); !reflect.DeepEqual(got, inv) {
		t.Errorf("Without a name that is no host's changed the inventory: %+v", got)
	}
	if got := inv.Without(m.Name, w1.Name, w12.Name); len(got.ControlPlane)+len(got.Nodes) != 0 {
		t.Errorf("Without every host left %+v", got)
	}

	with := without.WithNodes(w3, w1)
	if want := []Host{w12, w3, w1}; !reflect.DeepEqual(with.Nodes, want) {
		t.Errorf("WithNodes = %+v, want %+v", with.Nodes, want)
	}
	// Adding a node again replaces it in place: a rerun changes nothing.
	moved := Host{Name: w3.Name, AnsibleHost: addr("10.0.0.33"), IP: addr("10.0.0.33")}
	again := with.WithNodes(moved)
	if want := []Host{w12, moved, w1}; !reflect.DeepEqual(again.Nodes, want) {
		t.Errorf("WithNodes of a present worker = %+v, want %+v", again.Nodes, want)
	}
	if !reflect.DeepEqual(with.Nodes, []Host{w12, w3, w1}) {
		t.Errorf("WithNodes changed the inventory it was called on: %+v", with.Nodes)
	}
	// No shared memory: appending to a result does not write into the
	// source's backing array.
	base := Inventory{ControlPlane: []Host{m}, Nodes: make([]Host, 1, 4)}
	base.Nodes[0] = w1
	a, b := base.WithNodes(w3), base.WithNodes(w12)
	if a.Nodes[1] != w3 || b.Nodes[1] != w12 {
		t.Errorf("results share memory: %+v %+v", a.Nodes, b.Nodes)
	}
}

func TestParseInventoryRoundTrip(t *testing.T) {
	for _, inv := range []Inventory{
		{ControlPlane: []Host{testHost("master", "127.0.1.2")}},
		{ControlPlane: []Host{testHost("master", "127.0.1.2")}, Nodes: []Host{testHost("worker", "127.0.1.3")}},
		{
			ControlPlane: []Host{testHost("master", "10.0.0.3"), testHost("master", "10.0.0.1"), testHost("master", "10.0.0.2")},
			Nodes:        []Host{{Name: "worker-b", AnsibleHost: addr("fd00::b"), IP: addr("10.0.1.2")}, testHost("worker", "10.0.0.21")},
		},
	} {
		b, err := inv.YAML()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseInventory(b)
		if err != nil {
			t.Fatalf("ParseInventory: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(got, inv) {
			t.Errorf("ParseInventory = %+v, want %+v", got, inv)
		}
	}
	// The contract's flow-style text reads the same.
	got, err := ParseInventory([]byte(contractHostsYAML))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Inventory{ControlPlane: []Host{testHost("master", "127.0.1.2")}, Nodes: []Host{testHost("worker", "127.0.1.3")}}); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseInventory(contract) = %+v, want %+v", got, want)
	}
	// The control plane comes back in etcd member order whatever the
	// file's order; workers in the file's order.
	shuffled := `all:
  hosts:
    w2: {ansible_host: 10.0.0.22, ip: 10.0.0.22}
    m2: {ansible_host: 10.0.0.2, ip: 10.0.0.2, etcd_member_name: etcd2}
    w1: {ansible_host: 10.0.0.21, ip: 10.0.0.21}
    m3: {ansible_host: 10.0.0.3, ip: 10.0.0.3, etcd_member_name: etcd1}
    m1: {ansible_host: 10.0.0.1, ip: 10.0.0.1, etcd_member_name: etcd3}
  children:
    kube_node: {hosts: {w1: {}, w2: {}}}
    etcd: {hosts: {m1: {}, m2: {}, m3: {}}}
    kube_control_plane: {hosts: {m1: {}, m3: {}, m2: {}}}
`
	got, err = ParseInventory([]byte(shuffled))
	if err != nil {
		t.Fatal(err)
	}
	if names := append(names(got.ControlPlane), names(got.Nodes)...); !slices.Equal(names, []string{"m3", "m2", "m1", "w2", "w1"}) {
		t.Errorf("ParseInventory order: %v, want m3 m2 m1 (etcd1..3) then w2 w1", names)
	}
}

func TestParseInventoryRefuses(t *testing.T) {
	const secret = "s3cret-value"
	for _, c := range []struct{ name, text, want string }{
		{"not YAML", "all: [", "hosts.yaml: yaml:"},
		{"empty", "", "empty"},
		{"a list", "- a\n", "the document is not a mapping"},
		{"other top-level key", "all: {}\nextra: {}\n", "want one top-level key, all"},
		{"unknown key in all", "all: {vars: {}}\n", "all has vars"},
		{"a password", "all:\n  hosts:\n    m: {ansible_host: 10.0.0.1, ip: 10.0.0.1, ansible_password: " + secret + "}\n", "host m: variable ansible_password is not one this package writes"},
		{"a capital A", "all:\n  hosts:\n    m: {Ansible_host: 10.0.0.1}\n", "variable Ansible_host"},
		{"a bad address", "all:\n  hosts:\n    m: {ansible_host: " + secret + "}\n", "host m: ansible_host is not an IP address"},
		{"access_ip differs", "all:\n  hosts:\n    m: {ansible_host: 10.0.0.1, ip: 10.0.0.1, access_ip: 10.0.0.9, etcd_member_name: etcd1}\n  children:\n    kube_control_plane: {hosts: {m: {}}}\n    etcd: {hosts: {m: {}}}\n", "access_ip 10.0.0.9 is not its ip 10.0.0.1"},
		{"an old group name", "all:\n  hosts:\n    m: {ansible_host: 10.0.0.1, ip: 10.0.0.1}\n  children:\n    kube-master: {hosts: {m: {}}}\n", "all.children has kube-master"},
		{"a group member not in all.hosts", "all:\n  hosts: {}\n  children:\n    kube_node: {hosts: {w: {}}}\n", "host w is in group kube_node but not in all.hosts"},
		{"etcd is not the control plane", "all:\n  hosts:\n    m: {ansible_host: 10.0.0.1, ip: 10.0.0.1, etcd_member_name: etcd1}\n  children:\n    kube_control_plane: {hosts: {m: {}}}\n", "etcd () is not kube_control_plane (m)"},
		{"a host in both groups", "all:\n  hosts:\n    m: {ansible_host: 10.0.0.1, ip: 10.0.0.1, etcd_member_name: etcd1}\n  children:\n    kube_control_plane: {hosts: {m: {}}}\n    etcd: {hosts: {m: {}}}\n    kube_node: {hosts: {m: {}}}\n", "host m is in both kube_control_plane and kube_node"},
		{"no etcd member name", "all:\n  hosts:\n    m: {ansible_host: 10.0.0.1, ip: 10.0.0.1}\n  children:\n    kube_control_plane: {hosts: {m: {}}}\n    etcd: {hosts: {m: {}}}\n", `control-plane host m: etcd_member_name "" is not one of etcd1..etcd1`},
		{"an etcd member name twice", "all:\n  hosts:\n    a: {ansible_host: 10.0.0.1, ip: 10.0.0.1, etcd_member_name: etcd1}\n    b: {ansible_host: 10.0.0.2, ip: 10.0.0.2, etcd_member_name: etcd1}\n  children:\n    kube_control_plane: {hosts: {a: {}, b: {}}}\n    etcd: {hosts: {a: {}, b: {}}}\n", "once each"},
		{"a worker with an etcd member name", "all:\n  hosts:\n    w: {ansible_host: 10.0.0.1, ip: 10.0.0.1, etcd_member_name: etcd1}\n  children:\n    kube_node: {hosts: {w: {}}}\n", "worker w has an etcd_member_name"},
		{"calico_rr holds a host", "all:\n  hosts:\n    w: {ansible_host: 10.0.0.1, ip: 10.0.0.1}\n  children:\n    calico_rr: {hosts: {w: {}}}\n", "calico_rr holds w"},
		{"a host in no group", "all:\n  hosts:\n    w: {ansible_host: 10.0.0.1, ip: 10.0.0.1}\n", "host w is in no group"},
		{"a key twice", "all:\n  hosts:\n    w: {ansible_host: 10.0.0.1, ansible_host: 10.0.0.2}\n", "yaml:"},
		{"a variable that is a list", "all:\n  hosts:\n    w: {ip: [10.0.0.1]}\n", "host w: ip is not a scalar"},
	} {
		t.Run(c.name, func(t *testing.T) {
			inv, err := ParseInventory([]byte(c.text))
			if err == nil {
				t.Fatalf("ParseInventory accepted it: %+v", inv)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("ParseInventory: %v\nwant it to say %q", err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("ParseInventory's error quotes a value: %v", err)
			}
		})
	}
}

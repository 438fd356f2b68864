package kubespray

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Inventory groups, as kubespray names them since v2.16.0 (PR #7256
// renamed kube-master to kube_control_plane, PR #7552 replaced "-" by "_"
// in every group name). Every release since maps the old names
// (kube-master, kube-node, k8s-cluster, calico-rr) to these, so the old
// names are never written (kubespray v2.31.0 docs/ansible/inventory.md).
const (
	groupControlPlane = "kube_control_plane"
	groupEtcd         = "etcd"
	groupNode         = "kube_node"
	groupCalicoRR     = "calico_rr"
	// groupCluster is the union of the three groups above; kubespray
	// computes it by itself only since v2.27.0 (commit 88b6f08e2), so the
	// inventory defines it for v2.25 and v2.26.
	groupCluster = "k8s_cluster"
)

// Host is one inventory host.
type Host struct {
	// Name is the inventory host name, which kubespray makes the
	// Kubernetes Node name (kube_override_hostname defaults to
	// inventory_hostname, roles/kubespray_defaults/defaults/main/main.yml).
	Name string
	// AnsibleHost is ansible_host: the address Ansible connects to by SSH.
	AnsibleHost netip.Addr
	// IP is ip (and access_ip): the node's IPv4 address on the cluster
	// network, which kubespray binds the services to and the other nodes
	// use (docs/ansible/vars.md). It must be one of the host's own
	// addresses: kubespray's preinstall role asserts so.
	IP netip.Addr
}

// Inventory is what hosts.yaml holds: the control-plane hosts (also the
// etcd members, in order), the worker hosts.
type Inventory struct {
	// ControlPlane are the kube_control_plane hosts. They are the etcd
	// members too, etcd1..etcdN in this order (etcd_member_name).
	ControlPlane []Host
	// Nodes are the kube_node hosts: the workers.
	Nodes []Host
}

// hostNameRE is what kubespray asserts of inventory_hostname ("Stop if
// bad hostname", roles/kubernetes/preinstall/tasks/0040-verify-settings.yml
// v2.31.0; 0020-verify-settings.yml in v2.16.0): lower-case alphanumeric
// labels with inner dashes, separated by dots. It is Kubernetes'
// DNS-1123 subdomain (k8s.io/apimachinery/pkg/util/validation), which a
// Node name must be, and that also limits the length to 253.
var hostNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// maxHostName is IsDNS1123Subdomain's length limit.
const maxHostName = 253

// Check refuses what kubespray asserts (facts §1.3): a host name not
// matching [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*,
// no control plane, an even number of etcd members, a name twice, an
// address twice. Errors name the host.
//
// It also refuses a host without an address, and an ip that is not IPv4:
// kubespray's ip is the IPv4 address (ip6 is the IPv6 one,
// docs/ansible/vars.md), and mgmtkit sets no IPv6 stack. Every problem is
// reported, joined in one error.
func (inv Inventory) Check() error {
	var errs []error
	// roles/validate_inventory/tasks/main.yml: "Stop if kube_control_plane
	// group is empty" and "Stop if even number of etcd hosts"; the etcd
	// group is the control plane here.
	switch n := len(inv.ControlPlane); {
	case n == 0:
		errs = append(errs, errors.New("inventory has no control-plane host: kubespray stops when kube_control_plane is empty"))
	case n%2 == 0:
		errs = append(errs, fmt.Errorf("inventory has %d control-plane hosts (%s), which are the etcd members: kubespray stops on an even number of etcd hosts; use 1, 3 or 5", n, strings.Join(names(inv.ControlPlane), ", ")))
	}
	seenName := map[string]string{}
	seenAddr := map[netip.Addr]string{}
	addr := func(h Host, what string, a netip.Addr) {
		a = a.Unmap()
		if other, ok := seenAddr[a]; ok && other != h.Name {
			errs = append(errs, fmt.Errorf("host %s: %s %s is also host %s's address", h.Name, what, a, other))
			return
		}
		seenAddr[a] = h.Name
	}
	type roleHost struct {
		role string
		Host
	}
	var all []roleHost
	for _, h := range inv.ControlPlane {
		all = append(all, roleHost{"control plane", h})
	}
	for _, h := range inv.Nodes {
		all = append(all, roleHost{"worker", h})
	}
	for _, rh := range all {
		h := rh.Host
		switch {
		case h.Name == "":
			errs = append(errs, errors.New("a host has no name"))
		case len(h.Name) > maxHostName:
			errs = append(errs, fmt.Errorf("host %.40s...: name is %d characters long; a Kubernetes Node name has at most %d", h.Name, len(h.Name), maxHostName))
		case !hostNameRE.MatchString(h.Name):
			errs = append(errs, fmt.Errorf("host %q: kubespray stops on this name: it must consist of lower case alphanumeric characters, '.' or '-', and start and end with an alphanumeric character", h.Name))
		}
		if role, ok := seenName[h.Name]; ok {
			errs = append(errs, fmt.Errorf("host %s is in the inventory twice (as %s and as %s)", h.Name, role, rh.role))
			continue
		}
		seenName[h.Name] = rh.role
		switch {
		case !h.AnsibleHost.IsValid():
			errs = append(errs, fmt.Errorf("host %s: no ansible_host (SSH) address", h.Name))
		case h.AnsibleHost.Zone() != "":
			errs = append(errs, fmt.Errorf("host %s: ansible_host %s has an IPv6 zone", h.Name, h.AnsibleHost))
		default:
			addr(h, "ansible_host", h.AnsibleHost)
		}
		switch ip := h.IP.Unmap(); {
		case !ip.IsValid():
			errs = append(errs, fmt.Errorf("host %s: no ip (cluster network) address", h.Name))
		case !ip.Is4():
			errs = append(errs, fmt.Errorf("host %s: ip %s is not IPv4: kubespray's ip is the IPv4 address (ip6 is for IPv6, which mgmtkit does not set)", h.Name, h.IP))
		case ip == h.AnsibleHost.Unmap():
			// One address for both is the usual case.
		default:
			addr(h, "ip", ip)
		}
	}
	return errors.Join(errs...)
}

func names(hosts []Host) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.Name
	}
	return out
}

// Without returns the inventory without the named hosts. The result
// shares no memory with inv.
func (inv Inventory) Without(names ...string) Inventory {
	keep := func(h Host) bool { return !slices.Contains(names, h.Name) }
	return Inventory{
		ControlPlane: filter(inv.ControlPlane, keep),
		Nodes:        filter(inv.Nodes, keep),
	}
}

// WithNodes returns the inventory with hosts added as workers, after the
// existing ones. A worker that has the name of one of hosts is replaced
// where it stands, so that adding the same node again (a scale-out run
// again after a failure) changes nothing. The result shares no memory
// with inv.
func (inv Inventory) WithNodes(hosts ...Host) Inventory {
	out := Inventory{ControlPlane: slices.Clone(inv.ControlPlane), Nodes: slices.Clone(inv.Nodes)}
	for _, h := range hosts {
		if i := slices.IndexFunc(out.Nodes, func(n Host) bool { return n.Name == h.Name }); i >= 0 {
			out.Nodes[i] = h
			continue
		}
		out.Nodes = append(out.Nodes, h)
	}
	return out
}

func filter(hosts []Host, keep func(Host) bool) []Host {
	var out []Host
	for _, h := range hosts {
		if keep(h) {
			out = append(out, h)
		}
	}
	return out
}

// etcdMemberName is the etcd_member_name of the i-th (from 0) etcd host:
// etcd1, etcd2, ..., kubespray's own default (etcd<index>,
// roles/kubespray_defaults/defaults/main/main.yml).
func etcdMemberName(i int) string { return "etcd" + strconv.Itoa(i+1) }

// Host variables hosts.yaml sets, lower case: Ansible's variable names
// are case-sensitive, and the spec's sample writes Ansible_host, which
// Ansible reads as an ordinary variable (facts §1.3; realtest checks it).
const (
	varAnsibleHost    = "ansible_host"
	varIP             = "ip"
	varAccessIP       = "access_ip"
	varEtcdMemberName = "etcd_member_name"
)

// YAML renders hosts.yaml exactly in the contract's shape: all.hosts
// holds every host with its variables (ansible_host, ip, access_ip, and
// etcd_member_name etcd1..N for the etcd hosts), in the inventory's order,
// control plane first; all.children holds the groups kube_control_plane,
// etcd, kube_node, calico_rr (empty) and k8s_cluster (children:
// kube_control_plane, kube_node, calico_rr), in that order. The same
// inventory always renders to the same bytes. It refuses an inventory
// that [Inventory.Check] refuses.
//
// access_ip is ip: the address the other hosts use ("Often required when
// deploying from a cloud, such as OpenStack", docs/ansible/vars.md).
func (inv Inventory) YAML() ([]byte, error) {
	if err := inv.Check(); err != nil {
		return nil, err
	}
	all := newMapping()
	hosts := newMapping()
	for i, h := range inv.ControlPlane {
		hosts.add(h.Name, hostVars(h, etcdMemberName(i)))
	}
	for _, h := range inv.Nodes {
		hosts.add(h.Name, hostVars(h, ""))
	}
	all.add("hosts", hosts.node)
	children := newMapping()
	children.add(groupControlPlane, groupOf(inv.ControlPlane))
	children.add(groupEtcd, groupOf(inv.ControlPlane))
	children.add(groupNode, groupOf(inv.Nodes))
	children.add(groupCalicoRR, groupOf(nil))
	cluster := newMapping()
	for _, g := range []string{groupControlPlane, groupNode, groupCalicoRR} {
		cluster.add(g, newMapping().node)
	}
	children.add(groupCluster, newMapping().add("children", cluster.node).node)
	all.add("children", children.node)
	root := newMapping().add("all", all.node)
	root.node.HeadComment = generatedComment
	return encodeYAML(root.node)
}

// generatedComment heads every file this package renders.
const generatedComment = "Written by mgmtkit; it rewrites this file, so changes made here are lost."

func hostVars(h Host, etcdName string) *yaml.Node {
	m := newMapping().
		add(varAnsibleHost, scalar(h.AnsibleHost.Unmap().String())).
		add(varIP, scalar(h.IP.Unmap().String())).
		add(varAccessIP, scalar(h.IP.Unmap().String()))
	if etcdName != "" {
		m.add(varEtcdMemberName, scalar(etcdName))
	}
	return m.node
}

// groupOf is a group holding hosts: {hosts: {NAME: {}, ...}}.
func groupOf(hosts []Host) *yaml.Node {
	members := newMapping()
	for _, h := range hosts {
		members.add(h.Name, newMapping().node)
	}
	return newMapping().add("hosts", members.node).node
}

// ParseInventory reads a hosts.yaml this package rendered (to find what an
// earlier run left on the Ansible server). It refuses what [Inventory.YAML]
// does not write: a host variable other than ansible_host, ip, access_ip
// and etcd_member_name, an access_ip other than ip, a group other than
// the five, an etcd group other than the control plane, a host in a group
// but not in all.hosts, or in both the control plane and the workers; it
// names the host and the variable, never a value that is not an address
// (a hand-edited file may hold a password). The control-plane hosts come
// back in etcd_member_name order, the workers in the file's order. Call
// [Inventory.Check] for kubespray's own rules.
func ParseInventory(data []byte) (Inventory, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Inventory{}, fmt.Errorf("hosts.yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return Inventory{}, errors.New("hosts.yaml: empty")
	}
	root, err := mappingOf(doc.Content[0], "the document")
	if err != nil {
		return Inventory{}, err
	}
	allNode, ok := root.get("all")
	if !ok || len(root.keys) != 1 {
		return Inventory{}, fmt.Errorf("hosts.yaml: want one top-level key, all; got %s", strings.Join(root.keys, ", "))
	}
	all, err := mappingOf(allNode, "all")
	if err != nil {
		return Inventory{}, err
	}
	if err := all.only("hosts", "children"); err != nil {
		return Inventory{}, err
	}
	// all.hosts, in order.
	type parsed struct {
		host Host
		etcd string
	}
	var order []string
	byName := map[string]*parsed{}
	if hn, ok := all.get("hosts"); ok {
		hosts, err := mappingOf(hn, "all.hosts")
		if err != nil {
			return Inventory{}, err
		}
		for i, name := range hosts.keys {
			p := &parsed{host: Host{Name: name}}
			vars, err := mappingOf(hosts.values[i], "host "+name)
			if err != nil {
				return Inventory{}, err
			}
			var accessIP string
			for j, k := range vars.keys {
				v := vars.values[j]
				if v.Kind != yaml.ScalarNode {
					return Inventory{}, fmt.Errorf("hosts.yaml: host %s: %s is not a scalar", name, k)
				}
				switch k {
				case varAnsibleHost:
					p.host.AnsibleHost, err = parseAddr(name, k, v.Value)
				case varIP:
					p.host.IP, err = parseAddr(name, k, v.Value)
				case varAccessIP:
					accessIP = v.Value
				case varEtcdMemberName:
					p.etcd = v.Value
				default:
					err = fmt.Errorf("hosts.yaml: host %s: variable %s is not one this package writes", name, k)
				}
				if err != nil {
					return Inventory{}, err
				}
			}
			if accessIP != "" && accessIP != p.host.IP.String() {
				return Inventory{}, fmt.Errorf("hosts.yaml: host %s: access_ip %s is not its ip %s", name, accessIP, p.host.IP)
			}
			order = append(order, name)
			byName[name] = p
		}
	}
	groups := map[string][]string{}
	if cn, ok := all.get("children"); ok {
		children, err := mappingOf(cn, "all.children")
		if err != nil {
			return Inventory{}, err
		}
		if err := children.only(groupControlPlane, groupEtcd, groupNode, groupCalicoRR, groupCluster); err != nil {
			return Inventory{}, err
		}
		for i, g := range children.keys {
			if g == groupCluster {
				continue // its children are the other groups; nothing to read
			}
			group, err := mappingOf(children.values[i], g)
			if err != nil {
				return Inventory{}, err
			}
			if err := group.only("hosts"); err != nil {
				return Inventory{}, err
			}
			hn, ok := group.get("hosts")
			if !ok {
				continue
			}
			members, err := mappingOf(hn, g+".hosts")
			if err != nil {
				return Inventory{}, err
			}
			for _, name := range members.keys {
				if _, ok := byName[name]; !ok {
					return Inventory{}, fmt.Errorf("hosts.yaml: host %s is in group %s but not in all.hosts", name, g)
				}
			}
			groups[g] = members.keys
		}
	}
	if len(groups[groupCalicoRR]) > 0 {
		return Inventory{}, fmt.Errorf("hosts.yaml: calico_rr holds %s; this package leaves it empty", strings.Join(groups[groupCalicoRR], ", "))
	}
	cp, etcd := slices.Sorted(slices.Values(groups[groupControlPlane])), slices.Sorted(slices.Values(groups[groupEtcd]))
	if !slices.Equal(cp, etcd) {
		return Inventory{}, fmt.Errorf("hosts.yaml: etcd (%s) is not kube_control_plane (%s)", strings.Join(etcd, ", "), strings.Join(cp, ", "))
	}
	var inv Inventory
	isCP := map[string]bool{}
	for _, name := range cp {
		isCP[name] = true
	}
	isNode := map[string]bool{}
	for _, name := range groups[groupNode] {
		if isCP[name] {
			return Inventory{}, fmt.Errorf("hosts.yaml: host %s is in both kube_control_plane and kube_node", name)
		}
		isNode[name] = true
	}
	// The control plane in etcd member order.
	members := make([]Host, len(cp))
	for _, name := range cp {
		p := byName[name]
		n, err := strconv.Atoi(strings.TrimPrefix(p.etcd, "etcd"))
		if !strings.HasPrefix(p.etcd, "etcd") || err != nil || n < 1 || n > len(cp) || members[n-1].Name != "" {
			return Inventory{}, fmt.Errorf("hosts.yaml: control-plane host %s: etcd_member_name %q is not one of etcd1..etcd%d, once each", name, p.etcd, len(cp))
		}
		members[n-1] = p.host
	}
	inv.ControlPlane = members
	for _, name := range order {
		p := byName[name]
		switch {
		case isNode[name]:
			if p.etcd != "" {
				return Inventory{}, fmt.Errorf("hosts.yaml: worker %s has an etcd_member_name", name)
			}
			inv.Nodes = append(inv.Nodes, p.host)
		case !isCP[name]:
			return Inventory{}, fmt.Errorf("hosts.yaml: host %s is in no group", name)
		}
	}
	return inv, nil
}

func parseAddr(host, key, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("hosts.yaml: host %s: %s is not an IP address", host, key)
	}
	return a, nil
}

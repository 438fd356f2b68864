package kubespray

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/remote"
	yaml "go.yaml.in/yaml/v3"
)

// Paths of the group_vars files this package writes, relative to the
// inventory directory. Ansible reads every file of group_vars/GROUP/ in
// name order, a later file overriding an earlier one
// (lib/ansible/plugins/vars/host_group_vars.py), so mgmtkit.yml overrides
// the values inventory/sample sets in all/all.yml
// (no_proxy_exclude_workers: false) and k8s_cluster/k8s-cluster.yml
// (kube_pods_subnet, kube_service_addresses) in every release from
// v2.16.0 to v2.31.0, and leaves the rest of the sample as kubespray ships
// it.
const (
	// AllVarsFile holds what every host needs: the proxies and how Ansible
	// verifies the hosts' keys.
	AllVarsFile = "group_vars/all/mgmtkit.yml"
	// ClusterVarsFile holds the cluster's settings.
	ClusterVarsFile = "group_vars/k8s_cluster/mgmtkit.yml"
	// LoginFile holds the nodes' login when masters and workers share it.
	LoginFile = "group_vars/all/mgmtkit-login.yml"
	// ControlPlaneLoginFile and NodeLoginFile hold the masters' and the
	// workers' logins when they differ.
	ControlPlaneLoginFile = "group_vars/kube_control_plane/mgmtkit-login.yml"
	NodeLoginFile         = "group_vars/kube_node/mgmtkit-login.yml"
)

// LoginFilePaths returns every path [LoginFiles] may write. A run that
// writes one layout removes the files of the other, so that no stale
// password stays on the Ansible server and no stale login overrides the
// new one (a group's file overrides group_vars/all).
func LoginFilePaths() []string {
	return []string{LoginFile, ControlPlaneLoginFile, NodeLoginFile}
}

// GroupVars are the kubespray variables mgmtkit sets (facts §1.4).
type GroupVars struct {
	// PodsSubnet and ServiceAddresses are kube_pods_subnet and
	// kube_service_addresses; unset (the zero Prefix) keeps kubespray's
	// defaults (10.233.64.0/18 and 10.233.0.0/18).
	PodsSubnet, ServiceAddresses netip.Prefix
	// HTTPProxy and HTTPSProxy are http_proxy and https_proxy, URLs, each
	// from its own field (the reference copied http_proxy into both); ""
	// leaves the variable unset. They may hold credentials.
	HTTPProxy, HTTPSProxy string
	// AdditionalNoProxy are additional_no_proxy: the user's exceptions,
	// which kubespray adds to the no_proxy list it builds from the nodes,
	// the load balancer, the service and pod networks and localhost
	// (roles/kubespray_defaults/defaults/main/main.yml); setting no_proxy
	// itself would replace that list (docs/advanced/proxy.md).
	AdditionalNoProxy []string
	// MTU is the nodes' NIC MTU; calico_mtu = MTU, calico_veth_mtu =
	// MTU-50: VXLAN, Calico's encapsulation by default in kubespray
	// (k8s-net-calico.yml: "VXLAN: network MTU - 50"; the reference's
	// MTU-20 is IPIP's). 0 leaves both to Calico.
	MTU int
	// SupplementaryAddresses are supplementary_addresses_in_ssl_keys:
	// extra names and addresses in the API server's certificate (the
	// external load balancer's address, so that a client verifies the
	// certificate through it; docs/operations/ha-mode.md).
	SupplementaryAddresses []string
	// KnownHostsFile is INV/known_hosts, the file [KnownHosts] renders,
	// which Ansible verifies every node's host key against. "" leaves
	// host-key checking as the Ansible server's configuration has it.
	KnownHostsFile string
}

// calicoVXLANOverhead is what VXLAN takes from the MTU (k8s-net-calico.yml).
const calicoVXLANOverhead = 50

// minMTU and maxMTU bound MTU: 576, the datagram every IPv4 host must
// accept (RFC 791), to 65535, the largest an interface may have.
const minMTU, maxMTU = 576, 65535

// kubesprayCfgSSHArgs are the ssh options of kubespray's ansible.cfg
// ([ssh_connection] ssh_args in v2.16.0 and v2.31.0) without its
// "-o UserKnownHostsFile=/dev/null".
const kubesprayCfgSSHArgs = "-o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100"

// Files returns the group_vars files, path relative to the inventory
// directory -> content: [AllVarsFile] and [ClusterVarsFile], YAML rendered
// from data.
//
// AllVarsFile sets http_proxy, https_proxy and additional_no_proxy (a
// comma-separated string, as kubespray joins it into no_proxy) when they
// are given, as !unsafe strings so that Ansible never evaluates a "{{" in
// them; no_proxy_exclude_workers: true, so that adding or removing a
// worker does not restart the container runtime of every node ("Since
// workers are included in the no_proxy variable by default, docker engine
// will be restarted on all nodes", sample all.yml). With KnownHostsFile it
// makes Ansible verify the nodes' host keys against that file:
//
//   - ansible_ssh_host_key_checking: true, which overrides kubespray's
//     host_key_checking=False (a variable beats ansible.cfg:
//     lib/ansible/plugins/connection/ssh.py declares the variable);
//   - ansible_ssh_args: "-o UserKnownHostsFile=FILE
//     -o StrictHostKeyChecking=yes" followed by the other options of
//     kubespray's ssh_args. It must replace ssh_args: Ansible puts
//     ssh_args first on ssh's command line and ssh takes the first value
//     of an option, so kubespray's "-o UserKnownHostsFile=/dev/null" and
//     the "-o StrictHostKeyChecking=no" that host_key_checking=False adds
//     would win over ssh_common_args (a local experiment with
//     ansible-playbook -vvv and kubespray's ansible.cfg shows that order);
//   - ansible_ssh_common_args with the same two options, which is where
//     the contract with the simulated Ansible server looks for them.
//
// ClusterVarsFile sets kube_pods_subnet, kube_service_addresses,
// calico_mtu, calico_veth_mtu and supplementary_addresses_in_ssl_keys
// when they are given; it is written even when empty, so that a value
// removed from the request is removed on the Ansible server too.
//
// It refuses what kubespray's validate_inventory role would stop on: a
// subnet that is not a network address (its ipaddr('net') check), pods and
// services in overlapping networks; and an IPv6 subnet (kubespray keeps
// those in kube_pods_subnet_ipv6 and kube_service_addresses_ipv6, which
// mgmtkit does not set), an MTU outside 576..65535 and a known-hosts path
// that ssh would split or expand.
//
// The proxy URLs may hold credentials: write AllVarsFile with mode 0600
// like the login files.
func (g GroupVars) Files() (map[string][]byte, error) {
	var errs []error
	for _, p := range []struct {
		name string
		p    netip.Prefix
	}{{"kube_pods_subnet", g.PodsSubnet}, {"kube_service_addresses", g.ServiceAddresses}} {
		switch {
		case !p.p.IsValid():
		case !p.p.Addr().Is4():
			errs = append(errs, fmt.Errorf("%s %s is not IPv4: kubespray sets IPv6 networks in %s_ipv6, which mgmtkit does not", p.name, p.p, p.name))
		case p.p.Masked() != p.p:
			errs = append(errs, fmt.Errorf("%s %s is not a network address (kubespray stops: \"is not a valid network range\"); did you mean %s?", p.name, p.p, p.p.Masked()))
		}
	}
	if g.PodsSubnet.IsValid() && g.ServiceAddresses.IsValid() && g.PodsSubnet.Overlaps(g.ServiceAddresses) {
		errs = append(errs, fmt.Errorf("kube_pods_subnet %s and kube_service_addresses %s overlap (kubespray stops: \"kube_pods_subnet cannot be the same network segment as kube_service_addresses\")", g.PodsSubnet, g.ServiceAddresses))
	}
	if g.MTU != 0 && (g.MTU < minMTU || g.MTU > maxMTU) {
		errs = append(errs, fmt.Errorf("MTU %d is not between %d and %d", g.MTU, minMTU, maxMTU))
	}
	if g.KnownHostsFile != "" {
		if err := checkKnownHostsPath(g.KnownHostsFile); err != nil {
			errs = append(errs, err)
		}
	}
	for _, field := range []struct{ name, value string }{{"http_proxy", g.HTTPProxy}, {"https_proxy", g.HTTPSProxy}} {
		if strings.ContainsAny(field.value, "\r\n") {
			errs = append(errs, fmt.Errorf("%s holds a line break", field.name)) // never the value: it may hold a password
		}
	}
	for _, e := range g.AdditionalNoProxy {
		if e == "" || strings.ContainsAny(e, ", \t\r\n") {
			errs = append(errs, fmt.Errorf("additional_no_proxy entry %q is empty or holds a comma or a space", e))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	all := newMapping()
	if g.HTTPProxy != "" {
		all.add("http_proxy", unsafe(g.HTTPProxy))
	}
	if g.HTTPSProxy != "" {
		all.add("https_proxy", unsafe(g.HTTPSProxy))
	}
	if len(g.AdditionalNoProxy) > 0 {
		all.add("additional_no_proxy", unsafe(strings.Join(g.AdditionalNoProxy, ",")))
	}
	all.add("no_proxy_exclude_workers", scalar(true))
	if g.KnownHostsFile != "" {
		verify := "-o UserKnownHostsFile=" + g.KnownHostsFile + " -o StrictHostKeyChecking=yes"
		all.add("ansible_ssh_host_key_checking", scalar(true))
		all.add("ansible_ssh_args", unsafe(verify+" "+kubesprayCfgSSHArgs))
		all.add("ansible_ssh_common_args", unsafe(verify))
	}

	cluster := newMapping()
	if g.PodsSubnet.IsValid() {
		cluster.add("kube_pods_subnet", scalar(g.PodsSubnet.String()))
	}
	if g.ServiceAddresses.IsValid() {
		cluster.add("kube_service_addresses", scalar(g.ServiceAddresses.String()))
	}
	if g.MTU != 0 {
		cluster.add("calico_mtu", scalar(g.MTU))
		cluster.add("calico_veth_mtu", scalar(g.MTU-calicoVXLANOverhead))
	}
	if len(g.SupplementaryAddresses) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, a := range g.SupplementaryAddresses {
			seq.Content = append(seq.Content, scalar(a))
		}
		cluster.add("supplementary_addresses_in_ssl_keys", seq)
	}
	files := map[string][]byte{}
	for name, m := range map[string]mapping{AllVarsFile: all, ClusterVarsFile: cluster} {
		b, err := encodeVars(m)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// checkKnownHostsPath refuses a path that ssh would not take as one file:
// ssh_config(5) splits UserKnownHostsFile at whitespace ("one or more
// files ... separated by whitespace") and expands "%" tokens, "~" and
// "${VAR}" in it; Ansible splits ssh_args with shlex, which quotes and
// backslashes change. The inventory path is validated to the portable
// characters anyway (lcm.Validator.HostDataDir).
func checkKnownHostsPath(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("known_hosts path %q is not a clean absolute path", p)
	}
	if i := strings.IndexFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+@", r))
	}); i >= 0 {
		return fmt.Errorf("known_hosts path %q holds %q, which ssh or Ansible would read specially; use A-Z a-z 0-9 / . _ - + @", p, p[i:i+1])
	}
	return nil
}

// encodeVars renders a vars file: the mapping, or "{}" when it is empty
// (an empty file is a valid vars file too, but "{}" says it on purpose).
func encodeVars(m mapping) ([]byte, error) {
	if len(m.node.Content) == 0 {
		m.node.Style = yaml.FlowStyle
	}
	m.node.HeadComment = generatedComment
	return encodeYAML(m.node)
}

// Login is an SSH login Ansible uses for a group of hosts.
type Login struct {
	User     string
	Password remote.Secret
}

// LoginFiles returns the vars files for the masters' and workers' logins
// (contract): one [LoginFile] when both are the same, else
// [ControlPlaneLoginFile] and [NodeLoginFile]; each sets ansible_user,
// ansible_password and ansible_become_password (sudo asks for the login's
// own password). Secrets are revealed only into these bytes, as !unsafe
// strings (see [unsafeTag]). Write them with mode 0600, and remove the
// other layout's files ([LoginFilePaths]).
//
// A login without a password sets only ansible_user: Ansible then logs
// in with the Ansible server's own keys, and become must need no
// password. A login without a user is refused.
func LoginFiles(masters, workers Login) (map[string][]byte, error) {
	for _, l := range []struct {
		who   string
		login Login
	}{{"the control-plane hosts'", masters}, {"the workers'", workers}} {
		if l.login.User == "" {
			return nil, fmt.Errorf("%s login has no user", l.who)
		}
		if strings.ContainsAny(l.login.User, "\r\n") {
			return nil, fmt.Errorf("%s login's user holds a line break", l.who)
		}
	}
	if masters.User == workers.User && masters.Password.Reveal() == workers.Password.Reveal() {
		b, err := encodeVars(loginVars(masters))
		if err != nil {
			return nil, err
		}
		return map[string][]byte{LoginFile: b}, nil
	}
	files := map[string][]byte{}
	for name, l := range map[string]Login{ControlPlaneLoginFile: masters, NodeLoginFile: workers} {
		b, err := encodeVars(loginVars(l))
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

func loginVars(l Login) mapping {
	m := newMapping().add("ansible_user", scalar(l.User))
	if pw := l.Password.Reveal(); pw != "" {
		m.add("ansible_password", unsafe(pw))
		m.add("ansible_become_password", unsafe(pw))
	}
	return m
}

// KnownHosts renders the known_hosts file: one line per host,
// "<ansible_host> <authorized key>" (keys as OpenSSH authorized_keys
// lines: "ssh-ed25519 AAAA..."), hosts in address order. The host field
// is the bare address, as ssh looks a host up on port 22 (sshd(8)
// SSH_KNOWN_HOSTS FILE FORMAT); a key's options and comment are dropped.
func KnownHosts(keys map[netip.Addr]string) ([]byte, error) {
	addrs := make([]netip.Addr, 0, len(keys))
	lines := map[netip.Addr]string{}
	for a, key := range keys {
		if !a.IsValid() || a.Zone() != "" {
			return nil, fmt.Errorf("known_hosts: %q is not an address ssh looks up", a)
		}
		a = a.Unmap()
		if _, dup := lines[a]; dup {
			return nil, fmt.Errorf("known_hosts: %s twice", a)
		}
		lines[a] = key
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	var b strings.Builder
	for _, a := range addrs {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(lines[a]))
		if err != nil {
			return nil, fmt.Errorf("known_hosts: host %s: key is not an authorized_keys line: %w", a, err)
		}
		b.WriteString(a.String())
		b.WriteByte(' ')
		b.Write(ssh.MarshalAuthorizedKey(key)) // "type base64\n"
	}
	return []byte(b.String()), nil
}

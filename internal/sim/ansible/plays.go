package ansible

import (
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// kubespray is the checkout a playbook belongs to.
type kubespray struct {
	root     string
	version  string // "2.28.1"
	playbook string // "cluster", "scale", "remove-node", "facts"; "" for another file
	verFile  string // the ansible_version.yml its plays import
}

func (k kubespray) atLeast(v string) bool { return compareVersions(k.version, v) >= 0 }

// detectKubespray finds the checkout of playbook file abs (the playbook
// or, for playbooks/X.yml, its parent) and its release: galaxy.yml's
// version (since v2.22.0), else v2.16.0's layout (top-level facts.yml and
// legacy_groups.yml). Since v2.22.0 the top-level playbooks import
// playbooks/NAME.yml (commit acbf44a1b), which must be there.
func detectKubespray(p *sshtest.Process, abs string) (kubespray, error) {
	dir := path.Dir(abs)
	base := path.Base(abs)
	root := dir
	if path.Base(dir) == "playbooks" {
		root = path.Dir(dir)
	}
	k := kubespray{root: root}
	if data, err := p.FS.ReadFile(path.Join(root, "galaxy.yml")); err == nil {
		k.version = galaxyVersion(data)
	}
	switch {
	case k.version != "":
		k.verFile = path.Join(root, "playbooks/ansible_version.yml")
	case exists(p, path.Join(root, "ansible_version.yml")) && exists(p, path.Join(root, "legacy_groups.yml")):
		k.version = "2.16.0"
		k.verFile = path.Join(root, "ansible_version.yml")
	default:
		return k, nil
	}
	names := map[string]string{"cluster.yml": "cluster", "scale.yml": "scale", "remove-node.yml": "remove-node", "remove_node.yml": "remove-node", "facts.yml": "facts"}
	k.playbook = names[base]
	if k.playbook == "" {
		return k, nil
	}
	if k.atLeast("2.22.0") && dir == root {
		// The wrapper imports playbooks/<name>.yml.
		target := path.Join(root, "playbooks", strings.ReplaceAll(base, "-", "_"))
		if base == "facts.yml" {
			// playbooks/facts.yml only; top-level facts.yml was removed.
			return k, nil
		}
		if !exists(p, target) {
			return k, ansibleMsg(fmt.Sprintf("Unable to retrieve file contents\nCould not find or access '%s' on the Ansible Controller.", target))
		}
	}
	return k, nil
}

// runPlaybook runs the modelled playbook of the release.
func (r *run) runPlaybook() {
	switch r.ks.playbook {
	case "facts":
		if r.ks.atLeast("2.22.0") {
			r.playsFacts()
			return
		}
		r.playsBoilerplate()
		r.playsFacts()
	case "cluster":
		r.playsBoilerplate()
		r.playsFacts()
		r.playsCluster()
	case "scale":
		r.playsBoilerplate()
		r.playsFacts()
		r.playsScale()
	case "remove-node":
		r.playsRemoveNode()
	}
}

// playsBoilerplate is playbooks/boilerplate.yml (v2.25+; before,
// ansible_version.yml and legacy_groups.yml): the version check, the
// group mapping, the inventory checks, the bastion play.
func (r *run) playsBoilerplate() {
	r.playVersionCheck()
	if r.ks.atLeast("2.25.0") {
		r.playGroupMapping()
		r.playValidateInventory()
	} else {
		r.playLegacyGroups()
	}
	r.play("Install bastion ssh config", r.pattern("bastion[0]"), false)
}

// playVersionCheck is ansible_version.yml: the assert of
// minimal_ansible_version <= ansible_version.string <
// maximal_ansible_version, with the values the file on the server has.
// Before v2.25 the play runs on localhost (ansible_connection local);
// since, on all hosts, run_once.
func (r *run) playVersionCheck() {
	data, err := r.p.FS.ReadFile(r.ks.verFile)
	minV, maxV, ok := versionRange(data)
	if err != nil || !ok {
		return
	}
	hosts := []string{"localhost"}
	name := "Check ansible version"
	if r.ks.atLeast("2.25.0") {
		hosts = r.group("all")
	}
	if !r.ks.atLeast("2.22.0") {
		name = ""
	}
	have := r.core
	r.play(name, hosts, false,
		task{name: fmt.Sprintf("Check %s <= Ansible version < %s", minV, maxV), runOnce: true, fn: func(string) result {
			passed := compareVersions(have, minV) >= 0
			assertion := `ansible_version.string is version(minimal_ansible_version, ">=")`
			if passed {
				passed = compareVersions(have, maxV) < 0
				assertion = `ansible_version.string is version(maximal_ansible_version, "<")`
			}
			return assertResult(passed, assertion, fmt.Sprintf("Ansible must be between %s and %s exclusive - you have %s", minV, maxV, have))
		}},
		task{name: "Check that python netaddr is installed", runOnce: true, fn: func(string) result { return assertResult(true, "", "") }},
		task{name: "Check that jinja is not too old (install via pip)", runOnce: true, fn: func(string) result { return assertResult(true, "", "") }},
	)
}

// playGroupMapping is boilerplate.yml's "Define groups for legacy less
// structured inventories": group_by maps kube-master, kube-node, calico-rr
// and no-floating to the new names and, since v2.27.0, defines
// k8s_cluster as kube_node + kube_control_plane + calico_rr (commit
// 88b6f08e2).
func (r *run) playGroupMapping() {
	mappings := []struct {
		key  string
		olds []string
	}{
		{"kube_control_plane", []string{"kube-master"}},
		{"kube_node", []string{"kube-node"}},
		{"calico_rr", []string{"calico-rr"}},
		{"no_floating", []string{"no-floating"}},
	}
	if r.ks.atLeast("2.27.0") {
		mappings = append(mappings, struct {
			key  string
			olds []string
		}{"k8s_cluster", []string{"kube_node", "kube_control_plane", "calico_rr"}})
	}
	r.play("Define groups for legacy less structured inventories", r.group("all"), false,
		task{name: "Match needed groups by their old names or definition", fn: func(h string) result {
			res := okResult()
			for _, m := range mappings {
				var q []string
				for _, o := range m.olds {
					q = append(q, "'"+o+"'")
				}
				res.items = append(res.items, item{label: fmt.Sprintf("{'key': '%s', 'value': [%s]}", m.key, strings.Join(q, ", "))})
				for _, o := range m.olds {
					if slices.Contains(r.group(o), h) {
						r.inv.addChild("all", m.key)
						g := r.inv.group(m.key)
						if !slices.Contains(g.hosts, h) && !slices.Contains(r.inv.members(m.key), h) {
							g.hosts = append(g.hosts, h)
						}
					}
				}
			}
			return res
		}})
}

// playLegacyGroups is legacy_groups.yml (v2.16–v2.24): the same mapping
// of the old group names, without computing k8s_cluster. Its plays print
// their group_by results per host; the simulation prints the banners
// only.
func (r *run) playLegacyGroups() {
	r.playGroupMappingOld()
	if r.ks.atLeast("2.17.0") {
		r.playValidateInventory()
	}
}

func (r *run) playGroupMappingOld() {
	for _, m := range []struct{ name, key, old string }{
		{"Add kube-master nodes to kube_control_plane", "kube_control_plane", "kube-master"},
		{"Add kube-node nodes to kube_node", "kube_node", "kube-node"},
		{"Add calico-rr nodes to calico_rr", "calico_rr", "calico-rr"},
		{"Add no-floating nodes to no_floating", "no_floating", "no-floating"},
	} {
		hosts := r.group(m.old)
		r.play(m.name, hosts, false, task{name: "group_by", fn: func(h string) result {
			r.inv.addChild("all", m.key)
			g := r.inv.group(m.key)
			if !slices.Contains(g.hosts, h) {
				g.hosts = append(g.hosts, h)
			}
			return okResult()
		}})
	}
}

// playValidateInventory is "Check inventory settings" (role
// validate_inventory, roles/validate_inventory/tasks/main.yml): the
// checks of the inventory itself that matter to a generated inventory.
func (r *run) playValidateInventory() {
	const role = "validate_inventory : "
	r.play("Check inventory settings", r.group("all"), false,
		task{name: role + "Stop if kube_control_plane group is empty", runOnce: true, fn: func(h string) result {
			if boolean(str(r.hostVars(h), "ignore_assert_errors")) {
				return skipResult()
			}
			return assertResult(len(r.group("kube_control_plane")) > 0, "groups.get( 'kube_control_plane' )", "")
		}},
		task{name: role + "Stop if even number of etcd hosts", runOnce: true, fn: func(h string) result {
			if boolean(str(r.hostVars(h), "ignore_assert_errors")) {
				return skipResult()
			}
			n := len(r.group("etcd"))
			if _, ok := r.inv.groups["etcd"]; !ok {
				n = len(r.group("kube_control_plane"))
			}
			return assertResult(n%2 == 1, "groups.get('etcd', groups.kube_control_plane) | length is not divisibleby 2", "")
		}},
		r.networkRangeTask(role, "kube_service_addresses", "10.233.0.0/18"),
		r.networkRangeTask(role, "kube_pods_subnet", "10.233.64.0/18"),
	)
}

// networkRangeTask is "Check that VAR is a network range":
// ansible.utils.ipaddr('net') keeps a CIDR whose address is its network.
func (r *run) networkRangeTask(role, v, def string) task {
	return task{name: role + `Check that ` + v + ` is a network range`, runOnce: true, fn: func(h string) result {
		val := firstNonEmpty(str(r.hostVars(h), v), def)
		p, err := netip.ParsePrefix(val)
		ok := err == nil && p.Masked().Addr() == p.Addr()
		return assertResult(ok, v+" | ansible.utils.ipaddr('net')", fmt.Sprintf("%s = '%s' is not a valid network range", v, val))
	}}
}

// playsFacts is playbooks/facts.yml (facts.yml before v2.22): the
// bootstrap_os play, then fact gathering on k8s_cluster:etcd:calico_rr.
// Gathered facts go to the fact cache (kubespray's ansible.cfg: jsonfile
// in /tmp, one file per host).
func (r *run) playsFacts() {
	hosts := r.union("k8s_cluster", "etcd", "calico_rr")
	r.play("Bootstrap hosts for Ansible", hosts, true,
		task{name: "bootstrap_os : Fetch /etc/os-release", fn: func(h string) result {
			res, err := r.sh(h, "cat /etc/os-release", nil)
			if err != nil {
				return connResult(err)
			}
			if res.rc != 0 {
				return commandResult("cat /etc/os-release", res, r.now(), r.now())
			}
			return okResult()
		}})
	r.play("Gather facts", hosts, false,
		task{name: "Gather minimal facts", fn: r.gatherFacts},
		task{name: "Gather necessary facts (network)", fn: r.gatherFacts},
		task{name: "Gather necessary facts (hardware)", fn: r.gatherFacts},
	)
}

// gatherFacts is the setup module on host: the facts kubespray filters
// (ansible_default_ipv4, ansible_memtotal_mb, ...), stored in the cache.
func (r *run) gatherFacts(h string) result {
	res, err := r.sh(h, "hostname", nil)
	if err != nil {
		return connResult(err)
	}
	vars := r.hostVars(h)
	addr := firstNonEmpty(str(vars, "ansible_host"), h)
	facts := map[string]any{
		"ansible_hostname":             strings.TrimSpace(res.stdout),
		"ansible_default_ipv4":         map[string]any{"address": addr, "interface": "ens3"},
		"ansible_all_ipv4_addresses":   []any{addr},
		"ansible_memtotal_mb":          7948,
		"ansible_swaptotal_mb":         0,
		"ansible_distribution":         "Ubuntu",
		"ansible_distribution_version": "22.04",
		"ansible_service_mgr":          "systemd",
	}
	r.saveFacts(h, facts)
	return okResult()
}

// cached reports whether host has facts (cached or gathered this run).
func (r *run) cached(h string) bool {
	f := r.facts[h]
	if f == nil {
		return false
	}
	_, v4 := f["ansible_default_ipv4"]
	_, v6 := f["ansible_default_ipv6"]
	return v4 || v6
}

// sh runs a command on inventory host h, as root with --become.
func (r *run) sh(h, cmd string, stdin []byte) (cmdResult, error) {
	hc, err := r.connect(r.ctx, h)
	if err != nil {
		return cmdResult{}, err
	}
	hc.become = r.become
	return hc.exec(r.ctx, cmd, stdin)
}

// command runs a task's command and returns its result: changed, or
// failed with the command module's result.
func (r *run) command(h, cmd string, stdin []byte) (cmdResult, result, bool) {
	start := r.now()
	res, err := r.sh(h, cmd, stdin)
	if err != nil {
		return res, connResult(err), false
	}
	out := commandResult(cmd, res, start, r.now())
	return res, out, res.rc == 0
}

// writeFile is the copy/template module: the file gets content and mode
// when they differ (changed), as root with --become.
func (r *run) writeFile(h, file, content string, mode string) result {
	cur, err := r.sh(h, "cat "+file, nil)
	if err != nil {
		return connResult(err)
	}
	if cur.rc == 0 && cur.stdout == content {
		return okResult()
	}
	cmd := fmt.Sprintf("mkdir -p %s && cat > %s && chmod %s %s", path.Dir(file), file, mode, file)
	_, res, ok := r.command(h, cmd, []byte(content))
	if !ok {
		return res
	}
	return changedResult()
}

// machine is the machine of inventory host h (nil when none answers).
func (r *run) machine(h string) *ubuntu.Machine {
	addr := firstNonEmpty(str(r.hostVars(h), "ansible_host"), h)
	return r.env.Machine(addr)
}

// ip is kubespray's main_ip: ip, else the gathered default address.
func (r *run) ip(h string) string {
	v := r.hostVars(h)
	if ip := str(v, "ip"); ip != "" {
		return ip
	}
	if f, ok := r.facts[h]["ansible_default_ipv4"].(map[string]any); ok {
		return fmt.Sprint(f["address"])
	}
	return str(v, "ansible_host")
}

var hostnameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// preinstallTasks are kubernetes/preinstall's tasks the simulation
// carries (roles/kubernetes/preinstall/tasks/0040-verify-settings.yml,
// 0080-system-configurations.yml): the --limit fact-cache check (since
// v2.27.0, commit b0fb06054), the host name check, IP forwarding.
func (r *run) preinstallTasks() []task {
	const role = "kubernetes/preinstall : "
	var ts []task
	if r.ks.atLeast("2.27.0") {
		ts = append(ts, task{name: role + "Stop if any host not in '--limit' does not have a fact cache", runOnce: true, fn: func(h string) result {
			if !r.limited || boolean(str(r.hostVars(h), "ignore_assert_errors")) {
				return skipResult()
			}
			var missing []string
			for _, x := range r.group("k8s_cluster") {
				if !slices.Contains(r.limit, x) && !r.cached(x) {
					missing = append(missing, "'"+x+"'")
				}
			}
			return assertResult(len(missing) == 0, "uncached_hosts | intersect(excluded_hosts) == []",
				"Kubespray does not support '--limit' without a populated facts cache for the excluded hosts.\nPlease run the facts.yml playbook first without '--limit'.\nThe following excluded hosts are not cached: ["+strings.Join(missing, ", ")+"]\n")
		}})
	}
	ts = append(ts,
		task{name: role + "Stop if bad hostname", fn: func(h string) result {
			if boolean(str(r.hostVars(h), "ignore_assert_errors")) {
				return skipResult()
			}
			return assertResult(hostnameRE.MatchString(h), `inventory_hostname is match("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")`,
				"Hostname must consist of lower case alphanumeric characters, '.' or '-', and must start and end with an alphanumeric character")
		}},
		task{name: role + "Enable ip forwarding", fn: func(h string) result {
			// ansible.posix.sysctl: the value in sysctl_file_path
			// (/etc/sysctl.d/99-sysctl.conf), then sysctl -w.
			res, err := r.sh(h, "sysctl -n net.ipv4.ip_forward", nil)
			if err != nil {
				return connResult(err)
			}
			if strings.TrimSpace(res.stdout) == "1" {
				return okResult()
			}
			if _, out, ok := r.command(h, "mkdir -p /etc/sysctl.d && echo net.ipv4.ip_forward=1 >> /etc/sysctl.d/99-sysctl.conf && sysctl -w net.ipv4.ip_forward=1", nil); !ok {
				return out
			}
			return changedResult()
		}},
	)
	return ts
}

// containerdConfig is the part of kubespray's containerd config.toml
// (roles/container-engine/containerd/templates/config.toml.j2) the
// simulated containerd acts on: runc with the systemd cgroup driver.
const containerdConfig = `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
oom_score = 0

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
`

// engineTasks are container-engine/containerd and download: containerd
// configured and running, kubeadm, kubelet and kubectl installed.
// Kubespray downloads the binaries (roles/download) to /usr/local/bin;
// the simulation installs the machines' packages of the same programs
// (containerd from the Ubuntu archive, kubeadm, kubelet and kubectl from
// pkgs.k8s.io), so that dpkg shows them and their fakes run.
func (r *run) engineTasks() []task {
	return []task{
		{name: "container-engine/containerd : Containerd | Unpack containerd archive", fn: func(h string) result {
			return r.install(h, "containerd")
		}},
		{name: "container-engine/containerd : Containerd | Write containerd config file", fn: func(h string) result {
			res := r.writeFile(h, "/etc/containerd/config.toml", containerdConfig, "0640")
			if res.status == statusChanged {
				if _, out, ok := r.command(h, "systemctl restart containerd", nil); !ok {
					return out
				}
			}
			return res
		}},
		{name: "container-engine/containerd : Containerd | Ensure containerd is started and enabled", fn: func(h string) result {
			return r.service(h, "containerd")
		}},
		{name: "download : Download_file | Download item", fn: func(h string) result {
			v := r.kubeVersion(h)
			return r.install(h, "kubeadm="+v, "kubelet="+v, "kubectl="+v)
		}},
	}
}

// kubeVersion is the package version of Kubernetes the cluster runs:
// kube_version when the catalog has it, else the newest kubeadm.
func (r *run) kubeVersion(h string) string {
	m := r.machine(h)
	if m == nil {
		return ""
	}
	want := strings.TrimPrefix(str(r.hostVars(h), "kube_version"), "v")
	vs := m.Catalog().Versions("kubeadm")
	for _, p := range vs {
		if want != "" && strings.HasPrefix(p.Version, want+"-") {
			return p.Version
		}
	}
	if len(vs) == 0 {
		return ""
	}
	return vs[0].Version
}

// install installs packages on h's machine (changed when one was not
// installed in that version).
func (r *run) install(h string, pkgs ...string) result {
	if _, err := r.connect(r.ctx, h); err != nil {
		return connResult(err)
	}
	m := r.machine(h)
	if m == nil {
		return failResult("no machine answers for " + h)
	}
	var todo []string
	for _, p := range pkgs {
		name, ver, _ := strings.Cut(p, "=")
		if !m.Installed(name) || ver != "" && m.Version(name) != ver {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return okResult()
	}
	if err := m.InstallPackages(todo...); err != nil {
		return failResult(err.Error())
	}
	return changedResult()
}

// service is the service module with state started, enabled true.
func (r *run) service(h, unit string) result {
	res, err := r.sh(h, "systemctl is-active "+unit+" && systemctl is-enabled "+unit, nil)
	if err != nil {
		return connResult(err)
	}
	if res.rc == 0 {
		return okResult()
	}
	if _, out, ok := r.command(h, "systemctl enable --now "+unit, nil); !ok {
		return out
	}
	return changedResult()
}

// firstCP is the first kube_control_plane host.
func (r *run) firstCP() string {
	cps := r.group("kube_control_plane")
	if len(cps) == 0 {
		return ""
	}
	return cps[0]
}

// kubeadmConfig is kubespray's kubeadm-config.yaml for control plane h
// (roles/kubernetes/control-plane/templates/kubeadm-config.v1beta4.yaml.j2)
// reduced to what the simulated kubeadm reads: the node name is the
// inventory name, the pod and service networks and the certificate SANs
// come from the group_vars (supplementary_addresses_in_ssl_keys
// included). The control-plane endpoint is the first control plane's ip
// and kube_apiserver_port: the simulation has no nginx-proxy on the
// nodes (loadbalancer_apiserver_localhost).
func (r *run) kubeadmConfig(h string) string {
	v := r.hostVars(h)
	first := r.firstCP()
	sans := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost", "127.0.0.1"}
	for _, cp := range r.group("kube_control_plane") {
		sans = append(sans, cp, r.ip(cp))
	}
	sans = append(sans, list(v, "supplementary_addresses_in_ssl_keys")...)
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: %s\n  bindPort: 6443\nnodeRegistration:\n  name: %s\n  criSocket: unix:///var/run/containerd/containerd.sock\n", r.ip(h), h)
	fmt.Fprintf(&b, "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: cluster.local\nkubernetesVersion: v%s\ncontrolPlaneEndpoint: %s:6443\n", strings.Split(r.kubeVersion(h), "-")[0], r.ip(first))
	fmt.Fprintf(&b, "networking:\n  dnsDomain: cluster.local\n  serviceSubnet: %s\n  podSubnet: %s\n", firstNonEmpty(str(v, "kube_service_addresses"), "10.233.0.0/18"), firstNonEmpty(str(v, "kube_pods_subnet"), "10.233.64.0/18"))
	fmt.Fprintf(&b, "controllerManager:\n  extraArgs:\n  - name: node-cidr-mask-size-ipv4\n    value: \"%s\"\n", firstNonEmpty(str(v, "kube_network_node_prefix"), "24"))
	b.WriteString("apiServer:\n  certSANs:\n")
	for _, s := range dedupe(sans) {
		fmt.Fprintf(&b, "  - %q\n", s)
	}
	b.WriteString("---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n")
	return b.String()
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// joinConfig is kubeadm-client.conf (workers) or
// kubeadm-controlplane.yaml (control planes): token discovery at the
// first control plane, the CA pinned (caCertHashes from its ca.crt).
func (r *run) joinConfig(h string, controlPlane bool) string {
	first := r.firstCP()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: %s:6443\n    token: %s\n    caCertHashes:\n    - %s\n  tlsBootstrapToken: %s\n",
		r.ip(first), r.state["token"], r.state["cahash"], r.state["token"])
	fmt.Fprintf(&b, "nodeRegistration:\n  name: %s\n  criSocket: unix:///var/run/containerd/containerd.sock\n  kubeletExtraArgs:\n  - name: node-ip\n    value: %s\n", h, r.ip(h))
	if controlPlane {
		fmt.Fprintf(&b, "controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: %s\n    bindPort: 6443\n  certificateKey: %s\n", r.ip(h), r.state["certkey"])
	}
	return b.String()
}

const kubectl = "kubectl --kubeconfig /etc/kubernetes/admin.conf"

// joinPrep gets a join token, the CA hash and (for control planes) the
// certificate key from the first control plane, once per run.
func (r *run) joinPrep(controlPlane bool) *result {
	first := r.firstCP()
	if r.state["token"] == "" {
		res, out, ok := r.command(first, "kubeadm token create", nil)
		if !ok {
			return &out
		}
		r.state["token"] = strings.TrimSpace(res.stdout)
		ca, out, ok := r.command(first, "cat /etc/kubernetes/pki/ca.crt", nil)
		if !ok {
			return &out
		}
		r.state["cahash"] = kube.CACertHash([]byte(ca.stdout))
	}
	if controlPlane && r.state["certkey"] == "" {
		res, out, ok := r.command(first, "kubeadm init phase upload-certs --upload-certs --config /etc/kubernetes/kubeadm-config.yaml", nil)
		if !ok {
			return &out
		}
		ls := strings.Split(strings.TrimSpace(res.stdout), "\n")
		r.state["certkey"] = strings.TrimSpace(ls[len(ls)-1])
	}
	return nil
}

// joined reports whether h is already a cluster member (kubelet.conf
// exists: roles/kubernetes/kubeadm "Check if kubelet.conf exists").
func (r *run) joined(h string) (bool, error) {
	res, err := r.sh(h, "test -f /etc/kubernetes/kubelet.conf", nil)
	if err != nil {
		return false, err
	}
	return res.rc == 0, nil
}

// playsCluster are cluster.yml's plays after the facts.
func (r *run) playsCluster() {
	prep := append(r.preinstallTasks(), r.engineTasks()...)
	r.play("Prepare for etcd install", r.union("k8s_cluster", "etcd"), true, prep...)
	r.play("Install Kubernetes nodes", r.group("k8s_cluster"), true,
		task{name: "kubernetes/node : Enable kubelet", fn: func(h string) result {
			res, err := r.sh(h, "systemctl is-enabled kubelet", nil)
			if err != nil {
				return connResult(err)
			}
			if res.rc == 0 {
				return okResult()
			}
			if _, out, ok := r.command(h, "systemctl enable kubelet", nil); !ok {
				return out
			}
			return changedResult()
		}})
	first := r.firstCP()
	r.play("Install the control plane", r.group("kube_control_plane"), true,
		task{name: "kubernetes/control-plane : Kubeadm | Create kubeadm config", fn: func(h string) result {
			return r.writeFile(h, "/etc/kubernetes/kubeadm-config.yaml", r.kubeadmConfig(h), "0640")
		}},
		task{name: "kubernetes/control-plane : Kubeadm | Initialize first control plane node", fn: func(h string) result {
			if h != first {
				return skipResult()
			}
			if ok, err := r.joined(h); err != nil {
				return connResult(err)
			} else if ok {
				return okResult()
			}
			_, out, _ := r.command(h, "kubeadm init --config /etc/kubernetes/kubeadm-config.yaml --upload-certs", nil)
			return out
		}},
		task{name: "kubernetes/control-plane : Joining control plane node to the cluster.", fn: func(h string) result {
			if h == first {
				return skipResult()
			}
			if ok, err := r.joined(h); err != nil {
				return connResult(err)
			} else if ok {
				return okResult()
			}
			if out := r.joinPrep(true); out != nil {
				return *out
			}
			if res := r.writeFile(h, "/etc/kubernetes/kubeadm-controlplane.yaml", r.joinConfig(h, true), "0640"); res.status == statusFailed || res.status == statusUnreachable {
				return res
			}
			_, out, _ := r.command(h, "kubeadm join --config /etc/kubernetes/kubeadm-controlplane.yaml", nil)
			return out
		}},
		task{name: "kubernetes/client : Copy admin kubeconfig to root user home", fn: func(h string) result {
			res, out, ok := r.command(h, "cat /etc/kubernetes/admin.conf", nil)
			if !ok {
				return out
			}
			return r.writeFile(h, "/root/.kube/config", res.stdout, "0600")
		}},
	)
	r.playsJoinWorkers("Invoke kubeadm and install a CNI", r.group("k8s_cluster"))
	r.play("Install Calico Route Reflector", r.group("calico_rr"), true)
	r.play("Patch Kubernetes for Windows", r.pattern("kube_control_plane[0]"), true,
		task{name: "win_nodes/kubernetes_patch : Ensure that user manifests directory exists", fn: func(string) result { return skipResult() }})
	r.play("Install Kubernetes apps", r.group("kube_control_plane"), true,
		task{name: "kubernetes-apps/network_plugin/calico : Start Calico resources", runOnce: true, fn: r.applyCalico})
	r.play("Apply resolv.conf changes now that cluster DNS is up", r.group("k8s_cluster"), true,
		task{name: "kubernetes/preinstall : Configure dhclient hooks for resolv.conf (non-RH)", fn: func(string) result { return skipResult() }})
}

// playsJoinWorkers is "Invoke kubeadm and install a CNI" (cluster.yml)
// and the same roles in scale.yml: kubernetes/kubeadm on the hosts that
// are not control planes.
func (r *run) playsJoinWorkers(name string, hosts []string) {
	cps := r.group("kube_control_plane")
	r.play(name, hosts, true,
		task{name: "kubernetes/kubeadm : Create kubeadm client config", fn: func(h string) result {
			if slices.Contains(cps, h) {
				return skipResult()
			}
			if ok, err := r.joined(h); err != nil {
				return connResult(err)
			} else if ok {
				return okResult()
			}
			if out := r.joinPrep(false); out != nil {
				return *out
			}
			return r.writeFile(h, "/etc/kubernetes/kubeadm-client.conf", r.joinConfig(h, false), "0640")
		}},
		task{name: "kubernetes/kubeadm : Join to cluster if needed", fn: func(h string) result {
			if slices.Contains(cps, h) {
				return skipResult()
			}
			if ok, err := r.joined(h); err != nil {
				return connResult(err)
			} else if ok {
				return skipResult()
			}
			_, out, _ := r.command(h, "kubeadm join --config /etc/kubernetes/kubeadm-client.conf", nil)
			return out
		}},
	)
}

// applyCalico applies Calico's manifests on the first control plane
// (kubernetes-apps/network_plugin/calico: "Start Calico resources", the
// kube module's apply): calico-node's IP pool is kubeadm's podSubnet,
// kube_pods_subnet, as kubespray's calico_pool_cidr defaults to it.
func (r *run) applyCalico(h string) result {
	const file = "/etc/kubernetes/calico.yml"
	if res := r.writeFile(h, file, string(containers.CalicoManifest()), "0644"); res.status == statusFailed || res.status == statusUnreachable {
		return res
	}
	res, out, ok := r.command(h, kubectl+" apply -f "+file, nil)
	if !ok {
		return out
	}
	return statusOf(strings.Contains(res.stdout, " created") || strings.Contains(res.stdout, " configured"))
}

// playsScale are scale.yml's plays after the facts (playbooks/scale.yml):
// the kube_node hosts get the runtime and the packages, then join.
func (r *run) playsScale() {
	workers := r.group("kube_node")
	r.play("Download images to ansible host cache via first kube_control_plane node", r.pattern("kube_control_plane[0]"), true,
		task{name: "download : Prep_download | Set a few facts", fn: func(string) result { return skipResult() }})
	prep := append(r.preinstallTasks(), r.engineTasks()...)
	r.play("Target only workers to get kubelet installed and checking in on any new nodes(engine)", workers, true, prep...)
	r.play("Target only workers to get kubelet installed and checking in on any new nodes(node)", workers, true,
		task{name: "kubernetes/node : Enable kubelet", fn: func(h string) result {
			res, err := r.sh(h, "systemctl is-enabled kubelet", nil)
			if err != nil {
				return connResult(err)
			}
			if res.rc == 0 {
				return okResult()
			}
			if _, out, ok := r.command(h, "systemctl enable kubelet", nil); !ok {
				return out
			}
			return changedResult()
		}})
	first := r.firstCP()
	var firstHosts []string
	if first != "" {
		firstHosts = []string{first}
	}
	r.play("Upload control plane certs and retrieve encryption key", firstHosts, false,
		task{name: "Upload control plane certificates", fn: func(h string) result {
			res, out, ok := r.command(h, "kubeadm init phase upload-certs --upload-certs --config /etc/kubernetes/kubeadm-config.yaml", nil)
			if !ok {
				return out
			}
			ls := strings.Split(strings.TrimSpace(res.stdout), "\n")
			r.state["certkey"] = strings.TrimSpace(ls[len(ls)-1])
			return okResult() // changed_when: false
		}})
	r.playsJoinWorkers("Target only workers to get kubelet installed and checking in on any new nodes(network)", workers)
	r.play("Apply resolv.conf changes now that cluster DNS is up", r.group("k8s_cluster"), true,
		task{name: "kubernetes/preinstall : Configure dhclient hooks for resolv.conf (non-RH)", fn: func(string) result { return skipResult() }})
}

// playsRemoveNode is remove-node.yml (playbooks/remove_node.yml since
// v2.22.0). See the package documentation for the per-release semantics
// of `node`, the confirmation and reset_nodes.
func (r *run) playsRemoveNode() {
	_, nodeSet := r.extra["node"]
	nodeVal := str(r.extra, "node")
	if r.ks.atLeast("2.28.0") {
		// PR #12085: the localhost assert.
		r.play("Validate nodes for removal", []string{"localhost"}, false,
			task{name: "Assert that nodes are specified for removal", fn: func(string) result {
				if !nodeSet {
					return assertResult(false, "node is defined", "No nodes specified for removal. The `node` variable must be set explicitly.")
				}
				return assertResult(nodeVal != "", "node | length > 0", "No nodes specified for removal. The `node` variable must be set explicitly.")
			}})
	}
	r.playsBoilerplate()
	target := nodeVal
	if !nodeSet {
		target = "etcd:k8s_cluster:calico_rr" // node | default(...) before v2.28.0
		if r.ks.atLeast("2.28.0") {
			target = "this_is_unreachable"
		}
	}
	hosts, unmatched := r.inv.hostPattern(target)
	for _, u := range unmatched {
		// lib/ansible/inventory/manager.py: "Could not match supplied
		// host pattern, ignoring: %s".
		r.disp.warning("Could not match supplied host pattern, ignoring: " + u)
	}
	resetNodes := true
	if v, ok := r.extra["reset_nodes"]; ok {
		resetNodes = boolean(fmt.Sprint(v))
	}
	ungraceful := boolean(str(r.extra, "allow_ungraceful_removal"))
	r.confirmPlay(hosts)
	if resetNodes {
		r.playsFacts()
	} else {
		r.play("Bootstrap hosts for Ansible", r.union("k8s_cluster", "etcd", "calico_rr"), true)
		r.play("Gather facts", r.union("k8s_cluster", "etcd", "calico_rr"), false)
	}
	first := r.firstCP()
	delegate := func() string { return first }
	var nodes []string
	r.play("Reset node", hosts, false,
		task{name: "Gather information about installed services", fn: func(h string) result {
			if !resetNodes {
				return skipResult()
			}
			if _, err := r.connect(r.ctx, h); err != nil {
				return connResult(err)
			}
			return okResult()
		}},
		task{name: "remove_node/pre_remove : Remove-node | List nodes", runOnce: true, delegate: delegate, fn: func(string) result {
			res, out, ok := r.command(first, kubectl+" get nodes -o name", nil)
			if !ok {
				return out
			}
			nodes = nil
			for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
				nodes = append(nodes, strings.TrimPrefix(l, "node/"))
			}
			return okResult() // changed_when: false
		}},
		task{name: "remove_node/pre_remove : Remove-node | Drain node except daemonsets resource", delegate: delegate, fn: func(h string) result {
			if !slices.Contains(nodes, h) {
				return skipResult()
			}
			_, out, ok := r.command(first, kubectl+" drain --force --ignore-daemonsets --grace-period 300 --timeout 360s --delete-emptydir-data "+h, nil)
			if !ok && ungraceful {
				out.status = statusChanged // failed_when: rc != 0 and not allow_ungraceful_removal
				delete(out.data, "msg")
			}
			return out
		}},
		task{name: "reset : Reset | delete some files and directories", fn: func(h string) result {
			if !resetNodes {
				return skipResult()
			}
			_, out, _ := r.command(h, "kubeadm reset --force", nil)
			return out
		}},
	)
	r.play("Post node removal", hosts, false,
		task{name: "remove-node/post-remove : Remove-node | Delete node", delegate: delegate, fn: func(h string) result {
			if !slices.Contains(nodes, h) || !slices.Contains(r.group("k8s_cluster"), h) {
				return skipResult()
			}
			_, out, _ := r.command(first, kubectl+" delete node "+h, nil)
			return out
		}})
}

// confirmPlay is the confirmation of remove-node.yml: since v2.17.0
// "Confirm node removal" pauses unless skip_confirmation (without a
// terminal pause does not wait: "Not waiting for response to prompt as
// stdin is not interactive", user_input ”) and fails "Delete nodes
// confirmation failed" unless the answer is yes; v2.16.0 prompts
// delete_nodes_confirmation through vars_prompt (skipped when given as
// an extra var; without a terminal the default "no").
func (r *run) confirmPlay(hosts []string) {
	if !r.ks.atLeast("2.17.0") {
		answer := "no"
		if v, ok := r.extra["delete_nodes_confirmation"]; ok {
			answer = fmt.Sprint(v)
		}
		r.play("", hosts, false, task{name: "check confirmation", fn: func(string) result {
			if answer != "yes" {
				return failResult("Delete nodes confirmation failed")
			}
			return skipResult()
		}})
		return
	}
	skip := boolean(str(r.extra, "skip_confirmation"))
	input, answered := "", false
	r.play("Confirm node removal", hosts, false,
		task{name: "Confirm Execution", runOnce: true, fn: func(string) result {
			if skip {
				return skipResult()
			}
			r.disp.warning("Not waiting for response to prompt as stdin is not interactive")
			answered = true
			res := okResult()
			return res
		}},
		task{name: "Fail if user does not confirm deletion", fn: func(string) result {
			if answered && input != "yes" {
				return failResult("Delete nodes confirmation failed")
			}
			return skipResult()
		}})
}

func exists(p *sshtest.Process, name string) bool {
	_, err := p.FS.Stat(name)
	return err == nil
}

package kubeadm_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// problemLines returns err's problems as "path: message" lines; nil for
// a nil err. Any other error fails the test.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a *lcm.ParamsError", err, err)
	}
	return pe.Lines()
}

func samplePackage() *lcm.Package { return lcm.NewPackage(samples.VNFPackage()) }

// decodeCluster decodes obj as k8s_cluster_installation_param into the
// kubeadm part alone, against the sample package.
func decodeCluster(t *testing.T, obj string) (kubeadm.ClusterParams, []string) {
	t.Helper()
	var p kubeadm.ClusterParams
	err := lcm.DecodeParams(json.RawMessage(`{"k8s_cluster_installation_param": `+obj+`}`),
		lcm.DecodeOptions{Package: samplePackage()}, lcm.Param(kubeadm.ClusterParamKey, &p).Required())
	return p, problemLines(t, err)
}

// cluster is k8s_cluster_installation_param as the specs' samples have it,
// with the keys of the other packages kept as they are.
type cluster struct {
	kubeadm.ClusterParams
	PrivateRegistryConnectionInfo json.RawMessage `json:"private_registry_connection_info"`
	StorageServer                 json.RawMessage `json:"storage_server"`
	PVRegistrationParams          json.RawMessage `json:"pv_registration_params"`
	Ansible                       json.RawMessage `json:"ansible"`
	ExternalLBParam               json.RawMessage `json:"external_lb_param"`
}

func decodeSample(t *testing.T, name string, edits map[string]any) (cluster, []string) {
	t.Helper()
	body, err := samples.Request(name)
	if err != nil {
		t.Fatal(err)
	}
	if edits != nil {
		if body, err = samples.Patch(body, edits); err != nil {
			t.Fatal(err)
		}
	}
	params, err := samples.AdditionalParams(body)
	if err != nil {
		t.Fatal(err)
	}
	var c cluster
	err = lcm.DecodeParams(params, lcm.DecodeOptions{Package: samplePackage()},
		lcm.Param(kubeadm.ClusterParamKey, &c).Required())
	return c, problemLines(t, err)
}

const k8s = "additionalParams.k8s_cluster_installation_param."

// workingProxy replaces the samples' placeholder proxy URLs.
var workingProxy = map[string]any{
	k8s + "proxy.http_proxy":  "http://user1:password1@proxy.example.com:3128",
	k8s + "proxy.https_proxy": "http://user2:password2@proxy.example.com:3128",
}

func TestSpecSamplesWithPlaceholdersFailOnThem(t *testing.T) {
	// What this package says about each placeholder of the samples; the
	// ansible ones are kubespray's.
	messages := map[string]string{
		"script_path":       "must not be empty: leave the key out for none",
		"proxy.http_proxy":  "has a port that is not a number from 1 to 65535",
		"proxy.https_proxy": "has a port that is not a number from 1 to 65535",
	}
	for _, name := range []string{samples.InstantiateCIRCluster, samples.InstantiatePVCluster, samples.InstantiateKubespray} {
		t.Run(name, func(t *testing.T) {
			_, got := decodeSample(t, name, nil)
			var want []string
			for _, p := range samples.Placeholders(name) {
				key := strings.TrimPrefix(p, k8s)
				if strings.HasPrefix(key, "ansible.") {
					continue
				}
				if messages[key] == "" {
					t.Fatalf("no expected message for placeholder %s", p)
				}
				want = append(want, "k8s_cluster_installation_param."+key+": "+messages[key])
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, line := range got {
				if strings.Contains(line, "password") || strings.Contains(line, "host1") {
					t.Errorf("%q quotes the proxy URL", line)
				}
			}
		})
	}
}

func TestSpecSamplesDecodeWithAWorkingProxy(t *testing.T) {
	t.Run("cir", func(t *testing.T) {
		c, problems := decodeSample(t, samples.InstantiateCIRCluster, workingProxy)
		if problems != nil {
			t.Fatal(problems)
		}
		m := c.MasterNode
		if c.ScriptPath != "Scripts/install_k8s_cluster.sh" || c.VimName != "kubernetes_vim" ||
			m.AspectID != "master_instance" || m.SSHCPName != "masterNode_CP1" || m.NICCPName != "masterNode_CP1" ||
			m.Username != "ubuntu" || m.Password.Reveal() != "ubuntu" || m.ClusterCPName != "masterNode_CP1" ||
			m.PodCIDR != netip.MustParsePrefix("192.168.3.0/24") || m.ClusterCIDR != netip.MustParsePrefix("10.199.187.0/24") {
			t.Errorf("master_node = %+v", m)
		}
		if w := c.WorkerNode; w == nil || w.AspectID != "worker_instance" || w.SSHCPName != "workerNode_CP2" ||
			w.Username != "ubuntu" || w.PodCIDR.IsValid() || w.ClusterCIDR.IsValid() {
			t.Errorf("worker_node = %+v", w)
		}
		px := c.Proxy
		if px == nil || px.HTTPProxy.Reveal() != "http://user1:password1@proxy.example.com:3128" ||
			px.NoProxy != "192.168.246.0/24,10.0.0.1,registry.example.com" ||
			px.K8sNodeCIDR != netip.MustParsePrefix("192.168.0.0/24") {
			t.Errorf("proxy = %+v", px)
		}
		if c.KubernetesVersion != kubeadm.DefaultKubernetesVersion || c.Drain() != kubeadm.DefaultDrainTimeout || c.DrainTimeout != 300 {
			t.Errorf("defaults: version %q, drain %v", c.KubernetesVersion, c.Drain())
		}
		if len(c.PrivateRegistryConnectionInfo) == 0 {
			t.Error("the registry part was not kept")
		}
		groups := c.Groups()
		want := []heat.Group{
			{Role: lcm.RoleMaster, AspectID: "master_instance", SSHCP: "masterNode_CP1", NICCP: "masterNode_CP1"},
			{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP2", NICCP: "workerNode_CP2"},
		}
		if len(groups) != 2 || groups[0] != want[0] || groups[1] != want[1] {
			t.Errorf("Groups = %+v", groups)
		}
	})
	t.Run("pv: host bits cleared", func(t *testing.T) {
		c, problems := decodeSample(t, samples.InstantiatePVCluster, workingProxy)
		if problems != nil {
			t.Fatal(problems)
		}
		if got := c.MasterNode.PodCIDR; got != netip.MustParsePrefix("192.168.0.0/16") {
			t.Errorf("pod_cidr 192.168.3.0/16 decoded as %v, want 192.168.0.0/16", got)
		}
		if got := c.Proxy.K8sNodeCIDR; got != netip.MustParsePrefix("10.10.0.0/24") {
			t.Errorf("k8s_node_cidr = %v", got)
		}
	})
	t.Run("kubespray", func(t *testing.T) {
		edits := map[string]any{k8s + "script_path": nil}
		for k, v := range workingProxy {
			edits[k] = v
		}
		if _, problems := decodeSample(t, samples.InstantiateKubespray, edits); problems != nil {
			t.Fatal(problems)
		}
	})
}

// base is a valid k8s_cluster_installation_param with every key.
const base = `{
	"script_path": "./Scripts/install_k8s_cluster.sh",
	"vim_name": "vim",
	"master_node": {"aspect_id": "master_instance", "ssh_cp_name": "m_CP1", "nic_cp_name": "m_CP2",
		"username": "ubuntu", "password": "pw", "pod_cidr": "10.244.0.0/16", "cluster_cidr": "10.96.0.0/12",
		"cluster_cp_name": "vip_CP", "cluster_fip_name": "vip_FIP"},
	"worker_node": {"aspect_id": "worker_instance", "ssh_cp_name": "w_CP1", "username": "ubuntu", "password": "pw"},
	"proxy": {"http_proxy": "http://proxy:3128", "https_proxy": "http://proxy:3128", "no_proxy": "localhost", "k8s_node_cidr": "172.16.0.0/24"},
	"helm_installation_script_path": "Scripts/install_k8s_cluster.sh",
	"kubernetes_version": "v1.36.3",
	"cni_manifest_path": "Files/kubernetes/nfs-pv1.yaml",
	"drain_timeout": "120"
}`

// with returns base with the JSON values at the dotted keys replaced (a
// nil value removes the key).
func with(t *testing.T, edits map[string]any) string {
	t.Helper()
	full := map[string]any{}
	for k, v := range edits {
		full["p."+k] = v
	}
	out, err := samples.Patch([]byte(`{"p": `+base+`}`), full)
	if err != nil {
		t.Fatal(err)
	}
	var wrapper map[string]json.RawMessage
	if err := json.Unmarshal(out, &wrapper); err != nil {
		t.Fatal(err)
	}
	return string(wrapper["p"])
}

func TestClusterParamsValid(t *testing.T) {
	p, problems := decodeCluster(t, base)
	if problems != nil {
		t.Fatal(problems)
	}
	if p.ScriptPath != "Scripts/install_k8s_cluster.sh" {
		t.Errorf("script_path = %q, want the canonical package path", p.ScriptPath)
	}
	if p.KubernetesVersion != "1.36.3" || p.KubernetesVersion.Minor() != "1.36" || !p.KubernetesVersion.IsPatch() {
		t.Errorf("kubernetes_version = %q (minor %q)", p.KubernetesVersion, p.KubernetesVersion.Minor())
	}
	if p.Drain() != 2*time.Minute {
		t.Errorf("Drain = %v", p.Drain())
	}
	if p.VimNameFor("id") != "vim" {
		t.Errorf("VimNameFor = %q", p.VimNameFor("id"))
	}
}

func TestClusterParamsDefaults(t *testing.T) {
	p, problems := decodeCluster(t, `{"master_node": {"ssh_cp_name": "m", "username": "u", "password": "p"}}`)
	if problems != nil {
		t.Fatal(problems)
	}
	m := p.MasterNode
	if m.PodCIDR.String() != kubeadm.DefaultPodCIDR || m.ClusterCIDR.String() != kubeadm.DefaultClusterCIDR {
		t.Errorf("CIDRs = %v, %v", m.PodCIDR, m.ClusterCIDR)
	}
	if p.VimNameFor("3f6a") != "kubernetes_vim_3f6a" {
		t.Errorf("VimNameFor = %q", p.VimNameFor("3f6a"))
	}
	if p.KubernetesVersion != "1.36" || p.KubernetesVersion.IsPatch() || p.Drain() != 5*time.Minute {
		t.Errorf("version %q, drain %v", p.KubernetesVersion, p.Drain())
	}
	if p.WorkerNode != nil || p.Proxy != nil || p.ScriptPath != "" {
		t.Errorf("absent keys decoded as %+v", p)
	}
	if g := p.Groups(); len(g) != 1 || g[0].Role != lcm.RoleMaster || g[0].AspectID != "" {
		t.Errorf("Groups = %+v", g)
	}
}

func TestClusterParamsNormalises(t *testing.T) {
	p, problems := decodeCluster(t, with(t, map[string]any{
		"master_node.pod_cidr":     "10.244.7.9/16",
		"master_node.cluster_cidr": "10.96.1.1/12",
		"proxy.k8s_node_cidr":      "172.16.0.77/24",
		"kubernetes_version":       "v1.36",
		"drain_timeout":            0,
	}))
	if problems != nil {
		t.Fatal(problems)
	}
	if p.MasterNode.PodCIDR.String() != "10.244.0.0/16" || p.MasterNode.ClusterCIDR.String() != "10.96.0.0/12" ||
		p.Proxy.K8sNodeCIDR.String() != "172.16.0.0/24" {
		t.Errorf("CIDRs %v %v %v", p.MasterNode.PodCIDR, p.MasterNode.ClusterCIDR, p.Proxy.K8sNodeCIDR)
	}
	if p.KubernetesVersion != "1.36" || p.DrainTimeout != 300 {
		t.Errorf("version %q, drain_timeout %d", p.KubernetesVersion, p.DrainTimeout)
	}
}

func TestClusterParamsFieldErrors(t *testing.T) {
	const at = "k8s_cluster_installation_param."
	for _, tt := range []struct {
		name  string
		edits map[string]any
		want  []string
	}{
		{"missing master_node", map[string]any{"master_node": nil}, []string{at + "master_node: is required"}},
		{"missing ssh_cp_name", map[string]any{"master_node.ssh_cp_name": nil}, []string{at + "master_node.ssh_cp_name: is required"}},
		{"empty username", map[string]any{"worker_node.username": ""}, []string{at + "worker_node.username: must not be empty"}},
		{"missing password", map[string]any{"worker_node.password": nil}, []string{at + "worker_node.password: is required"}},
		{"password not a string", map[string]any{"master_node.password": 1234}, []string{at + "master_node.password: expected a string, got a number"}},
		{"bad username", map[string]any{"master_node.username": "-root"}, []string{at + `master_node.username: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "-root"`}},
		{"heat name", map[string]any{"master_node.aspect_id": "a/b"}, []string{at + `master_node.aspect_id: "a/b" must not contain "/": Heat resource names cannot`}},
		{"not a CIDR", map[string]any{"master_node.pod_cidr": "10.244.0.0"}, []string{at + `master_node.pod_cidr: netip.ParsePrefix("10.244.0.0"): no '/'`}},
		{"bad prefix length", map[string]any{"proxy.k8s_node_cidr": "10.0.0.0/33"}, []string{at + `proxy.k8s_node_cidr: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`}},
		{"pod overlaps service", map[string]any{"master_node.pod_cidr": "10.96.0.0/16"}, []string{at + "master_node.cluster_cidr: 10.96.0.0/12 (the default) overlaps master_node.pod_cidr 10.96.0.0/16: the pod, Service and node networks must be disjoint"}},
		{"default pod overlaps node", map[string]any{"master_node.pod_cidr": nil, "proxy.k8s_node_cidr": "192.168.10.0/24"}, []string{at + "master_node.pod_cidr: 192.168.0.0/16 (the default) overlaps proxy.k8s_node_cidr 192.168.10.0/24: the pod, Service and node networks must be disjoint"}},
		{"service overlaps node", map[string]any{"master_node.cluster_cidr": "172.16.0.0/24"}, []string{at + "master_node.cluster_cidr: 172.16.0.0/24 overlaps proxy.k8s_node_cidr 172.16.0.0/24: the pod, Service and node networks must be disjoint"}},
		{"service too large", map[string]any{"master_node.cluster_cidr": "10.0.0.0/11"}, []string{at + "master_node.cluster_cidr: 10.0.0.0/11 is too large: kubeadm takes a Service network of at most 2^20 addresses (a /12)"}},
		{"service too small", map[string]any{"master_node.cluster_cidr": "10.96.0.0/29"}, []string{at + "master_node.cluster_cidr: 10.96.0.0/29 is too small: kubeadm needs at least 10 Service addresses (a /28)"}},
		{"pod too small", map[string]any{"master_node.pod_cidr": "10.244.0.0/25"}, []string{at + "master_node.pod_cidr: 10.244.0.0/25 is too small: kubeadm gives every node a /24 of the pod network"}},
		{"pod too large", map[string]any{"master_node.pod_cidr": "10.0.0.0/7"}, []string{
			at + "master_node.pod_cidr: 10.0.0.0/7 is too large: kubeadm takes a pod network of at most 2^16 node subnets (a /8)",
			at + "master_node.cluster_cidr: 10.96.0.0/12 (the default) overlaps master_node.pod_cidr 10.0.0.0/7: the pod, Service and node networks must be disjoint",
		}},
		{"cidrs on worker_node", map[string]any{"worker_node.pod_cidr": "10.1.0.0/16", "worker_node.cluster_cidr": "10.2.0.0/16", "worker_node.cluster_cp_name": "x", "worker_node.cluster_fip_name": "y"}, []string{
			at + "worker_node.pod_cidr: is a master_node key: the cluster has one pod network, one Service network and one API address, given with its masters",
			at + "worker_node.cluster_cidr: is a master_node key: the cluster has one pod network, one Service network and one API address, given with its masters",
			at + "worker_node.cluster_cp_name: is a master_node key: the cluster has one pod network, one Service network and one API address, given with its masters",
			at + "worker_node.cluster_fip_name: is a master_node key: the cluster has one pod network, one Service network and one API address, given with its masters",
		}},
		{"placeholder proxy", map[string]any{"proxy.http_proxy": "http://user1:password1@host1:port1"}, []string{at + "proxy.http_proxy: has a port that is not a number from 1 to 65535"}},
		{"proxy without URL", map[string]any{"proxy.http_proxy": nil, "proxy.https_proxy": nil}, []string{at + "proxy: needs http_proxy or https_proxy"}},
		{"bad no_proxy", map[string]any{"proxy.no_proxy": "a b"}, []string{at + `proxy.no_proxy: entry 1 ("a b") must not hold quotes, backslashes, '$', '` + "`" + `', white space or control characters`}},
		{"script_path not in package", map[string]any{"script_path": "Scripts/missing.sh"}, []string{at + `script_path: "Scripts/missing.sh" does not exist in the VNF package`}},
		{"helm path escapes", map[string]any{"helm_installation_script_path": "../etc/passwd"}, []string{at + `helm_installation_script_path: invalid VNF package path "../etc/passwd": it leaves the package root; it must be a relative path inside the VNF package, like Files/images/registry.tar`}},
		{"cni path a directory", map[string]any{"cni_manifest_path": "Files/kubernetes"}, []string{at + `cni_manifest_path: "Files/kubernetes" is a directory in the VNF package, not a file`}},
		{"vim_name control", map[string]any{"vim_name": "a\nb"}, []string{at + `vim_name: must not contain control characters, got "a\nb"`}},
		{"vim_name too long", map[string]any{"vim_name": strings.Repeat("v", 256)}, []string{at + "vim_name: is 256 bytes long; the limit is 255"}},
		{"vim_name blank", map[string]any{"vim_name": "   "}, []string{at + `vim_name: must not be blank: it is the VIM connection's ID, got "   "`}},
		{"vim_name bidi", map[string]any{"vim_name": "vim\u202egnp.exe"}, []string{at + `vim_name: must not contain invisible formatting characters (bidirectional controls, zero-width characters), got "vim\u202egnp.exe"`}},
		{"vim_name zero-width", map[string]any{"vim_name": "kubernetes\u200b_vim"}, []string{at + `vim_name: must not contain invisible formatting characters (bidirectional controls, zero-width characters), got "kubernetes\u200b_vim"`}},
		{"password line break", map[string]any{"master_node.password": "pw\nroot"}, []string{at + "master_node.password: must not contain a line break or NUL: sudo and SSH read it as one line"}},
		{"worker password CR", map[string]any{"worker_node.password": "pw\r"}, []string{at + "worker_node.password: must not contain a line break or NUL: sudo and SSH read it as one line"}},
		{"multicast pod network", map[string]any{"master_node.pod_cidr": "224.0.0.0/16"}, []string{at + "master_node.pod_cidr: 224.0.0.0/16 overlaps the multicast network 224.0.0.0/4: it cannot hold pod addresses"}},
		{"unspecified service network", map[string]any{"master_node.cluster_cidr": "0.0.0.0/24"}, []string{at + "master_node.cluster_cidr: 0.0.0.0/24 overlaps 0.0.0.0/8, the unspecified (\"this network\") addresses: it cannot hold Service addresses"}},
		{"unspecified node network", map[string]any{"proxy.k8s_node_cidr": "0.0.0.0/16"}, []string{at + "proxy.k8s_node_cidr: 0.0.0.0/16 overlaps 0.0.0.0/8, the unspecified (\"this network\") addresses: it cannot hold node addresses"}},
		{"version form", map[string]any{"kubernetes_version": "1.36.x"}, []string{at + `kubernetes_version: must be a Kubernetes version like "1.36" or "1.36.3", got "1.36.x"`}},
		{"version leading zero", map[string]any{"kubernetes_version": "1.036"}, []string{at + `kubernetes_version: must be a Kubernetes version like "1.36" or "1.36.3", got "1.036"`}},
		{"version too old", map[string]any{"kubernetes_version": "1.23.4"}, []string{at + `kubernetes_version: must be 1.24 or later (pkgs.k8s.io has no older packages), got "1.23.4"`}},
		{"version number", map[string]any{"kubernetes_version": 1.36}, []string{at + "kubernetes_version: expected a string, got a number"}},
		{"drain negative", map[string]any{"drain_timeout": -1}, []string{at + "drain_timeout: must be a number of seconds from 1 to 86400, got -1"}},
		{"drain too long", map[string]any{"drain_timeout": "86401"}, []string{at + "drain_timeout: must be a number of seconds from 1 to 86400, got 86401"}},
		{"unknown key", map[string]any{"worker_node.pasword": "x"}, []string{at + `worker_node.pasword: unknown key (did you mean "password"?)`}},
		{"other packages' keys", map[string]any{"storage_server": map[string]any{}}, []string{at + "storage_server: unknown key"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, got := decodeCluster(t, with(t, tt.edits))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestClusterParamsIPv6(t *testing.T) {
	p, problems := decodeCluster(t, with(t, map[string]any{
		"master_node.pod_cidr":     "fd00:10:244::/56",
		"master_node.cluster_cidr": "fd00:10:96::/112",
		"proxy.k8s_node_cidr":      "fd00:1::/64",
	}))
	if problems != nil {
		t.Fatal(problems)
	}
	if p.MasterNode.PodCIDR.String() != "fd00:10:244::/56" {
		t.Errorf("pod_cidr = %v", p.MasterNode.PodCIDR)
	}
	_, problems = decodeCluster(t, with(t, map[string]any{"master_node.pod_cidr": "fd00::/65", "master_node.cluster_cidr": "fd00:10:96::/100", "proxy.k8s_node_cidr": "fd00:1::/64"}))
	want := []string{
		"k8s_cluster_installation_param.master_node.cluster_cidr: fd00:10:96::/100 is too large: kubeadm takes a Service network of at most 2^20 addresses (a /108)",
		"k8s_cluster_installation_param.master_node.pod_cidr: fd00::/65 is too small: kubeadm gives every node a /64 of the pod network",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s", strings.Join(problems, "\n"))
	}
	// One family for all three networks, written as such.
	_, problems = decodeCluster(t, with(t, map[string]any{"master_node.pod_cidr": "fd00:10:244::/56", "master_node.cluster_cidr": "::ffff:10.96.0.0/108"}))
	want = []string{
		"k8s_cluster_installation_param.master_node.cluster_cidr: ::ffff:10.96.0.0/108 is an IPv4 network written as IPv6: write it as IPv4",
		"k8s_cluster_installation_param.master_node.pod_cidr: fd00:10:244::/56 and proxy.k8s_node_cidr 172.16.0.0/24 are of different IP families: the pod, Service and node networks must all be IPv4 or all IPv6",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("mixed families:\n%s", strings.Join(problems, "\n"))
	}
}

func TestCredentialOverrides(t *testing.T) {
	stored, problems := decodeCluster(t, base)
	if problems != nil {
		t.Fatal(problems)
	}
	decode := func(raw string) (kubeadm.CredentialOverrides, error) {
		var c kubeadm.CredentialOverrides
		var reverse lcm.Bool
		err := lcm.DecodeParams(json.RawMessage(raw), lcm.DecodeOptions{}, append(c.Params(), lcm.Param("is_reverse", &reverse))...)
		return c, err
	}

	c, err := decode(`{"master_node_username": "admin", "master_node_password": "new", "worker_node_username": "w", "worker_node_password": "wp", "is_reverse": "True"}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Apply(stored)
	if err != nil {
		t.Fatal(err)
	}
	if got.MasterNode.Username != "admin" || got.MasterNode.Password.Reveal() != "new" ||
		got.WorkerNode.Username != "w" || got.WorkerNode.Password.Reveal() != "wp" {
		t.Errorf("applied: master %+v worker %+v", got.MasterNode, got.WorkerNode)
	}
	if stored.MasterNode.Username != "ubuntu" || stored.WorkerNode.Username != "ubuntu" || stored.WorkerNode.Password.Reveal() != "pw" {
		t.Errorf("Apply changed the stored parameters: %+v %+v", stored.MasterNode, stored.WorkerNode)
	}

	none, err := decode(`{}`)
	if err != nil {
		t.Fatal(err)
	}
	if same, err := none.Apply(stored); err != nil || same.MasterNode != stored.MasterNode || same.WorkerNode != stored.WorkerNode {
		t.Errorf("no overrides: %+v, %v", same, err)
	}

	for _, tt := range []struct {
		c    kubeadm.CredentialOverrides
		p    kubeadm.ClusterParams
		want []string
	}{
		{kubeadm.CredentialOverrides{MasterNodeUsername: "u"}, stored, []string{"master_node_password: is required when master_node_username is given"}},
		{kubeadm.CredentialOverrides{WorkerNodePassword: remote.NewSecret("p")}, stored, []string{"worker_node_username: is required when worker_node_password is given"}},
		{kubeadm.CredentialOverrides{MasterNodeUsername: "a b", MasterNodePassword: remote.NewSecret("p")}, stored, []string{`master_node_username: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "a b"`}},
		{kubeadm.CredentialOverrides{WorkerNodeUsername: "u", WorkerNodePassword: remote.NewSecret("p")}, kubeadm.ClusterParams{MasterNode: stored.MasterNode}, []string{"worker_node_username: is for worker_node, which the cluster's parameters do not have"}},
		{kubeadm.CredentialOverrides{MasterNodeUsername: "u", MasterNodePassword: remote.NewSecret("p\nq")}, stored, []string{"master_node_password: must not contain a line break or NUL: sudo and SSH read it as one line"}},
		{kubeadm.CredentialOverrides{WorkerNodeUsername: "u", WorkerNodePassword: remote.NewSecret("p\r")}, stored, []string{"worker_node_password: must not contain a line break or NUL: sudo and SSH read it as one line"}},
	} {
		_, err := tt.c.Apply(tt.p)
		if got := problemLines(t, err); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%+v: problems %q, want %q", tt.c, got, tt.want)
		}
	}
}

// TestValidateIsIdempotent: embedded alone, kubeadm.ClusterParams's
// Validate is promoted to the outer struct, so lcm.DecodeParams runs it
// twice (as the part and as the outer value's method). The second run
// sees the defaults the first filled in and must report the same.
func TestValidateIsIdempotent(t *testing.T) {
	var only struct{ kubeadm.ClusterParams }
	err := lcm.DecodeParams(json.RawMessage(`{"k": {
		"master_node": {"ssh_cp_name": "m", "username": "u", "password": "p", "cluster_cidr": "10.96.0.0/12"},
		"proxy": {"http_proxy": "http://p:1", "k8s_node_cidr": "192.168.1.0/24"},
		"kubernetes_version": "v1.36.2"}}`), lcm.DecodeOptions{}, lcm.Param("k", &only))
	want := "k.master_node.pod_cidr: 192.168.0.0/16 (the default) overlaps proxy.k8s_node_cidr 192.168.1.0/24: the pod, Service and node networks must be disjoint"
	if got := problemLines(t, err); strings.Join(got, "\n") != want {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	err = lcm.DecodeParams(json.RawMessage(`{"k": {
		"master_node": {"ssh_cp_name": "m", "username": "u", "password": "p", "pod_cidr": "10.244.3.0/16"},
		"kubernetes_version": "v1.36.2", "script_path": "./Scripts/install_k8s_cluster.sh"}}`),
		lcm.DecodeOptions{Package: samplePackage()}, lcm.Param("k", &only))
	if err != nil {
		t.Fatal(err)
	}
	if only.KubernetesVersion != "1.36.2" || only.MasterNode.PodCIDR.String() != "10.244.0.0/16" || only.ScriptPath != "Scripts/install_k8s_cluster.sh" {
		t.Errorf("after two runs: %+v", only.ClusterParams)
	}
}

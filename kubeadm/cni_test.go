package kubeadm_test

import (
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

func TestApplyCNI(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	manifest := []byte(`# Calico (abridged)
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: calico-node
  namespace: kube-system
---
# only a comment
---
{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "calico-node", "namespace": "kube-system"}}
`)
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		if inv.Stdin != string(manifest) {
			return scripted.Reply{Code: 3}
		}
		if inv.Line() == "diff -f -" {
			return scripted.Reply{Code: 1}
		}
		return scripted.OK("serviceaccount/calico-node created\ndaemonset.apps/calico-node created\n")
	})
	res, err := kubeadm.ApplyCNI(n.Ctx, n.Kubectl(), manifest)
	if err != nil || !res.Changed {
		t.Fatalf("ApplyCNI: %v, %v", res, err)
	}
	if got := n.Lines("kubectl"); !slices.Equal(got, []string{"diff -f -", "apply -f -"}) {
		t.Fatalf("kubectl runs %q", got)
	}
}

func TestApplyCNIRefusesWhatIsNoManifest(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	for _, bad := range []string{
		"",
		"# nothing\n---\n",
		"apiVersion: v1\nmetadata:\n  name: x\n",
		"kind: ConfigMap\n",
		"apiVersion: v1\nkind: ConfigMap\n---\n- a list\n",
		"apiVersion: v1\nkind: [\n",
		"just text",
	} {
		_, err := kubeadm.ApplyCNI(n.Ctx, n.Kubectl(), []byte(bad))
		scripted.ParamsError(t, err, "manifest")
	}
	if c := n.Commands(); len(c) != 0 {
		t.Fatalf("commands: %q", c)
	}
}

// InspectCNI tells Calico with its IPAM (the simulated cloud's reduced
// calico.yaml, which keeps upstream's calico-node and CNI configuration)
// from flannel (the sample package's) and others, and reads calico-node's
// pool variables.
func TestInspectCNI(t *testing.T) {
	flannel, err := fs.ReadFile(samples.VNFPackage(), "Files/kubernetes/cni.yaml")
	if err != nil {
		t.Fatal(err)
	}
	calico := string(containers.CalicoManifest())
	withPool := strings.Replace(calico, "            # - name: CALICO_IPV4POOL_CIDR\n            #   value: \"192.168.0.0/16\"\n",
		"            - name: CALICO_IPV4POOL_CIDR\n              value: \"10.244.0.0/16\"\n            - name: CALICO_IPV4POOL_BLOCK_SIZE\n              value: \"24\"\n", 1)
	if withPool == calico {
		t.Fatal("the manifest has no commented-out CALICO_IPV4POOL_CIDR")
	}
	hostLocal := strings.Replace(calico, `"type": "calico-ipam"`, `"type": "host-local", "subnet": "usePodCidr"`, 1)
	for _, tc := range []struct {
		name     string
		manifest string
		want     kubeadm.PodNetwork
	}{
		{"calico", calico, kubeadm.PodNetwork{Kind: kubeadm.CNICalico}},
		{"calico with a pool", withPool, kubeadm.PodNetwork{Kind: kubeadm.CNICalico, IPv4Pool: netip.MustParsePrefix("10.244.0.0/16"), IPv4BlockSize: 24}},
		{"calico with host-local IPAM", hostLocal, kubeadm.PodNetwork{Kind: kubeadm.CNIOther}},
		{"flannel", string(flannel), kubeadm.PodNetwork{Kind: kubeadm.CNIFlannel}},
		{"canal", calico + "\n---\n" + string(flannel), kubeadm.PodNetwork{Kind: kubeadm.CNIFlannel}},
		{"other", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", kubeadm.PodNetwork{Kind: kubeadm.CNIOther}},
	} {
		got, err := kubeadm.InspectCNI([]byte(tc.manifest))
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	_, err = kubeadm.InspectCNI([]byte("just text"))
	scripted.ParamsError(t, err, "manifest")
}

// Pod-network capacity follows the CNI's IPAM: a /24 per node from
// kube-controller-manager for flannel and others, Calico's /26 blocks
// (or the manifest's pool and block size) for Calico.
func TestCheckPodCapacity(t *testing.T) {
	calico := kubeadm.PodNetwork{Kind: kubeadm.CNICalico}
	for _, tc := range []struct {
		name  string
		net   kubeadm.PodNetwork
		cidr  string
		nodes int
		at    string // "" when it fits
	}{
		{"flannel /24, one node", kubeadm.PodNetwork{Kind: kubeadm.CNIFlannel}, "192.168.3.0/24", 1, ""},
		{"flannel /24, two nodes", kubeadm.PodNetwork{Kind: kubeadm.CNIFlannel}, "192.168.3.0/24", 2, "pod"},
		{"other /24, two nodes", kubeadm.PodNetwork{Kind: kubeadm.CNIOther}, "192.168.3.0/24", 2, "pod"},
		{"flannel /16", kubeadm.PodNetwork{Kind: kubeadm.CNIFlannel}, "10.244.0.0/16", 256, ""},
		{"flannel /16, too many", kubeadm.PodNetwork{Kind: kubeadm.CNIFlannel}, "10.244.0.0/16", 257, "pod"},
		{"calico /24, four nodes", calico, "192.168.3.0/24", 4, ""},
		{"calico /24, five nodes", calico, "192.168.3.0/24", 5, "pod"},
		{"calico IPv6 /120", calico, "fd00::/120", 4, ""},
		{"calico IPv6 /120, five", calico, "fd00::/120", 5, "pod"},
		{"calico block /28", kubeadm.PodNetwork{Kind: kubeadm.CNICalico, IPv4BlockSize: 28}, "192.168.3.0/24", 16, ""},
		{"calico pool inside", kubeadm.PodNetwork{Kind: kubeadm.CNICalico, IPv4Pool: netip.MustParsePrefix("10.244.1.0/25")}, "10.244.0.0/16", 2, ""},
		{"calico pool inside, too small", kubeadm.PodNetwork{Kind: kubeadm.CNICalico, IPv4Pool: netip.MustParsePrefix("10.244.1.0/25")}, "10.244.0.0/16", 3, "cni"},
		{"calico pool outside", kubeadm.PodNetwork{Kind: kubeadm.CNICalico, IPv4Pool: netip.MustParsePrefix("192.168.0.0/16")}, "10.244.0.0/16", 1, "cni"},
		{"calico pool larger", kubeadm.PodNetwork{Kind: kubeadm.CNICalico, IPv4Pool: netip.MustParsePrefix("10.0.0.0/8")}, "10.244.0.0/16", 1, "cni"},
	} {
		err := tc.net.CheckPodCapacity(netip.MustParsePrefix(tc.cidr), tc.nodes, "pod", "cni")
		if tc.at == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		scripted.ParamsError(t, err, tc.at)
	}
}

// FetchManifest refuses what is not an http(s) URL, and a bad proxy,
// before any command.
func TestFetchManifestRefusesBadInput(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl", "kubeadm")
	for _, u := range []string{"", "file:///etc/passwd", "https://", "https://x/y z", "ftp://example.com/calico.yaml"} {
		_, err := kubeadm.FetchManifest(n.Ctx, n.Host, u, nil)
		scripted.ParamsError(t, err, "URL")
	}
	_, err := kubeadm.FetchManifest(n.Ctx, n.Host, kubeadm.DefaultCalicoManifestURL, &system.Proxy{})
	scripted.ParamsError(t, err, "Proxy.HTTPProxy")
	if c := n.Commands(); len(c) != 0 {
		t.Fatalf("commands: %q", c)
	}
}

// The simulated cloud serves the manifest of the Calico release mgmtkit
// pins, at the address mgmtkit fetches it from.
func TestDefaultCalicoIsServed(t *testing.T) {
	if kubeadm.DefaultCalicoVersion != containers.CalicoVersion || kubeadm.DefaultCalicoManifestURL != containers.CalicoManifestURL(containers.CalicoVersion) {
		t.Fatalf("mgmtkit installs %s from %s; the simulated cloud serves %s", kubeadm.DefaultCalicoVersion, kubeadm.DefaultCalicoManifestURL, containers.CalicoManifestURL(containers.CalicoVersion))
	}
}

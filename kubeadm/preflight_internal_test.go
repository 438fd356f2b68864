package kubeadm

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// The virtual IP and the floating IP are the cluster's own addresses as
// the nodes' are: a pod network holding only them is refused too.
func TestCheckAddressesNamesTheVIPAndTheFloatingIP(t *testing.T) {
	topo := Topology{
		Masters:    []lcm.Node{{Resource: "m0", Role: lcm.RoleMaster, NICAddress: "10.0.0.5", SSHAddress: "172.24.0.5"}},
		Workers:    []lcm.Node{{Resource: "w0", Role: lcm.RoleWorker, NICAddress: "10.0.0.6", SSHAddress: "10.0.0.6"}},
		VIP:        netip.MustParseAddr("10.0.1.1"),
		FloatingIP: "172.24.0.9",
	}
	var p ClusterParams
	p.MasterNode.PodCIDR = netip.MustParsePrefix("10.0.1.0/24")
	p.MasterNode.ClusterCIDR = netip.MustParsePrefix("172.24.0.0/16")
	err := checkAddresses(p, clusterAddresses(topo))
	if err == nil {
		t.Fatal("accepted")
	}
	pe := err.(*lcm.ParamsError)
	if len(pe.Problems) != 2 || !strings.HasSuffix(pe.Problems[0].Path, "master_node.pod_cidr") || !strings.HasSuffix(pe.Problems[1].Path, "master_node.cluster_cidr") {
		t.Fatalf("problems %+v", pe.Problems)
	}
	for _, want := range []string{"10.0.1.1 of the virtual IP"} {
		if !strings.Contains(pe.Problems[0].Message, want) {
			t.Errorf("pod_cidr: %q lacks %q", pe.Problems[0].Message, want)
		}
	}
	for _, want := range []string{"172.24.0.5 of node m0 (master), its SSH address", "172.24.0.9 of the floating IP"} {
		if !strings.Contains(pe.Problems[1].Message, want) {
			t.Errorf("cluster_cidr: %q lacks %q", pe.Problems[1].Message, want)
		}
	}
	p.MasterNode.PodCIDR = netip.MustParsePrefix("10.244.0.0/16")
	p.MasterNode.ClusterCIDR = netip.MustParsePrefix("10.96.0.0/12")
	if err := checkAddresses(p, clusterAddresses(topo)); err != nil {
		t.Error(err)
	}
}

// The index is read as paragraphs of fields, whatever the order and case
// of the fields and with multi-line descriptions; versions are ordered
// by their numbers.
func TestPackageVersions(t *testing.T) {
	index := "Package: kubeadm\nVersion: 1.36.9-1.1\nDescription: x\n long text\n .\n more\n\n" +
		"version: 1.36.10-1.1\npackage: kubeadm\n\n\n" +
		"Package: kubelet\nVersion: 1.36.10-1.1\nArchitecture: amd64\n\nPackage: kubelet\nVersion: 1.36.10-1.1\nArchitecture: arm64\n"
	got := packageVersions([]byte(index))
	if !slices.Equal(got["kubeadm"], []string{"1.36.9-1.1", "1.36.10-1.1"}) || !slices.Equal(got["kubelet"], []string{"1.36.10-1.1"}) {
		t.Errorf("versions %v", got)
	}
	if n := newest(got["kubeadm"], 1); !slices.Equal(n, []string{"1.36.10-1.1"}) {
		t.Errorf("newest %v", n)
	}
	for _, tc := range []struct {
		v    Version
		deb  string
		want bool
	}{
		{"1.36", "1.36.0-1.1", true}, {"1.36", "1.360.0-1.1", false}, {"1.36", "", false},
		{"1.36.3", "1.36.3-1.1", true}, {"1.36.3", "1.36.3-2.1", false}, {"1.36.3", "1.36.30-1.1", false},
	} {
		if got := versionOffered(tc.v, tc.deb); got != tc.want {
			t.Errorf("versionOffered(%s, %q) = %v", tc.v, tc.deb, got)
		}
	}
}

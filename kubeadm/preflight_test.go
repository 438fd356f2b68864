package kubeadm_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// A pod or Service network that holds the nodes' own addresses (the
// simulated nodes are in 127.0.1.0/24) is refused naming the field, a
// node and its address, before any command on any node.
func TestNetworkHoldingTheNodesIsRefused(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(p *kubeadm.ClusterParams)
	}{
		{"master_node.cluster_cidr", func(p *kubeadm.ClusterParams) { p.MasterNode.ClusterCIDR = netip.MustParsePrefix("127.0.1.0/24") }},
		{"master_node.pod_cidr", func(p *kubeadm.ClusterParams) { p.MasterNode.PodCIDR = netip.MustParsePrefix("127.0.0.0/16") }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
			tc.edit(&c.Op.Params)
			_, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) || pe.Problems[0].Path != kubeadm.ClusterParamKey+"."+tc.field {
				t.Fatalf("error %v, want a ParamsError at %s", err, tc.field)
			}
			for _, h := range c.VNF.Hosts() {
				if !strings.Contains(err.Error(), h.Resource) || !strings.Contains(err.Error(), h.NICAddress) {
					t.Errorf("the error does not name %s at %s: %v", h.Resource, h.NICAddress, err)
				}
				if n := len(h.SSH.Transcript()); n != 0 {
					t.Errorf("%s ran %d commands", h.Resource, n)
				}
			}
		})
	}
}

// readOnly reports the commands of hosts that are neither the preflight's
// dpkg-query nor its download of the package index.
func readOnly(t *testing.T, hosts []*sim.Host) {
	t.Helper()
	for _, h := range hosts {
		for _, e := range h.SSH.Transcript() {
			if !strings.HasPrefix(e.Command, "dpkg-query -W") && !strings.Contains(e.Command, "mgmtkit-fetch https://pkgs.k8s.io/core:/stable:/") {
				t.Errorf("%s ran %.200q", h.Resource, e.Command)
			}
		}
	}
}

// A kubernetes_version the package repository does not have is refused
// naming kubernetes_version and what the repository offers, after
// read-only commands only: dpkg-query on the nodes to build, and a read
// of the repository's index on the first master. Nothing is installed or
// written.
func TestVersionTheRepositoryLacksIsRefused(t *testing.T) {
	for _, tc := range []struct {
		version kubeadm.Version
		offers  string
	}{
		{"1.36.99", "offers 1.36.2-1.1, 1.36.1-1.1, 1.36.0-1.1"},
		{"1.30", "offers no version"}, // the simulated v1.30 repository holds no kubeadm
	} {
		t.Run(string(tc.version), func(t *testing.T) {
			c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 2}, sim.Options{})
			c.Op.Params.KubernetesVersion = tc.version
			before := map[string][]string{}
			for _, h := range c.VNF.Hosts() {
				before[h.Resource] = h.Machine.Packages()
			}
			res, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) || pe.Problems[0].Path != kubeadm.ClusterParamKey+".kubernetes_version" || !strings.Contains(err.Error(), tc.offers) {
				t.Fatalf("error %v, want a ParamsError at kubernetes_version that %s", err, tc.offers)
			}
			if got := stepNames(res); !slices.Equal(got, []string{kubeadm.StepPreflight}) || res.Changed() {
				t.Errorf("steps %v (changed %v), want the preflight alone, unchanged", got, res.Changed())
			}
			readOnly(t, c.VNF.Hosts())
			first := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
			for _, h := range c.VNF.Hosts() {
				fetched := slices.ContainsFunc(h.SSH.Transcript(), func(e sshtest.Exec) bool { return strings.Contains(e.Command, "/Packages") })
				if fetched != (h == first) {
					t.Errorf("%s read the index: %v; want it read on the first master only", h.Resource, fetched)
				}
				if !slices.Equal(h.Machine.Packages(), before[h.Resource]) {
					t.Errorf("%s's packages changed", h.Resource)
				}
			}
		})
	}
}

// A repository that cannot be read (no repository for the minor: 404) is
// not the parameters' fault as far as the hook can tell: the error names
// the URL and says nothing was changed, after read-only commands only.
func TestUnreadableRepositoryChangesNothing(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	c.Op.Params.KubernetesVersion = "1.99"
	_, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
	var pe *lcm.ParamsError
	if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "https://pkgs.k8s.io/core:/stable:/v1.99/deb/Packages") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("error %v, want one naming the index's URL", err)
	}
	readOnly(t, c.VNF.Hosts())
}

// A minor-only version the repository has passes; the preflight reads
// the index once and says what it offers, and on the converged cluster
// it asks dpkg only.
func TestMinorVersionPasses(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	c.Op.Params.KubernetesVersion = "1.35"
	res := c.Instantiate()
	c.AssertNodes()
	pre := preflightStep(t, res)
	if len(pre.Hosts) != 2 || !strings.Contains(pre.Hosts[0].Result.Detail, "offers 1.35.3-1.1, 1.35.0-1.1") {
		t.Errorf("preflight %+v, want it on both nodes, the index read on the first", pre)
	}
	for _, n := range c.Nodes() {
		if v := n.Status.NodeInfo.KubeletVersion; v != "v1.35.3" {
			t.Errorf("node %s runs %s, want v1.35.3", n.Name, v)
		}
	}
	for _, h := range c.VNF.Hosts() {
		h.SSH.ResetTranscript()
	}
	res = c.Instantiate()
	if res.Changed() {
		t.Error("the second run changed something")
	}
	pre = preflightStep(t, res)
	for _, hr := range pre.Hosts {
		if !strings.Contains(hr.Result.Detail, "1.35.3-1.1 installed") || strings.Contains(hr.Result.Detail, "offers") {
			t.Errorf("second run: %s: %q, want kubeadm's installed version and no index read", hr.Host, hr.Result.Detail)
		}
	}
	for _, h := range c.VNF.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, "/Packages") {
				t.Errorf("%s read the index on the converged cluster", h.Resource)
			}
		}
	}
}

// preflightStep returns the preflight's step of res.
func preflightStep(t *testing.T, res *lcm.HookResult) lcm.StepResults {
	t.Helper()
	for _, s := range res.Steps {
		if s.Step == kubeadm.StepPreflight {
			return s
		}
	}
	t.Fatalf("no %s step in %v", kubeadm.StepPreflight, stepNames(res))
	return lcm.StepResults{}
}

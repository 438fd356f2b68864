package kubeadm_test

import (
	"slices"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// Masters without a default route (a provider network without a
// gateway): kubeadm cannot choose an address for a configuration that
// names none, so every configuration the SDK hands it on a master names
// the master's address. Instantiate with three masters joins two of them
// as control planes (the certificates uploaded on the first), and the
// heal of a master joins its replacement.
func TestControlPlaneJoinsWithoutDefaultRoute(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 3, Workers: 1}, sim.Options{
		Setup: func(h *sim.Host) error {
			if h.Role == lcm.RoleMaster {
				h.Machine.SetDefaultRoute(false)
			}
			return nil
		},
	})
	masters := c.VNF.HostsWithRole(lcm.RoleMaster)
	if masters[0].Machine.HasDefaultRoute() {
		t.Fatal("the masters have a default route")
	}
	c.Instantiate()
	c.AssertNodes()
	if got, want := c.EtcdMembers(), c.MastersNames(); !slices.Equal(got, want) {
		t.Errorf("etcd members %v, want %v", got, want)
	}
	old := masters[len(masters)-1]
	if err := c.Heal(old); err != nil {
		t.Fatalf("heal of a master: %v", err)
	}
	c.AssertNodes()
	if _, ok := c.Nodes()[kubeadm.NodeName(lcm.RoleMaster, old.NICAddress)]; ok {
		t.Error("the healed master is still a node")
	}
	if got, want := c.EtcdMembers(), c.MastersNames(); !slices.Equal(got, want) {
		t.Errorf("after the heal: etcd members %v, want %v", got, want)
	}
}

package drivers_test

import (
	"fmt"
	"testing"

	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// BenchmarkClusterInstantiate runs the cluster driver's instantiate_end
// on 20 nodes of the simulated cloud (1 master, 19 workers), one at a
// time and ten at a time: "first" builds the kubeadm cluster on fresh VMs
// (prepared, containerd, registry trust for the sample's two registries,
// packages, init, CNI, joins, VIM; a new cloud per iteration, built
// outside the timer), "rerun" finds the converged cluster and changes
// nothing. Commands per node are reported. Until issue #11 the driver
// only configured registry trust, and this was BenchmarkClusterTrust.
func BenchmarkClusterInstantiate(b *testing.B) {
	for _, limit := range []int{1, 10} {
		b.Run(fmt.Sprintf("first/limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				c := newCIR(b, request(b, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 19}, world.ExternalRegistryPassword)
				c.driver.Cluster.Plumbing.Limit = limit
				b.StartTimer()
				if _, err := c.instantiate(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(commands(c))/20, "cmds/node")
				c.close()
				b.StartTimer()
			}
		})
		b.Run(fmt.Sprintf("rerun/limit=%d", limit), func(b *testing.B) {
			c := newCIR(b, request(b, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 19}, world.ExternalRegistryPassword)
			defer c.close()
			c.driver.Cluster.Plumbing.Limit = limit
			if _, err := c.instantiate(); err != nil {
				b.Fatal(err)
			}
			before := commands(c)
			for b.Loop() {
				res, err := c.instantiate()
				if err != nil || res.Changed() {
					b.Fatalf("rerun: changed %v, %v", res.Changed(), err)
				}
			}
			b.ReportMetric(float64(commands(c)-before)/float64(b.N)/20, "cmds/node")
		})
	}
}

// commands counts the SSH commands the cluster's nodes served.
func commands(c *cir) int {
	n := 0
	for _, h := range c.cluster.HostsWithRole(lcm.RoleMaster) {
		n += len(h.SSH.Transcript())
	}
	for _, h := range c.cluster.HostsWithRole(lcm.RoleWorker) {
		n += len(h.SSH.Transcript())
	}
	return n
}

// BenchmarkClusterPlan prices the dry run (lcm.Plan) of the cluster
// driver's instantiate_end on the same 20 nodes, ten at a time: "fresh"
// plans the build on new VMs (a new cloud per iteration, built outside
// the timer), "converged" plans a rerun on the built cluster, which
// lists no change. Only read-only commands run; commands per node are
// reported, to compare with BenchmarkClusterInstantiate's.
func BenchmarkClusterPlan(b *testing.B) {
	plan := func(b *testing.B, c *cir) *lcm.HookResult {
		res, err := lcm.Plan(c.ctx, c.driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: c.cluster.Instance(), Request: c.req, Package: c.pkg})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	b.Run("fresh/limit=10", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			c := newCIR(b, request(b, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 19}, world.ExternalRegistryPassword)
			c.driver.Cluster.Plumbing.Limit = 10
			b.StartTimer()
			if res := plan(b, c); !res.Changed() {
				b.Fatal("the plan of a fresh cluster lists no change")
			}
			b.StopTimer()
			b.ReportMetric(float64(commands(c))/20, "cmds/node")
			c.close()
			b.StartTimer()
		}
	})
	b.Run("converged/limit=10", func(b *testing.B) {
		c := newCIR(b, request(b, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 19}, world.ExternalRegistryPassword)
		defer c.close()
		c.driver.Cluster.Plumbing.Limit = 10
		if _, err := c.instantiate(); err != nil {
			b.Fatal(err)
		}
		before := commands(c)
		for b.Loop() {
			if res := plan(b, c); res.Changed() {
				b.Fatal("the plan of a converged cluster lists a change")
			}
		}
		b.ReportMetric(float64(commands(c)-before)/float64(b.N)/20, "cmds/node")
	})
}

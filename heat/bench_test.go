package heat_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"

	"github.com/mgmtkit/mgmtkit/heat/heattest"
)

// BenchmarkNodes resolves a 3-master, 50-worker cluster (Tacker's walk:
// one group lookup, one member listing, then per member a resource list
// and a CP read) at several concurrency limits. Each request crosses real
// HTTP on loopback to the fake Heat, so the figures measure the client's
// round trips, not Heat's database.
func BenchmarkNodes(b *testing.B) {
	srv := heattest.Start(b, heattest.Config{})
	top := srv.CreateStack("vnf-bench")
	top.AddGroup("master_instance", heattest.GroupSpec{MinSize: 3, MaxSize: 3, Desired: 3,
		Member: memberWithPort("masterNode_CP1", "10.10.0.", 11)})
	top.AddGroup("worker_instance", heattest.GroupSpec{MinSize: 1, MaxSize: 60, Desired: 50,
		Member: func(m *heattest.Stack, i int) {
			m.AddPort("workerNode_CP2", fmt.Sprintf("10.10.1.%d", 10+i))
			m.AddServer("server", "workerNode_CP2")
		}})
	for _, rtt := range []time.Duration{0, 10 * time.Millisecond} {
		ao := srv.AuthOptions()
		vim := lcm.VimConnectionInfo{ID: "v", VimType: "openstack", InterfaceInfo: map[string]any{"endpoint": srv.IdentityEndpoint()},
			AccessInfo: lcm.AccessInfo{"username": ao.Username, "password": ao.Password, "project": ao.TenantName, "region": srv.Region()}}
		client, err := heat.ConnectVIM(context.Background(), vim, &http.Client{Transport: delayed{rtt}})
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 8, 16} {
			b.Run(fmt.Sprintf("rtt=%s/concurrency=%d", rtt, n), func(b *testing.B) {
				c := client.WithConcurrency(n)
				before := len(srv.Requests())
				for b.Loop() {
					nodes, err := c.Nodes(context.Background(), top.ID(), masters, workers)
					if err != nil || len(nodes) != 53 {
						b.Fatalf("%d nodes, %v", len(nodes), err)
					}
				}
				b.ReportMetric(float64(len(srv.Requests())-before)/float64(b.N), "requests/op")
			})
		}
	}
}

// delayed adds a round-trip time to every request, as a remote cloud has.
type delayed struct{ rtt time.Duration }

func (d delayed) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(d.rtt)
	return http.DefaultTransport.RoundTrip(r)
}

package registry_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// inFlight wraps hosts to record how many of them run a command at once.
type inFlight struct {
	mu       sync.Mutex
	now, max int
}

type countedHost struct {
	remote.Host
	f *inFlight
}

func (h countedHost) Run(ctx context.Context, c remote.Cmd) (remote.Output, error) {
	h.f.mu.Lock()
	h.f.now++
	h.f.max = max(h.f.max, h.f.now)
	h.f.mu.Unlock()
	defer func() {
		h.f.mu.Lock()
		h.f.now--
		h.f.mu.Unlock()
	}()
	// Long enough for every host the limit lets through to overlap.
	time.Sleep(5 * time.Millisecond)
	return h.Host.Run(ctx, c)
}

// TrustNodes configures every node of a cluster, at most Limit at a time,
// and says per host what it did: every node can then pull, and a second
// call changes nothing anywhere.
func TestTrustNodesOnEveryNodeOfACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cloud := sim.Start(t, sim.Options{})
	_, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 4, Packages: []string{"docker.io", "cri-tools"}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	reg := containers.NewRegistry(containers.RegistryOptions{})
	reg.Push("app:1")
	cloud.AddExternalRegistry("192.168.0.30", 5000, reg)
	conn := httpConn("registry.example.net:5000")
	conn.HostsString = "192.168.0.30 registry.example.net"

	f := &inFlight{}
	var hosts []countedHost
	for _, h := range v.Hosts() {
		c, err := cloud.Connect(ctx, h.Node(), "ubuntu", "ubuntu")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		hosts = append(hosts, countedHost{c, f})
	}
	if len(hosts) != 5 {
		t.Fatalf("%d hosts, want 5", len(hosts))
	}
	const limit = 2
	rs, err := registry.TrustNodes(ctx, hosts, []registry.Connection{conn}, registry.TrustOptions{}, lcm.Limit(limit))
	if err != nil {
		t.Fatal(err)
	}
	if f.max != limit {
		t.Errorf("%d hosts ran commands at once, want %d", f.max, limit)
	}
	if len(rs) != len(hosts) {
		t.Fatalf("%d results for %d hosts", len(rs), len(hosts))
	}
	for i, r := range rs {
		if r.Host != hosts[i].Name() || r.Step != registry.StepTrust || !r.Result.Changed || r.Err != nil || r.Skipped {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	for _, h := range v.Hosts() {
		if err := containers.KubeletPull(ctx, cloud, h.Machine, conn.Server+"/app:1"); err != nil {
			t.Errorf("%s: kubelet pull: %v", h.Name(), err)
		}
	}
	rs, err = registry.TrustNodes(ctx, hosts, []registry.Connection{conn}, registry.TrustOptions{})
	if err != nil || rs.Changed() {
		t.Errorf("second run: %+v, %v", rs, err)
	}

	// One node refuses (a daemon.json mgmtkit will not rewrite): the
	// others still get the new registry, and the error names that node.
	bad := v.Hosts()[2]
	if err := bad.FS().WriteFile(registry.DockerDaemonJSON, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	conns := []registry.Connection{conn, httpConn("192.168.0.31:5000")}
	rs, err = registry.TrustNodes(ctx, hosts, conns, registry.TrustOptions{}, lcm.WithPolicy(lcm.BestEffort))
	if err == nil {
		t.Fatal("no error from the node with a broken daemon.json")
	}
	for i, r := range rs {
		if i == 2 {
			if r.Err == nil || r.Host != bad.Name() {
				t.Errorf("broken node: %+v", r)
			}
			continue
		}
		if r.Err != nil || !r.Result.Changed {
			t.Errorf("result %d: %+v", i, r)
		}
	}
}

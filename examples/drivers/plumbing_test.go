package drivers_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/remote"
)

// closeCounter counts the closes of the connection it wraps.
type closeCounter struct {
	remote.Host
	closed func()
}

func (h closeCounter) Close() error {
	h.closed()
	return h.Host.Close()
}

// The cluster driver dials every node once per hook, as the node's role's
// user, and closes every connection when the hook ends.
func TestClusterDriverOneConnectionPerNodePerHook(t *testing.T) {
	c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 3, Workers: 2}, world.ExternalRegistryPassword)
	var mu sync.Mutex
	dials, closes, users := map[string]int{}, map[string]int{}, map[string]string{}
	c.driver.Cluster.Plumbing.Dial = func(ctx context.Context, cfg remote.Config) (remote.Host, error) {
		mu.Lock()
		dials[cfg.Name]++
		users[cfg.Name] = cfg.User
		mu.Unlock()
		h, err := remote.Dial(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return closeCounter{Host: h, closed: func() { mu.Lock(); closes[cfg.Name]++; mu.Unlock() }}, nil
	}
	for run := 1; run <= 2; run++ {
		if _, err := c.instantiate(); err != nil {
			t.Fatalf("instantiate_end: %v\n%s", err, c.log)
		}
		mu.Lock()
		for _, h := range c.nodes() {
			if dials[h.Resource] != run || closes[h.Resource] != run {
				t.Errorf("after hook %d: %s dialed %d and closed %d times, want %d of each", run, h.Resource, dials[h.Resource], closes[h.Resource], run)
			}
		}
		if len(dials) != len(c.nodes()) {
			t.Errorf("dialed %d nodes, want %d", len(dials), len(c.nodes()))
		}
		mu.Unlock()
	}
	for _, h := range c.nodes() {
		if users[h.Resource] != "ubuntu" { // master_node and worker_node of the sample
			t.Errorf("%s (%s) logged in as %q, want its role's username", h.Resource, h.Role, users[h.Resource])
		}
	}
	c.assertPulls(c.nodes())
}

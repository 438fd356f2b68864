package registry_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
)

// closeCountingHost counts the closes of the connection it wraps.
type closeCountingHost struct {
	remote.Host
	closes *atomic.Int32
}

func (h closeCountingHost) Close() error {
	h.closes.Add(1)
	return h.Host.Close()
}

// The VNF driver runs its four steps on the one VM over one connection,
// dialed once per hook and closed when the hook ends.
func TestRegistryVNFOneConnectionPerHook(t *testing.T) {
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	var dials, closes atomic.Int32
	r.driver.Plumbing.Dial = func(ctx context.Context, cfg remote.Config) (remote.Host, error) {
		dials.Add(1)
		h, err := remote.Dial(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return closeCountingHost{Host: h, closes: &closes}, nil
	}
	for run := range 2 {
		res, err := r.instantiate()
		if err != nil {
			t.Fatalf("instantiate_end: %v\n%s", err, r.log)
		}
		if len(res.Steps) != 4 {
			t.Fatalf("steps = %d, want 4", len(res.Steps))
		}
		if d, c := dials.Load(), closes.Load(); d != int32(run+1) || c != int32(run+1) {
			t.Errorf("after hook %d: %d dials and %d closes, want %d of each (one connection per hook)", run+1, d, c, run+1)
		}
	}
	r.assertServing(registry.DefaultPort)
}

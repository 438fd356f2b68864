package kubeadm_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// moments records the moments an extension ran at, with what it was
// handed.
type moments struct {
	mu  sync.Mutex
	log []string
}

func (m *moments) add(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func (m *moments) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.log
	m.log = nil
	slices.Sort(l)
	return l
}

// An extension runs at the moments it names, over the cluster's runner:
// before and after each join, once the cluster is built (handed a
// working API and every VM, its own storage server included, whose
// login the session has), before nodes leave, and when a heal names its
// own VM; a VM that no extension owns is not healed.
func TestExtensionMoments(t *testing.T) {
	c := kubescenarios.NewClusterFrom(t, sim.Options{}, func(cloud *sim.Cloud) (*lcm.InstantiateVnfRequest, sim.Topology, error) {
		return cloud.SampleCluster(samples.InstantiatePVCluster, sim.ClusterShape{Masters: 1, Workers: 2, MinWorkers: 1})
	})
	storage := c.VNF.HostsWithRole(lcm.RoleStorage)[0]
	m := &moments{}
	node := func(moment string) plumbing.NodeFunc {
		return func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
			m.add("%s %s", moment, n.Role)
			return lcm.Unchanged, nil
		}
	}
	vms := func(moment string, r *plumbing.Runner, cl plumbing.Cluster, nodes []lcm.Node) error {
		for _, n := range nodes {
			m.add("%s %s", moment, n.Role)
		}
		return nil
	}
	c.Op.Extensions = plumbing.Extensions{{
		Name:       "test-extension",
		VMs:        c.Params.StorageServer.VMs(),
		BeforeJoin: node("before-join"),
		AfterJoin:  node("after-join"),
		Ready: func(ctx context.Context, r *plumbing.Runner, cl plumbing.Cluster) error {
			nodes, err := cl.API.Nodes(ctx)
			if err != nil {
				return err
			}
			st := cl.WithRole(lcm.RoleStorage)
			if len(st) != 1 || st[0].ServerID != storage.ServerID {
				return fmt.Errorf("the storage server is not among %v", cl.Nodes)
			}
			m.add("ready %d nodes, %d VMs", len(nodes), len(cl.Nodes))
			// The extension reaches its own VM over the hook's session.
			return r.OnNodes(ctx, "test-storage", st, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
				_, err := h.Run(ctx, remote.Command("true"))
				return lcm.Unchanged, err
			})
		},
		Removing: func(ctx context.Context, r *plumbing.Runner, cl plumbing.Cluster, nodes []lcm.Node) error {
			return vms("removing", r, cl, nodes)
		},
		Joined: func(ctx context.Context, r *plumbing.Runner, cl plumbing.Cluster, nodes []lcm.Node) error {
			return vms("joined", r, cl, nodes)
		},
		HealStart: func(ctx context.Context, r *plumbing.Runner, cl plumbing.Cluster, nodes []lcm.Node) error {
			return vms("heal-start", r, cl, nodes)
		},
		HealEnd: func(ctx context.Context, r *plumbing.Runner, cl plumbing.Cluster, nodes []lcm.Node) error {
			return vms("heal-end", r, cl, nodes)
		},
	}}
	res := c.Instantiate()
	want := []string{"after-join master", "after-join worker", "after-join worker", "before-join master", "before-join worker", "before-join worker", "ready 3 nodes, 4 VMs"}
	if got := m.take(); !slices.Equal(got, want) {
		t.Errorf("instantiate ran %q, want %q", got, want)
	}
	if !slices.Contains(stepNames(res), "test-storage") || len(storage.SSH.Transcript()) == 0 {
		t.Errorf("the extension did not reach its storage server: steps %v", stepNames(res))
	}

	// Heal of a worker: the extension hears of it leaving, then of it
	// joining again.
	w := c.VNF.HostsWithRole(lcm.RoleWorker)[0]
	if err := c.Heal(w); err != nil {
		t.Fatal(err)
	}
	if got, want := m.take(), []string{"after-join worker", "before-join worker", "joined worker", "removing worker"}; !slices.Equal(got, want) {
		t.Errorf("heal of a worker ran %q, want %q", got, want)
	}

	// Heal of the storage server: the extension's own VM, at heal_start
	// and heal_end; no cluster node is touched.
	if err := c.Heal(storage); err != nil {
		t.Fatal(err)
	}
	if got, want := m.take(), []string{"heal-end storage", "heal-start storage"}; !slices.Equal(got, want) {
		t.Errorf("heal of the storage server ran %q, want %q", got, want)
	}

	// Without the extension, the storage server is no VM of the hooks:
	// a heal of it is noted, not done.
	c.Op.Extensions = nil
	inst := c.VNF.Instance()
	c.Op.Instance = inst
	st := c.VNF.HostsWithRole(lcm.RoleStorage)[0]
	res, err := c.Hooks.HealEnd(c.Ctx, lcm.HealEnd, c.Op, lcm.HealVnfRequest{VnfcInstanceID: []string{kubescenarios.VnfcOf(inst, st.ServerID)}})
	if err != nil || !slices.Equal(stepNames(res), []string{kubeadm.StepHealUnmanaged}) {
		t.Errorf("heal of an unmanaged VM: %v, steps %v", err, stepNames(res))
	}

	// Two owners of one role are refused before anything runs.
	c.Op.Extensions = plumbing.Extensions{{Name: "thief", VMs: c.Params.ClusterParams.VMs()}}
	if _, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("an extension claiming the masters: %v", err)
	}
}

package drivers_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// ksWorld is the k8s-mgmtdriver-kubespray spec's world: the Ansible
// server, a cluster VNF with its external load balancer, the kubespray
// driver.
type ksWorld struct {
	t       *testing.T
	ctx     context.Context
	cloud   *sim.Cloud
	pkg     *lcm.Package
	cluster *sim.VNF
	req     *lcm.InstantiateVnfRequest
	driver  *drivers.KubesprayDriver
	log     *bytes.Buffer
}

func newKS(t *testing.T, shape sim.ClusterShape, opts sim.Options) *ksWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	log := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx = lcm.WithLogger(ctx, logger)
	cloud := sim.Start(t, opts)
	req, topo, err := cloud.SampleCluster(samples.InstantiateKubespray, shape)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	return &ksWorld{t: t, ctx: ctx, cloud: cloud, pkg: lcm.NewPackage(samples.VNFPackage()), cluster: v, req: req, log: log,
		driver: &drivers.KubesprayDriver{Cluster: kubespray.Hooks{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(logger)}}}}
}

func (w *ksWorld) instantiate() (*lcm.HookResult, error) {
	return lcm.Invoke(w.ctx, w.driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: w.cluster.Instance(), Request: w.req, Package: w.pkg})
}

// nodes returns the cluster's nodes through the first master's kubectl.
func (w *ksWorld) nodes() map[string]corev1.Node {
	w.t.Helper()
	m := w.cluster.HostsWithRole(lcm.RoleMaster)[0]
	h, err := w.cloud.Connect(w.ctx, m.Node(), m.Login.User, m.Login.Password)
	if err != nil {
		w.t.Fatal(err)
	}
	defer h.Close()
	ns, err := kubeapi.Kubectl{Host: h}.Nodes(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]corev1.Node{}
	for _, n := range ns {
		out[n.Name] = n
	}
	return out
}

// backends returns the load balancer's HAProxy backends, server names.
func (w *ksWorld) backends() map[string][]string {
	w.t.Helper()
	cfg, err := w.cluster.HostsWithRole(lcm.RoleLoadBalancer)[0].FS().ReadFile(lb.ConfigFile)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string][]string{}
	for b, ss := range lb.Backends(cfg) {
		for _, s := range ss {
			out[b] = append(out[b], s.Name)
		}
	}
	return out
}

func TestKubesprayInstantiates(t *testing.T) {
	w := newKS(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	res, err := w.instantiate()
	if err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, w.log)
	}
	t.Logf("nodes %v backends %v vim %+v", len(w.nodes()), w.backends(), res.AddVimConnections)
}

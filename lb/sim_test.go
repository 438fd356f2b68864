package lb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// lbVM is the load balancer VM of the kubespray sample's cluster in the
// simulated cloud (its catalog has the world's haproxy:
// internal/sim/kube AddPackages), and an SDK connection to it as the
// sample's external_lb_param user.
type lbVM struct {
	t     *testing.T
	ctx   context.Context
	cloud *sim.Cloud
	vnf   *sim.VNF
	host  *sim.Host
	ssh   *remote.SSHHost
}

func newLBVM(t *testing.T) *lbVM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, sim.Options{})
	_, topo, err := cloud.SampleCluster(samples.InstantiateKubespray, sim.ClusterShape{Masters: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	lbs := v.HostsWithRole(lcm.RoleLoadBalancer)
	if len(lbs) != 1 {
		t.Fatalf("load balancers: %v", lbs)
	}
	h := lbs[0]
	ssh, err := cloud.Connect(ctx, h.Node(), h.Login.User, h.Login.Password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ssh.Close() })
	// The connection's sudo probe, out of the way of command counts.
	if _, err := ssh.Run(ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	return &lbVM{t: t, ctx: ctx, cloud: cloud, vnf: v, host: h, ssh: ssh}
}

// step runs fn and returns its result, the commands it ran and its
// error.
func (v *lbVM) step(fn func() (lcm.Result, error)) (lcm.Result, []string, error) {
	v.t.Helper()
	before := len(v.host.SSH.Transcript())
	res, err := fn()
	var cmds []string
	for _, e := range v.host.SSH.Transcript()[before:] {
		cmds = append(cmds, e.Command)
	}
	return res, cmds, err
}

// read returns a file of the VM, "" when it is missing.
func (v *lbVM) read(file string) string {
	b, _ := v.host.FS().ReadFile(file)
	return string(b)
}

// calls returns the programs run on the VM (argv joined), in order.
func (v *lbVM) calls() []string {
	var out []string
	for _, c := range v.host.SSH.Calls() {
		out = append(out, strings.Join(c.Args, " "))
	}
	return out
}

package drivers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// commandDelay is the latency every SSH command of every simulated VM
// pays in the fan-out benchmarks: a WAN-ish round trip and a busy VM.
const commandDelay = 20 * time.Millisecond

// trustFleet is N fresh nodes of the cir sample's cluster (1 master,
// N-1 workers, Docker and containerd installed), the sample's HTTPS
// registry outside the cloud, and the sample's two registry connections
// (HTTP to the registry VNF; HTTPS with a CA, hosts_string and login).
type trustFleet struct {
	cloud *sim.Cloud
	vnf   *sim.VNF
	conns []registry.Connection
	pkg   *lcm.Package
	creds plumbing.Credentials
	// params is the sample request's additionalParams.
	params json.RawMessage
}

func newTrustFleet(b testing.TB, n int) *trustFleet {
	b.Helper()
	cloud := sim.Start(b, sim.Options{})
	req, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: n - 1, Packages: []string{"docker.io", "cri-tools"}})
	if err != nil {
		b.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		b.Fatal(err)
	}
	pkg := lcm.NewPackage(samples.VNFPackage())
	if _, err := world.AddExternalRegistry(cloud, pkg, world.ExternalRegistryPassword); err != nil {
		b.Fatal(err)
	}
	p, err := drivers.DecodeClusterParams(req.AdditionalParams, pkg)
	if err != nil {
		b.Fatal(err)
	}
	creds := plumbing.Credentials{lcm.RoleMaster: {Username: p.MasterNode.Username, Password: p.MasterNode.Password}}
	if w := p.WorkerNode; w != nil {
		creds[lcm.RoleWorker] = plumbing.Login{Username: w.Username, Password: w.Password}
	}
	for _, h := range v.Hosts() {
		h.SSH.DelayCommands(commandDelay)
	}
	if got := len(v.Hosts()); got != n {
		b.Fatalf("%d hosts, want %d", got, n)
	}
	return &trustFleet{cloud: cloud, vnf: v, conns: p.PrivateRegistryConnectionInfo, pkg: pkg, creds: creds, params: req.AdditionalParams}
}

// trust is what a cluster driver's hook does for registry trust: open the
// hook's session, dial every node (at most limit at once, through
// plumbing) and configure it.
func (f *trustFleet) trust(ctx context.Context, limit int) (lcm.Results, error) {
	s, err := plumbing.Config{SSH: f.cloud.SSHConfigFunc(nil)}.Open(ctx, f.vnf.Instance(), f.creds)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var nodes []lcm.Node
	for _, h := range f.vnf.Hosts() {
		nodes = append(nodes, h.Node())
	}
	var opts []lcm.Option
	if limit > 0 {
		opts = append(opts, lcm.Limit(limit))
	}
	return s.OnNodes(ctx, registry.StepTrust, nodes, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
		return registry.ConfigureRegistryTrust(ctx, h, f.conns, registry.TrustOptions{Package: f.pkg})
	}, opts...)
}

// cpuTime is the CPU time (user and system) the process has used: the
// client and every simulated VM and SSH server, which share the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (f *trustFleet) commands() int {
	n := 0
	for _, h := range f.vnf.Hosts() {
		n += len(h.SSH.Transcript())
	}
	return n
}

// BenchmarkTrustFanout is the fan-out of issue #13: the registry trust of
// the cir sample (two registries: HTTP, and HTTPS with a CA, hosts_string
// and login) on N fresh nodes of the simulated cloud, every SSH command
// delayed by 20 ms, as a cluster driver's hook runs it (one plumbing
// session: dial, sudo probe, configure). Sub-benchmarks are
// nodes=N/limit=L, where L=default is lcm.DefaultLimit; a fresh cloud is
// built per iteration outside the timer. Reported: ms (wall time of the
// fan-out), ratio (to nodes=1, when that ran first in this process),
// cmds/node and cpu-ms (the CPU time the process used meanwhile: the
// client, the simulated VMs and their SSH servers, on the same cores). "rerun" is the converged fleet (nothing to change) at the
// default limit.
//
// Reproduce: go test -run '^$' -bench BenchmarkTrustFanout -benchtime=3x ./examples/drivers/
func BenchmarkTrustFanout(b *testing.B) {
	var single float64 // ms of nodes=1
	run := func(b *testing.B, n, limit int) {
		var total, cpu time.Duration
		cmds := 0
		for b.Loop() {
			b.StopTimer()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			f := newTrustFleet(b, n)
			b.StartTimer()
			start, cpu0 := time.Now(), cpuTime()
			rs, err := f.trust(ctx, limit)
			total += time.Since(start)
			cpu += cpuTime() - cpu0
			b.StopTimer()
			if err != nil || !rs.Changed() {
				b.Fatalf("changed %v, %v", rs.Changed(), err)
			}
			cmds += f.commands()
			f.cloud.Close()
			cancel()
			b.StartTimer()
		}
		ms := float64(total.Milliseconds()) / float64(b.N)
		b.ReportMetric(ms, "ms")
		b.ReportMetric(float64(cmds)/float64(b.N)/float64(n), "cmds/node")
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms")
		if n == 1 {
			single = ms
		} else if single > 0 {
			b.ReportMetric(ms/single, "ratio")
		}
	}
	b.Run("nodes=1", func(b *testing.B) { run(b, 1, 0) })
	for _, n := range []int{5, 20, 50} {
		for _, limit := range []int{0, 1, 10, 20, 50} {
			if limit > n {
				continue
			}
			name := "default"
			if limit > 0 {
				name = strconv.Itoa(limit)
			}
			b.Run(fmt.Sprintf("nodes=%d/limit=%s", n, name), func(b *testing.B) { run(b, n, limit) })
		}
	}
	b.Run("rerun/nodes=20/limit=default", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		f := newTrustFleet(b, 20)
		defer f.cloud.Close()
		if _, err := f.trust(ctx, 0); err != nil {
			b.Fatal(err)
		}
		before := f.commands()
		for b.Loop() {
			rs, err := f.trust(ctx, 0)
			if err != nil || rs.Changed() {
				b.Fatalf("changed %v, %v", rs.Changed(), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms")
		b.ReportMetric(float64(f.commands()-before)/float64(b.N)/20, "cmds/node")
	})
}

package kubeadm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// BenchmarkScaleOut20 joins 20 new workers to a running cluster (one
// master, one worker) with scale_end, every SSH command of every VM
// delayed by 20 ms (a WAN-ish round trip and a busy VM), one node at a
// time (limit=1, what the reference does), ten and twenty at a time.
// "one" joins a single worker at the default limit, the yardstick of
// issue #13: "ratio" is each run's time over its time, when it ran first
// in the process. The cluster and the new VMs are built outside the
// timer. Commands per new node are reported.
func BenchmarkScaleOut20(b *testing.B) {
	var single float64 // seconds of "one"
	for _, limit := range []int{0, 1, 10, 20} {
		name, workers := fmt.Sprintf("limit=%d", limit), 20
		if limit == 0 {
			name, workers = "one", 1
		}
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				cloud := sim.Start(b, sim.Options{})
				req, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1, MinWorkers: 1, MaxWorkers: 21})
				if err != nil {
					b.Fatal(err)
				}
				v, err := cloud.Build(topo)
				if err != nil {
					b.Fatal(err)
				}
				pkg := lcm.NewPackage(samples.VNFPackage())
				p, err := drivers.DecodeClusterParams(req.AdditionalParams, pkg)
				if err != nil {
					b.Fatal(err)
				}
				hooks := &kubeadm.Hooks{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(nil), Limit: limit}}
				op := kubeadm.Op{Instance: v.Instance(), Package: pkg, Params: p.ClusterParams}
				if _, err := hooks.Instantiate(ctx, lcm.InstantiateEnd, op); err != nil {
					b.Fatal(err)
				}
				aspect := p.WorkerNode.AspectID
				added, err := v.ScaleOut(aspect, workers)
				if err != nil {
					b.Fatal(err)
				}
				for _, h := range v.Hosts() { // the new workers too
					h.SSH.DelayCommands(20 * time.Millisecond)
				}
				b.StartTimer()
				start := time.Now()
				if _, err := hooks.ScaleOut(ctx, lcm.ScaleEnd, op, lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: aspect, NumberOfSteps: lcm.Int(workers)}); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				b.StopTimer()
				cmds := 0
				for _, h := range added {
					cmds += len(h.SSH.Transcript())
				}
				b.ReportMetric(float64(cmds)/float64(workers), "cmds/node")
				cancel()
				cloud.Close()
				b.StartTimer()
			}
			sec := total.Seconds() / float64(b.N)
			if workers == 1 {
				single = sec
			} else if single > 0 {
				b.ReportMetric(sec/single, "ratio")
			}
		})
	}
}

package kubeadm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// BenchmarkScaleOut20 joins 20 new workers to a running cluster (one
// master, one worker) with scale_end, every SSH command of every VM
// delayed by 20 ms (a WAN-ish round trip and a busy VM), one node at a
// time (limit=1, what the reference does) and ten at a time (the
// default). The cluster and the new VMs are built outside the timer.
// Commands per new node are reported.
func BenchmarkScaleOut20(b *testing.B) {
	for _, limit := range []int{1, 10} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
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
				var p sim.ClusterParams
				pkg := lcm.NewPackage(samples.VNFPackage())
				if err := lcm.DecodeParams(req.AdditionalParams, lcm.DecodeOptions{Package: pkg}, lcm.Param(kubeadm.ClusterParamKey, &p).Required()); err != nil {
					b.Fatal(err)
				}
				hooks := &kubeadm.Hooks{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(nil)}, Limit: limit}
				op := kubeadm.Op{Instance: v.Instance(), Package: pkg, Params: p.ClusterParams}
				if _, err := hooks.Instantiate(ctx, lcm.InstantiateEnd, op); err != nil {
					b.Fatal(err)
				}
				aspect := p.WorkerNode.AspectID
				added, err := v.ScaleOut(aspect, 20)
				if err != nil {
					b.Fatal(err)
				}
				for _, h := range v.Hosts() { // the new workers too
					h.SSH.DelayCommands(20 * time.Millisecond)
				}
				b.StartTimer()
				if _, err := hooks.ScaleOut(ctx, lcm.ScaleEnd, op, lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: aspect, NumberOfSteps: 20}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cmds := 0
				for _, h := range added {
					cmds += len(h.SSH.Transcript())
				}
				b.ReportMetric(float64(cmds)/20, "cmds/node")
				cancel()
				cloud.Close()
				b.StartTimer()
			}
		})
	}
}

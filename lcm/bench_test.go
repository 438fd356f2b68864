package lcm_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// BenchmarkFanoutLatency measures the fan-out itself: OnHosts over N
// hosts of the in-process fake SSH server, each running 5 commands (what
// the registry trust costs a fresh node) that do no work but wait 20 ms
// each (sshtest.Server.DelayCommands: a WAN round trip and a busy VM), on
// connections dialled beforehand. Nothing here burns CPU but the SSH
// traffic, so wall time is latency and waves: ideally 100 ms whatever N
// while N is at most the limit. Reported: ms (median wall time of one
// fan-out), min-ms, max-ms, and ratio (median over nodes=1's median, when
// that ran first in this process). The CPU-bound counterpart, where the
// simulated VMs share the client's cores, is BenchmarkTrustFanout in
// examples/drivers.
//
// Reproduce: go test -run '^$' -bench BenchmarkFanoutLatency -benchtime=10x ./lcm/
func BenchmarkFanoutLatency(b *testing.B) {
	const commands, delay = 5, 20 * time.Millisecond
	var one float64
	for _, n := range []int{1, 5, 20, 50} {
		for _, limit := range []int{0, 10} {
			if n == 1 && limit != 0 || limit >= n {
				continue
			}
			name := fmt.Sprintf("nodes=%d/limit=default", n)
			var opts []lcm.Option
			if limit != 0 {
				name = fmt.Sprintf("nodes=%d/limit=%d", n, limit)
				opts = append(opts, lcm.Limit(limit))
			}
			b.Run(name, func(b *testing.B) {
				hosts := make([]*remote.SSHHost, n)
				for i := range hosts {
					srv := sshtest.Start(b, sshtest.Config{Users: []sshtest.User{{Name: "bench", Password: "bench-password"}}})
					srv.DelayCommands(delay)
					h, err := remote.Dial(context.Background(), remote.Config{Addr: srv.Addr(), Name: fmt.Sprintf("node-%02d", i), User: "bench", Password: remote.NewSecret("bench-password"), HostKey: srv.HostKeyPolicy()})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { h.Close() })
					hosts[i] = h
				}
				step := func(ctx context.Context, h *remote.SSHHost) (lcm.Result, error) {
					for range commands {
						if _, err := h.Run(ctx, remote.Command("true")); err != nil {
							return lcm.Unchanged, err
						}
					}
					return lcm.Unchanged, nil
				}
				var spent []time.Duration
				for b.Loop() {
					start := time.Now()
					if _, err := lcm.OnHosts(context.Background(), "bench", hosts, step, opts...); err != nil {
						b.Fatal(err)
					}
					spent = append(spent, time.Since(start))
				}
				slices.Sort(spent)
				ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
				median := ms(spent[len(spent)/2])
				b.ReportMetric(median, "ms")
				b.ReportMetric(ms(spent[0]), "min-ms")
				b.ReportMetric(ms(spent[len(spent)-1]), "max-ms")
				if n == 1 {
					one = median
				} else if one > 0 {
					b.ReportMetric(median/one, "ratio")
				}
			})
		}
	}
}

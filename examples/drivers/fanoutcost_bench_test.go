package drivers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// fleetEnv, set to a node count, makes TestTrustFleetServer serve a
// trustFleet of that many nodes for BenchmarkTrustFanoutCost, which runs
// it in a child process so that the simulated VMs' memory, goroutines and
// descriptors are not counted as the VNFM's.
const fleetEnv = "MGMTKIT_TRUST_FLEET_NODES"

// fleetNode is how the VNFM reaches one node of a served fleet.
type fleetNode struct {
	Name, Addr, User, Password string
	// Listener is where the child's server for Addr (port 22 in the
	// simulated cloud) listens.
	Listener string
}

// fleetInfo is what the child prints: the nodes, its known_hosts file and
// the sample request's additionalParams.
type fleetInfo struct {
	Nodes      []fleetNode
	KnownHosts string
	Params     json.RawMessage
}

// TestTrustFleetServer serves a fleet for BenchmarkTrustFanoutCost when
// fleetEnv is set: it prints a fleetInfo line and serves until its
// standard input closes. Otherwise it is skipped.
func TestTrustFleetServer(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(fleetEnv))
	if err != nil {
		t.Skip("serves a fleet for BenchmarkTrustFanoutCost only")
	}
	f := newTrustFleet(t, n)
	defer f.cloud.Close()
	info := fleetInfo{KnownHosts: f.cloud.KnownHostsFile(), Params: f.params}
	for _, h := range f.vnf.Hosts() {
		nd := h.Node()
		addr := h.SSH.Addr()
		if host, _, _ := net.SplitHostPort(addr); host != nd.SSHAddress {
			t.Fatalf("%s: SSH address %s is not its first listener %s", nd.Resource, nd.SSHAddress, addr)
		}
		info.Nodes = append(info.Nodes, fleetNode{Name: nd.Resource, Addr: nd.SSHAddress, Listener: addr, User: h.Login.User, Password: h.Login.Password})
	}
	b, _ := json.Marshal(info)
	fmt.Printf("FLEET %s\n", b)
	os.Stdin.Read(make([]byte, 1)) // until the parent closes it
}

// servedFleet starts a child process serving n nodes and returns what it
// printed; the child ends with the benchmark.
func servedFleet(b *testing.B, n int) fleetInfo {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestTrustFleetServer$", "-test.v")
	cmd.Env = append(os.Environ(), fleetEnv+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if j, ok := strings.CutPrefix(sc.Text(), "FLEET "); ok {
			var info fleetInfo
			if err := json.Unmarshal([]byte(j), &info); err != nil {
				b.Fatal(err)
			}
			go func() {
				for sc.Scan() { // drain the rest
				}
			}()
			return info
		}
	}
	b.Fatalf("the fleet server printed no FLEET line: %v", sc.Err())
	return fleetInfo{}
}

// usage is a sample of the process's resources.
type usage struct {
	heap       float64 // live heap objects, bytes
	goroutines float64
	fds        float64
}

func sampleUsage() usage {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/sched/goroutines:goroutines"}}
	metrics.Read(s)
	fds, _ := os.ReadDir("/proc/self/fd")
	return usage{heap: float64(s[0].Value.Uint64()), goroutines: float64(s[1].Value.Uint64()), fds: float64(len(fds))}
}

// procStatus returns a /proc/self/status field in KiB.
func procStatus(field string) float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb
		}
	}
	return 0
}

// BenchmarkTrustFanoutCost measures what each host in flight costs the
// VNFM during the registry trust of BenchmarkTrustFanout: the fleet
// (nodes=N, all of them at once: limit=N) is served by a child process,
// so that only the client's side is counted here. Reported, each per
// host in flight, over the process as it was before the fan-out: the peak
// live heap (heap-KiB/host, sampled every millisecond), the peak RSS
// (VmHWM after a reset: rss-KiB/host), goroutines and file descriptors
// (both at their sampled peak). Commands are delayed by 20 ms, as in
// BenchmarkTrustFanout, so that every host is in flight at once.
func BenchmarkTrustFanoutCost(b *testing.B) {
	for _, n := range []int{20, 50} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var heap, rss, gor, fds float64
			for b.Loop() {
				b.StopTimer()
				info := servedFleet(b, n)
				p, err := drivers.DecodeClusterParams(info.Params, lcm.NewPackage(samples.VNFPackage()))
				if err != nil {
					b.Fatal(err)
				}
				policy, err := remote.KnownHosts(info.KnownHosts)
				if err != nil {
					b.Fatal(err)
				}
				listeners := map[string]string{}
				for _, nd := range info.Nodes {
					listeners[net.JoinHostPort(nd.Addr, "22")] = nd.Listener
				}
				dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, network, listeners[addr])
				}
				base := remote.Config{HostKey: policy, Dial: dial, Handshakes: remote.NewHandshakeLimit(8)}
				pkg := lcm.NewPackage(samples.VNFPackage())
				runtime.GC()
				before := sampleUsage()
				os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM
				rssBefore := procStatus("VmRSS")
				peak := before
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					t := time.NewTicker(time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
						}
						u := sampleUsage()
						peak = usage{max(peak.heap, u.heap), max(peak.goroutines, u.goroutines), max(peak.fds, u.fds)}
					}
				})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				b.StartTimer()
				hosts := make([]*remote.SSHHost, len(info.Nodes))
				for i, nd := range info.Nodes {
					hosts[i], err = remote.NewSSHHost(base.For(nd.Addr, nd.Name, nd.User, remote.NewSecret(nd.Password)))
					if err != nil {
						b.Fatal(err)
					}
				}
				rs, err := registry.TrustNodes(ctx, hosts, p.PrivateRegistryConnectionInfo, registry.TrustOptions{Package: pkg}, lcm.Limit(n))
				b.StopTimer()
				close(stop)
				wg.Wait()
				if err != nil || !rs.Changed() {
					b.Fatalf("changed %v, %v", rs.Changed(), err)
				}
				heap += (peak.heap - before.heap) / float64(n) / 1024
				rss += (procStatus("VmHWM") - rssBefore) / float64(n)
				gor += (peak.goroutines - before.goroutines) / float64(n)
				fds += (peak.fds - before.fds) / float64(n)
				for _, h := range hosts {
					h.Close()
				}
				cancel()
				b.StartTimer()
			}
			k := float64(b.N)
			b.ReportMetric(heap/k, "heap-KiB/host")
			b.ReportMetric(rss/k, "rss-KiB/host")
			b.ReportMetric(gor/k, "goroutines/host")
			b.ReportMetric(fds/k, "fds/host")
		})
	}
}

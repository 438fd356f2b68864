package nfs_test

import (
	"context"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// sampleExports are the pv sample's three exports, to the simulated
// cloud's node network.
func sampleExports(tb testing.TB) []nfs.Export {
	n, err := nfs.ParseNetwork(sim.NodeNetwork)
	if err != nil {
		tb.Fatal(err)
	}
	return []nfs.Export{{ExportDir: "/volume/nfs/pv1", ExportTo: n}, {ExportDir: "/volume/nfs/pv2", ExportTo: n}, {ExportDir: "/volume/nfs/pv3", ExportTo: n}}
}

// serverSteps runs the storage server's steps: the volume, the NFS
// server, the sample's three exports.
func serverSteps(ctx context.Context, h remote.Host, vol nfs.Volume, exports []nfs.Export) (lcm.Result, error) {
	res, err := nfs.SetupVolume(ctx, h, vol, nfs.VolumeOptions{})
	if err != nil {
		return res, err
	}
	r, err := nfs.InstallNFSServer(ctx, h, nfs.ServerOptions{})
	if res = res.And(r); err != nil {
		return res, err
	}
	r, err = nfs.ExportNFS(ctx, h, exports, nfs.ExportsOptions{})
	return res.And(r), err
}

// BenchmarkStorageServer counts the storage server's commands for
// SetupVolume, InstallNFSServer and ExportNFS with the pv sample's one
// volume and three exports: "fresh" on a new VM with a blank volume,
// "converged" on a VM they already set up (a rerun of instantiate_end).
func BenchmarkStorageServer(b *testing.B) {
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s := newStorageVM(b)
			exports := sampleExports(b)
			mark := len(s.host.SSH.Transcript())
			b.StartTimer()
			if _, err := serverSteps(s.ctx, s.h, s.vol, exports); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(len(s.host.SSH.Transcript())-mark), "cmds/node")
			s.cloud.Close()
			b.StartTimer()
		}
	})
	b.Run("converged", func(b *testing.B) {
		s := newStorageVM(b)
		exports := sampleExports(b)
		if _, err := serverSteps(s.ctx, s.h, s.vol, exports); err != nil {
			b.Fatal(err)
		}
		mark := len(s.host.SSH.Transcript())
		for b.Loop() {
			if res, err := serverSteps(s.ctx, s.h, s.vol, exports); err != nil || res.Changed {
				b.Fatalf("converged: %v, %v", res, err)
			}
		}
		b.ReportMetric(float64(len(s.host.SSH.Transcript())-mark)/float64(b.N), "cmds/node")
	})
}

// BenchmarkNFSClient counts a node's commands for InstallNFSClient,
// fresh and converged.
func BenchmarkNFSClient(b *testing.B) {
	for _, fresh := range []bool{true, false} {
		name := map[bool]string{true: "fresh", false: "converged"}[fresh]
		b.Run(name, func(b *testing.B) {
			s := newStorageVM(b)
			master := s.vnf.HostsWithRole(lcm.RoleMaster)[0]
			h, err := s.cloud.Connect(s.ctx, master.Node(), master.Login.User, master.Login.Password)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			if _, err := h.Run(s.ctx, remote.Cmd{Args: []string{"true"}, Sudo: true}); err != nil {
				b.Fatal(err)
			}
			if !fresh {
				if _, err := nfs.InstallNFSClient(s.ctx, h, system.PackagesOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			cmds := 0
			for b.Loop() {
				if fresh {
					b.StopTimer()
					if _, err := h.Run(s.ctx, remote.Cmd{Args: []string{"apt-get", "remove", "-y", "-q", nfs.ClientPackage}, Sudo: true}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				mark := len(master.SSH.Transcript())
				if _, err := nfs.InstallNFSClient(s.ctx, h, system.PackagesOptions{}); err != nil {
					b.Fatal(err)
				}
				cmds += len(master.SSH.Transcript()) - mark
			}
			b.ReportMetric(float64(cmds)/float64(b.N), "cmds/node")
		})
	}
}

// BenchmarkRegisterPV counts the control plane's commands for registering
// the pv sample's three PersistentVolumes: "fresh" after DeletePVs
// removed them, "converged" when they are there.
func BenchmarkRegisterPV(b *testing.B) {
	c := kubescenarios.NewStorageCluster(b, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	c.Instantiate()
	master := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
	h, err := c.Cloud.Connect(c.Ctx, master.Node(), master.Login.User, master.Login.Password)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	k := kubeapi.Kubectl{Host: h}
	pkg := lcm.NewPackage(samples.VNFPackage())
	var pvs []nfs.PV
	var names []string
	for _, f := range []string{"Files/kubernetes/nfs-pv1.yaml", "Files/kubernetes/nfs-pv2.yaml", "Files/kubernetes/nfs-pv3.yaml"} {
		pv, err := nfs.ReadPV(pkg, f)
		if err != nil {
			b.Fatal(err)
		}
		pvs = append(pvs, pv)
		names = append(names, pv.Name)
	}
	opts := nfs.PVOptions{Instance: c.VNF.ID()}
	server := c.VNF.HostsWithRole(lcm.RoleStorage)[0].NICAddress
	for _, fresh := range []bool{true, false} {
		b.Run(map[bool]string{true: "fresh", false: "converged"}[fresh], func(b *testing.B) {
			cmds := 0
			for b.Loop() {
				if fresh {
					b.StopTimer()
					if _, err := nfs.DeletePVs(c.Ctx, k, names, opts); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				mark := len(master.SSH.Transcript())
				for _, pv := range pvs {
					if _, err := nfs.RegisterPV(c.Ctx, k, pv, server, opts); err != nil {
						b.Fatal(err)
					}
				}
				cmds += len(master.SSH.Transcript()) - mark
			}
			b.ReportMetric(float64(cmds)/float64(b.N), "cmds/node")
		})
	}
}

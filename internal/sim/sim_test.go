package sim_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// The groups of the samples' parameters.
var (
	masters = heat.Group{Role: lcm.RoleMaster, AspectID: "master_instance", SSHCP: "masterNode_CP1", NICCP: "masterNode_CP1"}
	workers = heat.Group{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP2", NICCP: "workerNode_CP2"}
	storage = heat.Group{Role: lcm.RoleStorage, SSHCP: "storage_server_CP"}
)

type world struct {
	t     *testing.T
	ctx   context.Context
	cloud *sim.Cloud
	heat  *heat.Client
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c := sim.Start(t, sim.Options{})
	hc, err := c.HeatClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, ctx: ctx, cloud: c, heat: hc}
}

// build builds the Kubernetes cluster VNF of the sample request name
// with shape.
func (w *world) build(name string, shape sim.ClusterShape) *sim.VNF {
	w.t.Helper()
	_, topo, err := w.cloud.SampleCluster(name, shape)
	if err != nil {
		w.t.Fatal(err)
	}
	v, err := w.cloud.Build(topo)
	if err != nil {
		w.t.Fatal(err)
	}
	return v
}

// connect dials a node as the samples' user, verifying its host key.
func (w *world) connect(n lcm.Node) *remote.SSHHost {
	w.t.Helper()
	h, err := w.cloud.Connect(w.ctx, n, "ubuntu", "ubuntu")
	if err != nil {
		w.t.Fatalf("connect to %s: %v", n, err)
	}
	w.t.Cleanup(func() { h.Close() })
	return h
}

func (w *world) run(h remote.Host, args ...string) string {
	w.t.Helper()
	out, err := h.Run(w.ctx, remote.Cmd{Args: args})
	if err != nil {
		w.t.Fatalf("%s: %v", h.Name(), err)
	}
	return strings.TrimSpace(string(out.Stdout))
}

func TestEveryNodeAnswersAtTheAddressHeatReports(t *testing.T) {
	w := newWorld(t)
	v := w.build(samples.InstantiatePVCluster, sim.ClusterShape{Masters: 3, Workers: 2})
	nodes, err := w.heat.Nodes(w.ctx, v.StackID(), masters, workers, storage)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 6 {
		t.Fatalf("Heat reports %d nodes, want 3 masters, 2 workers and the storage server", len(nodes))
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		host := w.cloud.Host(n.SSHAddress)
		if host == nil || host.ServerID != n.ServerID || host.Role != n.Role || host.Resource != n.Resource {
			t.Fatalf("node %s: the cloud's host at %s is %+v", n, n.SSHAddress, host)
		}
		if !strings.HasPrefix(n.SSHAddress, "127.") || seen[n.SSHAddress] {
			t.Errorf("node %s: address %s is not a distinct loopback address", n, n.SSHAddress)
		}
		seen[n.SSHAddress] = true
		h := w.connect(n)
		if got := w.run(h, "hostname"); got != host.SSH.Hostname() {
			t.Errorf("%s: hostname %q, want %q", n, got, host.SSH.Hostname())
		}
		osr, err := system.ReadOSRelease(w.ctx, h)
		if err != nil || osr.ID() != "ubuntu" || osr.VersionID() != "22.04" {
			t.Errorf("%s: os-release %v, %v", n, osr, err)
		}
		// The sample's user has passwordless sudo, as on cloud images.
		out, err := h.Run(w.ctx, remote.Cmd{Args: []string{"id", "-un"}, Sudo: true})
		if err != nil || strings.TrimSpace(string(out.Stdout)) != "root" {
			t.Errorf("%s: sudo id -un = %q, %v", n, out.Stdout, err)
		}
	}

	// The cluster VIP is a top-level port (three masters) that the
	// masters' ports allow.
	addr, err := w.heat.ClusterAddress(w.ctx, v.StackID(), masters, "masterNode_CP1", "")
	if err != nil || addr.IP != v.VIP() || addr.IP == "" {
		t.Errorf("cluster address %+v, %v; want the VIP %s", addr, err, v.VIP())
	}
	// The Cinder volume is a block device on the storage server.
	vol, err := w.heat.Volume(w.ctx, v.StackID(), "storage_server_volume")
	if err != nil {
		t.Fatal(err)
	}
	st := v.HostsWithRole(lcm.RoleStorage)[0]
	if vol.ServerID != st.ServerID || vol.Device != "/dev/vdb" || st.Disks["/dev/vdb"] == nil {
		t.Errorf("volume %+v; storage server %s has disks %v", vol, st.ServerID, st.Disks)
	}
}

func TestRegistryVNF(t *testing.T) {
	w := newWorld(t)
	_, topo, err := w.cloud.SampleRegistry(samples.InstantiateCIRRegistry)
	if err != nil {
		t.Fatal(err)
	}
	v, err := w.cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := w.heat.Nodes(w.ctx, v.StackName(), heat.Group{Role: lcm.RoleRegistry, SSHCP: "CP1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].Resource != "VDU1" {
		t.Fatalf("nodes %v", nodes)
	}
	h := w.connect(nodes[0])
	if got := w.run(h, "id", "-un"); got != "ubuntu" {
		t.Errorf("logged in as %q", got)
	}
}

func TestScaleOutAndInKeepHeatAndHostsConsistent(t *testing.T) {
	w := newWorld(t)
	v := w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 2, MinWorkers: 1})
	before, err := w.heat.Nodes(w.ctx, v.StackID(), workers)
	if err != nil {
		t.Fatal(err)
	}
	added, err := v.ScaleOut("worker_instance", 2)
	if err != nil {
		t.Fatal(err)
	}
	after, err := w.heat.Nodes(w.ctx, v.StackID(), workers)
	if err != nil {
		t.Fatal(err)
	}
	targets := heat.ScaleOutTargets(before, after)
	if len(added) != 2 || len(targets) != 2 || targets[0].ServerID != added[0].ServerID || targets[1].ServerID != added[1].ServerID {
		t.Fatalf("added %d hosts, Heat's new members %v", len(added), targets)
	}
	for _, n := range targets {
		w.connect(n)
	}

	victims, err := w.heat.ScaleInTargets(w.ctx, v.StackID(), workers, lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: "worker_instance", NumberOfSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(victims) != 1 || victims[0].ServerID != before[0].ServerID {
		t.Fatalf("scale-in targets %v, want the oldest worker %s", victims, before[0])
	}
	removed, err := v.ScaleIn("worker_instance", victims[0].Resource)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].ServerID != victims[0].ServerID {
		t.Fatalf("removed %v", removed)
	}
	if w.cloud.Host(victims[0].SSHAddress) != nil || len(v.HostsWithRole(lcm.RoleWorker)) != 3 {
		t.Errorf("the removed worker still runs, or the count is off: %d workers", len(v.HostsWithRole(lcm.RoleWorker)))
	}
	ctx, cancel := context.WithTimeout(w.ctx, 500*time.Millisecond)
	defer cancel()
	if h, err := w.cloud.Connect(ctx, victims[0], "ubuntu", "ubuntu"); err == nil {
		h.Close()
		t.Error("the removed worker still answers SSH")
	}
	now, err := w.heat.Nodes(w.ctx, v.StackID(), workers)
	if err != nil || len(now) != 3 {
		t.Errorf("Heat reports %d workers (%v), want 3", len(now), err)
	}
	if _, err := v.ScaleIn("worker_instance", "no-such-member"); err == nil {
		t.Error("scaling in an unknown member succeeded")
	}
	if _, err := v.ScaleOut("wrkr_instance", 1); err == nil || !strings.Contains(err.Error(), "worker_instance") {
		t.Errorf("scaling out an unknown group: %v", err)
	}
	if len(v.HostsWithRole(lcm.RoleWorker)) != 3 {
		t.Error("a failed scale changed the hosts")
	}
}

// Delete is a terminate's stack delete: the VNF's VMs stop answering,
// Heat no longer has the stack, and the cloud's other hosts stay.
func TestDeleteStopsEveryVMAndTheStack(t *testing.T) {
	w := newWorld(t)
	v := w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1})
	other := w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1})
	gone := v.Hosts()
	if err := v.Delete(); err != nil {
		t.Fatal(err)
	}
	if n := len(v.Hosts()); n != 0 {
		t.Errorf("%d hosts of the deleted VNF still run", n)
	}
	for _, h := range gone {
		if w.cloud.Host(h.SSHAddress) != nil {
			t.Errorf("%s still answers at %s", h.Resource, h.SSHAddress)
		}
	}
	if _, err := w.heat.Nodes(w.ctx, v.StackID(), workers); err == nil {
		t.Error("Heat still has the deleted VNF's stack")
	}
	if len(other.Hosts()) != 2 {
		t.Errorf("the other VNF has %d hosts, want 2", len(other.Hosts()))
	}
	w.connect(other.HostsWithRole(lcm.RoleWorker)[0].Node())
	if err := v.Delete(); err == nil {
		t.Error("a second Delete succeeded")
	}
}

func TestHealReplacesTheHostWithAFreshOne(t *testing.T) {
	for _, newAddr := range []bool{false, true} {
		t.Run(map[bool]string{false: "same address", true: "new address"}[newAddr], func(t *testing.T) {
			w := newWorld(t)
			v := w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 2})
			old := v.HostsWithRole(lcm.RoleWorker)[1]
			oldNode := old.Node()
			h := w.connect(oldNode)
			w.run(h, "touch", "/home/ubuntu/was-here")
			h.Close()
			staleCfg, err := w.cloud.SSHConfig()
			if err != nil {
				t.Fatal(err)
			}

			inst := v.Instance()
			var vnfc string
			for _, r := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
				if r.ComputeResource.ResourceID == old.ServerID {
					vnfc = r.ID
				}
			}
			healed, err := v.Heal(old.ServerID, sim.HealOptions{NewAddresses: newAddr})
			if err != nil {
				t.Fatal(err)
			}

			// Heat now reports the new server, at the new or same address.
			nodes, err := w.heat.Nodes(w.ctx, v.StackID(), masters, workers)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := heat.HealTargets(v.Instance(), lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}, nodes)
			if err != nil {
				t.Fatal(err)
			}
			n := plan.Nodes[0]
			if n.ServerID == old.ServerID || n.ServerID != healed.ServerID || n.Resource != old.Resource || n.Role != lcm.RoleWorker {
				t.Errorf("heal target %+v, healed host %s (old server %s)", n, healed.ServerID, old.ServerID)
			}
			if (n.SSHAddress != oldNode.SSHAddress) != newAddr {
				t.Errorf("address %s → %s, new addresses %v", oldNode.SSHAddress, n.SSHAddress, newAddr)
			}
			h = w.connect(n)
			if out, err := h.Run(w.ctx, remote.Cmd{Args: []string{"test", "-e", "/home/ubuntu/was-here"}, OKExit: []int{1}}); err != nil || out.ExitCode != 1 {
				t.Errorf("the healed host is not fresh: test -e = %d, %v", out.ExitCode, err)
			}
			if w.cloud.HostByServer(old.ServerID) != nil {
				t.Error("the old server still runs")
			}

			// The healed VM has a new host key: a policy made before the
			// heal refuses it.
			staleCfg.Addr, staleCfg.User, staleCfg.Password = n.SSHAddress, "ubuntu", remote.NewSecret("ubuntu")
			ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
			defer cancel()
			stale, err := remote.Dial(ctx, staleCfg)
			var hk *remote.HostKeyError
			if newAddr {
				if err == nil {
					stale.Close()
					t.Error("the old address still answers")
				}
			} else if !errors.As(err, &hk) {
				if err == nil {
					stale.Close()
				}
				t.Errorf("dial with the pre-heal known_hosts: %v, want a host key error", err)
			}
		})
	}
}

func TestHealKeepsTheVolumeData(t *testing.T) {
	w := newWorld(t)
	v := w.build(samples.InstantiatePVCluster, sim.ClusterShape{Masters: 1, Workers: 1})
	st := v.HostsWithRole(lcm.RoleStorage)[0]
	h := w.connect(st.Node())
	sudo := func(h remote.Host, args ...string) {
		t.Helper()
		if _, err := h.Run(w.ctx, remote.Cmd{Args: args, Sudo: true}); err != nil {
			t.Fatal(err)
		}
	}
	sudo(h, "mkfs.ext4", "/dev/vdb")
	sudo(h, "mkdir", "-p", "/volume")
	sudo(h, "mount", "/dev/vdb", "/volume")
	sudo(h, "touch", "/volume/data")
	h.Close()

	healed, err := v.Heal(st.ServerID, sim.HealOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hasMount(healed, "/volume") || healed.FS().Exists("/volume") {
		t.Error("the healed storage server is not fresh")
	}
	vol, err := w.heat.Volume(w.ctx, v.StackID(), "storage_server_volume")
	if err != nil || vol.ServerID != healed.ServerID {
		t.Fatalf("volume %+v, %v; want it attached to %s", vol, err, healed.ServerID)
	}
	h = w.connect(healed.Node())
	out, err := h.Run(w.ctx, remote.Cmd{Args: []string{"blkid", "-o", "value", "-s", "TYPE", "/dev/vdb"}, Sudo: true})
	if err != nil || strings.TrimSpace(string(out.Stdout)) != "ext4" {
		t.Fatalf("blkid on the healed server: %q, %v; want the volume's ext4", out.Stdout, err)
	}
	sudo(h, "mkdir", "-p", "/volume")
	sudo(h, "mount", "/dev/vdb", "/volume")
	if _, err := healed.FS().Stat("/volume/data"); err != nil {
		t.Errorf("the volume's data did not survive the heal: %v", err)
	}
	if _, err := st.FS().Stat("/volume/data"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the retired host still shows the volume's data: %v", err)
	}
}

func hasMount(h *sim.Host, target string) bool {
	for _, m := range h.Machine.Mounts() {
		if m.Target == target {
			return true
		}
	}
	return false
}

func TestKubesprayTopologyHasALoadBalancerAndAnAnsibleServer(t *testing.T) {
	w := newWorld(t)
	v := w.build(samples.InstantiateKubespray, sim.ClusterShape{Masters: 3, Workers: 2})
	nodes, err := w.heat.Nodes(w.ctx, v.StackID(), masters, workers, heat.Group{Role: lcm.RoleLoadBalancer, SSHCP: "externalLB_instance"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 6 || nodes[5].Role != lcm.RoleLoadBalancer {
		t.Fatalf("nodes %v", nodes)
	}
	a := w.cloud.AnsibleServer() // started for the request's ansible.ip_address
	if a == nil || a.Role != lcm.RoleAnsible {
		t.Fatalf("Ansible server %+v", a)
	}
	for _, h := range v.Hosts() {
		if h == a {
			t.Error("the Ansible server counts as a VM of the VNF")
		}
	}
	req, _, err := w.cloud.SampleCluster(samples.InstantiateKubespray, sim.ClusterShape{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(req.AdditionalParams), `"ip_address":"`+a.SSHAddress+`"`) &&
		!strings.Contains(string(req.AdditionalParams), `"ip_address": "`+a.SSHAddress+`"`) {
		t.Errorf("the working request does not name the Ansible server %s:\n%s", a.SSHAddress, req.AdditionalParams)
	}
	h, err := w.cloud.Connect(w.ctx, a.Node(), "ansible", "ansible")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := w.run(h, "id", "-un"); got != "ansible" {
		t.Errorf("logged in as %q", got)
	}
}

func TestDialOnlyReachesSimulatedHosts(t *testing.T) {
	w := newWorld(t)
	w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1})
	for _, addr := range []string{"127.0.250.250:22", "10.0.0.1:22", "192.168.0.10"} {
		if c, err := w.cloud.Dial(w.ctx, "tcp", addr); err == nil {
			c.Close()
			t.Errorf("dial %s reached something", addr)
		}
	}
	h := w.cloud.Hosts()[0]
	if c, err := w.cloud.Dial(w.ctx, "tcp", h.SSHAddress+":2222"); err == nil {
		c.Close()
		t.Error("dial on port 2222 reached a host")
	}
	c, err := w.cloud.Dial(w.ctx, "tcp", h.SSHAddress+":22")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestKubernetesClusterTopologyErrors(t *testing.T) {
	if _, err := sim.KubernetesCluster(drivers.ClusterParams{}, sim.ClusterShape{}, nil); err == nil {
		t.Error("no master_node accepted")
	}
	vms := drivers.ClusterParams{ClusterParams: kubeadm.ClusterParams{MasterNode: kubeadm.NodeParams{SSHCPName: "m"}}}
	if _, err := sim.KubernetesCluster(vms, sim.ClusterShape{Masters: 3}, nil); err == nil {
		t.Error("three masters without an aspect_id accepted")
	}
	w := newWorld(t)
	if _, _, err := w.cloud.SampleCluster(samples.InstantiateCIRRegistry, sim.ClusterShape{}); err == nil || !strings.Contains(err.Error(), "k8s_cluster_installation_param: is required") {
		t.Errorf("a registry request as a cluster: %v", err)
	}
}

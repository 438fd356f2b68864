package kubeadm_test

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// simCluster is a Kubernetes cluster VNF's VMs in the simulated cloud,
// with an SDK connection to each, ready for kubeadm: containerd on the
// systemd cgroup driver, IP forwarding on, the 1.36 packages installed
// (what PrepareNode, InstallContainerd and InstallKubernetes do, which
// their own tests cover).
type simCluster struct {
	t       *testing.T
	ctx     context.Context
	cloud   *sim.Cloud
	masters []*sim.Host
	workers []*sim.Host
	vnf     *sim.VNF
	ssh     map[*sim.Host]*remote.SSHHost
}

func newSimCluster(t *testing.T, shape sim.ClusterShape) *simCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cloud := sim.Start(t, sim.Options{})
	_, topo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, shape)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	c := &simCluster{t: t, ctx: ctx, cloud: cloud, masters: v.HostsWithRole(lcm.RoleMaster), workers: v.HostsWithRole(lcm.RoleWorker), vnf: v, ssh: map[*sim.Host]*remote.SSHHost{}}
	for _, h := range append(slices.Clone(c.masters), c.workers...) {
		s, err := cloud.Connect(ctx, h.Node(), "ubuntu", "ubuntu")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		c.ssh[h] = s
		if err := h.FS().MkdirAll("/etc/containerd", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := h.FS().WriteFile("/etc/containerd/config.toml", []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs := []string{"containerd", "kubelet", "kubeadm", "kubectl"}
		if h.Role == lcm.RoleMaster && len(c.masters) > 1 {
			pkgs = append(pkgs, "haproxy", "keepalived")
		}
		if err := h.Machine.InstallPackages(pkgs...); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(ctx, remote.Cmd{Args: []string{"sysctl", "-w", "net.ipv4.ip_forward=1"}, Sudo: true}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// name is a host's node name.
func (c *simCluster) name(h *sim.Host) string { return kubeadm.NodeName(h.Role, h.NICAddress) }

// twice runs step twice: the first run changes something, the second
// nothing.
func (c *simCluster) twice(what string, step func() (lcm.Result, error)) lcm.Result {
	c.t.Helper()
	first, err := step()
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	if !first.Changed {
		c.t.Errorf("%s: first run changed nothing", what)
	}
	second, err := step()
	if err != nil || second.Changed {
		c.t.Fatalf("%s, second run: %v, %v", what, second, err)
	}
	return first
}

// world returns the cluster the master belongs to.
func (c *simCluster) world() *kube.Cluster {
	c.t.Helper()
	k := c.cloud.Kube().ClusterOf(c.masters[0].Machine)
	if k == nil {
		c.t.Fatal("no cluster")
	}
	return k
}

// readyNodes returns the cluster's node names, and which of them are
// Ready, as the world's API has them.
func (c *simCluster) readyNodes() (names, ready []string) {
	c.t.Helper()
	nodes, err := c.world().Nodes(c.ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, n := range nodes {
		names = append(names, n.Name)
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready = append(ready, n.Name)
			}
		}
	}
	return names, ready
}

// The cluster steps build a cluster of one master and two workers in the
// simulated cloud, whose fakes (kubeadm, kubelet, kubectl, the API
// server's controllers) behave as upstream's: init, the CNI, joins with
// fresh credentials, Ready nodes, VIM credentials the API server
// accepts, a drain a PodDisruptionBudget stops, and the removal of a
// worker. Every step's second run changes nothing.
func TestClusterStepsInTheSimulatedCloud(t *testing.T) {
	c := newSimCluster(t, sim.ClusterShape{Masters: 1, Workers: 2})
	master := c.masters[0]
	ms := c.ssh[master]
	k := kubeapi.Kubectl{Host: ms}
	endpoint := master.NICAddress + ":6443"

	c.twice("init", func() (lcm.Result, error) {
		return kubeadm.InitControlPlane(c.ctx, ms, kubeadm.InitOptions{
			NodeName: c.name(master), AdvertiseAddress: master.NICAddress, Endpoint: endpoint,
			PodCIDR: netip.MustParsePrefix(kubeadm.DefaultPodCIDR), ServiceCIDR: netip.MustParsePrefix(kubeadm.DefaultClusterCIDR),
		})
	})
	if w := c.world(); w.Endpoint != endpoint || !strings.HasPrefix(w.Version, "v1.36.") {
		t.Fatalf("cluster %s, Kubernetes %s", w.Endpoint, w.Version)
	}
	cni, err := fs.ReadFile(samples.VNFPackage(), "Files/kubernetes/cni.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.twice("CNI", func() (lcm.Result, error) { return kubeadm.ApplyCNI(c.ctx, k, cni) })
	if err := kubeapi.WaitNodeReady(c.ctx, k, c.name(master), time.Minute); err != nil {
		t.Fatal(err)
	}

	info, err := kubeadm.NewJoinInfo(c.ctx, ms, master.NICAddress, endpoint, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.workers {
		c.twice("join "+c.name(w), func() (lcm.Result, error) {
			return kubeadm.JoinNode(c.ctx, c.ssh[w], kubeadm.JoinOptions{NodeName: c.name(w), AdvertiseAddress: w.NICAddress, Info: info})
		})
		if err := kubeapi.WaitNodeReady(c.ctx, k, c.name(w), time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{info.Token.Reveal()} {
			for _, e := range w.SSH.Transcript() {
				if strings.Contains(e.Command, s) {
					t.Errorf("token in %q", e.Command)
				}
			}
		}
		if w.FS().Exists(kubeadm.JoinConfigFile) {
			t.Errorf("%s: join.yaml left", c.name(w))
		}
	}
	names, ready := c.readyNodes()
	want := []string{c.name(master), c.name(c.workers[0]), c.name(c.workers[1])}
	slices.Sort(want)
	if slices.Sort(names); !slices.Equal(names, want) || len(ready) != 3 {
		t.Fatalf("nodes %v, Ready %v; want %v all Ready", names, ready, want)
	}

	// VIM credentials: the API server authenticates the token as the
	// service account and lets it do anything.
	vimOpts := kubeapi.VIMOptions{Name: "kubernetes_vim_1", Endpoint: "https://" + endpoint}
	var vim lcm.VimConnectionInfo
	c.twice("VIM credentials", func() (lcm.Result, error) {
		var res lcm.Result
		var err error
		vim, res, err = kubeapi.CreateVIMCredentials(c.ctx, k, vimOpts)
		return res, err
	})
	api := c.world().API
	user, groups, err := api.Authenticate(c.ctx, vim.AccessInfo["bearer_token"].(string))
	if err != nil || user != "system:serviceaccount:kube-system:mgmtkit-vim" {
		t.Fatalf("the VIM token authenticates as %q (%v)", user, err)
	}
	if ok, err := api.Authorize(c.ctx, user, groups, "create", "apps", "deployments", "default"); err != nil || !ok {
		t.Fatalf("the VIM's account may not create deployments: %v %v", ok, err)
	}
	if vim.InterfaceInfo["ssl_ca_cert"] != string(c.world().CACert) {
		t.Fatal("ssl_ca_cert is not the cluster CA")
	}

	// A Deployment whose PodDisruptionBudget allows no disruption: the
	// drain of a worker that runs one of its pods stops, names the pod,
	// and leaves the node.
	app := []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: default
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
`)
	if _, err := k.Apply(c.ctx, app); err != nil {
		t.Fatal(err)
	}
	victim := c.name(c.workers[0])
	var onVictim []string
	if err := waitFor(c.ctx, func() bool {
		pods, err := k.PodsOn(c.ctx, victim)
		if err != nil {
			t.Fatal(err)
		}
		onVictim = onVictim[:0]
		for _, p := range pods {
			if strings.HasPrefix(p.Name, "web-") && p.Status.Phase == corev1.PodRunning {
				onVictim = append(onVictim, p.Namespace+"/"+p.Name)
			}
		}
		return len(onVictim) > 0
	}); err != nil {
		t.Fatalf("no web pod runs on %s", victim)
	}
	_, err = kubeapi.DrainNode(c.ctx, k, victim, kubeapi.DrainOptions{Timeout: 2 * time.Second})
	var de *kubeapi.DrainError
	if !errors.As(err, &de) {
		t.Fatalf("drain under a PodDisruptionBudget: %v, want a *DrainError", err)
	}
	for _, p := range onVictim {
		if !slices.Contains(de.Pods, p) {
			t.Errorf("DrainError %v does not name %s", de, p)
		}
	}
	if node, err := k.Node(c.ctx, victim); err != nil || node == nil || !node.Spec.Unschedulable {
		t.Fatalf("after the blocked drain: %+v, %v; want the node kept, cordoned", node, err)
	}

	// Without the budget the drain finishes, the pods move to the other
	// worker, and the node goes (as scale-in does it).
	if _, err := ms.Run(c.ctx, remote.Cmd{Args: []string{"kubectl", "--kubeconfig=" + kubeapi.AdminKubeconfig, "delete", "poddisruptionbudget", "web", "--namespace=default"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	c.twice("drain "+victim, func() (lcm.Result, error) {
		return kubeapi.DrainNode(c.ctx, k, victim, kubeapi.DrainOptions{Timeout: time.Minute})
	})
	// kubeadm reset first: it stops the node's kubelet, which would
	// otherwise be free to register the Node again.
	c.twice("reset "+victim, func() (lcm.Result, error) { return kubeadm.ResetNode(c.ctx, c.ssh[c.workers[0]]) })
	c.twice("delete "+victim, func() (lcm.Result, error) { return kubeapi.DeleteNode(c.ctx, k, victim) })
	names, _ = c.readyNodes()
	if slices.Contains(names, victim) || len(names) != 2 {
		t.Fatalf("nodes after the removal: %v", names)
	}
	if err := waitFor(c.ctx, func() bool {
		pods, err := k.PodsOn(c.ctx, c.name(c.workers[1]))
		if err != nil {
			t.Fatal(err)
		}
		web := 0
		for _, p := range pods {
			if strings.HasPrefix(p.Name, "web-") && p.Status.Phase == corev1.PodRunning {
				web++
			}
		}
		return web == 2
	}); err != nil {
		t.Fatal("the web pods did not move to the other worker")
	}

	c.twice("delete VIM credentials", func() (lcm.Result, error) { return kubeapi.DeleteVIMCredentials(c.ctx, k, vimOpts) })
	if _, _, err := api.Authenticate(c.ctx, vim.AccessInfo["bearer_token"].(string)); err == nil {
		t.Fatal("the VIM token still authenticates after DeleteVIMCredentials")
	}
}

// waitFor polls cond every 50 ms for at most 20 seconds.
func waitFor(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Three masters behind HAProxy and keepalived (nodesteps' steps) at the
// VIP: the first initialises the cluster at VIP:16443, the others join
// as control planes with a certificate key, each with its etcd member.
// A master heal then removes one master (node, etcd member by exact
// name) and joins its VM again.
func TestHAControlPlaneAndMasterHealInTheSimulatedCloud(t *testing.T) {
	c := newSimCluster(t, sim.ClusterShape{Masters: 3, Workers: 1})
	vip := c.vnf.VIP()
	if vip == "" {
		t.Fatal("no VIP")
	}
	endpoint := vip + ":16443"
	lb := kubeadm.APIServerLB{VIP: netip.PrefixFrom(netip.MustParseAddr(vip), 24), Interface: "ens3"}
	for _, m := range c.masters {
		lb.Backends = append(lb.Backends, kubeadm.Backend{Name: c.name(m), Address: m.NICAddress})
	}
	for i, m := range c.masters {
		lb := lb
		lb.Priority = 103 - i
		if _, err := kubeadm.ConfigureHAProxy(c.ctx, c.ssh[m], lb); err != nil {
			t.Fatal(err)
		}
		if _, err := kubeadm.ConfigureKeepalived(c.ctx, c.ssh[m], lb); err != nil {
			t.Fatal(err)
		}
	}
	first := c.masters[0]
	k := kubeapi.Kubectl{Host: c.ssh[first]}
	c.twice("init", func() (lcm.Result, error) {
		return kubeadm.InitControlPlane(c.ctx, c.ssh[first], kubeadm.InitOptions{
			NodeName: c.name(first), AdvertiseAddress: first.NICAddress, Endpoint: endpoint,
			PodCIDR: netip.MustParsePrefix(kubeadm.DefaultPodCIDR), ServiceCIDR: netip.MustParsePrefix(kubeadm.DefaultClusterCIDR),
		})
	})
	if got := c.world().Endpoint; got != endpoint {
		t.Fatalf("cluster endpoint %s, want %s", got, endpoint)
	}
	cni, err := fs.ReadFile(samples.VNFPackage(), "Files/kubernetes/cni.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubeadm.ApplyCNI(c.ctx, k, cni); err != nil {
		t.Fatal(err)
	}
	joinMaster := func(m *sim.Host) {
		t.Helper()
		info, err := kubeadm.NewJoinInfo(c.ctx, c.ssh[first], first.NICAddress, endpoint, true)
		if err != nil {
			t.Fatal(err)
		}
		c.twice("control-plane join "+c.name(m), func() (lcm.Result, error) {
			return kubeadm.JoinNode(c.ctx, c.ssh[m], kubeadm.JoinOptions{NodeName: c.name(m), AdvertiseAddress: m.NICAddress, ControlPlane: true, Info: info})
		})
		if err := kubeapi.WaitNodeReady(c.ctx, k, c.name(m), time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, e := range append(first.SSH.Transcript(), m.SSH.Transcript()...) {
			if strings.Contains(e.Command, info.CertificateKey.Reveal()) || strings.Contains(e.Command, info.Token.Reveal()) {
				t.Errorf("a join credential in %q", e.Command)
			}
		}
	}
	for _, m := range c.masters[1:] {
		joinMaster(m)
	}
	worker := c.workers[0]
	info, err := kubeadm.NewJoinInfo(c.ctx, c.ssh[first], first.NICAddress, endpoint, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubeadm.JoinNode(c.ctx, c.ssh[worker], kubeadm.JoinOptions{NodeName: c.name(worker), AdvertiseAddress: worker.NICAddress, Info: info}); err != nil {
		t.Fatal(err)
	}
	names, ready := c.readyNodes()
	if len(names) != 4 || len(ready) != 4 {
		t.Fatalf("nodes %v, Ready %v", names, ready)
	}
	etcdNames := func() []string {
		t.Helper()
		members, err := kubeadm.EtcdMembers(c.ctx, k, c.name(first))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range members {
			out = append(out, m.Name)
		}
		slices.Sort(out)
		return out
	}
	var masterNames []string
	for _, m := range c.masters {
		masterNames = append(masterNames, c.name(m))
	}
	slices.Sort(masterNames)
	if got := etcdNames(); !slices.Equal(got, masterNames) {
		t.Fatalf("etcd members %v, want %v", got, masterNames)
	}

	// Master heal of the third master, from the first: its etcd member
	// goes (by exact name, as when its VM is lost), its VM is reset (the
	// kubelet stops) and its node deleted; then it joins again.
	healed := c.masters[2]
	if res, err := kubeadm.RemoveEtcdMember(c.ctx, k, c.name(first), c.name(healed)); err != nil || !res.Changed {
		t.Fatalf("remove the etcd member: %v, %v", res, err)
	}
	if got := etcdNames(); len(got) != 2 || slices.Contains(got, c.name(healed)) {
		t.Fatalf("etcd members after the removal: %v", got)
	}
	if _, err := kubeadm.ResetNode(c.ctx, c.ssh[healed]); err != nil {
		t.Fatal(err)
	}
	c.twice("delete "+c.name(healed), func() (lcm.Result, error) { return kubeapi.DeleteNode(c.ctx, k, c.name(healed)) })
	if res, err := kubeadm.RemoveEtcdMember(c.ctx, k, c.name(first), c.name(healed)); err != nil || res.Changed {
		t.Fatalf("second removal: %v, %v", res, err)
	}
	joinMaster(healed)
	if got := etcdNames(); !slices.Equal(got, masterNames) {
		t.Fatalf("etcd members after the heal %v, want %v", got, masterNames)
	}
	if _, ready := c.readyNodes(); len(ready) != 4 {
		t.Fatalf("Ready after the heal: %v", ready)
	}
}

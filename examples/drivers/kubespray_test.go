package drivers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/ansible"
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
	return newKSWith(t, shape, opts, nil)
}

// newKSWith is newKS with the spec's sample request changed by edits
// (samples.Patch paths).
func newKSWith(t *testing.T, shape sim.ClusterShape, opts sim.Options, edits map[string]any) *ksWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	log := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx = lcm.WithLogger(ctx, logger)
	cloud := sim.Start(t, opts)
	body, err := cloud.Request(samples.InstantiateKubespray)
	if err == nil && edits != nil {
		body, err = samples.Patch(body, edits)
	}
	if err != nil {
		t.Fatal(err)
	}
	req, topo, err := cloud.ClusterFrom(samples.InstantiateKubespray, body, shape)
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

// ansibleServer returns the simulated Ansible server.
func (w *ksWorld) ansibleServer() *sim.Host { return w.cloud.AnsibleServer() }

// inventory returns hosts.yaml on the Ansible server.
func (w *ksWorld) inventory() kubespray.Inventory {
	w.t.Helper()
	b, err := w.ansibleServer().FS().ReadFile(sim.KubesprayInventoryPath + "/" + kubespray.HostsFile)
	if err != nil {
		w.t.Fatal(err)
	}
	inv, err := kubespray.ParseInventory(b)
	if err != nil {
		w.t.Fatal(err)
	}
	return inv
}

// assertConsistent checks that the inventory, the cluster's nodes and the
// load balancer's backends all name exactly the VNF's masters and
// workers.
func (w *ksWorld) assertConsistent() {
	w.t.Helper()
	var masters, all []string
	for _, h := range w.cluster.Hosts() {
		name := kubeapi.NodeName(h.Role, h.NICAddress)
		switch h.Role {
		case lcm.RoleMaster:
			masters = append(masters, name)
			all = append(all, name)
		case lcm.RoleWorker:
			all = append(all, name)
		}
	}
	slices.Sort(masters)
	slices.Sort(all)
	inv := w.inventory()
	var invNames []string
	for _, h := range append(inv.ControlPlane, inv.Nodes...) {
		invNames = append(invNames, h.Name)
	}
	slices.Sort(invNames)
	var nodes []string
	for name, n := range w.nodes() {
		nodes = append(nodes, name)
		if !readyNode(n) {
			w.t.Errorf("node %s is not Ready", name)
		}
	}
	slices.Sort(nodes)
	b := w.backends()
	slices.Sort(b[lb.APIBackend])
	slices.Sort(b[lb.NodePortBackend])
	for what, got := range map[string][]string{"the inventory": invNames, "the cluster": nodes, "the NodePort backend": b[lb.NodePortBackend]} {
		if !slices.Equal(got, all) {
			w.t.Errorf("%s holds %v, want %v", what, got, all)
		}
	}
	if !slices.Equal(b[lb.APIBackend], masters) {
		w.t.Errorf("the API backend holds %v, want %v", b[lb.APIBackend], masters)
	}
}

// readyNode reports whether a node's Ready condition is True.
func readyNode(n corev1.Node) bool {
	c := kubeapi.ReadyCondition(&n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// ansibleCommands returns the ansible-playbook runs the Ansible server
// served since mark.
func (w *ksWorld) ansibleCommands(mark int) []string {
	var out []string
	for _, e := range w.ansibleServer().SSH.Transcript()[mark:] {
		if strings.Contains(e.Command, "ansible-playbook -i") {
			out = append(out, e.Command)
		}
	}
	return out
}

// TestKubesprayTheSpecsSample: the spec's sample body (placeholders filled
// by the simulated cloud) through the kubespray driver: the inventory as
// rendered (golden), a Ready cluster, the load balancer routing to the
// masters' API servers and every node's NodePorts, the VIM through the
// load balancer with the cluster's CA; rerun, nothing changes; a NodePort
// Service gets its frontend at the next run.
func TestKubesprayTheSpecsSample(t *testing.T) {
	t.Parallel()
	w := newKS(t, sim.ClusterShape{Masters: 3, Workers: 2}, sim.Options{})
	res, err := w.instantiate()
	if err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, w.log)
	}
	w.assertConsistent()
	hosts, err := w.ansibleServer().FS().ReadFile(sim.KubesprayInventoryPath + "/" + kubespray.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "kubespray-sample-hosts.yaml", hosts)
	lbVM := w.cluster.HostsWithRole(lcm.RoleLoadBalancer)[0]
	if len(res.AddVimConnections) != 1 {
		t.Fatalf("VIM connections %+v", res.AddVimConnections)
	}
	vim := res.AddVimConnections[0]
	if got, want := vim.InterfaceInfo["endpoint"], lb.VIMEndpoint(lbVM.SSHAddress, 0); got != want {
		t.Errorf("VIM endpoint %v, want %s", got, want)
	}
	if ca, _ := vim.InterfaceInfo["ssl_ca_cert"].(string); !strings.Contains(ca, "BEGIN CERTIFICATE") {
		t.Errorf("the VIM carries no CA: %q", ca)
	}
	mark := len(w.ansibleServer().SSH.Transcript())
	res, err = w.instantiate()
	if err != nil || res.Changed() {
		t.Fatalf("rerun: changed %v, %v", res.Changed(), err)
	}
	if runs := w.ansibleCommands(mark); len(runs) != 1 {
		t.Errorf("the rerun ran %d playbooks, want cluster.yml once: %q", len(runs), runs)
	}

	m := w.cluster.HostsWithRole(lcm.RoleMaster)[0]
	h, err := w.cloud.Connect(w.ctx, m.Node(), m.Login.User, m.Login.Password)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\nspec:\n  type: NodePort\n  selector: {app: web}\n  ports: [{port: 80, nodePort: 30080}]\n"
	if _, err := (kubeapi.Kubectl{Host: h}).Apply(w.ctx, []byte(svc)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.instantiate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := lbVM.FS().ReadFile(lb.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "frontend default_web") || !strings.Contains(string(cfg), ":30080") {
		t.Errorf("no frontend for the NodePort Service default/web:\n%s", cfg)
	}
}

// TestKubesprayScaleKeepsEverythingConsistent: a scale-out by one and a
// scale-in by one keep the inventory, the cluster's nodes and the load
// balancer's backends naming exactly the VNF's nodes; scale_end limits
// scale.yml to the new worker after facts.yml; scale_start names the
// removed node to remove-node.yml.
func TestKubesprayScaleKeepsEverythingConsistent(t *testing.T) {
	t.Parallel()
	w := newKS(t, sim.ClusterShape{Masters: 1, Workers: 2, MinWorkers: 1}, sim.Options{})
	if _, err := w.instantiate(); err != nil {
		t.Fatal(err)
	}
	const aspect = "worker_instance"
	before := w.cluster.Instance()
	added, err := w.cluster.ScaleOut(aspect, 1)
	if err != nil {
		t.Fatal(err)
	}
	mark := len(w.ansibleServer().SSH.Transcript())
	out := &lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: aspect, NumberOfSteps: 1}
	if _, err := lcm.Invoke(w.ctx, w.driver, lcm.ScaleEnd, &lcm.ScaleOp{Instance: before, Request: out, Package: w.pkg}); err != nil {
		t.Fatalf("scale_end: %v\n%s", err, w.log)
	}
	w.assertConsistent()
	name := kubeapi.NodeName(lcm.RoleWorker, added[0].NICAddress)
	runs := w.ansibleCommands(mark)
	if len(runs) != 2 || !strings.HasSuffix(runs[0], "playbooks/facts.yml") || !strings.Contains(runs[1], "--limit "+name+" scale.yml") {
		t.Errorf("scale_end ran %q, want facts.yml then scale.yml --limit %s", runs, name)
	}

	hc, err := w.cloud.HeatClient(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := lcm.ScaleVnfRequest{Type: lcm.ScaleIn, AspectID: aspect, NumberOfSteps: 1}
	p, err := drivers.DecodeClusterParams(w.req.AdditionalParams, w.pkg)
	if err != nil {
		t.Fatal(err)
	}
	victims, err := hc.ScaleInTargets(w.ctx, w.cluster.StackID(), p.WorkerNode.Group(lcm.RoleWorker), in)
	if err != nil || len(victims) != 1 {
		t.Fatalf("victims %v, %v", victims, err)
	}
	victim := kubeapi.NodeName(lcm.RoleWorker, victims[0].NICAddress)
	mark = len(w.ansibleServer().SSH.Transcript())
	if _, err := lcm.Invoke(w.ctx, w.driver, lcm.ScaleStart, &lcm.ScaleOp{Instance: w.cluster.Instance(), Request: &in, Package: w.pkg}); err != nil {
		t.Fatalf("scale_start: %v\n%s", err, w.log)
	}
	runs = w.ansibleCommands(mark)
	if len(runs) != 1 || !strings.Contains(runs[0], "-e node="+victim+" ") || !strings.Contains(runs[0], "-e skip_confirmation=true") {
		t.Errorf("scale_start ran %q, want remove-node.yml -e node=%s", runs, victim)
	}
	if _, err := w.cluster.ScaleIn(aspect, victims[0].Resource); err != nil {
		t.Fatal(err)
	}
	w.assertConsistent()
}

// TestKubesprayReportsTheFailingHostAndTask: a task failing on one host
// fails the hook with an error naming the host, the task and its message;
// a playbook that hangs ends with the hook's context.
func TestKubesprayReportsTheFailingHostAndTask(t *testing.T) {
	t.Parallel()
	w := newKS(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	worker := kubeapi.NodeName(lcm.RoleWorker, w.cluster.HostsWithRole(lcm.RoleWorker)[0].NICAddress)
	const task = "kubernetes/kubeadm : Join to cluster if needed"
	faults := ansible.FaultsOf(w.ansibleServer().Machine)
	faults.FailTask(worker, task, "kubeadm join: connection refused")
	_, err := w.instantiate()
	if err == nil || !strings.Contains(err.Error(), worker) || !strings.Contains(err.Error(), task) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want the host %s, the task and its message", err, worker)
	}
	faults.FailTask(worker, task, "")

	hung := faults.HangAt(task)
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := lcm.Invoke(ctx, w.driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: w.cluster.Instance(), Request: w.req, Package: w.pkg})
		done <- err
	}()
	<-hung
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a hung playbook: %v, want it ended by the context", err)
	}
}

// TestKubesprayRefusesAVersionMismatchFirst: kubespray v2.28.1 asserts
// ansible-core 2.16.4 to 2.17; the Ansible server has Debian's 2.14.18:
// refused before any playbook runs, naming both, and no node touched.
func TestKubesprayRefusesAVersionMismatchFirst(t *testing.T) {
	t.Parallel()
	w := newKS(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{Ansible: sim.AnsibleOptions{CoreVersion: "2.14.18"}})
	_, err := w.instantiate()
	if err == nil || !strings.Contains(err.Error(), "2.14.18") || !strings.Contains(err.Error(), "2.16.4") || !strings.Contains(err.Error(), "kubespray 2.28.1") {
		t.Fatalf("err = %v, want the mismatch named", err)
	}
	if runs := w.ansibleCommands(0); len(runs) != 0 {
		t.Errorf("playbooks ran: %q", runs)
	}
	if _, err := w.ansibleServer().FS().Stat(sim.KubesprayInventoryPath); err == nil {
		t.Error("the inventory directory was made")
	}
}

// TestKubesprayBadInputRunsNothing: each mistake is refused with its path
// before any command on any VM or the Ansible server.
func TestKubesprayBadInputRunsNothing(t *testing.T) {
	t.Parallel()
	const k = "additionalParams.k8s_cluster_installation_param."
	w := newKS(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	base := w.req
	for _, tc := range []struct {
		edit  map[string]any
		field string
	}{
		{map[string]any{k + "ansible.ip_address": "ansible-server"}, "ansible.ip_address"},
		{map[string]any{k + "ansible.kubespray_root_path": ""}, "ansible.kubespray_root_path"},
		{map[string]any{k + "ansible.transferring_inventory_path": "inventory/mycluster"}, "ansible.transferring_inventory_path"},
		{map[string]any{k + "external_lb_param.script_path": "../../etc/passwd"}, "external_lb_param.script_path"},
		{map[string]any{k + "external_lb_param.mode": "haproxy"}, "external_lb_param.mode"},
	} {
		w.req = patched(t, base, tc.edit)
		_, err := w.instantiate()
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "k8s_cluster_installation_param."+tc.field+": ") {
			t.Errorf("%v: err = %v, want a field error at %s", tc.edit, err, tc.field)
		}
	}
	for _, h := range append(w.cluster.Hosts(), w.ansibleServer()) {
		if n := len(h.SSH.Transcript()); n != 0 {
			t.Errorf("%d commands ran on %s", n, h.Resource)
		}
	}
}

// TestKubesprayTwoMastersRunNothing: two masters would be two etcd
// members, which kubespray refuses after its fact gathering: refused,
// with the field's path, before any command.
func TestKubesprayTwoMastersRunNothing(t *testing.T) {
	t.Parallel()
	w := newKS(t, sim.ClusterShape{Masters: 2, Workers: 1}, sim.Options{})
	_, err := w.instantiate()
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "k8s_cluster_installation_param.master_node: Heat reports 2 masters") {
		t.Fatalf("err = %v", err)
	}
	for _, h := range append(w.cluster.Hosts(), w.ansibleServer()) {
		if n := len(h.SSH.Transcript()); n != 0 {
			t.Errorf("%d commands ran on %s", n, h.Resource)
		}
	}
}

// TestKubesprayHealOfAMasterIsRefused: a master's heal is refused at
// heal_start, naming it, before any command.
func TestKubesprayHealOfAMasterIsRefused(t *testing.T) {
	t.Parallel()
	w := newKS(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	if _, err := w.instantiate(); err != nil {
		t.Fatal(err)
	}
	m := w.cluster.HostsWithRole(lcm.RoleMaster)[0]
	inst := w.cluster.Instance()
	var vnfc string
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ComputeResource.ResourceID == m.ServerID {
			vnfc = v.ID
		}
	}
	mark := len(w.ansibleServer().SSH.Transcript())
	_, err := lcm.Invoke(w.ctx, w.driver, lcm.HealStart, &lcm.HealOp{Instance: inst, Request: &lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}, Package: w.pkg})
	if err == nil || !strings.Contains(err.Error(), "kubespray cannot heal a control-plane node") || !strings.Contains(err.Error(), m.Resource) {
		t.Fatalf("err = %v", err)
	}
	if n := len(w.ansibleServer().SSH.Transcript()) - mark; n != 0 {
		t.Errorf("%d commands on the Ansible server", n)
	}
}

// TestKubesprayNoPasswordLeaves: the Ansible server's, the nodes' and the
// load balancer's passwords are in no argv, command, log line or error;
// the nodes' are only in the 0600 login file on the Ansible server.
func TestKubesprayNoPasswordLeaves(t *testing.T) {
	t.Parallel()
	const k = "additionalParams.k8s_cluster_installation_param."
	secrets := []string{"Ans1ble-Pa55", "Mast3r-Pa55", "W0rker-Pa55", "L0adBal-Pa55"}
	w := newKSWith(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{}, map[string]any{
		k + "ansible.password": secrets[0], k + "master_node.password": secrets[1],
		k + "worker_node.password": secrets[2], k + "external_lb_param.ssh_password": secrets[3],
	})
	res, err := w.instantiate()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range secrets {
		if strings.Contains(w.log.String(), secret) || strings.Contains(fmt.Sprint(res), secret) {
			t.Errorf("the log or the result shows a password")
		}
		for _, h := range append(w.cloud.Hosts(), w.ansibleServer()) {
			for _, e := range h.SSH.Transcript() {
				if strings.Contains(e.Command, secret) {
					t.Errorf("%s: command %q shows a password", h.Resource, e.Command)
				}
			}
			for _, c := range h.SSH.Calls() {
				if strings.Contains(strings.Join(c.Args, " "), secret) {
					t.Errorf("%s: argv %q shows a password", h.Resource, c.Args)
				}
			}
		}
	}
	for _, f := range []string{kubespray.ControlPlaneLoginFile, kubespray.NodeLoginFile} {
		fi, err := w.ansibleServer().FS().Stat(sim.KubesprayInventoryPath + "/" + f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the login file %s: %v, %v; want mode 0600", f, fi, err)
		}
	}
}

// TestKubesprayScriptModeRunsTheSamplesScript: with external_lb_param.mode
// "script" the load balancer is set up by the package's script, as the
// reference does; the sample package's script writes a configuration
// HAProxy refuses (a health check without a port), which the hook
// reports with HAProxy's own words instead of leaving a dead load
// balancer behind.
func TestKubesprayScriptModeRunsTheSamplesScript(t *testing.T) {
	t.Parallel()
	w := newKSWith(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{}, map[string]any{
		"additionalParams.k8s_cluster_installation_param.external_lb_param.mode": lb.ModeScript,
	})
	_, err := w.instantiate()
	var se *lb.ScriptError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "has neither service port nor check port") {
		t.Fatalf("err = %v, want the sample script's configuration refused by haproxy -c", err)
	}
	var ran bool
	for _, c := range w.cluster.HostsWithRole(lcm.RoleLoadBalancer)[0].SSH.Calls() {
		ran = ran || (len(c.Args) > 1 && c.Args[0] == "bash" && strings.HasSuffix(c.Args[1], "ExternalLB_installation.sh"))
	}
	if !ran {
		t.Error("the script did not run on the load balancer")
	}
}

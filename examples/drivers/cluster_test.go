package drivers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/examples/internal/world"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

func request(t testing.TB, name string) *lcm.InstantiateVnfRequest {
	t.Helper()
	b, err := sim.WorkingRequest(name, "")
	if err != nil {
		t.Fatal(err)
	}
	var req lcm.InstantiateVnfRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// cir is the world of the cir-k8s-cluster spec: the registry VNF
// (instantiated, published at 192.168.0.10, serving app:1), the external
// HTTPS registry, and a Kubernetes cluster VNF whose nodes have Docker
// and containerd (the kubeadm package will install them; until then the
// simulated cloud does).
type cir struct {
	t       testing.TB
	ctx     context.Context
	cloud   *sim.Cloud
	pkg     *lcm.Package
	cluster *sim.VNF
	req     *lcm.InstantiateVnfRequest
	driver  *drivers.ClusterDriver
	log     *bytes.Buffer
}

// newCIR builds the world; the external registry accepts registryPassword
// for the sample's user.
func newCIR(t testing.TB, clusterReq *lcm.InstantiateVnfRequest, shape sim.ClusterShape, registryPassword string) *cir {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	log := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx = lcm.WithLogger(ctx, logger)
	cloud := sim.Start(t, sim.Options{})
	pkg := lcm.NewPackage(samples.VNFPackage())
	pl := plumbing.Config{SSH: cloud.SSHConfigFunc(logger)}

	// The registry VNF, from the spec's sample request.
	regReq, topo, err := cloud.SampleRegistry(samples.InstantiateCIRRegistry)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	vnfDriver := &registry.VNFDriver{Plumbing: pl}
	if _, err := lcm.Invoke(ctx, vnfDriver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: reg.Instance(), Request: regReq, Package: pkg}); err != nil {
		t.Fatalf("registry VNF instantiate_end: %v\n%s", err, log)
	}
	if err := world.PublishRegistryVNF(ctx, cloud, reg.HostsWithRole(lcm.RoleRegistry)[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := world.AddExternalRegistry(cloud, pkg, registryPassword); err != nil {
		t.Fatal(err)
	}

	if shape.Packages == nil {
		shape.Packages = []string{"docker.io", "cri-tools"}
	}
	cluster := buildCluster(t, cloud, clusterReq, shape)
	return &cir{t: t, ctx: ctx, cloud: cloud, pkg: pkg, cluster: cluster, req: clusterReq,
		driver: &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: pl}}, log: log}
}

// buildCluster builds in cloud the VMs of the Kubernetes cluster VNF
// req describes (its parameters decoded against the sample VNF package),
// with shape.
func buildCluster(t testing.TB, cloud *sim.Cloud, req *lcm.InstantiateVnfRequest, shape sim.ClusterShape) *sim.VNF {
	t.Helper()
	p, err := drivers.DecodeClusterParams(req.AdditionalParams, lcm.NewPackage(samples.VNFPackage()))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sim.KubernetesCluster(p, shape, req.AdditionalParams)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	return cluster
}

func (c *cir) close() { c.cloud.Close() }

func (c *cir) nodes() []*sim.Host {
	return append(c.cluster.HostsWithRole(lcm.RoleMaster), c.cluster.HostsWithRole(lcm.RoleWorker)...)
}

func (c *cir) instantiate() (*lcm.HookResult, error) {
	return lcm.Invoke(c.ctx, c.driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: c.cluster.Instance(), Request: c.req, Package: c.pkg})
}

// stepHosts returns the per-host results of the step called name, over
// every time the hook ran it.
func stepHosts(res *lcm.HookResult, name string) lcm.Results {
	var rs lcm.Results
	if res == nil {
		return nil
	}
	for _, s := range res.Steps {
		if s.Step == name {
			rs = append(rs, s.Hosts...)
		}
	}
	return rs
}

// assertPulls checks that every host pulls app:1 from both registries
// under Docker and as the kubelet under containerd.
func (c *cir) assertPulls(hosts []*sim.Host) {
	c.t.Helper()
	for _, p := range world.CheckPulls(c.ctx, c.cloud, hosts, world.Images()) {
		if p.Err != nil {
			c.t.Errorf("%s: %s pull %s: %v", p.Host, p.Runtime, p.Image, p.Err)
		}
	}
}

// serviceCounts are the daemons' job counters of every node.
func serviceCounts(hosts []*sim.Host) string {
	var b strings.Builder
	for _, h := range hosts {
		for _, unit := range []string{"docker", "containerd"} {
			s := h.Machine.Service(unit)
			fmt.Fprintf(&b, "%s %s %d/%d/%d\n", h.Resource, unit, s.Starts, s.Restarts, s.Reloads)
		}
	}
	return b.String()
}

func TestTheSamplesLetEveryNodePullFromBothRegistries(t *testing.T) {
	c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 3, Workers: 2}, world.ExternalRegistryPassword)
	// Before: the nodes trust neither registry.
	for _, p := range world.CheckPulls(c.ctx, c.cloud, c.nodes()[:1], world.Images()) {
		if p.Err == nil {
			t.Errorf("%s pulled %s before any trust was configured", p.Runtime, p.Image)
		}
	}
	res, err := c.instantiate()
	if err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, c.log)
	}
	if trust := stepHosts(res, registry.StepTrust); len(trust) != 5 || !trust.Changed() {
		t.Fatalf("registry trust results %+v", trust)
	}
	c.assertPulls(c.nodes())

	// The second run writes nothing and restarts nothing.
	counts := serviceCounts(c.nodes())
	calls := map[string]int{}
	for _, h := range c.nodes() {
		calls[h.Resource] = len(h.SSH.Calls())
	}
	res, err = c.instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() {
		t.Errorf("the second run changed something: %+v", res.Steps)
	}
	if got := serviceCounts(c.nodes()); got != counts {
		t.Errorf("the second run touched services:\n%s\nwas\n%s", got, counts)
	}
	for _, h := range c.nodes() {
		for _, call := range h.SSH.Calls()[calls[h.Resource]:] {
			if name := call.Args[0]; name == "mv" || name == "install" || name == "tee" || name == "docker" && len(call.Args) > 1 && call.Args[1] == "login" {
				t.Errorf("%s: the second run ran %q", h.Resource, strings.Join(call.Args, " "))
			}
		}
	}
}

func TestScaleOutTouchesOnlyTheNewWorkers(t *testing.T) {
	c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 2}, world.ExternalRegistryPassword)
	if _, err := c.instantiate(); err != nil {
		t.Fatal(err)
	}
	before := c.cluster.Instance()
	old := c.nodes()
	calls := map[string]int{}
	for _, h := range old {
		calls[h.Resource] = len(h.SSH.Transcript())
	}
	added, err := c.cluster.ScaleOut("worker_instance", 2)
	if err != nil {
		t.Fatal(err)
	}
	req := &lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: "worker_instance", NumberOfSteps: 2}
	res, err := lcm.Invoke(c.ctx, c.driver, lcm.ScaleEnd, &lcm.ScaleOp{Instance: before, Request: req, Package: c.pkg})
	if err != nil {
		t.Fatalf("scale_end: %v\n%s", err, c.log)
	}
	var touched []string
	for _, r := range stepHosts(res, registry.StepTrust) {
		touched = append(touched, r.Host)
	}
	if len(touched) != 2 || touched[0] != added[0].Resource || touched[1] != added[1].Resource {
		t.Errorf("scale_end configured %v, want the new workers %s and %s", touched, added[0].Resource, added[1].Resource)
	}
	// The old nodes only learn the new workers' names (their /etc/hosts
	// block); the master also answers kubectl, through which the join's
	// token is deleted once the workers joined.
	isNew := func(host string) bool { return host == added[0].Resource || host == added[1].Resource }
	for _, st := range res.Steps {
		for _, r := range st.Hosts {
			if !isNew(r.Host) && st.Step != kubeadm.StepHosts && st.Step != kubeadm.StepDeleteTokens {
				t.Errorf("old node %s: step %s ran on it", r.Host, st.Step)
			}
		}
	}
	for _, h := range old {
		for _, e := range h.SSH.Transcript()[calls[h.Resource]:] {
			if strings.Contains(e.Command, "docker") || strings.Contains(e.Command, "containerd") || strings.Contains(e.Command, "apt-get") {
				t.Errorf("old node %s ran %.120q during scale_end", h.Resource, e.Command)
			}
		}
	}
	c.assertPulls(added)
}

func TestHealConfiguresTheNewNodes(t *testing.T) {
	c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 3, Workers: 1}, world.ExternalRegistryPassword)
	if _, err := c.instantiate(); err != nil {
		t.Fatal(err)
	}
	master := c.cluster.HostsWithRole(lcm.RoleMaster)[1]
	var vnfc string
	for _, v := range c.cluster.Instance().InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ComputeResource.ResourceID == master.ServerID {
			vnfc = v.ID
		}
	}
	heal := &lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}
	if _, err := lcm.Invoke(c.ctx, c.driver, lcm.HealStart, &lcm.HealOp{Instance: c.cluster.Instance(), Request: heal, Package: c.pkg}); err != nil {
		t.Fatalf("heal_start: %v\n%s", err, c.log)
	}
	healed, err := c.cluster.Heal(master.ServerID, sim.HealOptions{NewAddresses: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := lcm.Invoke(c.ctx, c.driver, lcm.HealEnd, &lcm.HealOp{Instance: c.cluster.Instance(), Request: heal, Package: c.pkg})
	if err != nil {
		t.Fatalf("heal_end: %v\n%s", err, c.log)
	}
	if hs := stepHosts(res, registry.StepTrust); len(hs) != 1 || hs[0].Host != healed.Resource || !hs[0].Result.Changed {
		t.Errorf("heal_end's registry trust %+v, want the healed master %s changed", hs, healed.Resource)
	}
	c.assertPulls([]*sim.Host{healed})

	// An entire heal's heal_end on VMs that are already built changes
	// nothing, but visits every node.
	res, err = lcm.Invoke(c.ctx, c.driver, lcm.HealEnd, &lcm.HealOp{Instance: c.cluster.Instance(), Request: &lcm.HealVnfRequest{}, Package: c.pkg})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(stepHosts(res, registry.StepTrust)); n != 4 || res.Changed() {
		t.Errorf("entire heal: %d hosts, changed %v; want 4, unchanged", n, res.Changed())
	}
}

func TestBadClusterInputRunsNothing(t *testing.T) {
	base := request(t, "instantiate_cir_k8s_cluster.json")
	c := newCIR(t, base, sim.ClusterShape{Masters: 1, Workers: 1}, world.ExternalRegistryPassword)
	for _, conn := range []string{
		`{"connection_type": "2", "server": "r:5000"}`,
		`{"connection_type": "0", "server": "reg istry:5000"}`,
		`{"connection_type": "1", "server": "r", "username": "u"}`,
		`{"connection_type": "1", "server": "r", "certificate_path": "../../etc/shadow"}`,
		`{"connection_type": "1", "server": "r", "certificate_path": "Scripts/install_k8s_cluster.sh"}`,
		`{"connection_type": "1", "server": "r", "hosts_string": "1.2.3.4 x; rm -rf /"}`,
	} {
		var params map[string]any
		if err := json.Unmarshal(base.AdditionalParams, &params); err != nil {
			t.Fatal(err)
		}
		var entry any
		if err := json.Unmarshal([]byte(conn), &entry); err != nil {
			t.Fatal(err)
		}
		params[registry.ClusterParamKey].(map[string]any)["private_registry_connection_info"] = []any{entry}
		raw, _ := json.Marshal(params)
		req := *base
		req.AdditionalParams = raw
		c.req = &req
		_, err := c.instantiate()
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "private_registry_connection_info[0].") {
			t.Errorf("%s: err = %v, want a field error", conn, err)
		}
		for _, h := range c.nodes() {
			if n := len(h.SSH.Transcript()); n != 0 {
				t.Errorf("%s: %d commands ran on %s", conn, n, h.Resource)
			}
		}
	}
}

func TestNoPasswordLeaves(t *testing.T) {
	const registryPW, sshPW = "Reg1stry-Pa55", "Ssh-Pa55-w0rd"
	req := request(t, "instantiate_cir_k8s_cluster.json")
	raw := strings.ReplaceAll(string(req.AdditionalParams), `"password": "user01"`, `"password": "`+registryPW+`"`)
	raw = strings.ReplaceAll(raw, `"password": "ubuntu"`, `"password": "`+sshPW+`"`)
	req.AdditionalParams = json.RawMessage(raw)
	c := newCIR(t, req, sim.ClusterShape{Masters: 1, Workers: 1}, registryPW)
	if _, err := c.instantiate(); err != nil {
		t.Fatalf("instantiate_end: %v", err)
	}
	// A wrong password: the error must not show it either.
	bad := strings.ReplaceAll(raw, registryPW, "Wr0ng-"+registryPW)
	c.cluster.Heal(c.cluster.HostsWithRole(lcm.RoleWorker)[0].ServerID, sim.HealOptions{})
	badReq := *req
	badReq.AdditionalParams = json.RawMessage(bad)
	c.req = &badReq
	_, err := c.instantiate()
	if err == nil {
		t.Fatal("a wrong registry password logged in")
	}
	for _, secret := range []string{registryPW, sshPW} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows %q: %v", secret, err)
		}
		if strings.Contains(c.log.String(), secret) {
			t.Errorf("the log shows %q", secret)
		}
		for _, h := range append(c.cloud.Hosts(), c.cloud.Retired()...) {
			for _, e := range h.SSH.Transcript() {
				if strings.Contains(e.Command, secret) {
					t.Errorf("%s: command %q shows %q", h.Resource, e.Command, secret)
				}
			}
			for _, call := range h.SSH.Calls() {
				if strings.Contains(strings.Join(call.Args, " "), secret) {
					t.Errorf("%s: argv %q shows %q", h.Resource, call.Args, secret)
				}
			}
		}
	}
}

func TestCRIONodesPullFromBothRegistries(t *testing.T) {
	c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 1, Packages: []string{"cri-o", "cri-tools"}}, world.ExternalRegistryPassword)
	for _, h := range c.nodes() {
		// The kubelet's runtime endpoint, as kubeadm would set it for CRI-O.
		if err := h.FS().WriteFile("/etc/default/kubelet", []byte("KUBELET_EXTRA_ARGS=--container-runtime-endpoint=unix:///var/run/crio/crio.sock\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.instantiate()
	if err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, c.log)
	}
	if !res.Changed() {
		t.Fatal("nothing changed")
	}
	for _, h := range c.nodes() {
		if !h.FS().Exists("/etc/containers/registries.conf.d/50-mgmtkit-192.168.0.10_5000.conf") || !h.FS().Exists("/etc/containers/certs.d/registry.example.com/ca.crt") {
			t.Errorf("%s: CRI-O's registry files are missing", h.Resource)
		}
		if s := h.Machine.Service("crio"); s.Reloads != 1 {
			t.Errorf("%s: crio reloaded %d times, want 1", h.Resource, s.Reloads)
		}
		for _, img := range world.Images() {
			if err := containers.KubeletPull(c.ctx, c.cloud, h.Machine, img); err != nil {
				t.Errorf("%s: kubelet (CRI-O) pull %s: %v", h.Resource, img, err)
			}
		}
	}
	if res, err := c.instantiate(); err != nil || res.Changed() {
		t.Errorf("second run: changed %v, %v", res.Changed(), err)
	}
}

func TestTrustRidesOutDroppedConnectionsAndHungCommands(t *testing.T) {
	c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 2}, world.ExternalRegistryPassword)
	for i, h := range c.nodes() {
		h.SSH.DropConnectionDuring(2 + 2*i) // a different command on each node
	}
	if _, err := c.instantiate(); err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, c.log)
	}
	for _, h := range c.nodes() {
		if h.SSH.Dials() < 2 {
			t.Errorf("%s: no connection was dropped during instantiate_end", h.Resource)
		}
	}
	c.assertPulls(c.nodes())

	// A command that hangs is cut off by the context and reported.
	w := c.cluster.HostsWithRole(lcm.RoleWorker)[0]
	fresh, err := c.cluster.Heal(w.ServerID, sim.HealOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fresh.SSH.HangProgram("systemctl", 1)
	ctx, cancel := context.WithTimeout(c.ctx, 3*time.Second)
	defer cancel()
	res, err := lcm.Invoke(ctx, c.driver, lcm.HealEnd, &lcm.HealOp{Instance: c.cluster.Instance(), Request: &lcm.HealVnfRequest{}, Package: c.pkg})
	if err == nil {
		t.Fatal("a hung systemctl went unnoticed")
	}
	var he *lcm.HostError
	if !errors.As(err, &he) || he.Host != fresh.Resource {
		t.Errorf("err = %v, want a HostError for %s", err, fresh.Resource)
	}
	if res == nil || len(res.Steps) == 0 {
		t.Fatalf("result %+v", res)
	}
}

// TestHealOfTheStorageServerIsTheStorageExtensions: the storage server
// is no Kubernetes node; its heal_end is the storage extension's alone
// (here on the same, converged VM: nothing changes), and the workers run
// nothing. (Without the extension the hooks record the VM as unmanaged
// and touch nothing: kubeadm's TestExtensionMoments.)
func TestHealOfTheStorageServerIsTheStorageExtensions(t *testing.T) {
	c := newCIR(t, withRegistries(t, request(t, "instantiate_pv_k8s_cluster.json")), sim.ClusterShape{Masters: 1, Workers: 1}, world.ExternalRegistryPassword)
	if _, err := c.instantiate(); err != nil {
		t.Fatal(err)
	}
	st := c.cluster.HostsWithRole(lcm.RoleStorage)[0]
	inst := c.cluster.Instance()
	var vnfc string
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ComputeResource.ResourceID == st.ServerID {
			vnfc = v.ID
		}
	}
	worker := c.cluster.HostsWithRole(lcm.RoleWorker)[0]
	before := len(worker.SSH.Transcript())
	res, err := lcm.Invoke(c.ctx, c.driver, lcm.HealEnd, &lcm.HealOp{Instance: inst, Request: &lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}, Package: c.pkg})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, s := range res.Steps {
		steps = append(steps, s.Step)
	}
	if !slices.Equal(steps, []string{nfs.StepStorage, nfs.StepRegisterPV}) || res.Changed() || res.Steps[0].Hosts[0].Host != st.Resource {
		t.Errorf("healing the converged storage server ran %+v", res.Steps)
	}
	if n := len(worker.SSH.Transcript()) - before; n != 0 {
		t.Errorf("the worker ran %d commands", n)
	}
	_, err = lcm.Invoke(c.ctx, c.driver, lcm.HealEnd, &lcm.HealOp{Instance: inst, Request: &lcm.HealVnfRequest{VnfcInstanceID: []string{"no-such-vnfc"}}, Package: c.pkg})
	if err == nil || !strings.Contains(err.Error(), "no-such-vnfc") {
		t.Errorf("an unknown VNFC: %v", err)
	}
}

// withRegistries adds the cir sample's registry connections to a cluster
// request that has none.
func withRegistries(t *testing.T, req *lcm.InstantiateVnfRequest) *lcm.InstantiateVnfRequest {
	t.Helper()
	var params, cirParams map[string]any
	if err := json.Unmarshal(req.AdditionalParams, &params); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(request(t, "instantiate_cir_k8s_cluster.json").AdditionalParams, &cirParams); err != nil {
		t.Fatal(err)
	}
	params[registry.ClusterParamKey].(map[string]any)["private_registry_connection_info"] =
		cirParams[registry.ClusterParamKey].(map[string]any)["private_registry_connection_info"]
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	out := *req
	out.AdditionalParams = raw
	return &out
}

// A scale request's worker_node_username and worker_node_password replace
// the stored login: a wrong override fails the dial of the new worker
// (and only that), a half override is refused by key before anything
// runs, and the right one works.
func TestScaleEndUsesTheRequestsCredentials(t *testing.T) {
	c := newCIR(t, request(t, "instantiate_cir_k8s_cluster.json"), sim.ClusterShape{Masters: 1, Workers: 1}, world.ExternalRegistryPassword)
	if _, err := c.instantiate(); err != nil {
		t.Fatal(err)
	}
	before := c.cluster.Instance()
	added, err := c.cluster.ScaleOut("worker_instance", 1)
	if err != nil {
		t.Fatal(err)
	}
	scale := func(params string) error {
		req := &lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: "worker_instance", NumberOfSteps: 1, AdditionalParams: json.RawMessage(params)}
		_, err := lcm.Invoke(c.ctx, c.driver, lcm.ScaleEnd, &lcm.ScaleOp{Instance: before, Request: req, Package: c.pkg})
		return err
	}
	err = scale(`{"worker_node_username": "ubuntu"}`)
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "worker_node_password") {
		t.Errorf("a half override: %v", err)
	}
	if n := len(added[0].SSH.Transcript()); n != 0 {
		t.Errorf("a refused request ran %d commands on the new worker", n)
	}
	// A refused password is retried for a while (cloud-init may not have
	// set it yet): a short wait for this one.
	ssh := c.driver.Cluster.Plumbing.SSH
	c.driver.Cluster.Plumbing.SSH = func(ctx context.Context) (remote.Config, error) {
		cfg, err := ssh(ctx)
		cfg.WaitTimeout = time.Second
		return cfg, err
	}
	err = scale(`{"worker_node_username": "ubuntu", "worker_node_password": "not-the-password"}`)
	c.driver.Cluster.Plumbing.SSH = ssh
	var de *plumbing.DialError
	if !errors.As(err, &de) || de.Node != added[0].Resource {
		t.Errorf("a wrong override: %v, want a DialError for %s", err, added[0].Resource)
	}
	if err := scale(`{"worker_node_username": "ubuntu", "worker_node_password": "ubuntu"}`); err != nil {
		t.Fatal(err)
	}
	c.assertPulls(added)
}

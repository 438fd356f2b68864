package kubeadm_test

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// The kubeadm-specific scenarios (a forced scale-in past a budget) the
// real control plane judges too (cloudtest/realkube), on the in-memory
// model. The scenarios any cluster driver must pass are the conformance
// suite's, which examples/drivers runs on kubeadm's driver with the
// checks of its HA topology at the suite's stages (package hachecks).
func TestScenarios(t *testing.T) {
	kubescenarios.Run(t, sim.Options{})
}

// Input the hooks cannot work with is refused, naming the field, before
// any command: an IPv6 pod network without a manifest (the default
// Calico is IPv4-only), a CNI manifest that is none, or a pod network too
// small for the nodes (flannel's /24 per node; Calico's /26 blocks).
func TestBadInputRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		edit        func(p *kubeadm.ClusterParams)
		workers     int
	}{
		{"IPv6 without CNI", "cni_manifest_path", func(p *kubeadm.ClusterParams) {
			p.CNIManifestPath = ""
			p.MasterNode.PodCIDR = netip.MustParsePrefix("fd00:10:244::/56")
			p.MasterNode.ClusterCIDR = netip.MustParsePrefix("fd00:10:96::/112")
		}, 1},
		{"CNI manifest no manifest", "cni_manifest_path", func(p *kubeadm.ClusterParams) {
			p.CNIManifestPath = "Scripts/install_k8s_cluster.sh"
		}, 1},
		{"pod network for four Calico nodes", "master_node.pod_cidr", func(p *kubeadm.ClusterParams) {
			p.CNIManifestPath = ""
			p.MasterNode.PodCIDR = netip.MustParsePrefix("192.168.3.0/24")
		}, 4},
		{"pod network for one node", "master_node.pod_cidr", func(p *kubeadm.ClusterParams) {
			p.MasterNode.PodCIDR = netip.MustParsePrefix("192.168.3.0/24")
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: tc.workers}, sim.Options{})
			tc.edit(&c.Op.Params)
			_, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %v, want a ParamsError naming %s", err, tc.field)
			}
			for _, h := range c.VNF.Hosts() {
				if n := len(h.SSH.Transcript()); n != 0 {
					t.Errorf("%s ran %d commands", h.Resource, n)
				}
			}
		})
	}
}

// The only master cannot be healed node by node: the error says so and
// nothing is removed.
func TestHealOfTheOnlyMasterIsRefused(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	c.Instantiate()
	m := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
	inst := c.VNF.Instance()
	c.Op.Instance = inst
	_, err := c.Hooks.HealStart(c.Ctx, lcm.HealStart, c.Op, lcm.HealVnfRequest{VnfcInstanceID: []string{kubescenarios.VnfcOf(inst, m.ServerID)}})
	if err == nil || !strings.Contains(err.Error(), "entire") {
		t.Fatalf("heal of the only master: %v, want an error pointing at an entire heal", err)
	}
	c.AssertNodes()
}

// The connection to the second worker drops while it joins: the hook
// fails naming it; run again, it converges, and nothing is joined twice.
func TestJoinFaultThenRerunConverges(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 2}, sim.Options{})
	w := c.VNF.HostsWithRole(lcm.RoleWorker)[1]
	w.SSH.FailProgram("kubeadm", 1, 1, "error execution phase preflight: couldn't validate the identity of the API Server: connection refused")
	res, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
	if err == nil {
		t.Fatal("the first run passed")
	}
	// The joins ended the run; the token made for them was deleted after.
	steps := stepNames(res)
	if n := len(steps); n < 2 || steps[n-2] != kubeadm.StepJoinWorker || steps[n-1] != kubeadm.StepDeleteTokens {
		t.Fatalf("first run ended in %v", steps)
	}
	last := res.Steps[len(res.Steps)-2]
	if len(last.Hosts) != 2 {
		t.Fatalf("the workers' joins: %+v", last)
	}
	for _, h := range last.Hosts {
		switch {
		case h.Host == w.Resource && (h.Err == nil || !strings.Contains(h.Err.Error(), "connection refused")):
			t.Errorf("%s: %v, want kubeadm's failure", h.Host, h.Err)
		case h.Host != w.Resource && h.Err != nil:
			t.Errorf("the other worker's join was cut short: %v", h.Err)
		}
	}
	c.Instantiate()
	c.AssertNodes()
	joins := 0
	for _, e := range w.SSH.Transcript() {
		if strings.Contains(e.Command, "kubeadm join") {
			joins++
		}
	}
	if joins != 2 {
		t.Errorf("%s ran kubeadm join %d times, want the failed one and one more", w.Resource, joins)
	}
}

// compatPackage is the sample package with the reference's install
// script replaced by recordScript, which records its flags.
func compatPackage(t *testing.T) *lcm.Package {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(samples.VNFPackage(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(samples.VNFPackage(), p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m["Scripts/install_k8s_cluster.sh"] = &fstest.MapFile{Data: []byte(recordScript), Mode: 0o755}
	return lcm.NewPackage(m)
}

// In compatibility mode the first master's run of the install script
// initialises the cluster with the reference's flags; nodes are
// prepared, and mgmtkit runs no kubeadm of its own.
func TestCompatModeRunsTheScriptOnTheFirstMaster(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	c.Op.Package = compatPackage(t)
	c.Hooks.InstallScript = true
	res, err := c.Hooks.Instantiate(c.Ctx, lcm.InstantiateEnd, c.Op)
	// The recording script builds nothing: kubectl is not even there
	// when init's token is to be deleted.
	if err == nil || !strings.Contains(err.Error(), kubeadm.StepDeleteTokens) {
		t.Fatalf("error %v, want the token cleanup to find no cluster", err)
	}
	if got := stepNames(res); !slices.Equal(got, []string{kubeadm.StepPrepare, kubeadm.StepInit, kubeadm.StepDeleteTokens}) {
		t.Errorf("steps %v", got)
	}
	m, w := c.VNF.HostsWithRole(lcm.RoleMaster)[0], c.VNF.HostsWithRole(lcm.RoleWorker)[0]
	rec, err := m.FS().ReadFile("/home/ubuntu/record")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m=" + m.NICAddress, "i=" + m.NICAddress, "p=" + sim.SamplePodCIDR, "a=10.199.187.0/24", "ha_flag=False"} {
		if !strings.Contains(string(rec), want+"\n") {
			t.Errorf("the first master's run lacks %q:\n%s", want, rec)
		}
	}
	if w.FS().Exists("/home/ubuntu/record") {
		t.Error("the worker ran the script before the cluster existed")
	}
	for _, h := range c.VNF.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, "kubeadm init") || strings.Contains(e.Command, "kubeadm join") {
				t.Errorf("%s: mgmtkit ran %q in compatibility mode", h.Resource, e.Command)
			}
		}
	}
}

// A worker added in compatibility mode runs the script with -w, the
// endpoint and a fresh token and CA hash, which no SSH command carries.
func TestCompatModeJoinsAWorkerWithTheScript(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1, MinWorkers: 1}, sim.Options{})
	c.Instantiate()
	before := c.VNF.Instance()
	added, err := c.VNF.ScaleOut(c.Op.Params.WorkerNode.AspectID, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Op.Instance, c.Op.Package = before, compatPackage(t)
	c.Hooks.InstallScript, c.Hooks.ReadyTimeout = true, 2*time.Second
	_, err = c.Hooks.ScaleOut(c.Ctx, lcm.ScaleEnd, c.Op, lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: c.Op.Params.WorkerNode.AspectID, NumberOfSteps: 1})
	// The recording script joins nothing: the node never registers.
	name := kubeadm.NodeName(lcm.RoleWorker, added[0].NICAddress)
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("error %v, want the wait for %s to fail", err, name)
	}
	rec, err := added[0].FS().ReadFile("/home/ubuntu/record")
	if err != nil {
		t.Fatal(err)
	}
	master := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
	var token string
	for _, l := range strings.Split(string(rec), "\n") {
		if v, ok := strings.CutPrefix(l, "t="); ok {
			token = v
		}
	}
	if len(token) != 23 || !strings.Contains(string(rec), "w="+added[0].NICAddress+"\n") || !strings.Contains(string(rec), "i="+master.NICAddress+"\n") || !strings.Contains(string(rec), "s=sha256:") {
		t.Fatalf("the worker's run:\n%s", rec)
	}
	for _, h := range c.VNF.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, token) {
				t.Errorf("%s: the join token is in a command: %.200q", h.Resource, e.Command)
			}
		}
	}
}

func stepNames(res *lcm.HookResult) []string {
	var names []string
	if res == nil {
		return nil
	}
	for _, s := range res.Steps {
		names = append(names, s.Step)
	}
	return names
}

// In a data centre whose only way out is a proxy (with a password), the
// nodes fetch the repository key, the packages and the public images
// through it, and the cluster comes up; the proxy's password is in no
// command.
func TestInstantiateBehindAProxy(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{ProxyOnly: true})
	const password = "pr0xy-s3cret"
	proxy := c.Cloud.AddProxy("127.0.9.1", 3128, containers.ProxyOptions{Username: "squid", Password: password})
	url := remote.NewSecret("http://squid:" + password + "@127.0.9.1:3128")
	c.Op.Params.Proxy = &kubeadm.Proxy{Proxy: system.Proxy{HTTPProxy: url, HTTPSProxy: url}}
	c.Instantiate()
	c.AssertNodes()
	if len(proxy.Requests()) == 0 {
		t.Error("nothing went through the proxy")
	}
	for _, r := range proxy.Requests() {
		if r.Status != 200 {
			t.Errorf("the proxy answered %d to %s %s from %s", r.Status, r.Method, r.Target, r.Client)
		}
	}
	for _, h := range c.VNF.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, password) {
				t.Errorf("%s: the proxy's password is in %.200q", h.Resource, e.Command)
			}
		}
	}
}

// A scale of master_node's aspect, or of an aspect the cluster does not
// have, is refused naming the aspect before anything runs: Heat would
// otherwise delete a master whose Node, etcd member and HAProxy backend
// stay behind. A scale of the other type is still no business of the
// hook.
func TestScaleOfTheMastersIsRefused(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	masters := c.Op.Params.MasterNode.AspectID
	for _, tc := range []struct {
		aspect, want string
	}{
		{masters, "master_node's aspect_id"},
		{"storage_instance", "not worker_node's aspect_id"},
	} {
		for _, typ := range []lcm.ScaleType{lcm.ScaleIn, lcm.ScaleOut} {
			req := lcm.ScaleVnfRequest{Type: typ, AspectID: tc.aspect, NumberOfSteps: 1}
			var err error
			if typ == lcm.ScaleIn {
				_, err = c.Hooks.ScaleIn(c.Ctx, lcm.ScaleStart, c.Op, req)
			} else {
				_, err = c.Hooks.ScaleOut(c.Ctx, lcm.ScaleEnd, c.Op, req)
			}
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "aspectId") || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.aspect) {
				t.Errorf("%s of %s: %v, want a ParamsError naming the aspect (%s)", typ, tc.aspect, err, tc.want)
			}
		}
	}
	res, err := c.Hooks.ScaleIn(c.Ctx, lcm.ScaleStart, c.Op, lcm.ScaleVnfRequest{Type: lcm.ScaleOut, AspectID: masters})
	if err != nil || len(res.Steps) != 0 {
		t.Errorf("scale_start of a SCALE_OUT: %+v, %v; want an empty result", res, err)
	}
	for _, h := range c.VNF.Hosts() {
		if n := len(h.SSH.Transcript()); n != 0 {
			t.Errorf("%s ran %d commands", h.Resource, n)
		}
	}
}

// A node that answers but refuses the login is not a dead VM: the heal
// fails at its reset, and its Node is not deleted while its kubelet runs
// on.
func TestHealWithAWrongPasswordKeepsTheNode(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{})
	c.Instantiate()
	w := c.VNF.HostsWithRole(lcm.RoleWorker)[0]
	inst := c.VNF.Instance()
	c.Op.Instance = inst
	ssh := c.Hooks.Plumbing.SSH
	c.Hooks.Plumbing.SSH = func(ctx context.Context) (remote.Config, error) {
		cfg, err := ssh(ctx)
		cfg.WaitTimeout = time.Second
		return cfg, err
	}
	wrong := *c.Op.Params.WorkerNode
	wrong.Password = remote.NewSecret("Not-The-Password-1")
	c.Op.Params.WorkerNode = &wrong
	_, err := c.Hooks.HealStart(c.Ctx, lcm.HealStart, c.Op, lcm.HealVnfRequest{VnfcInstanceID: []string{kubescenarios.VnfcOf(inst, w.ServerID)}})
	var ae *remote.AuthError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), kubeadm.StepReset) {
		t.Fatalf("heal with a wrong password: %v, want the reset to fail with an AuthError", err)
	}
	if _, ok := c.Nodes()[kubeadm.NodeName(lcm.RoleWorker, w.NICAddress)]; !ok {
		t.Error("the worker's Node was deleted though its kubelet runs on")
	}
}

// No bootstrap token outlives the hook that made it: init's is deleted
// after init, each join's after the joins, and the control-plane
// certificates uploaded for a master's join with theirs.
func TestBootstrapTokensAreDeleted(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 3, Workers: 1}, sim.Options{})
	tokens := func(when string) {
		t.Helper()
		var list corev1.SecretList
		if err := c.Kubectl().List(c.Ctx, &list, "secrets", "kube-system", kubeapi.ListOptions{FieldSelector: "type=bootstrap.kubernetes.io/token"}); err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			t.Errorf("%s: token %s (%q) is left", when, s.Name, s.Data["description"])
		}
		var certs corev1.Secret
		if found, err := c.Kubectl().Get(c.Ctx, &certs, "secrets", "kube-system", "kubeadm-certs"); err != nil || found {
			t.Errorf("%s: the kubeadm-certs Secret is left (%v)", when, err)
		}
	}
	res := c.Instantiate()
	c.AssertNodes()
	if n := strings.Count(strings.Join(stepNames(res), " "), kubeadm.StepDeleteTokens); n != 2 {
		t.Errorf("instantiate deleted tokens %d times, want after init and after the joins: %v", n, stepNames(res))
	}
	tokens("after instantiate")
	m := c.VNF.HostsWithRole(lcm.RoleMaster)[1]
	if err := c.Heal(m); err != nil {
		t.Fatal(err)
	}
	c.AssertNodes()
	tokens("after a master's heal")
}

package realkube_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest/conformance"
	"github.com/mgmtkit/mgmtkit/cloudtest/realkube"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/kubescenarios/hachecks"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// mgmtkit's kubeadm cluster driver passes the public conformance suite
// on a real kube-apiserver, its controllers, the scheduler and etcd, as
// it does on the model (examples/drivers TestConformanceClusterDriver):
// kubectl on the masters is kubectl's own code, kubeadm join
// authenticates with its bootstrap token against the real API server,
// the drains are kubectl drain's against the real eviction API and
// disruption controller, and etcdctl acts on real etcd members. At the
// suite's stages, the same run checks kubeadm's HA control plane on
// three masters (package hachecks: the VIP, real etcd's members,
// HAProxy and /etc/hosts across the heals, the VIP's failover before
// terminate).
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Options{
		Driver: func(cfg plumbing.Config) lcm.Driver {
			return &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: cfg}}
		},
		Kube:       realkube.New(t),
		Setup:      shortDrain,
		MasterHeal: true,
		Check:      hachecks.Check,
	})
}

// shortDrain sets drain_timeout, mgmtkit's parameter, to 10 s: a drain a
// PodDisruptionBudget blocks gives up then instead of after the default
// 300 s.
func shortDrain(t *testing.T, env *conformance.Env) {
	params, err := samples.Patch(env.Request.AdditionalParams, map[string]any{"k8s_cluster_installation_param.drain_timeout": 10})
	if err != nil {
		t.Fatal(err)
	}
	env.Request.AdditionalParams = params
}

// The kubeadm-specific scenarios of the in-memory model's suite
// (kubeadm's TestScenarios: a forced scale-in past a budget) on the real
// control plane.
func TestScenarios(t *testing.T) {
	kubescenarios.Run(t, sim.Options{KubeBackend: realkube.New(t)})
}

// The storage scenarios (the pv-k8s-cluster spec) on the real control
// plane: the PersistentVolumes become Available through the real
// persistentvolume-binder, a claim binds, the pv-protection finalizer
// holds a Bound volume, and the storage server's heal is refused while
// it is Bound and proceeds once it is Released.
func TestStorageScenarios(t *testing.T) {
	kubescenarios.RunStorage(t, sim.Options{KubeBackend: realkube.New(t)})
}

// kubeadm join is refused for a token the API server does not hold: one
// it never had, and one it held until its Secret was deleted (the real
// bootstrapsigner then drops its signature from cluster-info, and the
// bootstrap token authenticator refuses it). A token the API server holds
// joins the same node.
func TestJoinRefusedForATokenTheAPIServerDoesNotHold(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{KubeBackend: realkube.New(t)})
	c.Instantiate()
	master := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
	worker := c.VNF.HostsWithRole(lcm.RoleWorker)[0]
	name := kubeadm.NodeName(lcm.RoleWorker, worker.NICAddress)
	mh, err := c.Cloud.Connect(c.Ctx, master.Node(), "ubuntu", "ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	defer mh.Close()
	wh, err := c.Cloud.Connect(c.Ctx, worker.Node(), "ubuntu", "ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	// The worker leaves: reset, and its Node deleted.
	if _, err := kubeadm.ResetNode(c.Ctx, wh); err != nil {
		t.Fatal(err)
	}
	api := c.ClusterOf().API
	if err := api.Delete(c.Ctx, kube.KindNode, "", name); err != nil {
		t.Fatal(err)
	}
	endpoint := master.NICAddress + ":6443"
	good, err := kubeadm.NewJoinInfo(c.Ctx, mh, master.NICAddress, endpoint, false)
	if err != nil {
		t.Fatal(err)
	}
	join := func(info kubeadm.JoinInfo) error {
		_, err := kubeadm.JoinNode(c.Ctx, wh, kubeadm.JoinOptions{NodeName: name, AdvertiseAddress: worker.NICAddress, Info: info})
		return err
	}

	never := good
	never.Token = remote.NewSecret("zzzzzz.0123456789abcdef")
	if err := join(never); err == nil || !strings.Contains(err.Error(), `could not find a JWS signature in the cluster-info ConfigMap for token ID "zzzzzz"`) {
		t.Errorf("join with a token the API server never held: %v", err)
	}
	if _, _, err := api.Authenticate(c.Ctx, never.Token.Reveal()); err == nil {
		t.Error("the API server authenticates a token it never held")
	}

	deleted, err := kubeadm.NewJoinInfo(c.Ctx, mh, master.NICAddress, endpoint, false)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := strings.Cut(deleted.Token.Reveal(), ".")
	if err := api.Delete(c.Ctx, kube.KindSecret, "kube-system", "bootstrap-token-"+id); err != nil {
		t.Fatal(err)
	}
	// Refused either way: by discovery once the bootstrapsigner dropped
	// the token's signature, or, when the join read cluster-info before
	// that, by the bootstrap token authenticator (the Secret is gone).
	if err := join(deleted); err == nil || !strings.Contains(err.Error(), "JWS signature") && !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("join with a deleted token: %v", err)
	}

	if err := join(good); err != nil {
		t.Fatalf("join with a token the API server holds: %v", err)
	}
	kubescenarios.Eventually(t, func() error {
		if n, ok := c.Nodes()[name]; !ok || !kubescenarios.Ready(n) {
			return fmt.Errorf("node %s is not a Ready node of the cluster", name)
		}
		return nil
	})
}

package kubeadm_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/kubescenarios"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
	"github.com/mgmtkit/mgmtkit/system"
)

// specCluster builds the VMs of the spec's sample name as written
// (placeholders aside: no proxy) with shape; nothing is installed.
func specCluster(t *testing.T, name string, shape sim.ClusterShape, opts sim.Options) *kubescenarios.Cluster {
	t.Helper()
	return kubescenarios.NewClusterFrom(t, opts, func(c *sim.Cloud) (*lcm.InstantiateVnfRequest, sim.Topology, error) {
		return c.SpecCluster(name, shape)
	})
}

// calicoNodes returns the nodes a Running calico-node pod of the
// calico-node DaemonSet runs on, and the DaemonSet.
func calicoNodes(t *testing.T, c *kubescenarios.Cluster) (map[string]bool, *appsv1.DaemonSet) {
	t.Helper()
	api := c.ClusterOf().API
	o, err := api.Get(c.Ctx, kube.KindDaemonSet, "kube-system", "calico-node")
	if err != nil {
		t.Fatalf("no calico-node DaemonSet: %v", err)
	}
	pods, err := api.List(c.Ctx, kube.KindPod, "kube-system")
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]bool{}
	for _, o := range pods {
		p := o.(*corev1.Pod)
		if strings.HasPrefix(p.Name, "calico-node-") && p.Status.Phase == corev1.PodRunning {
			on[p.Spec.NodeName] = true
		}
	}
	return on, o.(*appsv1.DaemonSet)
}

// The cir spec's instantiate body runs as written, placeholders aside: it
// names no cni_manifest_path, so the master fetches Calico's pinned
// release manifest and applies it, and its pod_cidr 192.168.3.0/24,
// which holds one node's /24 podCIDR but four Calico blocks, takes one
// master and two workers, every one Ready. A second run changes nothing.
func TestSpecSampleInstantiates(t *testing.T) {
	c := specCluster(t, samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 2}, sim.Options{})
	if c.Op.Params.CNIManifestPath != "" || c.Op.Params.MasterNode.PodCIDR.String() != "192.168.3.0/24" {
		t.Fatalf("not the spec's body: cni_manifest_path %q, pod_cidr %s", c.Op.Params.CNIManifestPath, c.Op.Params.MasterNode.PodCIDR)
	}
	res := c.Instantiate()
	c.AssertNodes()
	on, ds := calicoNodes(t, c)
	for name := range c.Nodes() {
		if !on[name] {
			t.Errorf("no calico-node runs on %s", name)
		}
	}
	if img := ds.Spec.Template.Spec.Containers[0].Image; img != "quay.io/calico/node:"+kubeadm.DefaultCalicoVersion {
		t.Errorf("calico-node runs %s, want Calico %s", img, kubeadm.DefaultCalicoVersion)
	}
	// Calico's IPAM gives the pods their addresses: from pod_cidr, a /26
	// block per node, whether or not the node got a podCIDR.
	replicas := int32(6)
	labels := map[string]string{"app": "web"}
	if _, err := c.ClusterOf().API.Create(c.Ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}); err != nil {
		t.Fatal(err)
	}
	pods, err := c.ClusterOf().API.List(c.Ctx, kube.KindPod, "")
	if err != nil {
		t.Fatal(err)
	}
	pool := c.Op.Params.MasterNode.PodCIDR
	blocks := map[netip.Prefix]string{}
	addressed := 0
	for _, o := range pods {
		p := o.(*corev1.Pod)
		if p.Spec.HostNetwork || p.Status.Phase != corev1.PodRunning {
			continue
		}
		a, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !pool.Contains(a) {
			t.Errorf("pod %s on %s has address %q, not one of %s", p.Name, p.Spec.NodeName, p.Status.PodIP, pool)
			continue
		}
		addressed++
		b := netip.PrefixFrom(a, kubeadm.CalicoBlockIPv4).Masked()
		if n, ok := blocks[b]; ok && n != p.Spec.NodeName {
			t.Errorf("pods of %s and %s share the block %s", n, p.Spec.NodeName, b)
		}
		blocks[b] = p.Spec.NodeName
	}
	if addressed < int(replicas) || len(blocks) < 3 {
		t.Errorf("%d pods have an address of the pod network, in blocks %v: want the Deployment's %d pods and more, on every node", addressed, blocks, replicas)
	}
	var cni *lcm.StepResults
	for i, s := range res.Steps {
		if s.Step == kubeadm.StepCNI {
			cni = &res.Steps[i]
		}
	}
	if cni == nil || len(cni.Hosts) != 1 || !cni.Hosts[0].Result.Changed || !strings.Contains(cni.Hosts[0].Result.Detail, kubeadm.DefaultCalicoManifestURL) {
		t.Fatalf("the CNI step: %+v", cni)
	}
	fetched := false
	for _, e := range c.VNF.HostsWithRole(lcm.RoleMaster)[0].SSH.Transcript() {
		fetched = fetched || strings.Contains(e.Command, kubeadm.DefaultCalicoManifestURL)
	}
	if !fetched {
		t.Error("the master did not fetch Calico's manifest")
	}

	again := c.Instantiate()
	for _, s := range again.Steps {
		for _, h := range s.Hosts {
			if h.Result.Changed {
				t.Errorf("second run: %s on %s changed: %s", s.Step, h.Host, h.Result.Detail)
			}
		}
	}
}

// Behind a proxy-only data centre (with a password), the master fetches
// Calico's manifest through the proxy, and the proxy's password is in no
// command.
func TestDefaultCalicoThroughTheProxy(t *testing.T) {
	c := kubescenarios.NewCluster(t, sim.ClusterShape{Masters: 1, Workers: 1}, sim.Options{ProxyOnly: true})
	c.Op.Params.CNIManifestPath = ""
	const password = "pr0xy-s3cret"
	proxy := c.Cloud.AddProxy("127.0.9.1", 3128, containers.ProxyOptions{Username: "squid", Password: password})
	url := remote.NewSecret("http://squid:" + password + "@127.0.9.1:3128")
	c.Op.Params.Proxy = &kubeadm.Proxy{Proxy: system.Proxy{HTTPProxy: url, HTTPSProxy: url}}
	c.Instantiate()
	c.AssertNodes()
	master := c.VNF.HostsWithRole(lcm.RoleMaster)[0]
	through := false
	for _, r := range proxy.Requests() {
		if r.Target == "raw.githubusercontent.com:443" {
			through = true
			if r.Status != 200 || r.User != "squid" {
				t.Errorf("the proxy answered %d to %s for %q", r.Status, r.Client, r.User)
			}
		}
	}
	if !through {
		b, _ := json.Marshal(proxy.Requests())
		t.Errorf("%s did not fetch Calico's manifest through the proxy: %s", master.Resource, b)
	}
	for _, h := range c.VNF.Hosts() {
		for _, e := range h.SSH.Transcript() {
			if strings.Contains(e.Command, password) {
				t.Errorf("%s: the proxy's password is in %.200q", h.Resource, e.Command)
			}
		}
	}
}

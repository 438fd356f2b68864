package kubeadm_test

import (
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// A node prepared by this package's steps passes the simulated kubeadm's
// preflight, and ResetNode takes it out of the cluster again.
func TestPreparedNodeInitsAndResets(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	world := n.cloud.Kube
	name := kubeadm.NodeName(lcm.RoleMaster, n.host.NICAddress)
	steps := []struct {
		name string
		run  func() (lcm.Result, error)
	}{
		{"PrepareNode", func() (lcm.Result, error) {
			return kubeadm.PrepareNode(n.ctx, n.ssh, kubeadm.NodeOptions{Name: name, Hosts: kubeadm.ClusterHosts([]string{n.host.NICAddress}, nil)})
		}},
		{"InstallContainerd", func() (lcm.Result, error) { return kubeadm.InstallContainerd(n.ctx, n.ssh, kubeadm.RuntimeOptions{}) }},
		{"InstallKubernetes", func() (lcm.Result, error) {
			return kubeadm.InstallKubernetes(n.ctx, n.ssh, kubeadm.PackagesOptions{Version: "1.36.2"})
		}},
	}
	for _, s := range steps {
		n.twice(s.name, s.run)
	}
	n.write(kubeadm.ConfigDir+"/init.yaml", `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: `+n.host.NICAddress+`
  bindPort: 6443
nodeRegistration:
  name: `+name+`
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.2
controlPlaneEndpoint: `+n.host.NICAddress+`:6443
networking:
  podSubnet: 192.168.0.0/16
  serviceSubnet: 10.96.0.0/12
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
`)
	out, err := n.ssh.Run(n.ctx, remoteCmd("kubeadm", "init", "--config", kubeadm.ConfigDir+"/init.yaml", "--upload-certs"))
	if err != nil {
		t.Fatalf("kubeadm init on a prepared node: %v\n%s", err, out.Stdout)
	}
	if strings.Contains(string(out.Stderr), "WARNING") {
		t.Errorf("kubeadm init warns:\n%s", out.Stderr)
	}
	c := world().ClusterOf(n.host.Machine)
	if c == nil {
		t.Fatal("no cluster after init")
	}
	if err := world().Sync(n.ctx); err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes(n.ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Name != name {
		t.Fatalf("nodes %v, %v", nodes, err)
	}
	// Not Ready without a pod network, but for no reason of ours: the
	// runtime's cgroup driver matches the kubelet's (SystemdCgroup).
	for _, cond := range nodes[0].Status.Conditions {
		if cond.Type == "Ready" && (strings.Contains(cond.Message, "cgroup") || strings.Contains(cond.Message, "swap")) {
			t.Errorf("the node is not Ready because %s", cond.Message)
		}
	}
	res := n.twice("ResetNode", func() (lcm.Result, error) { return kubeadm.ResetNode(n.ctx, n.ssh) })
	if !strings.Contains(res.Detail, "kubeadm reset") {
		t.Errorf("detail %q", res.Detail)
	}
	for _, f := range []string{kubeadm.KubeletKubeconfig, kubeadm.APIServerManifest, kubeadm.ConfigDir} {
		if n.host.FS().Exists(f) {
			t.Errorf("%s stays", f)
		}
	}
	if world().ClusterOf(n.host.Machine) != nil {
		t.Error("the node is still a member after ResetNode")
	}
	// The reset node can be initialised again.
	for _, s := range steps {
		if _, err := s.run(); err != nil {
			t.Fatal(err)
		}
	}
}

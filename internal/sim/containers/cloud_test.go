package containers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The simulated cloud is the network: the registry VNF's VM, published at
// the sample's 192.168.0.10, serves a cluster node once the node trusts
// it, under Docker and under the kubelet's containerd.
func TestThroughTheSimulatedCloud(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cloud := sim.Start(t, sim.Options{})
	_, topo, err := cloud.SampleRegistry(samples.InstantiateCIRRegistry)
	if err != nil {
		t.Fatal(err)
	}
	regVNF, err := cloud.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	regHost := regVNF.HostsWithRole(lcm.RoleRegistry)[0]
	_, ctopo, err := cloud.SampleCluster(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1, Packages: []string{"docker.io", "cri-tools"}})
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := cloud.Build(ctopo)
	if err != nil {
		t.Fatal(err)
	}
	worker := cluster.HostsWithRole(lcm.RoleWorker)[0]
	connect := func(h *sim.Host) *remote.SSHHost {
		c, err := cloud.Connect(ctx, h.Node(), h.Login.User, h.Login.Password)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	run := func(h *remote.SSHHost, stdin string, args ...string) error {
		cmd := remote.Cmd{Args: args, Sudo: true}
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		_, err := h.Run(ctx, cmd)
		return err
	}
	must := func(h *remote.SSHHost, stdin string, args ...string) {
		t.Helper()
		if err := run(h, stdin, args...); err != nil {
			t.Fatal(err)
		}
	}

	// The registry VM, as the registry steps leave it.
	reg := connect(regHost)
	must(reg, "", "apt-get", "update", "-q")
	must(reg, "", "apt-get", "install", "-y", "-q", "docker.io")
	must(reg, string(sampleTar(t)), "docker", "load")
	must(reg, "", "docker", "run", "-d", "-p", "5000:5000", "-v", "/var/lib/private-registry:/var/lib/registry", "--restart=always", "--name", "private_registry", "registry:latest")
	must(reg, "", "docker", "tag", "registry:latest", "localhost:5000/app:1")
	must(reg, "", "docker", "push", "localhost:5000/app:1")
	if _, ok := containers.RegistryAt(cloud, regHost.NICAddress, 5000); !ok {
		t.Fatal("no registry at the VM's address")
	}
	cloud.Route("192.168.0.10", regHost)
	v, ok := containers.RegistryAt(cloud, "192.168.0.10", 5000)
	if !ok || !v.Has("app:1") {
		t.Fatalf("no registry with app:1 at the published address: %v", ok)
	}

	// The node, before and after trusting it.
	node := connect(worker)
	const image = "192.168.0.10:5000/app:1"
	if err := run(node, "", "docker", "pull", image); err == nil || !strings.Contains(err.Error(), "http: server gave HTTP response to HTTPS client") {
		t.Errorf("docker pull before trust: %v", err)
	}
	if err := containers.KubeletPull(ctx, cloud, worker.Machine, image); err == nil || !strings.Contains(err.Error(), "http: server gave HTTP response to HTTPS client") {
		t.Errorf("kubelet pull before trust: %v", err)
	}
	must(node, "", "mkdir", "-p", "/etc/docker")
	must(node, `{"insecure-registries": ["192.168.0.10:5000"]}`, "tee", "/etc/docker/daemon.json")
	must(node, "", "systemctl", "reload", "docker")
	must(node, "", "docker", "pull", image)
	must(node, "", "mkdir", "-p", "/etc/containerd/certs.d/192.168.0.10:5000")
	must(node, configPath, "tee", "/etc/containerd/config.toml")
	must(node, "server = \"http://192.168.0.10:5000\"\n", "tee", "/etc/containerd/certs.d/192.168.0.10:5000/hosts.toml")
	must(node, "", "systemctl", "restart", "containerd")
	if err := containers.KubeletPull(ctx, cloud, worker.Machine, image); err != nil {
		t.Errorf("kubelet pull after trust: %v", err)
	}
	var by []string
	for _, p := range v.Pulls() {
		if p.OK {
			by = append(by, p.Host+"/"+p.Runtime)
		}
	}
	want := worker.SSH.Hostname() + "/docker " + worker.SSH.Hostname() + "/containerd"
	if strings.Join(by, " ") != want {
		t.Errorf("successful pulls %v, want %s", by, want)
	}

	// Docker Hub is there while the cloud has Internet.
	must(node, "", "docker", "pull", "registry:2")
	cloud.SetInternet(false)
	if err := run(node, "", "docker", "pull", "hello-world"); err == nil {
		t.Error("docker pull from Docker Hub without Internet")
	}
}

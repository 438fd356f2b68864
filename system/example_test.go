package system_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/system"
)

// Wait for a condition with a bound: the error says what was awaited and
// why the last attempt failed.
func ExampleWait() {
	ctx := context.Background()
	attempts := 0
	err := system.Wait(ctx, "the API server to answer", time.Minute, 10*time.Millisecond, func(ctx context.Context) (bool, error) {
		attempts++
		if attempts < 3 {
			return false, errors.New("connection refused")
		}
		return true, nil
	})
	fmt.Println(attempts, err)

	err = system.Wait(ctx, "the API server to answer", 50*time.Millisecond, 10*time.Millisecond, func(ctx context.Context) (bool, error) {
		return false, errors.New("HTTP 503")
	})
	fmt.Println(err)
	// Output:
	// 3 <nil>
	// waiting for the API server to answer: not done within 50ms: last attempt: HTTP 503
}

// Give every VM of a cluster the names of its peers, in a managed block of
// /etc/hosts. Here the VM is a fake SSH host from remote/sshtest.
func ExampleSetHostsBlock() {
	srv, err := sshtest.NewServer(sshtest.Config{Users: []sshtest.User{{Name: "root", Password: "pw"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if err := srv.FS().WriteFile("/etc/hosts", []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	h, err := remote.NewSSHHost(remote.Config{Addr: srv.Addr(), User: "root", Password: remote.NewSecret("pw"), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	opts := system.HostsOptions{Block: "k8s-cluster", Entries: []system.HostsEntry{
		{IP: "10.0.0.12", Names: []string{"worker-0"}},
		{IP: "10.0.0.5", Names: []string{"master-0", "master-0.cluster.local"}},
	}}
	ctx := context.Background()
	for range 2 {
		res, err := system.SetHostsBlock(ctx, h, opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res)
	}
	hosts, _ := srv.FS().ReadFile("/etc/hosts")
	fmt.Print(string(hosts))
	// Output:
	// changed: updated block k8s-cluster of /etc/hosts
	// unchanged
	// 127.0.0.1	localhost
	// # BEGIN mgmtkit k8s-cluster
	// 10.0.0.5	master-0 master-0.cluster.local
	// 10.0.0.12	worker-0
	// # END mgmtkit k8s-cluster
}

// Prepare a Kubernetes node: pinned packages held, kernel modules and
// sysctls set now and at boot, and the container runtime restarted only
// when its drop-in changes. Each step is idempotent; a hook calls them in
// sequence and combines their results.
func Example_kubernetesNode() {
	ctx := context.Background()
	policy, err := remote.KnownHosts("/home/vnfm/.ssh/known_hosts")
	if err != nil {
		log.Fatal(err)
	}
	h, err := remote.NewSSHHost(remote.Config{Addr: "192.0.2.10:22", User: "ubuntu", Password: remote.NewSecret("secret"), HostKey: policy})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	steps := []func() (lcm.Result, error){
		func() (lcm.Result, error) {
			return system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{
				"containerd", "kubelet=1.29.3-1.1", "kubeadm=1.29.3-1.1", "kubectl=1.29.3-1.1",
			}})
		},
		func() (lcm.Result, error) {
			return system.LoadKernelModules(ctx, h, system.ModulesOptions{Name: "mgmtkit-k8s", Modules: []string{"overlay", "br_netfilter"}})
		},
		func() (lcm.Result, error) {
			return system.ApplySysctls(ctx, h, system.SysctlOptions{Name: "90-mgmtkit-k8s", Settings: map[string]string{
				"net.bridge.bridge-nf-call-iptables": "1",
				"net.ipv4.ip_forward":                "1",
			}})
		},
		func() (lcm.Result, error) {
			return system.ConfigureUnit(ctx, h, system.UnitOptions{Unit: "containerd", Files: map[string]string{
				system.UnitDir + "/containerd.service.d/mgmtkit-limits.conf": "[Service]\nLimitNOFILE=1048576\n",
			}})
		},
	}
	res := lcm.Unchanged
	for _, step := range steps {
		r, err := step()
		res = res.And(r)
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(res)
}

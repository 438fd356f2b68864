package kubeadm_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// A node's name is its role and its cluster address.
func ExampleNodeName() {
	fmt.Println(kubeadm.NodeName(lcm.RoleMaster, "10.0.0.5"))
	fmt.Println(kubeadm.NodeName(lcm.RoleWorker, "fd00::12"))
	// Output:
	// master-10-0-0-5
	// worker-fd00--12
}

// no_proxy as the reference builds it, plus the private registries and
// the cluster's networks.
func ExampleProxyFor() {
	p := kubeadm.ClusterParams{
		MasterNode: kubeadm.NodeParams{PodCIDR: netip.MustParsePrefix("192.168.0.0/16"), ClusterCIDR: netip.MustParsePrefix("10.96.0.0/12")},
		Proxy: &kubeadm.Proxy{Proxy: system.Proxy{
			HTTPProxy:  remote.NewSecret("http://user:secret@proxy.example.com:3128"),
			HTTPSProxy: remote.NewSecret("http://user:secret@proxy.example.com:3128"),
			NoProxy:    ".example.com",
		}},
	}
	masters := []string{"10.0.0.5", "10.0.0.6", "10.0.0.7"}
	s := kubeadm.ProxyFor(p, append(masters, "10.0.0.12"), "10.0.0.100", []string{"registry.example.com:5000"})
	fmt.Println(s.HTTPSProxy, s.NoProxy)
	// Output:
	// [REDACTED] localhost,127.0.0.1,::1,10.0.0.5,10.0.0.6,10.0.0.7,10.0.0.12,10.0.0.100,10.0.0.0/24,192.168.0.0/16,10.96.0.0/12,registry.example.com,.example.com
}

// The per-node steps of a master of a three-master cluster, in the
// order kubeadm init or join needs them; each is idempotent, so a rerun
// after a failure converges. The worker's are the first three.
func Example_nodeSteps() {
	prepare := func(ctx context.Context, h remote.Host, p kubeadm.ClusterParams, self string, masters, workers []string, vip netip.Prefix, priority int) error {
		proxy := kubeadm.ProxyFor(p, append(masters, workers...), vip.Addr().String(), nil)
		steps := []func() (lcm.Result, error){
			func() (lcm.Result, error) {
				return kubeadm.PrepareNode(ctx, h, kubeadm.NodeOptions{
					Name: kubeadm.NodeName(lcm.RoleMaster, self), Hosts: kubeadm.ClusterHosts(masters, workers), Proxy: proxy,
				})
			},
			func() (lcm.Result, error) {
				return kubeadm.InstallContainerd(ctx, h, kubeadm.RuntimeOptions{Version: p.KubernetesVersion, Proxy: proxy})
			},
			func() (lcm.Result, error) {
				return kubeadm.InstallKubernetes(ctx, h, kubeadm.PackagesOptions{Version: p.KubernetesVersion, Proxy: proxy})
			},
		}
		var backends []kubeadm.Backend
		for _, m := range masters {
			backends = append(backends, kubeadm.Backend{Name: kubeadm.NodeName(lcm.RoleMaster, m), Address: m})
		}
		lb := kubeadm.APIServerLB{VIP: vip, Backends: backends, Priority: priority}
		steps = append(steps,
			func() (lcm.Result, error) { return kubeadm.ConfigureHAProxy(ctx, h, lb) },
			func() (lcm.Result, error) { return kubeadm.ConfigureKeepalived(ctx, h, lb) },
		)
		for _, step := range steps {
			if _, err := step(); err != nil {
				return err
			}
		}
		return nil
	}
	_ = prepare
}

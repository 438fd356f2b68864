package lb

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// StepLB is the step the extension's work is recorded under, on the load
// balancer VM.
const StepLB = "external-lb"

// Extensions returns the external load balancer as an extension of a
// Kubernetes cluster's hooks (kubespray's; see [plumbing.Extension]),
// with the load balancer VM as its own VM. In native mode (the default)
// HAProxy is managed as data ([ConfigureLB]; the sample package's
// script_path is not run, see the package documentation); with mode
// "script" each moment runs script_path instead, with the masters' and
// workers' addresses of the moment ([RunScript]):
//
//   - Ready (instantiate_end, heal_end of the entire VNF): the
//     configuration of every master and worker and the cluster's NodePort
//     Services ([NewConfig], [ServicesFrom]); then, on the control plane,
//     the API server's certificate checked to name the load balancer's
//     address ([CheckAPICertificate]), as the VIM will verify it;
//   - Joined (scale_end, heal_end of a worker): the same, with the nodes
//     that joined;
//   - Removing (scale_start, heal_start of a worker): the same, without
//     the nodes that leave, before they are drained, so that the load
//     balancer stops sending them traffic first.
//
// Every moment renders the whole configuration from the cluster as it is
// (servers by exact name: removing worker-1 never touches worker-12) and
// reloads HAProxy only when the bytes change. The API endpoint the VIM
// uses is [ExternalLBParam.APIEndpoint].
func (p ExternalLBParam) Extensions(pkg *lcm.Package) plumbing.Extensions {
	configure := func(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster, leaving []lcm.Node) error {
		vms := lcm.NodesWithRole(c.Nodes, lcm.RoleLoadBalancer)
		if len(vms) != 1 {
			return fmt.Errorf("lb: Heat reports %d load balancer VMs for ssh_cp_name %s, want one", len(vms), p.SSHCPName)
		}
		cfg, err := configOf(ctx, c, leaving)
		if err != nil {
			return err
		}
		return r.OnNodes(ctx, StepLB, vms, func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
			if p.Mode == ModeScript {
				return RunScript(ctx, h, pkg, ScriptOptions{Script: p.ScriptPath, Masters: addresses(cfg.Masters), Workers: addresses(workersOf(cfg))})
			}
			return ConfigureLB(ctx, h, cfg)
		})
	}
	return plumbing.Extensions{{
		Name: StepLB,
		VMs:  p.VMs(),
		Ready: func(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster) error {
			if err := configure(ctx, r, c, nil); err != nil {
				return err
			}
			return checkCertificate(ctx, r, c)
		},
		Joined: func(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster, _ []lcm.Node) error {
			return configure(ctx, r, c, nil)
		},
		Removing: func(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster, nodes []lcm.Node) error {
			return configure(ctx, r, c, nodes)
		},
	}}
}

// StepCertificate is the check that the API server's certificate names
// the load balancer, recorded on the control plane it read it from.
const StepCertificate = "api-certificate"

// checkCertificate checks, on the cluster's control plane, that the API
// server's certificate is valid for the load balancer's address
// ([CheckAPICertificate]): the VIM registered at [ExternalLBParam.APIEndpoint]
// verifies exactly that.
func checkCertificate(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster) error {
	lbs := lcm.NodesWithRole(c.Nodes, lcm.RoleLoadBalancer)
	if len(lbs) != 1 {
		return errors.New("lb: no load balancer VM (or several) among the VNF's VMs")
	}
	return r.Once(ctx, StepCertificate, c.ControlPlane, func(ctx context.Context) (lcm.Result, error) {
		h, err := r.Session().Host(ctx, c.ControlPlane)
		if err != nil {
			return lcm.Unchanged, err
		}
		if _, err := CheckAPICertificate(ctx, h, lbs[0].SSHAddress); err != nil {
			return lcm.Unchanged, err
		}
		return lcm.Result{Detail: "the API server's certificate names the load balancer " + lbs[0].SSHAddress}, nil
	})
}

// configOf returns the load balancer's configuration for cluster c
// without the nodes leaving: its masters and workers by node name and
// NIC address, and its NodePort Services, read through c.API.
func configOf(ctx context.Context, c plumbing.Cluster, leaving []lcm.Node) (Config, error) {
	server := func(n lcm.Node) Server {
		return Server{Name: kubeapi.NodeName(n.Role, n.NICAddress), Address: n.NICAddress}
	}
	gone := func(n lcm.Node) bool {
		return slices.ContainsFunc(leaving, func(l lcm.Node) bool { return l.Resource == n.Resource })
	}
	var masters, workers []Server
	for _, n := range c.Nodes {
		switch {
		case gone(n):
		case n.Role == lcm.RoleMaster:
			masters = append(masters, server(n))
		case n.Role == lcm.RoleWorker:
			workers = append(workers, server(n))
		}
	}
	cfg := NewConfig(masters, workers)
	var svcs corev1.ServiceList
	if err := c.API.List(ctx, &svcs, "service", "", kubeapi.ListOptions{AllNamespaces: true}); err != nil {
		return cfg, fmt.Errorf("lb: listing the cluster's Services: %w", err)
	}
	cfg.Services = ServicesFrom(svcs.Items)
	return cfg, nil
}

// APIEndpoint returns the URL the VNFM reaches the cluster's API server
// at through the load balancer ([VIMEndpoint] at the load balancer VM's
// SSH address, as the reference registers its VIM), from the VNF's VMs.
// Its host is what the API server's certificate must name
// (kubespray's supplementary_addresses_in_ssl_keys).
func (p ExternalLBParam) APIEndpoint(vms []lcm.Node) (string, error) {
	lbs := lcm.NodesWithRole(vms, lcm.RoleLoadBalancer)
	if len(lbs) != 1 {
		return "", errors.New("lb: no load balancer VM (or several) among the VNF's VMs: its address is the API endpoint")
	}
	return VIMEndpoint(lbs[0].SSHAddress, 0), nil
}

// addresses returns the servers' addresses.
func addresses(servers []Server) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.Address)
	}
	return out
}

// workersOf returns the NodePort servers that are not masters.
func workersOf(c Config) []Server {
	return slices.DeleteFunc(slices.Clone(c.Nodes), func(s Server) bool {
		return slices.ContainsFunc(c.Masters, func(m Server) bool { return m.Name == s.Name })
	})
}

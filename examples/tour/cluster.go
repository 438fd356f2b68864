package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// clusterHook runs one hook of the cluster driver and keeps its result
// for the steps after it (the VIM connection it returned). unchanged
// makes the step fail when the hook changed anything: a re-run must not.
func (t *tour) clusterHook(d *deployed, hook lcm.Hook, what string, unchanged bool, op func() any) step {
	return step{d.label, hook, what, func(ctx context.Context) ([]string, []string, error) {
		drv := lcm.Driver(t.clusterDriver)
		if d.driver != nil {
			drv = d.driver
		}
		res, err := t.invoke(ctx, drv, hook, op())
		hosts, changed := hookHosts(res)
		if err == nil && unchanged && len(changed) > 0 {
			err = fmt.Errorf("the re-run changed %s", strings.Join(changed, ", "))
		}
		if res != nil {
			for _, v := range res.AddVimConnections {
				d.vim = &v
				t.printf("  VIM %s (%s): %v, bearer token and CA stored by the VNFM\n", v.ID, v.VimType, v.InterfaceInfo["endpoint"])
			}
			for _, id := range res.RemoveVimConnections {
				t.printf("  VIM %s: the VNFM removes it\n", id)
			}
		}
		return hosts, changed, err
	}}
}

// nodeTable is the check after every cluster operation: kubectl get nodes
// on a master (through the same kubeapi.Kubectl the hooks use), printed
// as a table, with want nodes, every one Ready.
func (t *tour) nodeTable(d *deployed, want func() int) step {
	return step{d.label, hookCheck, "kubectl get nodes: every node registered and Ready", func(ctx context.Context) ([]string, []string, error) {
		nodes, err := t.kubectlNodes(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		t.printf("  %-20s %-9s %-14s %-9s %s\n", "NAME", "STATUS", "ROLES", "VERSION", "INTERNAL-IP")
		var names []string
		var errs []error
		for _, n := range nodes {
			status, ready := "NotReady", false
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					status, ready = "Ready", true
				}
			}
			if n.Spec.Unschedulable {
				status += ",SchedulingDisabled"
			}
			role := "<none>"
			if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; ok {
				role = "control-plane"
			}
			var ip string
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					ip = a.Address
				}
			}
			t.printf("  %-20s %-9s %-14s %-9s %s\n", n.Name, status, role, n.Status.NodeInfo.KubeletVersion, ip)
			names = append(names, n.Name)
			if !ready {
				errs = append(errs, fmt.Errorf("node %s is %s", n.Name, status))
			}
		}
		if w := want(); len(nodes) != w {
			errs = append(errs, fmt.Errorf("%d nodes, want %d", len(nodes), w))
		}
		return names, nil, errors.Join(errs...)
	}}
}

// kubectlNodes lists the cluster's nodes with kubectl on the first master
// that answers.
func (t *tour) kubectlNodes(ctx context.Context, d *deployed) ([]corev1.Node, error) {
	var nodes []corev1.Node
	err := t.withKubectl(ctx, d, func(k kubeapi.Kubectl) error {
		var err error
		nodes, err = k.Nodes(ctx)
		return err
	})
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return nodes, err
}

// clusterSize is how many Kubernetes nodes the VNF has now.
func clusterSize(d *deployed) func() int {
	return func() int {
		return len(d.vnf.HostsWithRole(lcm.RoleMaster)) + len(d.vnf.HostsWithRole(lcm.RoleWorker))
	}
}

// vimToken is the check after instantiate_end: the VIM connection it
// returned carries a bearer token the cluster's API server authenticates
// and lets list the nodes, as the VNFM will use it. After
// terminate_start (revoked) the token must be refused instead.
func (t *tour) vimToken(d *deployed, revoked bool) step {
	what := "the VIM connection's bearer token: authenticated, allowed to list nodes"
	if revoked {
		what = "the revoked VIM connection's bearer token: refused"
	}
	return step{d.label, hookCheck, what, func(ctx context.Context) ([]string, []string, error) {
		if d.vim == nil {
			return nil, nil, errors.New("instantiate_end returned no VIM connection")
		}
		token, _ := d.vim.AccessInfo["bearer_token"].(string)
		var c *kube.Cluster
		for _, m := range d.vnf.HostsWithRole(lcm.RoleMaster) {
			if c = t.cloud.Kube().ClusterOf(m.Machine); c != nil {
				break
			}
		}
		if c == nil {
			return nil, nil, errors.New("no master is in a cluster")
		}
		user, groups, err := c.API.Authenticate(ctx, token)
		switch {
		case revoked && err == nil:
			return nil, nil, fmt.Errorf("the API server still takes the token, as %s", user)
		case revoked:
			t.printf("  refused: %v\n", err)
			return nil, nil, nil
		case err != nil:
			return nil, nil, fmt.Errorf("the API server refuses the token: %w", err)
		}
		allowed, err := c.API.Authorize(ctx, user, groups, "list", "", "nodes", "")
		if err == nil && !allowed {
			err = fmt.Errorf("%s may not list nodes", user)
		}
		t.printf("  the token is %s\n", user)
		return nil, nil, err
	}}
}

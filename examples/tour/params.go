package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The tour reads nothing of additionalParams itself: the registry
// package's and the cluster driver's decoders type and validate every
// key, and the tour plans from their structs.

// registryVMs returns where Heat keeps the registry VNF's VM and its
// login.
func registryVMs(p registry.InstallParams) plumbing.VMs {
	return plumbing.VMs{
		Groups: []heat.Group{{Role: lcm.RoleRegistry, SSHCP: p.SSHCPName}},
		Logins: plumbing.Credentials{lcm.RoleRegistry: {Username: p.SSHUsername, Password: p.SSHPassword}},
	}
}

// need is a part of the cluster's parameters a scenario needs beyond what
// the driver requires: its path, why, and whether p has it.
type need struct {
	path, why string
	has       func(p drivers.ClusterParams) bool
}

// missing reports every need p lacks, as an *lcm.ParamsError with the
// path of each.
func missing(p drivers.ClusterParams, scenario string, needs ...need) error {
	var problems []lcm.Problem
	for _, n := range needs {
		if !n.has(p) {
			problems = append(problems, lcm.Problem{Path: n.path, Message: fmt.Sprintf("is missing: the %s scenario needs it (%s)", scenario, n.why)})
		}
	}
	if len(problems) > 0 {
		return &lcm.ParamsError{Problems: problems}
	}
	return nil
}

// The parts of k8s_cluster_installation_param the scenarios need beyond
// what the drivers require.
const k8s = registry.ClusterParamKey + "."

var (
	needRegistries = need{k8s + "private_registry_connection_info", "the nodes are made to trust and pull from the registries it lists",
		func(p drivers.ClusterParams) bool { return len(p.PrivateRegistryConnectionInfo) > 0 }}
	needWorkers = need{k8s + "worker_node", "the VNF has workers",
		func(p drivers.ClusterParams) bool { return p.WorkerNode != nil }}
	needWorkerAspect = need{k8s + "worker_node.aspect_id", "the workers are scaled by this aspect",
		func(p drivers.ClusterParams) bool { return p.WorkerNode != nil && p.WorkerNode.AspectID != "" }}
	needMasterAspect = need{k8s + "master_node.aspect_id", "the masters are a scaling group",
		func(p drivers.ClusterParams) bool { return p.MasterNode.AspectID != "" }}
	needStorage = need{k8s + "storage_server", "the storage server is built, checked and its volumes resolved in Heat",
		func(p drivers.ClusterParams) bool { return p.StorageServer != nil }}
	needAnsible = need{k8s + "ansible", "the Ansible server is checked",
		func(p drivers.ClusterParams) bool { return p.Ansible != nil }}
	needLB = need{k8s + "external_lb_param", "the external load balancer is built and checked",
		func(p drivers.ClusterParams) bool { return p.ExternalLBParam != nil }}
)

// workingValues says which placeholders of the sample request name the
// tour replaced to make it work in the simulated cloud (see
// sim.WorkingRequest), or "" when it has none.
func workingValues(name string) string {
	var keys []string
	for _, p := range samples.Placeholders(name) {
		keys = append(keys, strings.TrimPrefix(p, "additionalParams."+k8s))
	}
	return strings.Join(keys, ", ")
}

// withAnsibleServer returns the request with its
// k8s_cluster_installation_param.ansible.ip_address set to addr when it
// holds the spec sample's placeholder 0.0.0.0: no request can know the
// simulated Ansible server's address. Any other value is kept, for the
// decoder and the hooks to judge as given; a request without an ansible
// block is returned as it is.
func withAnsibleServer(req *lcm.InstantiateVnfRequest, addr string) (*lcm.InstantiateVnfRequest, bool) {
	var params struct {
		K8s struct {
			Ansible *struct {
				IPAddress string `json:"ip_address"`
			} `json:"ansible"`
		} `json:"k8s_cluster_installation_param"`
	}
	if err := json.Unmarshal(req.AdditionalParams, &params); err != nil || params.K8s.Ansible == nil || params.K8s.Ansible.IPAddress != "0.0.0.0" {
		return req, false
	}
	raw, err := samples.Patch(req.AdditionalParams, map[string]any{k8s + "ansible.ip_address": addr})
	if err != nil {
		return req, false
	}
	out := *req
	out.AdditionalParams = raw
	return &out, true
}

package lb

import (
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// ClusterParamKey is the top-level additionalParams key of a Kubernetes
// cluster VNF's parameters, whose external_lb_param this package owns
// ([LoadBalancerParams]).
const ClusterParamKey = "k8s_cluster_installation_param"

// LoadBalancerParams is this package's part of
// k8s_cluster_installation_param. A Kubernetes cluster driver embeds it in
// its own parameter struct, so that the one object decodes strictly into
// every domain package's part. Its name is its own, not ClusterParams,
// because Go names an embedded field after its type: two embedded
// ClusterParams of different packages in one struct do not compile. It
// has no Validate of its own: [ExternalLBParam.Validate] checks the block.
type LoadBalancerParams struct {
	// ExternalLBParam is external_lb_param: the external load balancer
	// VM. nil when the request has none.
	ExternalLBParam *ExternalLBParam `json:"external_lb_param"`
}

// ExternalLBParam is external_lb_param: how to reach the load balancer VM
// and the script that sets it up.
type ExternalLBParam struct {
	// SSHCPName is ssh_cp_name, the connection point (a port, or a
	// floating IP) the driver connects to.
	SSHCPName string `json:"ssh_cp_name"`
	// SSHUsername and SSHPassword are the VM's login.
	SSHUsername string        `json:"ssh_username"`
	SSHPassword remote.Secret `json:"ssh_password"`
	// ScriptPath is script_path: the load balancer's installation script
	// in the VNF package, its canonical package path after validation.
	// [RunScript] runs it in script mode; a driver in native mode
	// ([ConfigureLB]) does not.
	ScriptPath string `json:"script_path"`
	// Mode is mode, an mgmtkit extension: how the load balancer is set
	// up. [ModeNative] (the default, "" too) manages HAProxy as data
	// ([ConfigureLB]) and leaves script_path unused; [ModeScript] runs
	// script_path as the reference does ([RunScript]), for a VNF package
	// whose script does more than HAProxy. The sample package's script
	// writes a configuration HAProxy refuses (see the package
	// documentation).
	Mode string `json:"mode"`
}

// The values of external_lb_param.mode.
const (
	ModeNative = "native"
	ModeScript = "script"
)

// Validate checks every field; see the package documentation for the
// rules.
func (p *ExternalLBParam) Validate(v *lcm.Validator) {
	if v.Required("ssh_cp_name", p.SSHCPName) {
		heat.ValidateResourceName(v, "ssh_cp_name", p.SSHCPName)
	}
	if v.Required("ssh_username", p.SSHUsername) {
		v.Username("ssh_username", p.SSHUsername)
	}
	v.Required("ssh_password", p.SSHPassword.Reveal()) // "is required" never quotes the value
	if resolved, ok := v.PackageFile("script_path", p.ScriptPath); ok {
		p.ScriptPath = resolved
	}
	switch p.Mode {
	case "", ModeNative, ModeScript:
	default:
		v.At("mode").Errorf("must be %q (HAProxy managed by mgmtkit, the default) or %q (script_path run as the reference does), got %q", ModeNative, ModeScript, p.Mode)
	}
}

// Group returns where Heat keeps the load balancer VM: a server of the
// top-level stack, found by its ssh_cp_name.
func (p ExternalLBParam) Group() heat.Group {
	return heat.Group{Role: lcm.RoleLoadBalancer, SSHCP: p.SSHCPName}
}

// Login returns the load balancer VM's SSH login.
func (p ExternalLBParam) Login() plumbing.Login {
	return plumbing.Login{Username: p.SSHUsername, Password: p.SSHPassword}
}

// VMs returns the load balancer VM's group and login: the VMs a load
// balancer extension brings to a cluster's hooks.
func (p ExternalLBParam) VMs() plumbing.VMs {
	return plumbing.VMs{Groups: []heat.Group{p.Group()}, Logins: plumbing.Credentials{lcm.RoleLoadBalancer: p.Login()}}
}

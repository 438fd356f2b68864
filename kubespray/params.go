package kubespray

import (
	"net/netip"
	"path"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// ClusterParamKey is the top-level additionalParams key of a Kubernetes
// cluster VNF's parameters, whose ansible block this package owns
// ([AnsibleParams]).
const ClusterParamKey = "k8s_cluster_installation_param"

// AnsibleParams is this package's part of k8s_cluster_installation_param.
// A Kubernetes cluster driver embeds it in its own parameter struct, so
// that the one object decodes strictly into every domain package's part.
// Its name is its own, not ClusterParams, because Go names an embedded
// field after its type: two embedded ClusterParams of different packages
// in one struct do not compile. It has no Validate of its own:
// [Ansible.Validate] checks the block.
type AnsibleParams struct {
	// Ansible is ansible: the Ansible server that runs kubespray. nil
	// when the request has none.
	Ansible *Ansible `json:"ansible"`
}

// Ansible is ansible: how to reach the Ansible server and where kubespray
// and the generated inventory live on it.
type Ansible struct {
	// IPAddress is ip_address, the Ansible server's address: it is not a
	// VM of the VNF, so Heat does not know it.
	IPAddress netip.Addr `json:"ip_address"`
	// Username and Password are the Ansible server's login.
	Username string        `json:"username"`
	Password remote.Secret `json:"password"`
	// KubesprayRootPath is kubespray_root_path: kubespray's checkout on
	// the Ansible server, clean and absolute after validation.
	KubesprayRootPath string `json:"kubespray_root_path"`
	// TransferringInventoryPath is transferring_inventory_path: the
	// directory on the Ansible server the driver copies
	// KubesprayRootPath/inventory/sample to and writes hosts.yaml in;
	// terminate removes it. Clean and absolute after validation.
	TransferringInventoryPath string `json:"transferring_inventory_path"`
}

// SampleInventory returns KubesprayRootPath/inventory/sample, the
// template inventory the driver copies to TransferringInventoryPath.
func (a Ansible) SampleInventory() string {
	return path.Join(a.KubesprayRootPath, "inventory", "sample")
}

// Validate checks every field; see the package documentation for the
// rules.
func (a *Ansible) Validate(v *lcm.Validator) {
	switch ip := a.IPAddress; {
	case !ip.IsValid():
		v.At("ip_address").Errorf("is required")
	case ip.IsUnspecified():
		v.At("ip_address").Errorf("must be the Ansible server's address, got the unspecified address %s (the spec's sample holds it as a placeholder)", ip)
	case ip.IsMulticast():
		v.At("ip_address").Errorf("must be a unicast address, got %s", ip)
	case ip.Zone() != "":
		v.At("ip_address").Errorf("must not have an IPv6 zone, got %s", ip)
	default:
		a.IPAddress = ip.Unmap()
	}
	if v.Required("username", a.Username) {
		v.Username("username", a.Username)
	}
	v.Required("password", a.Password.Reveal()) // "is required" never quotes the value

	rootOK := false
	if v.Required("kubespray_root_path", a.KubesprayRootPath) {
		var root string
		if root, rootOK = v.HostPath("kubespray_root_path", a.KubesprayRootPath); rootOK {
			a.KubesprayRootPath = root
		}
	}
	if !v.Required("transferring_inventory_path", a.TransferringInventoryPath) {
		return
	}
	inv, ok := v.HostDataDir("transferring_inventory_path", a.TransferringInventoryPath)
	if !ok {
		return
	}
	a.TransferringInventoryPath = inv
	if rootOK && (lcm.PathWithin(a.SampleInventory(), inv) || lcm.PathWithin(inv, a.SampleInventory())) {
		v.At("transferring_inventory_path").Errorf("must not be, contain or lie in %s, kubespray's sample inventory: it is copied to this directory, which terminate removes; use a new directory like %s", a.SampleInventory(), path.Join(a.KubesprayRootPath, "inventory", "mycluster"))
	}
}

// Node returns the Ansible server as a node to connect to: it is outside
// the VNF's stack, so its address comes from ip_address, not from Heat.
func (a Ansible) Node() lcm.Node {
	addr := a.IPAddress.String()
	return lcm.Node{Role: lcm.RoleAnsible, Resource: "ansible-server", SSHAddress: addr, NICAddress: addr}
}

// Login returns the Ansible server's SSH login.
func (a Ansible) Login() plumbing.Login {
	return plumbing.Login{Username: a.Username, Password: a.Password}
}

// VMs returns the Ansible server's login; it has no Heat group (it is
// outside the VNF's stack: see [Ansible.Node]).
func (a Ansible) VMs() plumbing.VMs {
	return plumbing.VMs{Logins: plumbing.Credentials{lcm.RoleAnsible: a.Login()}}
}

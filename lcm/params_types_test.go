package lcm_test

import (
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Parameter types shaped like the tables of the specs, as a domain package
// would declare them. They exercise embedded structs, pointers, slices,
// secrets, flexible scalars and Validate methods.

type clusterParams struct {
	ScriptPath     string           `json:"script_path"`
	VimName        string           `json:"vim_name"`
	HelmScriptPath string           `json:"helm_installation_script_path"`
	MasterNode     *masterNode      `json:"master_node"`
	WorkerNode     *nodeParams      `json:"worker_node"`
	Proxy          *proxyParams     `json:"proxy"`
	Registries     registries       `json:"private_registry_connection_info"`
	StorageServer  *storageServer   `json:"storage_server"`
	PVs            []pvRegistration `json:"pv_registration_params"`
	Ansible        *ansibleParams   `json:"ansible"`
	ExternalLB     *externalLB      `json:"external_lb_param"`
}

type nodeParams struct {
	AspectID  string        `json:"aspect_id"`
	SSHCpName string        `json:"ssh_cp_name" params:"required"`
	NicCpName string        `json:"nic_cp_name"`
	Username  string        `json:"username" params:"required"`
	Password  remote.Secret `json:"password" params:"required"`
}

type masterNode struct {
	nodeParams
	PodCIDR        string `json:"pod_cidr"`
	ClusterCIDR    string `json:"cluster_cidr"`
	ClusterCpName  string `json:"cluster_cp_name" params:"required"`
	ClusterFipName string `json:"cluster_fip_name"`
}

type proxyParams struct {
	HTTPProxy   string `json:"http_proxy"`
	HTTPSProxy  string `json:"https_proxy"`
	NoProxy     string `json:"no_proxy"`
	K8sNodeCIDR string `json:"k8s_node_cidr"`
}

type registryConnection struct {
	ConnectionType  string        `json:"connection_type" params:"required"`
	Server          string        `json:"server" params:"required"`
	Username        string        `json:"username"`
	Password        remote.Secret `json:"password"`
	CertificatePath string        `json:"certificate_path"`
	HostsString     string        `json:"hosts_string"`
}

func (r *registryConnection) Validate(v *lcm.Validator) {
	if r.ConnectionType != "0" && r.ConnectionType != "1" {
		v.At("connection_type").Errorf(`must be "0" (HTTP) or "1" (HTTPS)`)
	}
	if r.CertificatePath != "" {
		if p, ok := v.PackageFile("certificate_path", r.CertificatePath); ok {
			r.CertificatePath = p
		}
	}
}

type registries []registryConnection

// Validate checks across elements, after each element validated itself.
func (rs registries) Validate(v *lcm.Validator) {
	for i := range rs {
		for j := range i {
			if rs[i].Server == rs[j].Server {
				v.Index(i).At("server").Errorf("duplicates private_registry_connection_info[%d]", j)
			}
		}
	}
}

type storageServer struct {
	nodeParams
	CinderVolumes []cinderVolume `json:"cinder_volume_setup_params" params:"required"`
	NFSExports    []nfsExport    `json:"nfs_server_setup_params" params:"required"`
}

type cinderVolume struct {
	VolumeResourceID string `json:"volume_resource_id" params:"required"`
	MountTo          string `json:"mount_to" params:"required"`
}

type nfsExport struct {
	ExportDir string `json:"export_dir" params:"required"`
	ExportTo  string `json:"export_to" params:"required"`
}

type pvRegistration struct {
	ManifestPath string `json:"pv_manifest_file_path" params:"required"`
	NFSServerCp  string `json:"nfs_server_cp" params:"required"`
}

type ansibleParams struct {
	IPAddress                 string        `json:"ip_address" params:"required"`
	Username                  string        `json:"username" params:"required"`
	Password                  remote.Secret `json:"password" params:"required"`
	KubesprayRootPath         string        `json:"kubespray_root_path"`
	TransferringInventoryPath string        `json:"transferring_inventory_path"`
}

type externalLB struct {
	SSHCpName   string        `json:"ssh_cp_name" params:"required"`
	SSHUsername string        `json:"ssh_username" params:"required"`
	SSHPassword remote.Secret `json:"ssh_password" params:"required"`
	ScriptPath  string        `json:"script_path" params:"required"`
}

type registryInstallParams struct {
	SSHCpName   string        `json:"ssh_cp_name" params:"required"`
	SSHUsername string        `json:"ssh_username" params:"required"`
	SSHPassword remote.Secret `json:"ssh_password" params:"required"`
	ImagePath   string        `json:"image_path"`
	PortNo      lcm.Int       `json:"port_no"`
	Proxy       *proxyParams  `json:"proxy"`
}

func (p *registryInstallParams) Validate(v *lcm.Validator) {
	if p.PortNo == 0 {
		p.PortNo = 5000
	}
	if p.PortNo < 1 || p.PortNo > 65535 {
		v.At("port_no").Errorf("must be a TCP port number (1-65535)")
	}
	if p.ImagePath != "" {
		if rel, ok := v.PackageFile("image_path", p.ImagePath); ok {
			p.ImagePath = rel
		}
	}
}

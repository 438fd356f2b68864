package sim

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
)

// Topology describes a VNF's VMs as its Heat template would: groups of
// identical members (AutoScalingGroups) and single servers in the
// top-level stack, with the names of their connection points.
type Topology struct {
	// InstanceID is the VNF instance ID; generated when empty.
	InstanceID string
	// StackName is the top-level stack's name; "vnf-" + InstanceID (as
	// Tacker's v2 API names it) when empty.
	StackName string
	// Groups are the AutoScalingGroups, created in order.
	Groups []GroupSpec
	// Servers are the VMs in the top-level stack.
	Servers []ServerSpec
	// VIP is the cluster address, if any.
	VIP *VIPSpec
	// AdditionalParams are the instantiate request's additionalParams,
	// kept in the VnfInstance as Tacker keeps them.
	AdditionalParams json.RawMessage
}

// Login is the account a VM's image has for the management driver.
type Login struct {
	User, Password string
	// SudoWithPassword makes sudo ask for the password; by default the
	// user has passwordless sudo, as on cloud images.
	SudoWithPassword bool
}

// GroupSpec is an OS::Heat::AutoScalingGroup of VMs.
type GroupSpec struct {
	Role lcm.Role
	// Aspect is the group's resource name (aspect_id).
	Aspect string
	// Count is the initial number of members; MinSize and MaxSize bound
	// scaling (MaxSize 0 means Count + 10).
	Count, MinSize, MaxSize int
	// SSHCP is the port (or, with FloatingIP, the floating IP) the driver
	// connects to; NICCP the port on the cluster network, the same port
	// when empty or equal.
	SSHCP, NICCP string
	// FloatingIP makes SSHCP an OS::Neutron::FloatingIP bound to the NICCP
	// port (NICCP must then be set and differ).
	FloatingIP bool
	// ExtraPorts are further ports of each member, e.g. a single master's
	// cluster_cp_name; the host answers on their addresses too.
	ExtraPorts []string
	Login      Login
	// Packages are installed on every member in addition to Ubuntu's base.
	Packages []string
}

// ServerSpec is a VM in the top-level stack.
type ServerSpec struct {
	Role lcm.Role
	// Name is the OS::Nova::Server resource name.
	Name         string
	SSHCP, NICCP string
	FloatingIP   bool
	Login        Login
	Volumes      []VolumeSpec
	Packages     []string
}

// VolumeSpec is a Cinder volume attached to a server. Its disk's serial
// is the volume ID, as Nova sets it, so that it appears under
// /dev/disk/by-id as its bus names it.
type VolumeSpec struct {
	// Resource is the OS::Cinder::Volume resource name
	// (volume_resource_id).
	Resource string
	// Device is where it appears on the VM; /dev/vdb, /dev/vdc, ... by
	// default, /dev/sda, /dev/sdb, ... on the SCSI bus.
	Device string
	// ReportedDevice is the device Nova reports in the volume's attachment
	// (Heat's attachments_list[].device) when it differs from Device:
	// Nova's device name is only a hint ("OpenStack Cinder can report an
	// incorrect device path", kubernetes/kubernetes #33128). Device by
	// default.
	ReportedDevice string
	// SizeGB is its size; 1 by default.
	SizeGB int
	// Bus is how the disk is attached: [ubuntu.BusVirtio] (the default)
	// or [ubuntu.BusSCSI] (virtio-scsi, the image property
	// hw_disk_bus=scsi), which decides its /dev/disk/by-id name.
	Bus ubuntu.DiskBus
	// WWN gives a SCSI disk the volume ID without dashes as its World Wide
	// Name, as some Cinder backends do: udev then links it as
	// /dev/disk/by-id/wwn-0x<id without dashes> too.
	WWN bool
}

// VIPSpec is a cluster VIP: a bare port in the top-level stack that the
// masters' ports list in allowed_address_pairs, and optionally a floating
// IP bound to it.
type VIPSpec struct {
	CP, FIP string
}

// RegistryVNF returns the topology of the private registry VNF of the CIR
// spec, from its typed private_registry_installation_param: one VDU in the
// top-level stack, named after ssh_cp_name, with its SSH login.
// additionalParams are kept in the VnfInstance, as Tacker keeps them.
func RegistryVNF(p registry.InstallParams, additionalParams json.RawMessage) Topology {
	return Topology{
		Servers: []ServerSpec{{
			Role:  lcm.RoleRegistry,
			Name:  "VDU1",
			SSHCP: p.SSHCPName,
			Login: Login{User: p.SSHUsername, Password: p.SSHPassword.Reveal()},
		}},
		AdditionalParams: additionalParams,
	}
}

// ClusterShape is how many VMs of each kind a Kubernetes cluster VNF has:
// what its VNFD's initial deltas and Heat template say, which the request
// does not.
type ClusterShape struct {
	// Masters is 1 or 3; Workers any number. MaxWorkers bounds scale-out
	// (Workers + 10 when 0).
	Masters, Workers, MaxWorkers int
	// MinWorkers is the worker group's min_size.
	MinWorkers int
	// Packages are installed on every master and worker in addition to
	// Ubuntu's base (e.g. a container runtime, until a step installs it).
	Packages []string
}

// KubernetesCluster returns the topology of a Kubernetes cluster VNF from
// its parameters as the cluster driver decodes them (drivers.ClusterParams,
// the one composition of the VNF's roles): the master and worker groups
// (aspect_id, ssh_cp_name, nic_cp_name, username, password), the cluster
// VIP (cluster_cp_name, cluster_fip_name: a top-level port with several
// masters, a port of the single master otherwise), and, when the
// parameters name them, the storage server with its Cinder volumes and
// the external load balancer. additionalParams are kept in the
// VnfInstance, as Tacker keeps them. kubespray's Ansible server is
// outside the VNF: see [Cloud.AddAnsibleServer].
func KubernetesCluster(p drivers.ClusterParams, shape ClusterShape, additionalParams json.RawMessage) (Topology, error) {
	m := p.MasterNode
	if m.SSHCPName == "" {
		return Topology{}, errors.New("sim: master_node has no ssh_cp_name")
	}
	if shape.Masters < 1 {
		shape.Masters = 1
	}
	t := Topology{AdditionalParams: additionalParams}
	login := func(n kubeadm.NodeParams) Login { return Login{User: n.Username, Password: n.Password.Reveal()} }
	masters := GroupSpec{
		Role: lcm.RoleMaster, Aspect: m.AspectID, Count: shape.Masters, MinSize: shape.Masters, MaxSize: shape.Masters,
		SSHCP: m.SSHCPName, NICCP: m.NICCPName, Login: login(m), Packages: shape.Packages,
	}
	vipAtTop := m.AspectID == "" || shape.Masters > 1
	switch {
	case m.ClusterCPName == "":
	case vipAtTop:
		t.VIP = &VIPSpec{CP: m.ClusterCPName, FIP: m.ClusterFIPName}
	case m.ClusterCPName != m.SSHCPName && m.ClusterCPName != m.NICCPName:
		masters.ExtraPorts = append(masters.ExtraPorts, m.ClusterCPName)
		fallthrough
	default:
		if m.ClusterFIPName != "" {
			t.VIP = &VIPSpec{FIP: m.ClusterFIPName}
		}
	}
	if m.AspectID == "" {
		if shape.Masters != 1 {
			return Topology{}, errors.New("sim: several masters need master_node.aspect_id")
		}
		t.Servers = append(t.Servers, ServerSpec{Role: lcm.RoleMaster, Name: "masterNode", SSHCP: m.SSHCPName, NICCP: m.NICCPName, Login: masters.Login, Packages: shape.Packages})
	} else {
		t.Groups = append(t.Groups, masters)
	}
	if w := p.WorkerNode; w != nil && w.SSHCPName != "" && shape.Workers > 0 {
		workers := GroupSpec{
			Role: lcm.RoleWorker, Aspect: w.AspectID, Count: shape.Workers, MinSize: shape.MinWorkers, MaxSize: shape.MaxWorkers,
			SSHCP: w.SSHCPName, NICCP: w.NICCPName, Login: login(*w), Packages: shape.Packages,
		}
		if workers.MaxSize == 0 {
			workers.MaxSize = shape.Workers + 10
		}
		if w.AspectID == "" {
			t.Servers = append(t.Servers, ServerSpec{Role: lcm.RoleWorker, Name: "workerNode", SSHCP: w.SSHCPName, NICCP: w.NICCPName, Login: workers.Login, Packages: shape.Packages})
		} else {
			t.Groups = append(t.Groups, workers)
		}
	}
	if s := p.StorageServer; s != nil && s.SSHCPName != "" {
		spec := ServerSpec{Role: lcm.RoleStorage, Name: "storage_server", SSHCP: s.SSHCPName, NICCP: s.NICCPName, Login: Login{User: s.Username, Password: s.Password.Reveal()}}
		for _, v := range s.CinderVolumeSetupParams {
			spec.Volumes = append(spec.Volumes, VolumeSpec{Resource: v.VolumeResourceID})
		}
		t.Servers = append(t.Servers, spec)
	}
	if lb := p.ExternalLBParam; lb != nil && lb.SSHCPName != "" {
		t.Servers = append(t.Servers, ServerSpec{Role: lcm.RoleLoadBalancer, Name: "externalLB", SSHCP: lb.SSHCPName, Login: Login{User: lb.SSHUsername, Password: lb.SSHPassword.Reveal()}})
	}
	return t, nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func randomPassword() string { return rand.Text() }

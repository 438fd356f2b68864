package sim

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mgmtkit/mgmtkit/lcm"
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
	// Ansible, when set, is the login of a VM outside the VNF's stack:
	// kubespray's pre-built Ansible server, which the request names by
	// address. See [VNF.Ansible].
	Ansible *Login
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

// VolumeSpec is a Cinder volume attached to a server.
type VolumeSpec struct {
	// Resource is the OS::Cinder::Volume resource name
	// (volume_resource_id).
	Resource string
	// Device is where it appears on the VM; /dev/vdb, /dev/vdc, ... by
	// default.
	Device string
	// SizeGB is its size; 1 by default.
	SizeGB int
}

// VIPSpec is a cluster VIP: a bare port in the top-level stack that the
// masters' ports list in allowed_address_pairs, and optionally a floating
// IP bound to it.
type VIPSpec struct {
	CP, FIP string
}

// RegistryVNF returns the topology of the private registry VNF of the CIR
// spec: one VDU in the top-level stack, named after
// private_registry_installation_param.ssh_cp_name, with its SSH login.
func RegistryVNF(additionalParams json.RawMessage) (Topology, error) {
	var p struct {
		Install *struct {
			SSHCP    string `json:"ssh_cp_name"`
			User     string `json:"ssh_username"`
			Password string `json:"ssh_password"`
		} `json:"private_registry_installation_param"`
	}
	if err := json.Unmarshal(additionalParams, &p); err != nil {
		return Topology{}, fmt.Errorf("sim: additionalParams: %w", err)
	}
	if p.Install == nil || p.Install.SSHCP == "" {
		return Topology{}, errors.New("sim: additionalParams has no private_registry_installation_param.ssh_cp_name")
	}
	return Topology{
		Servers: []ServerSpec{{
			Role:  lcm.RoleRegistry,
			Name:  "VDU1",
			SSHCP: p.Install.SSHCP,
			Login: Login{User: p.Install.User, Password: p.Install.Password},
		}},
		AdditionalParams: additionalParams,
	}, nil
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

// KubernetesCluster returns the topology of a Kubernetes cluster VNF for
// the k8s_cluster_installation_param of additionalParams: the master and
// worker groups (aspect_id, ssh_cp_name, nic_cp_name, username, password),
// the cluster VIP (cluster_cp_name, cluster_fip_name: a top-level port
// with several masters, a port of the single master otherwise), and, when
// the parameters name them, the storage server with its Cinder volumes,
// the external load balancer and kubespray's Ansible server.
func KubernetesCluster(additionalParams json.RawMessage, shape ClusterShape) (Topology, error) {
	type node struct {
		AspectID   string `json:"aspect_id"`
		SSHCP      string `json:"ssh_cp_name"`
		NICCP      string `json:"nic_cp_name"`
		User       string `json:"username"`
		Password   string `json:"password"`
		ClusterCP  string `json:"cluster_cp_name"`
		ClusterFIP string `json:"cluster_fip_name"`
	}
	var p struct {
		Param *struct {
			Master  *node `json:"master_node"`
			Worker  *node `json:"worker_node"`
			Storage *struct {
				SSHCP    string `json:"ssh_cp_name"`
				NICCP    string `json:"nic_cp_name"`
				User     string `json:"username"`
				Password string `json:"password"`
				Volumes  []struct {
					Resource string `json:"volume_resource_id"`
				} `json:"cinder_volume_setup_params"`
			} `json:"storage_server"`
			LB *struct {
				SSHCP    string `json:"ssh_cp_name"`
				User     string `json:"ssh_username"`
				Password string `json:"ssh_password"`
			} `json:"external_lb_param"`
			Ansible *struct {
				User     string `json:"username"`
				Password string `json:"password"`
			} `json:"ansible"`
		} `json:"k8s_cluster_installation_param"`
	}
	if err := json.Unmarshal(additionalParams, &p); err != nil {
		return Topology{}, fmt.Errorf("sim: additionalParams: %w", err)
	}
	if p.Param == nil || p.Param.Master == nil || p.Param.Master.SSHCP == "" {
		return Topology{}, errors.New("sim: additionalParams has no k8s_cluster_installation_param.master_node.ssh_cp_name")
	}
	if shape.Masters < 1 {
		shape.Masters = 1
	}
	t := Topology{AdditionalParams: additionalParams}
	m := p.Param.Master
	masters := GroupSpec{
		Role: lcm.RoleMaster, Aspect: m.AspectID, Count: shape.Masters, MinSize: shape.Masters, MaxSize: shape.Masters,
		SSHCP: m.SSHCP, NICCP: m.NICCP, Login: Login{User: m.User, Password: m.Password}, Packages: shape.Packages,
	}
	vipAtTop := m.AspectID == "" || shape.Masters > 1
	switch {
	case m.ClusterCP == "":
	case vipAtTop:
		t.VIP = &VIPSpec{CP: m.ClusterCP, FIP: m.ClusterFIP}
	case m.ClusterCP != m.SSHCP && m.ClusterCP != m.NICCP:
		masters.ExtraPorts = append(masters.ExtraPorts, m.ClusterCP)
		fallthrough
	default:
		if m.ClusterFIP != "" {
			t.VIP = &VIPSpec{FIP: m.ClusterFIP}
		}
	}
	if m.AspectID == "" {
		if shape.Masters != 1 {
			return Topology{}, errors.New("sim: several masters need master_node.aspect_id")
		}
		t.Servers = append(t.Servers, ServerSpec{Role: lcm.RoleMaster, Name: "masterNode", SSHCP: m.SSHCP, NICCP: m.NICCP, Login: masters.Login, Packages: shape.Packages})
	} else {
		t.Groups = append(t.Groups, masters)
	}
	if w := p.Param.Worker; w != nil && w.SSHCP != "" && shape.Workers > 0 {
		workers := GroupSpec{
			Role: lcm.RoleWorker, Aspect: w.AspectID, Count: shape.Workers, MinSize: shape.MinWorkers, MaxSize: shape.MaxWorkers,
			SSHCP: w.SSHCP, NICCP: w.NICCP, Login: Login{User: w.User, Password: w.Password}, Packages: shape.Packages,
		}
		if workers.MaxSize == 0 {
			workers.MaxSize = shape.Workers + 10
		}
		if w.AspectID == "" {
			t.Servers = append(t.Servers, ServerSpec{Role: lcm.RoleWorker, Name: "workerNode", SSHCP: w.SSHCP, NICCP: w.NICCP, Login: workers.Login, Packages: shape.Packages})
		} else {
			t.Groups = append(t.Groups, workers)
		}
	}
	if s := p.Param.Storage; s != nil && s.SSHCP != "" {
		spec := ServerSpec{Role: lcm.RoleStorage, Name: "storage_server", SSHCP: s.SSHCP, NICCP: s.NICCP, Login: Login{User: s.User, Password: s.Password}}
		for _, v := range s.Volumes {
			spec.Volumes = append(spec.Volumes, VolumeSpec{Resource: v.Resource})
		}
		t.Servers = append(t.Servers, spec)
	}
	if lb := p.Param.LB; lb != nil && lb.SSHCP != "" {
		t.Servers = append(t.Servers, ServerSpec{Role: lcm.RoleLoadBalancer, Name: "externalLB", SSHCP: lb.SSHCP, Login: Login{User: lb.User, Password: lb.Password}})
	}
	if a := p.Param.Ansible; a != nil {
		t.Ansible = &Login{User: a.User, Password: a.Password}
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

package cloudtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/kitsim"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The simulated cloud's descriptions of a VNF, as its Heat template and
// VNFD would give them; [Cloud.NewVNF] builds any of them, and
// [Cloud.NewCluster] derives a Kubernetes cluster's from its typed
// parameters.
type (
	// Topology describes a VNF's VMs: groups of identical members
	// (OS::Heat::AutoScalingGroup) and single servers in the top-level
	// stack, with their connection points, logins, volumes and the
	// cluster VIP, and the additionalParams the VNFM keeps.
	Topology = sim.Topology
	// GroupSpec is an OS::Heat::AutoScalingGroup of VMs: role, aspect,
	// size bounds, connection points, login and packages.
	GroupSpec = sim.GroupSpec
	// ServerSpec is a VM in the top-level stack.
	ServerSpec = sim.ServerSpec
	// Login is the account a VM's image has for the management driver.
	Login = sim.Login
	// VolumeSpec is a Cinder volume attached to a server; its disk's
	// serial is the volume ID, as Nova sets it.
	VolumeSpec = sim.VolumeSpec
	// VIPSpec is a cluster VIP: a bare port the masters' ports allow,
	// and optionally its floating IP.
	VIPSpec = sim.VIPSpec
	// Shape is how many VMs of each kind a Kubernetes cluster VNF has
	// (Masters: 1 or 3; Workers; MinWorkers and MaxWorkers bound
	// scaling), what its VNFD and Heat template say and the request does
	// not, and the packages installed on its masters and workers
	// beforehand.
	Shape = sim.ClusterShape
	// DiskBus is how a Cinder volume is attached ([VolumeSpec].Bus),
	// which decides its /dev/disk/by-id name: [BusVirtio] or [BusSCSI].
	DiskBus = ubuntu.DiskBus
)

// The disk buses of [VolumeSpec].
const (
	// BusVirtio is a virtio-blk disk (/dev/vdX), Nova's default:
	// /dev/disk/by-id/virtio-SERIAL, the serial cut to 20 characters.
	BusVirtio = ubuntu.BusVirtio
	// BusSCSI is a disk on virtio-scsi (/dev/sdX, the image property
	// hw_disk_bus=scsi): /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL.
	BusSCSI = ubuntu.BusSCSI
)

// Options configure [Start].
type Options struct {
	// Kube is what the Kubernetes clusters that kubeadm init (or
	// kubespray) creates run on: nil for the in-memory model.
	Kube KubeBackend
	// Packages are added to every VM's apt catalog (see
	// [VMOptions.Packages]).
	Packages []Package
}

// Cloud is a simulated OpenStack tenant for a hook's or a driver's test:
// Keystone and Heat over real HTTP on loopback, and VMs that are
// simulated Ubuntu 22.04 hosts behind real SSH servers, each on its own
// loopback address. A driver reaches it exactly as it reaches a real
// cloud, through [Cloud.Plumbing] and the VNF instance's VIM connection.
// It is safe for concurrent use.
type Cloud struct {
	t   TB
	sim *sim.Cloud
	pkg *lcm.Package

	mu  sync.Mutex
	vms map[*sim.Host]*VM
}

// Start starts a simulated cloud with no VNF yet, and stops it when t
// ends.
func Start(t TB, opts Options) *Cloud {
	t.Helper()
	cat, err := catalog(opts.Packages)
	if err != nil {
		t.Fatal(err)
	}
	return &Cloud{
		t:   t,
		sim: sim.Start(t, sim.Options{KubeBackend: opts.Kube, Catalog: cat}),
		pkg: lcm.NewPackage(samples.VNFPackage()),
		vms: map[*sim.Host]*VM{},
	}
}

// Plumbing returns what a driver needs to reach the cloud, as a VNFM
// would configure it: SSH through the simulated network with every host
// key verified against the cloud's known_hosts (kept current as VMs come
// and go), and Heat through the VNF instance's VIM connection
// ([Cloud.VimConnection]), over HTTP, as heat.ConnectInstance does by
// default.
func (c *Cloud) Plumbing() plumbing.Config {
	return plumbing.Config{SSH: c.sim.SSHConfigFunc(nil)}
}

// VimConnection returns the tenant as the OpenStack entry of a VNF's
// vimConnectionInfo (Tacker's format: endpoint, username, password,
// project, domains, region); every VNF of the cloud has it.
func (c *Cloud) VimConnection() lcm.VimConnectionInfo { return c.sim.VimConnection() }

// Package returns the samples' VNF package (package samples): the VNFD,
// images, certificates, manifests and scripts the sample requests name.
// It is the package of every operation of a [VNF].
func (c *Cloud) Package() *lcm.Package { return c.pkg }

// SampleRequest returns one of the specs' sample instantiate requests
// (samples.InstantiateCIRRegistry, InstantiateCIRCluster,
// InstantiatePVCluster, InstantiateKubespray) made to work in this cloud:
// the placeholders mgmtkit refuses replaced (the proxy dropped, the
// Ansible server at the address this cloud gives it), and the kubeadm
// clusters' pod network the sample package's (flannel, 10.244.0.0/16,
// room for any number of nodes), their exports open to the cloud's node
// network. Everything else is the spec's; samples.Patch changes more.
//
// The registries the cir sample connects to are not started: the nodes
// are configured to trust them, and a pull from them fails.
func (c *Cloud) SampleRequest(name string) *lcm.InstantiateVnfRequest {
	c.t.Helper()
	if !slices.Contains([]string{samples.InstantiateCIRRegistry, samples.InstantiateCIRCluster, samples.InstantiatePVCluster, samples.InstantiateKubespray}, name) {
		c.t.Fatalf("cloudtest: SampleRequest: %q is not a sample instantiate request", name)
	}
	body, err := c.sim.Request(name)
	if err != nil {
		c.t.Fatal(err)
	}
	var req lcm.InstantiateVnfRequest
	if err := json.Unmarshal(body, &req); err != nil {
		c.t.Fatalf("cloudtest: %s: %v", name, err)
	}
	return &req
}

// NewCluster builds a Kubernetes cluster VNF in Heat from req as the
// cluster driver decodes it (drivers.DecodeClusterParams, against
// [Cloud.Package]): every role its parameters name, each where they say
// (aspect_id, ssh_cp_name, nic_cp_name) with their logins: the masters and
// workers in shape's numbers, the cluster VIP, the storage server with its
// Cinder volumes, the external load balancer, and kubespray's Ansible
// server (outside the VNF's stack, started once per cloud). Nothing is
// installed on them beyond Ubuntu and shape.Packages: that is what
// [VNF.Instantiate] has the driver do. A request the decoder refuses
// fails the test.
//
// Heat's part of instantiate is done when NewCluster returns, so that a
// test can prepare the VMs (inject faults) before the driver's hooks run.
func (c *Cloud) NewCluster(req *lcm.InstantiateVnfRequest, shape Shape) *VNF {
	c.t.Helper()
	if req == nil {
		c.t.Fatal("cloudtest: NewCluster: no request")
	}
	body, err := json.Marshal(req)
	if err != nil {
		c.t.Fatal(err)
	}
	_, topo, err := c.sim.ClusterFrom("the request", body, shape)
	if err != nil {
		c.t.Fatal(err)
	}
	v := c.NewVNF(topo)
	v.req = req
	return v
}

// NewInstantiatedCluster is [Cloud.NewCluster] instantiated by mgmtkit's
// own kubeadm cluster driver (examples/drivers.ClusterDriver through
// [VNF.Instantiate]), with every node of the VNF's masters and workers
// registered and Ready: the starting point of a scale or heal test, which
// then cannot pass without a cluster to act on. Anything else fails the
// test.
func (c *Cloud) NewInstantiatedCluster(ctx context.Context, req *lcm.InstantiateVnfRequest, shape Shape) *VNF {
	c.t.Helper()
	v := c.NewCluster(req, shape)
	d := &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: c.Plumbing()}}
	if _, err := v.Instantiate(ctx, d, req); err != nil {
		c.t.Fatalf("cloudtest: instantiating the cluster with the kubeadm driver: %v", err)
	}
	if err := v.nodesReady(ctx); err != nil {
		c.t.Fatalf("cloudtest: the instantiated cluster: %v", err)
	}
	return v
}

// NewVNF builds a VNF of any topology in Heat, with a fresh VM behind
// every server: Heat's part of instantiate.
func (c *Cloud) NewVNF(topo Topology) *VNF {
	c.t.Helper()
	v, err := c.sim.Build(topo)
	if err != nil {
		c.t.Fatal(err)
	}
	return &VNF{c: c, sim: v, topo: topo, params: topo.AdditionalParams, internals: kitsim.New(c.sim, v)}
}

// AnsibleServer returns kubespray's Ansible server, a VM of the tenant
// outside every VNF's stack that [Cloud.NewCluster] starts for a request
// naming one (ansible.ip_address, as [Cloud.SampleRequest] sets it), or
// nil.
func (c *Cloud) AnsibleServer() *VM {
	if h := c.sim.AnsibleServer(); h != nil {
		return c.vm(h)
	}
	return nil
}

// vm returns the VM of a simulated host, the same one for every call.
func (c *Cloud) vm(h *sim.Host) *VM {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.vms[h]; ok {
		return v
	}
	v := &VM{t: c.t, cloud: c.sim, h: h}
	c.vms[h] = v
	return v
}

// vmsOf returns the VMs of simulated hosts.
func (c *Cloud) vmsOf(hs []*sim.Host) []*VM {
	out := make([]*VM, 0, len(hs))
	for _, h := range hs {
		out = append(out, c.vm(h))
	}
	return out
}

// nodesReady checks that the cluster has exactly the VNF's masters and
// workers as nodes, each Ready, as kubectl on a master reports them.
func (v *VNF) nodesReady(ctx context.Context) error {
	k, err := v.Kubectl(ctx)
	if err != nil {
		return err
	}
	nodes, err := k.Nodes(ctx)
	if err != nil {
		return err
	}
	want := len(v.VMs(lcm.RoleMaster)) + len(v.VMs(lcm.RoleWorker))
	var errs []error
	if len(nodes) != want {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		errs = append(errs, fmt.Errorf("%d nodes (%s), the VNF has %d masters and workers", len(nodes), strings.Join(names, ", "), want))
	}
	for _, n := range nodes {
		ready := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready = cond.Status == corev1.ConditionTrue
			}
		}
		if !ready {
			errs = append(errs, fmt.Errorf("node %s is not Ready", n.Name))
		}
	}
	return errors.Join(errs...)
}

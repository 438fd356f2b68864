package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/heat/heattest"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Host is one simulated VM.
type Host struct {
	// Resource is the node's name in Heat: its member resource in a group,
	// or its server resource in the top-level stack.
	Resource string
	Role     lcm.Role
	// Aspect is the group the host is a member of; empty at top level.
	Aspect string
	// ServerID is its Nova server UUID.
	ServerID string
	// StackID is the stack holding its resources.
	StackID string
	// Addresses are the IPs it answers on: the SSH address first, then
	// the NIC address and any further ports.
	Addresses []string
	// SSHAddress and NICAddress are what Heat reports for its CPs.
	SSHAddress, NICAddress string
	// CreatedAt is its member resource's (or server's) creation time.
	CreatedAt time.Time
	// SSH is the fake SSH server; SSH.FS() its filesystem.
	SSH *sshtest.Server
	// Machine is the Ubuntu state: packages, services, disks, mounts.
	Machine *ubuntu.Machine
	// Login is the account the management driver uses.
	Login Login
	// Disks are its attached Cinder volumes by device.
	Disks map[string]*ubuntu.Disk

	listeners map[string]string
	server    string   // OS::Nova::Server resource name
	ports     []string // port resource names, in Addresses order
	volumes   []VolumeSpec
	vnfcID    string
}

// Name returns h.Resource.
func (h *Host) Name() string { return h.Resource }

// FS returns the host's filesystem.
func (h *Host) FS() *sshtest.FS { return h.SSH.FS() }

// Node returns the host as Heat describes it.
func (h *Host) Node() lcm.Node { return h.node() }

func (h *Host) node() lcm.Node {
	return lcm.Node{
		Resource: h.Resource, Role: h.Role, Aspect: h.Aspect,
		SSHAddress: h.SSHAddress, NICAddress: h.NICAddress,
		ServerID: h.ServerID, StackID: h.StackID, CreatedAt: h.CreatedAt,
	}
}

// VNF is one VNF instance of the cloud: its top-level stack and hosts.
type VNF struct {
	cloud *Cloud
	topo  Topology
	stack *heattest.Stack

	mu       sync.Mutex
	groups   map[string]*heattest.Group
	specs    map[string]GroupSpec
	initial  map[string]int
	building map[string]*Host // member stack ID → host, filled by member builders
	buildErr error
	vip      string
}

// Build creates a VNF: its Heat stack and a fresh host behind every
// server.
func (c *Cloud) Build(t Topology) (*VNF, error) {
	if t.InstanceID == "" {
		t.InstanceID = newUUID()
	}
	if t.StackName == "" {
		t.StackName = "vnf-" + t.InstanceID
	}
	v := &VNF{
		cloud: c, topo: t,
		stack:    c.heat.CreateStack(t.StackName),
		groups:   map[string]*heattest.Group{},
		specs:    map[string]GroupSpec{},
		initial:  map[string]int{},
		building: map[string]*Host{},
	}
	c.mu.Lock()
	c.vnfs = append(c.vnfs, v)
	c.mu.Unlock()
	if t.VIP != nil && t.VIP.CP != "" {
		addr, err := c.allocate()
		if err != nil {
			return nil, err
		}
		v.vip = addr
		v.stack.AddPort(t.VIP.CP, addr)
	}
	if t.VIP != nil && t.VIP.FIP != "" {
		addr, err := c.allocate()
		if err != nil {
			return nil, err
		}
		if t.VIP.CP != "" {
			v.stack.AddFloatingIP(t.VIP.FIP, addr, t.VIP.CP)
		} else {
			v.stack.AddResource(t.VIP.FIP, heat.TypeFloatingIP, map[string]any{"floating_ip_address": addr})
		}
	}
	for _, s := range t.Servers {
		if err := v.addServer(s); err != nil {
			return nil, err
		}
	}
	for _, g := range t.Groups {
		if err := v.addGroup(g); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// ID returns the VNF instance ID.
func (v *VNF) ID() string { return v.topo.InstanceID }

// StackName returns the top-level stack's name.
func (v *VNF) StackName() string { return v.stack.Name() }

// StackID returns the top-level stack's ID.
func (v *VNF) StackID() string { return v.stack.ID() }

// Stack returns the top-level stack in the fake Heat, for tests that
// change its status or resources.
func (v *VNF) Stack() *heattest.Stack { return v.stack }

// VIP returns the cluster VIP address, or "".
func (v *VNF) VIP() string { return v.vip }

// Hosts returns the VNF's running hosts in [lcm.CompareNodes] order.
func (v *VNF) Hosts() []*Host {
	var out []*Host
	for _, h := range v.cloud.Hosts() {
		if v.owns(h) {
			out = append(out, h)
		}
	}
	return out
}

// HostsWithRole returns the VNF's running hosts of one role.
func (v *VNF) HostsWithRole(r lcm.Role) []*Host {
	var out []*Host
	for _, h := range v.Hosts() {
		if h.Role == r {
			out = append(out, h)
		}
	}
	return out
}

func (v *VNF) owns(h *Host) bool {
	if h.StackID == v.stack.ID() {
		return true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, g := range v.groups {
		for _, m := range g.Members() {
			if m.Stack.ID() == h.StackID {
				return true
			}
		}
	}
	return false
}

// ports allocates addresses for a VM's ports and adds them to st: the SSH
// CP first (a floating IP bound to the NIC port when floating), then the
// NIC port and extra ports. It returns the addresses the host answers on,
// the SSH and NIC addresses, and the port resource names.
func (v *VNF) ports(st *heattest.Stack, sshCP, nicCP string, floating bool, extra []string) (addrs []string, ssh, nic string, ports []string, err error) {
	if floating && (nicCP == "" || nicCP == sshCP) {
		return nil, "", "", nil, fmt.Errorf("sim: a floating IP (%s) needs a distinct NIC port", sshCP)
	}
	alloc := func() string {
		a, e := v.cloud.allocate()
		err = errors.Join(err, e)
		return a
	}
	if floating {
		nic, ssh = alloc(), alloc()
		st.AddPort(nicCP, nic)
		st.AddFloatingIP(sshCP, ssh, nicCP)
		addrs, ports = []string{ssh, nic}, []string{"", nicCP}
	} else {
		ssh = alloc()
		st.AddPort(sshCP, ssh)
		addrs, ports, nic = []string{ssh}, []string{sshCP}, ssh
		if nicCP != "" && nicCP != sshCP {
			nic = alloc()
			st.AddPort(nicCP, nic)
			addrs, ports = append(addrs, nic), append(ports, nicCP)
		}
	}
	for _, p := range extra {
		a := alloc()
		st.AddPort(p, a)
		addrs, ports = append(addrs, a), append(ports, p)
	}
	return addrs, ssh, nic, ports, err
}

func (v *VNF) addServer(s ServerSpec) error {
	addrs, ssh, nic, ports, err := v.ports(v.stack, s.SSHCP, s.NICCP, s.FloatingIP, nil)
	if err != nil {
		return err
	}
	h, err := v.cloud.newHost(s.Role, s.Login, addrs, s.Packages)
	if err != nil {
		return err
	}
	attach := slices.DeleteFunc(slices.Clone(ports), func(p string) bool { return p == "" })
	srv := v.stack.AddServer(s.Name, attach...)
	h.Resource, h.server, h.ports, h.StackID = s.Name, s.Name, ports, v.stack.ID()
	h.ServerID, h.SSHAddress, h.NICAddress = srv.PhysicalID(), ssh, nic
	h.CreatedAt = v.cloud.heat.Now()
	h.vnfcID = fmt.Sprintf("vnfc-%s", s.Name)
	h.Disks = map[string]*ubuntu.Disk{}
	for i, vol := range s.Volumes {
		if vol.Device == "" {
			vol.Device = "/dev/vd" + string(rune('b'+i))
			if vol.Bus == ubuntu.BusSCSI {
				vol.Device = "/dev/sd" + string(rune('a'+i))
			}
		}
		if vol.ReportedDevice == "" {
			vol.ReportedDevice = vol.Device
		}
		if vol.SizeGB == 0 {
			vol.SizeGB = 1
		}
		r := v.stack.AddVolume(vol.Resource, s.Name, vol.ReportedDevice, vol.SizeGB)
		disk := newVolumeDisk(vol, r.PhysicalID())
		h.Machine.AttachDisk(vol.Device, disk)
		h.Disks[vol.Device] = disk
		h.volumes = append(h.volumes, vol)
	}
	v.setDeviceIDs(v.stack, h)
	return v.cloud.register(h)
}

// newVolumeDisk returns the blank disk of a new Cinder volume: its serial
// the volume ID, as Nova gives it (libvirt's <serial>), on the volume's
// bus, with the volume ID as WWN when asked.
func newVolumeDisk(vol VolumeSpec, volumeID string) *ubuntu.Disk {
	disk := ubuntu.NewDisk(int64(vol.SizeGB) << 30)
	disk.SetSerial(volumeID)
	disk.SetBus(vol.Bus)
	if vol.WWN {
		disk.SetWWN(strings.ReplaceAll(volumeID, "-", ""))
	}
	return disk
}

// setDeviceIDs records on the host's ports which server they are attached
// to, as Neutron's device_id does.
func (v *VNF) setDeviceIDs(st *heattest.Stack, h *Host) {
	for _, p := range h.ports {
		if r := st.Resource(p); p != "" && r != nil {
			r.SetAttribute("device_id", h.ServerID)
			if h.Role == lcm.RoleMaster && v.vip != "" {
				r.SetAttribute("allowed_address_pairs", []any{map[string]any{"ip_address": v.vip}})
			}
		}
	}
}

func (v *VNF) addGroup(g GroupSpec) error {
	if g.Aspect == "" {
		return errors.New("sim: a group needs an aspect")
	}
	if g.MaxSize == 0 {
		g.MaxSize = g.Count + 10
	}
	v.mu.Lock()
	v.specs[g.Aspect] = g
	v.initial[g.Aspect] = g.Count
	v.mu.Unlock()
	grp := v.stack.AddGroup(g.Aspect, heattest.GroupSpec{
		MinSize: g.MinSize, MaxSize: g.MaxSize, Desired: g.Count,
		Member: func(m *heattest.Stack, index int) { v.buildMember(g, m, index) },
	})
	v.stack.AddScalingPolicy(g.Aspect+"_scale_out", g.Aspect, 1)
	v.stack.AddScalingPolicy(g.Aspect+"_scale_in", g.Aspect, -1)
	v.mu.Lock()
	v.groups[g.Aspect] = grp
	v.mu.Unlock()
	_, err := v.adopt(g.Aspect)
	return err
}

// buildMember is the member template of a group: it runs inside heattest
// when a member is created, and starts the member's host.
func (v *VNF) buildMember(g GroupSpec, m *heattest.Stack, index int) {
	fail := func(err error) {
		v.mu.Lock()
		v.buildErr = errors.Join(v.buildErr, err)
		v.mu.Unlock()
	}
	addrs, ssh, nic, ports, err := v.ports(m, g.SSHCP, g.NICCP, g.FloatingIP, g.ExtraPorts)
	if err != nil {
		fail(err)
		return
	}
	h, err := v.cloud.newHost(g.Role, g.Login, addrs, g.Packages)
	if err != nil {
		fail(err)
		return
	}
	name := fmt.Sprintf("%sNode", g.Role)
	attach := slices.DeleteFunc(slices.Clone(ports), func(p string) bool { return p == "" })
	srv := m.AddServer(name, attach...)
	h.Aspect, h.server, h.ports, h.StackID = g.Aspect, name, ports, m.ID()
	h.ServerID, h.SSHAddress, h.NICAddress = srv.PhysicalID(), ssh, nic
	v.setDeviceIDs(m, h)
	v.mu.Lock()
	v.building[m.ID()] = h
	v.mu.Unlock()
}

// adopt registers the hosts built for a group's new members, naming them
// after their member resources.
func (v *VNF) adopt(aspect string) ([]*Host, error) {
	v.mu.Lock()
	grp := v.groups[aspect]
	err := v.buildErr
	v.buildErr = nil
	v.mu.Unlock()
	var added []*Host
	for _, m := range grp.Members() {
		v.mu.Lock()
		h := v.building[m.Stack.ID()]
		delete(v.building, m.Stack.ID())
		v.mu.Unlock()
		if h == nil {
			continue
		}
		h.Resource, h.CreatedAt = m.Name, m.CreatedAt
		h.vnfcID = "vnfc-" + m.Name
		added = append(added, h)
	}
	if len(added) > 0 {
		err = errors.Join(err, v.cloud.register(added...))
	}
	return added, err
}

// ScaleOut adds n members to the group aspect, each a fresh host, as Heat
// does for a SCALE_OUT; it returns the new hosts.
func (v *VNF) ScaleOut(aspect string, n int) ([]*Host, error) {
	grp, err := v.group(aspect)
	if err != nil {
		return nil, err
	}
	if _, err := grp.ScaleOut(n); err != nil {
		return nil, err
	}
	return v.adopt(aspect)
}

// ScaleIn removes members of the group aspect by resource name (Tacker
// passes the names its scale-in targets resolved to), stopping their
// hosts. With no names it removes the oldest member, as Heat's default
// removal policy does.
func (v *VNF) ScaleIn(aspect string, names ...string) ([]*Host, error) {
	grp, err := v.group(aspect)
	if err != nil {
		return nil, err
	}
	before := map[string]bool{}
	for _, m := range grp.Members() {
		before[m.Stack.ID()] = true
	}
	if len(names) == 0 {
		_, err = grp.ScaleIn(1)
	} else {
		_, err = grp.RemoveMembers(names...)
	}
	if err != nil {
		return nil, err
	}
	for _, m := range grp.Members() {
		delete(before, m.Stack.ID())
	}
	var removed []*Host
	for _, h := range v.cloud.Hosts() {
		if before[h.StackID] {
			removed = append(removed, h)
		}
	}
	if len(removed) > 0 {
		err = errors.Join(err, v.cloud.retire(removed...))
	}
	return removed, err
}

// Delete deletes the VNF as Heat's stack delete does when the VNFM
// terminates it (between terminate_start and terminate_end): every VM of
// it stops (its SSH refuses, its Kubernetes membership is forgotten, as
// at a scale-in) and the stack is gone with the stacks nested in it.
func (v *VNF) Delete() error {
	hosts := v.Hosts()
	err := v.cloud.retire(hosts...)
	if !v.cloud.heat.DeleteStack(v.stack.ID()) {
		err = errors.Join(err, fmt.Errorf("sim: the stack of VNF %s is already gone", v.ID()))
	}
	return err
}

// HealOptions say how a healed VM comes back.
type HealOptions struct {
	// NewAddresses gives the new VM new fixed IPs (Heat re-creates its
	// ports); by default the ports and their addresses are kept. Floating
	// IPs keep their address either way.
	NewAddresses bool
	// NewVolumes re-creates the server's Cinder volumes too, as a heal
	// whose stack update replaces them does (Tacker's reference warns that
	// a storage heal "initializes" the data): each volume gets a new ID
	// (so a new serial and /dev/disk/by-id name), the disk is blank, and
	// Heat's attachments report the new volume. By default the volumes
	// survive and are re-attached with their data.
	NewVolumes bool
}

// Heal replaces the VM of a server, as Heat does for a heal: a new server
// ID, a fresh host with an empty filesystem and the base packages, the same
// (or new) addresses, and the old server's volumes re-attached with their
// data (or, with NewVolumes, new blank volumes). Heat's view follows:
// the volume resources' attachments and attachments_list name the new
// server and a new attachment. It returns the new host.
func (v *VNF) Heal(serverID string, opts HealOptions) (*Host, error) {
	old := v.cloud.HostByServer(serverID)
	if old == nil || !v.owns(old) {
		return nil, fmt.Errorf("sim: no host of VNF %s has server %s", v.ID(), serverID)
	}
	st := v.cloud.heat.Stack(old.StackID)
	if st == nil {
		return nil, fmt.Errorf("sim: stack %s of %s is gone", old.StackID, old.Resource)
	}
	addrs := slices.Clone(old.Addresses)
	sshAddr, nicAddr := old.SSHAddress, old.NICAddress
	if opts.NewAddresses {
		for i, p := range old.ports {
			if p == "" { // a floating IP keeps its address
				continue
			}
			a, err := v.cloud.allocate()
			if err != nil {
				return nil, err
			}
			if addrs[i] == nicAddr {
				nicAddr = a
			}
			if addrs[i] == sshAddr {
				sshAddr = a
			}
			addrs[i] = a
			st.Resource(p).SetFixedIPs(a)
		}
	}
	if err := v.cloud.retire(old); err != nil {
		return nil, err
	}
	h, err := v.cloud.newHost(old.Role, old.Login, addrs, v.packagesOf(old))
	if err != nil {
		return nil, err
	}
	_, newID := st.ReplaceServer(old.server)
	*h = Host{
		Resource: old.Resource, Role: old.Role, Aspect: old.Aspect, ServerID: newID, StackID: old.StackID,
		Addresses: addrs, SSHAddress: sshAddr, NICAddress: nicAddr, CreatedAt: old.CreatedAt,
		SSH: h.SSH, Machine: h.Machine, Login: old.Login, Disks: map[string]*ubuntu.Disk{},
		listeners: h.listeners, server: old.server, ports: old.ports, volumes: old.volumes, vnfcID: old.vnfcID,
	}
	// ReplaceServer moved the volumes' attachments to the new server in
	// Heat (attachments and attachments_list alike).
	for _, vol := range old.volumes {
		disk := old.Disks[vol.Device]
		old.Machine.DetachDisk(vol.Device)
		if opts.NewVolumes {
			_, volumeID := st.ReplaceVolume(vol.Resource)
			disk = newVolumeDisk(vol, volumeID)
		}
		h.Machine.AttachDisk(vol.Device, disk)
		h.Disks[vol.Device] = disk
	}
	v.setDeviceIDs(st, h)
	return h, v.cloud.register(h)
}

func (v *VNF) packagesOf(h *Host) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if g, ok := v.specs[h.Aspect]; ok && h.Aspect != "" {
		return g.Packages
	}
	for _, s := range v.topo.Servers {
		if s.Name == h.server {
			return s.Packages
		}
	}
	return nil
}

func (v *VNF) group(aspect string) (*heattest.Group, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	grp, ok := v.groups[aspect]
	if !ok {
		names := make([]string, 0, len(v.groups))
		for n := range v.groups {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("sim: VNF %s has no group %q (has %s)", v.ID(), aspect, strings.Join(names, ", "))
	}
	return grp, nil
}

// Instance returns the VNF as the VNFM stores it after the last
// operation: one VnfcResourceInfo per running host (IDs stable across
// heals, computeResource.resourceId the current server), the scale level
// of each group, the OpenStack VIM connection, and the instantiate
// request's additionalParams.
func (v *VNF) Instance() *lcm.VnfInstance {
	info := &lcm.InstantiatedVnfInfo{
		FlavourID:        "simple",
		VnfState:         lcm.VnfStarted,
		AdditionalParams: v.topo.AdditionalParams,
	}
	counts := map[string]int{}
	for _, h := range v.Hosts() {
		counts[h.Aspect]++
		cps := []lcm.VnfcCpInfo{}
		for i, p := range h.ports {
			if p == "" {
				continue
			}
			cps = append(cps, lcm.VnfcCpInfo{ID: fmt.Sprintf("%s-cp%d", h.vnfcID, i), CpdID: p})
		}
		info.VnfcResourceInfo = append(info.VnfcResourceInfo, lcm.VnfcResourceInfo{
			ID:    h.vnfcID,
			VduID: h.server,
			ComputeResource: lcm.ResourceHandle{
				VimConnectionID: "openstack-vim", ResourceID: h.ServerID, VimLevelResourceType: heat.TypeServer,
			},
			VnfcCpInfo: cps,
			Metadata:   map[string]any{"creation_time": h.CreatedAt.UTC().Format(time.RFC3339)},
		})
	}
	v.mu.Lock()
	aspects := make([]string, 0, len(v.groups))
	for a := range v.groups {
		aspects = append(aspects, a)
	}
	slices.Sort(aspects)
	for _, a := range aspects {
		info.ScaleStatus = append(info.ScaleStatus, lcm.ScaleInfo{AspectID: a, ScaleLevel: lcm.Int(max(counts[a]-v.initial[a], 0))})
	}
	v.mu.Unlock()
	return &lcm.VnfInstance{
		ID:                  v.topo.InstanceID,
		VnfInstanceName:     v.stack.Name(),
		VnfdID:              "sim-vnfd",
		VnfProvider:         "mgmtkit",
		VnfProductName:      "simulated VNF",
		VnfSoftwareVersion:  "1.0",
		VnfdVersion:         "1.0",
		VimConnectionInfo:   lcm.VimConnections{v.cloud.VimConnection()},
		InstantiationState:  lcm.Instantiated,
		InstantiatedVnfInfo: info,
	}
}

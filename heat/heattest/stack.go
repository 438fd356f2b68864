package heattest

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Status values and the reasons Heat gives with them.
const (
	statusCreateComplete   = "CREATE_COMPLETE"
	statusCreateInProgress = "CREATE_IN_PROGRESS"
	statusUpdateComplete   = "UPDATE_COMPLETE"
	statusUpdateInProgress = "UPDATE_IN_PROGRESS"

	reasonStackCreated = "Stack CREATE completed successfully"
	reasonStackUpdated = "Stack UPDATE completed successfully"
	reasonStateChanged = "state changed"
)

// Template versions: Tacker's sample HOTs use 2013-05-23; Heat writes
// 2015-04-30 into the templates it generates for group nested stacks.
const (
	templateVersion      = "2013-05-23"
	groupTemplateVersion = "2015-04-30"
)

// Stack is a Heat stack: a top-level stack from Server.CreateStack, the
// nested stack of an AutoScalingGroup, or a group member's stack.
type Stack struct {
	srv              *Server
	id, name         string
	status, reason   string
	created, updated time.Time // updated is zero until the first update
	params           map[string]string
	paramTypes       map[string]string
	resources        []*Resource
	byName           map[string]*Resource
	parent           *Resource // the resource this stack is nested in; nil at top level
	group            *Group    // set on a group's nested stack
	version          string
	deleted          bool
}

// CreateStack creates an empty top-level stack in CREATE_COMPLETE. It
// panics if a stack with that name exists: Heat names are unique per
// project.
func (s *Server) CreateStack(name string) *Stack {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.newStackLocked(name, nil)
	s.topStacks = append(s.topStacks, st)
	return st
}

// Stack returns the live stack with that id, top-level or nested, or nil.
func (s *Server) Stack(id string) *Stack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stacks[id]
}

// StackByName returns the live stack with that name, top-level or nested,
// or nil.
func (s *Server) StackByName(name string) *Stack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stackNames[name]
}

// DeleteStack deletes the top-level stack with that id and every stack
// nested in it, as Heat's stack delete does (a VNFM's terminate): it is
// gone from finds, gets and lists, and [Stack.Deleted] reports it. It
// reports whether there was such a top-level stack.
func (s *Server) DeleteStack(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stacks[id]
	if st == nil || st.parent != nil {
		return false
	}
	s.deleteStackLocked(st)
	return true
}

// newStackLocked creates a stack in CREATE_COMPLETE, nested in parent when
// parent is not nil.
func (s *Server) newStackLocked(name string, parent *Resource) *Stack {
	if name == "" {
		panic("heattest: empty stack name")
	}
	if _, dup := s.stackNames[name]; dup {
		panic(fmt.Sprintf("heattest: stack %q already exists", name))
	}
	st := &Stack{
		srv:        s,
		id:         s.uuidLocked(),
		name:       name,
		status:     statusCreateComplete,
		reason:     reasonStackCreated,
		created:    s.tickLocked(),
		params:     map[string]string{},
		paramTypes: map[string]string{},
		byName:     map[string]*Resource{},
		parent:     parent,
		version:    templateVersion,
	}
	s.stacks[st.id] = st
	s.stackNames[name] = st
	return st
}

// deleteStackLocked forgets st and every stack nested in it.
func (s *Server) deleteStackLocked(st *Stack) {
	for _, r := range st.resources {
		if r.nested != nil {
			s.deleteStackLocked(r.nested)
		}
	}
	st.deleted = true
	delete(s.stacks, st.id)
	delete(s.stackNames, st.name)
	s.topStacks = slices.DeleteFunc(s.topStacks, func(x *Stack) bool { return x == st })
}

// ID returns the stack's UUID.
func (st *Stack) ID() string { return st.id }

// Name returns the stack's name. Nested stacks are named as Heat names
// them: "<parent stack>-<resource>-<short id>".
func (st *Stack) Name() string { return st.name }

// Status returns the stack's status, e.g. "CREATE_COMPLETE".
func (st *Stack) Status() string {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	return st.status
}

// StatusReason returns the reason that goes with Status.
func (st *Stack) StatusReason() string {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	return st.reason
}

// CreationTime returns when the stack was created (logical clock).
func (st *Stack) CreationTime() time.Time { return st.created }

// UpdatedTime returns when the stack was last updated, zero if never.
func (st *Stack) UpdatedTime() time.Time {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	return st.updated
}

// Parent returns the resource this stack is nested in (an AutoScalingGroup
// or a group member), nil for a top-level stack.
func (st *Stack) Parent() *Resource { return st.parent }

// Deleted reports whether the stack is gone (its group member was scaled
// in, or its owning resource removed).
func (st *Stack) Deleted() bool {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	return st.deleted
}

// SetStatus sets the stack's status and reason, e.g. "UPDATE_IN_PROGRESS",
// "". Timestamps do not change.
func (st *Stack) SetStatus(status, reason string) {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	st.status, st.reason = status, reason
}

// SetParameter sets a stack parameter. Heat reports parameters as strings;
// the template declares it with type string unless the builder declared it
// (a group's MinSizeParam is a number).
func (st *Stack) SetParameter(name, value string) {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	st.params[name] = value
	if _, ok := st.paramTypes[name]; !ok {
		st.paramTypes[name] = "string"
	}
}

// Parameters returns a copy of the parameters set on the stack, without
// Heat's pseudo parameters (OS::stack_id, ...) that the API adds.
func (st *Stack) Parameters() map[string]string {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	return maps.Clone(st.params)
}

// Resource returns the stack's resource with that name, or nil.
func (st *Stack) Resource(name string) *Resource {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	return st.byName[name]
}

// Resources returns the stack's resources in creation order.
func (st *Stack) Resources() []*Resource {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	return slices.Clone(st.resources)
}

// Group returns the AutoScalingGroup resource of this stack with that name,
// or nil.
func (st *Stack) Group(name string) *Group {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	if r := st.byName[name]; r != nil {
		return r.group
	}
	return nil
}

// RemoveResource deletes the named resource, and the stacks nested in it
// (a group's members, a member's stack). Removing a group member this way
// shrinks the group without checking its minimum. It is a no-op when the
// resource does not exist. Resources that referred to it stay, as dangling
// references: a floating IP loses its port, a volume its attachment.
func (st *Stack) RemoveResource(name string) {
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := st.byName[name]; r != nil {
		s.removeResourceLocked(r)
	}
}

func (s *Server) removeResourceLocked(r *Resource) {
	st := r.stack
	st.resources = slices.DeleteFunc(st.resources, func(x *Resource) bool { return x == r })
	delete(st.byName, r.name)
	r.removed = true
	if r.nested != nil {
		s.deleteStackLocked(r.nested)
	}
	if st.group != nil && r.member != nil {
		st.group.members = slices.DeleteFunc(st.group.members, func(m *Member) bool { return m == r.member })
	}
}

// newResourceLocked adds a resource in CREATE_COMPLETE to st. It panics if
// the name is taken or has a "/", which Heat refuses in resource names
// (heat/engine/resource.py, Resource.__init__ → _validate_name).
func (st *Stack) newResourceLocked(name, typ string, k kind) *Resource {
	if name == "" {
		panic("heattest: empty resource name")
	}
	if strings.Contains(name, "/") {
		panic(fmt.Sprintf("heattest: resource name %q contains \"/\"", name))
	}
	if _, dup := st.byName[name]; dup {
		panic(fmt.Sprintf("heattest: resource %q already exists in stack %s", name, st.name))
	}
	r := &Resource{
		srv:     st.srv,
		stack:   st,
		name:    name,
		typ:     typ,
		kind:    k,
		status:  statusCreateComplete,
		reason:  reasonStateChanged,
		created: st.srv.tickLocked(),
		attrs:   map[string]any{},
		props:   map[string]any{},
	}
	st.resources = append(st.resources, r)
	st.byName[name] = r
	return r
}

// mustLocked returns the resource of kind k named name in st; anything else
// is a programming error in the test.
func (st *Stack) mustLocked(name string, k kind, what string) *Resource {
	r := st.byName[name]
	if r == nil || r.kind != k {
		panic(fmt.Sprintf("heattest: stack %s has no %s named %q", st.name, what, name))
	}
	return r
}

// markUpdatedLocked records a completed update at t on st and on every
// resource and stack above it, as a nested update propagates in Heat.
func (s *Server) markUpdatedLocked(st *Stack, t time.Time) {
	for st != nil {
		st.status, st.reason, st.updated = statusUpdateComplete, reasonStackUpdated, t
		p := st.parent
		if p == nil {
			return
		}
		p.status, p.reason, p.updated = statusUpdateComplete, reasonStateChanged, t
		st = p.stack
	}
}

// AddPort adds an OS::Neutron::Port with these fixed IPs. The port's
// network is the one already holding the first IP's subnet (/24 or /64),
// else a new one named "net0", "net1", ... See AddPortOnNetwork.
func (st *Stack) AddPort(name string, fixedIPs ...string) *Resource {
	return st.AddPortOnNetwork(name, "", fixedIPs...)
}

// AddPortOnNetwork adds an OS::Neutron::Port on the named network (created
// on first use; "" chooses as AddPort does) with these fixed IPs. Its
// attributes are Neutron's port: fixed_ips [{"ip_address", "subnet_id"}],
// id, mac_address, name, network_id, allowed_address_pairs [], device_id
// and device_owner (the server using it), status, ...
func (st *Stack) AddPortOnNetwork(name, networkName string, fixedIPs ...string) *Resource {
	ips := parseIPs(fixedIPs)
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	r := st.newResourceLocked(name, "OS::Neutron::Port", kindPort)
	if networkName == "" {
		r.network = s.networkForLocked(ips)
	} else {
		r.network = s.networkNamedLocked(networkName)
	}
	s.ensureSubnetsLocked(r.network, ips)
	r.fixedIPs = ips
	r.physicalID = s.uuidLocked()
	r.mac = s.macLocked()
	r.physName = s.physicalNameLocked(st.name, name)
	return r
}

// AddFloatingIP adds an OS::Neutron::FloatingIP with that address, bound to
// the port resource named port in the same stack (which must exist). Its
// attributes are Neutron's floating IP: floating_ip_address,
// fixed_ip_address (the port's first fixed IP), port_id (the port's
// physical id), floating_network_id, router_id, status, ...
func (st *Stack) AddFloatingIP(name, address, port string) *Resource {
	addr := parseIPs([]string{address})[0]
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	st.mustLocked(port, kindPort, "port")
	r := st.newResourceLocked(name, "OS::Neutron::FloatingIP", kindFloatingIP)
	s.ensureSubnetsLocked(s.publicNet, []netip.Addr{addr})
	r.fipAddress = addr
	r.fipPort = port
	r.physicalID = s.uuidLocked()
	return r
}

// AddServer adds an OS::Nova::Server using the named port resources of the
// same stack (which must exist), in order. Its physical id is a fresh
// UUID, its host "compute-N" with N counting servers placed on this cloud.
// Its attributes are Nova's server plus Heat's extras: name, status,
// addresses, networks (network name and id -> IPs, floating ones included),
// OS-EXT-SRV-ATTR:host, server_groups [], os-extended-volumes:volumes_attached.
func (st *Stack) AddServer(name string, ports ...string) *Resource {
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ports {
		st.mustLocked(p, kindPort, "port")
	}
	r := st.newResourceLocked(name, "OS::Nova::Server", kindServer)
	r.ports = slices.Clone(ports)
	r.physicalID = s.uuidLocked()
	r.physName = s.physicalNameLocked(st.name, name)
	s.placeLocked(r)
	return r
}

// placeLocked puts a (new or rebuilt) server on the next compute host.
func (s *Server) placeLocked(r *Resource) {
	s.hosts++
	r.host = fmt.Sprintf("compute-%d", s.hosts)
	r.instance = s.hosts
}

// AddVolume adds an OS::Cinder::Volume of sizeGB attached to the server
// resource named server in the same stack (which must exist) at device,
// e.g. "/dev/vdb". The template attaches it through the server's
// block_device_mapping_v2 (device_name "vdb"), as the PV spec's HOT does.
// Its attributes are Cinder's volume: size, status "in-use", attachments
// and attachments_list (both lists of {server_id, attachment_id, device,
// volume_id, id, attached_at, host_name}), ...
func (st *Stack) AddVolume(name, server, device string, sizeGB int) *Resource {
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	st.mustLocked(server, kindServer, "server")
	r := st.newResourceLocked(name, "OS::Cinder::Volume", kindVolume)
	r.size = sizeGB
	r.volServer = server
	r.device = device
	r.physicalID = s.uuidLocked()
	r.physName = s.physicalNameLocked(st.name, name)
	r.attachmentID = s.uuidLocked()
	r.attachedAt = r.created
	return r
}

// ReplaceVolume replaces the named volume as a stack update that
// re-creates it does: a new Cinder volume (new physical id, the same
// size), attached to the same server and device with a new attachment,
// recorded as a new resource (CREATE_COMPLETE, created Now). The stack
// and every resource and stack above it become UPDATE_COMPLETE, updated
// Now. It returns the old and new volume IDs and panics if there is no
// such volume.
func (st *Stack) ReplaceVolume(name string) (oldID, newID string) {
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	r := st.mustLocked(name, kindVolume, "volume")
	t := s.tickLocked()
	oldID = r.physicalID
	r.physicalID = s.uuidLocked()
	r.attachmentID, r.attachedAt = s.uuidLocked(), t
	r.status, r.reason, r.created, r.updated = statusCreateComplete, reasonStateChanged, t, time.Time{}
	s.markUpdatedLocked(st, t)
	return oldID, r.physicalID
}

// AddScalingPolicy adds an OS::Heat::ScalingPolicy of the group resource
// named group in the same stack (which must exist): change_in_capacity by
// adjustment.
func (st *Stack) AddScalingPolicy(name, group string, adjustment int) *Resource {
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	st.mustLocked(group, kindGroup, "AutoScalingGroup")
	r := st.newResourceLocked(name, "OS::Heat::ScalingPolicy", kindPolicy)
	r.policyGroup = group
	r.adjustment = adjustment
	r.physicalID = s.hexLocked(16)
	return r
}

// AddResource adds a resource of any other type (e.g. "OS::Nova::ServerGroup")
// with a fresh UUID physical id and exactly these attributes (copied).
func (st *Stack) AddResource(name, typ string, attrs map[string]any) *Resource {
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	r := st.newResourceLocked(name, typ, kindGeneric)
	r.physicalID = s.uuidLocked()
	for k, v := range attrs {
		r.attrs[k] = deepCopy(v)
	}
	return r
}

// ReplaceServer heals the named server as a Heat stack update that
// replaces it does: the resource gets a new physical id (a new Nova
// server, on a new host), and since Heat records a replacement as a new
// resource it is CREATE_COMPLETE with creation and updated time Now. Its
// volumes are attached to the new server (new attachment ids). The stack
// and every resource and stack above it become UPDATE_COMPLETE, updated
// Now. It panics if there is no such server.
func (st *Stack) ReplaceServer(name string) (oldID, newID string) {
	s := st.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	r := st.mustLocked(name, kindServer, "server")
	t := s.tickLocked()
	oldID = r.physicalID
	r.physicalID = s.uuidLocked()
	s.placeLocked(r)
	r.status, r.reason, r.created, r.updated = statusCreateComplete, reasonStateChanged, t, time.Time{}
	for _, v := range st.resources {
		if v.kind == kindVolume && v.volServer == name {
			v.attachmentID, v.attachedAt = s.uuidLocked(), t
		}
	}
	s.markUpdatedLocked(st, t)
	return oldID, r.physicalID
}

package heattest

import (
	"fmt"
	"net/netip"
	"time"
)

// kind is what the builder knows about a resource beyond its type string.
type kind int

const (
	kindGeneric kind = iota
	kindPort
	kindFloatingIP
	kindServer
	kindVolume
	kindGroup
	kindMember
	kindPolicy
)

// Resource is a resource of a Stack. Its attributes are computed from the
// builder's state each time they are served (a floating IP follows its
// port's fixed IP, a port knows the server using it), then overlaid with
// the values given to SetAttribute.
type Resource struct {
	srv              *Server
	stack            *Stack
	name, typ        string
	kind             kind
	physicalID       string
	status, reason   string
	created, updated time.Time      // updated zero: never updated
	attrs            map[string]any // SetAttribute overrides; all attributes of a generic resource
	props            map[string]any // SetProperty overrides of template properties
	removed          bool

	nested *Stack  // group or member resource
	group  *Group  // AutoScalingGroup resource
	member *Member // group member resource

	physName string // Heat's generated name of the Neutron/Nova/Cinder object

	// port
	network  *network
	fixedIPs []netip.Addr
	mac      string

	// floating IP
	fipAddress netip.Addr
	fipPort    string

	// server
	ports    []string
	host     string
	instance int

	// volume
	size         int
	volServer    string
	device       string
	attachmentID string
	attachedAt   time.Time

	// scaling policy
	policyGroup string
	adjustment  int
}

// Name returns the resource name (logical_resource_id).
func (r *Resource) Name() string { return r.name }

// Type returns the resource type, e.g. "OS::Neutron::Port".
func (r *Resource) Type() string { return r.typ }

// Stack returns the stack the resource belongs to.
func (r *Resource) Stack() *Stack { return r.stack }

// PhysicalID returns the physical resource id: the UUID of the Neutron,
// Nova or Cinder object, or the id of the nested stack of a group or a
// group member.
func (r *Resource) PhysicalID() string {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	return r.physicalID
}

// NestedStack returns the stack nested in a group or group member
// resource, nil for other resources.
func (r *Resource) NestedStack() *Stack { return r.nested }

// Status returns the resource status, e.g. "CREATE_COMPLETE".
func (r *Resource) Status() string {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	return r.status
}

// StatusReason returns the reason that goes with Status.
func (r *Resource) StatusReason() string {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	return r.reason
}

// CreationTime returns the resource's creation_time.
func (r *Resource) CreationTime() time.Time {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	return r.created
}

// UpdatedTime returns the resource's updated_time as Heat serves it: the
// last update, or the creation time if it was never updated.
func (r *Resource) UpdatedTime() time.Time {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	return r.updatedOrCreated()
}

func (r *Resource) updatedOrCreated() time.Time {
	if r.updated.IsZero() {
		return r.created
	}
	return r.updated
}

// SetStatus sets the resource status and reason, e.g. "CHECK_FAILED",
// "Server is down". Timestamps do not change.
func (r *Resource) SetStatus(status, reason string) {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	r.status, r.reason = status, reason
}

// SetAttribute sets one attribute (a copy of value), overriding the value
// the builder computes for that key; a nil value serves JSON null.
func (r *Resource) SetAttribute(key string, value any) {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	r.attrs[key] = deepCopy(value)
}

// SetProperty sets one property of the resource in the stack's template,
// overriding the value the builder writes for that key.
func (r *Resource) SetProperty(key string, value any) {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	r.props[key] = deepCopy(value)
}

// Attributes returns a copy of the attributes as resource show serves them.
func (r *Resource) Attributes() map[string]any {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	return r.attributesLocked()
}

// FixedIPs returns a port's fixed IPs, nil for other resources.
func (r *Resource) FixedIPs() []string {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	var out []string
	for _, a := range r.fixedIPs {
		out = append(out, a.String())
	}
	return out
}

// SetFixedIPs changes a port's fixed IPs in place (a heal that moves a
// node to a new address). Floating IPs bound to the port follow, and the
// server's addresses too. The port becomes UPDATE_COMPLETE, updated Now,
// and so do the stacks and resources above it. It panics on a resource
// that is not a port.
func (r *Resource) SetFixedIPs(ips ...string) {
	addrs := parseIPs(ips)
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.kind != kindPort {
		panic(fmt.Sprintf("heattest: SetFixedIPs on %s, a %s, not a port", r.name, r.typ))
	}
	s.ensureSubnetsLocked(r.network, addrs)
	r.fixedIPs = addrs
	t := s.tickLocked()
	r.status, r.reason, r.updated = statusUpdateComplete, reasonStateChanged, t
	if !r.removed {
		s.markUpdatedLocked(r.stack, t)
	}
}

// deepCopy copies the JSON-like containers in v (maps and slices of any,
// strings and maps) so that callers and server never share them.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = deepCopy(e)
		}
		return s
	case []map[string]any:
		s := make([]map[string]any, len(v))
		for i, e := range v {
			s[i] = deepCopy(e).(map[string]any)
		}
		return s
	case []string:
		return append([]string(nil), v...)
	case map[string]string:
		m := make(map[string]string, len(v))
		for k, e := range v {
			m[k] = e
		}
		return m
	case map[string][]string:
		m := make(map[string][]string, len(v))
		for k, e := range v {
			m[k] = append([]string(nil), e...)
		}
		return m
	}
	return v
}

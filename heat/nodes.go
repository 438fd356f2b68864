package heat

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"golang.org/x/sync/errgroup"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// Heat resource types the resolution reads.
const (
	TypeAutoScalingGroup = "OS::Heat::AutoScalingGroup"
	TypeScalingPolicy    = "OS::Heat::ScalingPolicy"
	TypeServer           = "OS::Nova::Server"
	TypePort             = "OS::Neutron::Port"
	TypeFloatingIP       = "OS::Neutron::FloatingIP"
	TypeVolume           = "OS::Cinder::Volume"
)

// Group says where one kind of node lives in a VNF's stacks: one row of
// the additionalParams tables (master_node, worker_node, storage_server,
// external_lb_param).
type Group struct {
	// Role is given to every node of the group.
	Role lcm.Role
	// AspectID is aspect_id: the name of the OS::Heat::AutoScalingGroup in
	// the top-level stack whose members are the nodes. Empty: one node,
	// whose resources are in the top-level stack.
	AspectID string
	// SSHCP is ssh_cp_name: the OS::Neutron::Port, or the
	// OS::Neutron::FloatingIP, the management driver connects to.
	SSHCP string
	// NICCP is nic_cp_name: the port on the cluster network. Empty means
	// SSHCP (the port a floating IP is bound to, when SSHCP is one).
	NICCP string
}

func (g Group) String() string {
	if g.AspectID == "" {
		return fmt.Sprintf("%s (ssh_cp_name %s in the top-level stack)", g.Role, g.SSHCP)
	}
	return fmt.Sprintf("%s (aspect_id %s, ssh_cp_name %s)", g.Role, g.AspectID, g.SSHCP)
}

// Nodes resolves the nodes of each group in the VNF whose top-level stack
// is stack (a name or an ID), in [lcm.CompareNodes] order. A stack or
// resource name that Heat cannot have is an [ErrInvalidName] error before
// any request is sent.
func (c *Client) Nodes(ctx context.Context, stack string, groups ...Group) ([]lcm.Node, error) {
	ps := []param{stackParam(stack)}
	for _, g := range groups {
		ps = append(ps, groupParams(g)...)
	}
	if err := checkParams(ps...); err != nil {
		return nil, err
	}
	top, _, err := c.findStack(ctx, stack)
	if err != nil {
		return nil, err
	}
	var all []lcm.Node
	for _, g := range groups {
		nodes, err := c.groupNodes(ctx, top, g)
		if err != nil {
			return nil, err
		}
		all = append(all, nodes...)
	}
	slices.SortFunc(all, lcm.CompareNodes)
	return all, nil
}

// member is one node's place in Heat: the stack holding its resources and
// the resource that names it.
type member struct {
	resource  string // member resource name in the group, or "" in the top stack
	stack     stackRef
	createdAt time.Time
}

// groupNodes resolves one group.
func (c *Client) groupNodes(ctx context.Context, top stackRef, g Group) ([]lcm.Node, error) {
	if g.AspectID == "" {
		n, err := c.node(ctx, g, member{stack: top})
		if err != nil {
			return nil, err
		}
		return []lcm.Node{n}, nil
	}
	members, err := c.members(ctx, top, g.AspectID)
	if err != nil {
		return nil, err
	}
	return c.resolveMembers(ctx, g, members)
}

// resolveMembers resolves members concurrently, keeping their order.
func (c *Client) resolveMembers(ctx context.Context, g Group, members []member) ([]lcm.Node, error) {
	nodes := make([]lcm.Node, len(members))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(c.concurrency)
	for i, m := range members {
		eg.Go(func() error {
			n, err := c.node(ctx, g, m)
			nodes[i] = n
			return err
		})
	}
	return nodes, eg.Wait()
}

// members lists the members of the AutoScalingGroup named aspect in the
// top-level stack, oldest first by (creation_time, resource_name), as
// Tacker sorts them. Every member must be complete.
func (c *Client) members(ctx context.Context, top stackRef, aspect string) ([]member, error) {
	grp, err := c.resource(ctx, top, aspect)
	if err != nil {
		return nil, err
	}
	if grp.Type != TypeAutoScalingGroup {
		return nil, &Error{Stack: top.String(), Resource: aspect, Err: ErrWrongType,
			what: fmt.Sprintf("aspect_id names a %s, want an %s", grp.Type, TypeAutoScalingGroup)}
	}
	nested, err := c.nestedStack(ctx, top, *grp)
	if err != nil {
		return nil, err
	}
	rs, err := c.resources(ctx, nested)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rs, func(a, b stackresources.Resource) int {
		return cmp.Or(a.CreationTime.Compare(b.CreationTime), cmp.Compare(a.Name, b.Name))
	})
	members := make([]member, 0, len(rs))
	for _, r := range rs {
		where := fmt.Sprintf("%s → group %s → %s", top, aspect, nested)
		if !complete(r.Status) {
			return nil, &Error{Stack: where, Resource: r.Name, Status: r.Status, Err: ErrNotComplete,
				what: "member is " + r.Status + reasonSuffix(r.StatusReason)}
		}
		ms, err := c.nestedStack(ctx, nested, r)
		if err != nil {
			return nil, err
		}
		ms.label = fmt.Sprintf("%s → %s member %s (stack %s)", top.Name, aspect, r.Name, ms.ID)
		members = append(members, member{resource: r.Name, stack: ms, createdAt: r.CreationTime})
	}
	return members, nil
}

// node resolves the node whose resources are in m.stack.
func (c *Client) node(ctx context.Context, g Group, m member) (lcm.Node, error) {
	n := lcm.Node{Role: g.Role, Aspect: g.AspectID, StackID: m.stack.ID, CreatedAt: m.createdAt, Resource: m.resource}
	ssh, err := c.resource(ctx, m.stack, g.SSHCP)
	if err != nil {
		return n, err
	}
	var nicPort *stackresources.Resource
	switch ssh.Type {
	case TypeFloatingIP:
		if n.SSHAddress, err = stringAttr(m.stack, ssh, "floating_ip_address"); err != nil {
			return n, err
		}
	case TypePort:
		if n.SSHAddress, err = firstFixedIP(m.stack, ssh); err != nil {
			return n, err
		}
		nicPort = ssh
	default:
		return n, &Error{Stack: m.stack.String(), Resource: g.SSHCP, Err: ErrWrongType,
			what: fmt.Sprintf("ssh_cp_name names a %s, want an %s or an %s", ssh.Type, TypePort, TypeFloatingIP)}
	}
	if g.NICCP != "" && g.NICCP != g.SSHCP {
		if nicPort, err = c.resource(ctx, m.stack, g.NICCP); err != nil {
			return n, err
		}
		if nicPort.Type != TypePort {
			return n, &Error{Stack: m.stack.String(), Resource: g.NICCP, Err: ErrWrongType,
				what: fmt.Sprintf("nic_cp_name names a %s, want an %s", nicPort.Type, TypePort)}
		}
	}
	if nicPort != nil {
		if n.NICAddress, err = firstFixedIP(m.stack, nicPort); err != nil {
			return n, err
		}
	} else if n.NICAddress, err = stringAttr(m.stack, ssh, "fixed_ip_address"); err != nil {
		return n, err // a floating IP and no nic_cp_name: the address it maps to
	}
	if m.resource != "" && nicPort != nil {
		// A member: the port says which server it is attached to, and the
		// member resource's name and status have been read already.
		if id, _ := nicPort.Attributes["device_id"].(string); id != "" {
			n.ServerID = id
			return n, nil
		}
	}
	server, err := c.server(ctx, m.stack, nicPort)
	if err != nil {
		return n, err
	}
	n.ServerID = server.PhysicalID
	if n.Resource == "" { // a node in the top-level stack is named by its server
		n.Resource, n.CreatedAt = server.Name, server.CreationTime
	}
	return n, nil
}

// server finds the OS::Nova::Server of a node in st: the one the NIC port
// is attached to (its device_id) or, when the port does not say, the only
// server in the stack, which is how a group member is built.
func (c *Client) server(ctx context.Context, st stackRef, port *stackresources.Resource) (stackresources.Resource, error) {
	rs, err := c.resources(ctx, st)
	if err != nil {
		return stackresources.Resource{}, err
	}
	var deviceID string
	if port != nil {
		deviceID, _ = port.Attributes["device_id"].(string)
	}
	var servers []stackresources.Resource
	for _, r := range rs {
		if r.Type != TypeServer {
			continue
		}
		if deviceID != "" && r.PhysicalID == deviceID {
			servers = []stackresources.Resource{r}
			break
		}
		servers = append(servers, r)
	}
	switch {
	case len(servers) == 1 && (deviceID == "" || servers[0].PhysicalID == deviceID):
		if !complete(servers[0].Status) {
			return servers[0], &Error{Stack: st.String(), Resource: servers[0].Name, Status: servers[0].Status, Err: ErrNotComplete,
				what: "server is " + servers[0].Status + reasonSuffix(servers[0].StatusReason)}
		}
		return servers[0], nil
	case deviceID != "":
		return stackresources.Resource{}, &Error{Stack: st.String(), Resource: port.Name, Attribute: "device_id", Err: ErrNotFound,
			what: fmt.Sprintf("the port is attached to server %s, which is not an %s of this stack", deviceID, TypeServer)}
	case len(servers) == 0:
		return stackresources.Resource{}, &Error{Stack: st.String(), Err: ErrNotFound, what: "no " + TypeServer + " in the stack"}
	default:
		return stackresources.Resource{}, &Error{Stack: st.String(), Err: ErrNotFound,
			what: fmt.Sprintf("%d servers in the stack and the port does not say (device_id) which one it is attached to", len(servers))}
	}
}

// ClusterAddress is where a Kubernetes cluster's API answers.
type ClusterAddress struct {
	// IP is the first fixed IP of cluster_cp_name: the VIP of an HA
	// cluster, or the single master's address.
	IP string
	// FloatingIP is the address of cluster_fip_name, empty when not given;
	// the VNFM reaches the API there when set.
	FloatingIP string
}

// ClusterAddress resolves cluster_cp_name and cluster_fip_name as Tacker
// does: cluster_cp_name in the top-level stack when the masters are not in
// a group or there is more than one (the VIP port the masters' ports carry
// in allowed_address_pairs), inside the member stack when a group has a
// single master; cluster_fip_name, when not empty, in the top-level stack.
func (c *Client) ClusterAddress(ctx context.Context, stack string, masters Group, clusterCP, clusterFIP string) (ClusterAddress, error) {
	var out ClusterAddress
	err := checkParams(stackParam(stack),
		param{field: "aspect_id", name: masters.AspectID, role: masters.Role, optional: true},
		param{field: "cluster_cp_name", name: clusterCP},
		param{field: "cluster_fip_name", name: clusterFIP, optional: true})
	if err != nil {
		return out, err
	}
	top, _, err := c.findStack(ctx, stack)
	if err != nil {
		return out, err
	}
	where := top
	if masters.AspectID != "" {
		members, err := c.members(ctx, top, masters.AspectID)
		if err != nil {
			return out, err
		}
		if len(members) == 1 {
			where = members[0].stack
		}
	}
	if out.IP, err = c.cpAddress(ctx, where, clusterCP, false); err != nil {
		return out, err
	}
	if clusterFIP != "" {
		if out.FloatingIP, err = c.cpAddress(ctx, top, clusterFIP, true); err != nil {
			return out, err
		}
	}
	return out, nil
}

// CPAddress returns the address of a connection point in the top-level
// stack: the first fixed IP of a port (as nfs_server_cp is read), or the
// address of a floating IP.
func (c *Client) CPAddress(ctx context.Context, stack, cp string) (string, error) {
	if err := checkParams(stackParam(stack), param{field: "cp", name: cp}); err != nil {
		return "", err
	}
	top, _, err := c.findStack(ctx, stack)
	if err != nil {
		return "", err
	}
	return c.cpAddress(ctx, top, cp, true)
}

func (c *Client) cpAddress(ctx context.Context, st stackRef, cp string, floatingOK bool) (string, error) {
	r, err := c.resource(ctx, st, cp)
	if err != nil {
		return "", err
	}
	switch {
	case r.Type == TypePort:
		return firstFixedIP(st, r)
	case r.Type == TypeFloatingIP && floatingOK:
		return stringAttr(st, r, "floating_ip_address")
	}
	return "", &Error{Stack: st.String(), Resource: cp, Err: ErrWrongType, what: fmt.Sprintf("names a %s, want an %s", r.Type, TypePort)}
}

// Volume is a Cinder volume of the VNF and where it is attached.
type Volume struct {
	// Resource is the volume's resource name (volume_resource_id).
	Resource string
	// ID is the Cinder volume ID.
	ID string
	// Device is the device the volume appears as on its server, e.g.
	// /dev/vdb.
	Device string
	// ServerID is the Nova server the volume is attached to.
	ServerID string
}

// Volume resolves a Cinder volume resource of the top-level stack
// (volume_resource_id) to its ID and first attachment.
func (c *Client) Volume(ctx context.Context, stack, resource string) (Volume, error) {
	if err := checkParams(stackParam(stack), param{field: "volume_resource_id", name: resource}); err != nil {
		return Volume{}, err
	}
	top, _, err := c.findStack(ctx, stack)
	if err != nil {
		return Volume{}, err
	}
	r, err := c.resource(ctx, top, resource)
	if err != nil {
		return Volume{}, err
	}
	if r.Type != TypeVolume {
		return Volume{}, &Error{Stack: top.String(), Resource: resource, Err: ErrWrongType, what: fmt.Sprintf("names a %s, want an %s", r.Type, TypeVolume)}
	}
	v := Volume{Resource: resource, ID: r.PhysicalID}
	atts, err := attachments(r)
	if err != nil {
		return v, &Error{Stack: top.String(), Resource: resource, Attribute: "attachments_list", Err: err}
	}
	if len(atts) == 0 {
		return v, &Error{Stack: top.String(), Resource: resource, Attribute: "attachments_list", Err: ErrNotFound, what: "the volume is not attached"}
	}
	v.Device, v.ServerID = atts[0].Device, atts[0].ServerID
	if v.Device == "" {
		return v, &Error{Stack: top.String(), Resource: resource, Attribute: "attachments_list[0].device", Err: ErrNotFound, what: "missing"}
	}
	return v, nil
}

type attachment struct {
	Device   string `json:"device"`
	ServerID string `json:"server_id"`
}

// attachments reads attachments_list, or the older attachments attribute
// (a list, or a JSON string of one).
func attachments(r *stackresources.Resource) ([]attachment, error) {
	raw, ok := r.Attributes["attachments_list"]
	if !ok || raw == nil {
		raw = r.Attributes["attachments"]
	}
	if s, ok := raw.(string); ok {
		var atts []attachment
		if err := json.Unmarshal([]byte(s), &atts); err != nil {
			return nil, fmt.Errorf("not a JSON list: %w", err)
		}
		return atts, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var atts []attachment
	if err := json.Unmarshal(b, &atts); err != nil {
		return nil, fmt.Errorf("not a list of attachments: %w", err)
	}
	return atts, nil
}

// firstFixedIP returns fixed_ips[0].ip_address of a port.
func firstFixedIP(st stackRef, port *stackresources.Resource) (string, error) {
	ips, _ := port.Attributes["fixed_ips"].([]any)
	if len(ips) == 0 {
		return "", &Error{Stack: st.String(), Resource: port.Name, Attribute: "fixed_ips", Err: ErrNotFound, what: "missing or empty"}
	}
	first, _ := ips[0].(map[string]any)
	ip, _ := first["ip_address"].(string)
	if ip == "" {
		return "", &Error{Stack: st.String(), Resource: port.Name, Attribute: "fixed_ips[0].ip_address", Err: ErrNotFound, what: "missing"}
	}
	return ip, nil
}

// stringAttr returns a string attribute that must be set.
func stringAttr(st stackRef, r *stackresources.Resource, name string) (string, error) {
	v, _ := r.Attributes[name].(string)
	if v == "" {
		return "", &Error{Stack: st.String(), Resource: r.Name, Attribute: name, Err: ErrNotFound, what: "missing"}
	}
	return v, nil
}

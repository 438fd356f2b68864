package heattest

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Heat's resource show returns, for a resource backed by an OpenStack
// object, the object as its service's show API returns it (Heat's "show"
// attribute), not the attributes a template's get_attr sees. The shapes
// below follow that: a port is Neutron's port body, a volume Cinder's
// volume body (so "attachments" is a list there, not the JSON string that
// get_attr: [vol, attachments] yields), a server Nova's server body plus
// the attributes Heat adds.

// neutronTime and cinderTime format timestamps as those services do.
func neutronTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }
func cinderTime(t time.Time) string  { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// attributesLocked computes the resource's attributes and overlays the
// SetAttribute values. The result shares nothing with the server.
func (r *Resource) attributesLocked() map[string]any {
	var a map[string]any
	switch r.kind {
	case kindPort:
		a = r.portAttrsLocked()
	case kindFloatingIP:
		a = r.floatingIPAttrsLocked()
	case kindServer:
		a = r.serverAttrsLocked()
	case kindVolume:
		a = r.volumeAttrsLocked()
	case kindGroup:
		a = r.groupAttrsLocked()
	case kindMember:
		a = map[string]any{"OS::stack_id": r.physicalID}
	case kindPolicy:
		a = r.policyAttrsLocked()
	default:
		a = map[string]any{}
	}
	for k, v := range r.attrs {
		a[k] = deepCopy(v)
	}
	return a
}

// sibling returns the live resource of kind k named name in r's stack.
func (r *Resource) sibling(name string, k kind) *Resource {
	if x := r.stack.byName[name]; x != nil && x.kind == k {
		return x
	}
	return nil
}

// serverOfPortLocked returns the server of the port's stack using it.
func (r *Resource) serverOfPortLocked() *Resource {
	for _, x := range r.stack.resources {
		if x.kind == kindServer && slices.Contains(x.ports, r.name) {
			return x
		}
	}
	return nil
}

func (r *Resource) portAttrsLocked() map[string]any {
	s := r.srv
	fixed := make([]any, 0, len(r.fixedIPs))
	for _, ip := range r.fixedIPs {
		fixed = append(fixed, map[string]any{"ip_address": ip.String(), "subnet_id": subnetID(r.network, ip)})
	}
	deviceID, owner, status := "", "", "DOWN"
	if srv := r.serverOfPortLocked(); srv != nil {
		deviceID, owner, status = srv.physicalID, "compute:nova", "ACTIVE"
	}
	return map[string]any{
		"admin_state_up":        true,
		"allowed_address_pairs": []any{},
		"binding:vnic_type":     "normal",
		"created_at":            neutronTime(r.created),
		"description":           "",
		"device_id":             deviceID,
		"device_owner":          owner,
		"extra_dhcp_opts":       []any{},
		"fixed_ips":             fixed,
		"id":                    r.physicalID,
		"mac_address":           r.mac,
		"name":                  r.physName,
		"network_id":            r.network.id,
		"port_security_enabled": true,
		"project_id":            s.projectID,
		"security_groups":       []any{s.securityID},
		"status":                status,
		"tags":                  []any{},
		"tenant_id":             s.projectID,
		"updated_at":            neutronTime(r.updatedOrCreated()),
	}
}

func (r *Resource) floatingIPAttrsLocked() map[string]any {
	s := r.srv
	var fixed, portID, router any
	status := "DOWN"
	if p := r.sibling(r.fipPort, kindPort); p != nil {
		portID, router, status = p.physicalID, s.routerID, "ACTIVE"
		if len(p.fixedIPs) > 0 {
			fixed = p.fixedIPs[0].String()
		}
	}
	return map[string]any{
		"created_at":          neutronTime(r.created),
		"description":         "",
		"fixed_ip_address":    fixed,
		"floating_ip_address": r.fipAddress.String(),
		"floating_network_id": s.publicNet.id,
		"id":                  r.physicalID,
		"port_id":             portID,
		"project_id":          s.projectID,
		"router_id":           router,
		"status":              status,
		"tags":                []any{},
		"tenant_id":           s.projectID,
		"updated_at":          neutronTime(r.updatedOrCreated()),
	}
}

func (r *Resource) serverAttrsLocked() map[string]any {
	s := r.srv
	addresses := map[string]any{}
	networks := map[string]any{}
	add := func(n *network, ip netip.Addr, typ, mac string) {
		version := 4
		if ip.Is6() {
			version = 6
		}
		list, _ := addresses[n.name].([]any)
		addresses[n.name] = append(list, map[string]any{
			"addr":                    ip.String(),
			"version":                 version,
			"OS-EXT-IPS:type":         typ,
			"OS-EXT-IPS-MAC:mac_addr": mac,
		})
		// Heat's networks attribute lists each network by name and by id.
		for _, key := range []string{n.name, n.id} {
			ips, _ := networks[key].([]any)
			networks[key] = append(ips, ip.String())
		}
	}
	for _, pn := range r.ports {
		p := r.sibling(pn, kindPort)
		if p == nil {
			continue
		}
		for _, ip := range p.fixedIPs {
			add(p.network, ip, "fixed", p.mac)
		}
		for _, f := range r.stack.resources {
			if f.kind == kindFloatingIP && f.fipPort == pn {
				add(p.network, f.fipAddress, "floating", p.mac)
			}
		}
	}
	volumes := []any{}
	for _, v := range r.stack.resources {
		if v.kind == kindVolume && v.volServer == r.name {
			volumes = append(volumes, map[string]any{"id": v.physicalID, "delete_on_termination": false})
		}
	}
	return map[string]any{
		"OS-DCF:diskConfig":                    "MANUAL",
		"OS-EXT-AZ:availability_zone":          "nova",
		"OS-EXT-SRV-ATTR:host":                 r.host,
		"OS-EXT-SRV-ATTR:hypervisor_hostname":  r.host,
		"OS-EXT-SRV-ATTR:instance_name":        instanceName(r.instance),
		"OS-EXT-STS:power_state":               1,
		"OS-EXT-STS:task_state":                nil,
		"OS-EXT-STS:vm_state":                  "active",
		"accessIPv4":                           "",
		"accessIPv6":                           "",
		"addresses":                            addresses,
		"created":                              neutronTime(r.created),
		"id":                                   r.physicalID,
		"metadata":                             map[string]any{},
		"name":                                 r.physName,
		"networks":                             networks,
		"os-extended-volumes:volumes_attached": volumes,
		"server_groups":                        []any{},
		"status":                               "ACTIVE",
		"tenant_id":                            s.projectID,
		"updated":                              neutronTime(r.updatedOrCreated()),
		"user_id":                              s.userID,
	}
}

func instanceName(n int) string {
	const hex = "0123456789abcdef"
	b := []byte("instance-00000000")
	for i := len(b) - 1; n > 0 && i >= len("instance-"); i-- {
		b[i] = hex[n&0xf]
		n >>= 4
	}
	return string(b)
}

func (r *Resource) volumeAttrsLocked() map[string]any {
	s := r.srv
	attachments := func() []any {
		srv := r.sibling(r.volServer, kindServer)
		if srv == nil {
			return []any{}
		}
		return []any{map[string]any{
			"attached_at":   cinderTime(r.attachedAt),
			"attachment_id": r.attachmentID,
			"device":        r.device,
			"host_name":     nil,
			"id":            r.physicalID,
			"server_id":     srv.physicalID,
			"volume_id":     r.physicalID,
		}}
	}
	list := attachments()
	status := "available"
	if len(list) > 0 {
		status = "in-use"
	}
	return map[string]any{
		"attachments":                  list,
		"attachments_list":             attachments(),
		"availability_zone":            "nova",
		"bootable":                     "false",
		"consistencygroup_id":          nil,
		"created_at":                   cinderTime(r.created),
		"description":                  nil,
		"encrypted":                    false,
		"id":                           r.physicalID,
		"metadata":                     map[string]any{},
		"multiattach":                  false,
		"name":                         r.physName,
		"os-vol-tenant-attr:tenant_id": s.projectID,
		"replication_status":           nil,
		"size":                         r.size,
		"snapshot_id":                  nil,
		"source_volid":                 nil,
		"status":                       status,
		"updated_at":                   cinderTime(r.updatedOrCreated()),
		"user_id":                      s.userID,
		"volume_type":                  "__DEFAULT__",
	}
}

func (r *Resource) groupAttrsLocked() map[string]any {
	refs := []any{}
	refsMap := map[string]any{}
	if g := r.group; g != nil {
		for _, m := range g.sortedMembersLocked() {
			refs = append(refs, m.res.physicalID)
			refsMap[m.Name] = m.res.physicalID
		}
	}
	return map[string]any{
		"current_size": len(refs),
		"outputs":      map[string]any{},
		"outputs_list": []any{},
		"refs":         refs,
		"refs_map":     refsMap,
	}
}

func (r *Resource) policyAttrsLocked() map[string]any {
	s := r.srv
	st := r.stack
	signal := s.stackURL(st) + "/resources/" + pathEscape(r.name) + "/signal"
	return map[string]any{
		"alarm_url":  s.base + "/heat-cfn/v1/signal/" + strings.ReplaceAll(st.id, "-", "") + "/" + r.physicalID,
		"signal_url": signal,
	}
}

// requiredByLocked lists the resources of r's stack whose templates refer
// to r, as Heat's required_by does.
func (r *Resource) requiredByLocked() []string {
	out := []string{}
	for _, x := range r.stack.resources {
		refers := false
		switch x.kind {
		case kindFloatingIP:
			refers = r.kind == kindPort && x.fipPort == r.name
		case kindServer:
			refers = (r.kind == kindPort && slices.Contains(x.ports, r.name)) ||
				(r.kind == kindVolume && r.volServer == x.name)
		case kindPolicy:
			refers = r.kind == kindGroup && x.policyGroup == r.name
		}
		if refers {
			out = append(out, x.name)
		}
	}
	return out
}

// templateLocked returns the stack's template as Heat stores it.
func (st *Stack) templateLocked() map[string]any {
	params := map[string]any{}
	for name, typ := range st.paramTypes {
		params[name] = map[string]any{"type": typ}
	}
	resources := map[string]any{}
	for _, r := range st.resources {
		resources[r.name] = r.templateLocked()
	}
	t := map[string]any{
		"heat_template_version": st.version,
		"description":           "",
		"resources":             resources,
	}
	if len(params) > 0 {
		t["parameters"] = params
	}
	return t
}

func getResource(name string) map[string]any { return map[string]any{"get_resource": name} }

// templateLocked returns the resource's template snippet.
func (r *Resource) templateLocked() map[string]any {
	props := map[string]any{}
	switch r.kind {
	case kindPort:
		props["network"] = r.network.name
		if len(r.fixedIPs) > 0 {
			var fixed []any
			for _, ip := range r.fixedIPs {
				fixed = append(fixed, map[string]any{"ip_address": ip.String()})
			}
			props["fixed_ips"] = fixed
		}
	case kindFloatingIP:
		props["floating_network"] = r.srv.publicNet.name
		props["port_id"] = getResource(r.fipPort)
	case kindServer:
		props["flavor"] = "m1.medium"
		props["image"] = "ubuntu-20.04-server-cloudimg-amd64"
		nets := []any{}
		for _, p := range r.ports {
			nets = append(nets, map[string]any{"port": getResource(p)})
		}
		props["networks"] = nets
		var bdm []any
		for _, v := range r.stack.resources {
			if v.kind == kindVolume && v.volServer == r.name {
				bdm = append(bdm, map[string]any{
					"device_name": strings.TrimPrefix(v.device, "/dev/"),
					"volume_id":   getResource(v.name),
					"boot_index":  -1,
				})
			}
		}
		if bdm != nil {
			props["block_device_mapping_v2"] = bdm
		}
	case kindVolume:
		props["size"] = r.size
	case kindGroup:
		g := r.group
		if g.spec.MinSizeParam != "" {
			props["min_size"] = map[string]any{"get_param": g.spec.MinSizeParam}
		} else {
			props["min_size"] = g.spec.MinSize
		}
		if g.spec.MaxSize > 0 {
			props["max_size"] = g.spec.MaxSize
		}
		props["desired_capacity"] = len(g.members)
		props["resource"] = map[string]any{"type": g.spec.MemberType}
	case kindPolicy:
		props["adjustment_type"] = "change_in_capacity"
		props["auto_scaling_group_id"] = getResource(r.policyGroup)
		props["scaling_adjustment"] = r.adjustment
	}
	for k, v := range r.props {
		props[k] = deepCopy(v)
	}
	snippet := map[string]any{"type": r.typ}
	if len(props) > 0 {
		snippet["properties"] = props
	}
	return snippet
}

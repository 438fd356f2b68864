package heat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// KnownNodes returns the servers a VNF instance's vnfcResourceInfo lists,
// as nodes (Resource the VNFC's ID, ServerID its Nova server) that
// [ScaleOutTargets] can compare with the nodes Heat reports: what the
// VNFM knew of the VNF before an operation. None without an
// instantiatedVnfInfo.
func KnownNodes(inst *lcm.VnfInstance) []lcm.Node {
	if inst == nil || inst.InstantiatedVnfInfo == nil {
		return nil
	}
	var nodes []lcm.Node
	for _, v := range inst.InstantiatedVnfInfo.VnfcResourceInfo {
		nodes = append(nodes, lcm.Node{Resource: v.ID, ServerID: v.ComputeResource.ResourceID})
	}
	return nodes
}

// ScaleOutTargets returns the nodes of after that are not in before: the
// members a scale-out created (Tacker's scale_out_id_list). Nodes are
// matched by member stack and server, so a member that was healed in
// between (same stack, new server) counts as old. A before list with
// server IDs only (the vnfcResourceInfo a VNFM stored) works as well.
func ScaleOutTargets(before, after []lcm.Node) []lcm.Node {
	old := map[string]bool{}
	for _, n := range before {
		for _, id := range []string{n.StackID, n.ServerID} {
			if id != "" {
				old[id] = true
			}
		}
	}
	var added []lcm.Node
	for _, n := range after {
		if !old[n.StackID] && !old[n.ServerID] {
			added = append(added, n)
		}
	}
	return added
}

// ScaleInTargets returns the members of g's group that a scale-in by req
// removes, resolved to nodes, in the order Tacker removes them: the oldest
// first by (creation_time, resource_name), or the newest first when
// req.additionalParams.is_reverse is true. The group keeps
// max(min_size, members - adjustment × numberOfSteps) members, where
// adjustment is the |scaling_adjustment| of the group's
// OS::Heat::ScalingPolicy (1 without one) and min_size comes from the
// template (a number or a get_param of the stack's parameters).
//
// Call it in scale_start, before Heat removes the members.
func (c *Client) ScaleInTargets(ctx context.Context, stack string, g Group, req lcm.ScaleVnfRequest) ([]lcm.Node, error) {
	if g.AspectID == "" {
		return nil, fmt.Errorf("heat: scale-in of %s: the group has no aspect_id", g.Role)
	}
	if req.AspectID != "" && req.AspectID != g.AspectID {
		return nil, fmt.Errorf("heat: scale-in: the request scales aspect %q, the group is %q", req.AspectID, g.AspectID)
	}
	reverse, err := isReverse(req.AdditionalParams)
	if err != nil {
		return nil, err
	}
	if err := checkParams(append([]param{stackParam(stack)}, groupParams(g)...)...); err != nil {
		return nil, err
	}
	top, st, err := c.findStack(ctx, stack)
	if err != nil {
		return nil, err
	}
	members, err := c.members(ctx, top, g.AspectID)
	if err != nil {
		return nil, err
	}
	tmpl, err := c.template(ctx, top)
	if err != nil {
		return nil, err
	}
	policy, err := groupPolicy(tmpl, st.Parameters, g.AspectID)
	if err != nil {
		return nil, &Error{Stack: top.String(), Resource: g.AspectID, Attribute: "min_size", Err: err, what: "cannot read the template"}
	}
	keep := max(policy.minSize, len(members)-policy.adjustment*req.Steps())
	remove := max(len(members)-keep, 0)
	chosen := members[:remove]
	if reverse {
		chosen = slices.Clone(members[len(members)-remove:])
		slices.Reverse(chosen)
	}
	return c.resolveMembers(ctx, g, chosen)
}

// isReverse reads additionalParams.is_reverse: Tacker compares it with the
// string "True"; true, "true" and "True" are accepted, anything else that
// is present is an error rather than a silent "oldest first".
func isReverse(params json.RawMessage) (bool, error) {
	if len(params) == 0 {
		return false, nil
	}
	var p struct {
		IsReverse any `json:"is_reverse"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return false, fmt.Errorf("heat: scale-in additionalParams: %w", err)
	}
	switch v := p.IsReverse.(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(v); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("heat: scale-in additionalParams.is_reverse: %v is not true or false", p.IsReverse)
}

type scalePolicy struct {
	minSize    int
	adjustment int
}

// groupPolicy reads a group's min_size and the size of one scaling step
// from the template.
func groupPolicy(tmpl []byte, params map[string]string, aspect string) (scalePolicy, error) {
	var t struct {
		Resources map[string]struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(tmpl, &t); err != nil {
		return scalePolicy{}, err
	}
	p := scalePolicy{adjustment: 1}
	grp, ok := t.Resources[aspect]
	if !ok {
		return p, fmt.Errorf("no resource %q in the template", aspect)
	}
	if v, ok := grp.Properties["min_size"]; ok {
		n, err := intValue(v, params)
		if err != nil {
			return p, fmt.Errorf("min_size: %w", err)
		}
		p.minSize = n
	}
	for _, r := range t.Resources {
		if r.Type != TypeScalingPolicy || !refersTo(r.Properties["auto_scaling_group_id"], aspect) {
			continue
		}
		if adj, ok := r.Properties["adjustment_type"].(string); ok && adj != "change_in_capacity" {
			continue
		}
		if n, err := intValue(r.Properties["scaling_adjustment"], params); err == nil && n != 0 {
			p.adjustment = max(p.adjustment, abs(n))
		}
	}
	return p, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// intValue reads an integer template value: a number, a numeric string,
// or {get_param: name}.
func intValue(v any, params map[string]string) (int, error) {
	switch v := v.(type) {
	case float64:
		return int(v), nil
	case string:
		return strconv.Atoi(strings.TrimSpace(v))
	case map[string]any:
		if name, ok := v["get_param"].(string); ok {
			s, ok := params[name]
			if !ok {
				return 0, fmt.Errorf("get_param %s: no such stack parameter", name)
			}
			return strconv.Atoi(strings.TrimSpace(s))
		}
	}
	return 0, fmt.Errorf("%v is not a number", v)
}

// refersTo says whether a template value is {get_resource: name} (or the
// name itself).
func refersTo(v any, name string) bool {
	switch v := v.(type) {
	case string:
		return v == name
	case map[string]any:
		return v["get_resource"] == name
	}
	return false
}

// HealPlan is what a heal request targets.
type HealPlan struct {
	// Entire is true when the request names no VNFC: the whole VNF is
	// healed (Tacker runs terminate_end then instantiate_end).
	Entire bool
	// Nodes are the nodes to heal, in request order, each with its role
	// (master, worker, storage, ...).
	Nodes []lcm.Node
	// Unmanaged are the vnfcInstanceIds of the request that
	// [HealTargetsAmong] left out: VMs of none of the roles the caller
	// manages.
	Unmanaged []string
}

// HealTargets maps the vnfcInstanceIds of req to nodes as Tacker does:
// vnfcInstanceId → the VnfcResourceInfo with that id in inst →
// computeResource.resourceId (the Nova server) → the node with that
// ServerID. nodes are the VNF's nodes as [Client.Nodes] resolved them at
// the same moment (in heal_start the old servers, in heal_end the new
// ones, which the VNFM has already written into vnfcResourceInfo). An
// unknown VNFC or a server no node has is an error naming the index.
func HealTargets(inst *lcm.VnfInstance, req lcm.HealVnfRequest, nodes []lcm.Node) (HealPlan, error) {
	if req.Entire() {
		return HealPlan{Entire: true}, nil
	}
	if inst == nil || inst.InstantiatedVnfInfo == nil {
		return HealPlan{}, fmt.Errorf("heat: heal: the VNF instance has no instantiatedVnfInfo")
	}
	var plan HealPlan
	seen := map[string]bool{}
	for i, id := range req.VnfcInstanceID {
		at := fmt.Sprintf("vnfcInstanceId[%d] %q", i, id)
		vi := slices.IndexFunc(inst.InstantiatedVnfInfo.VnfcResourceInfo, func(v lcm.VnfcResourceInfo) bool { return v.ID == id })
		if vi < 0 {
			return HealPlan{}, fmt.Errorf("heat: heal: %s: no vnfcResourceInfo has this id", at)
		}
		server := inst.InstantiatedVnfInfo.VnfcResourceInfo[vi].ComputeResource.ResourceID
		if server == "" {
			return HealPlan{}, fmt.Errorf("heat: heal: %s: vnfcResourceInfo has no computeResource.resourceId", at)
		}
		ni := slices.IndexFunc(nodes, func(n lcm.Node) bool { return n.ServerID == server })
		if ni < 0 {
			return HealPlan{}, fmt.Errorf("heat: heal: %s: server %s is not a node of the VNF's stack", at, server)
		}
		if seen[server] {
			continue
		}
		seen[server] = true
		plan.Nodes = append(plan.Nodes, nodes[ni])
	}
	return plan, nil
}

// HealTargetsAmong is [HealTargets] for a driver that manages some of a
// VNF's VMs only (a cluster's masters and workers, and the VMs of its
// extensions): the VNFCs of req whose server none of nodes has are left
// out of the plan, which names them in Unmanaged, instead of failing the
// heal. A VNFC that the instance does not list is still an error. A
// request that names VNFCs none of which is managed gives an empty plan
// that is not Entire.
func HealTargetsAmong(inst *lcm.VnfInstance, req lcm.HealVnfRequest, nodes []lcm.Node) (HealPlan, error) {
	if req.Entire() {
		return HealPlan{Entire: true}, nil
	}
	if inst == nil || inst.InstantiatedVnfInfo == nil {
		return HealPlan{}, fmt.Errorf("heat: heal: the VNF instance has no instantiatedVnfInfo")
	}
	servers := map[string]bool{}
	for _, n := range nodes {
		servers[n.ServerID] = true
	}
	var managed, unmanaged []string
	for _, id := range req.VnfcInstanceID {
		vi := slices.IndexFunc(inst.InstantiatedVnfInfo.VnfcResourceInfo, func(v lcm.VnfcResourceInfo) bool { return v.ID == id })
		if vi >= 0 && !servers[inst.InstantiatedVnfInfo.VnfcResourceInfo[vi].ComputeResource.ResourceID] {
			unmanaged = append(unmanaged, id)
			continue
		}
		managed = append(managed, id)
	}
	if len(managed) == 0 {
		return HealPlan{Unmanaged: unmanaged}, nil
	}
	req.VnfcInstanceID = managed
	plan, err := HealTargets(inst, req, nodes)
	plan.Unmanaged = unmanaged
	return plan, err
}

// StackName returns the name Tacker's v2 API gives the top-level stack of
// a VNF instance: "vnf-" followed by the instance ID. (Tacker's v1 API
// keeps the stack ID in its own database instead; pass that to the
// Client's methods, which accept a stack name or ID.)
func StackName(inst *lcm.VnfInstance) string { return "vnf-" + inst.ID }

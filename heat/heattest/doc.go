// Package heattest is a fake OpenStack Keystone v3 and Heat (orchestration
// v1) HTTP server for tests, and a builder of the stacks it serves.
//
// Unmodified gophercloud talks to it over real HTTP on 127.0.0.1: password,
// token and application-credential authentication, version discovery (so
// versioned and versionless auth URLs both work), a service catalog with the
// orchestration and identity services, and the read side of Heat that a
// VNF manager walks to find its nodes: stack lookup by name or id (a 302 to
// /stacks/{name}/{id}, which stacks.Find follows), stack show, resource
// list (with nested_depth and with_detail) and show, and the stack
// template. Every Heat request needs a live X-Auth-Token; ExpireTokens
// invalidates them all so that clients reauthenticate, and FailRequests
// injects HTTP failures.
//
// Tests build the cloud with the builder: CreateStack, then ports, floating
// IPs, servers, volumes, scaling policies and OS::Heat::AutoScalingGroup
// resources whose members are nested stacks built by a callback; then
// mutate it as scale-out, scale-in, heal and status changes would
// (Group.ScaleOut, Group.ScaleIn, Group.RemoveMembers, Stack.ReplaceServer,
// Resource.SetFixedIPs, SetStatus). Builder methods panic on programming
// errors (duplicate names, references to resources that do not exist);
// changes that a real cloud could refuse (a group's size limits) return
// errors.
//
// # Fidelity
//
// Response bodies follow Heat's and Keystone's: field names, the
// "2026-01-01T00:00:00Z" timestamp format, Heat's error body
// ({"explanation", "code", "error": {"message", "traceback", "type"},
// "title"}), keystonemiddleware's 401, Heat's 403 for another project.
// Resource show returns what Heat returns for resources backed by an
// OpenStack object: the object as its own API shows it (Neutron port or
// floating IP, Nova server plus Heat's networks and server_groups, Cinder
// volume, whose "attachments" is therefore a list; attachments_list is
// served too). Nested stacks are named "<parent>-<resource>-<short id>",
// group members have 12-character short-id names, and a replaced server is
// a new resource (CREATE_COMPLETE, new creation time), as in Heat.
//
// Paths are decoded before they are split on "/", as Heat's WSGI server
// and routes do: an escaped "?" is part of a name, "%2F" separates
// segments, and dot segments are not resolved. Server.Requests records
// each path both decoded and as it was sent.
//
// Time is a logical clock (Config.Start, 2026-01-01T00:00:00Z by default):
// every stack or resource creation and every update takes the current
// second and moves the clock one second on, so creation times are strictly
// increasing and reproducible. Ids come from a source seeded by
// Config.Seed, so the same build gives the same ids; only secrets
// (password, application credential secret) come from crypto/rand.
//
// # What it does not model
//
// It serves no writes: stacks are created, scaled and healed through the
// builder, not through POST, PUT, PATCH or DELETE (those answer 405).
// There are no events, outputs, environments, stack actions, resource
// metadata, signals, or services other than Keystone and Heat (no Nova,
// Neutron or Cinder endpoints: their objects exist only as Heat resource
// attributes). Keystone knows one user, one project and one domain; domain,
// system and trust scopes, and multi-factor methods, are refused with 401.
// Template properties are illustrative (image and flavor are fixed) and
// templates are not validated; parameters, outputs and intrinsic functions
// are not evaluated except a group's min_size get_param.
package heattest

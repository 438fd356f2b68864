package plumbing

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// VMs say where some of a VNF's VMs are and how to log in to them: the
// Heat groups a hook resolves and the login of each role. A cluster's
// masters and workers are one such set, typed by the package that owns
// their parameters; an extension (the storage server of package nfs, the
// external load balancer of package lb) brings its own, and a VM outside
// the VNF's stack (kubespray's Ansible server) has a login and no group.
type VMs struct {
	// Groups are where Heat keeps the VMs, one per role.
	Groups []heat.Group
	// Logins are the login of each role, also of roles without a group.
	Logins Credentials
}

// Roles returns the roles v has a group or a login for, in lcm's order
// of roles.
func (v VMs) Roles() []lcm.Role {
	seen := map[lcm.Role]bool{}
	for _, g := range v.Groups {
		seen[g.Role] = true
	}
	for r := range v.Logins {
		seen[r] = true
	}
	roles := slices.Collect(maps.Keys(seen))
	slices.SortFunc(roles, func(a, b lcm.Role) int {
		return lcm.CompareNodes(lcm.Node{Role: a}, lcm.Node{Role: b})
	})
	return roles
}

// Has reports whether v has role: a group or a login of it.
func (v VMs) Has(role lcm.Role) bool { return slices.Contains(v.Roles(), role) }

// MergeVMs returns the VMs of every set together. A role that two sets
// both name is an error: each role's VMs have one owner, whose
// parameters say where they are and how to log in.
func MergeVMs(sets ...VMs) (VMs, error) {
	all := VMs{Logins: Credentials{}}
	owner := map[lcm.Role]int{}
	for i, s := range sets {
		for _, r := range s.Roles() {
			if j, ok := owner[r]; ok && j != i {
				return VMs{}, fmt.Errorf("plumbing: the VMs of role %q are named twice (sets %d and %d): each role has one owner", r, j, i)
			}
			owner[r] = i
		}
		all.Groups = append(all.Groups, s.Groups...)
		maps.Copy(all.Logins, s.Logins)
	}
	return all, nil
}

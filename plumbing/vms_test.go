package plumbing_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
)

// Sets of VMs merge when each role has one owner; a role two sets name
// is refused, naming it.
func TestMergeVMs(t *testing.T) {
	cluster := plumbing.VMs{Groups: []heat.Group{masters, workers}, Logins: creds}
	storage := plumbing.VMs{
		Groups: []heat.Group{{Role: lcm.RoleStorage, SSHCP: "storage_server_CP"}},
		Logins: plumbing.Credentials{lcm.RoleStorage: {Username: "nfs"}},
	}
	ansible := plumbing.VMs{Logins: plumbing.Credentials{lcm.RoleAnsible: {Username: "ansible"}}}
	all, err := plumbing.MergeVMs(cluster, storage, ansible)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := all.Roles(), []lcm.Role{lcm.RoleMaster, lcm.RoleWorker, lcm.RoleStorage, lcm.RoleAnsible}; !slices.Equal(got, want) {
		t.Errorf("roles %v, want %v", got, want)
	}
	if len(all.Groups) != 3 || all.Logins[lcm.RoleAnsible].Username != "ansible" || !all.Has(lcm.RoleStorage) || all.Has(lcm.RoleLoadBalancer) {
		t.Errorf("merged %+v", all)
	}
	thief := plumbing.VMs{Groups: []heat.Group{{Role: lcm.RoleMaster, SSHCP: "other"}}}
	if _, err := plumbing.MergeVMs(cluster, thief); err == nil || !strings.Contains(err.Error(), `"master"`) {
		t.Errorf("a second owner of the masters: %v", err)
	}
}

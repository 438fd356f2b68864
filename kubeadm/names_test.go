package kubeadm_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
)

func TestNodeName(t *testing.T) {
	for _, tc := range []struct {
		role lcm.Role
		addr string
		want string
	}{
		{lcm.RoleMaster, "10.0.0.5", "master-10-0-0-5"},
		{lcm.RoleWorker, "10.0.0.12", "worker-10-0-0-12"},
		{lcm.RoleWorker, "10.0.1.12", "worker-10-0-1-12"}, // the reference's worker12 twice
		{lcm.RoleWorker, "fd00::12", "worker-fd00--12"},
		{lcm.RoleWorker, "FD00:0:0::12", "worker-fd00--12"}, // canonical form
		{lcm.RoleMaster, "::ffff:10.0.0.5", "master-10-0-0-5"},
		{lcm.RoleMaster, "2001:db8::1%eth0", "master-2001-db8--1"},
	} {
		if got := kubeadm.NodeName(tc.role, tc.addr); got != tc.want {
			t.Errorf("NodeName(%s, %s) = %q, want %q", tc.role, tc.addr, got, tc.want)
		}
		if !lcm.IsDNSName(kubeadm.NodeName(tc.role, tc.addr)) {
			t.Errorf("%q is not a host name", kubeadm.NodeName(tc.role, tc.addr))
		}
	}
}

func TestClusterHosts(t *testing.T) {
	got := kubeadm.ClusterHosts([]string{"10.0.0.5", "10.0.0.6"}, []string{"10.0.0.12", "10.0.0.5"})
	want := "10.0.0.5=master-10-0-0-5 10.0.0.6=master-10-0-0-6 10.0.0.12=worker-10-0-0-12"
	var s []string
	for _, e := range got {
		s = append(s, e.IP+"="+strings.Join(e.Names, ","))
	}
	if strings.Join(s, " ") != want {
		t.Errorf("got %q, want %q", s, want)
	}
}

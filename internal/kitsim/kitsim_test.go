package kitsim_test

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/internal/kitsim"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// Of reads the simulated cloud and VNF behind a cloudtest.VNF, and
// nothing from any other value.
func TestOfVNF(t *testing.T) {
	c := cloudtest.Start(t, cloudtest.Options{})
	v := c.NewVNF(cloudtest.Topology{Servers: []cloudtest.ServerSpec{{Role: lcm.RoleWorker, Name: "vm", SSHCP: "vm_CP", Login: cloudtest.Login{User: "ubuntu", Password: "ubuntu"}}}})
	cloud, vnf, ok := kitsim.Of(v)
	if !ok {
		t.Fatal("Of(*cloudtest.VNF) is not ok")
	}
	if vnf.ID() != v.Instance().ID || cloud.VimConnection().ID != c.VimConnection().ID {
		t.Errorf("Of gives VNF %s of the cloud whose VIM is %s; want %s, %s", vnf.ID(), cloud.VimConnection().ID, v.Instance().ID, c.VimConnection().ID)
	}
	if h := vnf.Hosts(); len(h) != 1 || h[0].Resource != v.All()[0].Name() {
		t.Errorf("Of's VNF has hosts %v", h)
	}
	for _, x := range []any{nil, c, v.All()[0]} {
		if _, _, ok := kitsim.Of(x); ok {
			t.Errorf("Of(%T) is ok", x)
		}
	}
}

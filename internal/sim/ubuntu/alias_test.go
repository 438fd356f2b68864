package ubuntu

import "testing"

func TestUnitAlias(t *testing.T) {
	v := newVM(t, Options{})
	starts := 0
	v.AddUnit(Unit{Name: "real.service", OnStart: func(*Machine) error { starts++; return nil }})
	if err := v.Server().FS().Symlink("real.service", "/lib/systemd/system/alias.service"); err != nil {
		t.Fatal(err)
	}
	v.mustOK("systemctl start alias")
	want(t, "is-active through both names", v.root("systemctl is-active alias.service real.service"), "active\nactive\n", "", 0)
	v.mustOK("systemctl restart alias.service && systemctl stop real")
	if s := v.Service("alias"); s != v.Service("real") || s.Active || s.Starts != 1 || s.Restarts != 1 || s.Stops != 1 || starts != 2 {
		t.Errorf("alias %+v, real %+v, %d starts", v.Service("alias"), v.Service("real"), starts)
	}
}

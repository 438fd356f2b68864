package cloudtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// agent is a user's package: a daemon that reads a configuration file
// the package does not ship.
var agent = cloudtest.Package{
	Name: "acme-agent", Version: "2.1-1",
	Files: map[string]string{"/usr/share/doc/acme-agent/README": "acme agent\n"},
	Units: []cloudtest.Unit{{Name: "acme-agent", Requires: []string{"/etc/acme/agent.yaml"}}},
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A step that installs the agent but forgets its configuration leaves a
// failed unit; the configuration step makes it run; a start without the
// file fails as systemctl does.
func TestUnitRequiresFailsAStartWithoutItsFile(t *testing.T) {
	ctx := ctx(t)
	vm := cloudtest.NewVM(t, cloudtest.VMOptions{Packages: []cloudtest.Package{agent}})
	if vm.Installed("acme-agent") || vm.Unit("acme-agent").Exists {
		t.Fatal("the agent is there before anything installed it")
	}
	h := vm.Host()
	if _, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{"acme-agent"}}); err != nil {
		t.Fatal(err)
	}
	if !vm.Installed("acme-agent") || vm.Version("acme-agent") != "2.1-1" {
		t.Errorf("installed %v at %q", vm.Installed("acme-agent"), vm.Version("acme-agent"))
	}
	if u := vm.Unit("acme-agent.service"); !u.Exists || !u.Enabled || u.Active || !u.Failed || u.Starts != 1 {
		t.Errorf("the agent without its configuration: %+v, want enabled, failed after 1 start", u)
	}
	if got, err := vm.ReadFile("/usr/share/doc/acme-agent/README"); err != nil || string(got) != "acme agent\n" {
		t.Errorf("the package's file: %q, %v", got, err)
	}

	res, err := system.ConfigureUnit(ctx, h, system.UnitOptions{Unit: "acme-agent", Inputs: map[string]string{"/etc/acme/agent.yaml": "token: x\n"}, InputsNeedRestart: true})
	if err != nil {
		t.Fatal(err)
	}
	if u := vm.Unit("acme-agent"); !res.Changed || !u.Active || u.Failed {
		t.Errorf("after the configuration: %+v (%+v)", u, res)
	}

	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"rm", "/etc/acme/agent.yaml"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	_, err = h.Run(ctx, remote.Cmd{Args: []string{"systemctl", "restart", "acme-agent"}, Sudo: true})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 1 || !strings.Contains(ce.Stderr, "Job for acme-agent.service failed because the control process exited with error code.") {
		t.Fatalf("restart without the configuration: %v", err)
	}
	if u := vm.Unit("acme-agent"); u.Active || !u.Failed {
		t.Errorf("after the failed restart: %+v", u)
	}
}

// Config verifies the VM's own host key: another VM's key is refused.
func TestVMConfigPinsTheHostKey(t *testing.T) {
	ctx := ctx(t)
	c := cloudtest.Start(t, cloudtest.Options{})
	v := c.NewVNF(cloudtest.Topology{Servers: []cloudtest.ServerSpec{
		{Role: lcm.RoleRegistry, Name: "a", SSHCP: "a_CP", Login: cloudtest.Login{User: "ubuntu", Password: "ubuntu"}},
		{Role: lcm.RoleRegistry, Name: "b", SSHCP: "b_CP", Login: cloudtest.Login{User: "ubuntu", Password: "ubuntu"}},
	}})
	vms := v.All()
	if len(vms) != 2 {
		t.Fatalf("%d VMs", len(vms))
	}
	a, b := vms[0], vms[1]
	h, err := remote.Dial(ctx, a.Config())
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	cfg := a.Config()
	cfg.Addr = b.Addr()
	var he *remote.HostKeyError
	if h, err := remote.Dial(ctx, cfg); !errors.As(err, &he) {
		if h != nil {
			h.Close()
		}
		t.Fatalf("dialing b with a's pinned key: %v, want a HostKeyError", err)
	}
	if out, err := b.Host().Run(ctx, remote.Command("hostname")); err != nil || strings.TrimSpace(string(out.Stdout)) != b.Hostname() {
		t.Errorf("hostname over SSH: %q, %v; the VM says %q", out.Stdout, err, b.Hostname())
	}
	if got := b.Commands(); !slices.ContainsFunc(got, func(c string) bool { return strings.HasSuffix(c, " hostname") }) {
		t.Errorf("b's commands %q lack hostname", got)
	}
}

// A disk attached to a VM is what its programs see; a fault injected
// makes the step fail.
func TestAttachVolumeAndFaults(t *testing.T) {
	ctx := ctx(t)
	vm := cloudtest.NewVM(t, cloudtest.VMOptions{User: "admin", Password: "s3cret", SudoWithPassword: true})
	vol := vm.AttachVolume("/dev/vdb", 1<<30)
	if vm.Volume("/dev/vdb") == nil || vm.Volume("/dev/vdc") != nil {
		t.Fatal("Volume does not find the attached disk")
	}
	h := vm.Host()
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"mkfs.ext4", "-L", "data", "/dev/vdb"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	if vol.Formats() != 1 || vol.FSType() != "ext4" || vol.Label() != "data" || vol.UUID() == "" {
		t.Errorf("after mkfs: %d formats, %q, label %q, UUID %q", vol.Formats(), vol.FSType(), vol.Label(), vol.UUID())
	}
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"mount", "/dev/vdb", "/mnt"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	if err := vol.WriteFile("hello.txt", []byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := vm.ReadFile("/mnt/hello.txt"); err != nil || string(got) != "hi\n" {
		t.Errorf("the volume's file under its mount point: %q, %v", got, err)
	}
	if ms := vm.Mounts(); !slices.ContainsFunc(ms, func(m cloudtest.Mount) bool {
		return m.Source == "/dev/vdb" && m.Target == "/mnt" && m.FSType == "ext4"
	}) {
		t.Errorf("mounts %+v", ms)
	}

	vm.FailProgram("apt-get", 1, 100, "E: simulated\n")
	_, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{"jq"}})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || !strings.Contains(ce.Stderr, "E: simulated") {
		t.Errorf("InstallPackages under a failing apt-get: %v", err)
	}
	if vm.Installed("jq") {
		t.Error("jq installed by a failing apt-get")
	}
	if _, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{"jq"}}); err != nil || !vm.Installed("jq") {
		t.Errorf("the retry: %v, installed %v", err, vm.Installed("jq"))
	}
}

func TestBadPackagesFailTheTest(t *testing.T) {
	for _, p := range []cloudtest.Package{
		{},
		{Name: "x", Files: map[string]string{"etc/x": ""}},
		{Name: "x", Units: []cloudtest.Unit{{}}},
		{Name: "x", Units: []cloudtest.Unit{{Name: "x", Requires: []string{"/etc/../x"}}}},
	} {
		ft := &fatalTB{TB: t}
		func() {
			defer func() { recover() }()
			cloudtest.Start(ft, cloudtest.Options{Packages: []cloudtest.Package{p}})
		}()
		if !ft.failed {
			t.Errorf("Start with %+v did not fail", p)
		}
	}
}

// fatalTB records a Fatal's message and stops the caller, as testing.T
// does (with a panic the caller recovers from).
type fatalTB struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fatalTB) Fatal(args ...any) {
	f.failed, f.msg = true, fmt.Sprint(args...)
	panic("fatal")
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	panic("fatal")
}

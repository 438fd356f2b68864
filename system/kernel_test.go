package system_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

func TestKernelModulesAndSysctlsPersist(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	mods := func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.LoadKernelModules(ctx, h, system.ModulesOptions{Name: "mgmtkit-k8s", Modules: []string{"overlay", "br-netfilter"}})
	}
	sysctls := func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.ApplySysctls(ctx, h, system.SysctlOptions{Name: "90-mgmtkit-k8s", Settings: map[string]string{
			"net.bridge.bridge-nf-call-iptables": "1",
			"net.ipv4.ip_forward":                "1",
			"net/ipv4/ip_local_port_range":       "1024  65000",
		}})
	}
	// Before br_netfilter, its key does not exist: sysctl's error. sysctl
	// -p sets the other keys all the same, as procps does.
	if _, _, err := v.step(sysctls); err == nil || !strings.Contains(err.Error(), "cannot stat /proc/sys/net/bridge/bridge-nf-call-iptables") {
		t.Errorf("sysctl before the module: %v", err)
	}
	if fwd, _ := v.Sysctl("net.ipv4.ip_forward"); fwd != "1" {
		t.Errorf("ip_forward %q", fwd)
	}
	if _, err := v.h.Run(v.ctx, remote.Cmd{Args: []string{"sysctl", "-w", "net.ipv4.ip_forward=0"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	res, cmds, err := v.step(mods)
	if err != nil || !res.Changed || count(cmds, "modprobe -a overlay br-netfilter") != 1 {
		t.Fatalf("modules: %v, %v, %q", res, err, cmds)
	}
	// The file's probe and the read of the loaded and built-in modules.
	if res, cmds, err := v.step(mods); err != nil || res.Changed || len(cmds) != 2 {
		t.Errorf("modules again: %v, %v, %q", res, err, cmds)
	}
	res, cmds, err = v.step(sysctls)
	if err != nil || !res.Changed || count(cmds, "sysctl -p /etc/sysctl.d/90-mgmtkit-k8s.conf") != 1 {
		t.Fatalf("sysctls: %v, %v, %q", res, err, cmds)
	}
	if got, _ := v.Sysctl("net.ipv4.ip_local_port_range"); got != "1024\t65000" {
		t.Errorf("port range %q", got)
	}
	if res, cmds, err := v.step(sysctls); err != nil || res.Changed || len(cmds) != 2 {
		t.Errorf("sysctls again: %v, %v, %q", res, err, cmds)
	}
	// A value changed behind our back is set again, the file untouched.
	if _, err := v.h.Run(v.ctx, remote.Cmd{Args: []string{"sysctl", "-w", "net.ipv4.ip_forward=0"}, Sudo: true}); err != nil {
		t.Fatal(err)
	}
	if res, _, err := v.step(sysctls); err != nil || res.Detail != "set net.ipv4.ip_forward" {
		t.Errorf("drifted: %v, %v", res, err)
	}
	if err := v.Reboot(); err != nil {
		t.Fatal(err)
	}
	fwd, _ := v.Sysctl("net.ipv4.ip_forward")
	if !slices.Contains(v.LoadedModules(), "br_netfilter") || fwd != "1" {
		t.Errorf("after a reboot: modules %v, ip_forward %q", v.LoadedModules(), fwd)
	}
	for _, fn := range []func(ctx context.Context, h remote.Host) (lcm.Result, error){mods, sysctls} {
		if res, _, err := v.step(fn); err != nil || res.Changed {
			t.Errorf("after a reboot: %v, %v", res, err)
		}
	}
}

func TestKernelStepsRefuseBadInputBeforeRunning(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	for _, tt := range []struct {
		fn   func(ctx context.Context, h remote.Host) (lcm.Result, error)
		want string
	}{
		{func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.LoadKernelModules(ctx, h, system.ModulesOptions{Name: "k8s", Modules: []string{"overlay", "-r"}})
		}, `Modules[1]: "-r" is not a kernel module name`},
		{func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.LoadKernelModules(ctx, h, system.ModulesOptions{Name: "../k8s", Modules: []string{"overlay"}})
		}, `Name: "../k8s"`},
		{func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.ApplySysctls(ctx, h, system.SysctlOptions{Name: "k8s", Settings: map[string]string{"net.ipv4.ip_forward": "1\nkernel.panic = 1"}})
		}, `Settings["net.ipv4.ip_forward"]: the value "1\nkernel.panic = 1" spans lines`},
		{func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.ApplySysctls(ctx, h, system.SysctlOptions{Name: "k8s", Settings: map[string]string{"net.*.ip_forward": "1"}})
		}, `Settings["net.*.ip_forward"]`},
		// A leading '-' would reach `sudo sysctl` as an option (-p FILE
		// loads any file as root) and means "ignore failure" in the file.
		{func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.ApplySysctls(ctx, h, system.SysctlOptions{Name: "k8s", Settings: map[string]string{"-pfoo.conf": "1"}})
		}, `Settings["-pfoo.conf"]: "-pfoo.conf" is not a sysctl key`},
		{func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.ApplySysctls(ctx, h, system.SysctlOptions{Name: "k8s", Settings: map[string]string{"-p/etc/shadow": "1"}})
		}, `Settings["-p/etc/shadow"]: "-p/etc/shadow" is not a sysctl key`},
	} {
		_, cmds, err := v.step(tt.fn)
		paramsError(t, err, tt.want)
		if len(cmds) != 0 {
			t.Errorf("%s: %d commands", tt.want, len(cmds))
		}
	}
}

// A module built into the kernel never shows in /proc/modules: it is
// loaded all the same, as /lib/modules/$(uname -r)/modules.builtin says.
func TestBuiltInKernelModulesCountAsLoaded(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	mods := func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.LoadKernelModules(ctx, h, system.ModulesOptions{Name: "mgmtkit-k8s", Modules: []string{"ext4", "dm-mod", "overlay"}})
	}
	res, cmds, err := v.step(mods)
	if err != nil || res.Detail != "wrote /etc/modules-load.d/mgmtkit-k8s.conf; loaded overlay" || count(cmds, "modprobe") != 1 {
		t.Fatalf("fresh: %v, %v, %q", res, err, cmds)
	}
	if res, cmds, err := v.step(mods); err != nil || res.Changed || count(cmds, "modprobe") != 0 {
		t.Errorf("again: %v, %v, %q", res, err, cmds)
	}
	if got := v.LoadedModules(); slices.Contains(got, "ext4") || !slices.Contains(got, "overlay") {
		t.Errorf("loaded modules %v", got)
	}
}

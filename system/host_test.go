package system_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

func TestSetHostname(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	set := func(name string) func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return func(ctx context.Context, h remote.Host) (lcm.Result, error) { return system.SetHostname(ctx, h, name) }
	}
	res, cmds, err := v.step(set("master-0.cluster.local"))
	if err != nil || !res.Changed || v.Hostname() != "master-0.cluster.local" || len(cmds) != 1 {
		t.Fatalf("%v, %v, hostname %q, %q", res, err, v.Hostname(), cmds)
	}
	if res, cmds, err := v.step(set("master-0.cluster.local")); err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("again: %v, %v, %q", res, err, cmds)
	}
	for _, bad := range []string{"", "-x", "a_b", "node..1", "x y", "a$(reboot)", string(make([]byte, 65))} {
		_, cmds, err := v.step(set(bad))
		paramsError(t, err, "name: ")
		if len(cmds) != 0 {
			t.Errorf("%q: %d commands", bad, len(cmds))
		}
	}
}

func TestSetHostsBlock(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	before, _ := v.Server().FS().ReadFile("/etc/hosts")
	opts := system.HostsOptions{Block: "cluster", Entries: []system.HostsEntry{
		{IP: "fd00::5", Names: []string{"master-0"}},
		{IP: "10.0.0.12", Names: []string{"worker-1", "worker-1.cluster.local", "worker-1"}},
		{IP: "10.0.0.5", Names: []string{"master-0"}},
	}}
	hosts := func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.SetHostsBlock(ctx, h, opts)
	}
	res, _, err := v.step(hosts)
	if err != nil || !res.Changed {
		t.Fatal(res, err)
	}
	got, _ := v.Server().FS().ReadFile("/etc/hosts")
	want := string(before) + "# BEGIN mgmtkit cluster\n10.0.0.5\tmaster-0\n10.0.0.12\tworker-1 worker-1.cluster.local\nfd00::5\tmaster-0\n# END mgmtkit cluster\n"
	if string(got) != want {
		t.Errorf("/etc/hosts:\n%s\nwant:\n%s", got, want)
	}
	opts.Entries[0], opts.Entries[2] = opts.Entries[2], opts.Entries[0]
	if res, _, err := v.step(hosts); err != nil || res.Changed {
		t.Errorf("same entries in another order: %v, %v", res, err)
	}
	opts.Entries = nil
	if res, _, err := v.step(hosts); err != nil || !res.Changed {
		t.Errorf("no entries: %v, %v", res, err)
	}
	if got, _ := v.Server().FS().ReadFile("/etc/hosts"); string(got) != string(before) {
		t.Errorf("the block was not removed:\n%s", got)
	}
	for _, tt := range []struct {
		e    system.HostsEntry
		want string
	}{
		{system.HostsEntry{IP: "10.0.0.300", Names: []string{"a"}}, `Entries[0].IP: "10.0.0.300" is not an IP address`},
		{system.HostsEntry{IP: "fe80::1%eth0", Names: []string{"a"}}, `Entries[0].IP`},
		{system.HostsEntry{IP: "10.0.0.1", Names: []string{"a b"}}, `Entries[0].Names[0]: "a b" is not a host name`},
		{system.HostsEntry{IP: "10.0.0.1"}, `Entries[0].Names: no name`},
	} {
		opts.Entries = []system.HostsEntry{tt.e}
		_, cmds, err := v.step(hosts)
		paramsError(t, err, tt.want)
		if len(cmds) != 0 {
			t.Errorf("%s: %d commands", tt.want, len(cmds))
		}
	}
	// Files are clean absolute paths: what is checked is what is edited.
	opts.Entries = []system.HostsEntry{{IP: "10.0.0.1", Names: []string{"a"}}}
	for _, f := range []string{"/etc/../etc/hosts", "/etc//hosts", "/etc/hosts/", "/etc/./hosts", "etc/hosts", "/"} {
		opts.Files = []string{system.HostsFile, f}
		_, cmds, err := v.step(hosts)
		paramsError(t, err, fmt.Sprintf("Files[1]: %q is not a clean absolute path", f))
		if len(cmds) != 0 {
			t.Errorf("%s: %d commands", f, len(cmds))
		}
	}
}

func TestArchitecture(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		v := newVM(t, ubuntu.Options{Arch: arch})
		if got, err := system.Architecture(v.ctx, v.h); got != arch || err != nil {
			t.Errorf("%s: %q, %v", arch, got, err)
		}
		osr, err := system.ReadOSRelease(v.ctx, v.h)
		if err != nil || osr.ID() != "ubuntu" || osr.VersionID() != "22.04" {
			t.Errorf("os-release %v, %v", osr, err)
		}
	}
}

// SetHostsBlock keeps cloud-init's hosts template in step with
// /etc/hosts where it exists, so that the block survives a reboot under
// manage_etc_hosts: true (the simulated cloud-init renders /etc/hosts
// from the template at boot, as cc_update_etc_hosts does); it does not
// create the template where cloud-init is not installed.
func TestSetHostsBlockKeepsCloudInitTemplateInStep(t *testing.T) {
	v := newVM(t, ubuntu.Options{})
	opts := system.HostsOptions{Block: "cluster", Entries: []system.HostsEntry{{IP: "10.0.0.12", Names: []string{"worker-1"}}}}
	hosts := func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return system.SetHostsBlock(ctx, h, opts)
	}
	if res, _, err := v.step(hosts); err != nil || !res.Changed {
		t.Fatal(res, err)
	}
	const line = "\n10.0.0.12\tworker-1\n"
	tmpl, _ := v.Server().FS().ReadFile(system.CloudHostsTemplate)
	if !strings.HasPrefix(string(tmpl), "## template:jinja\n") || !strings.Contains(string(tmpl), line) {
		t.Errorf("template:\n%s", tmpl)
	}
	if res, cmds, err := v.step(hosts); err != nil || res.Changed || len(cmds) != 1 {
		t.Errorf("converged: %v, %v, %d commands, want 1", res, err, len(cmds))
	}
	if err := v.Reboot(); err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Server().FS().ReadFile(system.HostsFile); !strings.Contains(string(got), line) {
		t.Errorf("/etc/hosts after a reboot:\n%s", got)
	}
	// No entries take the block out of both.
	opts.Entries = nil
	if res, _, err := v.step(hosts); err != nil || !res.Changed {
		t.Fatal(res, err)
	}
	for _, f := range []string{system.HostsFile, system.CloudHostsTemplate} {
		if got, _ := v.Server().FS().ReadFile(f); strings.Contains(string(got), "mgmtkit cluster") {
			t.Errorf("%s keeps the block:\n%s", f, got)
		}
	}
	// Without cloud-init, only /etc/hosts.
	if err := v.Server().FS().Remove(system.CloudHostsTemplate); err != nil {
		t.Fatal(err)
	}
	opts.Entries = []system.HostsEntry{{IP: "10.0.0.12", Names: []string{"worker-1"}}}
	if res, _, err := v.step(hosts); err != nil || !res.Changed {
		t.Fatal(res, err)
	}
	if v.Server().FS().Exists(system.CloudHostsTemplate) {
		t.Error("the template was created")
	}
	// A block name cloud-init's renderers would interpret is refused.
	opts.Block = "{{ fqdn }}"
	_, cmds, err := v.step(hosts)
	paramsError(t, err, "Block: ")
	if len(cmds) != 0 {
		t.Errorf("%d commands", len(cmds))
	}
}

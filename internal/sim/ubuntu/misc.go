package ubuntu

import (
	"context"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// unameMachine is `uname -m` for a dpkg architecture.
func unameMachine(arch string) string {
	if arch == "arm64" {
		return "aarch64"
	}
	return "x86_64"
}

// lsbReleaseTool: lsb_release [-a] [-i] [-d] [-r] [-c] [-s].
func lsbReleaseTool(_ context.Context, _ *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "aidrcsv", long: []string{"all", "id", "description", "release", "codename", "short"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	all := c.Has("-a", "--all")
	short := c.Has("-s", "--short")
	fields := []struct{ short, long, label, value string }{
		{"-i", "--id", "Distributor ID", "Ubuntu"},
		{"-d", "--description", "Description", "Ubuntu 22.04.4 LTS"},
		{"-r", "--release", "Release", "22.04"},
		{"-c", "--codename", "Codename", "jammy"},
	}
	any := false
	for _, f := range fields {
		any = any || c.Has(f.short, f.long)
	}
	if all || !any {
		errf(p, "No LSB modules are available.")
	}
	if !all && !any {
		outf(p, "LSB Version:\tcore-11.1.0ubuntu4-noarch:security-11.1.0ubuntu4-noarch")
		return 0
	}
	var short_ []string
	for _, f := range fields {
		if all || c.Has(f.short, f.long) {
			if short {
				short_ = append(short_, f.value)
			} else {
				outf(p, "%s:\t%s", f.label, f.value)
			}
		}
	}
	if short {
		outf(p, "%s", strings.Join(short_, " "))
	}
	return 0
}

// archTool: arch, which prints `uname -m`.
func archTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	if len(p.Args) > 1 {
		return p.Fail(1, "extra operand '%s'\nTry 'arch --help' for more information.", p.Args[1])
	}
	outf(p, "%s", unameMachine(m.arch))
	return 0
}

// unameTool replaces sshtest's uname on a machine that is not x86_64:
// uname [-asnrvmpio].
func unameTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "asnrvmpio", long: []string{"all", "kernel-name", "nodename", "kernel-release", "kernel-version", "machine", "processor", "hardware-platform", "operating-system"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	machine := unameMachine(m.arch)
	fields := []struct{ short, long, value string }{
		{"-s", "--kernel-name", "Linux"},
		{"-n", "--nodename", m.Hostname()},
		{"-r", "--kernel-release", "5.15.0-fake"},
		{"-v", "--kernel-version", "#1 SMP sshtest"},
		{"-m", "--machine", machine},
		{"-p", "--processor", machine},
		{"-i", "--hardware-platform", machine},
		{"-o", "--operating-system", "GNU/Linux"},
	}
	all := c.Has("-a", "--all")
	var out []string
	for _, f := range fields {
		if all || c.Has(f.short, f.long) {
			out = append(out, f.value)
		}
	}
	if len(out) == 0 {
		out = []string{"Linux"}
	}
	outf(p, "%s", strings.Join(out, " "))
	return 0
}

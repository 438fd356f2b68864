package ubuntu

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// kernelRelease is what uname -r says; modprobe names its module
// directory after it.
const kernelRelease = "5.15.0-fake"

// kernelModule is a module the simulated kernel can load, with the
// sysctls that appear once it is loaded.
type kernelModule struct {
	size    int
	deps    []string
	sysctls map[string]string
}

// availableModules are the modules of linux-modules-5.15 that Kubernetes,
// NFS and load-balancer deployments load. br_netfilter brings the
// net.bridge.bridge-nf-call-* sysctls, 1 by default
// (net/bridge/br_netfilter_hooks.c: brnf_call_iptables = 1).
var availableModules = map[string]kernelModule{
	"overlay":      {size: 151552},
	"bridge":       {size: 311296, deps: []string{"stp", "llc"}},
	"stp":          {size: 16384, deps: []string{"llc"}},
	"llc":          {size: 16384},
	"br_netfilter": {size: 32768, deps: []string{"bridge"}, sysctls: map[string]string{"net.bridge.bridge-nf-call-iptables": "1", "net.bridge.bridge-nf-call-ip6tables": "1", "net.bridge.bridge-nf-call-arptables": "1"}},
	"nf_conntrack": {size: 172032, sysctls: map[string]string{"net.netfilter.nf_conntrack_max": "262144"}},
	"ip_vs":        {size: 176128, deps: []string{"nf_conntrack"}},
	"ip_vs_rr":     {size: 16384, deps: []string{"ip_vs"}},
	"ip_vs_wrr":    {size: 16384, deps: []string{"ip_vs"}},
	"ip_vs_sh":     {size: 16384, deps: []string{"ip_vs"}},
	"nfs":          {size: 434176},
	"nfsd":         {size: 561152},
	"dm_thin_pool": {size: 81920},
	"rbd":          {size: 118784},
	"ip_tables":    {size: 32768},
	"iptable_nat":  {size: 16384, deps: []string{"ip_tables"}},
}

// builtinModules are modules compiled into Ubuntu's generic kernel
// (CONFIG_...=y in its config), as /lib/modules/RELEASE/modules.builtin
// lists them: one path per line relative to the module directory, the
// ".ko" file the module would be (modules.builtin(5); kmod reads it so
// that modprobe of a built-in module succeeds without loading anything,
// libkmod/libkmod-module.c, kmod_module_get_initstate: KMOD_MODULE_BUILTIN).
// Built-in modules never appear in /proc/modules (proc(5): "a list of the
// modules that have been loaded"), nor in lsmod.
var builtinModules = []string{
	"kernel/drivers/md/dm-mod.ko",
	"kernel/fs/ext4/ext4.ko",
	"kernel/fs/fuse/fuse.ko",
	"kernel/net/ipv6/ipv6.ko",
	"kernel/net/unix/unix.ko",
}

// builtinModule reports whether a module name (with '-' or '_') is built
// into the kernel.
func builtinModule(name string) bool {
	key := strings.ReplaceAll(name, "-", "_")
	return slices.ContainsFunc(builtinModules, func(f string) bool {
		return strings.ReplaceAll(strings.TrimSuffix(path.Base(f), ".ko"), "-", "_") == key
	})
}

// defaultSysctls are kernel parameters of a booted Ubuntu 22.04 VM
// (kernel defaults, and those of /usr/lib/sysctl.d and /etc/sysctl.d of
// procps and systemd, e.g. 50-pid-max.conf), as `sysctl` prints them.
var defaultSysctls = map[string]string{
	"net.ipv4.ip_forward":                "0",
	"net.ipv4.conf.all.forwarding":       "0",
	"net.ipv6.conf.all.forwarding":       "0",
	"net.ipv4.ip_local_port_range":       "32768\t60999",
	"net.ipv4.conf.all.rp_filter":        "2",
	"net.core.somaxconn":                 "4096",
	"vm.swappiness":                      "60",
	"vm.max_map_count":                   "65530",
	"vm.overcommit_memory":               "0",
	"kernel.panic":                       "0",
	"kernel.pid_max":                     "4194304",
	"kernel.panic_on_oops":               "0",
	"fs.inotify.max_user_watches":        "65536",
	"fs.inotify.max_user_instances":      "128",
	"net.ipv4.tcp_keepalive_time":        "7200",
	"net.netfilter.nf_conntrack_buckets": "65536",
}

// kernelState is the simulated kernel: loaded modules and parameters.
type kernelState struct {
	modules []string // loaded, in load order
	sysctls map[string]string
}

func newKernelState() kernelState {
	return kernelState{sysctls: maps.Clone(defaultSysctls)}
}

// LoadedModules returns the loaded kernel modules, sorted.
func (m *Machine) LoadedModules() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(slices.Values(m.kernel.modules))
}

// Sysctl returns the current value of a kernel parameter (dotted key)
// and whether the kernel has it.
func (m *Machine) Sysctl(key string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.kernel.sysctls[key]
	return v, ok
}

// loadModuleLocked loads a module and its dependencies, as modprobe does
// (modules.dep), returning false for a module the kernel does not have.
func (m *Machine) loadModuleLocked(name string) bool {
	name = strings.ReplaceAll(name, "-", "_")
	mod, ok := availableModules[name]
	if !ok {
		return false
	}
	if slices.Contains(m.kernel.modules, name) {
		return true
	}
	for _, d := range mod.deps {
		m.loadModuleLocked(d)
	}
	m.kernel.modules = append(m.kernel.modules, name)
	for k, v := range mod.sysctls {
		m.kernel.sysctls[k] = v
	}
	m.writeProcKernelLocked()
	return true
}

// writeProcKernelLocked renders /proc/modules (proc(5): name, size,
// reference count, dependents, state, address) and one /proc/sys file per
// parameter.
func (m *Machine) writeProcKernelLocked() {
	var b strings.Builder
	for i := len(m.kernel.modules) - 1; i >= 0; i-- {
		name := m.kernel.modules[i]
		var users []string
		for _, other := range m.kernel.modules {
			if slices.Contains(availableModules[other].deps, name) {
				users = append(users, other)
			}
		}
		deps := "-"
		if len(users) > 0 {
			deps = strings.Join(users, ",") + ","
		}
		fmt.Fprintf(&b, "%s %d %d %s Live 0x0000000000000000\n", name, availableModules[name].size, len(users), deps)
	}
	m.writeFile("/proc/modules", b.String(), 0o444)
	for k, v := range m.kernel.sysctls {
		m.writeFile("/proc/sys/"+strings.ReplaceAll(k, ".", "/"), v+"\n", 0o644)
	}
}

// kernelBootLocked is the kernel part of a boot: no module loaded, the
// default parameters, then systemd-modules-load (modules-load.d(5): every
// *.conf of /etc/modules-load.d, /run/modules-load.d and
// /usr/lib/modules-load.d, a module per line, '#' and ';' comments) and
// systemd-sysctl (sysctl.d(5): every *.conf of /etc/sysctl.d,
// /run/sysctl.d, /usr/lib/sysctl.d, in the lexical order of file names).
func (m *Machine) kernelBootLocked() {
	m.kernel = newKernelState()
	for _, f := range confFiles(m.fs(), "modules-load.d") {
		data, _ := m.fs().ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line != "" && line[0] != '#' && line[0] != ';' {
				m.loadModuleLocked(line)
			}
		}
	}
	for _, f := range confFiles(m.fs(), "sysctl.d") {
		data, _ := m.fs().ReadFile(f)
		for _, s := range parseSysctlConf(string(data)) {
			if _, ok := m.kernel.sysctls[s[0]]; ok {
				m.kernel.sysctls[s[0]] = s[1]
			}
		}
	}
	m.writeProcKernelLocked()
}

// confFiles lists the *.conf files of a systemd configuration directory,
// /etc overriding /run and /usr/lib by file name, in file-name order.
func confFiles(f *sshtest.FS, dir string) []string {
	byName := map[string]string{}
	for _, base := range []string{"/usr/lib/", "/run/", "/etc/"} {
		entries, _ := f.ReadDir(base + dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".conf") && !e.IsDir() {
				byName[e.Name()] = base + dir + "/" + e.Name()
			}
		}
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out
}

// parseSysctlConf reads sysctl.d lines: "key = value", '#' and ';'
// comments, keys with '/' separators turned into the dotted form, values
// with runs of white space kept as sysctl writes them (the kernel splits
// the fields), a leading '-' on a key (ignore failure) dropped.
func parseSysctlConf(data string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimPrefix(strings.TrimSpace(k), "-")
		out = append(out, [2]string{dotted(k), strings.Join(strings.Fields(v), "\t")})
	}
	return out
}

// dotted turns a key with '/' separators into sysctl's dotted form
// (sysctl(8): the two separators are swapped).
func dotted(k string) string {
	if !strings.Contains(k, "/") {
		return k
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, k)
}

// modprobeTool: modprobe [-a] [-n|--dry-run] [-q] [-v] MODULE..., after
// kmod's modprobe(8). A built-in module (modules.builtin) succeeds and
// loads nothing. Without -a only the first operand is a module (the
// rest would be its parameters, which are not modelled). Loading needs
// root: "modprobe: ERROR: could not insert 'M': Operation not permitted";
// an unknown module is "modprobe: FATAL: Module M not found in directory
// /lib/modules/RELEASE", exit 1 (kmod tools/modprobe.c).
func modprobeTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "anqv", long: []string{"all", "dry-run", "quiet", "verbose"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	mods := c.Operands
	if len(mods) == 0 {
		errf(p, "modprobe: ERROR: missing parameters. See -h.")
		return 1
	}
	if !c.Has("-a", "--all") && len(mods) > 1 {
		return notModelled(p, "module parameters (%s)", strings.Join(mods[1:], " "))
	}
	quiet := c.Has("-q", "--quiet")
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mod := range mods {
		if _, ok := availableModules[strings.ReplaceAll(mod, "-", "_")]; !ok && !builtinModule(mod) {
			if !quiet {
				errf(p, "modprobe: FATAL: Module %s not found in directory /lib/modules/%s", mod, kernelRelease)
			}
			return 1
		}
	}
	if c.Has("-n", "--dry-run") {
		return 0
	}
	for _, mod := range mods {
		key := strings.ReplaceAll(mod, "-", "_")
		if slices.Contains(m.kernel.modules, key) || builtinModule(mod) {
			continue
		}
		if !isRoot(p) {
			errf(p, "modprobe: ERROR: could not insert '%s': Operation not permitted", key)
			return 1
		}
		m.loadModuleLocked(key)
	}
	return 0
}

// lsmodTool: lsmod, which formats /proc/modules.
func lsmodTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	outf(p, "Module                  Size  Used by")
	data, _ := m.fs().ReadFile("/proc/modules")
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		used := f[2]
		if f[3] != "-" {
			used += " " + strings.TrimSuffix(f[3], ",")
		}
		outf(p, "%-19s %8s  %s", f[0], f[1], used)
	}
	return 0
}

// sysctlTool: procps-ng's sysctl(8) as 4.0 behaves: `sysctl [-n] [-e] [-q]
// KEY...` prints "key = value" (values only with -n); a missing key is
// "sysctl: cannot stat /proc/sys/KEY: No such file or directory" and exit
// 1 (-e: silent, exit 0); `sysctl [-q] -w KEY=VALUE...` and `sysctl -p
// [FILE...]` (default /etc/sysctl.conf) set parameters and print what they
// set, needing root: "sysctl: permission denied on key \"KEY\"", exit 1.
// `sysctl --system` applies the sysctl.d directories as systemd-sysctl
// does at boot. Messages as procps-ng 4.0.2 prints them (checked on Debian
// bookworm).
func sysctlTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "neqwpa", long: []string{"values", "ignore", "quiet", "write", "load", "system", "all"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	values, ignore, quiet := c.Has("-n", "--values"), c.Has("-e", "--ignore"), c.Has("-q", "--quiet")
	m.mu.Lock()
	defer m.mu.Unlock()
	rc := 0
	set := func(k, v string) {
		k = dotted(strings.TrimSpace(k))
		v = strings.Join(strings.Fields(v), "\t")
		if _, ok := m.kernel.sysctls[k]; !ok {
			if !ignore {
				errf(p, "sysctl: cannot stat /proc/sys/%s: No such file or directory", strings.ReplaceAll(k, ".", "/"))
				rc = 1
			}
			return
		}
		if !isRoot(p) {
			errf(p, "sysctl: permission denied on key \"%s\"", k)
			rc = 1
			return
		}
		m.kernel.sysctls[k] = v
		if !quiet {
			if values {
				outf(p, "%s", strings.ReplaceAll(v, "\t", " "))
			} else {
				outf(p, "%s = %s", k, strings.ReplaceAll(v, "\t", " "))
			}
		}
	}
	switch {
	case c.Has("--system"):
		for _, f := range confFiles(m.fs(), "sysctl.d") {
			outf(p, "* Applying %s ...", f)
			data, _ := m.fs().ReadFile(f)
			for _, s := range parseSysctlConf(string(data)) {
				set(s[0], s[1])
			}
		}
	case c.Has("-p", "--load"):
		files := c.Operands
		if len(files) == 0 {
			files = []string{"/etc/sysctl.conf"}
		}
		for _, f := range files {
			data, err := p.FS.ReadFile(path.Clean(f))
			if err != nil {
				errf(p, "sysctl: cannot open \"%s\": %s", f, sshtest.ErrMessage(err))
				rc = 1
				continue
			}
			for _, s := range parseSysctlConf(string(data)) {
				set(s[0], s[1])
			}
		}
	case c.Has("-w", "--write"):
		for _, a := range c.Operands {
			k, v, ok := strings.Cut(a, "=")
			if !ok {
				errf(p, "sysctl: \"%s\" must be of the form name=value", a)
				rc = 1
				continue
			}
			set(k, v)
		}
	case c.Has("-a", "--all"):
		for _, k := range slices.Sorted(maps.Keys(m.kernel.sysctls)) {
			outf(p, "%s = %s", k, m.kernel.sysctls[k])
		}
	default:
		if len(c.Operands) == 0 {
			return notModelled(p, "sysctl without a key")
		}
		for _, a := range c.Operands {
			if strings.Contains(a, "=") {
				return notModelled(p, "sysctl KEY=VALUE without -w")
			}
			k := dotted(a)
			v, ok := m.kernel.sysctls[k]
			switch {
			case !ok && ignore:
			case !ok:
				errf(p, "sysctl: cannot stat /proc/sys/%s: No such file or directory", strings.ReplaceAll(k, ".", "/"))
				rc = 1
			case values:
				outf(p, "%s", v)
			default:
				outf(p, "%s = %s", k, v)
			}
		}
	}
	m.writeProcKernelLocked()
	return rc
}

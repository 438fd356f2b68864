package system

import (
	"context"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Configuration directories read at boot by systemd-modules-load
// (modules-load.d(5)) and systemd-sysctl (sysctl.d(5)).
const (
	ModulesLoadDir = "/etc/modules-load.d"
	SysctlDir      = "/etc/sysctl.d"
)

// confName is the NAME of NAME.conf: a plain file name.
var confName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@+-]*$`)

// moduleName is a kernel module name as modprobe takes it: the module
// file's base name, letters, digits, '_' and '-' (modprobe treats them
// alike), shorter than the kernel's MODULE_NAME_LEN of 56
// (include/linux/module.h: 64 - sizeof(unsigned long)).
var moduleName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,54}$`)

// ModulesOptions configure [LoadKernelModules].
type ModulesOptions struct {
	// Name names the file ModulesLoadDir/NAME.conf the step owns
	// ("mgmtkit-k8s").
	Name string
	// Modules are the modules to load now and at every boot.
	Modules []string
}

// LoadKernelModules makes the kernel modules of opts loaded now and at
// boot: ModulesLoadDir/NAME.conf lists them, one per line
// (modules-load.d(5)), and `modprobe -a` loads those that /proc/modules
// does not list, unless the kernel has them built in (modules.builtin,
// read by the same command). Module names of opts are modprobe's: an
// alias (a name modules.alias maps to another module) is loaded, but
// /proc/modules lists it under its own name, so the step loads it again on
// every run. A converged host costs two commands (the file's probe and
// the modules' read).
func LoadKernelModules(ctx context.Context, h remote.Host, opts ModulesOptions) (lcm.Result, error) {
	var probs problems
	if !confName.MatchString(opts.Name) {
		probs.addf("Name", "%q is not a file name (letters, digits and _ . @ + -)", opts.Name)
	}
	if len(opts.Modules) == 0 {
		probs.addf("Modules", "no module to load")
	}
	seen := map[string]bool{}
	for i, m := range opts.Modules {
		at := "Modules[" + strconv.Itoa(i) + "]"
		switch {
		case !moduleName.MatchString(m):
			probs.addf(at, "%q is not a kernel module name (letters, digits, _ and -, not first, at most 55)", m)
		case seen[modKey(m)]:
			probs.addf(at, "module %s is listed twice", m)
		}
		seen[modKey(m)] = true
	}
	if err := probs.err(); err != nil {
		return lcm.Unchanged, err
	}
	file := path.Join(ModulesLoadDir, opts.Name+".conf")
	content := "# Managed by mgmtkit: kernel modules loaded at boot.\n" + strings.Join(opts.Modules, "\n") + "\n"
	var did []string
	changed, err := h.WriteFile(ctx, file, strings.NewReader(content), remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true})
	if err != nil {
		return lcm.Unchanged, err
	}
	if changed {
		did = append(did, "wrote "+file)
	}
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", loadedModulesScript, "mgmtkit-modules"}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return result(did), err
	}
	loaded := parseLoadedModules(string(out.Stdout))
	var load []string
	for _, m := range opts.Modules {
		if !loaded[modKey(m)] {
			load = append(load, m)
		}
	}
	if len(load) > 0 {
		// modprobe(8): -a, --all "Insert all module names on the command
		// line."
		if _, err := h.Run(ctx, sudo(append([]string{"modprobe", "-a"}, load...)...)); err != nil {
			return result(did), err
		}
		did = append(did, "loaded "+strings.Join(load, " "))
	}
	return result(did), nil
}

// loadedModulesScript prints /proc/modules, one line per loaded module,
// its name first (proc(5), /proc/modules), then a line "--builtin--" and
// the modules built into the running kernel, which /proc/modules never
// lists: /lib/modules/$(uname -r)/modules.builtin, one path of the ".ko"
// file the module would be per line ("kernel/fs/ext4/ext4.ko";
// modules.builtin(5), written by the kernel's build, read by kmod so that
// modprobe of a built-in module succeeds). A kernel without the file
// (one not installed from a package) lists none. Both are readable by
// anyone.
const loadedModulesScript = `set -eu
cat /proc/modules
echo --builtin--
f=/lib/modules/$(uname -r)/modules.builtin
if [ -r "$f" ]; then cat "$f"; fi`

// parseLoadedModules reads loadedModulesScript's output into the set of
// loaded and built-in modules, by modKey.
func parseLoadedModules(out string) map[string]bool {
	loaded := map[string]bool{}
	builtin := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "--builtin--":
			builtin = true
		case builtin:
			loaded[modKey(strings.TrimSuffix(path.Base(f[0]), ".ko"))] = true
		default:
			loaded[modKey(f[0])] = true
		}
	}
	return loaded
}

// modKey is a module name as /proc/modules spells it: modprobe(8) "treats
// - and _ as the same".
func modKey(m string) string { return strings.ReplaceAll(m, "-", "_") }

// sysctlKey is a sysctl variable name (sysctl.d(5), sysctl(8)): path
// components of /proc/sys separated by '.' (or all by '/', when a
// component holds a dot, as a VLAN interface's "eth0.100" does). The
// first character is a letter, digit or '_' (the top directories of
// /proc/sys are abi, debug, dev, fs, kernel, net, user, vm...): a leading
// '-' would reach `sudo sysctl KEY...` as an option ("-pFILE" loads any
// file as root), and in the file it means "ignore a failure to set this"
// (sysctl.d(5) since systemd 243, sysctl.conf(5) since procps-ng 3.3.16),
// as a leading '#' or ';' makes a comment.
var (
	sysctlDotted  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_:@+-]+)+$`)
	sysctlSlashed = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*(/[A-Za-z0-9_.:@+-]+)+$`)
)

// SysctlOptions configure [ApplySysctls].
type SysctlOptions struct {
	// Name names the file SysctlDir/NAME.conf the step owns
	// ("90-mgmtkit-k8s": files are applied in the lexical order of their
	// names, the last setting of a key winning).
	Name string
	// Settings are the kernel parameters, key → value
	// ("net.ipv4.ip_forward" → "1"). Values of several fields are
	// separated by spaces ("32768 60999").
	Settings map[string]string
}

// ApplySysctls makes the kernel parameters of opts hold now and at boot:
// SysctlDir/NAME.conf holds them as "key = value" lines, sorted by key
// (sysctl.d(5)), and `sysctl -p FILE` applies the file when a current
// value (as `sysctl KEY...` prints it) differs. A key the kernel does not
// have (net.bridge.* before br_netfilter is loaded) counts as differing,
// and `sysctl -p` then fails with sysctl's message. Values compare by
// their fields, so "32768 60999" matches the kernel's tab-separated
// answer. A converged host costs two commands.
func ApplySysctls(ctx context.Context, h remote.Host, opts SysctlOptions) (lcm.Result, error) {
	var probs problems
	if !confName.MatchString(opts.Name) {
		probs.addf("Name", "%q is not a file name (letters, digits and _ . @ + -)", opts.Name)
	}
	if len(opts.Settings) == 0 {
		probs.addf("Settings", "no kernel parameter to set")
	}
	keys := slices.Sorted(maps.Keys(opts.Settings))
	for _, k := range keys {
		at := fmt.Sprintf("Settings[%q]", k)
		v := opts.Settings[k]
		switch {
		case !sysctlDotted.MatchString(k) && !sysctlSlashed.MatchString(k):
			probs.addf(at, "%q is not a sysctl key (components of letters, digits, _ and -, separated by '.' or all by '/', the first character not -)", k)
		case strings.TrimSpace(v) == "":
			probs.addf(at, "the value is empty")
		case strings.ContainsAny(v, "\n\r\x00"):
			probs.addf(at, "the value %q spans lines", v)
		}
	}
	if err := probs.err(); err != nil {
		return lcm.Unchanged, err
	}
	file := path.Join(SysctlDir, opts.Name+".conf")
	var b strings.Builder
	b.WriteString("# Managed by mgmtkit: kernel parameters set at boot.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, strings.Join(strings.Fields(opts.Settings[k]), " "))
	}
	var did []string
	changed, err := h.WriteFile(ctx, file, strings.NewReader(b.String()), remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true})
	if err != nil {
		return lcm.Unchanged, err
	}
	if changed {
		did = append(did, "wrote "+file)
	}
	// sysctl exits 1 when a key does not exist (procps-ng 4.0.2) and
	// prints the others.
	out, err := h.Run(ctx, remote.Cmd{Args: append([]string{"sysctl"}, keys...), OKExit: []int{1, 255}, Sudo: true, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return result(did), err
	}
	current := parseSysctl(out.Stdout)
	var differ []string
	for _, k := range keys {
		if cur, ok := current[dottedKey(k)]; !ok || !slices.Equal(strings.Fields(cur), strings.Fields(opts.Settings[k])) {
			differ = append(differ, k)
		}
	}
	if len(differ) > 0 {
		if _, err := h.Run(ctx, sudo("sysctl", "-p", file)); err != nil {
			return result(did), err
		}
		did = append(did, "set "+strings.Join(differ, " "))
	}
	return result(did), nil
}

// parseSysctl parses what `sysctl KEY...` prints, "key = value" lines,
// into key → value; keys are in their dotted form.
func parseSysctl(out []byte) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, " = ")
		if ok {
			m[k] = v
		}
	}
	return m
}

// dottedKey is how sysctl(8) prints a key given in the slashed form: the
// separators become dots and the dots inside components slashes.
func dottedKey(k string) string {
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

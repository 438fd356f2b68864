package system

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// UnitDir is where [ConfigureUnit] writes unit files and drop-ins: the
// administrator's directory, which takes precedence over the packages'
// /lib/systemd/system (systemd.unit(5), "Unit File Load Path").
const UnitDir = "/etc/systemd/system"

// PendingDir holds a marker per unit whose restart [ConfigureUnit] owes:
// written before the unit's files change, removed once the unit has been
// restarted and is active. It is under /run (a tmpfs), so a reboot, which
// starts the unit with its new configuration anyway, clears it.
const PendingDir = "/run/mgmtkit/restart-pending"

// DefaultActiveTimeout bounds how long [ConfigureUnit] and [EnsureActive]
// wait for a unit to become active.
const DefaultActiveTimeout = time.Minute

// unitNameRe is a unit name as systemd.unit(5) allows one: "a unit name
// prefix followed by a suffix"; names of up to 256 characters made of
// ASCII letters, digits, ":", "-", "_", ".", "\" and "@" (for instances).
var unitNameRe = regexp.MustCompile(`^[A-Za-z0-9:_.\\@-]{1,256}$`)

// unitSuffixes are the unit types of systemd.unit(5).
var unitSuffixes = []string{".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target", ".path", ".timer", ".slice", ".scope"}

// fullUnitName adds ".service" to a name without a unit type, as systemctl
// does.
func fullUnitName(name string) string {
	if slices.Contains(unitSuffixes, path.Ext(name)) {
		return name
	}
	return name + ".service"
}

// checkUnit reports what is wrong with a unit name ("" if nothing).
func checkUnit(name string) string {
	if !unitNameRe.MatchString(name) || strings.HasPrefix(name, "-") || strings.HasPrefix(name, ".") {
		return fmt.Sprintf("%q is not a systemd unit name (letters, digits and : - _ . \\ @, not starting with - or .)", name)
	}
	return ""
}

// UnitOptions configure [ConfigureUnit].
type UnitOptions struct {
	// Unit is the unit's name ("docker" means "docker.service").
	Unit string
	// Files are the unit's files the step owns, path → content: the unit
	// file itself (UnitDir/UNIT), drop-ins (UnitDir/UNIT.d/NAME.conf) and
	// environment files beside them (UnitDir/UNIT.d/NAME.env, which
	// systemd does not read as drop-ins; a drop-in names one in
	// EnvironmentFile=). Other paths are refused: the daemon's own
	// configuration goes in Inputs. A change of any of them restarts the
	// unit (a reload cannot apply a unit's own settings).
	//
	// A secret belongs in an environment file written with mode 0600
	// (Modes), not in Environment=: systemd.exec(5) warns that
	// Environment= values are exposed to unprivileged clients over D-Bus
	// (`systemctl show -p Environment`), whatever the drop-in's mode.
	Files map[string]string
	// Inputs are the daemon's own input files the step owns, path →
	// content: its configuration (/etc/containerd/config.toml), anywhere
	// but under the unit's own directories (those go in Files). The step
	// writes the ones that differ, under the unit's marker like Files
	// (see [ConfigureUnit]), and then reloads the unit (`systemctl
	// reload-or-restart`, a reload where the unit has ExecReload=), or
	// restarts it with InputsNeedRestart. Nothing but the unit reads
	// them: a change of Inputs is no reason for `systemctl
	// daemon-reload`.
	Inputs map[string]string
	// Absent are files of the unit (same paths as Files) that must not
	// exist, such as a drop-in an earlier run wrote and whose setting is
	// gone. Removing one counts as a change of the unit's files.
	Absent []string
	// Mode is the mode of every file of Files and Inputs that Modes does
	// not name; 0644 when zero.
	Mode fs.FileMode
	// Modes are the modes of single files of Files or Inputs, path →
	// mode: 0600 for an environment file that holds credentials (a
	// proxy URL with a password) beside a 0644 unit file.
	Modes map[string]fs.FileMode
	// InputsChanged says that something the unit reads, but this step
	// does not write, changed (the caller wrote /etc/docker/daemon.json):
	// the unit is reloaded as for a change of Inputs. Give such a file
	// in Inputs where possible: InputsChanged is the caller's word for
	// this run only: the step owes the reload from the moment it writes
	// its marker (see [ConfigureUnit]), but if the caller's run stops
	// between changing the input and this call, the next run sees no
	// change and nothing is owed.
	InputsChanged bool
	// InputsNeedRestart makes a change of Inputs (or InputsChanged)
	// restart a running unit (`systemctl restart`), as a change of its
	// files does, rather than reload-or-restart it: for an input the
	// daemon reads only when it starts (containerd's config.toml), or
	// of which a reload applies only part (dockerd re-reads only some of
	// daemon.json's settings on SIGHUP).
	InputsNeedRestart bool
	// NoEnable leaves the unit's enablement as it is; by default the unit
	// is enabled, so that it starts at boot.
	NoEnable bool
	// NoStart leaves a unit that does not run stopped, and does not wait
	// for the unit to be active: for a unit another tool starts once it
	// has configured it (the kubelet, which kubeadm starts). A running
	// unit whose restart or reload is owed still gets it; one that does
	// not run reads its files when it starts, and owes nothing.
	NoStart bool
	// ActiveTimeout bounds the wait for the unit to be active after a
	// start or restart; [DefaultActiveTimeout] when zero.
	ActiveTimeout time.Duration
}

// unitState is the part of `systemctl show` ConfigureUnit looks at, with
// the hashes of the unit's files and the restart owed.
type unitState struct {
	props map[string]string
	// pending says a marker owes a restart or reload; reloadOnly that a
	// reload pays it.
	pending, reloadOnly bool
	files               map[string]string // path → sha256 or "absent"
}

// unitStateScript prints `systemctl show`'s properties for the unit $1,
// "Pending=WORD" when the marker $2 exists (its first word, "reload" or
// "restart"), then "FILE=HASH" (or "FILE=absent") for each file that
// follows. One command for everything ConfigureUnit decides on.
const unitStateScript = `set -eu
unit=$1 marker=$2
shift 2
systemctl show --property=LoadState,ActiveState,UnitFileState,NeedDaemonReload "$unit"
if [ -e "$marker" ]; then read -r w _ < "$marker" || :; echo "Pending=${w:-restart}"; fi
for f in "$@"; do
  if [ -e "$f" ]; then s=$(sha256sum < "$f"); echo "$f=${s%% *}"; else echo "$f=absent"; fi
done`

func readUnitState(ctx context.Context, h remote.Host, unit, marker string, files []string) (unitState, error) {
	args := append([]string{"sh", "-c", unitStateScript, "mgmtkit-unit-state", unit, marker}, files...)
	out, err := h.Run(ctx, remote.Cmd{Args: args, Sudo: true, Idempotent: true, ReadOnly: true})
	if err != nil {
		return unitState{}, err
	}
	st := unitState{props: map[string]string{}, files: map[string]string{}}
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		k, v, ok := strings.Cut(line, "=")
		switch {
		case !ok:
		case strings.HasPrefix(k, "/"):
			// A hash or "absent" holds no '=': the file is what
			// precedes the last one.
			i := strings.LastIndexByte(line, '=')
			st.files[line[:i]] = line[i+1:]
		case k == "Pending":
			st.pending, st.reloadOnly = true, PendingReloadOnly([]byte(v))
		default:
			st.props[k] = v
		}
	}
	return st, nil
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// checkUnitOptions validates o and returns the unit's full name.
func checkUnitOptions(o UnitOptions) (string, error) {
	var probs problems
	if msg := checkUnit(o.Unit); msg != "" {
		probs.addf("Unit", "%s", msg)
		return "", probs.err()
	}
	unit := fullUnitName(o.Unit)
	unitDir := path.Join(UnitDir, unit+".d")
	own := func(at, p string) {
		dir, base := path.Split(p)
		switch {
		case p == path.Join(UnitDir, unit):
		case dir == unitDir+"/" && (strings.HasSuffix(base, ".conf") || strings.HasSuffix(base, ".env")):
			// The state probe prints "FILE=HASH" lines: a name with
			// '=' or a line break would be misread.
			if !confName.MatchString(strings.TrimSuffix(strings.TrimSuffix(base, ".conf"), ".env")) {
				probs.addf(at, "drop-in name %q is not NAME.conf or NAME.env with NAME of letters, digits and _ . @ + -, starting with a letter or digit", base)
			}
		default:
			probs.addf(at, "%q is neither %s nor a drop-in %s/NAME.conf or NAME.env (the daemon's own configuration goes in Inputs)", p, path.Join(UnitDir, unit), unitDir)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(o.Files)) {
		own(fmt.Sprintf("Files[%q]", p), p)
	}
	for _, p := range slices.Sorted(maps.Keys(o.Inputs)) {
		at := fmt.Sprintf("Inputs[%q]", p)
		switch {
		case !path.IsAbs(p) || path.Clean(p) != p || p == "/":
			probs.addf(at, "%q is not a clean absolute file path", p)
		case strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }):
			probs.addf(at, "%q holds a control character", p)
		case p == path.Join(UnitDir, unit) || strings.HasPrefix(p, unitDir+"/"):
			probs.addf(at, "%s is one of the unit's own files: give it in Files", p)
		case strings.HasSuffix(p, stagedSuffix):
			probs.addf(at, "%q ends in %s, the suffix of a staged file", p, stagedSuffix)
		}
	}
	for i, p := range o.Absent {
		own("Absent["+strconv.Itoa(i)+"]", p)
		if _, ok := o.Files[p]; ok {
			probs.addf("Absent["+strconv.Itoa(i)+"]", "%s is also in Files", p)
		}
	}
	if o.Mode&^fs.ModePerm != 0 {
		probs.addf("Mode", "%v is not a permission mode", o.Mode)
	}
	for _, p := range slices.Sorted(maps.Keys(o.Modes)) {
		_, file := o.Files[p]
		_, input := o.Inputs[p]
		switch {
		case !file && !input:
			probs.addf(fmt.Sprintf("Modes[%q]", p), "%s is neither in Files nor in Inputs", p)
		case o.Modes[p]&^fs.ModePerm != 0 || o.Modes[p] == 0:
			probs.addf(fmt.Sprintf("Modes[%q]", p), "%v is not a permission mode", o.Modes[p])
		}
	}
	if o.ActiveTimeout < 0 {
		probs.addf("ActiveTimeout", "must not be negative")
	}
	return unit, probs.err()
}

// mode is the mode of a file of Files or Inputs.
func (o UnitOptions) mode(p string) fs.FileMode {
	return cmp.Or(o.Modes[p], o.Mode, 0o644)
}

// write is the write of a file of Files or Inputs, root-owned.
func (o UnitOptions) write(p, content string) remote.FileWrite {
	return remote.FileWrite{Path: p, Content: []byte(content), Options: remote.FileOptions{Mode: o.mode(p), Owner: "root", Group: "root", Sudo: true}}
}

// ConfigureUnit makes a systemd unit run with the files opts gives it: the
// unit file and drop-ins hold their content (and opts.Absent ones are
// gone), and so do the daemon's own input files (opts.Inputs); `systemctl
// daemon-reload` runs only when a unit file changed; the unit is enabled
// (unless opts.NoEnable) and started (unless opts.NoStart); a running unit
// (one active, activating, reloading or deactivating) is restarted only
// when its files changed (`systemctl restart`: a reload cannot apply a
// unit's own settings) or reloaded-or-restarted when its inputs changed
// (opts.Inputs, or opts.InputsChanged for a file the caller wrote)
// (`systemctl reload-or-restart`: reload where the unit supports it; a
// restart with opts.InputsNeedRestart or when the unit is activating or
// deactivating); and the step waits (bounded by opts.ActiveTimeout, not
// with opts.NoStart) until `systemctl is-active` says active. On a
// converged host that is one command.
//
// A restart owed by the unit's files or inputs is never lost: before it
// changes a file (or when opts.InputsChanged) the step writes the unit's
// marker ([PendingMarker]), which records whether a reload pays it, and
// it removes the marker only after the restart (or reload), so a run that
// fails in between (a dropped connection, a failed daemon-reload) leaves
// the marker and the next run restarts (or reloads) the unit even though
// the files already match. A marker some other step wrote (a registry's
// trust, which edits config.toml by itself) is paid the same way. What
// happens to an input the step does not write before the step runs is the
// caller's to remember: see [UnitOptions.InputsChanged]. systemd's own
// NeedDaemonReload=yes (a file changed behind its back) also makes the
// step reload and restart.
func ConfigureUnit(ctx context.Context, h remote.Host, opts UnitOptions) (lcm.Result, error) {
	unit, err := checkUnitOptions(opts)
	if err != nil {
		return lcm.Unchanged, err
	}
	return configureUnit(ctx, h, unit, opts, nil)
}

// configureUnit is ConfigureUnit, and ConfigureDaemon with check: the
// changed inputs are then staged and checked before they replace the old
// ones.
func configureUnit(ctx context.Context, h remote.Host, unit string, opts UnitOptions, check func(map[string]string) []string) (lcm.Result, error) {
	marker := PendingMarker(unit)
	files := slices.Sorted(maps.Keys(opts.Files))
	inputs := slices.Sorted(maps.Keys(opts.Inputs))
	paths := slices.Concat(files, inputs, opts.Absent)
	st, err := readUnitState(ctx, h, unit, marker, paths)
	if err != nil {
		return lcm.Unchanged, err
	}
	if st.props["LoadState"] == "not-found" && len(opts.Files) == 0 {
		return lcm.Unchanged, fmt.Errorf("system: %s: unit %s not found", h.Name(), unit)
	}
	var writes, inputWrites []remote.FileWrite
	for _, p := range files {
		if st.files[p] != sha(opts.Files[p]) {
			writes = append(writes, opts.write(p, opts.Files[p]))
		}
	}
	for _, p := range inputs {
		if st.files[p] != sha(opts.Inputs[p]) {
			inputWrites = append(inputWrites, opts.write(p, opts.Inputs[p]))
		}
	}
	var removes []string
	for _, p := range opts.Absent {
		if st.files[p] != "absent" {
			removes = append(removes, p)
		}
	}
	filesChanged := len(writes) > 0 || len(removes) > 0
	inputsChanged := len(inputWrites) > 0 || opts.InputsChanged
	reload := filesChanged || st.props["NeedDaemonReload"] == "yes"
	// A unit's own settings (ExecStart=, Environment= in a drop-in) take
	// effect only when its process starts anew: a reload merely signals
	// the running process (systemd.service(5), ExecReload=). So changed
	// files, and a restart owed by an earlier run, mean `restart`; inputs
	// the daemon re-reads (its own configuration file) mean
	// `reload-or-restart`.
	fullRestart := reload || (st.pending && !st.reloadOnly) || (inputsChanged && opts.InputsNeedRestart)
	restart := fullRestart || inputsChanged || st.pending

	// The marker goes first, in the same commit as the files: from here
	// on a restart (or reload) is owed until it has happened. One that
	// owes a reload is made to owe a restart when this run's change needs
	// one.
	owesRestart := filesChanged || (inputsChanged && opts.InputsNeedRestart)
	var mark *remote.FileWrite
	if (filesChanged || inputsChanged) && (!st.pending || (st.reloadOnly && owesRestart)) {
		m := PendingMarkerFile(unit, !owesRestart)
		mark = &m
	}
	var did []string
	if check != nil && len(inputWrites) > 0 {
		if err := replaceChecked(ctx, h, inputWrites, mark, check, opts.Inputs); err != nil {
			return lcm.Unchanged, err
		}
		mark = nil
		for _, w := range inputWrites {
			did = append(did, "wrote "+w.Path)
		}
	} else {
		writes = append(writes, inputWrites...)
	}
	if mark != nil {
		writes = append([]remote.FileWrite{*mark}, writes...)
	}
	if len(writes) > 0 {
		if _, err := remote.WriteFiles(ctx, h, writes); err != nil {
			return result(did), err
		}
		for _, w := range writes {
			if w.Path != marker {
				did = append(did, "wrote "+w.Path)
			}
		}
	}
	if len(removes) > 0 {
		if _, err := remote.RemoveFiles(ctx, h, removes, []string{path.Join(UnitDir, unit+".d")}, remote.FileOptions{Sudo: true}); err != nil {
			return result(did), err
		}
		for _, p := range removes {
			did = append(did, "removed "+p)
		}
	}
	if reload {
		if _, err := h.Run(ctx, sudo("systemctl", "daemon-reload")); err != nil {
			return result(did), err
		}
	}
	if fs := st.props["UnitFileState"]; !opts.NoEnable && (fs == "disabled" || fs == "") {
		// Only a disabled unit (or one that did not exist before this
		// run): static, generated, indirect and the like cannot be
		// enabled, and enabled ones need nothing.
		if _, err := h.Run(ctx, sudo("systemctl", "enable", unit)); err != nil {
			return result(did), err
		}
		did = append(did, "enabled "+unit)
	}
	// ActiveState (org.freedesktop.systemd1(5)): only an inactive or
	// failed unit runs no process. One activating, reloading or
	// deactivating (or in a state a newer systemd adds) runs one that
	// may hold the old configuration, and a start would merge into the
	// start job under way or be redundant (src/core/job.c,
	// job_type_is_redundant): the restart owed must be a restart.
	state := st.props["ActiveState"]
	active := state == "active"
	running := state != "inactive" && state != "failed" && state != ""
	switch {
	case fullRestart && running:
		if _, err := h.Run(ctx, sudo("systemctl", "restart", unit)); err != nil {
			return result(did), err
		}
		did = append(did, "restarted "+unit)
	case restart && (active || state == "reloading"):
		// systemctl(1): reload-or-restart reloads a unit that supports
		// it and restarts one that does not.
		if _, err := h.Run(ctx, sudo("systemctl", "reload-or-restart", unit)); err != nil {
			return result(did), err
		}
		did = append(did, "reloaded or restarted "+unit)
	case restart && running:
		// reload-or-restart of a unit that can reload but is not
		// active (activating, deactivating) becomes a start
		// (src/core/job.c, job_type_collapse: JOB_RELOAD_OR_START),
		// which would not apply the input.
		if _, err := h.Run(ctx, sudo("systemctl", "restart", unit)); err != nil {
			return result(did), err
		}
		did = append(did, "restarted "+unit)
	case !running && !opts.NoStart:
		if _, err := h.Run(ctx, sudo("systemctl", "start", unit)); err != nil {
			return result(did), err
		}
		did = append(did, "started "+unit)
	}
	if (restart || !active) && !opts.NoStart {
		if err := waitActive(ctx, h, unit, cmp.Or(opts.ActiveTimeout, DefaultActiveTimeout)); err != nil {
			return result(did), err
		}
	}
	if restart || st.pending {
		if _, err := remote.RemoveFiles(ctx, h, []string{marker}, nil, remote.FileOptions{Sudo: true}); err != nil {
			return result(did), err
		}
	}
	return result(did), nil
}

// sudo is an idempotent command run as root.
func sudo(args ...string) remote.Cmd { return remote.Cmd{Args: args, Sudo: true, Idempotent: true} }

// isActive asks `systemctl is-active`: exit 0 for active, 3 for inactive
// or failed (systemctl(1), "is-active PATTERN...": "Returns an exit code
// 0 if at least one is active"; LSB status codes 1-4 otherwise).
func isActive(ctx context.Context, h remote.Host, unit string) (bool, string, error) {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"systemctl", "is-active", unit}, OKExit: []int{1, 2, 3, 4}, Idempotent: true, ReadOnly: true})
	if err != nil {
		return false, "", err
	}
	return out.ExitCode == 0, strings.TrimSpace(string(out.Stdout)), nil
}

// waitActive waits until systemctl is-active says active.
func waitActive(ctx context.Context, h remote.Host, unit string, timeout time.Duration) error {
	return Wait(ctx, unit+" to be active", timeout, time.Second, func(ctx context.Context) (bool, error) {
		ok, state, err := isActive(ctx, h, unit)
		if err != nil || ok {
			return ok, err
		}
		return false, fmt.Errorf("systemctl is-active %s: %s", unit, cmp.Or(state, "not active"))
	})
}

// EnsureActive starts and enables unit when `systemctl is-active` says it
// is not active (`systemctl enable --now`), then waits until it is, for at
// most [DefaultActiveTimeout]. An active unit costs one command and is left
// as it is, enabled or not.
func EnsureActive(ctx context.Context, h remote.Host, unit string) (lcm.Result, error) {
	if msg := checkUnit(unit); msg != "" {
		return lcm.Unchanged, problems{{Path: "unit", Message: msg}}.err()
	}
	ok, _, err := isActive(ctx, h, unit)
	if err != nil || ok {
		return lcm.Unchanged, err
	}
	if _, err := h.Run(ctx, sudo("systemctl", "enable", "--now", unit)); err != nil {
		return lcm.Unchanged, err
	}
	res := lcm.Changed("started " + unit)
	return res, waitActive(ctx, h, unit, DefaultActiveTimeout)
}

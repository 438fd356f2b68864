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
	// EnvironmentFile=). Other paths are refused.
	//
	// A secret belongs in an environment file written with Mode 0600, not
	// in Environment=: systemd.exec(5) warns that Environment= values are
	// exposed to unprivileged clients over D-Bus (`systemctl show -p
	// Environment`), whatever the drop-in's mode.
	Files map[string]string
	// Absent are files of the unit (same paths as Files) that must not
	// exist, such as a drop-in an earlier run wrote and whose setting is
	// gone. Removing one counts as a change of the unit's files.
	Absent []string
	// Mode is the mode of every file in Files; 0644 when zero. Use 0600
	// when a file holds credentials (a proxy URL with a password).
	Mode fs.FileMode
	// InputsChanged says that something the unit reads, but this step
	// does not write, changed (the caller wrote /etc/docker/daemon.json):
	// a running unit gets `systemctl reload-or-restart`, a reload where
	// the unit has ExecReload= (systemd.service(5)). A reload applies
	// only what the daemon re-reads on SIGHUP or its ExecReload= command
	// (dockerd, for one, re-reads only some of daemon.json's settings);
	// set InputsNeedRestart when the input needs a restart, or pass it to
	// the unit through Files (an Environment= drop-in), which always
	// restarts. InputsChanged is the caller's word for this run only:
	// the step owes the reload from the moment it writes its marker (see
	// [ConfigureUnit]), but if the caller's run stops between changing
	// the input and this call, the next run sees no change and nothing
	// is owed.
	InputsChanged bool
	// InputsNeedRestart makes InputsChanged restart a running unit
	// (`systemctl restart`), as a change of its files does, rather than
	// reload-or-restart it.
	InputsNeedRestart bool
	// NoEnable leaves the unit's enablement as it is; by default the unit
	// is enabled, so that it starts at boot.
	NoEnable bool
	// ActiveTimeout bounds the wait for the unit to be active after a
	// start or restart; [DefaultActiveTimeout] when zero.
	ActiveTimeout time.Duration
}

// unitState is the part of `systemctl show` ConfigureUnit looks at, with
// the hashes of the unit's files and whether a restart is owed.
type unitState struct {
	props   map[string]string
	pending bool
	files   map[string]string // path → sha256 or "absent"
}

// unitStateScript prints `systemctl show`'s properties for the unit $1,
// "Pending=yes" when the marker $2 exists, then "FILE=HASH" (or
// "FILE=absent") for each file that follows. One command for everything
// ConfigureUnit decides on.
const unitStateScript = `set -eu
unit=$1 marker=$2
shift 2
systemctl show --property=LoadState,ActiveState,UnitFileState,NeedDaemonReload "$unit"
if [ -e "$marker" ]; then echo Pending=yes; fi
for f in "$@"; do
  if [ -e "$f" ]; then s=$(sha256sum < "$f"); echo "$f=${s%% *}"; else echo "$f=absent"; fi
done`

func readUnitState(ctx context.Context, h remote.Host, unit, marker string, files []string) (unitState, error) {
	args := append([]string{"sh", "-c", unitStateScript, "mgmtkit-unit-state", unit, marker}, files...)
	out, err := h.Run(ctx, remote.Cmd{Args: args, Sudo: true, Idempotent: true})
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
			st.pending = v == "yes"
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
	own := func(at, p string) {
		dir, base := path.Split(p)
		switch {
		case p == path.Join(UnitDir, unit):
		case dir == path.Join(UnitDir, unit+".d")+"/" && (strings.HasSuffix(base, ".conf") || strings.HasSuffix(base, ".env")):
			// The state probe prints "FILE=HASH" lines: a name with
			// '=' or a line break would be misread.
			if !confName.MatchString(strings.TrimSuffix(strings.TrimSuffix(base, ".conf"), ".env")) {
				probs.addf(at, "drop-in name %q is not NAME.conf or NAME.env with NAME of letters, digits and _ . @ + -, starting with a letter or digit", base)
			}
		default:
			probs.addf(at, "%q is neither %s nor a drop-in %s/NAME.conf or NAME.env", p, path.Join(UnitDir, unit), path.Join(UnitDir, unit+".d"))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(o.Files)) {
		own(fmt.Sprintf("Files[%q]", p), p)
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
	if o.ActiveTimeout < 0 {
		probs.addf("ActiveTimeout", "must not be negative")
	}
	return unit, probs.err()
}

// ConfigureUnit makes a systemd unit run with the files opts gives it: the
// unit file and drop-ins hold their content (and opts.Absent ones are
// gone), `systemctl daemon-reload` runs only when a file changed, the unit
// is enabled (unless opts.NoEnable) and started, a running unit (one
// active, activating, reloading or deactivating) is restarted only when
// its files changed (`systemctl restart`: a reload cannot apply a unit's
// own settings) or reloaded-or-restarted when opts.InputsChanged says a
// file the daemon re-reads changed (`systemctl reload-or-restart`: reload
// where the unit supports it; a restart with opts.InputsNeedRestart or
// when the unit is activating or deactivating), and the step waits
// (bounded by opts.ActiveTimeout) until `systemctl is-active` says active.
// On a converged host that is one command.
//
// A restart owed by the unit's files is never lost: before it changes a
// file (or when opts.InputsChanged) the step writes a marker under
// [PendingDir] and it removes the marker only after the restart (or
// reload), so a run that fails in between (a dropped connection, a failed
// daemon-reload) leaves the marker and the next run restarts the unit
// even though the files already match; a marker left by an
// opts.InputsChanged run is paid with a restart, since the next run no
// longer knows whether a reload would do. What happens to an input the
// step does not write before the step runs is the caller's to remember:
// see [UnitOptions.InputsChanged]. systemd's own NeedDaemonReload=yes (a
// file changed behind its back) also makes the step reload and restart.
func ConfigureUnit(ctx context.Context, h remote.Host, opts UnitOptions) (lcm.Result, error) {
	unit, err := checkUnitOptions(opts)
	if err != nil {
		return lcm.Unchanged, err
	}
	marker := path.Join(PendingDir, unit)
	paths := slices.Sorted(maps.Keys(opts.Files))
	paths = append(paths, opts.Absent...)
	st, err := readUnitState(ctx, h, unit, marker, paths)
	if err != nil {
		return lcm.Unchanged, err
	}
	if st.props["LoadState"] == "not-found" && len(opts.Files) == 0 {
		return lcm.Unchanged, fmt.Errorf("system: %s: unit %s not found", h.Name(), unit)
	}
	var writes []remote.FileWrite
	for _, p := range paths[:len(opts.Files)] {
		if st.files[p] != sha(opts.Files[p]) {
			writes = append(writes, remote.FileWrite{Path: p, Content: []byte(opts.Files[p]), Options: remote.FileOptions{Mode: cmp.Or(opts.Mode, 0o644), Owner: "root", Group: "root", Sudo: true}})
		}
	}
	var removes []string
	for _, p := range opts.Absent {
		if st.files[p] != "absent" {
			removes = append(removes, p)
		}
	}
	filesChanged := len(writes) > 0 || len(removes) > 0
	reload := filesChanged || st.props["NeedDaemonReload"] == "yes"
	// A unit's own settings (ExecStart=, Environment= in a drop-in) take
	// effect only when its process starts anew: a reload merely signals
	// the running process (systemd.service(5), ExecReload=). So changed
	// files, and a restart owed by an earlier run, mean `restart`; inputs
	// the daemon re-reads (its own configuration file) mean
	// `reload-or-restart`.
	fullRestart := reload || st.pending || (opts.InputsChanged && opts.InputsNeedRestart)
	restart := fullRestart || opts.InputsChanged

	var did []string
	if filesChanged || (opts.InputsChanged && !st.pending) {
		// The marker first, in the same commit as the files: from here
		// on a restart is owed until it has happened.
		writes = append([]remote.FileWrite{{Path: marker, Content: []byte("mgmtkit: " + unit + " must be restarted\n"), Options: remote.FileOptions{Mode: 0o644, Sudo: true}}}, writes...)
	}
	if len(writes) > 0 {
		if _, err := remote.WriteFiles(ctx, h, writes); err != nil {
			return lcm.Unchanged, err
		}
		for _, w := range writes[1:] {
			did = append(did, "wrote "+w.Path)
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
	case !running:
		if _, err := h.Run(ctx, sudo("systemctl", "start", unit)); err != nil {
			return result(did), err
		}
		did = append(did, "started "+unit)
	}
	if restart || !active {
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
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"systemctl", "is-active", unit}, OKExit: []int{1, 2, 3, 4}, Idempotent: true})
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

package system

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// stagedSuffix ends the name of a staged input: DIR/.NAME.mgmtkit-new,
// beside DIR/NAME so that the rename that puts it in place is atomic
// (rename(2) within one file system), and hidden, with a suffix of its
// own, so that a daemon that reads a directory of NAME.cfg or NAME.conf
// files does not take a staged one left by a lost connection.
const stagedSuffix = ".mgmtkit-new"

// StagedPath returns where [ConfigureDaemon] stages a new version of
// file: /etc/haproxy/.haproxy.cfg.mgmtkit-new for /etc/haproxy/haproxy.cfg.
func StagedPath(file string) string {
	dir, base := path.Split(file)
	return dir + "." + base + stagedSuffix
}

// DaemonOptions configure [ConfigureDaemon]: a unit (and its files) as
// [ConfigureUnit] takes it, whose Inputs are the daemon's configuration,
// and the daemon's own check of a configuration.
type DaemonOptions struct {
	UnitOptions
	// Check returns the argv (a [remote.Cmd]'s Args, run as root) of the
	// daemon's own validator for the new configuration: staged maps
	// every path of Inputs to the file the validator must read instead,
	// the staged copy ([StagedPath]) of a file that changes and the file
	// itself for one that does not. It must exit 0 when the configuration
	// is valid and non-zero when it is not, as `haproxy -c -f FILE` and
	// `keepalived --config-test -f FILE` do. Required.
	//
	// A configuration of several files that name each other (an include,
	// a certificate path) is checked as the staged main file names them:
	// the live ones, not the staged.
	Check func(staged map[string]string) []string
}

// ConfigureDaemon is [ConfigureUnit] for a daemon whose configuration
// files (opts.Inputs) a bad version must never replace: a file that
// differs is written beside itself ([StagedPath], with its mode and
// owner), the daemon's own validator (opts.Check) reads the staged
// files, and only when it accepts them do they replace the old ones, each
// by an atomic rename, after the unit's marker ([PendingMarker]) is
// written; the unit is then reloaded (`systemctl reload-or-restart`), or
// restarted with opts.InputsNeedRestart, and the marker removed, so that
// a run that fails between the replacement and the reload leaves the
// reload to the next run. A configuration the validator refuses is an
// error naming the files, the validator and the tail of what it printed
// on standard error; the staged files are removed and the old
// configuration, and the running daemon, are left as they were. The unit
// is enabled and started as ConfigureUnit does it; a converged host
// costs one command.
func ConfigureDaemon(ctx context.Context, h remote.Host, opts DaemonOptions) (lcm.Result, error) {
	unit, err := checkUnitOptions(opts.UnitOptions)
	var probs problems
	var pe *lcm.ParamsError
	if errors.As(err, &pe) {
		probs = pe.Problems
	} else if err != nil {
		return lcm.Unchanged, err
	}
	if len(opts.Inputs) == 0 {
		probs.addf("Inputs", "must name the daemon's configuration")
	}
	if opts.Check == nil {
		probs.addf("Check", "must give the daemon's validator")
	}
	if err := probs.err(); err != nil {
		return lcm.Unchanged, err
	}
	return configureUnit(ctx, h, unit, opts.UnitOptions, opts.Check)
}

// moveScript writes a marker ($1, content $2; none when $1 is empty),
// then renames each staged file over its target (the pairs that follow).
const moveScript = `set -eu
if [ -n "$1" ]; then
  mkdir -p -- "${1%/*}"
  printf '%s\n' "$2" > "$1.tmp"
  mv -f -- "$1.tmp" "$1"
fi
shift 2
while [ $# -ge 2 ]; do mv -f -- "$1" "$2"; shift 2; done`

// replaceChecked stages writes, has check's validator read them, and on
// success writes mark (when not nil) and renames the staged files into
// place, in one command. inputs are every input, changed or not.
func replaceChecked(ctx context.Context, h remote.Host, writes []remote.FileWrite, mark *remote.FileWrite, check func(map[string]string) []string, inputs map[string]string) error {
	staged := map[string]string{}
	for p := range inputs {
		staged[p] = p
	}
	var stage []remote.FileWrite
	var stagedPaths, names []string
	for _, w := range writes {
		s := StagedPath(w.Path)
		staged[w.Path] = s
		names = append(names, w.Path)
		w.Path = s
		stage = append(stage, w)
		stagedPaths = append(stagedPaths, s)
	}
	if _, err := remote.WriteFiles(ctx, h, stage); err != nil {
		return err
	}
	argv := check(maps.Clone(staged))
	if len(argv) == 0 {
		_, _ = remote.RemoveFiles(ctx, h, stagedPaths, nil, remote.FileOptions{Sudo: true})
		return errors.New("system: DaemonOptions.Check returned no command")
	}
	if _, err := h.Run(ctx, remote.Cmd{Args: argv, Sudo: true, Idempotent: true}); err != nil {
		// Best effort: a staged file left behind is overwritten by the
		// next run and read by nothing.
		_, _ = remote.RemoveFiles(ctx, h, stagedPaths, nil, remote.FileOptions{Sudo: true})
		var ce *remote.CommandError
		if !errors.As(err, &ce) || ce.Err != nil || ce.Signal != "" {
			return fmt.Errorf("system: %s: checking the new %s: %w", h.Name(), strings.Join(names, ", "), err)
		}
		return &CheckError{Host: h.Name(), Files: names, Validator: argv[0], ExitCode: ce.ExitCode, Stderr: tail(ce.Stderr, 20), Err: err}
	}
	args := []string{"sh", "-c", moveScript, "mgmtkit-replace", "", ""}
	if mark != nil {
		args[4], args[5] = mark.Path, strings.TrimSuffix(string(mark.Content), "\n")
	}
	for _, w := range writes {
		args = append(args, staged[w.Path], w.Path)
	}
	_, err := h.Run(ctx, remote.Cmd{Args: args, Sudo: true})
	return err
}

// tail returns the last n lines of s, trimmed.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// CheckError is a configuration a daemon's own validator refused
// ([ConfigureDaemon]): the files are as they were.
type CheckError struct {
	// Host is the host's name.
	Host string
	// Files are the configuration files whose new versions were refused.
	Files []string
	// Validator is the validator's program ("haproxy").
	Validator string
	// ExitCode is its exit status.
	ExitCode int
	// Stderr is the tail of what it printed on standard error.
	Stderr string
	// Err is the command's error.
	Err error
}

func (e *CheckError) Error() string {
	msg := fmt.Sprintf("system: %s: %s refuses the new %s (exit status %d); the old configuration stays", e.Host, e.Validator, strings.Join(e.Files, ", "), e.ExitCode)
	if e.Stderr != "" {
		msg += ":\n" + e.Stderr
	}
	return msg
}

// Unwrap returns the command's error.
func (e *CheckError) Unwrap() error { return e.Err }

package remote

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// removeFilesScript removes files, then directories that are empty. Its
// first argument is the number of files that follow; the arguments after
// them are the directories. For each file it prints "removed" or "absent";
// a directory that is missing, a link or not empty is left alone.
// `rm -d` removes an empty directory as rmdir does (GNU coreutils and
// BusyBox both have it).
const removeFilesScript = `set -eu
n=$1
shift
while [ "$n" -gt 0 ]; do
  if [ -e "$1" ] || [ -L "$1" ]; then rm -f -- "$1"; echo removed; else echo absent; fi
  shift
  n=$((n - 1))
done
for d in "$@"; do
  if [ -d "$d" ] && [ ! -L "$d" ] && [ -z "$(ls -A -- "$d")" ]; then rm -d -- "$d"; fi
done`

// RemoveFiles removes files (as root with opts.Sudo), then each of dirs
// that is then empty, with one command, and reports which files existed.
// A missing file is no error; a directory that is missing or still holds
// anything stays as it is, so a directory someone else put files in is
// never removed. A path that is a directory among files is an error, as
// are paths that are not absolute and clean.
func RemoveFiles(ctx context.Context, h Host, files, dirs []string, opts FileOptions) ([]bool, error) {
	removed := make([]bool, len(files))
	if len(files) == 0 && len(dirs) == 0 {
		return removed, nil
	}
	for _, p := range append(append([]string(nil), files...), dirs...) {
		if err := CheckPath(p); err != nil {
			return removed, err
		}
	}
	if IsDryRun(ctx) {
		return removed, dryRemove(ctx, h, files, dirs, opts)
	}
	args := []string{"sh", "-c", removeFilesScript, "mgmtkit-remove-files", strconv.Itoa(len(files))}
	args = append(append(args, files...), dirs...)
	out, err := h.Run(ctx, Cmd{Args: args, Sudo: opts.Sudo, Idempotent: true, Brief: true})
	if err != nil {
		return removed, err
	}
	lines := strings.Fields(string(out.Stdout))
	if len(lines) != len(files) {
		return removed, fmt.Errorf("%s: removing %d files: unexpected output %q", h.Name(), len(files), out.Stdout)
	}
	for i, l := range lines {
		removed[i] = l == "removed"
	}
	return removed, nil
}

// removeProbeScript tells what removeFilesScript, given the same
// arguments, would remove, and removes nothing: "present" or "absent" for
// each file, then each directory that would be left empty (every entry
// of it a file or a directory removed before it) on a line of its own.
const removeProbeScript = `set -eu
nl='
'
n=$1
shift
gone=$nl
i=0
for f in "$@"; do
  i=$((i + 1))
  if [ "$i" -le "$n" ]; then
    if [ -e "$f" ] || [ -L "$f" ]; then echo present; gone="$gone$f$nl"; else echo absent; fi
    continue
  fi
  if [ ! -d "$f" ] || [ -L "$f" ]; then continue; fi
  empty=1
  for e in "$f"/* "$f"/.[!.]* "$f"/..?*; do
    if [ ! -e "$e" ] && [ ! -L "$e" ]; then continue; fi
    case $gone in *"$nl$e$nl"*) ;; *) empty= ;; esac
  done
  if [ -n "$empty" ]; then echo "$f"; gone="$gone$f$nl"; fi
done`

// dryRemove is RemoveFiles in a dry run: it looks, read-only, what the
// removal would remove, and withholds it, if anything.
func dryRemove(ctx context.Context, h Host, files, dirs []string, opts FileOptions) error {
	args := []string{"sh", "-c", removeProbeScript, "mgmtkit-remove-probe", strconv.Itoa(len(files))}
	args = append(append(args, files...), dirs...)
	out, err := h.Run(ctx, Cmd{Args: args, Sudo: opts.Sudo, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(string(out.Stdout), "\n"), "\n")
	if len(out.Stdout) == 0 {
		lines = nil
	}
	if len(lines) < len(files) {
		return fmt.Errorf("%s: looking at %d files to remove: unexpected output %q", h.Name(), len(files), out.Stdout)
	}
	var gone []string
	for i, l := range lines {
		switch {
		case i >= len(files):
			gone = append(gone, l)
		case l == "present":
			gone = append(gone, files[i])
		case l != "absent":
			return fmt.Errorf("%s: looking at %d files to remove: unexpected output %q", h.Name(), len(files), out.Stdout)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return withhold(ctx, &WithheldError{Host: h.Name(), Remove: gone})
}

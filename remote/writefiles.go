package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/pkg/sftp"
)

// FileWrite is one file for [WriteFiles]: its absolute path, the bytes it
// must hold, and its mode and ownership.
type FileWrite struct {
	Path    string
	Content []byte
	Options FileOptions
}

// FilesWriter is implemented by hosts that write several files in a few
// round trips; [*SSHHost] does.
type FilesWriter interface {
	WriteFiles(ctx context.Context, files []FileWrite) ([]bool, error)
}

// WriteFiles makes every file hold its content with its options, as
// [Host.WriteFile] would for each, and reports which files it changed. On
// a host that implements [FilesWriter] (an *SSHHost) that costs one
// command to compare all the files, SFTP uploads of the ones that differ
// and one command to put them in place, whatever their number; other
// hosts write the files one by one. Every file must have the same
// Options.Sudo, and no path may appear twice.
func WriteFiles(ctx context.Context, h Host, files []FileWrite) ([]bool, error) {
	if fw, ok := h.(FilesWriter); ok {
		return fw.WriteFiles(ctx, files)
	}
	changed := make([]bool, len(files))
	for i, f := range files {
		c, err := h.WriteFile(ctx, f.Path, bytes.NewReader(f.Content), f.Options)
		if err != nil {
			return changed, err
		}
		changed[i] = c
	}
	return changed, nil
}

// probeFilesScript prints one line per (file, size) argument pair:
// "absent", or the file's mode, owner, group and size, followed by its
// SHA-256 when the size is the one given. It fails for anything but a
// regular file (or a link to one).
const probeFilesScript = `set -eu
` + sha256Func + `while [ $# -ge 2 ]; do
  f=$1 want=$2
  shift 2
  if [ ! -e "$f" ] && [ ! -L "$f" ]; then echo absent; continue; fi
  if [ ! -f "$f" ]; then echo "$f: not a regular file" >&2; exit 1; fi
  attrs=$(stat -L -c '%a %U %G %s' -- "$f")
  if [ "${attrs##* }" = "$want" ]; then s=$(sha256 < "$f"); echo "$attrs ${s%% *}"; else echo "$attrs"; fi
done`

// commitFilesScript puts files in place; its first argument is how staged
// files reach their destination's directory ("rename" or "copy", as for
// commitScript), the others groups of six: staged file (empty to fix only
// the mode and owner of the destination), destination, expected SHA-256,
// mode (octal), owner, group. Each file is committed as commitScript does:
// brought into a mktemp file next to its destination, verified, given its
// mode and owner, renamed.
const commitFilesScript = `set -eu
` + sha256Func + `how=$1
shift
while [ $# -ge 6 ]; do
  src=$1 dst=$2 sum=$3 mode=$4 owner=$5 group=$6
  shift 6
  if [ -z "$src" ]; then
    if [ -n "$owner$group" ]; then chown -- "$owner:$group" "$dst"; fi
    chmod -- "$mode" "$dst"
    continue
  fi
  dir=${dst%/*}
  [ -n "$dir" ] || dir=/
  mkdir -p -- "$dir"
  tmp=$(mktemp -p "$dir" ".${dst##*/}.mgmtkit-XXXXXX")
  trap 'rm -f -- "$tmp"' EXIT
  if [ "$how" = rename ]; then mv -f -- "$src" "$tmp"; else cat -- "$src" > "$tmp"; rm -f -- "$src"; fi
  got=$(sha256 < "$tmp")
  if [ "${got%% *}" != "$sum" ]; then
    echo "checksum mismatch after transfer of $dst" >&2
    exit 65
  fi
  if [ -n "$owner$group" ]; then chown -- "$owner:$group" "$tmp"; fi
  chmod -- "$mode" "$tmp"
  mv -f -- "$tmp" "$dst"
  trap - EXIT
done`

// WriteFiles writes several files in three round trips at most. See the
// package function [WriteFiles].
func (h *SSHHost) WriteFiles(ctx context.Context, files []FileWrite) ([]bool, error) {
	changed := make([]bool, len(files))
	if len(files) == 0 {
		return changed, nil
	}
	sudo := files[0].Options.Sudo
	seen := map[string]bool{}
	probe := []string{"sh", "-c", probeFilesScript, "mgmtkit-probe-files"}
	for _, f := range files {
		if err := checkPath(f.Path); err != nil {
			return changed, err
		}
		switch {
		case f.Options.Sudo != sudo:
			return changed, fmt.Errorf("%s: WriteFiles: %s differs from the other files in FileOptions.Sudo", h.name, f.Path)
		case seen[f.Path]:
			return changed, fmt.Errorf("%s: WriteFiles: %s is given twice", h.name, f.Path)
		case !sudo && f.Options.Owner != "" && f.Options.Owner != h.cfg.User:
			return changed, fmt.Errorf("%s: writing %s owned by %s needs FileOptions.Sudo", h.name, f.Path, f.Options.Owner)
		}
		seen[f.Path] = true
		probe = append(probe, f.Path, strconv.Itoa(len(f.Content)))
	}
	curs, err := h.probeFiles(ctx, probe, sudo, len(files))
	if err != nil {
		return changed, err
	}

	// What each file needs: nothing, its attributes, or its content.
	type plan struct {
		i                  int
		staged, sum        string
		mode, owner, group string // as the commit script takes them
		upload             bool
	}
	var plans []plan
	for i, f := range files {
		cur := curs[i]
		mode, owner, group := desiredAttrs(cur, f.Options)
		if !cur.exists && sudo && owner == "" && group == "" {
			owner, group = "root", "root"
		}
		sum := sha256.Sum256(f.Content)
		p := plan{i: i, sum: hex.EncodeToString(sum[:]), mode: strconv.FormatUint(uint64(mode), 8), owner: owner, group: group}
		switch {
		case cur.exists && cur.sum == p.sum && mode == cur.mode && owner == cur.owner && group == cur.group:
			continue
		case cur.exists && cur.sum == p.sum:
			// Right content, wrong attributes.
		default:
			p.upload = true
		}
		plans = append(plans, p)
	}
	if len(plans) == 0 {
		return changed, nil
	}

	var staged []string
	cleanup := func() {
		for _, s := range staged {
			h.removeStaged(ctx, s)
		}
	}
	err = h.withSFTP(ctx, func(c *conn, client *sftp.Client) error {
		writable := map[string]bool{}
		for k := range plans {
			p := &plans[k]
			if !p.upload {
				continue
			}
			file := files[p.i].Path
			if dir := path.Dir(file); !sudo && !writable[dir] {
				if err := h.writableDir(client, dir); err != nil {
					return err
				}
				writable[dir] = true
			}
			var sum string
			var err error
			if p.staged, sum, err = h.stage(ctx, c, client, file, bytes.NewReader(files[p.i].Content)); err != nil {
				return err
			}
			staged = append(staged, p.staged)
			if sum != p.sum {
				return fmt.Errorf("%s: %s: the upload's checksum differs from the content's", h.name, file)
			}
		}
		return nil
	})
	if err != nil {
		cleanup()
		return changed, err
	}

	commit := []string{"sh", "-c", commitFilesScript, "mgmtkit-commit-files", commitHow(sudo)}
	for _, p := range plans {
		commit = append(commit, p.staged, files[p.i].Path, p.sum, p.mode, p.owner, p.group)
	}
	_, err = h.Run(ctx, Cmd{Args: commit, Sudo: sudo})
	if errors.Is(err, ErrConnectionLost) {
		// The commit may have finished before the connection dropped:
		// look again on a new connection.
		after, perr := h.probeFiles(ctx, probe, sudo, len(files))
		done := perr == nil
		for _, p := range plans {
			if !done {
				break
			}
			a := after[p.i]
			done = a.exists && a.sum == p.sum && strconv.FormatUint(uint64(a.mode), 8) == p.mode
		}
		if done {
			err = nil
		}
	}
	if err != nil {
		cleanup()
		return changed, err
	}
	for _, p := range plans {
		changed[p.i] = true
		h.log.Debug("file written", "path", files[p.i].Path, "sha256", p.sum)
	}
	return changed, nil
}

// probeFiles runs the probe and parses one line per file.
func (h *SSHHost) probeFiles(ctx context.Context, args []string, sudo bool, n int) ([]remoteFile, error) {
	out, err := h.Run(ctx, Cmd{Args: args, Sudo: sudo, Idempotent: true})
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out.Stdout), "\n"), "\n")
	if len(lines) != n {
		return nil, fmt.Errorf("%s: unexpected probe output for %d files: %q", h.name, n, out.Stdout)
	}
	curs := make([]remoteFile, n)
	for i, line := range lines {
		if line == "absent" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 && len(f) != 5 {
			return nil, fmt.Errorf("%s: unexpected probe output %q", h.name, line)
		}
		mode, err1 := strconv.ParseUint(f[0], 8, 32)
		size, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: unexpected probe output %q", h.name, line)
		}
		curs[i] = remoteFile{exists: true, mode: fs.FileMode(mode) & fs.ModePerm, owner: f[1], group: f[2], size: size}
		if len(f) == 5 {
			curs[i].sum = f[4]
		}
	}
	return curs, nil
}

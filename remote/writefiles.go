package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"unicode"

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

// WriteFile writes content to path atomically. See [Host]. It is
// [SSHHost.WriteFiles] for one file whose content is streamed.
//
// The content is streamed with concurrent SFTP writes to a staging file in
// the login user's private staging directory (~/.mgmtkit-staging, mode
// 0700) and verified there as it lands: a file over 1 MiB is hashed on the
// host segment by segment as the writes are acknowledged, so only the last
// segment is left to hash after the last byte; a smaller one is read back
// where that spares the commit command, and hashed by the commit
// otherwise. It is then put in place by an atomic rename.
//
// Without sudo, for a file that keeps its owner and group, the file is
// checked (stat, and a read-back of a small file of the content's size)
// and put in place (chmod, posix-rename) over SFTP; a large file costs one
// command, the host's hash, and a small one none. Otherwise one command
// probes (hashing a file of the content's size, so that an unchanged file
// costs no transfer when the content is seekable) and one commits, under
// sudo for root-owned destinations (Sudo); a login user who becomes root
// without a password has the staged file hard-linked into place, one who
// needs a password has it copied into a root-owned file.
func (h *SSHHost) WriteFile(ctx context.Context, file string, content io.Reader, opts FileOptions) (bool, error) {
	changed, err := h.write(ctx, []fileWrite{{path: file, content: content, opts: opts}})
	return changed[0], err
}

// WriteFiles writes several files in three round trips at most. See the
// package function [WriteFiles].
func (h *SSHHost) WriteFiles(ctx context.Context, files []FileWrite) ([]bool, error) {
	ws := make([]fileWrite, len(files))
	for i, f := range files {
		ws[i] = fileWrite{path: f.Path, content: bytes.NewReader(f.Content), opts: f.Options}
	}
	return h.write(ctx, ws)
}

// fileWrite is one file for the write engine: where, what and how, and
// what an attempt to write it learns.
type fileWrite struct {
	path    string
	content io.Reader
	opts    FileOptions
	start   int64 // where content starts, for reading it again; -1 when it cannot be
	attempt
}

// attempt is what one attempt of the write engine knows and decides about
// one file.
type attempt struct {
	size         int64       // the bytes left in content, -1 when unknown
	cur          remoteFile  // what the probe found
	mode         fs.FileMode // the mode, owner and group the file must end with
	owner, group string
	sum          string // SHA-256 of the content, once known
	upload       bool   // the content differs (or may differ) and is uploaded
	tried        bool   // an upload of the content started
	staged       string // the staged file, once uploaded
	verified     bool   // the staged file was checked against sum on its way
	done         bool   // put in place over SFTP (commitSFTP)
}

// attrsDiffer reports whether the file exists with other attributes than
// it must end with.
func (w *fileWrite) attrsDiffer() bool {
	return w.mode != w.cur.mode || w.owner != w.cur.owner || w.group != w.cur.group
}

// write is the write engine behind WriteFile and WriteFiles. It checks
// every request before anything runs, then takes four steps: one command
// probes every file (mode, owner, group, size, and SHA-256 where the size
// matches or is unknown), or SFTP does for one file that keeps its
// ownership (probeSFTP); the plan leaves alone each file that holds its
// content with its attributes, and hashes seekable content to find files
// whose content is right and only attributes differ; each file that needs
// its content is streamed over SFTP into the staging directory, hashed on
// the way out and, where it pays, verified on the host as it lands
// (upload); one command commits the staged files (verify SHA-256 unless
// verified already, owner, mode, rename) and fixes the attributes of the
// others, or SFTP does when every file keeps its ownership (commitSFTP).
//
// If the connection drops during the commit, a new probe tells whether it
// finished; if it did not, the write starts over once from the start of
// the content, when every content can be read again.
func (h *SSHHost) write(ctx context.Context, ws []fileWrite) ([]bool, error) {
	if len(ws) == 0 {
		return []bool{}, nil
	}
	if err := h.checkWrites(ws); err != nil {
		return make([]bool, len(ws)), err
	}
	for i := range ws {
		ws[i].start = offset(ws[i].content)
	}
	changed, lost, err := h.writeOnce(ctx, ws)
	rewound := lost
	for i := range ws {
		rewound = rewound && ws[i].rewind() == nil
	}
	if rewound {
		h.log.Debug("connection lost while committing files; writing them again", "path", ws[0].path, "files", len(ws))
		for i := range ws {
			ws[i].attempt = attempt{}
		}
		var again []bool
		if again, _, err = h.writeOnce(ctx, ws); err == nil {
			// A file the first attempt meant to change has changed,
			// whichever attempt put it in place.
			for i := range changed {
				changed[i] = changed[i] || again[i]
			}
		}
	}
	if err != nil {
		return make([]bool, len(ws)), err
	}
	return changed, nil
}

// checkWrites refuses a request the engine cannot carry out, before any
// command runs.
func (h *SSHHost) checkWrites(ws []fileWrite) error {
	sudo := ws[0].opts.Sudo
	seen := map[string]bool{}
	for _, s := range ws {
		if err := CheckPath(s.path); err != nil {
			return err
		}
		switch {
		case s.opts.Sudo != sudo:
			return fmt.Errorf("%s: WriteFiles: %s differs from the other files in FileOptions.Sudo", h.name, s.path)
		case seen[s.path]:
			return fmt.Errorf("%s: WriteFiles: %s is given twice", h.name, s.path)
		case !sudo && s.opts.Owner != "" && s.opts.Owner != h.cfg.User:
			return fmt.Errorf("%s: writing %s owned by %s needs FileOptions.Sudo", h.name, s.path, s.opts.Owner)
		case badOwner(s.opts.Owner) || badOwner(s.opts.Group):
			return fmt.Errorf("%s: writing %s: FileOptions.Owner %q or Group %q is not a user or group name or ID", h.name, s.path, s.opts.Owner, s.opts.Group)
		}
		seen[s.path] = true
	}
	return nil
}

// badOwner reports whether name, a FileOptions.Owner or Group, cannot be
// a user or group name or numeric ID for chown: a ':' would split it, and
// white space or control characters belong in no name.
func badOwner(name string) bool {
	return strings.ContainsFunc(name, func(r rune) bool { return r == ':' || unicode.IsSpace(r) || unicode.IsControl(r) })
}

// offset returns where r, a seeker, is now, or -1 when r cannot seek.
func offset(r io.Reader) int64 {
	if s, ok := r.(io.Seeker); ok {
		if start, err := s.Seek(0, io.SeekCurrent); err == nil {
			return start
		}
	}
	return -1
}

// rewind seeks the content back to its start.
func (w *fileWrite) rewind() error {
	if w.start < 0 {
		return errors.New("the content cannot be read again")
	}
	_, err := w.content.(io.Seeker).Seek(w.start, io.SeekStart)
	return err
}

// writeOnce probes, plans, stages and commits ws once, and reports which
// files it changed. lost says the connection dropped during a commit that,
// as far as a new probe tells, did not finish (err is ErrConnectionLost);
// changed then says which files the commit was to change. Staged files
// are removed on every error.
func (h *SSHHost) writeOnce(ctx context.Context, ws []fileWrite) (changed []bool, lost bool, err error) {
	changed = make([]bool, len(ws))
	sudo := ws[0].opts.Sudo
	for i := range ws {
		ws[i].size = knownSize(ws[i].content)
	}
	var curs []remoteFile
	if h.sftpProbes(ws) {
		curs, err = h.probeSFTP(ctx, ws[0])
	}
	if curs == nil && err == nil {
		curs, err = h.probe(ctx, ws, false)
	}
	if err != nil {
		return changed, false, err
	}
	for i := range ws {
		if err := h.plan(&ws[i], curs[i]); err != nil {
			return changed, false, err
		}
	}
	if IsDryRun(ctx) {
		return changed, false, h.dryWrite(ctx, ws)
	}
	defer func() {
		for _, w := range ws {
			if w.staged != "" {
				h.removeStaged(ctx, w.staged)
			}
		}
	}()
	if err := h.stageAll(ctx, ws); err != nil {
		return changed, false, err
	}

	if done, lost, err := h.commitSFTP(ctx, ws, changed); done || err != nil {
		return changed, lost, err
	}
	commit := []string{"sh", "-c", commitScript, "mgmtkit-commit", "link"}
	if sudo && !h.rootEquivalent() {
		// The login user needs a password to become root: the staged
		// file is copied into a root-owned temporary file, so that the
		// login user keeps no descriptor on the file root ends up using.
		commit[4] = "copy"
	}
	uploads := false
	for i, w := range ws {
		switch {
		case w.done:
			changed[i] = true
			continue
		case w.upload:
			uploads = true
			verified := ""
			if w.verified {
				verified = "verified"
			}
			commit = append(commit, w.staged, w.path, w.sum, verified, strconv.FormatUint(uint64(w.mode), 8), w.owner, w.group)
		case w.attrsDiffer():
			owner, group := w.owner, w.group
			if owner == w.cur.owner && group == w.cur.group {
				owner, group = "", "" // only the mode differs
			}
			commit = append(commit, "", w.path, w.sum, "", strconv.FormatUint(uint64(w.mode), 8), owner, group)
		default:
			continue
		}
		changed[i] = true
	}
	if len(commit) == 5 { // nothing to commit
		return changed, false, nil
	}
	// A commit that only fixes attributes may run twice; one that moves
	// staged files may not (Run would find them gone).
	_, err = h.Run(ctx, Cmd{Args: commit, Sudo: sudo, Idempotent: !uploads, Brief: true})
	if errors.Is(err, ErrConnectionLost) {
		// The commit may have finished before the connection dropped:
		// look again on a new connection.
		if !h.committed(ctx, ws, changed) {
			return changed, true, err
		}
		h.log.Debug("files written; the connection dropped after the commit", "path", ws[0].path, "files", len(ws))
		err = nil
	}
	if err != nil {
		return changed, false, err
	}
	for i := range ws {
		ws[i].staged = "" // the commit moved or removed it
		if changed[i] {
			h.log.Debug("file written", "path", ws[i].path, "sha256", ws[i].sum)
		}
	}
	return changed, false, nil
}

// dryWrite is writeOnce's end in a dry run, once the files are probed
// and planned: it withholds the writes of the files that differ in
// content, mode, owner or group, and stages nothing. Content whose size
// is unknown is hashed here, as its upload would hash it on the way.
func (h *SSHHost) dryWrite(ctx context.Context, ws []fileWrite) error {
	var write []string
	for i := range ws {
		w := &ws[i]
		if w.upload && w.cur.exists && w.cur.sum != "" && w.sum == "" {
			sum := sha256.New()
			if _, err := io.Copy(sum, ctxReader{ctx, w.content}); err != nil {
				return fmt.Errorf("%s: reading the content for %s: %w", h.name, w.path, err)
			}
			w.sum = hex.EncodeToString(sum.Sum(nil))
			w.upload = w.sum != w.cur.sum
		}
		if w.upload || w.attrsDiffer() {
			write = append(write, w.path)
		}
	}
	if len(write) == 0 {
		return nil
	}
	h.log.Info("dry run: write withheld", "files", write)
	return withhold(ctx, &WithheldError{Host: h.name, Write: write})
}

// plan decides what w needs, given what the probe found: nothing, its
// attributes, or its content.
func (h *SSHHost) plan(w *fileWrite, cur remoteFile) error {
	w.cur = cur
	w.mode, w.owner, w.group = desiredAttrs(cur, w.opts)
	if !cur.exists && w.opts.Sudo && w.owner == "" && w.group == "" {
		// Staged files belong to the login user; a new file written as
		// root belongs to root.
		w.owner, w.group = "root", "root"
	}
	// A seekable source of the same size as the file is hashed first, so
	// that an unchanged file costs no transfer. Any other source is hashed
	// on its way out.
	if cur.sum != "" && w.size >= 0 {
		var err error
		if w.sum, err = hashAndRewind(w.content); err != nil {
			return fmt.Errorf("%s: reading the content for %s: %w", h.name, w.path, err)
		}
		if w.sum == cur.sum {
			return nil
		}
	}
	w.upload = true
	return nil
}

// stageAll uploads the content of every file that needs it into the
// staging directory, over one SFTP channel. A file whose streamed content
// turns out to be what the file holds is not committed. If the channel is
// lost, the files not yet staged are uploaded on a new one, each from the
// start of its content.
func (h *SSHHost) stageAll(ctx context.Context, ws []fileWrite) error {
	sudo := ws[0].opts.Sudo
	// A commit under a sudo that needs a password copies the staged file
	// and verifies the copy: verifying the staged file as well would be
	// wasted.
	verify := !sudo || h.rootEquivalent()
	writable := map[string]bool{}
	return h.withSFTP(ctx, func(c *conn, client *sftp.Client) error {
		for i := range ws {
			w := &ws[i]
			if !w.upload || w.staged != "" {
				continue
			}
			// Without sudo the commit moves the staged file into the
			// directory as the login user: check that it can, before the
			// upload.
			if dir := path.Dir(w.path); !sudo && !writable[dir] {
				if err := h.writableDir(client, dir); err != nil {
					return err
				}
				writable[dir] = true
			}
			if w.tried {
				if err := w.rewind(); err != nil {
					return fmt.Errorf("%s: the sftp channel was lost while uploading %s: %w", h.name, w.path, err)
				}
			}
			w.tried = true
			staged, sum, verified, err := h.stage(ctx, c, client, w.content, keepsOwnership(*w), verify)
			if err != nil {
				return err
			}
			w.staged, w.verified = staged, verified
			switch {
			case w.sum != "" && sum != w.sum:
				return fmt.Errorf("%s: content for %s changed while it was uploaded", h.name, w.path)
			case w.cur.exists && w.cur.sum == sum:
				// Streamed, and the same as the file.
				client.Remove(staged)
				w.staged, w.upload = "", false
			}
			w.sum = sum
		}
		return nil
	})
}

// committed probes the files a lost commit was to change (changed) and
// reports whether each holds its content with its mode, owner and group.
func (h *SSHHost) committed(ctx context.Context, ws []fileWrite, changed []bool) bool {
	var planned []fileWrite
	for i, w := range ws {
		if changed[i] {
			planned = append(planned, w)
		}
	}
	after, err := h.probe(ctx, planned, true)
	if err != nil {
		return false
	}
	for i, w := range planned {
		a := after[i]
		if !a.exists || a.sum != w.sum || a.mode != w.mode ||
			w.owner != "" && a.owner != w.owner || w.group != "" && a.group != w.group {
			return false
		}
	}
	return true
}

// remoteFile is what the probe found at a path.
type remoteFile struct {
	exists bool
	mode   fs.FileMode
	owner  string
	group  string
	size   int64
	sum    string // hex SHA-256; "" when the probe did not need it
}

// sha256Func defines sha256, which prints the SHA-256 of its standard input
// as the first word of its output. It prefers openssl, which uses the CPU's
// SHA extensions (three to four times coreutils' speed), and falls back to
// sha256sum.
const sha256Func = `sha256() { if command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r; else sha256sum; fi; }
`

// probeScript prints one line per (file, size) argument pair: "absent",
// or the file's mode, owner, group and size, followed by its SHA-256
// unless the size given is not empty and not the file's. (A file of
// another size cannot hold the content; an empty size is an unknown one.)
// It fails for anything but a regular file (or a link to one).
const probeScript = `set -eu
` + sha256Func + `while [ $# -ge 2 ]; do
  f=$1 want=$2
  shift 2
  if [ ! -e "$f" ] && [ ! -L "$f" ]; then echo absent; continue; fi
  if [ ! -f "$f" ]; then echo "$f: not a regular file" >&2; exit 1; fi
  attrs=$(stat -L -c '%a %U %G %s' -- "$f")
  if [ -z "$want" ] || [ "${attrs##* }" = "$want" ]; then s=$(sha256 < "$f"); echo "$attrs ${s%% *}"; else echo "$attrs"; fi
done`

// probe runs probeScript for the files of ws and parses one line per
// file. It asks for the SHA-256 of every file with hashAll, otherwise of
// those whose size is the content's or the content's is unknown.
func (h *SSHHost) probe(ctx context.Context, ws []fileWrite, hashAll bool) ([]remoteFile, error) {
	args := []string{"sh", "-c", probeScript, "mgmtkit-probe"}
	for _, w := range ws {
		want := ""
		if w.size >= 0 && !hashAll {
			want = strconv.FormatInt(w.size, 10)
		}
		args = append(args, w.path, want)
	}
	out, err := h.Run(ctx, Cmd{Args: args, Sudo: ws[0].opts.Sudo, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out.Stdout), "\n"), "\n")
	if len(lines) != len(ws) {
		return nil, fmt.Errorf("%s: unexpected probe output for %d files: %q", h.name, len(ws), out.Stdout)
	}
	curs := make([]remoteFile, len(ws))
	for i, line := range lines {
		if line == "absent" {
			continue
		}
		bad := fmt.Errorf("%s: unexpected probe output for %s: %q", h.name, ws[i].path, line)
		f := strings.Fields(line)
		if len(f) != 4 && len(f) != 5 {
			return nil, bad
		}
		mode, err1 := strconv.ParseUint(f[0], 8, 32)
		size, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, bad
		}
		curs[i] = remoteFile{exists: true, mode: fs.FileMode(mode) & fs.ModePerm, owner: f[1], group: f[2], size: size}
		if len(f) == 5 {
			if curs[i].sum = f[4]; len(curs[i].sum) != 64 {
				return nil, bad
			}
		}
	}
	return curs, nil
}

// commitScript puts files in place. Its first argument is how a staged
// file reaches its destination's directory, "link" or "copy"; the others
// come in groups of seven: staged file (empty to fix only the mode and
// owner of the destination), destination, expected SHA-256, "verified"
// when the staged file was checked against it during its upload (or
// empty), mode (octal), owner, group (both empty to keep them).
//
// Each staged file is first put in a temporary file next to its
// destination, made by mktemp (mode 0600), so that the final step is a
// rename within one directory: readers see the old file or the new one,
// never a part. "link" hard-links the staged file there when both are on
// one file system (no byte is copied) and copies it otherwise; "copy",
// for commits under a sudo that needs a password, always copies it into
// the root-owned temporary file, so that the login user keeps no
// descriptor on the file root ends up using (a login user who may become
// root at will gains nothing from one, so "link" serves the others). The
// temporary file is verified against the expected checksum unless it is
// the very file verified during the upload, given its owner and mode and
// renamed; the staged file is removed whatever happens to it. A
// destination whose owner or group changes in place is first narrowed to
// the bits its old and new modes share, so that the new owner or group
// never holds a permission that neither mode gives it.
const commitScript = `set -eu
` + sha256Func + `how=$1
shift
while [ $# -ge 7 ]; do
  src=$1 dst=$2 sum=$3 verified=$4 mode=$5 owner=$6 group=$7
  shift 7
  if [ -z "$src" ]; then
    if [ -n "$owner$group" ]; then
      old=$(stat -c %a -- "$dst")
      chmod -- "$(printf %o "$(( 0$old & 0$mode ))")" "$dst"
      chown -- "$owner:$group" "$dst"
    fi
    chmod -- "$mode" "$dst"
    continue
  fi
  trap 'rm -f -- "$src"' EXIT
  dir=${dst%/*}
  [ -n "$dir" ] || dir=/
  mkdir -p -- "$dir"
  tmp=$(mktemp -p "$dir" ".${dst##*/}.mgmtkit-XXXXXX")
  trap 'rm -f -- "$src" "$tmp"' EXIT
  if [ "$how" = link ] && ln -f -- "$src" "$tmp" 2>/dev/null; then
    rm -f -- "$src"
  else
    cat -- "$src" > "$tmp"
    rm -f -- "$src"
    verified=
  fi
  if [ -z "$verified" ]; then
    got=$(sha256 < "$tmp")
    if [ "${got%% *}" != "$sum" ]; then
      echo "checksum mismatch after transfer of $dst" >&2
      exit 65
    fi
  fi
  if [ -n "$owner$group" ]; then chown -- "$owner:$group" "$tmp"; fi
  chmod -- "$mode" "$tmp"
  mv -f -- "$tmp" "$dst"
  trap - EXIT
done`

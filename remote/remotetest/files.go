package remotetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/mgmtkit/mgmtkit/remote"
)

// File is a file of a [Host]: its content, permission bits and owners
// (user and group names).
type File struct {
	Data         []byte
	Mode         fs.FileMode
	Owner, Group string
}

// SetFile puts a file on the host before the step runs, owned by root
// (root:root) with the permission bits of mode, in place of any file at
// path. It panics if path is not absolute and clean.
func (h *Host) SetFile(path string, data []byte, mode fs.FileMode) {
	if err := remote.CheckPath(path); err != nil {
		panic(err.Error())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[path] = &File{Data: bytes.Clone(data), Mode: mode.Perm(), Owner: "root", Group: "root"}
}

// Chown sets the owner and group of the file at path; it reports whether
// there is such a file.
func (h *Host) Chown(path, owner, group string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[path]
	if ok {
		f.Owner, f.Group = owner, group
	}
	return ok
}

// File returns the content of the file at path, and whether there is one.
func (h *Host) File(path string) ([]byte, bool) {
	f, ok := h.Stat(path)
	return f.Data, ok
}

// Stat returns the file at path (a copy), and whether there is one.
func (h *Host) Stat(path string) (File, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[path]
	if !ok {
		return File{}, false
	}
	c := *f
	c.Data = bytes.Clone(f.Data)
	return c, true
}

// Paths returns the paths of the host's files, sorted.
func (h *Host) Paths() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for p := range h.files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// mayRead reports whether the login user may read f without sudo: by
// the owner's bits if they own it, else the group's if it is their group
// (Ubuntu gives each user a group of their name), else the others'.
func (h *Host) mayRead(f *File) bool {
	switch {
	case h.user == "root":
		return true
	case f.Owner == h.user:
		return f.Mode&0o400 != 0
	case f.Group == h.user:
		return f.Mode&0o040 != 0
	}
	return f.Mode&0o004 != 0
}

// userDir reports whether p is where the login user may create files
// without sudo, and whether its directory has the sticky bit: their home
// (/home/USER, theirs) and /tmp and /var/tmp (1777), as on Ubuntu; / and
// every other system directory is root's and 0755.
func (h *Host) userDir(p string) (ok, sticky bool) {
	switch {
	case h.user == "root":
		return true, false
	case strings.HasPrefix(p, "/home/"+h.user+"/"):
		return true, false
	case strings.HasPrefix(p, "/tmp/"), strings.HasPrefix(p, "/var/tmp/"):
		return true, true
	}
	return false, false
}

// mayRemove reports whether the login user may remove the file at p
// without sudo: it takes write permission on its directory, and in a
// sticky directory owning the file (unlink(2), EPERM and EACCES).
func (h *Host) mayRemove(p string, f *File) bool {
	ok, sticky := h.userDir(p)
	return ok && (!sticky || f.Owner == h.user)
}

// isDir reports whether p is a directory of the model: a file lies under
// it.
func (h *Host) isDir(p string) bool {
	for q := range h.files {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// ReadFile returns the content of the file at path. See [remote.Host].
// Without opts.Sudo the login user must be allowed to read it.
func (h *Host) ReadFile(ctx context.Context, path string, opts remote.FileOptions) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := remote.CheckPath(path); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("%s: reading %s: %w", h.name, path, remote.ErrClosed)
	}
	call := Call{Op: OpReadFile, Path: path, Options: opts, Sudo: opts.Sudo, Exit: -1}
	f, ok := h.files[path]
	var err error
	switch {
	case !ok && h.isDir(path):
		err = h.pathError("reading", "read", path, syscall.EISDIR)
	case !ok:
		err = h.pathError("reading", "open", path, fs.ErrNotExist)
	case !opts.Sudo && !h.mayRead(f):
		err = h.pathError("reading", "open", path, fs.ErrPermission)
	}
	call.Err = err
	h.record(call)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(f.Data), nil
}

// WriteFile makes the file at path hold the bytes read from content with
// the mode and owner of opts. See [remote.Host]: it changes nothing, and
// reports unchanged, when the file already matches.
func (h *Host) WriteFile(ctx context.Context, path string, content io.Reader, opts remote.FileOptions) (bool, error) {
	data, err := io.ReadAll(content)
	if err != nil {
		return false, fmt.Errorf("%s: writing %s: reading the content: %w", h.name, path, err)
	}
	changed, err := h.write(ctx, []remote.FileWrite{{Path: path, Content: data, Options: opts}}, false)
	return changed[0], err
}

// WriteFiles writes several files as WriteFile would write each; see
// [remote.WriteFiles] and [remote.FilesWriter]. Every file must have the
// same Options.Sudo and no path may appear twice. Either every file is
// written or, on an error, none.
func (h *Host) WriteFiles(ctx context.Context, files []remote.FileWrite) ([]bool, error) {
	return h.write(ctx, files, true)
}

// badOwner reports whether name cannot be a user or group for chown, as
// remote judges it (remote/writefiles.go).
func badOwner(name string) bool {
	return strings.ContainsFunc(name, func(r rune) bool { return r == ':' || unicode.IsSpace(r) || unicode.IsControl(r) })
}

// write checks every file as SSHHost checks them (checkWrites in
// remote/writefiles.go, with its words), then writes them all.
func (h *Host) write(ctx context.Context, ws []remote.FileWrite, many bool) ([]bool, error) {
	changed := make([]bool, len(ws))
	if len(ws) == 0 {
		return changed, nil
	}
	if err := ctx.Err(); err != nil {
		return changed, fmt.Errorf("%s: writing %s: %w", h.name, ws[0].Path, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return changed, fmt.Errorf("%s: writing %s: %w", h.name, ws[0].Path, remote.ErrClosed)
	}
	sudo := ws[0].Options.Sudo
	seen := map[string]bool{}
	for _, w := range ws {
		if err := remote.CheckPath(w.Path); err != nil {
			return changed, err
		}
		o := w.Options
		switch {
		case many && o.Sudo != sudo:
			return changed, fmt.Errorf("%s: WriteFiles: %s differs from the other files in FileOptions.Sudo", h.name, w.Path)
		case seen[w.Path]:
			return changed, fmt.Errorf("%s: WriteFiles: %s is given twice", h.name, w.Path)
		case !o.Sudo && o.Owner != "" && o.Owner != h.user:
			return changed, fmt.Errorf("%s: writing %s owned by %s needs FileOptions.Sudo", h.name, w.Path, o.Owner)
		case badOwner(o.Owner) || badOwner(o.Group):
			return changed, fmt.Errorf("%s: writing %s: FileOptions.Owner %q or Group %q is not a user or group name or ID", h.name, w.Path, o.Owner, o.Group)
		}
		seen[w.Path] = true
	}

	dry := remote.IsDryRun(ctx)
	next := make([]File, len(ws))
	for i, w := range ws {
		cur := h.files[w.Path]
		f := h.desired(cur, w)
		if h.isDir(w.Path) {
			return make([]bool, len(ws)), h.pathError("writing", "rename", w.Path, syscall.EISDIR)
		}
		switch {
		case dry:
			// A dry run only probes, as SSHHost's write does before it
			// stages anything (probe and dryWrite in
			// remote/writefiles.go): the probe hashes a file of the
			// content's size, which it must be able to read; where the
			// file could not be created or replaced is found only when
			// it is staged, which a dry run does not do.
			if cur != nil && !w.Options.Sudo && !h.mayRead(cur) && len(cur.Data) == len(w.Content) {
				return make([]bool, len(ws)), h.pathError("writing", "open", w.Path, fs.ErrPermission)
			}
		case !w.Options.Sudo && h.user != "root":
			// A file is created where the user may create files; a file
			// replaced keeps its owner, which only root may give away
			// (chown(2): EPERM), and a group other than the user's own
			// is root's to set too.
			ok, _ := h.userDir(w.Path)
			keepsGroup := cur != nil && f.Group == cur.Group
			if !ok || (cur != nil && cur.Owner != h.user) || (f.Group != h.user && !keepsGroup) {
				return make([]bool, len(ws)), h.pathError("writing", "open", w.Path, fs.ErrPermission)
			}
		}
		next[i] = f
		changed[i] = cur == nil || !bytes.Equal(cur.Data, f.Data) || cur.Mode != f.Mode || cur.Owner != f.Owner || cur.Group != f.Group
	}
	if dry {
		return h.dryWrite(ctx, ws, changed)
	}
	for i, w := range ws {
		if changed[i] {
			f := next[i]
			h.files[w.Path] = &f
		}
		h.record(Call{Op: OpWriteFile, Path: w.Path, Options: w.Options, Sudo: w.Options.Sudo, Changed: changed[i], Exit: -1})
	}
	return changed, nil
}

// dryWrite ends a write in a dry run: it writes nothing and withholds,
// in one [*remote.WithheldError], the writes of the files that differ in
// content, mode, owner or group (differ), as SSHHost's dryWrite does
// (remote/writefiles.go); it reports every file unchanged. h.mu is held.
func (h *Host) dryWrite(ctx context.Context, ws []remote.FileWrite, differ []bool) ([]bool, error) {
	var write []string
	for i, w := range ws {
		if differ[i] {
			write = append(write, w.Path)
		}
	}
	var err error
	if len(write) > 0 {
		err = remote.Withhold(ctx, &remote.WithheldError{Host: h.name, Write: write})
	}
	for i, w := range ws {
		c := Call{Op: OpWriteFile, Path: w.Path, Options: w.Options, Sudo: w.Options.Sudo, Exit: -1, Withheld: differ[i]}
		if differ[i] {
			c.Err = err
		}
		h.record(c)
	}
	return make([]bool, len(ws)), err
}

// desired is the file w makes: a zero mode, owner or group keeps those
// of the existing file; a new file gets 0644 and belongs to root with
// Sudo, to the login user and their group without (desiredAttrs in
// remote/files.go).
func (h *Host) desired(cur *File, w remote.FileWrite) File {
	f := File{Data: bytes.Clone(w.Content), Mode: w.Options.Mode.Perm(), Owner: w.Options.Owner, Group: w.Options.Group}
	def := File{Mode: 0o644, Owner: h.user, Group: h.user}
	if w.Options.Sudo {
		def.Owner, def.Group = "root", "root"
	}
	if cur != nil {
		def = *cur
	}
	if f.Mode == 0 {
		f.Mode = def.Mode
	}
	if f.Owner == "" {
		f.Owner = def.Owner
	}
	if f.Group == "" {
		f.Group = def.Group
	}
	return f
}

// The $0 of the scripts remote's helpers run through Host.Run
// (remote/files.go, remote/removefiles.go).
const (
	readFilesName   = "mgmtkit-read-files"
	removeFilesName = "mgmtkit-remove-files"
	removeProbeName = "mgmtkit-remove-probe"
)

// builtin runs, on the host's files, the commands remote's helpers run
// through Host.Run: the scripts of [remote.ReadFiles] and
// [remote.RemoveFiles], the probe of RemoveFiles in a dry run, and the
// stat of [remote.GuardDryRun]. It reports false for any other command.
// The output and status are those of the scripts under dash (Debian
// 12's /bin/sh, 0.5.12) and of coreutils 9.1's stat, found by running
// them there, as a user without the permissions where it matters.
func (h *Host) builtin(c remote.Cmd) (Reply, bool) {
	if len(c.Args) == 0 || path.Base(c.Args[0]) != "sh" {
		return h.stat(c)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch scriptName(c.Args) {
	case readFilesName:
		return h.readFiles(c), true
	case removeFilesName:
		return h.removeFiles(c), true
	case removeProbeName:
		return h.removeProbe(c), true
	}
	return Reply{}, false
}

// readFiles is remote.ReadFiles' script; h.mu is held.
func (h *Host) readFiles(c remote.Cmd) Reply {
	// for f; do if [ -e "$f" ]; then n=$(wc -c < "$f"); echo $n;
	// head -c "$n" -- "$f"; else echo -; fi; done
	var out strings.Builder
	for _, p := range c.Args[4:] {
		f, ok := h.files[p]
		switch {
		case !ok:
			out.WriteString("-\n")
		case !c.Sudo && !h.mayRead(f):
			// The redirection fails in the command substitution:
			// dash names its $0 and the script's line, and the
			// assignment's status 2 stops the script (set -e).
			return Reply{Stdout: out.String(), Stderr: fmt.Sprintf("%s: 3: cannot open %s: Permission denied\n", readFilesName, p), Exit: 2}
		default:
			fmt.Fprintf(&out, "%d\n%s", len(f.Data), f.Data)
		}
	}
	return Reply{Stdout: out.String()}
}

// removeFiles is remote.RemoveFiles' script; h.mu is held.
func (h *Host) removeFiles(c remote.Cmd) Reply {
	// n=$1; shift; files: [ -e ] || [ -L ] → rm -f, echo removed; else
	// echo absent. Then each directory that is empty is removed: the
	// model's directories exist only while files lie under them.
	var out strings.Builder
	n, err := strconv.Atoi(c.Args[4])
	if err != nil || n < 0 || 5+n > len(c.Args) {
		return Reply{Stderr: fmt.Sprintf("%s: 4: Illegal number: %s\n", removeFilesName, c.Args[4]), Exit: 2}
	}
	for _, p := range c.Args[5 : 5+n] {
		f, ok := h.files[p]
		switch {
		case !ok && h.isDir(p):
			return Reply{Stdout: out.String(), Stderr: fmt.Sprintf("rm: cannot remove '%s': Is a directory\n", p), Exit: 1}
		case !ok:
			out.WriteString("absent\n")
		case !c.Sudo && !h.mayRemove(p, f):
			return Reply{Stdout: out.String(), Stderr: fmt.Sprintf("rm: cannot remove '%s': Permission denied\n", p), Exit: 1}
		default:
			delete(h.files, p)
			out.WriteString("removed\n")
		}
	}
	return Reply{Stdout: out.String()}
}

// removeProbe is the read-only probe of RemoveFiles in a dry run
// (removeProbeScript in remote/removefiles.go); h.mu is held. Its
// first argument is the number n of files that follow, the rest are
// directories. It prints "present" or "absent" for each file, then each
// directory that would be left empty, every entry of it a file or a
// directory counted gone before it. Reading needs no permission in the
// model, whose directories all may be searched and listed.
func (h *Host) removeProbe(c remote.Cmd) Reply {
	if len(c.Args) < 5 {
		// n=$1 under set -u.
		return Reply{Stderr: removeProbeName + ": 4: 1: parameter not set\n", Exit: 2}
	}
	// dash's test(1) takes a number after blanks; on anything else
	// `[ "$i" -le "$n" ]` says so and is false, so that every
	// argument is taken for a directory, and the script goes on.
	n, err := strconv.Atoi(strings.TrimLeft(c.Args[4], " \t\n"))
	number := err == nil
	var out, stderr strings.Builder
	gone := map[string]bool{}
	for i, p := range c.Args[5:] {
		if number && i < n {
			if _, ok := h.files[p]; ok || h.isDir(p) {
				out.WriteString("present\n")
				gone[p] = true
			} else {
				out.WriteString("absent\n")
			}
			continue
		}
		if !number {
			fmt.Fprintf(&stderr, "%s: 10: [: Illegal number: %s\n", removeProbeName, c.Args[4])
		}
		if !h.isDir(p) {
			continue
		}
		empty := true
		for _, e := range h.entries(p) {
			empty = empty && gone[e]
		}
		if empty {
			out.WriteString(p + "\n")
			gone[p] = true
		}
	}
	return Reply{Stdout: out.String(), Stderr: stderr.String()}
}

// entries returns the paths of the entries of directory dir: its files,
// and its directories, those under which files lie; h.mu is held.
func (h *Host) entries(dir string) []string {
	seen := map[string]bool{}
	for q := range h.files {
		rest, ok := strings.CutPrefix(q, dir+"/")
		if !ok {
			continue
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		seen[dir+"/"+rest] = true
	}
	return slices.Collect(maps.Keys(seen))
}

// stat answers `stat -L -c '%a %U %G' -- PATH`, the read-only look of
// [remote.GuardDryRun] at a file's mode and owners (holds in
// remote/dryrun.go), for a file of the model or a missing one, with
// coreutils 9.1's output and status. A directory's mode and owners are
// not modelled: that needs a rule.
func (h *Host) stat(c remote.Cmd) (Reply, bool) {
	if len(c.Args) != 6 || !slices.Equal(c.Args[:5], []string{"stat", "-L", "-c", "%a %U %G", "--"}) {
		return Reply{}, false
	}
	p := c.Args[5]
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[p]
	switch {
	case ok:
		return Reply{Stdout: fmt.Sprintf("%o %s %s\n", f.Mode.Perm(), f.Owner, f.Group)}, true
	case h.isDir(p):
		return Reply{}, false
	}
	return Reply{Stderr: fmt.Sprintf("stat: cannot statx '%s': No such file or directory\n", p), Exit: 1}, true
}

package remotetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
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

	next := make([]File, len(ws))
	for i, w := range ws {
		cur := h.files[w.Path]
		f := h.desired(cur, w)
		if h.isDir(w.Path) {
			return make([]bool, len(ws)), h.pathError("writing", "rename", w.Path, syscall.EISDIR)
		}
		if !w.Options.Sudo && h.user != "root" {
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
	for i, w := range ws {
		if changed[i] {
			f := next[i]
			h.files[w.Path] = &f
		}
		h.record(Call{Op: OpWriteFile, Path: w.Path, Options: w.Options, Sudo: w.Options.Sudo, Changed: changed[i], Exit: -1})
	}
	return changed, nil
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
)

// isBuiltin reports whether c is the script of [remote.ReadFiles] or
// [remote.RemoveFiles], which the host runs on its files.
func (h *Host) isBuiltin(c remote.Cmd) bool {
	if len(c.Args) == 0 || path.Base(c.Args[0]) != "sh" {
		return false
	}
	switch scriptName(c.Args) {
	case readFilesName, removeFilesName:
		return true
	}
	return false
}

// builtin runs the script of remote.ReadFiles or remote.RemoveFiles on
// the host's files, with the output and status the script has under
// dash (Debian 12's /bin/sh, 0.5.12), found by running it there as a
// user without the permissions.
func (h *Host) builtin(c remote.Cmd) Reply {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out strings.Builder
	if scriptName(c.Args) == readFilesName {
		// for f; do if [ -e "$f" ]; then n=$(wc -c < "$f"); echo $n;
		// head -c "$n" -- "$f"; else echo -; fi; done
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
	// n=$1; shift; files: [ -e ] || [ -L ] → rm -f, echo removed; else
	// echo absent. Then each directory that is empty is removed: the
	// model's directories exist only while files lie under them.
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

package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pkg/sftp"
)

// Writes that need no sudo and change no owner or group are checked and
// put in place over the SFTP channel already open for the upload, without
// a shell command: a stat (and, for a small file of the content's size, a
// read) instead of the probe, and a chmod and an atomic posix-rename
// instead of the commit. Each is one SFTP round trip; a command is a
// session, a process and several round trips (BENCHMARKS.md).

// sftpProbes reports whether ws, one file, can be probed over SFTP.
func (h *SSHHost) sftpProbes(ws []fileWrite) bool {
	return len(ws) == 1 && keepsOwnership(ws[0])
}

// keepsOwnership reports whether w is written as the login user and keeps
// the owner and group the file has (or the login user's, for a new file).
func keepsOwnership(w fileWrite) bool {
	return !w.opts.Sudo && w.opts.Owner == "" && w.opts.Group == ""
}

// probeSFTP finds what the probe command would for w: whether the file
// exists, its mode and size, and its SHA-256 when the content may be the
// same (its size is unknown or the file's) and the file is small enough
// to read back. It returns nil, nil when only the probe command can tell
// (a larger file to hash, a file the login user cannot stat or read), and
// leaves owner and group empty: keepsOwnership(w) holds, so they are
// neither compared nor changed.
func (h *SSHHost) probeSFTP(ctx context.Context, w fileWrite) ([]remoteFile, error) {
	var cur []remoteFile
	err := h.withSFTP(ctx, func(_ *conn, client *sftp.Client) error {
		cur = nil
		fi, err := client.Stat(w.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, lerr := client.Lstat(w.path); lerr == nil {
				return fmt.Errorf("%s: %s: not a regular file (a dangling symbolic link)", h.name, w.path)
			}
			cur = []remoteFile{{}}
			return nil
		case err != nil:
			return nil // the probe command will say
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s: %s: not a regular file", h.name, w.path)
		}
		f := remoteFile{exists: true, mode: fi.Mode().Perm(), size: fi.Size()}
		if w.size < 0 || w.size == f.size {
			if f.size > readBackMax {
				return nil
			}
			if f.sum, err = readBackSum(client, w.path); err != nil {
				return nil
			}
		}
		cur = []remoteFile{f}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cur, nil
}

// commitSFTP puts the staged files of ws in place and fixes the modes of
// the others over SFTP, when every file keeps its ownership, every staged
// file was verified on its way, and the server renames atomically
// (posix-rename@openssh.com). It reports done when it committed every
// file that needed it, and sets changed for them. When it cannot (not
// eligible, or a rename refused: another file system, a directory it may
// not write), it returns done false, having marked the files it did put in
// place (fileWrite.done), for the commit command to finish. lost and err
// are as writeOnce's.
func (h *SSHHost) commitSFTP(ctx context.Context, ws []fileWrite, changed []bool) (done, lost bool, err error) {
	todo := false
	for _, w := range ws {
		if !keepsOwnership(w) || w.upload && !w.verified {
			return false, false, nil
		}
		todo = todo || w.upload || w.attrsDiffer()
	}
	if !todo {
		return false, false, nil
	}
	c, client, err := h.sftpClient(ctx)
	if err != nil {
		return false, false, nil
	}
	if _, ok := client.HasExtension("posix-rename@openssh.com"); !ok {
		return false, false, nil
	}
	release := c.guard(ctx)
	defer release()
	for i := range ws {
		w := &ws[i]
		switch {
		case w.upload:
			err = h.renameStaged(client, w)
		case w.attrsDiffer():
			err = client.Chmod(w.path, w.mode)
		default:
			continue
		}
		switch {
		case err == nil:
			changed[i], w.done = true, true
			continue
		case ctx.Err() != nil:
			return true, false, ctxErr(ctx, err)
		case sftpLost(err):
			c.dropSFTP(client)
			planned := make([]bool, len(ws))
			for j, v := range ws {
				planned[j] = v.upload || v.attrsDiffer() || v.done
			}
			if h.committed(ctx, ws, planned) {
				copy(changed, planned)
				for j := range ws {
					ws[j].staged = ""
				}
				return true, false, nil
			}
			return true, true, fmt.Errorf("%w: sftp: %v", ErrConnectionLost, err)
		}
		h.log.Debug("sftp commit refused; committing by command", "path", w.path, "error", err)
		return false, false, nil
	}
	return true, false, nil
}

// renameStaged gives w's staged file the owner and group of the file it
// replaces (by number: the login user may give a file a group it belongs
// to) and its mode, and renames it over the file.
func (h *SSHHost) renameStaged(client *sftp.Client, w *fileWrite) error {
	if w.cur.exists {
		dst, err := client.Stat(w.path)
		if err != nil {
			return err
		}
		staged, err := client.Lstat(w.staged)
		if err != nil {
			return err
		}
		du, dg, ok1 := fileIDs(dst)
		su, sg, ok2 := fileIDs(staged)
		if ok1 && ok2 && (du != su || dg != sg) {
			if err := client.Chown(w.staged, int(du), int(dg)); err != nil {
				return err
			}
		}
	}
	if err := client.Chmod(w.staged, w.mode); err != nil {
		return err
	}
	if err := client.PosixRename(w.staged, w.path); err != nil {
		return err
	}
	w.staged = ""
	h.log.Debug("file written", "path", w.path, "sha256", w.sum)
	return nil
}

// fileIDs returns the owner and group of a file SFTP reported on, if the
// server said.
func fileIDs(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	if st, ok := fi.Sys().(*sftp.FileStat); ok {
		return st.UID, st.GID, true
	}
	return 0, 0, false
}

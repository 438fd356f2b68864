package sshtest

import (
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/pkg/sftp"
)

// sftpHandler serves SFTP requests from the fake host's filesystem with the
// permissions of the logged-in user, like OpenSSH's internal-sftp.
type sftpHandler struct {
	fs *UserFS
}

var (
	_ sftp.FileReader           = (*sftpHandler)(nil)
	_ sftp.OpenFileWriter       = (*sftpHandler)(nil)
	_ sftp.PosixRenameFileCmder = (*sftpHandler)(nil)
	_ sftp.LstatFileLister      = (*sftpHandler)(nil)
	_ sftp.ReadlinkFileLister   = (*sftpHandler)(nil)
)

func (h *sftpHandler) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	return h.fs.OpenFile(r.Filepath, syscall.O_RDONLY, 0)
}

func (h *sftpHandler) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	return h.open(r)
}

func (h *sftpHandler) OpenFile(r *sftp.Request) (sftp.WriterAtReaderAt, error) {
	return h.open(r)
}

func (h *sftpHandler) open(r *sftp.Request) (*File, error) {
	pf := r.Pflags()
	flag := 0
	switch {
	case pf.Read && pf.Write:
		flag = syscall.O_RDWR
	case pf.Write:
		flag = syscall.O_WRONLY
	}
	if pf.Creat {
		flag |= syscall.O_CREAT
	}
	if pf.Trunc {
		flag |= syscall.O_TRUNC
	}
	if pf.Excl {
		flag |= syscall.O_EXCL
	}
	// pkg/sftp writes at explicit offsets, so O_APPEND is not passed on.
	perm := fs.FileMode(0o666)
	if r.AttrFlags().Permissions {
		perm = r.Attributes().FileMode().Perm()
	}
	return h.fs.OpenFile(r.Filepath, flag, perm)
}

func (h *sftpHandler) Filecmd(r *sftp.Request) error {
	switch r.Method {
	case "Setstat":
		return h.setstat(r)
	case "Rename":
		// SSH_FXP_RENAME must not overwrite an existing file.
		if _, err := h.fs.Lstat(r.Target); err == nil {
			return &fs.PathError{Op: "rename", Path: r.Target, Err: syscall.EEXIST}
		}
		return h.fs.Rename(r.Filepath, r.Target)
	case "Rmdir":
		fi, err := h.fs.Lstat(r.Filepath)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &fs.PathError{Op: "rmdir", Path: r.Filepath, Err: syscall.ENOTDIR}
		}
		return h.fs.Remove(r.Filepath)
	case "Mkdir":
		// As OpenSSH's sftp-server: the requested mode, or 0777, less
		// the umask.
		perm := fs.FileMode(0o777)
		if r.AttrFlags().Permissions {
			perm = r.Attributes().FileMode().Perm()
		}
		return h.fs.Mkdir(r.Filepath, perm)
	case "Link":
		return h.fs.Link(r.Filepath, r.Target)
	case "Symlink":
		// pkg/sftp swaps the arguments of OpenSSH's reversed SYMLINK packet.
		return h.fs.Symlink(r.Filepath, r.Target)
	case "Remove":
		fi, err := h.fs.Lstat(r.Filepath)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return &fs.PathError{Op: "remove", Path: r.Filepath, Err: syscall.EISDIR}
		}
		return h.fs.Remove(r.Filepath)
	}
	return sftp.ErrSSHFxOpUnsupported
}

func (h *sftpHandler) PosixRename(r *sftp.Request) error {
	return h.fs.Rename(r.Filepath, r.Target)
}

func (h *sftpHandler) setstat(r *sftp.Request) error {
	flags, attrs := r.AttrFlags(), r.Attributes()
	if flags.Permissions {
		if err := h.fs.Chmod(r.Filepath, attrs.FileMode()); err != nil {
			return err
		}
	}
	if flags.UidGid {
		if err := h.fs.Chown(r.Filepath, int(attrs.UID), int(attrs.GID)); err != nil {
			return err
		}
	}
	if flags.Size {
		if err := h.fs.Truncate(r.Filepath, int64(attrs.Size)); err != nil {
			return err
		}
	}
	if flags.Acmodtime {
		if err := h.fs.Chtimes(r.Filepath, attrs.ModTime()); err != nil {
			return err
		}
	}
	return nil
}

func (h *sftpHandler) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	switch r.Method {
	case "List":
		entries, err := h.fs.ReadDir(r.Filepath)
		if err != nil {
			return nil, err
		}
		infos := make(listerAt, 0, len(entries))
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				return nil, err
			}
			infos = append(infos, fi)
		}
		return infos, nil
	case "Stat":
		fi, err := h.fs.Stat(r.Filepath)
		if err != nil {
			return nil, err
		}
		return listerAt{fi}, nil
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

func (h *sftpHandler) Lstat(r *sftp.Request) (sftp.ListerAt, error) {
	fi, err := h.fs.Lstat(r.Filepath)
	if err != nil {
		return nil, err
	}
	return listerAt{fi}, nil
}

func (h *sftpHandler) Readlink(name string) (string, error) { return h.fs.Readlink(name) }

type listerAt []os.FileInfo

func (l listerAt) ListAt(out []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(out, l[off:])
	if off+int64(n) >= int64(len(l)) {
		return n, io.EOF
	}
	return n, nil
}

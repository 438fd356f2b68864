package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/sftp"
)

// SFTP write sizes. Every upload keeps 2 MiB in flight, whatever the
// file's size: 16 writes of 128 KiB to OpenSSH, whose sftp-server accepts
// messages up to 256 KiB, and otherwise 64 writes of 32 KiB, the size every
// SFTP server must accept. Larger writes cut the per-request work on both
// sides (BENCHMARKS.md: 350 to 480 MB/s on loopback).
const (
	sftpOpenSSHPacket    = 128 << 10
	sftpOpenSSHInFlight  = 16
	sftpPortablePacket   = 32 << 10
	sftpPortableInFlight = 64
)

// withSFTP runs fn with the connection's SFTP client, starting the client
// on first use. If the SFTP channel turns out to be gone (the server ended
// the subsystem, or the connection dropped), fn runs once more with a new
// client; fn must be safe to repeat. fn runs under the connection's guard:
// if ctx ends and the connection is frozen, it is closed and fn's requests
// fail at once.
func (h *SSHHost) withSFTP(ctx context.Context, fn func(c *conn, client *sftp.Client) error) error {
	for attempt := 0; ; attempt++ {
		c, client, err := h.sftpClient(ctx)
		if err != nil {
			return ctxErr(ctx, err)
		}
		release := c.guard(ctx)
		err = fn(c, client)
		release()
		switch {
		case ctx.Err() != nil:
			return ctxErr(ctx, err)
		case !sftpLost(err):
			return err
		case attempt == 1:
			return fmt.Errorf("%w: sftp: %v", ErrConnectionLost, err)
		}
		c.dropSFTP(client)
		h.log.Info("sftp channel lost; starting a new one", "error", err)
	}
}

// sftpLost reports whether err means the SFTP channel is gone: pkg/sftp
// says "connection lost" for requests in flight when it ends, and fails
// to send new ones with EOF once it has ended.
func sftpLost(err error) bool {
	return errors.Is(err, sftp.ErrSSHFxConnectionLost) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
}

// dropSFTP forgets client if it is still the connection's SFTP client.
func (c *conn) dropSFTP(client *sftp.Client) {
	c.sftpMu.Lock()
	defer c.sftpMu.Unlock()
	if c.sftp == client {
		c.sftp = nil
		client.Close()
	}
}

// sftpClient returns the connection's SFTP client, starting it on first use.
func (h *SSHHost) sftpClient(ctx context.Context) (*conn, *sftp.Client, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	c.sftpMu.Lock()
	defer c.sftpMu.Unlock()
	if c.sftp != nil {
		return c, c.sftp, nil
	}
	packet, inFlight := sftpPortablePacket, sftpPortableInFlight
	if strings.Contains(string(c.client.ServerVersion()), "OpenSSH") {
		packet, inFlight = sftpOpenSSHPacket, sftpOpenSSHInFlight
	}
	defer c.guard(ctx)()
	client, err := sftp.NewClient(c.client,
		sftp.UseConcurrentWrites(true),
		sftp.MaxPacketUnchecked(packet),
		sftp.MaxConcurrentRequestsPerFile(inFlight),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: starting sftp: %w", h.name, err)
	}
	home, err := client.Getwd()
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("%s: sftp: %w", h.name, err)
	}
	c.sftp, c.home, c.sftpPacket, c.sftpInFlight = client, home, packet, inFlight
	// Forget the client when its channel ends, so the next use starts a
	// new one instead of failing forever.
	go func() {
		client.Wait()
		c.dropSFTP(client)
	}()
	return c, client, nil
}

// knownSize returns the number of bytes left in r when r can tell (a
// seekable reader, an fs.File), or -1.
func knownSize(r io.Reader) int64 {
	if s, ok := r.(io.Seeker); ok {
		cur, err1 := s.Seek(0, io.SeekCurrent)
		end, err2 := s.Seek(0, io.SeekEnd)
		if _, err3 := s.Seek(cur, io.SeekStart); err1 == nil && err2 == nil && err3 == nil {
			return end - cur
		}
	}
	return -1
}

// hashAndRewind returns the hex SHA-256 of the rest of r, a seeker, and
// seeks back to where it was.
func hashAndRewind(r io.Reader) (string, error) {
	s := r.(io.Seeker)
	start, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	if _, err := s.Seek(start, io.SeekStart); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// removeStaged removes a staged file left by a commit that failed before
// it started, without waiting long and even if ctx has ended.
func (h *SSHHost) removeStaged(ctx context.Context, staged string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	h.withSFTP(ctx, func(_ *conn, client *sftp.Client) error { return client.Remove(staged) })
}

// desiredAttrs resolves the zero values of opts against the current file.
func desiredAttrs(cur remoteFile, opts FileOptions) (mode fs.FileMode, owner, group string) {
	mode, owner, group = opts.Mode.Perm(), opts.Owner, opts.Group
	if mode == 0 {
		mode = 0o644
		if cur.exists {
			mode = cur.mode
		}
	}
	if cur.exists {
		if owner == "" {
			owner = cur.owner
		}
		if group == "" {
			group = cur.group
		}
	}
	return mode, owner, group
}

// stagingDirName is the login user's private staging directory, in their
// home directory: every file WriteFile and WriteFiles write is uploaded
// there first, then moved (or, under sudo, copied) into place.
//
// Staging files cannot be created with their final mode: pkg/sftp sends
// SSH_FXP_OPEN without attributes, and OpenSSH's sftp-server then creates
// the file with mode 0666 less its umask (sftp-server.c, process_open:
// `mode = (a.flags & SSH2_FILEXFER_ATTR_PERMISSIONS) ? a.perm : 0666;
// fd = open(name, flags, mode);`), so a 0600 file is readable by anyone
// until its chmod, and a descriptor opened in that window reads every byte
// written later. A directory of mode 0700 closes the window whatever the
// files' modes: the kernel checks search permission on the directory at
// every open of a file in it, including an openat from a descriptor or a
// working directory obtained earlier.
const stagingDirName = ".mgmtkit-staging"

// stagingDir returns the connection's staging directory, making and
// checking it on first use, or again when recheck is set. The directory is
// shared by every write of every connection of the login user, and kept.
func (h *SSHHost) stagingDir(c *conn, client *sftp.Client, recheck bool) (string, error) {
	c.sftpMu.Lock()
	dir := c.stage
	c.sftpMu.Unlock()
	if dir != "" && !recheck {
		return dir, nil
	}
	dir = path.Join(c.home, stagingDirName)
	if err := privateDir(client, dir); err != nil {
		return "", fmt.Errorf("%s: staging directory %s: %w", h.name, dir, err)
	}
	c.sftpMu.Lock()
	c.stage = dir
	c.sftpMu.Unlock()
	return dir, nil
}

// privateDir makes dir a directory that only the login user can enter, or
// checks that it already is one: a directory (not a symbolic link to one),
// mode 0700 and owned by the login user. It never follows a link at dir.
//
// The mkdir passes through the server's umask (sftp-server.c,
// process_mkdir: `mode = (a.flags & SSH2_FILEXFER_ATTR_PERMISSIONS) ?
// a.perm & 07777 : 0777;`, and pkg/sftp's Mkdir sends no attributes), so
// the mode is set and checked afterwards. Until then the directory is
// empty; someone who opened it in that moment can later list the random
// names of staged files through that descriptor, but open none of them.
func privateDir(client *sftp.Client, dir string) error {
	mkErr := client.Mkdir(dir)
	before, err := client.Lstat(dir)
	switch {
	case err != nil && mkErr != nil:
		return mkErr
	case err != nil:
		return err
	case !before.IsDir():
		return fmt.Errorf("exists and is not a directory (%v); refusing to use it", before.Mode().Type())
	}
	if err := client.Chmod(dir, 0o700); err != nil {
		return err
	}
	after, err := client.Lstat(dir)
	if err != nil {
		return err
	}
	if !after.IsDir() || after.Mode().Perm() != 0o700 || fileUID(after) != fileUID(before) {
		return fmt.Errorf("changed while it was checked (now %v); refusing to use it", after.Mode())
	}
	if mkErr == nil {
		return nil // made by the login user just now
	}
	// The directory was there before: make sure the login user owns it,
	// by comparing its owner with the owner of a file made in it. (A user
	// other than root cannot make files in another user's 0700 directory,
	// and cannot chmod it; root can do both.)
	marker := path.Join(dir, ".owner-"+randomSuffix())
	f, err := client.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	f.Close()
	client.Remove(marker)
	if err != nil {
		return err
	}
	if fileUID(fi) != fileUID(after) {
		return fmt.Errorf("owned by uid %d, not by the login user (uid %d); refusing to use it", fileUID(after), fileUID(fi))
	}
	return nil
}

// writableDir makes dir and its parents as needed and checks that the
// login user can create files in it, by making and removing an empty
// directory there: a commit without sudo moves the staged file into dir,
// and a directory the login user cannot write to is better found before
// the upload. The error is the server's (errors.Is fs.ErrPermission when
// it refuses).
func (h *SSHHost) writableDir(client *sftp.Client, dir string) error {
	if err := client.MkdirAll(dir); err != nil {
		return fmt.Errorf("%s: creating %s: %w", h.name, dir, err)
	}
	check := path.Join(dir, ".mgmtkit-check-"+randomSuffix())
	if err := client.Mkdir(check); err != nil {
		return fmt.Errorf("%s: creating a file in %s: %w", h.name, dir, err)
	}
	client.RemoveDirectory(check)
	return nil
}

// fileUID returns the owner of a file SFTP reported on, or -1 when the
// server did not say.
func fileUID(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*sftp.FileStat); ok {
		return int64(st.UID)
	}
	return -1
}

// stage uploads content to a new file in the staging directory and
// returns its path and the content's SHA-256. A staged file that could
// not be written completely is removed. If the staging directory has
// disappeared since it was checked (someone removed it), it is made again.
func (h *SSHHost) stage(ctx context.Context, c *conn, client *sftp.Client, content io.Reader, readBack, follow bool) (staged, sum string, verified bool, err error) {
	for attempt := 0; ; attempt++ {
		dir, err := h.stagingDir(c, client, attempt > 0)
		if err != nil {
			return "", "", false, err
		}
		// A random name: it tells nothing about the file, even to someone
		// who opened the directory in the moment before its chmod.
		staged = path.Join(dir, "mgmtkit-"+randomSuffix())
		f, err := client.OpenFile(staged, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if errors.Is(err, fs.ErrNotExist) && attempt == 0 {
			continue
		}
		if err != nil {
			return "", "", false, fmt.Errorf("%s: creating %s: %w", h.name, staged, err)
		}
		if sum, verified, err = h.upload(ctx, c, client, f, staged, content, readBack, follow); err != nil {
			client.Remove(staged)
			return "", "", false, err
		}
		return staged, sum, verified, nil
	}
}

// ctxReader stops reading once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readScript prints the file named by $1, or exits 66 when it is missing.
const readScript = `[ -e "$1" ] || exit 66
exec cat -- "$1"`

// ReadFile reads a whole file. See [Host]. Without Sudo it is read over
// SFTP; with Sudo through `sudo cat`.
func (h *SSHHost) ReadFile(ctx context.Context, file string, opts FileOptions) ([]byte, error) {
	if err := CheckPath(file); err != nil {
		return nil, err
	}
	if !opts.Sudo {
		var data []byte
		err := h.withSFTP(ctx, func(_ *conn, client *sftp.Client) error {
			f, err := client.Open(file)
			if err != nil {
				return fmt.Errorf("%s: reading %s: %w", h.name, file, err)
			}
			defer f.Close()
			if data, err = io.ReadAll(f); err != nil {
				return fmt.Errorf("%s: reading %s: %w", h.name, file, err)
			}
			return nil
		})
		return data, err
	}
	out, err := h.Run(ctx, Cmd{Args: []string{"sh", "-c", readScript, "mgmtkit-read", file}, Sudo: true, OKExit: []int{66}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	if out.ExitCode == 66 {
		return nil, fmt.Errorf("%s: %w", h.name, &fs.PathError{Op: "open", Path: file, Err: fs.ErrNotExist})
	}
	return out.Stdout, nil
}

// CheckPath returns an error, in remote's words, unless p is a path that
// [Host.WriteFile], [Host.ReadFile], [ReadFiles], [WriteFiles] and
// [RemoveFiles] accept: absolute, clean (as path.Clean leaves it),
// without a NUL byte or a newline, and not "/". A Host of one's own
// refuses the same paths with it.
func CheckPath(p string) error {
	switch {
	case !path.IsAbs(p):
		return fmt.Errorf("remote: path %q must be absolute", p)
	case path.Clean(p) != p:
		return fmt.Errorf("remote: path %q is not clean (want %q)", p, path.Clean(p))
	case strings.ContainsAny(p, "\x00\n"):
		return fmt.Errorf("remote: path %q contains a NUL or newline", p)
	case p == "/":
		return errors.New(`remote: path "/" is not a file`)
	}
	return nil
}

func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// UploadFile copies the file name of fsys (a VNF package, an os.DirFS, an
// embed.FS) to dst on h with [Host.WriteFile]: streamed, atomic, skipped
// when dst already holds the same bytes.
func UploadFile(ctx context.Context, h Host, fsys fs.FS, name, dst string, opts FileOptions) (bool, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("remote: %s is not a regular file", name)
	}
	return h.WriteFile(ctx, dst, f, opts)
}

// readFilesScript prints, for each file argument, its size on a line and
// then exactly that many bytes of it, or "-" on a line for a file that
// does not exist.
const readFilesScript = `set -eu
for f in "$@"; do
  if [ -e "$f" ]; then n=$(wc -c < "$f"); echo $n; head -c "$n" -- "$f"; else echo -; fi
done`

// ReadFiles reads several small files with one command (as root with
// opts.Sudo): the contents of those that exist, by path. A step that must
// look at several configuration files before it changes any pays one
// round trip instead of one per file. The output is held in memory: use
// it for configuration files, not images.
func ReadFiles(ctx context.Context, h Host, files []string, opts FileOptions) (map[string][]byte, error) {
	if len(files) == 0 {
		return map[string][]byte{}, nil
	}
	for _, f := range files {
		if err := CheckPath(f); err != nil {
			return nil, err
		}
	}
	args := append([]string{"sh", "-c", readFilesScript, "mgmtkit-read-files"}, files...)
	out, err := h.Run(ctx, Cmd{Args: args, Sudo: opts.Sudo, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	got := map[string][]byte{}
	rest := out.Stdout
	for _, f := range files {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("%s: reading %s: the output ended early", h.Name(), f)
		}
		rest = after
		if string(line) == "-" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(line)))
		if err != nil || n < 0 || n > len(rest) {
			return nil, fmt.Errorf("%s: reading %s: unexpected output (did the file change while it was read?)", h.Name(), f)
		}
		got[f], rest = rest[:n:n], rest[n:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%s: reading %d files: %d bytes of unexpected output", h.Name(), len(files), len(rest))
	}
	return got, nil
}

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
	c.sftp, c.home, c.sftpInFlight = client, home, inFlight
	// Forget the client when its channel ends, so the next use starts a
	// new one instead of failing forever.
	go func() {
		client.Wait()
		c.dropSFTP(client)
	}()
	return c, client, nil
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

// probeScript prints "absent", or the mode, owner, group and size of the
// file named by $1 and, unless $2 is a size the file does not have, its
// SHA-256. It fails for anything but a regular file (or a link to one).
const probeScript = `set -eu
` + sha256Func + `if [ ! -e "$1" ] && [ ! -L "$1" ]; then echo absent; exit 0; fi
if [ ! -f "$1" ]; then echo "$1: not a regular file" >&2; exit 1; fi
attrs=$(stat -L -c '%a %U %G %s' -- "$1")
echo "$attrs"
if [ -z "$2" ] || [ "${attrs##* }" = "$2" ]; then sha256 < "$1"; fi`

// probe looks at the file at path. size is the size of the content about
// to be written, or -1 when unknown; the probe hashes the file only when
// its size matches, since a file of another size cannot hold the content.
func (h *SSHHost) probe(ctx context.Context, file string, size int64, sudo bool) (remoteFile, error) {
	want := ""
	if size >= 0 {
		want = strconv.FormatInt(size, 10)
	}
	out, err := h.Run(ctx, Cmd{Args: []string{"sh", "-c", probeScript, "mgmtkit-probe", file, want}, Sudo: sudo, Idempotent: true})
	if err != nil {
		return remoteFile{}, err
	}
	bad := func() (remoteFile, error) {
		return remoteFile{}, fmt.Errorf("%s: unexpected probe output for %s: %q", h.name, file, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) == 1 && lines[0] == "absent" {
		return remoteFile{}, nil
	}
	attrs := strings.Fields(lines[0])
	if len(attrs) != 4 || len(lines) > 2 {
		return bad()
	}
	mode, err1 := strconv.ParseUint(attrs[0], 8, 32)
	fsize, err2 := strconv.ParseInt(attrs[3], 10, 64)
	if err1 != nil || err2 != nil {
		return bad()
	}
	f := remoteFile{exists: true, mode: fs.FileMode(mode) & fs.ModePerm, owner: attrs[1], group: attrs[2], size: fsize}
	if len(lines) == 2 {
		if f.sum, _, _ = strings.Cut(lines[1], " "); len(f.sum) != 64 {
			return bad()
		}
	}
	return f, nil
}

// commitScript moves a verified staged file into place. Arguments: staged
// file, destination, expected SHA-256, mode (octal), owner, group, and how
// the staged file reaches the destination's directory: "rename" or "copy".
//
// The staged file is first put in a temporary file next to the
// destination, made by mktemp (mode 0600), so that the final step is a
// rename within one directory: readers see the old file or the new one,
// never a part. "rename" moves it there (mv renames within a filesystem
// and copies across them); "copy", for commits under sudo, copies it into
// the root-owned temporary file, so that the login user keeps no
// descriptor on the file root ends up using. The temporary file is
// verified against the expected checksum, given its owner and mode and
// renamed; the staged file is removed whatever happens.
const commitScript = `set -eu
` + sha256Func + `src=$1 dst=$2 sum=$3 mode=$4 owner=$5 group=$6 how=$7
dir=${dst%/*}
[ -n "$dir" ] || dir=/
trap 'rm -f -- "$src"' EXIT
mkdir -p -- "$dir"
tmp=$(mktemp -p "$dir" ".${dst##*/}.mgmtkit-XXXXXX")
trap 'rm -f -- "$src" "$tmp"' EXIT
if [ "$how" = rename ]; then mv -f -- "$src" "$tmp"; else cat -- "$src" > "$tmp"; fi
got=$(sha256 < "$tmp")
if [ "${got%% *}" != "$sum" ]; then
  echo "checksum mismatch after transfer of $dst" >&2
  exit 65
fi
if [ -n "$owner$group" ]; then chown -- "$owner:$group" "$tmp"; fi
chmod -- "$mode" "$tmp"
mv -f -- "$tmp" "$dst"`

// commitHow says how a commit script brings a staged file next to its
// destination: a rename when the login user commits (the file is theirs
// either way), a copy into a fresh root-owned file under sudo.
func commitHow(sudo bool) string {
	if sudo {
		return "copy"
	}
	return "rename"
}

// WriteFile writes content to path atomically. See [Host].
//
// The content is hashed first when it is seekable (an *os.File, a
// *bytes.Reader, most fs.File values), so an unchanged file costs one
// command and no transfer. Otherwise it is streamed to a staging file in
// the login user's private staging directory (~/.mgmtkit-staging, mode
// 0700) and compared there, then moved into place by one command, run through sudo
// for root-owned destinations (Sudo).
func (h *SSHHost) WriteFile(ctx context.Context, file string, content io.Reader, opts FileOptions) (bool, error) {
	return h.writeFile(ctx, file, content, opts, false)
}

// writeFile is WriteFile; retried says this is the one retry of a write
// whose commit was lost with its connection.
func (h *SSHHost) writeFile(ctx context.Context, file string, content io.Reader, opts FileOptions, retried bool) (bool, error) {
	if err := checkPath(file); err != nil {
		return false, err
	}
	if !opts.Sudo && (opts.Owner != "" && opts.Owner != h.cfg.User) {
		return false, fmt.Errorf("%s: writing %s owned by %s needs FileOptions.Sudo", h.name, file, opts.Owner)
	}
	size := knownSize(content)
	cur, err := h.probe(ctx, file, size, opts.Sudo)
	if err != nil {
		return false, err
	}
	mode, owner, group := desiredAttrs(cur, opts)
	if !cur.exists && opts.Sudo && owner == "" && group == "" {
		// Staged files belong to the login user; a new file written as
		// root belongs to root.
		owner, group = "root", "root"
	}
	// A seekable source of the same size as the file is hashed first, so
	// that an unchanged file costs no transfer. Any other source is hashed
	// on its way out.
	var want string
	if cur.sum != "" && size >= 0 {
		if want, err = hashAndRewind(content); err != nil {
			return false, fmt.Errorf("%s: reading the content for %s: %w", h.name, file, err)
		}
		if want == cur.sum {
			return h.fixAttrs(ctx, file, cur, mode, owner, group, opts.Sudo)
		}
	}

	var staged, sum string
	start := int64(-1) // where a replay of the content starts, if possible
	if s, ok := content.(io.Seeker); ok {
		if start, err = s.Seek(0, io.SeekCurrent); err != nil {
			start = -1
		}
	}
	replay := false
	err = h.withSFTP(ctx, func(c *conn, client *sftp.Client) error {
		if !opts.Sudo {
			if err := h.writableDir(client, path.Dir(file)); err != nil {
				return err
			}
		}
		if replay {
			if start < 0 {
				return fmt.Errorf("%s: the sftp channel was lost while uploading %s, and the content cannot be read again", h.name, file)
			}
			if _, err := content.(io.Seeker).Seek(start, io.SeekStart); err != nil {
				return fmt.Errorf("%s: rewinding the content for %s: %w", h.name, file, err)
			}
		}
		replay = true
		var err error
		if staged, sum, err = h.stage(ctx, c, client, file, content); err != nil {
			return err
		}
		if (want != "" && sum != want) || (cur.exists && cur.sum == sum) {
			client.Remove(staged)
		}
		return nil
	})
	switch {
	case err != nil:
		return false, err
	case want != "" && sum != want:
		return false, fmt.Errorf("%s: content for %s changed while it was uploaded", h.name, file)
	case cur.exists && cur.sum == sum:
		return h.fixAttrs(ctx, file, cur, mode, owner, group, opts.Sudo)
	}
	octal := strconv.FormatUint(uint64(mode), 8)
	_, err = h.Run(ctx, Cmd{Args: []string{"sh", "-c", commitScript, "mgmtkit-commit", staged, file, sum, octal, owner, group, commitHow(opts.Sudo)}, Sudo: opts.Sudo})
	if errors.Is(err, ErrConnectionLost) {
		// The commit may or may not have happened before the connection
		// dropped. Look (on a new connection): the file either holds the
		// content with its mode, or the write starts over once, from the
		// start of the content when it can be read again.
		if after, perr := h.probe(ctx, file, -1, opts.Sudo); perr == nil && after.exists && after.sum == sum && after.mode == mode {
			h.log.Debug("file written; the connection dropped after the commit", "path", file, "sha256", sum)
			return true, nil
		}
		h.removeStaged(ctx, staged)
		if start >= 0 && !retried {
			if _, serr := content.(io.Seeker).Seek(start, io.SeekStart); serr == nil {
				h.log.Debug("connection lost while committing a file; writing it again", "path", file)
				return h.writeFile(ctx, file, content, opts, true)
			}
		}
		return false, err
	}
	if err != nil {
		// The script removes the staged file itself; this is for when it
		// never started (sudo refused, cancelled).
		h.removeStaged(ctx, staged)
		return false, err
	}
	h.log.Debug("file written", "path", file, "sha256", sum)
	return true, nil
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

// fixAttrs brings mode and ownership of an existing file with the right
// content in line.
func (h *SSHHost) fixAttrs(ctx context.Context, file string, cur remoteFile, mode fs.FileMode, owner, group string, sudo bool) (bool, error) {
	changed := false
	if owner != cur.owner || group != cur.group {
		if _, err := h.Run(ctx, Cmd{Args: []string{"chown", "--", owner + ":" + group, file}, Sudo: sudo, Idempotent: true}); err != nil {
			return false, err
		}
		changed = true
	}
	if mode != cur.mode {
		if _, err := h.Run(ctx, Cmd{Args: []string{"chmod", "--", strconv.FormatUint(uint64(mode), 8), file}, Sudo: sudo, Idempotent: true}); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
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
func (h *SSHHost) stage(ctx context.Context, c *conn, client *sftp.Client, file string, content io.Reader) (staged, sum string, err error) {
	for attempt := 0; ; attempt++ {
		dir, err := h.stagingDir(c, client, attempt > 0)
		if err != nil {
			return "", "", err
		}
		// A random name: it tells nothing about the file, even to someone
		// who opened the directory in the moment before its chmod.
		staged = path.Join(dir, "mgmtkit-"+randomSuffix())
		f, err := client.OpenFile(staged, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if errors.Is(err, fs.ErrNotExist) && attempt == 0 {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("%s: creating %s: %w", h.name, staged, err)
		}
		if sum, err = h.upload(ctx, f, staged, content, c.sftpInFlight); err != nil {
			client.Remove(staged)
			return "", "", err
		}
		return staged, sum, nil
	}
}

// upload streams content to f, a new staged file, with concurrent SFTP
// writes and returns its SHA-256. The file is made 0600 before any byte is
// written, and closed.
func (h *SSHHost) upload(ctx context.Context, f *sftp.File, staged string, content io.Reader, inFlight int) (string, error) {
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return "", fmt.Errorf("%s: chmod %s: %w", h.name, staged, err)
	}
	hashed := newHashingReader(ctxReader{ctx, content})
	defer hashed.Sum() // stops the hashing goroutine on every path
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	if _, err := f.ReadFromWithConcurrency(hashed, inFlight); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return "", fmt.Errorf("%s: uploading %s: %w", h.name, staged, err)
	}
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return "", fmt.Errorf("%s: closing %s: %w", h.name, staged, err)
	}
	return hashed.Sum(), nil
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
	if err := checkPath(file); err != nil {
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
	out, err := h.Run(ctx, Cmd{Args: []string{"sh", "-c", readScript, "mgmtkit-read", file}, Sudo: true, OKExit: []int{66}, Idempotent: true})
	if err != nil {
		return nil, err
	}
	if out.ExitCode == 66 {
		return nil, fmt.Errorf("%s: %w", h.name, &fs.PathError{Op: "open", Path: file, Err: fs.ErrNotExist})
	}
	return out.Stdout, nil
}

// checkPath accepts absolute, clean paths without NUL or newline.
func checkPath(p string) error {
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
		if err := checkPath(f); err != nil {
			return nil, err
		}
	}
	args := append([]string{"sh", "-c", readFilesScript, "mgmtkit-read-files"}, files...)
	out, err := h.Run(ctx, Cmd{Args: args, Sudo: opts.Sudo, Idempotent: true})
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

package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/pkg/sftp"
)

// Verification of an upload on the host, without a second pass after the
// last byte.
//
// A staged file up to readBackMax bytes is read back over SFTP when its
// last write is acknowledged and hashed on the client: a round trip and
// no process on the host. A larger one is hashed on the host while it
// lands: a follower command (followScript) reads it in segments of at
// least hashSegment bytes, each once the server has written it (see
// landingReader), and prints the SHA-256 of the whole file after the last
// one. When the transfer ends only the last segment is left to hash, where
// a pass after the transfer read the whole file again.
//
// Either way the sum compared is that of the bytes the host holds in the
// staged file, as the commit's own check is; a staged file that could not
// be checked this way (the follower failed or disagreed) is checked by the
// commit instead.
const (
	readBackMax = 1 << 20
	hashSegment = 8 << 20
)

// followScript prints the SHA-256 of the first N bytes of the file named
// by $1, where N is the last number read from standard input. Each line
// is a number of bytes that are now in the file; the bytes between the
// previous number and this one are hashed at once, so that hashing keeps
// up with the upload.
//
// With python3 on the host (every Ubuntu and Debian cloud image has it:
// cloud-init is written in it) it runs followPython, given as $2: one
// process reading the file with pread into hashlib's SHA-256 (OpenSSL's,
// with the CPU's SHA extensions), about 50 ms of CPU per 64 MiB plus the
// interpreter's start, at the lowest priority (nice 19): on a host whose
// CPU the transfer leaves idle (a VM receiving over a network) it hashes
// alongside for free; on one whose CPU the transfer fills (client and
// server on the same two cores, BENCHMARKS.md) it yields to the transfer
// and catches up after it, costing what a hash after the transfer would.
// Otherwise each range is read by dd, with GNU coreutils' byte offsets
// (dd(1): iflag=skip_bytes,count_bytes), into one sha256: correct
// everywhere, but the pipe costs about three times the CPU of reading the
// file directly (BENCHMARKS.md).
const followScript = `set -eu
if [ -n "$2" ] && command -v python3 >/dev/null 2>&1; then exec nice -n 19 python3 -c "$2" "$1"; fi
` + sha256Func + `f=$1 off=0
while read -r n; do
  if [ "$n" -gt "$off" ]; then
    dd if="$f" bs=1048576 iflag=skip_bytes,count_bytes skip="$off" count="$((n - off))" status=none
    off=$n
  fi
done | sha256`

// followPython is followScript's hasher where python3 is installed.
const followPython = `import hashlib, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
h, off = hashlib.sha256(), 0
for line in sys.stdin:
    n = int(line)
    while off < n:
        b = os.pread(fd, min(n - off, 1 << 20), off)
        if not b:
            sys.exit("%s: ends at %d bytes, not %d" % (sys.argv[1], off, n))
        h.update(b)
        off += len(b)
print(h.hexdigest())
`

// upload streams content to f, a new staged file, with up to inFlight
// concurrent SFTP writes, and returns the content's SHA-256 and whether
// the host's copy was verified against it (see readBackMax). A small file
// is read back only with readBack: where a commit command runs anyway, it
// hashes a small file for less than the round trips of reading it back.
// Nothing is verified without follow: a commit that copies the file
// verifies the copy whatever happened before. The file is made 0600
// before any byte is written, and closed.
func (h *SSHHost) upload(ctx context.Context, c *conn, client *sftp.Client, f *sftp.File, staged string, content io.Reader, readBack, follow bool) (sum string, verified bool, err error) {
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return "", false, fmt.Errorf("%s: chmod %s: %w", h.name, staged, err)
	}
	hashed := newHashingReader(ctxReader{ctx, content})
	defer hashed.Sum() // stops the hashing goroutine on every path
	fol := &follower{h: h, ctx: ctx, staged: staged}
	defer fol.stop()
	landed := fol.landed
	if !follow {
		landed = func(int64) {}
	}
	in := &landingReader{r: hashed, margin: int64(c.sftpInFlight+2) * int64(c.sftpPacket), landed: landed}
	size, err := f.ReadFromWithConcurrency(in, c.sftpInFlight)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return "", false, fmt.Errorf("%s: uploading %s: %w", h.name, staged, err)
	}
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return "", false, fmt.Errorf("%s: closing %s: %w", h.name, staged, err)
	}
	sum = hashed.Sum()
	var got string
	switch {
	case !follow || size <= readBackMax && !readBack:
		return sum, false, nil
	case size > readBackMax:
		got, err = fol.finish(size)
	default:
		got, err = readBackSum(client, staged)
	}
	switch {
	case err != nil:
		h.log.Debug("staged file not verified during the upload; the commit verifies it", "path", staged, "error", err)
	case got != sum:
		h.log.Info("staged file differs from the content sent; the commit verifies it again", "path", staged)
	}
	return sum, err == nil && got == sum, nil
}

// readBackSum reads a staged file over SFTP and returns its SHA-256.
func readBackSum(client *sftp.Client, staged string) (string, error) {
	f, err := client.Open(staged)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hash := sha256.New()
	if _, err := f.WriteTo(hash); err != nil {
		return "", err
	}
	return hex.EncodeToString(hash.Sum(nil)), nil
}

// landingReader passes reads through to pkg/sftp's concurrent upload and
// tells landed how many bytes from the start of the file the server has
// written, as far as the reads show. pkg/sftp's ReadFromWithConcurrency
// (client.go) reads chunk k only after it has sent chunk k-1 and handed it
// to one of its inFlight workers, each of which holds one write until the
// server answers it; so when chunk k is read, every chunk before k-inFlight
// has been answered, and the server answers a write once it is in the
// file (OpenSSH's sftp-server.c, process_write: pwrite, then the status).
// The bytes read so far, less inFlight+2 chunks (the chunk being read
// counts as one), are therefore in the file, in whatever order the server
// took the writes. Should a server answer early, the follower's sum
// differs and the commit verifies the file instead: the estimate can cost
// time, never correctness.
type landingReader struct {
	r      io.Reader
	read   int64
	margin int64
	landed func(int64)
}

func (l *landingReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.read += int64(n)
	if l.read > l.margin {
		l.landed(l.read - l.margin)
	}
	return n, err
}

// follower runs followScript on the host for one staged file: started
// once the first hashSegment bytes have landed, then told how many bytes
// have landed whenever that has grown by hashSegment, by a goroutine of
// its own so that the upload never waits for the script.
type follower struct {
	h      *SSHHost
	ctx    context.Context
	staged string

	mu      sync.Mutex
	latest  int64 // bytes from the start of the file known to be in it
	final   bool  // latest is the file's size
	wake    chan struct{}
	fed     chan error // the feeder's end: nil, or why the script could not be fed
	result  chan followResult
	started bool
}

type followResult struct {
	out Output
	err error
}

// landed tells the follower that prefix bytes are in the staged file.
func (fo *follower) landed(prefix int64) {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	if prefix <= fo.latest {
		return
	}
	fo.latest = prefix
	if !fo.started && prefix >= hashSegment {
		fo.start()
	}
	if fo.started {
		select {
		case fo.wake <- struct{}{}:
		default:
		}
	}
}

// start runs the script and its feeder; fo.mu is held.
func (fo *follower) start() {
	fo.started = true
	fo.wake, fo.fed, fo.result = make(chan struct{}, 1), make(chan error, 1), make(chan followResult, 1)
	pr, pw := io.Pipe()
	go func() {
		out, err := fo.h.Run(fo.ctx, Cmd{Args: []string{"sh", "-c", followScript, "mgmtkit-follow", fo.staged, followPython}, Stdin: pr, Brief: true, ReadOnly: true})
		pr.CloseWithError(io.ErrClosedPipe) // a feeder still writing fails instead of blocking
		fo.result <- followResult{out, err}
	}()
	go func() {
		var sent int64
		var err error
		for range fo.wake {
			fo.mu.Lock()
			latest, final := fo.latest, fo.final
			fo.mu.Unlock()
			if latest > sent && (final || latest-sent >= hashSegment) {
				if _, err = io.WriteString(pw, strconv.FormatInt(latest, 10)+"\n"); err != nil {
					break
				}
				sent = latest
			}
			if final {
				break
			}
		}
		pw.Close() // end of input: the script prints the sum
		fo.fed <- err
	}()
}

// finish tells the follower the file's final size and returns the SHA-256
// the script printed.
func (fo *follower) finish(size int64) (string, error) {
	fo.mu.Lock()
	fo.latest, fo.final = size, true
	if !fo.started {
		fo.start()
	}
	fo.mu.Unlock()
	select { // the feeder reads wake until it sees final
	case fo.wake <- struct{}{}:
	default: // a wake is pending already
	}
	fed := <-fo.fed
	res := <-fo.result
	fo.mu.Lock()
	fo.started = false // stop has nothing left to wait for
	fo.mu.Unlock()
	switch {
	case res.err != nil:
		return "", res.err
	case fed != nil:
		return "", fed
	}
	sum, _, _ := strings.Cut(res.out.String(), " ")
	if len(sum) != 64 {
		return "", fmt.Errorf("unexpected follower output %q", res.out.Stdout)
	}
	return sum, nil
}

// stop ends the script if it still runs (an upload that failed) and waits
// for it.
func (fo *follower) stop() {
	fo.mu.Lock()
	started := fo.started
	fo.mu.Unlock()
	if !started {
		return
	}
	fo.mu.Lock()
	fo.final = true
	fo.mu.Unlock()
	select {
	case fo.wake <- struct{}{}:
	default:
	}
	<-fo.fed
	<-fo.result
}

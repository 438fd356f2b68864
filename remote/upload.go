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
// least hashSegment bytes, each once every SFTP write below its end has
// been acknowledged, so it reads only bytes the server has written
// whatever order the writes land in, and prints the SHA-256 of the whole
// file after the last one. When the transfer ends only the last segment
// is left to hash. (Hashing the staged file after the transfer cost 27 to
// 30 % of a 64 MiB upload: BENCHMARKS.md.)
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
// previous number and this one are passed to the hash at once, so that
// hashing keeps up with the upload. It reads with dd's byte offsets (GNU
// coreutils: iflag=skip_bytes,count_bytes, dd(1)).
const followScript = `set -eu
` + sha256Func + `f=$1 off=0
while read -r n; do
  if [ "$n" -gt "$off" ]; then
    dd if="$f" bs=1048576 iflag=skip_bytes,count_bytes skip="$off" count="$((n - off))" status=none
    off=$n
  fi
done | sha256`

// upload streams content to f, a new staged file, with up to inFlight
// concurrent SFTP writes, and returns the content's SHA-256 and whether
// the host's copy was verified against it (see readBackMax). A small file
// is read back only with readBack: where a commit command runs anyway, it
// hashes a small file for less than the round trips of reading it back.
// The file is made 0600 before any byte is written, and closed.
func (h *SSHHost) upload(ctx context.Context, c *conn, client *sftp.Client, f *sftp.File, staged string, content io.Reader, readBack bool) (sum string, verified bool, err error) {
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return "", false, fmt.Errorf("%s: chmod %s: %w", h.name, staged, err)
	}
	hashed := newHashingReader(ctxReader{ctx, content})
	defer hashed.Sum() // stops the hashing goroutine on every path
	fol := &follower{h: h, ctx: ctx, staged: staged}
	defer fol.stop()
	size, err := sendConcurrently(f, hashed, c.sftpPacket, c.sftpInFlight, fol.landed)
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
	case size > readBackMax:
		got, err = fol.finish(size)
	case !readBack:
		return sum, false, nil
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

// sendConcurrently writes everything r yields to f from offset 0, in
// writes of packet bytes with up to inFlight of them awaiting the
// server's answer, and returns the number of bytes written. After each
// acknowledged write it calls landed with the number of bytes from the
// start of the file that are all acknowledged (the writes may be answered
// in any order); landed must not block for long.
func sendConcurrently(f *sftp.File, r io.Reader, packet, inFlight int, landed func(int64)) (int64, error) {
	var (
		acks    ackTracker
		wg      sync.WaitGroup
		errOnce sync.Once
		werr    error
		failed  = make(chan struct{})
		bufs    = make(chan []byte, inFlight)
		off     int64
	)
	fail := func(err error) {
		errOnce.Do(func() { werr = err; close(failed) })
	}
	for range inFlight {
		bufs <- nil // a token; the buffer is made on first use
	}
read:
	for {
		var buf []byte
		select {
		case buf = <-bufs:
		case <-failed:
			break read
		}
		if buf == nil {
			buf = make([]byte, packet)
		}
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			wg.Add(1)
			go func(b []byte, at int64) {
				defer wg.Done()
				if _, err := f.WriteAt(b, at); err != nil {
					fail(err)
				} else {
					landed(acks.ack(at, int64(len(b))))
				}
				bufs <- b[:cap(b)]
			}(buf[:n], off)
			off += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			fail(err)
			break
		}
	}
	wg.Wait()
	return off, werr
}

// ackTracker follows which writes of an upload have been acknowledged and
// how far from the start of the file they are all acknowledged.
type ackTracker struct {
	mu     sync.Mutex
	prefix int64           // every byte below is acknowledged
	ahead  map[int64]int64 // acknowledged writes past a gap: offset -> length
}

// ack records the write of n bytes at off and returns the acknowledged
// prefix.
func (a *ackTracker) ack(off, n int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if off != a.prefix {
		if a.ahead == nil {
			a.ahead = map[int64]int64{}
		}
		a.ahead[off] = n
		return a.prefix
	}
	a.prefix += n
	for {
		next, ok := a.ahead[a.prefix]
		if !ok {
			return a.prefix
		}
		delete(a.ahead, a.prefix)
		a.prefix += next
	}
}

// follower runs followScript on the host for one staged file: started
// once the first hashSegment bytes have landed, then told the acknowledged
// prefix whenever it has grown by hashSegment, by a goroutine of its own so
// that the upload's writers never wait for the script.
type follower struct {
	h      *SSHHost
	ctx    context.Context
	staged string

	mu      sync.Mutex
	latest  int64 // the acknowledged prefix
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
		out, err := fo.h.Run(fo.ctx, Cmd{Args: []string{"sh", "-c", followScript, "mgmtkit-follow", fo.staged}, Stdin: pr, Brief: true})
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

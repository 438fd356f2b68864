package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"sync"
)

// hashingReader passes reads through and computes their SHA-256 on another
// goroutine, so that hashing does not stall the goroutine that feeds the
// SFTP writes: on an upload that goroutine also encrypts and sends, and
// with the hash inline it became the bottleneck (BENCHMARKS.md). At most
// hashQueue chunks wait to be hashed, so memory stays bounded.
type hashingReader struct {
	r     io.Reader
	queue chan []byte
	done  chan struct{}
	pool  sync.Pool
	h     hash.Hash
	once  sync.Once
	sum   string
}

const hashQueue = 16

func newHashingReader(r io.Reader) *hashingReader {
	hr := &hashingReader{r: r, queue: make(chan []byte, hashQueue), done: make(chan struct{}), h: sha256.New()}
	go func() {
		defer close(hr.done)
		for b := range hr.queue {
			hr.h.Write(b)
			hr.pool.Put(&b)
		}
	}()
	return hr
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	if n > 0 {
		var b []byte
		if v, ok := hr.pool.Get().(*[]byte); ok && cap(*v) >= n {
			b = (*v)[:n]
		} else {
			b = make([]byte, n)
		}
		copy(b, p[:n])
		hr.queue <- b
	}
	return n, err
}

// Sum waits for the queued chunks and returns the hex SHA-256 of
// everything read. Call it after the last Read; later calls return the
// same sum.
func (hr *hashingReader) Sum() string {
	hr.once.Do(func() {
		close(hr.queue)
		<-hr.done
		hr.sum = hex.EncodeToString(hr.h.Sum(nil))
	})
	return hr.sum
}

package sshtest

import (
	"io"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// parsedScript is a script as [parseScript] parsed it, with what
// runShell derives from the syntax tree. The interpreter only reads the
// tree, so one parse serves every run of the same script, on every host
// and concurrently.
type parsedScript struct {
	file       *syntax.File
	err        error
	redirLines map[string][]int // read-only, see shell.redirLines
}

// scriptCache remembers parsed scripts by name and source: the SDK runs
// the same few scripts on every host of a cloud. It forgets everything
// when the sources it holds reach maxCachedScripts bytes.
type scriptCache struct {
	mu    sync.Mutex
	m     map[scriptKey]*parsedScript
	bytes int
}

type scriptKey struct{ src, name string }

const (
	maxCachedScripts = 8 << 20 // bytes of source
	maxCachedScript  = 64 << 10
)

var parsedScripts scriptCache

// get parses src (as parseScript(src, name)) or returns the parse of an
// earlier call with the same arguments.
func (c *scriptCache) get(src, name string) *parsedScript {
	k := scriptKey{src, name}
	c.mu.Lock()
	ps, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return ps
	}
	ps = &parsedScript{}
	ps.file, ps.err = parseScript(src, name)
	if ps.err == nil {
		ps.redirLines = redirectLines(ps.file)
	}
	if len(src) > maxCachedScript {
		return ps
	}
	c.mu.Lock()
	if c.m == nil || c.bytes+len(src) > maxCachedScripts {
		c.m, c.bytes = map[scriptKey]*parsedScript{}, 0
	}
	c.m[k] = ps
	c.bytes += len(src) + len(name)
	c.mu.Unlock()
	return ps
}

// copyBuffers are the buffers of copyPooled.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyPooled is io.Copy through a pooled buffer: an *os.File destination
// would otherwise allocate a fresh 32 KiB buffer per copy (its ReadFrom
// falls back to io.Copy for a reader that is not a file or socket).
func copyPooled(dst io.Writer, src io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
}

package kube

import "sync"

// parseCache remembers what parsing a file's content gave, keyed by the
// content, so that the kubelet model, which reads the same
// configuration files of every node at every sync, parses each distinct
// content once. Values must not be modified by those who get them. The
// cache forgets everything when it holds maxParsed entries, which
// bounds its memory; a forgotten entry is parsed again.
type parseCache[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// maxParsed bounds a parseCache.
const maxParsed = 512

// get returns the value for content, calling parse on a miss.
func (c *parseCache[V]) get(content []byte, parse func([]byte) V) V {
	c.mu.Lock()
	v, ok := c.m[string(content)]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = parse(content)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxParsed {
		c.m = map[string]V{}
	}
	c.m[string(content)] = v
	c.mu.Unlock()
	return v
}

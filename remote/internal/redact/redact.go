// Package redact removes secret values from text before it reaches a log,
// an error or a transcript.
//
// A Redactor is built from the secrets a command or a connection was given.
// It replaces every occurrence of each secret, and of each secret's
// shell-quoted form, with a fixed marker. Longer secrets are replaced first so
// that a secret containing another one is removed whole.
package redact

import (
	"slices"
	"strings"

	"al.essio.dev/pkg/shellescape"
)

// Marker is the text that stands in for a removed secret.
const Marker = "[REDACTED]"

// MinLen is the shortest secret that is redacted. Replacing every occurrence
// of a one- to three-character value would turn logs into noise while hiding
// nothing an attacker could not guess; such values are still never logged on
// purpose, only not scrubbed from unrelated text.
const MinLen = 4

// Redactor replaces secrets in strings. The zero value redacts nothing.
// A Redactor is immutable and safe for concurrent use.
type Redactor struct {
	needles []string // longest first
}

// New returns a Redactor for the given secret values. Empty and very short
// values are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	return r.With(secrets...)
}

// With returns a Redactor that removes the receiver's secrets and the given
// ones. The receiver is not modified; a nil receiver is allowed.
func (r *Redactor) With(secrets ...string) *Redactor {
	var needles []string
	if r != nil {
		needles = slices.Clone(r.needles)
	}
	for _, s := range secrets {
		if len(s) < MinLen {
			continue
		}
		needles = append(needles, s)
		if q := shellescape.Quote(s); q != s {
			needles = append(needles, q)
			// The quoted form without its outer quotes is what appears when
			// the value is one part of a longer quoted word.
			if inner := strings.ReplaceAll(s, "'", `'"'"'`); inner != s {
				needles = append(needles, inner)
			}
		}
	}
	slices.SortFunc(needles, func(a, b string) int { return len(b) - len(a) })
	needles = slices.Compact(needles)
	return &Redactor{needles: needles}
}

// String returns s with every secret replaced by Marker.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, n := range r.needles {
		if strings.Contains(s, n) {
			s = strings.ReplaceAll(s, n, Marker)
		}
	}
	return s
}

// Empty reports whether the Redactor has no secrets to remove.
func (r *Redactor) Empty() bool { return r == nil || len(r.needles) == 0 }

package remote

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mgmtkit/mgmtkit/remote/internal/redact"
)

// Redacted is what a Secret prints as, in every format.
const Redacted = redact.Marker

// Secret holds a password, token or key that must never be printed.
//
// A Secret formats as [Redacted] with every fmt verb (including %#v), in
// JSON, as text and as a log/slog value. Its value is reachable only through
// [Secret.Reveal], so every place that hands a secret to a machine is easy to
// find. The value sits behind a pointer, so even a Secret stored in an
// unexported struct field prints as an address, not as the text.
//
// Secrets decode from JSON strings, which lets parameter structs hold them
// directly. They do not encode back: [Secret.MarshalJSON] writes [Redacted].
// Store the original request, not a re-encoded struct.
//
// The zero value is an empty secret.
type Secret struct {
	v *string
}

// NewSecret wraps s.
func NewSecret(s string) Secret {
	if s == "" {
		return Secret{}
	}
	return Secret{v: &s}
}

// Reveal returns the secret's value. Call it only where the value is handed
// to a machine: a stdin stream, a file written with restrictive permissions,
// an authentication callback.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == nil || *s.v == "" }

// String returns [Redacted], or "" for an empty secret.
func (s Secret) String() string {
	if s.IsZero() {
		return ""
	}
	return Redacted
}

// GoString returns a redacted Go-syntax form.
func (s Secret) GoString() string { return fmt.Sprintf("remote.Secret(%q)", s.String()) }

// Format prints the redacted form for every verb.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		fmt.Fprint(f, s.GoString())
	case verb == 'q':
		fmt.Fprintf(f, "%q", s.String())
	default:
		fmt.Fprint(f, s.String())
	}
}

// MarshalJSON encodes the redacted form, never the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText encodes the redacted form, never the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalJSON accepts a JSON string (or null, meaning empty).
func (s *Secret) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = Secret{}
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("a secret must be a JSON string")
	}
	*s = NewSecret(v)
	return nil
}

// LogValue makes log/slog print the redacted form.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

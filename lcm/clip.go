package lcm

import (
	"fmt"
	"unicode/utf8"
)

// Limits on how much of the input a problem's message may echo. Problems
// are read by people and end up in logs and in Tacker's error details, so a
// bad 1 MB value must not make a 1 MB error.
const (
	// maxEcho is how many characters of a value a message shows.
	maxEcho = 100
	// maxEchoError is how many characters of an error's text a message
	// shows: such a text is a message of its own that may quote a value.
	maxEchoError = 200
	// maxMessage bounds a whole message, whatever was formatted into it.
	maxMessage = 500
)

// clipArgs returns args with every string, []byte and error whose text is
// longer than maxEcho (maxEchoError for errors) replaced by a value that
// formats, with the same verb and flags, only the beginning of the text,
// followed by "… (N bytes)". Other arguments are kept as they are.
func clipArgs(args []any) []any {
	var out []any
	for i, a := range args {
		var c any
		switch a := a.(type) {
		case string:
			if utf8.RuneCountInString(a) > maxEcho {
				c = clipped{clipRunes(a, maxEcho), len(a)}
			}
		case []byte:
			if utf8.RuneCount(a) > maxEcho {
				c = clipped{clipRunes(string(a), maxEcho), len(a)}
			}
		case error:
			if s := a.Error(); utf8.RuneCountInString(s) > maxEchoError {
				c = clipped{clipRunes(s, maxEchoError), len(s)}
			}
		}
		if c != nil {
			if out == nil {
				out = append([]any(nil), args...)
			}
			out[i] = c
		}
	}
	if out == nil {
		return args
	}
	return out
}

// clipped is the beginning of a long text and the text's length in bytes.
type clipped struct {
	head string
	size int
}

// Format formats the beginning with the verb and flags it was given, then
// says that there was more.
func (c clipped) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), c.head)
	fmt.Fprintf(f, "… (%d bytes)", c.size)
}

// clipText returns s, or its first n characters and "…" when it is longer.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return clipRunes(s, n) + "…"
}

// clipRunes returns the first n runes of s.
func clipRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

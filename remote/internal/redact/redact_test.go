package redact

import "testing"

func TestRedactor(t *testing.T) {
	r := New("hunter2-pass", "it's-a-secret", "abc", "")
	for _, tc := range []struct{ in, want string }{
		{"login with hunter2-pass ok", "login with [REDACTED] ok"},
		{"echo 'it'\"'\"'s-a-secret'", "echo [REDACTED]"},
		{"pw=it'\"'\"'s-a-secret;", "pw=[REDACTED];"},
		{"abc is too short to redact", "abc is too short to redact"},
		{"hunter2-pass hunter2-pass", "[REDACTED] [REDACTED]"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A secret containing another is removed whole.
	nested := New("pass", "password-long")
	if got := nested.String("x password-long y"); got != "x [REDACTED] y" {
		t.Errorf("nested: %q", got)
	}
	// With adds secrets without changing the receiver.
	more := r.With("second-secret")
	if got := more.String("second-secret hunter2-pass"); got != "[REDACTED] [REDACTED]" {
		t.Errorf("With: %q", got)
	}
	if got := r.String("second-secret"); got != "second-secret" {
		t.Errorf("With changed the receiver: %q", got)
	}
	var none *Redactor
	if none.String("x") != "x" || !none.Empty() || !New("").Empty() || r.Empty() {
		t.Error("nil or empty redactor misbehaves")
	}
}

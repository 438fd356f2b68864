package sshtest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// runLocal runs script through the server's shell directly, as user,
// without SSH, returning stdout, stderr and the status.
func runLocal(t *testing.T, s *Server, user, script string, env ...string) result {
	t.Helper()
	p, err := s.login(user)
	if err != nil {
		t.Fatal(err)
	}
	p.Env = append(p.Env, env...)
	var stdout, stderr bytes.Buffer
	p.Stdin, p.Stdout, p.Stderr = strings.NewReader(""), &stdout, &stderr
	code := s.runShell(context.Background(), p, script, "bash", nil, nil)
	return result{stdout.String(), stderr.String(), code}
}

// TestParseScriptKeepsBytes checks that CR before LF and bytes that are not
// valid UTF-8 reach programs exactly as bash passes them. The expected
// output was taken from GNU bash 5.2 (`bash -c SCRIPT` with X=v).
func TestParseScriptKeepsBytes(t *testing.T) {
	s := Start(t, Config{Users: []User{{Name: "root", Password: rootPW}}})
	for _, tc := range []struct{ script, want string }{
		{"printf '%s|' 'a\r\nb'", "a\r\nb|"},
		{"printf '%s|' \"a\r\nb\"", "a\r\nb|"},
		{"printf '%s|' a\r\n", "a\r|"},
		{"printf '%s|' a\r\nprintf '%s|' b\r\n", "a\r|b\r|"},
		{"cat <<EOF\r\nx\r\ny\r\nEOF\r\n", "x\r\ny\r\n"},
		{"cat <<'EOF'\n\xff\xfe\r\nEOF\n", "\xff\xfe\r\n"},
		{"cat <<EOF\n$X\xff\r\nEOF\n", "v\xff\r\n"},
		{"printf '%s|' '\xff\xfe'", "\xff\xfe|"},
		{"printf '%s|' \"\xc3(\"", "\xc3(|"},
		{"printf '%s|' a\xffb", "a\xffb|"},
		{"x=a\xffb; printf '%s|' \"$x\" $x", "a\xffb|a\xffb|"},
		{"printf '%s|' $'a\\r\\nb\\xff'", "a\r\nb\xff|"},
		{"printf '%s|' 'a\rb'", "a\rb|"},
		// The placeholder rune of parseScript occurring in the script.
		{"printf '%s|' '\U0010FFFD\r\n'", "\U0010FFFD\r\n|"},
		{"# \xff comment\r\nprintf ok", "ok"},
		{"printf '%s|' \"$X\r\n\"", "v\r\n|"},
		{"printf '%s|' \xe2\x82", "\xe2\x82|"},
		{"printf '%s|' '\xed\xa0\x80'", "\xed\xa0\x80|"},
	} {
		got := runLocal(t, s, "root", tc.script, "X=v")
		if got.stdout != tc.want || got.stderr != "" || got.code != 0 {
			t.Errorf("%q:\n got %v\nwant stdout %q", tc.script, got, tc.want)
		}
	}
}

func TestParseScriptLiterals(t *testing.T) {
	// The literals of the syntax tree carry the original bytes, and a
	// script without special bytes is parsed unchanged.
	src := "echo 'a\r\n' b\xff \"c\r\n\""
	f, err := parseScript(src, "bash")
	if err != nil {
		t.Fatal(err)
	}
	var lits []string
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Lit:
			lits = append(lits, n.Value)
		case *syntax.SglQuoted:
			lits = append(lits, n.Value)
		}
		return true
	})
	want := []string{"echo", "a\r\n", "b\xff", "c\r\n"}
	if strings.Join(lits, "|") != strings.Join(want, "|") {
		t.Errorf("literals %q, want %q", lits, want)
	}
	if _, err := parseScript("echo 'unterminated", "bash"); err == nil {
		t.Error("an unterminated quote parsed")
	}
}

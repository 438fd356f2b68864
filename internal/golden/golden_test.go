package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name, want, got, diff string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"a line added", "a\nb\nc\n", "a\nb\nx\nc\n", "@@ -1,3 +1,4 @@\n a\n b\n+x\n c\n"},
		{"a line changed", "a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"into an empty file", "", "a\n", "@@ -0,0 +1 @@\n+a\n"},
		{"no final newline", "a\n", "a", "@@ -1 +1 @@\n-a\n+a (no newline at end)\n"},
		{"two hunks", lines10("") + "x\n" + lines10("y"), lines10("") + "X\n" + lines10("y") + "z\n",
			"@@ -8,7 +8,7 @@\n 7\n 8\n 9\n-x\n+X\n y0\n y1\n y2\n@@ -19,3 +19,4 @@\n y7\n y8\n y9\n+z\n"},
		// Keeps the common lines (an LCS), not a prefix and suffix alone.
		{"moved block", "a\nb\nc\nd\n", "c\nd\na\nb\n", "@@ -1,4 +1,4 @@\n-a\n-b\n c\n d\n+a\n+b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(tc.want, tc.got); got != tc.diff {
				t.Errorf("Diff =\n%s\nwant\n%s", got, tc.diff)
			}
		})
	}
}

func lines10(prefix string) string {
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

// recorder is a testing.TB that records what Assert reports.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestGoldenX" }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestAssert(t *testing.T) {
	t.Chdir(t.TempDir())
	r := &recorder{TB: t}
	Assert(r, "missing", []byte("x\n"))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "-update to create it") {
		t.Errorf("missing file: %q", r.errors)
	}

	*update = true
	Assert(r, "group/out", []byte("one\ntwo\n"))
	*update = false
	if b, err := os.ReadFile(filepath.Join("testdata", "group", "out.golden")); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}

	r.errors = nil
	Assert(r, "group/out", []byte("one\ntwo\n"))
	if len(r.errors) != 0 {
		t.Errorf("equal output: %q", r.errors)
	}
	Assert(r, "group/out", []byte("one\n2\n"))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "@@ -1,2 +1,2 @@\n one\n-two\n+2\n") || !strings.Contains(r.errors[0], "go test -run 'TestGoldenX' -update") {
		t.Errorf("mismatch: %q", r.errors)
	}
}

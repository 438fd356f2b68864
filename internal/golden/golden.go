// Package golden compares test output with golden files, as kubeone's
// and the Go project's own golden tests do: [Assert] compares what a test
// produced with testdata/NAME.golden and reports a line diff when they
// differ; `go test -update` rewrites the files instead, for review in the
// commit that changes them:
//
//	go test ./registry -run Golden -update
//
// It is test infrastructure: only _test.go files import it.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the tests produce")

// Dir is where golden files live, relative to the package under test
// (the working directory of its test binary).
const Dir = "testdata"

// Path returns the golden file of name: Dir/name.golden. A name may hold
// slashes to group files in subdirectories.
func Path(name string) string { return filepath.Join(Dir, filepath.FromSlash(name)+".golden") }

// Assert checks that got equals the golden file of name ([Path]). With
// -update it writes got there instead (creating directories) and passes.
// On a mismatch it reports a line diff (see [Diff]) and how to accept
// the change; a missing file is reported with the same hint.
func Assert(tb testing.TB, name string, got []byte) {
	tb.Helper()
	AssertFile(tb, Path(name), got)
}

// AssertFile is [Assert] for a golden file at any path, such as another
// package's testdata (realtest keeps the real programs' outputs where the
// packages that parse them test on them).
func AssertFile(tb testing.TB, file string, got []byte) {
	tb.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		tb.Errorf("golden file %s: %v\n(run go test -run '%s' -update to create it)", file, err, tb.Name())
		return
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("output differs from %s (-want +got):\n%s\n(run go test -run '%s' -update if the change is intended, and review the diff)", file, Diff(string(want), string(got)), tb.Name())
	}
}

// context is how many unchanged lines Diff shows around a change.
const context = 3

// Diff returns a unified-style line diff from want to got: hunks headed
// "@@ -L,N +L,N @@", removed lines prefixed "-", added "+", and up to
// three unchanged lines of context prefixed " ". A line whose only
// difference is a missing final newline is marked so. It returns "" when
// they are equal.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := lines(want), lines(got)
	ops := diffLines(a, b)
	var out strings.Builder
	// Group the edit script into hunks with context.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// An unchanged run: does the next change start within 2*context?
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		hunk := ops[start:end]
		aStart, bStart := hunk[0].ai, hunk[0].bi
		var an, bn int
		for _, op := range hunk {
			if op.kind != '+' {
				an++
			}
			if op.kind != '-' {
				bn++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(aStart, an), span(bStart, bn))
		for _, op := range hunk {
			out.WriteByte(op.kind)
			out.WriteString(op.text)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

// span formats a hunk's line range as unified diff does: 1-based start,
// and the count when it is not 1.
func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// lines splits s into lines; a last line without its newline is marked.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.Split(s, "\n")
	if l[len(l)-1] == "" {
		return l[:len(l)-1]
	}
	l[len(l)-1] += " (no newline at end)"
	return l
}

// op is one line of an edit script: ' ' kept, '-' removed from a, '+'
// added from b; ai and bi are the line indexes in a and b where it falls.
type op struct {
	kind   byte
	text   string
	ai, bi int
}

// maxCells bounds the LCS table: beyond it (two files of several thousand
// differing lines) the diff removes every differing line of a and adds
// every differing line of b instead of finding the common ones.
const maxCells = 4 << 20

// diffLines returns an edit script from a to b that keeps a longest
// common subsequence of lines: the common prefix and suffix are kept
// first, and the middle is solved by dynamic programming.
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for i := range pre {
		ops = append(ops, op{' ', a[i], i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	i, j := 0, 0
	if (n+1)*(m+1) <= maxCells {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		for i < n && j < m {
			switch {
			case ma[i] == mb[j]:
				ops = append(ops, op{' ', ma[i], pre + i, pre + j})
				i, j = i+1, j+1
			case lcs[i+1][j] >= lcs[i][j+1]:
				ops = append(ops, op{'-', ma[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, op{'+', mb[j], pre + i, pre + j})
				j++
			}
		}
	}
	for ; i < n; i++ {
		ops = append(ops, op{'-', ma[i], pre + i, pre + j})
	}
	for ; j < m; j++ {
		ops = append(ops, op{'+', mb[j], pre + i, pre + j})
	}
	for k := range suf {
		ops = append(ops, op{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	return ops
}

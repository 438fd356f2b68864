package mgmtkit_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// No package of the module links the testing package into a program that
// imports it: the test helpers take a small TB interface of their own
// (sshtest.TB, heattest.TB, sim.TB) instead of testing.TB, and offer a
// constructor without one (NewServer, New), as net/http/httptest does.
// The tour (examples/tour) is such a program.
func TestNoPackageLinksTesting(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	// Deps are the transitive imports of each package's non-test files.
	out, err := exec.CommandContext(t.Context(), gobin, "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		checked++
		if slices.Contains(f[1:], "testing") {
			t.Errorf("%s links the testing package (go list -deps %s | grep -x testing)", f[0], f[0])
		}
	}
	if checked < 10 {
		t.Fatalf("go list listed %d packages; expected the whole module:\n%s", checked, out)
	}
	if !strings.Contains(string(out), "github.com/mgmtkit/mgmtkit/examples/tour ") {
		t.Error("go list did not list the tour")
	}
}

package mgmtkit_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mgmtkit/mgmtkit"

// listDeps returns every package of the module with the transitive
// imports of its non-test files.
func listDeps(t *testing.T) map[string][]string {
	t.Helper()
	return goList(t, "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}")
}

// listImports returns every package of the module with the direct
// imports of its non-test files.
func listImports(t *testing.T) map[string][]string {
	t.Helper()
	return goList(t, "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}")
}

// goList runs go list -f format ./... and splits each line into a package
// and its list.
func goList(t *testing.T, format string) map[string][]string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	out, err := exec.CommandContext(t.Context(), gobin, "list", "-f", format, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	if len(deps) < 10 || deps[module+"/examples/tour"] == nil {
		t.Fatalf("go list listed %d packages, without the tour; expected the whole module:\n%s", len(deps), out)
	}
	return deps
}

// isTestInfra reports whether pkg is test infrastructure: under the
// module's internal/ (the simulated cloud, golden files, a real sshd) or
// examples/internal/ (the samples' world). A package's own internal/
// (remote/internal/redact) is that package's private code instead.
func isTestInfra(pkg string) bool {
	return strings.HasPrefix(pkg, module+"/internal/") || strings.HasPrefix(pkg, module+"/examples/internal/")
}

// No package of the module links the testing package into a program that
// imports it: the test helpers take a small TB interface of their own
// (sshtest.TB, heattest.TB, sim.TB) instead of testing.TB, and offer a
// constructor without one (NewServer, New), as net/http/httptest does.
// The tour (examples/tour) is such a program. Only test-only helpers
// under internal/ that no package's non-test files import (the golden
// file helper) may use testing.
func TestNoPackageLinksTesting(t *testing.T) {
	deps := listDeps(t)
	imported := map[string]bool{}
	for _, ds := range deps {
		for _, d := range ds {
			imported[d] = true
		}
	}
	for pkg, ds := range deps {
		if !slices.Contains(ds, "testing") {
			continue
		}
		if isTestInfra(pkg) && !imported[pkg] {
			continue // a helper only tests import
		}
		t.Errorf("%s links the testing package (go list -deps %s | grep -x testing)", pkg, pkg)
	}
}

// Only the tour and test infrastructure itself import test
// infrastructure (the simulated cloud); the SDK's packages and the example
// drivers never do, so what users copy is copyable.
func TestOnlyTheTourImportsTestInfrastructure(t *testing.T) {
	for pkg, imports := range listImports(t) {
		if isTestInfra(pkg) || pkg == module+"/examples/tour" {
			continue
		}
		for _, d := range imports {
			if isTestInfra(d) {
				t.Errorf("%s imports %s", pkg, d)
			}
		}
	}
}

// layer is where a package of the SDK sits; imports point down only.
var layer = map[string]int{
	"remote": 0,
	"lcm":    1,
	"heat":   2,
	// The floor: host steps and driver plumbing.
	"system":   3,
	"plumbing": 3,
	// The domain packages.
	"registry":  4,
	"kubeadm":   4,
	"nfs":       4,
	"kubespray": 4,
	"lb":        4,
	// Complete drivers.
	"examples/drivers": 5,
}

// Imports point down: examples → domain packages → the floor (system,
// plumbing) → heat → lcm → remote. Domain packages never import each
// other, except that kubespray may use kubeadm's parameter types, as its
// spec nests them. Test helpers (sshtest, heattest, samples, internal/)
// sit beside the layers and the SDK's packages do not import them.
func TestImportsPointDown(t *testing.T) {
	for pkg, imports := range listImports(t) {
		from, ok := layer[strings.TrimPrefix(pkg, module+"/")]
		if !ok {
			continue
		}
		for _, d := range imports {
			if !strings.HasPrefix(d, module+"/") {
				continue
			}
			name := strings.TrimPrefix(d, module+"/")
			to, ok := layer[name]
			switch {
			case strings.HasPrefix(name, strings.TrimPrefix(pkg, module+"/")+"/internal/"):
				// the package's own private code
			case !ok:
				t.Errorf("%s imports %s, which is no layer of the SDK (a test helper?)", pkg, d)
			case pkg == module+"/kubespray" && name == "kubeadm":
				// kubespray's spec nests kubeadm's master_node and worker_node
			case to >= from:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", pkg, from, d, to)
			}
		}
	}
}

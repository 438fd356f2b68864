package mgmtkit_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// isTestKit reports whether pkg is the public test kit (cloudtest and
// its packages): the one door from outside the module to the simulated
// cloud, a facade over internal/ that tests import.
func isTestKit(pkg string) bool {
	return pkg == module+"/cloudtest" || strings.HasPrefix(pkg, module+"/cloudtest/")
}

// No package of the module links the testing package into a program that
// imports it: the test helpers take a small TB interface of their own
// (sshtest.TB, heattest.TB, sim.TB) instead of testing.TB, and offer a
// constructor without one (NewServer, New), as net/http/httptest does.
// The tour (examples/tour) is such a program. Only test helpers (under
// internal/ or the test kit) that tests and other such helpers import,
// and no other package's non-test files (the golden file helper, the
// conformance suite and the cluster scenarios it shares), may use
// testing.
func TestNoPackageLinksTesting(t *testing.T) {
	deps := listDeps(t)
	imported := map[string]bool{}
	for pkg, ds := range deps {
		if isTestInfra(pkg) || isTestKit(pkg) {
			continue // a helper's imports: what a program links comes below
		}
		for _, d := range ds {
			imported[d] = true
		}
	}
	for pkg, ds := range deps {
		if !slices.Contains(ds, "testing") {
			continue
		}
		if pkg == module+"/cloudtest" {
			t.Errorf("cloudtest links the testing package: the kit takes a cloudtest.TB so that a program may start the simulated cloud")
			continue
		}
		if (isTestInfra(pkg) || isTestKit(pkg)) && !imported[pkg] {
			continue // a helper only tests and helpers import
		}
		t.Errorf("%s links the testing package (go list -deps %s | grep -x testing)", pkg, pkg)
	}
}

// Only the tour, the test kit and test infrastructure itself import
// test infrastructure (the simulated cloud); the SDK's packages and the
// example drivers never do, so what users copy is copyable.
func TestOnlyTheTourImportsTestInfrastructure(t *testing.T) {
	for pkg, imports := range listImports(t) {
		if isTestInfra(pkg) || isTestKit(pkg) || pkg == module+"/examples/tour" {
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
	// The floor: host steps, the Kubernetes API, driver plumbing.
	"system":   3,
	"kubeapi":  4,
	"plumbing": 5,
	// The domain packages.
	"registry":  6,
	"kubeadm":   6,
	"nfs":       6,
	"kubespray": 6,
	"lb":        6,
	// Complete drivers.
	"examples/drivers": 7,
}

// Imports point down: examples → domain packages → the floor (plumbing,
// which may use the Kubernetes API; kubeapi, which may use system's
// host steps and waits; system) → heat → lcm → remote. Domain packages
// never import each other, except that kubespray may use kubeadm's
// parameter types, as its spec nests them
// (TestDomainPackagesUseNoKubeadmSteps holds it to those). Test helpers
// (sshtest, heattest, samples, internal/) sit beside the layers and the
// SDK's packages do not import them.
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
				// kubespray's spec nests kubeadm's master_node and
				// worker_node: parameter types only, which
				// TestDomainPackagesUseNoKubeadmSteps checks
			case to >= from:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", pkg, from, d, to)
			}
		}
	}
}

// kubeadmParamTypes returns the types declared in kubeadm/params.go:
// what kubespray may use of kubeadm (ClusterParams, NodeParams, Proxy,
// Version, CredentialOverrides, ...).
func kubeadmParamTypes(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("kubeadm", "params.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				types[s.(*ast.TypeSpec).Name.Name] = true
			}
		}
	}
	if !types["ClusterParams"] || !types["NodeParams"] {
		t.Fatalf("kubeadm/params.go declares %v, not ClusterParams and NodeParams", slices.Sorted(maps.Keys(types)))
	}
	return types
}

// kubeadmUses returns, as "file:line: message", every use f makes of
// package kubeadm that is not one of the allowed types: with allowed
// nil, its import itself; otherwise every kubeadm.X whose X is not in
// allowed, and an import under the name "." or "_", which would hide
// the uses.
func kubeadmUses(fset *token.FileSet, f *ast.File, allowed map[string]bool) []string {
	var problems []string
	at := func(n ast.Node) string { return fset.Position(n.Pos()).String() }
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p != module+"/kubeadm" {
			continue
		}
		local = "kubeadm"
		if imp.Name != nil {
			local = imp.Name.Name
		}
		switch {
		case allowed == nil:
			problems = append(problems, fmt.Sprintf("%s: imports kubeadm: a domain package may not", at(imp)))
		case local == "." || local == "_":
			problems = append(problems, fmt.Sprintf("%s: imports kubeadm as %q: import it by name, parameter types only", at(imp), local))
		}
	}
	if local == "" || allowed == nil {
		return problems
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && !allowed[sel.Sel.Name] {
			problems = append(problems, fmt.Sprintf("%s: uses %s.%s, which is not a type declared in kubeadm/params.go: kubespray may use kubeadm's parameter types only", at(sel), local, sel.Sel.Name))
		}
		return true
	})
	return problems
}

// nfs, lb and kubespray reach the cluster through floor packages
// (kubeapi, plumbing, system), never through kubeadm's steps: nfs and lb
// do not import kubeadm at all, and kubespray uses only the parameter
// types kubeadm/params.go declares (its spec nests master_node and
// worker_node), as the README promises. The files are parsed, so the
// failure names the identifier and its file:line.
func TestDomainPackagesUseNoKubeadmSteps(t *testing.T) {
	allowed := kubeadmParamTypes(t)
	for pkg, allow := range map[string]map[string]bool{"nfs": nil, "lb": nil, "kubespray": allowed} {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", pkg, err)
		}
		fset := token.NewFileSet()
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range kubeadmUses(fset, f, allow) {
				t.Error(p)
			}
		}
	}
}

// The check itself finds a step, an import under another name, and an
// import where none is allowed; it passes the parameter types.
func TestKubeadmUsesFindsSteps(t *testing.T) {
	allowed := kubeadmParamTypes(t)
	parse := func(src string) (*token.FileSet, *ast.File) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "kubespray/x.go", src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		return fset, f
	}
	fset, f := parse("package kubespray\n\nimport \"" + module + "/kubeadm\"\n\ntype P struct{ M kubeadm.NodeParams; V kubeadm.Version }\n")
	if got := kubeadmUses(fset, f, allowed); len(got) != 0 {
		t.Errorf("parameter types refused: %q", got)
	}
	if got := kubeadmUses(fset, f, nil); len(got) != 1 || !strings.HasPrefix(got[0], "kubespray/x.go:3:8: imports kubeadm") {
		t.Errorf("import where none is allowed: %q", got)
	}
	fset, f = parse("package kubespray\n\nimport k \"" + module + "/kubeadm\"\n\nvar _ = k.JoinNode\n\ntype P struct{ M k.NodeParams }\n")
	if got := kubeadmUses(fset, f, allowed); len(got) != 1 || !strings.Contains(got[0], "kubespray/x.go:5:9: uses k.JoinNode") {
		t.Errorf("a step under another name: %q", got)
	}
	fset, f = parse("package kubespray\n\nimport . \"" + module + "/kubeadm\"\n")
	if got := kubeadmUses(fset, f, allowed); len(got) != 1 || !strings.Contains(got[0], `as "."`) {
		t.Errorf("a dot import: %q", got)
	}
}

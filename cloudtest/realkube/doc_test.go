package realkube_test

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The replace directives the package documentation tells users to copy
// are this module's own, every one of them.
func TestDocumentedReplacesAreTheModules(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	k8s := regexp.MustCompile(`(?m)^\s*(?://\s*)?(k8s\.io/\S+ => k8s\.io/\S+ v\S+)$`)
	replaces := func(b []byte) []string {
		var out []string
		for _, m := range k8s.FindAllSubmatch(b, -1) {
			out = append(out, string(m[1]))
		}
		return out
	}
	want, got := replaces(gomod), replaces(doc)
	if len(want) < 20 || !slices.Equal(got, want) {
		t.Errorf("the package documentation's replace directives:\n%q\ngo.mod's:\n%q", got, want)
	}
}

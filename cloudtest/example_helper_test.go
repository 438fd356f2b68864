package cloudtest_test

import (
	"fmt"
	"slices"
)

// exampleT stands in for the *testing.T an Example function has none
// of: in a test, pass the test's t to the kit instead. It panics where
// testing.T would fail the test, and runs the cleanups when done.
type exampleT struct{ cleanups []func() }

func newExampleT() *exampleT                          { return &exampleT{} }
func (t *exampleT) Helper()                           {}
func (t *exampleT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }

// done runs the cleanups, last registered first, as testing.T does.
func (t *exampleT) done() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
}

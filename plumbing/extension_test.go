package plumbing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
)

// TestExtensionsCheck: every extension's Check runs; their field errors
// come back as one ParamsError holding every problem, in order, and
// another error is joined to it, named after its extension.
func TestExtensionsCheck(t *testing.T) {
	vms := []lcm.Node{{Resource: "storage", Role: lcm.RoleStorage}}
	var saw [][]lcm.Node
	check := func(err error) func(context.Context, *plumbing.Runner, []lcm.Node) error {
		return func(_ context.Context, _ *plumbing.Runner, got []lcm.Node) error {
			saw = append(saw, got)
			return err
		}
	}
	boom := errors.New("heat is down")
	es := plumbing.Extensions{
		{Name: "a", Check: check(&lcm.ParamsError{Problems: []lcm.Problem{{Path: "x.a", Message: "bad a"}}})},
		{Name: "quiet"},
		{Name: "b", Check: check(boom)},
		{Name: "c", Check: check(&lcm.ParamsError{Problems: []lcm.Problem{{Path: "x.c", Message: "bad c"}}})},
		{Name: "d", Check: check(nil)},
	}
	err := es.Check(context.Background(), nil, vms)
	if len(saw) != 4 || saw[0][0].Resource != "storage" {
		t.Fatalf("checks ran %d times with %v", len(saw), saw)
	}
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) || len(pe.Problems) != 2 || pe.Problems[0].Path != "x.a" || pe.Problems[1].Path != "x.c" {
		t.Fatalf("err = %v, want one ParamsError with x.a and x.c", err)
	}
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "b: heat is down") {
		t.Errorf("err = %v, want b's error joined and named", err)
	}

	// Field errors alone are the ParamsError itself, as callers that
	// type-switch on it expect.
	err = plumbing.Extensions{es[0], es[3]}.Check(context.Background(), nil, vms)
	if _, ok := err.(*lcm.ParamsError); !ok {
		t.Errorf("err = %#v, want an *lcm.ParamsError", err)
	}
	if err := (plumbing.Extensions{es[1], es[4]}).Check(context.Background(), nil, vms); err != nil {
		t.Errorf("no problems: %v", err)
	}
}

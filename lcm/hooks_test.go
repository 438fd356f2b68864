package lcm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
)

func TestParseHook(t *testing.T) {
	for _, h := range lcm.Hooks() {
		got, err := lcm.ParseHook(string(h))
		if err != nil || got != h {
			t.Errorf("ParseHook(%q) = %q, %v", h, got, err)
		}
	}
	want := []string{"instantiate_start", "instantiate_end", "scale_start", "scale_end", "heal_start", "heal_end", "terminate_start", "terminate_end"}
	if got := hookStrings(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Hooks() = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "InstantiateEnd", "instantiate-end", "instantiate_end ", "modify_info_start"} {
		if _, err := lcm.ParseHook(bad); err == nil || !strings.Contains(err.Error(), "want one of instantiate_start, ") {
			t.Errorf("ParseHook(%q) error = %v", bad, err)
		}
	}
}

func hookStrings() []string {
	var s []string
	for _, h := range lcm.Hooks() {
		s = append(s, h.String())
	}
	return s
}

// recordingDriver implements two hooks and records which ran.
type recordingDriver struct {
	lcm.NopDriver
	called []string
}

func (d *recordingDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	d.called = append(d.called, "InstantiateEnd:"+string(lcm.HookFrom(ctx))+":"+op.Request.FlavourID)
	res := &lcm.HookResult{}
	res.Add("install", lcm.Results{{Host: "master1", Result: lcm.Changed("installed")}})
	res.AddVimConnections = append(res.AddVimConnections, lcm.VimConnectionInfo{ID: "k8s", VimType: "kubernetes"})
	return res, nil
}

func (d *recordingDriver) ScaleStart(ctx context.Context, op *lcm.ScaleOp) (*lcm.HookResult, error) {
	d.called = append(d.called, "ScaleStart:"+string(lcm.HookFrom(ctx)))
	return nil, nil // Invoke turns this into an empty result
}

func (d *recordingDriver) TerminateEnd(context.Context, *lcm.TerminateOp) (*lcm.HookResult, error) {
	return nil, errors.New("VIM not found")
}

func (d *recordingDriver) HealStart(context.Context, *lcm.HealOp) (*lcm.HookResult, error) {
	panic("driver bug")
}

func TestInvokeDispatchesByHook(t *testing.T) {
	d := &recordingDriver{}
	ctx := context.Background()

	res, err := lcm.Invoke(ctx, d, lcm.InstantiateEnd, &lcm.InstantiateOp{Request: &lcm.InstantiateVnfRequest{FlavourID: "simple"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hook != lcm.InstantiateEnd || !res.Changed() || len(res.Steps) != 1 || res.Steps[0].Step != "install" || len(res.AddVimConnections) != 1 {
		t.Errorf("result = %+v", res)
	}

	res, err = lcm.Invoke(ctx, d, lcm.ScaleStart, &lcm.ScaleOp{})
	if err != nil || res == nil || res.Hook != lcm.ScaleStart || res.Changed() {
		t.Errorf("ScaleStart = %+v, %v; want an empty result", res, err)
	}

	// Hooks the driver did not define come from NopDriver.
	for _, c := range []struct {
		hook lcm.Hook
		op   any
	}{
		{lcm.InstantiateStart, &lcm.InstantiateOp{}},
		{lcm.ScaleEnd, &lcm.ScaleOp{}},
		{lcm.HealEnd, &lcm.HealOp{}},
		{lcm.TerminateStart, &lcm.TerminateOp{}},
	} {
		res, err := lcm.Invoke(ctx, d, c.hook, c.op)
		if err != nil || res.Hook != c.hook || res.Changed() || len(res.Steps) != 0 {
			t.Errorf("Invoke(%s) = %+v, %v", c.hook, res, err)
		}
	}
	res, err = lcm.Invoke(ctx, d, lcm.TerminateEnd, &lcm.TerminateOp{})
	if err == nil || res == nil || res.Hook != lcm.TerminateEnd {
		t.Errorf("TerminateEnd = %+v, %v; want an empty result and the error", res, err)
	}

	want := "InstantiateEnd:instantiate_end:simple ScaleStart:scale_start"
	if got := strings.Join(d.called, " "); got != want {
		t.Errorf("called %q, want %q", got, want)
	}
}

func TestInvokeRejectsMismatchedOps(t *testing.T) {
	d := &recordingDriver{}
	tests := []struct {
		hook lcm.Hook
		op   any
		want string
	}{
		{lcm.InstantiateEnd, &lcm.ScaleOp{}, "lcm: hook instantiate_end takes a *lcm.InstantiateOp, got *lcm.ScaleOp"},
		{lcm.ScaleStart, lcm.ScaleOp{}, "lcm: hook scale_start takes a *lcm.ScaleOp, got lcm.ScaleOp"},
		{lcm.HealEnd, nil, "lcm: hook heal_end takes a *lcm.HealOp, got <nil>"},
		{lcm.TerminateEnd, (*lcm.TerminateOp)(nil), "lcm: hook terminate_end: nil *lcm.TerminateOp"},
		{lcm.Hook("modify_info_start"), &lcm.InstantiateOp{}, `lcm: unknown hook "modify_info_start"`},
	}
	for _, tt := range tests {
		_, err := lcm.Invoke(context.Background(), d, tt.hook, tt.op)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Invoke(%s, %T) error = %v, want %q", tt.hook, tt.op, err, tt.want)
		}
	}
	if len(d.called) != 0 {
		t.Errorf("driver called despite bad ops: %v", d.called)
	}
	if _, err := lcm.Invoke(context.Background(), nil, lcm.InstantiateEnd, &lcm.InstantiateOp{}); err == nil {
		t.Error("Invoke with a nil Driver succeeded")
	}
}

func TestInvokeRecoversDriverPanic(t *testing.T) {
	res, err := lcm.Invoke(context.Background(), &recordingDriver{}, lcm.HealStart, &lcm.HealOp{})
	var pe *lcm.PanicError
	if !errors.As(err, &pe) || pe.Value != "driver bug" {
		t.Fatalf("err = %v, want a *PanicError", err)
	}
	if res == nil || res.Hook != lcm.HealStart {
		t.Errorf("res = %+v", res)
	}
}

func TestHookResultChanged(t *testing.T) {
	var r lcm.HookResult
	if r.Changed() {
		t.Error("empty result changed")
	}
	r.Add("a", lcm.Results{{Host: "h1"}, {Host: "h2"}})
	r.Add("a", lcm.Results{{Host: "h3", Skipped: true}})
	if r.Changed() || len(r.Steps) != 2 {
		t.Errorf("result = %+v", r)
	}
	r.Add("b", lcm.Results{{Host: "h1", Result: lcm.Changed("x")}})
	if !r.Changed() {
		t.Error("Changed() = false after a changed step")
	}
}

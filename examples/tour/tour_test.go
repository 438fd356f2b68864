package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
)

func runTour(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTourRunsEveryScenario(t *testing.T) {
	code, out, stderr := runTour(t, "-json")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the -json output is not a report: %v\n%s", err, out)
	}
	if r.Failed != 0 || r.Passed != len(r.Operations) || len(r.Operations) == 0 {
		t.Errorf("%d operations, %d passed, %d failed", len(r.Operations), r.Passed, r.Failed)
	}
	hooks := map[string]bool{}
	scenarios := map[string]bool{}
	for _, op := range r.Operations {
		hooks[op.Hook] = true
		scenarios[op.Scenario] = true
		if op.Duration <= 0 || strings.Contains(op.What, "check") && op.Commands < len(op.Hosts) {
			t.Errorf("operation %s %s %s on %d hosts: %d commands in %s", op.Scenario, op.VNF, op.Hook, len(op.Hosts), op.Commands, op.Duration)
		}
	}
	for _, h := range []lcm.Hook{lcm.InstantiateEnd, lcm.ScaleStart, lcm.ScaleEnd, lcm.HealStart, lcm.HealEnd} {
		if !hooks[string(h)] {
			t.Errorf("no %s operation", h)
		}
	}
	for _, s := range scenarioNames() {
		if !scenarios[s] {
			t.Errorf("scenario %s ran no operation", s)
		}
	}
	// registry VDU; cir 3+2; pv 3+2+storage; kubespray 3+2+LB+Ansible; scale 1+3 -1 +1 (one retired by heal).
	if n := len(r.World.Hosts); n != 1+5+6+7+4 {
		t.Errorf("%d hosts in the world, want 23", n)
	}
	for _, h := range r.World.Hosts {
		if h.VNF == "" {
			t.Errorf("host %s belongs to no VNF", h.Resource)
		}
	}
	if r.World.Retired != 3 {
		t.Errorf("%d retired hosts, want 3 (the registry VM's heal, one scale-in, one worker heal)", r.World.Retired)
	}
	// The cir scenario ends with every node pulling from both registries.
	var pulls int
	for _, op := range r.Operations {
		if op.Scenario == "cir" && op.Hook == "check" {
			pulls++
			if !op.OK || len(op.Hosts) != 5 {
				t.Errorf("cir pull check: ok %v on %d hosts (%s)", op.OK, len(op.Hosts), op.Error)
			}
		}
	}
	if pulls != 1 {
		t.Errorf("%d cir pull checks, want 1", pulls)
	}
}

func TestTourHumanOutput(t *testing.T) {
	code, out, stderr := runTour(t, "-scenario", "scale")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"=== scale", "check-node", "scale-in targets:", "new members:", "heal targets:", "Summary:", "the entire VNF"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

func TestTourInputs(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"flavourId": "simple"}`), 0o644)
	for _, args := range [][]string{
		{"-scenario", "nope"},
		{"-request", filepath.Join(dir, "missing.json")},
		{"-request", bad},
		{"-package", filepath.Join(dir, "no-such-package")},
		{"extra"},
	} {
		if code, _, stderr := runTour(t, args...); code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want %d and a message", args, code, stderr, exitUsage)
		}
	}

	// A request from a file drives the cluster; a package from a directory.
	req, err := os.ReadFile("requests/instantiate_pv_k8s_cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "req.json")
	os.WriteFile(good, req, 0o644)
	code, out, stderr := runTour(t, "-scenario", "cir", "-request", good, "-package", "package", "-json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	storage := 0
	for _, h := range r.World.Hosts {
		if h.Role == lcm.RoleStorage {
			storage++
		}
	}
	if storage != 1 {
		t.Errorf("the cir cluster from the PV request has %d storage servers, want 1", storage)
	}
}

func TestAFailedOperationFailsTheTour(t *testing.T) {
	var out bytes.Buffer
	tr, err := newTour(context.Background(), options{}, inputs{}, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	tr.operation(context.Background(), "x", "vnf", lcm.HealEnd, "fail", func(context.Context) ([]string, []string, error) {
		return []string{"a"}, nil, errors.New("boom")
	})
	if tr.report.Failed != 1 || tr.report.Operations[0].OK || tr.report.Operations[0].Error != "boom" {
		t.Errorf("report %+v", tr.report)
	}
	if !strings.Contains(out.String(), "FAILED: boom") {
		t.Errorf("output %q", out.String())
	}
}

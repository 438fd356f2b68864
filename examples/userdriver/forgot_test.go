package agentdriver_test

import (
	"context"
	"strings"
	"testing"

	"example.com/agentdriver"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// The kit catches a driver that forgets a step: one that installs the
// agent but never writes its configuration passes every hook (the
// package's postinst swallows the failed start, as debhelper's does), and
// the same checks as TestScaleOutRunsTheAgent find the agent failed.
func TestTheKitCatchesAForgottenStep(t *testing.T) {
	ctx := t.Context()
	vnf, d, _ := start(t)
	d.SetUp = func(ctx context.Context, h remote.Host, _ remote.Secret) (lcm.Result, error) {
		return agentdriver.InstallAgent(ctx, h) // ConfigureAgent forgotten
	}
	if _, err := vnf.ScaleOut(ctx, d, "worker_instance", 1); err != nil {
		t.Fatalf("the forgetful driver's scale-out failed by itself: %v", err)
	}
	problems := agentProblems(ctx, vnf)
	if len(problems) != 2 || !strings.Contains(problems[0], "the agent does not run") {
		t.Errorf("the checks found %q, want the agent not running on both workers", problems)
	}
}

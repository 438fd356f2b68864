package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/cloudtest/conformance"
	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
)

// forgetfulDriver is mgmtkit's kubeadm cluster driver whose scale_end
// does nothing: a scale-out's new workers never join.
type forgetfulDriver struct{ *drivers.ClusterDriver }

func (forgetfulDriver) ScaleEnd(context.Context, *lcm.ScaleOp) (*lcm.HookResult, error) {
	return &lcm.HookResult{Hook: lcm.ScaleEnd}, nil
}

// brokenEnv, set in the environment, makes the test run the suite on
// forgetfulDriver: in the test binary the test starts again.
const brokenEnv = "MGMTKIT_CONFORMANCE_BROKEN_DRIVER"

// The suite fails a driver whose scale_end does nothing, at the
// scale-out, naming the new workers that are no nodes, and goes no
// further. The suite runs in a child test process (its failure must not
// fail this test), only its ScaleOutAndIn scenario.
func TestConformanceFailsADriverWhoseScaleEndDoesNothing(t *testing.T) {
	if os.Getenv(brokenEnv) == "1" {
		conformance.Run(t, conformance.Options{
			Driver: func(cfg plumbing.Config) lcm.Driver {
				return forgetfulDriver{&drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: cfg}}}
			},
			MasterHeal: true,
		})
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$/^ScaleOutAndIn$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("the suite on a driver whose scale_end does nothing: %v, want it to fail\n%s", err, out)
	}
	name := t.Name() + "/ScaleOutAndIn/"
	for _, want := range []string{
		"--- PASS: " + name + "Instantiate ",
		"--- FAIL: " + name + "ScaleOut ",
		"is not a Ready node",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the suite's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "=== RUN   "+name+"ScaleIn") {
		t.Errorf("the suite went on to scale in after the failed scale-out:\n%s", out)
	}
}

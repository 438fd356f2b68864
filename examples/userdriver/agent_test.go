package agentdriver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"example.com/agentdriver"
	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

const token = "agent-token-4f7d"

// The agent's package as the team's apt repository ships it: its service
// fails to start without its configuration.
var agentPackage = cloudtest.Package{Name: agentdriver.Package, Version: "1.2.0",
	Units: []cloudtest.Unit{{Name: agentdriver.Unit, Requires: []string{agentdriver.Config}}}}

// A cluster mgmtkit instantiated, scaled out by the team's driver: every
// worker, the new one too, runs the agent with its token and is labelled;
// the token is in no command; a rerun changes nothing.
func TestScaleOutRunsTheAgent(t *testing.T) {
	ctx := t.Context()
	cloud := cloudtest.Start(t, cloudtest.Options{Packages: []cloudtest.Package{agentPackage}})
	req := cloud.SampleRequest(samples.InstantiateCIRCluster)
	vnf := cloud.NewInstantiatedCluster(ctx, req, cloudtest.Shape{Masters: 1, Workers: 1})
	d := agentdriver.New(cloud.Plumbing(), remote.NewSecret(token))
	if _, err := vnf.ScaleOut(ctx, d, "worker_instance", 1); err != nil {
		t.Fatal(err)
	}
	for _, p := range agentProblems(ctx, vnf) {
		t.Error(p)
	}
	earlier := vnf.VMs(lcm.RoleWorker)[0]
	before := earlier.Unit(agentdriver.Unit)
	again, err := vnf.ScaleOut(ctx, d, "worker_instance", 1)
	if err != nil || len(again.VMs) != 1 || len(agentProblems(ctx, vnf)) != 0 {
		t.Fatalf("a second scale-out: %v, %d new VMs, %v", err, len(again.VMs), agentProblems(ctx, vnf))
	}
	if after := earlier.Unit(agentdriver.Unit); after != before {
		t.Errorf("the second scale-out touched an earlier worker's agent: %+v, then %+v", before, after)
	}
}

// agentProblems lists what is wrong with the agent on the VNF's workers.
func agentProblems(ctx context.Context, vnf *cloudtest.VNF) (problems []string) {
	k, err := vnf.Kubectl(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	for _, w := range vnf.VMs(lcm.RoleWorker) {
		conf, _ := w.ReadFile(agentdriver.Config)
		node, err := k.Node(ctx, w.Hostname())
		switch {
		case !w.Unit(agentdriver.Unit).Active || !w.Unit(agentdriver.Unit).Enabled:
			problems = append(problems, fmt.Sprintf("%s: the agent does not run: %+v", w.Name(), w.Unit(agentdriver.Unit)))
		case !strings.Contains(string(conf), "TOKEN="+token):
			problems = append(problems, w.Name()+": the agent's configuration has no token")
		case err != nil || node.Labels[agentdriver.Label] != "true":
			problems = append(problems, fmt.Sprintf("%s: the node is not labelled (%v)", w.Name(), err))
		case strings.Contains(strings.Join(w.Commands(), "\n"), token):
			problems = append(problems, w.Name()+": the token is in a command line")
		}
	}
	return problems
}

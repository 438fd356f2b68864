package agentdriver_test

import (
	"context"
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
// the token is in no command; a second scale-out leaves the earlier
// workers' agents alone.
func TestScaleOutRunsTheAgent(t *testing.T) {
	ctx := t.Context()
	vnf, d, _ := start(t)
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

// start returns a cluster mgmtkit instantiated (one master, one worker),
// the agent's package in its VMs' catalog, the team's driver for it and
// the instantiate request.
func start(t *testing.T) (*cloudtest.VNF, *agentdriver.Driver, *lcm.InstantiateVnfRequest) {
	cloud := cloudtest.Start(t, cloudtest.Options{Packages: []cloudtest.Package{agentPackage}})
	req := cloud.SampleRequest(samples.InstantiateCIRCluster)
	vnf := cloud.NewInstantiatedCluster(t.Context(), req, cloudtest.Shape{Masters: 1, Workers: 1})
	return vnf, agentdriver.New(cloud.Plumbing(), remote.NewSecret(token)), req
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
			problems = append(problems, w.Name()+": the agent does not run")
		case !strings.Contains(string(conf), "TOKEN="+token):
			problems = append(problems, w.Name()+": the agent's configuration has no token")
		case err != nil || node.Labels[agentdriver.Label] != "true":
			problems = append(problems, w.Name()+": the node is not labelled")
		case strings.Contains(strings.Join(w.Commands(), "\n"), token):
			problems = append(problems, w.Name()+": the token is in a command line")
		}
	}
	return problems
}

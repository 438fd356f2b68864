package agentdriver_test

import (
	"strings"
	"testing"

	"example.com/agentdriver"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// The team's VNFM shows the operator a plan before it runs a hook: on a
// cluster mgmtkit built without the agent, the plan of the team's
// instantiate_end lists the agent's installation on the worker and the
// label through a master, nothing else, and changes nothing; the hook
// then does what it said.
func TestPlanListsTheAgent(t *testing.T) {
	ctx := t.Context()
	vnf, d, req := start(t)
	worker := vnf.VMs(lcm.RoleWorker)[0]
	plan, err := lcm.Plan(ctx, d, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: vnf.Instance(), Request: req, Package: lcm.NewPackage(samples.VNFPackage())})
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, st := range plan.Steps {
		for _, h := range st.Hosts {
			if h.Result.Changed || h.Result.Undetermined {
				changes = append(changes, st.Step+" "+h.Host+": "+h.Result.String())
			}
		}
	}
	if len(changes) != 2 || !strings.HasPrefix(changes[0], "node-agent "+worker.Name()+`: would run "sudo apt-get install`) ||
		!strings.Contains(changes[1], "label node "+worker.Hostname()) {
		t.Errorf("the plan lists %q, want the agent's installation on %s and its label", changes, worker.Name())
	}
	if k, err := vnf.Kubectl(ctx); err != nil {
		t.Fatal(err)
	} else if node, err := k.Node(ctx, worker.Hostname()); err != nil || worker.Installed(agentdriver.Package) || node.Labels[agentdriver.Label] != "" {
		t.Fatalf("the plan changed the cluster: agent installed %v, label %q, %v", worker.Installed(agentdriver.Package), node.Labels[agentdriver.Label], err)
	}
	if _, err := vnf.Instantiate(ctx, d, req); err != nil || !worker.Unit(agentdriver.Unit).Active {
		t.Errorf("instantiate_end: %v; the agent: %+v", err, worker.Unit(agentdriver.Unit))
	}
}

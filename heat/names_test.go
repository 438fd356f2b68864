package heat_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/heat/heattest"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// TestNamesAreOnePathSegment: a "?" in a CP name is part of the name that
// Heat looks up, not the start of a query that cuts it short.
func TestNamesAreOnePathSegment(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top := srv.CreateStack("vnf-esc")
	top.AddPort("my_CP", "10.10.0.5")
	top.AddServer("server", "my_CP")
	client := connect(t, srv)
	ctx := context.Background()

	before := len(srv.Requests())
	_, err := client.Nodes(ctx, top.Name(), heat.Group{Role: lcm.RoleStorage, SSHCP: "my_CP?x=1"})
	if !errors.Is(err, heat.ErrNotFound) {
		t.Fatalf("ssh_cp_name my_CP?x=1 resolved to my_CP (err %v), want no such resource", err)
	}
	if !strings.Contains(err.Error(), "resource my_CP?x=1: no such resource") {
		t.Errorf("error %q does not name the resource", err)
	}
	var sent []heattest.Request
	for _, r := range srv.Requests()[before:] {
		if strings.Contains(r.Path, "/resources/") {
			sent = append(sent, r)
		}
	}
	if len(sent) != 1 || !strings.HasSuffix(sent[0].RawPath, "/resources/my_CP%3Fx=1") ||
		!strings.HasSuffix(sent[0].Path, "/resources/my_CP?x=1") || sent[0].Query != "" {
		t.Errorf("resource requests %+v, want one for .../resources/my_CP%%3Fx=1 with no query", sent)
	}

	// The port is there under its own name.
	nodes, err := client.Nodes(ctx, top.Name(), heat.Group{Role: lcm.RoleStorage, SSHCP: "my_CP"})
	if err != nil || len(nodes) != 1 || nodes[0].SSHAddress != "10.10.0.5" {
		t.Fatalf("my_CP: nodes %+v, err %v", nodes, err)
	}
}

// TestOddNamesResolve: names with characters that must be escaped, in the
// group, its nested stacks' names (Heat does not check a nested stack's
// name: heat/engine/stack.py validates only stacks without an owner) and
// the CPs, are escaped once, not twice, and the nested link is decoded.
func TestOddNamesResolve(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top := srv.CreateStack("vnf-odd")
	const aspect, cp = "worker group?#%25 ü", "CP 2;a=b?c#d%zz"
	grp := top.AddGroup(aspect, heattest.GroupSpec{MinSize: 1, MaxSize: 3, Desired: 2,
		Member: memberWithPort(cp, "10.10.0.", 21)})
	if name := grp.NestedStack().Name(); !strings.Contains(name, aspect) {
		t.Fatalf("nested stack %q is not named after the group", name)
	}
	client := connect(t, srv)
	g := heat.Group{Role: lcm.RoleWorker, AspectID: aspect, SSHCP: cp}
	nodes, err := client.Nodes(context.Background(), top.ID(), g)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].SSHAddress != "10.10.0.21" || nodes[1].SSHAddress != "10.10.0.22" {
		t.Errorf("nodes %+v", nodes)
	}
	for i, m := range grp.Members() {
		if nodes[i].StackID != m.Stack.ID() {
			t.Errorf("node %d in stack %s, want %s", i, nodes[i].StackID, m.Stack.ID())
		}
	}
	for _, r := range srv.Requests() {
		if r.Status != 200 && r.Status != 201 && r.Status != 302 {
			t.Errorf("request %+v failed", r)
		}
	}
	victims, err := client.ScaleInTargets(context.Background(), top.ID(), g, lcm.ScaleVnfRequest{Type: "SCALE_IN", AspectID: aspect})
	if err != nil || len(victims) != 1 || victims[0].StackID != grp.Members()[0].Stack.ID() {
		t.Errorf("scale-in targets %+v, err %v", victims, err)
	}
}

// TestInvalidNamesSendNoRequest: a name that no Heat resource or stack can
// have is an error naming its parameter, and nothing reaches Heat.
func TestInvalidNamesSendNoRequest(t *testing.T) {
	c := newCluster(t, 3, 2)
	// One request at a time: with members resolved concurrently, a
	// sibling's request of a call that failed may still reach Heat after
	// the call returned, and be counted against the next subtest.
	c.client = c.client.WithConcurrency(1)
	ctx := context.Background()
	bad := map[string]string{
		"traversal":       "../x",
		"dot-dot":         "..",
		"dot":             ".",
		"slash":           "worker/CP",
		"empty":           "",
		"NUL":             "CP\x00",
		"newline":         "CP\nX-Injected: 1",
		"DEL":             "CP\x7f",
		"not UTF-8":       "CP\xff",
		"256 characters":  strings.Repeat("é", 256),
		"escaped slash":   "..%2Fx", // fine as a name; see below
		"query and frag.": "CP?x=1#y",
	}
	calls := []struct {
		param string
		call  func(name string) error
	}{
		{"ssh_cp_name", func(n string) error {
			_, err := c.client.Nodes(ctx, c.top.Name(), masters, heat.Group{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: n})
			return err
		}},
		{"nic_cp_name", func(n string) error {
			_, err := c.client.Nodes(ctx, c.top.Name(), heat.Group{Role: lcm.RoleWorker, AspectID: "worker_instance", SSHCP: "workerNode_CP2", NICCP: n})
			return err
		}},
		{"aspect_id", func(n string) error {
			_, err := c.client.Nodes(ctx, c.top.Name(), heat.Group{Role: lcm.RoleWorker, AspectID: n, SSHCP: "workerNode_CP2"})
			return err
		}},
		{"aspect_id", func(n string) error {
			g := workers
			g.AspectID = n
			_, err := c.client.ScaleInTargets(ctx, c.top.Name(), g, lcm.ScaleVnfRequest{Type: "SCALE_IN"})
			return err
		}},
		{"cluster_cp_name", func(n string) error {
			_, err := c.client.ClusterAddress(ctx, c.top.Name(), masters, n, "vip_FIP")
			return err
		}},
		{"cluster_fip_name", func(n string) error {
			_, err := c.client.ClusterAddress(ctx, c.top.Name(), masters, "vip_CP", n)
			return err
		}},
		{"cp", func(n string) error {
			_, err := c.client.CPAddress(ctx, c.top.Name(), n)
			return err
		}},
		{"volume_resource_id", func(n string) error {
			_, err := c.client.Volume(ctx, c.top.Name(), n)
			return err
		}},
		{"stack", func(n string) error {
			_, err := c.client.Nodes(ctx, n, masters)
			return err
		}},
	}
	for _, call := range calls {
		for what, name := range bad {
			t.Run(call.param+"/"+what, func(t *testing.T) {
				valid := heat.CheckResourceName(name) == nil
				if call.param == "stack" {
					valid = heat.CheckStack(name) == nil
				}
				if name == "" && call.param != "ssh_cp_name" && call.param != "cluster_cp_name" && call.param != "cp" && call.param != "volume_resource_id" && call.param != "stack" {
					return // absent, not invalid
				}
				before := len(c.srv.Requests())
				err := call.call(name)
				sent := c.srv.Requests()[before:]
				if valid {
					// A name Heat can have goes to Heat, escaped, and is
					// looked up as it is.
					if !errors.Is(err, heat.ErrNotFound) {
						t.Errorf("%q: error %v, want not found", name, err)
					}
					if len(sent) == 0 || !strings.HasSuffix(sent[len(sent)-1].Path, "/"+name) || sent[len(sent)-1].Status != 404 {
						t.Errorf("%q: requests %+v, want the last one for the name itself, not found", name, sent)
					}
					return
				}
				if len(sent) != 0 {
					t.Errorf("%q: %d requests reached Heat, want none: %+v", name, len(sent), sent)
				}
				var he *heat.Error
				if !errors.As(err, &he) || !errors.Is(err, heat.ErrInvalidName) || he.Param != call.param {
					t.Fatalf("%q: error %v (%#v), want an ErrInvalidName *heat.Error for %s", name, err, he, call.param)
				}
				if !strings.HasPrefix(err.Error(), "heat: "+call.param+" ") || strings.ContainsAny(err.Error(), "\x00\n\x7f") {
					t.Errorf("error %q does not start with the parameter, or holds control characters", err)
				}
			})
		}
	}
}

func TestCheckNames(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		resource, stack, any bool // valid as a resource name, stack name, stack name or ID
	}{
		{"masterNode_CP1", true, true, true},
		{"vnf-" + "8f3c1a52-7b3e-4c1d-9a2b-0c4d5e6f7a8b", true, true, true},
		{"8f3c1a52-7b3e-4c1d-9a2b-0c4d5e6f7a8b", true, false, true},
		{"8F3C1A527B3E4C1D9A2B0C4D5E6F7A8B", true, false, true},
		{"8f3c1a52-7b3e-4c1d-9a2b-0c4d5e6f7a8", true, false, false}, // 31 digits
		{"my CP?x=1", true, false, false},
		{"a.b_c-d", true, true, true},
		{"1abc", true, false, false},
		{"_abc", true, false, false},
		{"abc\n", false, false, false},
		{"a/b", false, false, false},
		{"..", false, false, false},
		{".", false, false, false},
		{"...", true, false, false},
		{"", false, false, false},
		{strings.Repeat("a", 255), true, true, true},
		{strings.Repeat("a", 256), false, false, false},
		{strings.Repeat("ü", 255), true, false, false},
		{"a\tb", false, false, false},
		{"a\u0085b", false, false, false}, // NEL, a C1 control
	} {
		if got := heat.CheckResourceName(tt.name) == nil; got != tt.resource {
			t.Errorf("CheckResourceName(%q) valid = %v, want %v", tt.name, got, tt.resource)
		}
		if got := heat.CheckStackName(tt.name) == nil; got != tt.stack {
			t.Errorf("CheckStackName(%q) valid = %v, want %v", tt.name, got, tt.stack)
		}
		if got := heat.CheckStack(tt.name) == nil; got != tt.any {
			t.Errorf("CheckStack(%q) valid = %v, want %v", tt.name, got, tt.any)
		}
	}
}

// cpParams are parameters that name Heat resources.
type cpParams struct {
	SSHCP  string `json:"ssh_cp_name"`
	NICCP  string `json:"nic_cp_name"`
	Aspect string `json:"aspect_id"`
}

func (p *cpParams) Validate(v *lcm.Validator) {
	heat.ValidateResourceName(v, "ssh_cp_name", p.SSHCP)
	heat.ValidateResourceName(v, "nic_cp_name", p.NICCP)
	heat.ValidateResourceName(v, "aspect_id", p.Aspect)
}

func TestValidateResourceName(t *testing.T) {
	var p cpParams
	err := lcm.DecodeParams([]byte(`{"p": {"ssh_cp_name": "../x", "nic_cp_name": "ok?x=1", "aspect_id": ""}}`), lcm.DecodeOptions{},
		lcm.Param("p", &p))
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v, want a *lcm.ParamsError", err)
	}
	want := `p.ssh_cp_name: "../x" must not contain "/": Heat resource names cannot`
	if len(pe.Problems) != 1 || pe.Problems[0].String() != want {
		t.Errorf("problems %q, want [%q]", pe.Problems, want)
	}
}

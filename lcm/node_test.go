package lcm

import (
	"slices"
	"testing"
	"time"
)

func TestCompareNodesOrdersByRoleThenAgeThenName(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := []Node{
		{Resource: "lb", Role: RoleLoadBalancer},
		{Resource: "w-b", Role: RoleWorker, CreatedAt: t0},
		{Resource: "w-new", Role: RoleWorker, CreatedAt: t0.Add(time.Minute)},
		{Resource: "x", Role: Role("other")},
		{Resource: "w-a", Role: RoleWorker, CreatedAt: t0},
		{Resource: "st", Role: RoleStorage},
		{Resource: "m", Role: RoleMaster, CreatedAt: t0.Add(time.Hour)},
	}
	slices.SortFunc(nodes, CompareNodes)
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name())
	}
	want := []string{"m", "w-a", "w-b", "w-new", "st", "lb", "x"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if w := NodesWithRole(nodes, RoleWorker); len(w) != 3 || w[0].Resource != "w-a" {
		t.Errorf("NodesWithRole(worker) = %v", w)
	}
	if s := nodes[0].String(); s != "master m (ssh , nic )" {
		t.Errorf("String() = %q", s)
	}
}

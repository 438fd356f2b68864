package lcm_test

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
)

func TestResult(t *testing.T) {
	tests := []struct {
		name string
		got  lcm.Result
		want lcm.Result
		str  string
	}{
		{"unchanged", lcm.Unchanged, lcm.Result{}, "unchanged"},
		{"changed", lcm.Changed("wrote hosts.toml"), lcm.Result{Changed: true, Detail: "wrote hosts.toml"}, "changed: wrote hosts.toml"},
		{"changed without detail", lcm.Changed(""), lcm.Result{Changed: true}, "changed"},
		{"unchanged and unchanged", lcm.Unchanged.And(lcm.Unchanged), lcm.Unchanged, "unchanged"},
		{"unchanged and changed", lcm.Unchanged.And(lcm.Changed("b")), lcm.Changed("b"), "changed: b"},
		{"changed and unchanged", lcm.Changed("a").And(lcm.Unchanged), lcm.Changed("a"), "changed: a"},
		{"changed and changed", lcm.Changed("a").And(lcm.Changed("b")), lcm.Changed("a; b"), "changed: a; b"},
		{"chain", lcm.Changed("a").And(lcm.Unchanged).And(lcm.Changed("c")), lcm.Changed("a; c"), "changed: a; c"},
		{"unchanged with detail", lcm.Result{Detail: "already trusted"}.And(lcm.Unchanged), lcm.Result{Detail: "already trusted"}, "unchanged: already trusted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
			if s := tt.got.String(); s != tt.str {
				t.Errorf("String() = %q, want %q", s, tt.str)
			}
		})
	}
}

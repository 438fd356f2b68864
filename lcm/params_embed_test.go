package lcm_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
)

// nodesPart is a second domain package's part of a cluster object, with
// its own Validate: embedded next to registry.TrustParams, Go's rules
// leave the outer struct with no Validate at all (the selector is
// ambiguous at depth 1).
type nodesPart struct {
	Nodes int `json:"nodes"`
}

func (p *nodesPart) Validate(v *lcm.Validator) {
	if p.Nodes < 1 {
		v.At("nodes").Errorf("must be at least 1, got %d", p.Nodes)
	}
}

// composed is what DESIGN prescribes: a driver's cluster parameters
// embedding several packages' parts.
type composed struct {
	registry.TrustParams
	nodesPart
	Name string `json:"name"`
}

// TestDecodeParamsValidatesEveryEmbeddedPart is the reproduction of the
// embedding trap: with two validating embeds, *composed has no Validate
// method, and before the fix duplicate servers decoded with a nil error.
func TestDecodeParamsValidatesEveryEmbeddedPart(t *testing.T) {
	if _, ok := any(&composed{}).(lcm.Validatable); ok {
		t.Fatal("*composed has a Validate method: the test no longer reproduces the ambiguous selector")
	}
	raw := json.RawMessage(`{"c": {"nodes": 0, "private_registry_connection_info": [
		{"connection_type": "0", "server": "r.example:5000"},
		{"connection_type": "0", "server": "R.example:5000"}]}}`)
	var c composed
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("c", &c))
	checkProblems(t, err,
		`c.private_registry_connection_info[1].server: repeats private_registry_connection_info[0].server "R.example:5000"`,
		"c.nodes: must be at least 1, got 0",
	)
}

// Part reports one problem naming itself. In the chain below it is
// validated twice, as itself and as Middle (whose Validate is Part's,
// promoted), and reported once.
type Part struct {
	P string `json:"p"`
}

func (p *Part) Validate(v *lcm.Validator) {
	v.At("p").Errorf("part %q", p.P)
}

type Other struct {
	O string `json:"o"`
}

func (o *Other) Validate(v *lcm.Validator) { v.At("o").Errorf("other %q", o.O) }

// promoted embeds one validating part: Go promotes its Validate, so the
// decoder reaches it twice (as a part and as the outer's method).
type promoted struct {
	Part
	Name string `json:"name"`
}

// outer has a Validate of its own that also calls its part's, as
// hand-written code does.
type outer struct {
	Part
	Other
	Name string `json:"name"`
}

func (o *outer) Validate(v *lcm.Validator) {
	o.Part.Validate(v)
	v.At("name").Errorf("outer %q", o.Name)
}

type withPointer struct {
	*Part
	Other
}

// Middle and Side each embed a validating part, and have no Validate of
// their own (theirs is promoted from depth 1) ...
type Middle struct {
	Part
	M string `json:"m"`
}

type Side struct{ Other }

// ... and Upper embeds both, which makes Validate ambiguous at depth 2:
// neither Upper nor top, which embeds it, has one.
type Upper struct {
	Middle
	Side
}

type top struct {
	Upper
	Tag string `json:"tag"`
}

func TestDecodeParamsEmbeddedParts(t *testing.T) {
	t.Run("promoted single part once", func(t *testing.T) {
		var p promoted
		err := lcm.DecodeParams(json.RawMessage(`{"x": {"p": "a", "name": "n"}}`), lcm.DecodeOptions{}, lcm.Param("x", &p))
		checkProblems(t, err, `x.p: part "a"`)
	})
	t.Run("outer Validate and parts", func(t *testing.T) {
		var o outer
		err := lcm.DecodeParams(json.RawMessage(`{"x": {"p": "a", "o": "b", "name": "n"}}`), lcm.DecodeOptions{}, lcm.Param("x", &o))
		checkProblems(t, err, `x.p: part "a"`, `x.o: other "b"`, `x.name: outer "n"`)
	})
	t.Run("nil pointer part not validated", func(t *testing.T) {
		var w withPointer
		err := lcm.DecodeParams(json.RawMessage(`{"x": {"o": "b"}}`), lcm.DecodeOptions{}, lcm.Param("x", &w))
		checkProblems(t, err, `x.o: other "b"`)
	})
	t.Run("present pointer part validated", func(t *testing.T) {
		var w withPointer
		err := lcm.DecodeParams(json.RawMessage(`{"x": {"p": "a", "o": "b"}}`), lcm.DecodeOptions{}, lcm.Param("x", &w))
		checkProblems(t, err, `x.p: part "a"`, `x.o: other "b"`)
	})
	t.Run("deeper chain", func(t *testing.T) {
		if _, ok := any(&top{}).(lcm.Validatable); ok {
			t.Fatal("*top has a Validate method; the chain no longer hides it")
		}
		var tp top
		err := lcm.DecodeParams(json.RawMessage(`{"x": {"p": "a", "m": "m", "o": "b", "tag": "t"}}`), lcm.DecodeOptions{}, lcm.Param("x", &tp))
		checkProblems(t, err, `x.p: part "a"`, `x.o: other "b"`)
	})
	t.Run("inside a slice", func(t *testing.T) {
		var list []outer
		err := lcm.DecodeParams(json.RawMessage(`{"x": [{"p": "a"}, {"o": "b"}]}`), lcm.DecodeOptions{}, lcm.Param("x", &list))
		checkProblems(t, err,
			`x[0].p: part "a"`, `x[0].o: other ""`, `x[0].name: outer ""`,
			`x[1].p: part ""`, `x[1].o: other "b"`, `x[1].name: outer ""`)
	})
	t.Run("broken part not validated", func(t *testing.T) {
		var o outer
		err := lcm.DecodeParams(json.RawMessage(`{"x": {"p": 1, "o": "b"}}`), lcm.DecodeOptions{}, lcm.Param("x", &o))
		checkProblems(t, err, "x.p: expected a string, got a number")
	})
}

// normalising is a part whose Validate fills in a default: running it
// twice must give the same value, as the Validatable doc asks.
type Normalising struct {
	Mode string `json:"mode"`
}

func (n *Normalising) Validate(*lcm.Validator) { n.Mode = cmp.Or(n.Mode, "auto") }

type normalisingOuter struct {
	Normalising
	Other
}

func TestDecodeParamsEmbeddedPartsNormalise(t *testing.T) {
	var n normalisingOuter
	err := lcm.DecodeParams(json.RawMessage(`{"x": {}}`), lcm.DecodeOptions{}, lcm.Param("x", &n))
	checkProblems(t, err, `x.o: other ""`)
	var m struct{ Normalising }
	if err := lcm.DecodeParams(json.RawMessage(`{"x": {}}`), lcm.DecodeOptions{}, lcm.Param("x", &m)); err != nil {
		t.Fatal(err)
	}
	if m.Mode != "auto" {
		t.Errorf("mode = %q, want the default", m.Mode)
	}
}

// Two parts that claim the same key at the same depth: encoding/json
// would decode neither, so DecodeParams refuses the type at first use.
type MastersA struct {
	Master string `json:"master_node"`
}

type MastersB struct {
	Master string `json:"master_node"`
}

// Deeper, the shallower part takes the key, as in encoding/json.
type deepMasters struct{ MastersB }

type shallowWins struct {
	deepMasters
	MastersA
}

func TestDecodeParamsEmbeddedKeyClash(t *testing.T) {
	// struct{ MastersA; MastersB }, built at run time so that this
	// package stays vet-clean: go vet's structtag check reports such a
	// clash too, but not every build runs vet.
	clash := reflect.StructOf([]reflect.StructField{
		{Name: "MastersA", Type: reflect.TypeFor[MastersA](), Anonymous: true},
		{Name: "MastersB", Type: reflect.TypeFor[MastersB](), Anonymous: true},
	})
	err := lcm.DecodeParams(json.RawMessage(`{"c": {"master_node": "m"}}`), lcm.DecodeOptions{}, lcm.Param("c", reflect.New(clash).Interface()))
	var pe *lcm.ParamsError
	want := `lcm: DecodeParams: Param("c"): struct { lcm_test.MastersA; lcm_test.MastersB }: the JSON key "master_node" is both MastersA.Master and MastersB.Master, promoted from embedded structs at the same depth, so neither would be decoded: embed one of the parts as a named field, or one level deeper`
	if err == nil || errors.As(err, &pe) || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}

	var s shallowWins
	if err := lcm.DecodeParams(json.RawMessage(`{"s": {"master_node": "m"}}`), lcm.DecodeOptions{}, lcm.Param("s", &s)); err != nil {
		t.Fatal(err)
	}
	var viaJSON shallowWins
	if err := json.Unmarshal([]byte(`{"master_node": "m"}`), &viaJSON); err != nil {
		t.Fatal(err)
	}
	if s.MastersA.Master != "m" || s.MastersB.Master != "" || s != viaJSON {
		t.Errorf("got %+v, encoding/json %+v", s, viaJSON)
	}
}

// nonEmptyPart has an optional path that a placeholder "" must not fill.
type nonEmptyPart struct {
	Script string   `json:"script" params:"nonempty"`
	List   []string `json:"list" params:"nonempty"`
	Name   string   `json:"name"`
}

func (p *nonEmptyPart) Validate(v *lcm.Validator) {
	if p.Script == "" && p.Name == "" {
		v.Errorf("needs script or name")
	}
}

func TestNonEmptyRejectsPlaceholdersAndStillValidatesTheObject(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"script": "s.sh", "list": ["a"]}`, nil},
		{`{"name": "n"}`, nil}, // absent is fine
		{`{"name": "n", "script": null}`, nil},
		{`{"script": "", "list": []}`, []string{
			`p.script: must not be empty: leave the key out for none`,
			`p.list: must not be empty: leave the key out for none`,
			`p: needs script or name`, // validated, as if script were absent
		}},
	} {
		var p nonEmptyPart
		err := lcm.DecodeParams(json.RawMessage(`{"p": `+tc.in+`}`), lcm.DecodeOptions{}, lcm.Param("p", &p))
		var got []string
		var pe *lcm.ParamsError
		if errors.As(err, &pe) {
			got = pe.Lines()
		} else if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// onlyPointer embeds one validating part by pointer: its Validate is
// promoted through the pointer, and would run on nil.
type onlyPointer struct {
	*Part
	B string `json:"b"`
}

func TestAValidatingPartEmbeddedByPointerIsRefused(t *testing.T) {
	var o onlyPointer
	err := lcm.DecodeParams(json.RawMessage(`{"x": {"b": "x"}}`), lcm.DecodeOptions{}, lcm.Param("x", &o))
	if err == nil || !strings.Contains(err.Error(), "embed lcm_test.Part by value") {
		t.Fatalf("err = %v, want the pointer embed refused", err)
	}
	var m map[string]onlyPointer
	if err := lcm.DecodeParams(json.RawMessage(`{"x": {"k": {"b": "x"}}}`), lcm.DecodeOptions{}, lcm.Param("x", &m)); err == nil {
		t.Fatal("the pointer embed inside a map value was not refused")
	}
}

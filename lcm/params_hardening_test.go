package lcm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// nulls has every kind of place a null can stand.
type nulls struct {
	Conns   []registryConnection          `json:"conns"`
	Ptrs    []*registryConnection         `json:"ptrs"`
	ByName  map[string]registryConnection `json:"by_name"`
	Names   []string                      `json:"names"`
	Ports   []lcm.Int                     `json:"ports"`
	Secrets []remote.Secret               `json:"secrets"`
	CIDRs   []netip.Prefix                `json:"cidrs"`
	Any     []any                         `json:"any"`
	Raw     []json.RawMessage             `json:"raw"`
	Opt     *registryConnection           `json:"opt"`
	Req     *registryConnection           `json:"req" params:"required"`
}

func TestDecodeParamsRejectsNullWhereAValueCannotBeAbsent(t *testing.T) {
	const req = `"req": {"connection_type": "0", "server": "r"}`
	tests := []struct {
		body string
		want []string
	}{
		{`{"c": {"private_registry_connection_info": [null]}}`,
			[]string{"c.private_registry_connection_info[0]: must be an object, got null"}},
		{`{"n": {` + req + `, "conns": [{"connection_type": "0", "server": "a"}, null]}}`,
			[]string{"n.conns[1]: must be an object, got null"}},
		{`{"n": {` + req + `, "ptrs": [null]}}`, []string{"n.ptrs[0]: must be an object, got null"}},
		{`{"n": {` + req + `, "by_name": {"x": null}}}`, []string{`n.by_name["x"]: must be an object, got null`}},
		{`{"n": {` + req + `, "names": ["a", null]}}`, []string{"n.names[1]: must be a string, got null"}},
		{`{"n": {` + req + `, "ports": [null]}}`, []string{"n.ports[0]: must be an integer, got null"}},
		{`{"n": {` + req + `, "secrets": [null]}}`, []string{"n.secrets[0]: must be a string, got null"}},
		{`{"n": {` + req + `, "cidrs": [null]}}`, []string{"n.cidrs[0]: must be a string, got null"}},
		{`{"n": {` + req + `, "raw": [null]}}`, []string{"n.raw[0]: must not be null"}},
		{`{"n": {"req": null}}`, []string{"n.req: is required"}},
		{`{"n": {"req": {"connection_type": null, "server": "r"}}}`, []string{"n.req.connection_type: is required"}},
	}
	for _, tt := range tests {
		var c clusterParams
		var n nulls
		err := lcm.DecodeParams(json.RawMessage(tt.body), lcm.DecodeOptions{}, lcm.Param("c", &c), lcm.Param("n", &n))
		checkProblems(t, err, tt.want...)
	}

	// Where a value may be absent, null means absent: an optional member is
	// zero, an optional top-level key leaves its target alone. An
	// interface holds null as nil.
	n := nulls{Names: []string{"stale"}}
	body := `{"n": {` + req + `, "opt": null, "conns": null, "by_name": null, "any": [null, 1]}}`
	if err := lcm.DecodeParams(json.RawMessage(body), lcm.DecodeOptions{}, lcm.Param("n", &n)); err != nil {
		t.Fatal(err)
	}
	if n.Opt != nil || n.Conns != nil || n.ByName != nil || n.Names != nil || n.Req.Server != "r" ||
		!reflect.DeepEqual(n.Any, []any{nil, 1.0}) {
		t.Errorf("decoded %+v", n)
	}
	if err := lcm.DecodeParams(json.RawMessage(`{"n": null}`), lcm.DecodeOptions{}, lcm.Param("n", &n)); err != nil || n.Req.Server != "r" {
		t.Errorf("optional target given null: %v, %+v", err, n)
	}
}

// Types for the fuzz test: each struct records that its Validate ran, and
// every struct reachable from a decoded value must have both its required
// fields set and that mark.
type fzKind string

type fzConn struct {
	validated bool
	Kind      *fzKind            `json:"kind" params:"required"`
	Server    string             `json:"server" params:"required"`
	Tags      []string           `json:"tags"`
	Sub       *fzConn            `json:"sub"`
	Labels    map[string]fzLabel `json:"labels"`
}

func (c *fzConn) Validate(*lcm.Validator) { c.validated = true }

type fzLabel struct {
	validated bool
	Value     string `json:"value" params:"required"`
}

func (l *fzLabel) Validate(*lcm.Validator) { l.validated = true }

type fzRoot struct {
	validated bool
	Conns     []fzConn          `json:"conns" params:"required"`
	Ptrs      []*fzConn         `json:"ptrs"`
	ByName    map[string]fzConn `json:"by_name"`
	One       *fzConn           `json:"one"`
	Must      fzLabel           `json:"must" params:"required"`
	Port      lcm.Int           `json:"port"`
}

func (r *fzRoot) Validate(*lcm.Validator) { r.validated = true }

// checkDecoded walks v and reports every struct whose Validate did not run
// or whose required field is zero.
func checkDecoded(path string, v reflect.Value) []string {
	var bad []string
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			bad = append(bad, checkDecoded(path, v.Elem())...)
		}
	case reflect.Slice:
		for i := range v.Len() {
			p := fmt.Sprintf("%s[%d]", path, i)
			if e := v.Index(i); e.Kind() == reflect.Pointer && e.IsNil() {
				bad = append(bad, p+": nil")
			}
			bad = append(bad, checkDecoded(p, v.Index(i))...)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			bad = append(bad, checkDecoded(fmt.Sprintf("%s[%q]", path, it.Key()), it.Value())...)
		}
	case reflect.Struct:
		if f := v.FieldByName("validated"); f.IsValid() && !f.Bool() {
			bad = append(bad, path+": not validated")
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Tag.Get("params") == "required" && v.Field(i).IsZero() {
				bad = append(bad, path+"."+name+": required but zero")
			}
			bad = append(bad, checkDecoded(path+"."+name, v.Field(i))...)
		}
	}
	return bad
}

// FuzzDecodeParamsInvariant checks the decoder's promise: for any input it
// accepts, every required field of every decoded struct is set and every
// Validate ran.
func FuzzDecodeParamsInvariant(f *testing.F) {
	for _, seed := range []string{
		`{"r": {"conns": [{"kind": "a", "server": "s"}], "must": {"value": "v"}}}`,
		`{"r": {"conns": [null], "must": {"value": "v"}}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s"}, null], "must": {"value": "v"}}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s"}], "ptrs": [null], "must": {"value": "v"}}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s"}], "by_name": {"x": null}, "must": {"value": "v"}}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s", "labels": {"l": null}}], "must": {"value": "v"}}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s", "sub": {"kind": null, "server": "t"}}], "must": {"value": "v"}}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s"}], "one": {}, "must": {"value": "v"}}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s"}], "must": null}}`,
		`{"r": {"conns": [{"kind": "a", "server": "s"}], "must": {"value": null}, "port": "05"}}`,
		`{"r": null}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var r fzRoot
		err := lcm.DecodeParams(json.RawMessage(body), lcm.DecodeOptions{}, lcm.Param("r", &r).Required())
		var pe *lcm.ParamsError
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("not a *ParamsError: %v", err)
			}
			if !reflect.DeepEqual(r, fzRoot{}) {
				t.Fatalf("target written despite %v", err)
			}
			return
		}
		if bad := checkDecoded("r", reflect.ValueOf(r)); len(bad) > 0 {
			t.Fatalf("accepted %s\nbut:\n%s", body, strings.Join(bad, "\n"))
		}
	})
}

func TestIntAndParsePortRejectSignsAndLeadingZeros(t *testing.T) {
	for _, s := range []string{"+5000", "05000", "-05", "00", "+0", " 5000", "5000 ", "5_000", "0x1388"} {
		var f flexible
		err := lcm.DecodeParams(json.RawMessage(`{"f": {"port": `+fmt.Sprintf("%q", s)+`}}`), lcm.DecodeOptions{}, lcm.Param("f", &f))
		if err == nil {
			t.Errorf("port %q: accepted as %d", s, f.Port)
		} else if !strings.HasPrefix(err.Error(), "f.port: expected an integer") {
			t.Errorf("port %q: %v", s, err)
		}
		if n, err := lcm.ParsePort(s); err == nil {
			t.Errorf("ParsePort(%q) = %d", s, n)
		}
	}
	var f flexible
	err := lcm.DecodeParams(json.RawMessage(`{"f": {"port": "05000"}}`), lcm.DecodeOptions{}, lcm.Param("f", &f))
	checkProblems(t, err, `f.port: expected an integer without a sign or leading zeros, got the string "05000"`)
	for s, want := range map[string]int{"0": 0, "-7": -7, "5000": 5000} {
		var f flexible
		if err := lcm.DecodeParams(json.RawMessage(`{"f": {"port": `+fmt.Sprintf("%q", s)+`}}`), lcm.DecodeOptions{}, lcm.Param("f", &f)); err != nil || f.Port.Int() != want {
			t.Errorf("port %q: %d, %v", s, f.Port, err)
		}
	}
	for s, want := range map[string]string{
		"+5000":                   "must be a port number without a sign or leading zeros",
		"05000":                   "must be a port number without a sign or leading zeros",
		"0":                       "must be a port number from 1 to 65535",
		"65536":                   "must be a port number from 1 to 65535",
		"-1":                      "must be a port number from 1 to 65535",
		"99999999999999999999999": "must be a port number from 1 to 65535",
		"":                        "must be a decimal port number",
		"http":                    "must be a decimal port number",
	} {
		if _, err := lcm.ParsePort(s); err == nil || err.Error() != want {
			t.Errorf("ParsePort(%q): %v, want %q", s, err, want)
		}
	}
	for _, s := range []string{"1", "5000", "65535"} {
		if _, err := lcm.ParsePort(s); err != nil {
			t.Errorf("ParsePort(%q): %v", s, err)
		}
	}
}

type capped struct {
	Name   string            `json:"name"`
	Short  string            `json:"short" params:"max=8"`
	Secret remote.Secret     `json:"secret" params:"max=8"`
	Long   string            `json:"long" params:"max=10000"`
	List   []string          `json:"list"`
	Few    []string          `json:"few" params:"required,max=2"`
	Map    map[string]string `json:"map"`
	FewMap map[string]int    `json:"few_map" params:"max=1"`
	Port   *lcm.Int          `json:"port" params:"max=4"`
}

func TestDecodeParamsCapsSizes(t *testing.T) {
	decode := func(opts lcm.DecodeOptions, body string) error {
		var c capped
		if !strings.HasPrefix(body, `"few"`) {
			body = `"few": ["x"], ` + body
		}
		return lcm.DecodeParams(json.RawMessage(`{"c": {`+body+`}}`), opts, lcm.Param("c", &c))
	}
	str := func(n int) string { return `"` + strings.Repeat("a", n) + `"` }
	list := func(n int) string { return `[` + strings.Repeat(`"a",`, n-1) + `"a"]` }
	obj := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"k%d":"v"`, i)
		}
		return "{" + b.String()[1:] + "}"
	}
	// At the cap is fine.
	for _, body := range []string{
		`"name": ` + str(lcm.DefaultMaxString), `"short": ` + str(8), `"secret": ` + str(8), `"long": ` + str(10000),
		`"list": ` + list(lcm.DefaultMaxList), `"map": ` + obj(lcm.DefaultMaxList), `"few_map": {"a": 1}`, `"port": "1234"`,
		`"name": "` + strings.Repeat(`é`, lcm.DefaultMaxString/2) + `"`,
	} {
		if err := decode(lcm.DecodeOptions{}, body); err != nil {
			t.Errorf("%.40s…: %v", body, err)
		}
	}
	tests := []struct {
		opts lcm.DecodeOptions
		body string
		want string
	}{
		{lcm.DecodeOptions{}, `"name": ` + str(lcm.DefaultMaxString+1), "c.name: is 4097 bytes long; the limit is 4096"},
		{lcm.DecodeOptions{}, `"name": "` + strings.Repeat(`\u00e9`, lcm.DefaultMaxString/2) + `a"`, "c.name: is 4097 bytes long; the limit is 4096"},
		{lcm.DecodeOptions{}, `"short": ` + str(9), "c.short: is 9 bytes long; the limit is 8"},
		{lcm.DecodeOptions{}, `"secret": ` + str(9), "c.secret: is 9 bytes long; the limit is 8"},
		{lcm.DecodeOptions{}, `"long": ` + str(10001), "c.long: is 10001 bytes long; the limit is 10000"},
		{lcm.DecodeOptions{}, `"list": ` + list(lcm.DefaultMaxList+1), "c.list: has 1001 elements; the limit is 1000"},
		{lcm.DecodeOptions{}, `"map": ` + obj(lcm.DefaultMaxList+1), "c.map: has 1001 entries; the limit is 1000"},
		{lcm.DecodeOptions{}, `"few": ["a", "b", "c"]`, "c.few: has 3 elements; the limit is 2"},
		{lcm.DecodeOptions{}, `"few_map": {"a": 1, "b": 2}`, "c.few_map: has 2 entries; the limit is 1"},
		{lcm.DecodeOptions{}, `"port": "12345"`, "c.port: is 5 bytes long; the limit is 4"},
		{lcm.DecodeOptions{}, `"map": {` + str(lcm.DefaultMaxString+1) + `: "v"}`, `c.map["` + strings.Repeat("a", 100) + `"… (4097 bytes)]: has a key 4097 bytes long; the limit is 4096`},
		{lcm.DecodeOptions{MaxString: 3}, `"name": "abcd"`, "c.name: is 4 bytes long; the limit is 3"},
		{lcm.DecodeOptions{MaxString: 3}, `"list": ["abcd"]`, "c.list[0]: is 4 bytes long; the limit is 3"},
		{lcm.DecodeOptions{MaxList: 2}, `"list": ["a", "b", "c"]`, "c.list: has 3 elements; the limit is 2"},
		{lcm.DecodeOptions{MaxList: 2}, `"map": {"a": "1", "b": "2", "c": "3"}`, "c.map: has 3 entries; the limit is 2"},
	}
	for _, tt := range tests {
		checkProblems(t, decode(tt.opts, tt.body), tt.want)
	}

	// A 10,000-entry list is one problem, found without decoding its
	// elements.
	var c clusterParams
	err := lcm.DecodeParams(json.RawMessage(`{"c": {"private_registry_connection_info": [`+strings.Repeat(`{"connection_type": "2"},`, 9999)+`{}]}}`),
		lcm.DecodeOptions{}, lcm.Param("c", &c))
	checkProblems(t, err, "c.private_registry_connection_info: has 10000 elements; the limit is 1000")

	for _, tag := range []string{"max=0", "max=-1", "max=x", "max=", "max=08", "maximum=3"} {
		typ := reflect.StructOf([]reflect.StructField{{Name: "X", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"x" params:"` + tag + `"`)}})
		err := lcm.DecodeParams(json.RawMessage(`{}`), lcm.DecodeOptions{}, lcm.Param("a", reflect.New(typ).Interface()))
		var pe *lcm.ParamsError
		if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "params tag option") {
			t.Errorf("tag %q: %v, want a programming error", tag, err)
		}
	}
}

// echo reports its value in a Validate method, as domain packages do.
type echo struct {
	Value string `json:"value"`
}

func (e echo) Validate(v *lcm.Validator) {
	v.At("value").Errorf("must be short, got %q", e.Value)
	v.At("value").Errorf("%v", errors.New("wrapped: "+e.Value))
	v.At("value").Errorf("%s", []byte(e.Value))
	v.At("value").Errorf("%v", []string{e.Value}) // not clipped by argument, only as a whole
}

func TestProblemsNeverEchoLongValues(t *testing.T) {
	long := strings.Repeat("x", 4000)
	body := `{"e": {"value": "` + long + `"}, "f": {"cidr": "` + long + `", "plain": 1` + strings.Repeat("0", 4000) + `, "port": "` + strings.Repeat("1", 4000) + `"},
		"` + long + `": 1, "g": {"` + long + `": 2}}`
	var e echo
	var f flexible
	var g map[string]flexible
	err := lcm.DecodeParams(json.RawMessage(body), lcm.DecodeOptions{}, lcm.Param("e", &e), lcm.Param("f", &f), lcm.Param("g", &g))
	xs := strings.Repeat("x", 100)
	checkProblems(t, err,
		`e.value: must be short, got "`+xs+`"… (4000 bytes)`,
		`e.value: wrapped: `+xs+xs[9:]+`… (4009 bytes)`,
		`e.value: `+xs+`… (4000 bytes)`,
		`e.value: [`+strings.Repeat("x", 499)+`…`,
		`f.cidr: netip.ParsePrefix("`+strings.Repeat("x", 200-len(`netip.ParsePrefix("`))+`… (4029 bytes)`,
		`f.plain: 1`+strings.Repeat("0", 99)+`… (4001 bytes) is out of range for int`,
		`f.port: the string "`+strings.Repeat("1", 100)+`"… (4000 bytes) is out of range for an integer`,
		xs+`…: unknown key`,
		`g["`+xs+`"… (4000 bytes)]: expected an object, got a number`,
	)
	if n := len(err.Error()); n > 2500 {
		t.Errorf("the error is %d bytes long", n)
	}
}

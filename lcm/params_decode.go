package lcm

import (
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
)

// decoder holds the state of one DecodeParams call.
type decoder struct {
	pkg       *Package
	maxString int // DecodeOptions.MaxString or its default
	maxList   int // DecodeOptions.MaxList or its default
	problems  []Problem
	broken    int // how many of the problems are decoding (not validation) problems
	recorded  map[Problem]struct{}
	fields    map[reflect.Type][]fieldInfo
	parts     map[reflect.Type][][]int
}

// limits are the size caps of one value, from its field's params:"max=N"
// tag; zero means the decoder's default.
type limits struct {
	str  int // bytes of a JSON string
	list int // elements of an array, entries of an object decoded into a map
}

// addf records a decoding problem.
func (d *decoder) addf(path, format string, args ...any) {
	d.broken++
	d.invalidf(path, format, args...)
}

// invalidf records a validation problem, unless the same message was
// already recorded at the same path: one part of a struct may be validated
// twice (see [decoder.validate]), and the user should read each problem
// once. Every message is formatted here, so that no value, however long, is
// echoed whole: see [clipArgs].
func (d *decoder) invalidf(path, format string, args ...any) {
	p := Problem{Path: path, Message: clipText(fmt.Sprintf(format, clipArgs(args)...), maxMessage)}
	if _, dup := d.recorded[p]; dup {
		return
	}
	if d.recorded == nil {
		d.recorded = map[Problem]struct{}{}
	}
	d.recorded[p] = struct{}{}
	d.problems = append(d.problems, p)
}

func (d *decoder) mismatch(path, want string, raw []byte) {
	d.addf(path, "expected %s, got %s", want, jsonKindOf(raw))
}

// unknownKey records a key no field takes. It does not count as a decoding
// problem: the value around it decoded fine, so it is still validated and
// the caller learns about every mistake at once.
func (d *decoder) unknownKey(path, key string, known []string) {
	if s := suggest(key, known); s != "" {
		d.invalidf(path, "unknown key (did you mean %q?)", s)
		return
	}
	d.invalidf(path, "unknown key")
}

// decode fills the settable v from raw and then, if v and everything in it
// decoded without problems (validation problems of its children and unknown
// keys do not count), validates v. null leaves v as it is and is not
// validated, as if the key were absent: callers for which null cannot mean
// absent (array elements, map values) reject it first, with [nullable]. A
// string longer than its cap is a problem and is not decoded.
func (d *decoder) decode(path string, raw json.RawMessage, v reflect.Value, lim limits) {
	switch jsonKindOf(raw) {
	case "null":
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			v.SetZero()
		}
		return
	case "a string":
		var s string
		if err := json.Unmarshal(raw, &s); err == nil && len(s) > cmp.Or(lim.str, d.maxString) {
			d.addf(path, "is %d bytes long; the limit is %d", len(s), cmp.Or(lim.str, d.maxString))
			return
		}
	}
	before := d.broken
	d.decodeValue(path, raw, v, lim)
	if d.broken == before && v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface {
		d.validate(path, v)
	}
}

// validate runs the Validate methods of the decoded, addressable v at
// path: first those of the embedded parts of a struct the decoder walked
// (see [decoder.embeddedParts]), deepest first and then in declaration
// order, then v's own. v's own may be the very method of one of its parts,
// promoted, or may call a part's Validate itself, so a part can be
// validated twice; invalidf keeps one copy of each problem.
func (d *decoder) validate(path string, v reflect.Value) {
	if v.Kind() == reflect.Struct && !decodesItself(v.Type()) {
		for _, index := range d.embeddedParts(v.Type()) {
			if part, ok := partValue(v, index); ok {
				validatable(part).Validate(&Validator{d: d, path: path})
			}
		}
	}
	if val, ok := v.Addr().Interface().(Validatable); ok {
		val.Validate(&Validator{d: d, path: path})
	}
}

// decodeValue fills the settable, addressable v from the non-null raw.
func (d *decoder) decodeValue(path string, raw json.RawMessage, v reflect.Value, lim limits) {
	t := v.Type()
	kind := jsonKindOf(raw)
	if t == reflect.TypeFor[remote.Secret]() && kind != "a string" {
		d.mismatch(path, "a string", raw) // never echo what was meant to be secret
		return
	}
	if u, ok := v.Addr().Interface().(json.Unmarshaler); ok {
		if err := u.UnmarshalJSON(raw); err != nil {
			d.addf(path, "%v", err)
		}
		return
	}
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		var s string
		if kind != "a string" || json.Unmarshal(raw, &s) != nil {
			d.mismatch(path, "a string", raw)
		} else if err := u.UnmarshalText([]byte(s)); err != nil {
			d.addf(path, "%v", err)
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(path, raw, v.Elem(), lim)
	case reflect.Struct:
		d.decodeStruct(path, raw, v)
	case reflect.Map:
		d.decodeMap(path, raw, v, lim)
	case reflect.Slice:
		d.decodeSlice(path, raw, v, lim)
	case reflect.String:
		if t == reflect.TypeFor[json.Number]() {
			d.fallback(path, raw, v)
			return
		}
		d.decodeString(path, raw, v)
	case reflect.Bool:
		if kind != "a boolean" {
			d.mismatch(path, "a boolean", raw)
			return
		}
		v.SetBool(raw[0] == 't')
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		d.decodeNumber(path, raw, v)
	default: // interfaces (any), arrays
		d.fallback(path, raw, v)
	}
}

// fallback decodes by encoding/json's rules the types that have no
// JSON-object structure to walk: any, arrays, []byte, json.Number.
func (d *decoder) fallback(path string, raw json.RawMessage, v reflect.Value) {
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		d.addf(path, "cannot decode %s into %s", jsonKindOf(raw), v.Type())
	}
}

func (d *decoder) decodeString(path string, raw json.RawMessage, v reflect.Value) {
	var s string
	if jsonKindOf(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		d.mismatch(path, "a string", raw)
		return
	}
	v.SetString(s)
}

func (d *decoder) decodeNumber(path string, raw json.RawMessage, v reflect.Value) {
	t, text := v.Type(), string(raw)
	var err error
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		if jsonKindOf(raw) != "a number" {
			d.mismatch(path, "a number", raw)
			return
		}
		var f float64
		if f, err = strconv.ParseFloat(text, t.Bits()); err == nil {
			v.SetFloat(f)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if jsonKindOf(raw) != "a number" {
			d.mismatch(path, "a non-negative integer", raw)
			return
		}
		var n uint64
		if n, err = strconv.ParseUint(text, 10, t.Bits()); err == nil {
			v.SetUint(n)
		}
	default:
		if jsonKindOf(raw) != "a number" {
			d.mismatch(path, "an integer", raw)
			return
		}
		var n int64
		if n, err = strconv.ParseInt(text, 10, t.Bits()); err == nil {
			v.SetInt(n)
		}
	}
	switch {
	case errors.Is(err, strconv.ErrRange):
		d.addf(path, "%s is out of range for %s", text, t)
	case err != nil && strings.HasPrefix(text, "-"):
		d.addf(path, "expected a non-negative integer, got %s", text)
	case err != nil:
		d.addf(path, "expected an integer, got %s", text)
	}
}

func (d *decoder) decodeStruct(path string, raw json.RawMessage, v reflect.Value) {
	if jsonKindOf(raw) != "an object" {
		d.mismatch(path, "an object", raw)
		return
	}
	members, _ := objectMembers(raw) // raw was validated as a whole
	fields := d.structFields(v.Type())
	seen := make(map[string]presence, len(members))
	for _, m := range members {
		p := joinField(path, m.key)
		f, ok := findField(fields, m.key)
		switch {
		case !ok:
			d.unknownKey(p, m.key, fieldNames(fields))
		case seen[m.key] != absent:
			d.addf(p, "duplicate key")
		default:
			seen[m.key] = presenceOf(m.value)
			if f.required && seen[m.key] == empty {
				d.addf(p, "must not be empty")
			} else if f.nonEmpty && seen[m.key] == empty {
				// Not a decoding problem: the value around it is still
				// validated, as if the key were absent.
				d.invalidf(p, "must not be empty: leave the key out for none")
			} else if !f.required || seen[m.key] != null {
				d.decode(p, m.value, fieldByIndex(v, f.index), f.limits)
			}
		}
	}
	for _, f := range fields {
		if f.required && (seen[f.name] == absent || seen[f.name] == null) {
			d.addf(joinField(path, f.name), "is required")
		}
	}
}

// presence classifies a member for the required checks.
type presence int

const (
	absent  presence = iota
	null             // null
	empty            // "", [] or {}
	present          // anything else
)

func presenceOf(raw json.RawMessage) presence {
	switch {
	case jsonKindOf(raw) == "null":
		return null
	case isEmptyJSON(raw):
		return empty
	}
	return present
}

func (d *decoder) decodeSlice(path string, raw json.RawMessage, v reflect.Value, lim limits) {
	et := v.Type().Elem()
	if et.Kind() == reflect.Uint8 { // []byte: base64
		d.fallback(path, raw, v)
		return
	}
	var elems []json.RawMessage
	if jsonKindOf(raw) != "an array" || json.Unmarshal(raw, &elems) != nil {
		d.mismatch(path, "an array", raw)
		return
	}
	if limit := cmp.Or(lim.list, d.maxList); len(elems) > limit {
		d.addf(path, "has %d elements; the limit is %d", len(elems), limit)
		return
	}
	s := reflect.MakeSlice(v.Type(), len(elems), len(elems))
	for i, e := range elems {
		p := joinIndex(path, i)
		if jsonKindOf(e) == "null" && !nullable(et) {
			d.addf(p, "%s", nullMessage(et))
			continue
		}
		d.decode(p, e, s.Index(i), limits{})
	}
	v.Set(s)
}

func (d *decoder) decodeMap(path string, raw json.RawMessage, v reflect.Value, lim limits) {
	if jsonKindOf(raw) != "an object" {
		d.mismatch(path, "an object", raw)
		return
	}
	members, _ := objectMembers(raw)
	if limit := cmp.Or(lim.list, d.maxList); len(members) > limit {
		d.addf(path, "has %d entries; the limit is %d", len(members), limit)
		return
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(members))
	for _, mem := range members {
		p := joinKey(path, mem.key)
		key := reflect.ValueOf(mem.key).Convert(t.Key())
		switch {
		case m.MapIndex(key).IsValid():
			d.addf(p, "duplicate key")
			continue
		case len(mem.key) > d.maxString:
			d.addf(p, "has a key %d bytes long; the limit is %d", len(mem.key), d.maxString)
			continue
		case jsonKindOf(mem.value) == "null" && !nullable(t.Elem()):
			d.addf(p, "%s", nullMessage(t.Elem()))
			continue
		}
		elem := reflect.New(t.Elem()).Elem()
		d.decode(p, mem.value, elem, limits{})
		m.SetMapIndex(key, elem)
	}
	v.Set(m)
}

// nullable reports whether null is a value of t rather than the absence of
// one: true only for interfaces (any), which hold it as nil. An array
// element or map value cannot be absent, so for every other type null there
// is a problem, never a zero value that would skip the required checks and
// Validate.
func nullable(t reflect.Type) bool { return t.Kind() == reflect.Interface }

// nullMessage says what a value of type t must be instead of null.
func nullMessage(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := ""
	switch {
	case t == reflect.TypeFor[Int]():
		want = "an integer"
	case t == reflect.TypeFor[Bool]():
		want = "true or false"
	case t == reflect.TypeFor[remote.Secret]():
		want = "a string"
	case reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()):
		return "must not be null"
	case reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()):
		want = "a string"
	default:
		switch t.Kind() {
		case reflect.Struct, reflect.Map:
			want = "an object"
		case reflect.Slice, reflect.Array:
			want = "an array"
			if t.Elem().Kind() == reflect.Uint8 {
				want = "a string"
			}
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "a boolean"
		case reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			want = "an integer"
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			want = "a non-negative integer"
		default:
			return "must not be null"
		}
	}
	return "must be " + want + ", got null"
}

// isEmptyJSON reports whether raw is "", [] or {}.
func isEmptyJSON(raw json.RawMessage) bool {
	switch jsonKindOf(raw) {
	case "a string":
		var s string
		return json.Unmarshal(raw, &s) == nil && s == ""
	case "an array":
		var elems []json.RawMessage
		return json.Unmarshal(raw, &elems) == nil && len(elems) == 0
	case "an object":
		members, err := objectMembers(raw)
		return err == nil && len(members) == 0
	}
	return false
}

// joinField appends a field name to a path. Names of unknown keys come
// from the input, so they are clipped like any value in a message.
func joinField(path, field string) string {
	field = clipText(field, maxEcho)
	if path == "" {
		return field
	}
	return path + "." + field
}

func joinIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// joinKey appends a map key to a path, quoted and clipped.
func joinKey(path, key string) string {
	return path + "[" + fmt.Sprintf("%q", clipArgs([]any{key})...) + "]"
}

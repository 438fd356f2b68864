package lcm

import (
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
	pkg      *Package
	problems []Problem
	broken   int // how many of the problems are decoding (not validation) problems
	fields   map[reflect.Type][]fieldInfo
}

// addf records a decoding problem.
func (d *decoder) addf(path, format string, args ...any) {
	d.broken++
	d.invalidf(path, format, args...)
}

// invalidf records a validation problem.
func (d *decoder) invalidf(path, format string, args ...any) {
	d.problems = append(d.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
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
// validated, as if the key were absent.
func (d *decoder) decode(path string, raw json.RawMessage, v reflect.Value) {
	if jsonKindOf(raw) == "null" {
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			v.SetZero()
		}
		return
	}
	before := d.broken
	d.decodeValue(path, raw, v)
	if d.broken == before && v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface {
		if val, ok := v.Addr().Interface().(Validatable); ok {
			val.Validate(&Validator{d: d, path: path})
		}
	}
}

// decodeValue fills the settable, addressable v from the non-null raw.
func (d *decoder) decodeValue(path string, raw json.RawMessage, v reflect.Value) {
	t := v.Type()
	kind := jsonKindOf(raw)
	if t == reflect.TypeFor[remote.Secret]() && kind != "a string" {
		d.mismatch(path, "a string", raw) // never echo what was meant to be secret
		return
	}
	if u, ok := v.Addr().Interface().(json.Unmarshaler); ok {
		if err := u.UnmarshalJSON(raw); err != nil {
			d.addf(path, "%s", err.Error())
		}
		return
	}
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		var s string
		if kind != "a string" || json.Unmarshal(raw, &s) != nil {
			d.mismatch(path, "a string", raw)
		} else if err := u.UnmarshalText([]byte(s)); err != nil {
			d.addf(path, "%s", err.Error())
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(path, raw, v.Elem())
	case reflect.Struct:
		d.decodeStruct(path, raw, v)
	case reflect.Map:
		d.decodeMap(path, raw, v)
	case reflect.Slice:
		d.decodeSlice(path, raw, v)
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
			} else if !f.required || seen[m.key] != null {
				d.decode(p, m.value, fieldByIndex(v, f.index))
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

func (d *decoder) decodeSlice(path string, raw json.RawMessage, v reflect.Value) {
	if v.Type().Elem().Kind() == reflect.Uint8 { // []byte: base64
		d.fallback(path, raw, v)
		return
	}
	var elems []json.RawMessage
	if jsonKindOf(raw) != "an array" || json.Unmarshal(raw, &elems) != nil {
		d.mismatch(path, "an array", raw)
		return
	}
	s := reflect.MakeSlice(v.Type(), len(elems), len(elems))
	for i, e := range elems {
		d.decode(joinIndex(path, i), e, s.Index(i))
	}
	v.Set(s)
}

func (d *decoder) decodeMap(path string, raw json.RawMessage, v reflect.Value) {
	if jsonKindOf(raw) != "an object" {
		d.mismatch(path, "an object", raw)
		return
	}
	members, _ := objectMembers(raw)
	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(members))
	for _, mem := range members {
		p := joinKey(path, mem.key)
		key := reflect.ValueOf(mem.key).Convert(t.Key())
		if m.MapIndex(key).IsValid() {
			d.addf(p, "duplicate key")
			continue
		}
		elem := reflect.New(t.Elem()).Elem()
		d.decode(p, mem.value, elem)
		m.SetMapIndex(key, elem)
	}
	v.Set(m)
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

func joinField(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func joinIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func joinKey(path, key string) string { return path + "[" + strconv.Quote(key) + "]" }

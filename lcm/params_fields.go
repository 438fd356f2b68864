package lcm

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// fieldInfo is one JSON-visible field of a struct, including fields
// promoted from embedded structs.
type fieldInfo struct {
	name     string // the JSON key
	index    []int  // for fieldByIndex
	required bool   // tagged params:"required"
	nonEmpty bool   // tagged params:"nonempty"
	limits   limits // from params:"max=N"
}

// structFields returns t's JSON fields in declaration order, computed once
// per DecodeParams call.
func (d *decoder) structFields(t reflect.Type) []fieldInfo {
	if fs, ok := d.fields[t]; ok {
		return fs
	}
	fs := collectFields(t, nil)
	d.fields[t] = fs
	return fs
}

// collectFields lists the fields as encoding/json sees them: exported,
// named by their json tag, embedded structs without a tag name flattened.
// A field of an outer struct hides a promoted one of the same name.
func collectFields(t reflect.Type, index []int) []fieldInfo {
	var direct, promoted []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline, ok := jsonField(f)
		if !ok {
			continue
		}
		idx := append(slices.Clone(index), i)
		if inline != nil {
			promoted = append(promoted, collectFields(inline, idx)...)
			continue
		}
		opts, _ := parseParamsTag(f.Tag.Get("params")) // checkType reported errors
		fi := fieldInfo{name: name, index: idx, required: opts.required, nonEmpty: opts.nonEmpty}
		if isList(f.Type) {
			fi.limits.list = opts.max
		} else {
			fi.limits.str = opts.max
		}
		direct = append(direct, fi)
	}
	for _, p := range promoted {
		// A direct field hides a promoted one of the same name; of two
		// promoted ones, the shallower wins, as in encoding/json (a tie is
		// refused by checkType, so the first one here is the only one).
		if _, hidden := findField(direct, p.name); hidden {
			continue
		}
		if slices.ContainsFunc(promoted, func(q fieldInfo) bool { return q.name == p.name && len(q.index) < len(p.index) }) {
			continue
		}
		direct = append(direct, p)
	}
	return direct
}

// ambiguousKey returns a JSON key that two fields of struct t, promoted
// from different embedded structs at the same depth, both have, and the
// Go paths of those fields. encoding/json ignores both such fields; a
// driver that composes two packages' parts claiming the same key would
// silently lose it, so checkType refuses the type instead.
func ambiguousKey(t reflect.Type) (key, a, b string) {
	all := allFields(t, nil)
	for i, f := range all {
		for _, g := range all[i+1:] {
			if f.name != g.name || len(f.index) != len(g.index) || len(f.index) == 1 {
				continue
			}
			if shallower := slices.ContainsFunc(all, func(h fieldInfo) bool { return h.name == f.name && len(h.index) < len(f.index) }); !shallower {
				return f.name, goPath(t, f.index), goPath(t, g.index)
			}
		}
	}
	return "", "", ""
}

// allFields lists every JSON field of t and of the structs it embeds
// (flattened as collectFields flattens them), hidden or not.
func allFields(t reflect.Type, index []int) []fieldInfo {
	var fs []fieldInfo
	for i := range t.NumField() {
		name, inline, ok := jsonField(t.Field(i))
		if !ok {
			continue
		}
		idx := append(slices.Clone(index), i)
		if inline != nil {
			fs = append(fs, allFields(inline, idx)...)
		} else {
			fs = append(fs, fieldInfo{name: name, index: idx})
		}
	}
	return fs
}

// jsonField says how encoding/json sees the struct field f: ignored (ok
// false: tagged "-", or unexported and not an embedded struct), flattened
// (inline is the embedded struct type, its fields inline in the JSON), or
// a member named name (its json tag name, or the Go name).
func jsonField(f reflect.StructField) (name string, inline reflect.Type, ok bool) {
	name, _, _ = strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" && !strings.HasPrefix(f.Tag.Get("json"), "-,") {
		return "", nil, false
	}
	if f.Anonymous && name == "" {
		et := f.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() == reflect.Struct && (f.IsExported() || f.Type.Kind() == reflect.Struct) {
			return "", et, true
		}
	}
	if !f.IsExported() {
		return "", nil, false
	}
	return cmp.Or(name, f.Name), nil, true
}

// goPath names the field at index below t, like "Part.MasterNode".
func goPath(t reflect.Type, index []int) string {
	names := make([]string, len(index))
	for i := range index {
		names[i] = t.FieldByIndex(index[:i+1]).Name
	}
	return strings.Join(names, ".")
}

// paramsTag is a parsed params struct tag.
type paramsTag struct {
	required bool // "required"
	nonEmpty bool // "nonempty"
	max      int  // "max=N", or 0
}

// parseParamsTag parses the comma-separated options of a params tag:
// "required", "nonempty" and "max=N" with N a positive decimal integer.
func parseParamsTag(tag string) (paramsTag, error) {
	var pt paramsTag
	if tag == "" {
		return pt, nil
	}
	for _, opt := range strings.Split(tag, ",") {
		switch n, isMax := strings.CutPrefix(opt, "max="); {
		case opt == "required":
			pt.required = true
		case opt == "nonempty":
			pt.nonEmpty = true
		case isMax:
			v, err := parseDecimal(n)
			if err != nil || v < 1 {
				return pt, fmt.Errorf("params tag option %q: want max=N with N a positive integer", opt)
			}
			pt.max = v
		default:
			return pt, fmt.Errorf("unknown params tag option %q (the options are \"required\", \"nonempty\" and \"max=N\")", opt)
		}
	}
	return pt, nil
}

// isList reports whether a max=N tag on a field of type t caps a number
// of elements (arrays into slices, objects into maps) rather than the
// bytes of a string.
func isList(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return false
	}
	return t.Kind() == reflect.Map || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8
}

func findField(fields []fieldInfo, name string) (fieldInfo, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return fieldInfo{}, false
}

func fieldNames(fields []fieldInfo) []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return names
}

// fieldByIndex is reflect.Value.FieldByIndex that allocates nil embedded
// struct pointers on the way.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// checkType reports Go types DecodeParams cannot decode into and params
// tags it does not understand, so that such mistakes show up on the first
// call whatever the input.
func checkType(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	pt := reflect.PointerTo(t)
	if pt.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkType(t.Elem(), seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("%s: map keys must be strings", t)
		}
		return checkType(t.Elem(), seen)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return fmt.Errorf("cannot decode JSON into the non-empty interface %s", t)
		}
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("cannot decode JSON into %s", t)
	case reflect.Struct:
		if key, a, b := ambiguousKey(t); key != "" {
			return fmt.Errorf("%s: the JSON key %q is both %s and %s, promoted from embedded structs at the same depth, so neither would be decoded: embed one of the parts as a named field, or one level deeper", t, key, a, b)
		}
		validating := reflect.PointerTo(t).Implements(reflect.TypeFor[Validatable]())
		for i := range t.NumField() {
			f := t.Field(i)
			if _, err := parseParamsTag(f.Tag.Get("params")); err != nil {
				return fmt.Errorf("%s.%s: %w", t, f.Name, err)
			}
			if _, inline, ok := jsonField(f); ok && inline != nil && f.Type.Kind() == reflect.Pointer && validating &&
				reflect.PointerTo(inline).Implements(reflect.TypeFor[Validatable]()) {
				// t's Validate may be the part's, promoted through the
				// pointer: with the part absent it would run on nil.
				return fmt.Errorf("%s: the validating part *%s is embedded by pointer in a struct with a Validate method, which would run on a nil part when its keys are absent: embed %s by value", t, inline, inline)
			}
			if f.IsExported() || f.Anonymous {
				if err := checkType(f.Type, seen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// embeddedParts returns the index paths of the structs embedded in t,
// directly or through other embedded structs, whose JSON fields t takes
// over (as [collectFields] flattens them) and whose pointer type has a
// Validate method. Deeper parts come before the part that embeds them;
// siblings keep their declaration order. Computed once per DecodeParams
// call.
//
// This is what makes composing parameter structs safe: when two embedded
// types both have Validate, Go's selector rules give the outer type none
// (the selector is ambiguous), and a decoder that only asked the outer
// value for Validate would silently skip both.
func (d *decoder) embeddedParts(t reflect.Type) [][]int {
	if ps, ok := d.parts[t]; ok {
		return ps
	}
	ps := collectParts(t, nil)
	d.parts[t] = ps
	return ps
}

func collectParts(t reflect.Type, index []int) [][]int {
	var parts [][]int
	for i := range t.NumField() {
		_, et, ok := jsonField(t.Field(i))
		if !ok || et == nil {
			continue // a member, decoded and validated at its own path, or ignored
		}
		idx := append(slices.Clone(index), i)
		if !decodesItself(et) {
			parts = append(parts, collectParts(et, idx)...)
		}
		if reflect.PointerTo(et).Implements(reflect.TypeFor[Validatable]()) {
			parts = append(parts, idx)
		}
	}
	return parts
}

// decodesItself reports whether values of t decode through their own
// UnmarshalJSON or UnmarshalText rather than field by field.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// partValue returns the embedded struct at index below the addressable
// struct v, and false when an embedded pointer on the way is nil: none of
// that part's keys was in the input, so there is nothing to validate.
func partValue(v reflect.Value, index []int) (reflect.Value, bool) {
	for _, x := range index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	return v, true
}

// validatable returns the addressable part as a Validatable. A part of an
// unexported type (embedded `nodesPart`) is read-only to reflect, which
// refuses Interface on it although Go code in the outer type's package
// may call its methods; reflect.NewAt makes the same pointer, of the same
// type, without the read-only flag.
func validatable(part reflect.Value) Validatable {
	p := part.Addr()
	if !p.CanInterface() {
		p = reflect.NewAt(part.Type(), p.UnsafePointer())
	}
	return p.Interface().(Validatable)
}

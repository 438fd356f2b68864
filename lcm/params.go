package lcm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Target is one top-level key of additionalParams and the Go value it
// decodes into. Make one with [Param].
type Target struct {
	key      string
	into     any
	required bool
}

// Param returns a Target that decodes the top-level key of additionalParams
// into the value into points to. into must be a non-nil pointer.
func Param(key string, into any) Target {
	return Target{key: key, into: into}
}

// Required returns a copy of t whose key must be present, not null and not
// empty.
func (t Target) Required() Target {
	t.required = true
	return t
}

// DecodeOptions configures [DecodeParams].
type DecodeOptions struct {
	// Package is the VNF package that [Validator.PackageFile] checks files
	// against. When nil, PackageFile checks only the form of paths.
	Package *Package
	// AllowKeys are top-level keys that belong to other consumers and are
	// therefore not reported as unknown, in addition to [TackerKeys].
	AllowKeys []string
	// MaxString caps the length in bytes of every JSON string decoded into
	// a target (map keys included); 0 means [DefaultMaxString]. A struct
	// field tagged `params:"max=N"` has the cap N instead.
	MaxString int
	// MaxList caps the number of elements of every JSON array decoded into
	// a slice and of entries of every object decoded into a map; 0 means
	// [DefaultMaxList]. A struct field tagged `params:"max=N"` has the cap
	// N instead.
	MaxList int
}

// The default size caps of [DecodeOptions]. A value over its cap is a
// problem at its path, found before anything else is decoded inside it, so
// that oversized input fails early and clearly rather than deep inside a
// remote command.
const (
	// DefaultMaxString is the default cap on a string: 4 KiB, the size of
	// PATH_MAX and far more than a name, address, URL or password needs.
	DefaultMaxString = 4096
	// DefaultMaxList is the default cap on the elements of an array or the
	// entries of a map.
	DefaultMaxList = 1000
)

// TackerKeys returns the top-level additionalParams keys that Tacker
// itself reads (user data scripts, Kubernetes definition files, VNF
// coordination scripts, scale-in order). [DecodeParams] never reports them
// as unknown.
func TackerKeys() []string {
	return []string{
		"lcm-operation-user-data",
		"lcm-operation-user-data-class",
		"lcm-kubernetes-def-files",
		"lcm-operation-coordinate-old-vnf",
		"lcm-operation-coordinate-old-vnf-class",
		"lcm-operation-coordinate-new-vnf",
		"lcm-operation-coordinate-new-vnf-class",
		"vdu_image_names",
		"is_reverse",
	}
}

// Problem is one thing wrong with the parameters: where, and what.
type Problem struct {
	// Path locates the value, like
	// "k8s_cluster_installation_param.private_registry_connection_info[1].connection_type";
	// map keys appear as `a.b["key"]`. Problems with the whole object have
	// the path "additionalParams".
	Path string
	// Message says what is wrong, like "expected a string, got a number".
	Message string
}

// String returns "path: message".
func (p Problem) String() string { return p.Path + ": " + p.Message }

// ParamsError is every problem [DecodeParams] found, decoding and
// validating, in document order.
type ParamsError struct {
	Problems []Problem
}

// Error lists the problems one per line, as "path: message".
func (e *ParamsError) Error() string { return strings.Join(e.Lines(), "\n") }

// Lines returns each problem as "path: message" ([Problem.String]), in
// order: the lines of [ParamsError.Error].
func (e *ParamsError) Lines() []string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return lines
}

// rootPath is the path of problems with additionalParams as a whole.
const rootPath = "additionalParams"

// DecodeParams decodes the additionalParams object raw into several typed
// targets at once and validates them, so that every problem is known before
// any remote command runs.
//
// Decoding walks the JSON against the Go types, by their json tag names
// (matched exactly, case included), and reports, each with its full path:
//   - every unknown key, with a "did you mean" hint for a close known name
//     (top-level keys are known when a target or opts.AllowKeys or
//     [TackerKeys] name them);
//   - every type mismatch, with the expected type; [Int] and [Bool] accept
//     numbers and booleans sent as strings;
//   - every missing required value: a target marked [Target.Required], or a
//     struct field tagged `params:"required"` in an object that is present.
//     Absent, null, "", [] and {} do not count as present;
//   - every optional field tagged `params:"nonempty"` that is present but
//     "", [] or {}: a placeholder such as the specs' `"script_path": ""`
//     is a mistake, not a way to say "none" (leave the key out). Unlike a
//     missing required value, it does not stop the validation of the
//     object around it, which sees the field as absent;
//   - every null where a value cannot be absent: an array element or a map
//     value, like `"private_registry_connection_info": [null]` ("...[0]:
//     must be an object, got null"), unless its type is an interface
//     (any), where null is nil. A struct, in particular, is never made up from null,
//     so every struct the decoder returns has its required fields and has
//     been validated;
//   - every string longer than [DecodeOptions.MaxString] bytes and every
//     array or map with more than [DecodeOptions.MaxList] elements (by
//     default [DefaultMaxString] and [DefaultMaxList]; a struct field
//     tagged `params:"max=N"` has the cap N instead, on its string's bytes
//     or its elements, whichever it holds), without decoding the value;
//   - every error of a json.Unmarshaler or encoding.TextUnmarshaler, like
//     [Int] or netip.Prefix, except that a [remote.Secret] mismatch never
//     echoes the input;
//   - duplicate keys.
//
// null means absent wherever a value may be absent: for a top-level key
// (a [Target.Required] one is then "is required"; an optional one is left
// as it was) and for an object's member (a required field is then "is
// required"; an optional one is zero: a nil pointer, slice or map, "", 0).
//
// No message quotes more than 100 characters of a value (200 of an
// error's text, which may itself quote one), nor is longer than 500
// characters; this includes the messages of Validate methods.
//
// Then every value present in the input whose type has a method
// Validate(*Validator) (see [Validatable]) is validated, children before
// parents, with a [Validator] positioned at its path. Embedded structs are
// validated one by one, each by its own method, even where Go's method
// rules give the outer struct no Validate (see [Validatable]); a problem
// reported twice at the same path is kept once. A value is validated only
// when it and everything inside it decoded without problems, so a Validate
// method never sees a half-decoded value; problems that its children's
// Validate methods reported do not prevent it. Validate runs on the freshly
// decoded value before it is copied to the target, so it may
// also normalise it (fill in defaults, canonical package paths).
//
// All problems are returned together as one [*ParamsError]. Targets are
// written only when there is none: each present key's target is replaced by
// a freshly decoded value (fields absent from the input are zero, not kept
// from the target's old value); a target whose key is absent or null is left
// as it was. A nil or empty raw is treated as {}.
//
// Other errors report mistakes in the Go code: a target that is not a
// non-nil pointer, a key given twice, an unknown params tag option, a type
// JSON cannot decode into, a struct that embeds two parts claiming the
// same JSON key at the same depth (encoding/json would silently decode
// neither).
func DecodeParams(raw json.RawMessage, opts DecodeOptions, targets ...Target) error {
	if err := checkTargets(targets); err != nil {
		return err
	}
	d := &decoder{
		pkg:       opts.Package,
		maxString: cmp.Or(max(opts.MaxString, 0), DefaultMaxString),
		maxList:   cmp.Or(max(opts.MaxList, 0), DefaultMaxList),
		fields:    map[reflect.Type][]fieldInfo{},
		parts:     map[reflect.Type][][]int{},
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, new(json.RawMessage)); err != nil {
		return &ParamsError{Problems: []Problem{{Path: rootPath, Message: "is not valid JSON: " + err.Error()}}}
	}
	if kind := jsonKindOf(raw); kind != "an object" {
		return &ParamsError{Problems: []Problem{{Path: rootPath, Message: "expected an object, got " + kind}}}
	}
	members, err := objectMembers(raw)
	if err != nil {
		return &ParamsError{Problems: []Problem{{Path: rootPath, Message: err.Error()}}}
	}

	allowed := append(TackerKeys(), opts.AllowKeys...)
	known := slices.Clone(allowed)
	for _, t := range targets {
		known = append(known, t.key)
	}
	fresh := make([]reflect.Value, len(targets))
	seen := make([]presence, len(targets))
	for _, m := range members {
		i := slices.IndexFunc(targets, func(t Target) bool { return t.key == m.key })
		switch {
		case i < 0 && slices.Contains(allowed, m.key):
		case i < 0:
			d.unknownKey(joinField("", m.key), m.key, known)
		case seen[i] != absent:
			d.addf(m.key, "duplicate key")
		default:
			seen[i] = presenceOf(m.value)
			switch {
			case seen[i] == null: // as if absent
			case seen[i] == empty && targets[i].required:
				d.addf(m.key, "must not be empty")
			default:
				fresh[i] = reflect.New(reflect.TypeOf(targets[i].into).Elem())
				d.decode(m.key, m.value, fresh[i].Elem(), limits{})
			}
		}
	}
	for i, t := range targets {
		if t.required && (seen[i] == absent || seen[i] == null) {
			d.addf(t.key, "is required")
		}
	}
	if len(d.problems) > 0 {
		return &ParamsError{Problems: d.problems}
	}
	for i, t := range targets {
		if fresh[i].IsValid() {
			reflect.ValueOf(t.into).Elem().Set(fresh[i].Elem())
		}
	}
	return nil
}

// checkTargets reports mistakes in how DecodeParams was called.
func checkTargets(targets []Target) error {
	seen := map[reflect.Type]bool{}
	for i, t := range targets {
		rv := reflect.ValueOf(t.into)
		switch {
		case t.key == "":
			return fmt.Errorf("lcm: DecodeParams: target %d has an empty key", i)
		case rv.Kind() != reflect.Pointer || rv.IsNil():
			return fmt.Errorf("lcm: DecodeParams: Param(%q) needs a non-nil pointer, got %T", t.key, t.into)
		case slices.ContainsFunc(targets[:i], func(o Target) bool { return o.key == t.key }):
			return fmt.Errorf("lcm: DecodeParams: key %q is given twice", t.key)
		}
		if err := checkType(rv.Type().Elem(), seen); err != nil {
			return fmt.Errorf("lcm: DecodeParams: Param(%q): %w", t.key, err)
		}
	}
	return nil
}

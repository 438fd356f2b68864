package lcm

import (
	"strings"
	"unicode/utf8"
)

// Validatable is implemented by parameter types that check their own
// values. [DecodeParams] calls Validate on every value present in the input
// whose type (or pointer type) has this method: structs, slice elements,
// map values, named scalars, and slices and maps themselves. Children are
// validated before their parents.
//
// Embedded structs are validated too, each by its own method: a driver's
// parameter struct may embed several packages' parts of one JSON object,
//
//	type ClusterParams struct {
//		kubeadm.ClusterParams // master_node, worker_node, proxy, ...
//		registry.TrustParams  // private_registry_connection_info
//	}
//
// and when two parts have Validate, Go's selector rules give the outer
// type none (the selector is ambiguous), so asking the outer value alone
// would skip both. [DecodeParams] therefore calls the Validate of every
// embedded struct whose fields are inline in the JSON (value embeds, and
// pointer embeds that are not nil), through any depth of embedding, at the
// outer value's path, deepest parts first; then the outer value's own
// Validate, if its method set has one.
//
// That outer Validate may be a part's, promoted, or may call a part's
// Validate itself, so one part can be validated twice. Identical problems
// (same path, same message) are reported once; so Validate methods must
// be deterministic and idempotent: they may normalise their value (fill
// in defaults, canonical paths), but a second run on the normalised value
// must leave it as it is and report what the first reported.
type Validatable interface {
	Validate(v *Validator)
}

// Validator collects validation problems on behalf of [DecodeParams]. It is
// positioned at the path of the value being validated; At, Index and Key
// return Validators positioned below it.
//
// Messages must not contain secrets: never format a [remote.Secret]'s
// revealed value into one.
type Validator struct {
	d    *decoder
	path string
}

// At returns a Validator for the field (JSON key) name of the current value.
func (v *Validator) At(field string) *Validator {
	if field == "" {
		return v
	}
	return &Validator{d: v.d, path: joinField(v.path, field)}
}

// Index returns a Validator for element i of the current array.
func (v *Validator) Index(i int) *Validator {
	return &Validator{d: v.d, path: joinIndex(v.path, i)}
}

// Key returns a Validator for the value under key k of the current map.
func (v *Validator) Key(k string) *Validator {
	return &Validator{d: v.d, path: joinKey(v.path, k)}
}

// Path returns the current path, like
// "k8s_cluster_installation_param.private_registry_connection_info[1]".
func (v *Validator) Path() string { return v.path }

// Errorf records a problem at the current path. Like every message of
// [DecodeParams], it quotes at most 100 characters of any string or []byte
// argument, and 200 of an error's text: a longer one is cut and followed by
// "… (N bytes)", so that Validate methods may format input values freely.
func (v *Validator) Errorf(format string, args ...any) {
	v.d.invalidf(v.path, format, args...)
}

// Package returns the VNF package given in [DecodeOptions], or nil.
func (v *Validator) Package() *Package { return v.d.pkg }

// Required records "is required" at field when value is empty or only
// white space, and reports whether the value is present. Use it for string
// fields that need a value only in some cases; for fields that always need
// one, the struct tag `params:"required"` is simpler.
func (v *Validator) Required(field, value string) bool {
	if strings.TrimSpace(value) == "" {
		v.At(field).Errorf("is required")
		return false
	}
	return true
}

// PackageFile checks that path, the value of field, names a regular file in
// the VNF package (following the path rules of [Package]) and returns its
// canonical package path. Otherwise it records a problem at field, which
// says what is wrong, and returns false. When no package was given it
// checks only the form of the path.
func (v *Validator) PackageFile(field, path string) (resolved string, ok bool) {
	fv := v.At(field)
	if path == "" {
		fv.Errorf("is required")
		return "", false
	}
	var err error
	if v.d.pkg == nil {
		resolved, err = resolvePackagePath(path)
	} else {
		resolved, err = v.d.pkg.regularFile(path)
	}
	if err != nil {
		fv.Errorf("%v", err)
		return "", false
	}
	return resolved, true
}

// suggest returns the candidate closest to key, if it is within two edits
// (case ignored), or "".
func suggest(key string, candidates []string) string {
	best, bestDist := "", 3
	keyLen := utf8.RuneCountInString(key)
	for _, c := range candidates {
		if n := keyLen - utf8.RuneCountInString(c); n > 2 || n < -2 {
			continue // more than two edits apart; spares a long key the quadratic distance
		}
		d := editDistance(strings.ToLower(key), strings.ToLower(c))
		if d < bestDist && d < len(c) && d < len(key) {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// runes each count as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

package lcm

import "strings"

// Result is what one step did on one host.
//
// A step that found the host already in the desired state returns
// [Unchanged]; a step that modified it returns [Changed] with a short,
// human-readable description of the modification. Detail must not contain
// secrets: it is logged and shown to operators.
type Result struct {
	// Changed reports whether the step modified the host.
	Changed bool
	// Detail says what changed (or, optionally, why nothing had to).
	Detail string
}

// Unchanged is the result of a step that found nothing to do. It is the
// zero Result; treat it as a constant.
var Unchanged = Result{}

// Changed returns a Result that reports a modification described by detail,
// for example "wrote /etc/containerd/certs.d/registry.example.com/hosts.toml".
func Changed(detail string) Result {
	return Result{Changed: true, Detail: detail}
}

// And combines two results of steps run on the same host: the combination
// changed the host if either did. Its Detail is the non-empty details of
// both, separated by a semicolon and a space.
func (r Result) And(o Result) Result {
	d := r.Detail
	switch {
	case d == "":
		d = o.Detail
	case o.Detail != "":
		d += "; " + o.Detail
	}
	return Result{Changed: r.Changed || o.Changed, Detail: d}
}

// String returns "changed: <detail>" or "unchanged" (followed by the detail
// when an unchanged result carries one).
func (r Result) String() string {
	var b strings.Builder
	if r.Changed {
		b.WriteString("changed")
	} else {
		b.WriteString("unchanged")
	}
	if r.Detail != "" {
		b.WriteString(": ")
		b.WriteString(r.Detail)
	}
	return b.String()
}

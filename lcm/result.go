package lcm

import (
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
)

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
	// Withheld is set in a plan ([Plan]) on a step that stopped before
	// its first change, which the plan withheld: what the step would
	// have run or written first. Changed is set with it, meaning "would
	// change", and Detail is its description.
	Withheld *remote.WithheldError
	// Undetermined is set in a plan on a step that failed, or would have
	// waited, after the plan had withheld an earlier change of the hook:
	// what it met may be only that change's absence, so whether the step
	// would change anything is not known. Detail says what it met.
	// Changed is false.
	Undetermined bool
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
	w := r.Withheld
	if w == nil {
		w = o.Withheld
	}
	return Result{Changed: r.Changed || o.Changed, Detail: d, Withheld: w, Undetermined: r.Undetermined || o.Undetermined}
}

// String returns "changed: <detail>" or "unchanged" (followed by the detail
// when an unchanged result carries one); a plan's result reads as its
// detail when a change was withheld (`would run "..."`, "would write
// PATH") and "undetermined: <detail>" when it is undetermined.
func (r Result) String() string {
	var b strings.Builder
	switch {
	case r.Withheld != nil && r.Detail != "":
		return r.Detail
	case r.Withheld != nil:
		b.WriteString("would change")
	case r.Undetermined:
		b.WriteString("undetermined")
	case r.Changed:
		b.WriteString("changed")
	default:
		b.WriteString("unchanged")
	}
	if r.Detail != "" {
		b.WriteString(": ")
		b.WriteString(r.Detail)
	}
	return b.String()
}

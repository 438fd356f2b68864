package heat

import (
	"errors"
	"strings"
)

// Sentinel causes an [*Error] wraps; test them with errors.Is.
var (
	// ErrNotFound: a stack, resource or attribute does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNotComplete: a stack or resource is not in a *_COMPLETE state
	// (being created or updated, or failed).
	ErrNotComplete = errors.New("not complete")
	// ErrWrongType: a parameter names a resource of the wrong type (an
	// aspect_id that is not an AutoScalingGroup, a CP that is not a port).
	ErrWrongType = errors.New("wrong resource type")
	// ErrInvalidName: a stack or resource name the caller gave cannot be
	// a Heat name (see [CheckResourceName] and [CheckStack]); no request
	// was sent.
	ErrInvalidName = errors.New("invalid name")
)

// Error is a topology problem: which stack, resource and attribute, and
// what is wrong with it; or, with Param set, a name the caller gave that
// cannot be one in Heat.
type Error struct {
	// Param is the parameter that holds an invalid name (stack, aspect_id,
	// ssh_cp_name, nic_cp_name, cluster_cp_name, cluster_fip_name,
	// volume_resource_id) when that is the problem: Err is then
	// ErrInvalidName, and Stack or Resource holds the name.
	Param string
	// Stack is the stack's name and ID, or the name or ID it was asked by.
	Stack string
	// Resource is the resource's name; empty for a problem with the stack.
	Resource string
	// Attribute is the attribute that is missing or malformed, if any.
	Attribute string
	// Status is the stack's or resource's status when that is the problem.
	Status string
	// Err is the cause: ErrNotFound, ErrNotComplete, ErrWrongType, or the
	// API error.
	Err error

	what string
}

// Error describes the problem with its full location, e.g.
// `heat: stack vnf-1 (8f…): resource workerNode_CP2: attribute fixed_ips: missing`,
// or names the parameter, e.g.
// `heat: ssh_cp_name "a/b": must not contain "/": Heat resource names cannot`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Param != "" {
		b.WriteString("heat: ")
		b.WriteString(e.Param)
		b.WriteString(" ")
		b.WriteString(quoteName(cmpOr(e.Resource, e.Stack)))
		if what := e.what; what != "" || e.Err != nil {
			if what == "" {
				what = e.Err.Error()
			}
			b.WriteString(": ")
			b.WriteString(what)
		}
		return b.String()
	}
	b.WriteString("heat: stack ")
	b.WriteString(e.Stack)
	if e.Resource != "" {
		b.WriteString(": resource ")
		b.WriteString(e.Resource)
	}
	if e.Attribute != "" {
		b.WriteString(": attribute ")
		b.WriteString(e.Attribute)
	}
	if e.what != "" {
		b.WriteString(": ")
		b.WriteString(e.what)
	}
	// The sentinels are already said by what; an API error is worth its
	// text unless it is a 404 that what has explained.
	quiet := errors.Is(e.Err, ErrNotComplete) || errors.Is(e.Err, ErrWrongType) || (e.what != "" && errors.Is(e.Err, ErrNotFound))
	if e.Err != nil && !quiet {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

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
)

// Error is a topology problem: which stack, resource and attribute, and
// what is wrong with it.
type Error struct {
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
// `heat: stack vnf-1 (8f…): resource workerNode_CP2: attribute fixed_ips: missing`.
func (e *Error) Error() string {
	var b strings.Builder
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

package heat

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// MaxNameLength is the longest stack or resource name Heat stores, in
// characters: both are VARCHAR(255) columns (heat/db/models.py, Stack.name
// and Resource.name).
const MaxNameLength = 255

// stackNameRE is the rule Heat applies to a new stack's name
// (heat/engine/stack.py, Stack.__init__ → _validate_stack_name:
// re.match("[a-zA-Z][a-zA-Z0-9_.-]{0,254}$", name)). \z, unlike Python's
// "$", does not let a trailing newline through.
var stackNameRE = regexp.MustCompile(`\A[a-zA-Z][a-zA-Z0-9_.-]{0,254}\z`)

// CheckResourceName returns nil when name, taken from a request, can be
// looked up as a Heat resource, else what is wrong with it, worded to
// follow the name of the field that holds it. Heat allows almost any
// resource name; the rules here are the ones that let the name be one URL
// path segment that means what it says:
//
//   - not empty, and at most [MaxNameLength] characters of valid UTF-8;
//   - no "/": Heat refuses it in resource names (heat/engine/resource.py,
//     Resource.__init__ → _validate_name), and
//     /stacks/{stack_name}/{stack_id}/resources/{resource_name} matches a
//     single segment (heat/api/openstack/v1/__init__.py);
//   - not "." or "..", which URL resolution and proxies treat as dot
//     segments (RFC 3986, section 5.2.4) whatever their escaping;
//   - no control characters.
//
// Every other character is escaped when it goes into a URL.
func CheckResourceName(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case !utf8.ValidString(name):
		return errors.New("must be valid UTF-8")
	case utf8.RuneCountInString(name) > MaxNameLength:
		return fmt.Errorf("must be at most %d characters, got %d", MaxNameLength, utf8.RuneCountInString(name))
	case strings.Contains(name, "/"):
		return errors.New(`must not contain "/": Heat resource names cannot`)
	case name == "." || name == "..":
		return fmt.Errorf("must not be %q", name)
	case strings.ContainsFunc(name, unicode.IsControl):
		return errors.New("must not contain control characters")
	}
	return nil
}

// CheckStackName returns nil when name is a stack name Heat accepts: a
// letter, then at most 254 letters, digits, "_", "." and "-"
// (heat/engine/stack.py, _validate_stack_name), else what is wrong.
func CheckStackName(name string) error {
	if !stackNameRE.MatchString(name) {
		return errors.New(`must be a Heat stack name: a letter, then up to 254 letters, digits, "_", "." or "-"`)
	}
	return nil
}

// CheckStack returns nil when s can name a stack in the [Client]'s
// methods: a stack name Heat accepts ([CheckStackName]) or a stack ID, a
// UUID, in any form oslo.utils' uuidutils.is_uuid_like accepts once its
// prefixes are stripped: 32 hex digits, with or without hyphens. Heat's
// identify_stack (heat/engine/service.py) looks a stack up by ID when the
// identity looks like a UUID and by name otherwise.
func CheckStack(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	if isUUIDLike(s) {
		return nil
	}
	if err := CheckStackName(s); err != nil {
		return errors.New(`must be a Heat stack name (a letter, then up to 254 letters, digits, "_", "." or "-") or a stack ID`)
	}
	return nil
}

// isUUIDLike reports whether s is 32 hex digits, with hyphens anywhere.
func isUUIDLike(s string) bool {
	n := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'f', r >= 'A' && r <= 'F':
			n++
		case r != '-':
			return false
		}
	}
	return n == 32
}

// ValidateResourceName records a problem at field when name, its value, is
// not empty and [CheckResourceName] rejects it. Parameter types call it
// from their Validate methods for every field that names a Heat resource
// (aspect_id, ssh_cp_name, nic_cp_name, cluster_cp_name,
// cluster_fip_name), so that a bad name is a field error before anything
// runs; whether the field is required is the decoder's business.
func ValidateResourceName(v *lcm.Validator, field, name string) {
	if name == "" {
		return
	}
	if err := CheckResourceName(name); err != nil {
		v.At(field).Errorf("%s %v", quoteName(name), err)
	}
}

// quoteName quotes a name for a message, control characters escaped and
// cut after 80 characters.
func quoteName(name string) string {
	if utf8.RuneCountInString(name) > 80 {
		return fmt.Sprintf("%q…", string([]rune(name)[:80]))
	}
	return fmt.Sprintf("%q", name)
}

// param is a name from the caller and the parameter it came in.
type param struct {
	field, name string
	role        lcm.Role // the group it belongs to, if any
	stack       bool     // a stack name or ID rather than a resource name
	optional    bool     // empty means absent
}

func stackParam(stack string) param { return param{field: "stack", name: stack, stack: true} }

// checkParams checks the names a method was given before it sends any
// request: each must be a name Heat can have, so that its URL segment
// addresses that name and nothing else.
func checkParams(params ...param) error {
	for _, p := range params {
		if p.name == "" && p.optional {
			continue
		}
		check := CheckResourceName
		if p.stack {
			check = CheckStack
		}
		if err := check(p.name); err != nil {
			what := err.Error()
			if p.role != "" {
				what = fmt.Sprintf("%s (group %s)", what, p.role)
			}
			e := &Error{Param: p.field, Resource: p.name, Err: ErrInvalidName, what: what}
			if p.stack {
				e.Stack, e.Resource = p.name, ""
			}
			return e
		}
	}
	return nil
}

// groupParams are the names of g as parameters.
func groupParams(g Group) []param {
	return []param{
		{field: "aspect_id", name: g.AspectID, role: g.Role, optional: true},
		{field: "ssh_cp_name", name: g.SSHCP, role: g.Role},
		{field: "nic_cp_name", name: g.NICCP, role: g.Role, optional: true},
	}
}

// seg escapes one path segment of a Heat URL. gophercloud builds URLs by
// joining its arguments with "/" and escapes nothing (ServiceClient.
// ServiceURL in service_client.go: ResourceBaseURL() +
// strings.Join(parts, "/"), which stackresources.Get calls as
// ServiceURL("stacks", stackName, stackID, "resources", resourceName)), so
// an unescaped "?" would start the query and "%" or "#" would change the
// name. The escaped form is sent as it is: gophercloud hands the URL to
// http.NewRequestWithContext (provider_client.go), whose url.Parse keeps
// it as the URL's RawPath and writes it back unchanged on the request
// line, so nothing is escaped twice. Heat decodes the path once before it
// routes it (PATH_INFO, as eventlet.wsgi and every WSGI server set it), so
// the segment reaches Heat as the name itself.
func seg(s string) string { return url.PathEscape(s) }

package system

import (
	"fmt"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// problems collects what is wrong with a step's options, by field path.
type problems []lcm.Problem

func (p *problems) addf(path, format string, args ...any) {
	*p = append(*p, lcm.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns the problems as an *lcm.ParamsError, nil if there are none.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &lcm.ParamsError{Problems: p}
}

// checkDNSName reports what is wrong with name as an RFC 1123 host name of
// at most max characters ("" if nothing).
func checkDNSName(name string, max int) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > max:
		return fmt.Sprintf("%q is longer than %d characters", name, max)
	case !lcm.IsDNSName(name):
		return fmt.Sprintf("%q is not a host name (RFC 1123: dot-separated labels of letters, digits and inner hyphens, 1 to 63 characters each)", name)
	}
	return ""
}

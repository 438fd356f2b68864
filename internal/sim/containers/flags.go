package containers

import (
	"fmt"
	"slices"
	"strings"
)

// The option parser of the fakes. docker (cobra/pflag), crictl and ctr
// (urfave/cli) and curl each parse differently in corners this simulation
// does not reach; what they share is modelled here: long options as
// --name value or --name=value, short options as -x value or -xvalue,
// grouped short flags (-dp 80:80), "--" ending options. An option the
// simulation does not model is an error, so a test notices that the SDK
// used something nobody simulated.

// flagSpec lists the options a command accepts: "d|detach" is a flag with
// a short and a long name, "name=" an option that takes a value.
type flagSpec []string

// opt is one option as given, under its canonical (first) name.
type opt struct{ name, value string }

// flags is a parsed command line.
type flags struct {
	opts []opt
	args []string
}

func (f flags) has(name string) bool {
	for _, o := range f.opts {
		if o.name == name {
			return o.value != "false"
		}
	}
	return false
}

// value returns the last value given for name.
func (f flags) value(name string) (string, bool) {
	for i := len(f.opts) - 1; i >= 0; i-- {
		if f.opts[i].name == name {
			return f.opts[i].value, true
		}
	}
	return "", false
}

// values returns every value given for name, in order.
func (f flags) values(name string) []string {
	var out []string
	for _, o := range f.opts {
		if o.name == name {
			out = append(out, o.value)
		}
	}
	return out
}

// lookup finds the spec entry of an option name ("d" or "detach").
func (s flagSpec) lookup(name string) (canonical string, valued, ok bool) {
	for _, e := range s {
		valued := strings.HasSuffix(e, "=")
		names := strings.Split(strings.TrimSuffix(e, "="), "|")
		if slices.Contains(names, name) {
			return names[len(names)-1], valued, true
		}
	}
	return "", false, false
}

// flagError is a command line the parser refused, worded as pflag words
// it.
type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }

// parse parses args (without the command's own name). With interspersed
// false, options end at the first operand (docker run IMAGE CMD...).
func (s flagSpec) parse(args []string, interspersed bool) (flags, error) {
	var f flags
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			f.args = append(f.args, args[i+1:]...)
			return f, nil
		case strings.HasPrefix(a, "--") && len(a) > 2:
			name, val, hasVal := strings.Cut(a[2:], "=")
			canon, valued, ok := s.lookup(name)
			switch {
			case !ok:
				return f, &flagError{fmt.Sprintf("unknown flag: --%s (not modelled by internal/sim/containers)", name)}
			case valued && !hasVal:
				if i+1 >= len(args) {
					return f, &flagError{"flag needs an argument: --" + name}
				}
				i++
				val = args[i]
			case !valued && !hasVal:
				val = "true"
			}
			f.opts = append(f.opts, opt{canon, val})
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				c := string(a[j])
				canon, valued, ok := s.lookup(c)
				if !ok {
					return f, &flagError{fmt.Sprintf("unknown shorthand flag: '%s' in %s (not modelled by internal/sim/containers)", c, a)}
				}
				if !valued {
					f.opts = append(f.opts, opt{canon, "true"})
					continue
				}
				val := strings.TrimPrefix(a[j+1:], "=")
				if j+1 >= len(a) {
					if i+1 >= len(args) {
						return f, &flagError{fmt.Sprintf("flag needs an argument: '%s' in %s", c, a)}
					}
					i++
					val = args[i]
				}
				f.opts = append(f.opts, opt{canon, val})
				break
			}
		default:
			if !interspersed {
				f.args = append(f.args, args[i:]...)
				return f, nil
			}
			f.args = append(f.args, a)
		}
	}
	return f, nil
}

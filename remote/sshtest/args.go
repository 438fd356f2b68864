package sshtest

import (
	"slices"
	"strings"
)

// CommandLine is a command line that [OptionSpec.Parse] parsed: the
// options in the order given and the operands.
type CommandLine struct {
	opts []option // in command-line order, repeats included
	// Operands are the arguments that are not options, in order.
	Operands []string
}

// option is one option as given: "-m" or "--mode" and its value ("" for a
// flag).
type option struct{ name, value string }

// Has reports whether any of names ("-f", "--force") was given.
func (c CommandLine) Has(names ...string) bool { return c.Last(names...) != "" }

// Count returns how many times any of names was given (-qq is 2).
func (c CommandLine) Count(names ...string) int {
	n := 0
	for _, o := range c.opts {
		if slices.Contains(names, o.name) {
			n++
		}
	}
	return n
}

// Value returns the value of the option given last among names.
func (c CommandLine) Value(names ...string) (string, bool) {
	for i := len(c.opts) - 1; i >= 0; i-- {
		if slices.Contains(names, c.opts[i].name) {
			return c.opts[i].value, true
		}
	}
	return "", false
}

// Values returns the values of every occurrence of names, in order.
func (c CommandLine) Values(names ...string) []string {
	var out []string
	for _, o := range c.opts {
		if slices.Contains(names, o.name) {
			out = append(out, o.value)
		}
	}
	return out
}

// Last returns which of names was given last, "" if none.
func (c CommandLine) Last(names ...string) string {
	for i := len(c.opts) - 1; i >= 0; i-- {
		if slices.Contains(names, c.opts[i].name) {
			return c.opts[i].name
		}
	}
	return ""
}

func (c *CommandLine) set(name, value string) { c.opts = append(c.opts, option{name, value}) }

// OptionSpec says which options a fake program accepts, as GNU
// getopt_long sees them: Short lists letters, a letter followed by ':'
// taking a value; Long lists names, a name followed by '=' taking a
// value. The built-in coreutils use it, and so can the fakes other
// packages register.
type OptionSpec struct {
	Short string
	Long  []string
	// Modeller names who simulates the program, for the message an
	// option nobody modelled gets; "sshtest" when empty.
	Modeller string
}

func (s OptionSpec) shortTakesValue(c byte) (known, valued bool) {
	i := strings.IndexByte(s.Short, c)
	if i < 0 || c == ':' {
		return false, false
	}
	return true, i+1 < len(s.Short) && s.Short[i+1] == ':'
}

func (s OptionSpec) longTakesValue(name string) (known, valued bool) {
	for _, l := range s.Long {
		if l == name {
			return true, false
		}
		if l == name+"=" {
			return true, true
		}
	}
	return false, false
}

// expandLong resolves an abbreviated long option (--rec for --recursive) as
// getopt_long does: an exact name, or the only one with that prefix.
func (s OptionSpec) expandLong(name string) (full string, ambiguous bool) {
	if known, _ := s.longTakesValue(name); known {
		return name, false
	}
	var matches []string
	for _, l := range s.Long {
		if strings.HasPrefix(l, name) {
			matches = append(matches, strings.TrimSuffix(l, "="))
		}
	}
	slices.Sort(matches)
	matches = slices.Compact(matches)
	switch len(matches) {
	case 0:
		return name, false
	case 1:
		return matches[0], false
	}
	return name, true
}

// Parse parses args (without argv[0]) as getopt_long does: options stop
// at "--", and at the first operand when stopAtOperand is set (otherwise
// they are accepted anywhere, as with getopt_long's permutation). An
// unknown option or a missing value makes the program fail loudly: Parse
// writes the message to p.Stderr and returns the exit status 2 and false,
// so a test sees that the SDK used an option nobody modelled.
func (s OptionSpec) Parse(p *Process, args []string, stopAtOperand bool) (CommandLine, int, bool) {
	modeller := s.Modeller
	if modeller == "" {
		modeller = "sshtest"
	}
	var c CommandLine
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.Operands = append(c.Operands, args[i+1:]...)
			return c, 0, true
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			name, ambiguous := s.expandLong(name)
			known, valued := s.longTakesValue(name)
			switch {
			case ambiguous:
				return c, p.Fail(2, "option '%s' is ambiguous (%s models no abbreviation of it)", a, modeller), false
			case !known:
				return c, p.Fail(2, "unrecognized option '%s' (not modelled by %s)", a, modeller), false
			case valued && !hasVal:
				if i+1 >= len(args) {
					return c, p.Fail(2, "option '--%s' requires an argument", name), false
				}
				i++
				val = args[i]
			case !valued && hasVal:
				return c, p.Fail(2, "option '--%s' doesn't allow an argument", name), false
			}
			c.set("--"+name, val)
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				known, valued := s.shortTakesValue(a[j])
				if !known {
					return c, p.Fail(2, "invalid option -- '%c' (not modelled by %s)", a[j], modeller), false
				}
				if !valued {
					c.set("-"+string(a[j]), "")
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return c, p.Fail(2, "option requires an argument -- '%c'", a[j]), false
					}
					i++
					val = args[i]
				}
				c.set("-"+string(a[j]), val)
				break
			}
		default:
			if stopAtOperand {
				c.Operands = append(c.Operands, args[i:]...)
				return c, 0, true
			}
			c.Operands = append(c.Operands, a)
		}
	}
	return c, 0, true
}

package sshtest

import (
	"slices"
	"strings"
)

// cmdline is a parsed GNU-style command line.
type cmdline struct {
	opts     []option // in command-line order, repeats included
	operands []string
}

// option is one option as given: "-m" or "--mode" and its value ("" for a
// flag).
type option struct{ name, value string }

func (c cmdline) has(names ...string) bool { return c.last(names...) != "" }

// value returns the value of the option given last among names.
func (c cmdline) value(names ...string) (string, bool) {
	for i := len(c.opts) - 1; i >= 0; i-- {
		if slices.Contains(names, c.opts[i].name) {
			return c.opts[i].value, true
		}
	}
	return "", false
}

// values returns the values of every occurrence of names, in order.
func (c cmdline) values(names ...string) []string {
	var out []string
	for _, o := range c.opts {
		if slices.Contains(names, o.name) {
			out = append(out, o.value)
		}
	}
	return out
}

// last returns which of names was given last, "" if none.
func (c cmdline) last(names ...string) string {
	for i := len(c.opts) - 1; i >= 0; i-- {
		if slices.Contains(names, c.opts[i].name) {
			return c.opts[i].name
		}
	}
	return ""
}

func (c *cmdline) set(name, value string) { c.opts = append(c.opts, option{name, value}) }

// optionSpec says which options a fake program accepts. Short options are
// letters; a letter followed by ':' takes a value. Long options are names; a
// name followed by '=' takes a value.
type optionSpec struct {
	short string
	long  []string
}

func (s optionSpec) shortTakesValue(c byte) (known, valued bool) {
	i := strings.IndexByte(s.short, c)
	if i < 0 || c == ':' {
		return false, false
	}
	return true, i+1 < len(s.short) && s.short[i+1] == ':'
}

func (s optionSpec) longTakesValue(name string) (known, valued bool) {
	for _, l := range s.long {
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
func (s optionSpec) expandLong(name string) (full string, ambiguous bool) {
	if known, _ := s.longTakesValue(name); known {
		return name, false
	}
	var matches []string
	for _, l := range s.long {
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

// parse parses args (without argv[0]) as getopt_long does with permutation
// off: options stop at "--" or at the first operand when stopAtOperand is
// set, and are accepted anywhere otherwise. An unknown option or a missing
// value makes the fake fail loudly, so a test sees that the SDK used an
// option the fake does not model.
func (s optionSpec) parse(p *Process, args []string, stopAtOperand bool) (cmdline, int, bool) {
	var c cmdline
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.operands = append(c.operands, args[i+1:]...)
			return c, 0, true
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			name, ambiguous := s.expandLong(name)
			known, valued := s.longTakesValue(name)
			switch {
			case ambiguous:
				return c, p.Fail(2, "option '%s' is ambiguous (sshtest models no abbreviation of it)", a), false
			case !known:
				return c, p.Fail(2, "unrecognized option '%s' (not modelled by sshtest)", a), false
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
					return c, p.Fail(2, "invalid option -- '%c' (not modelled by sshtest)", a[j]), false
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
				c.operands = append(c.operands, args[i:]...)
				return c, 0, true
			}
			c.operands = append(c.operands, a)
		}
	}
	return c, 0, true
}

package sshtest

import (
	"strings"
)

// cmdline is a parsed GNU-style command line.
type cmdline struct {
	opts     map[string]string // by canonical name: "-m", "--mode"; flags map to ""
	operands []string
}

func (c cmdline) has(names ...string) bool {
	for _, n := range names {
		if _, ok := c.opts[n]; ok {
			return true
		}
	}
	return false
}

func (c cmdline) value(names ...string) (string, bool) {
	for _, n := range names {
		if v, ok := c.opts[n]; ok {
			return v, true
		}
	}
	return "", false
}

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

// parse parses args (without argv[0]) as getopt_long does with permutation
// off: options stop at "--" or at the first operand when stopAtOperand is
// set, and are accepted anywhere otherwise. An unknown option or a missing
// value makes the fake fail loudly, so a test sees that the SDK used an
// option the fake does not model.
func (s optionSpec) parse(p *Process, args []string, stopAtOperand bool) (cmdline, int, bool) {
	c := cmdline{opts: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.operands = append(c.operands, args[i+1:]...)
			return c, 0, true
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			known, valued := s.longTakesValue(name)
			switch {
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
			c.opts["--"+name] = val
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				known, valued := s.shortTakesValue(a[j])
				if !known {
					return c, p.Fail(2, "invalid option -- '%c' (not modelled by sshtest)", a[j]), false
				}
				if !valued {
					c.opts["-"+string(a[j])] = ""
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
				c.opts["-"+string(a[j])] = val
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

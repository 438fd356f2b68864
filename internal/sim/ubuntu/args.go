package ubuntu

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The option parser of the fakes: GNU getopt_long, as in sshtest's
// coreutils (which keeps its parser unexported). An option a fake does not
// model makes it fail loudly with status 2, so that a test notices the SDK
// used something nobody simulated.

// cmdline is a parsed command line.
type cmdline struct {
	opts     []option // in command-line order, repeats included
	operands []string
}

// option is one option as given: "-o" or "--output" and its value ("" for
// a flag).
type option struct{ name, value string }

func (c cmdline) has(names ...string) bool { return c.last(names...) != "" }

// count returns how many times any of names was given (-qq is 2).
func (c cmdline) count(names ...string) int {
	n := 0
	for _, o := range c.opts {
		if slices.Contains(names, o.name) {
			n++
		}
	}
	return n
}

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

// optSpec says which options a fake accepts. Short options are letters; a
// letter followed by ':' takes a value. Long options are names; a name
// followed by '=' takes a value.
type optSpec struct {
	short string
	long  []string
}

func (s optSpec) shortKnown(c byte) (known, valued bool) {
	i := strings.IndexByte(s.short, c)
	if i < 0 || c == ':' {
		return false, false
	}
	return true, i+1 < len(s.short) && s.short[i+1] == ':'
}

func (s optSpec) longKnown(name string) (known, valued bool) {
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

// expandLong resolves an abbreviated long option as getopt_long does.
func (s optSpec) expandLong(name string) (full string, ambiguous bool) {
	if known, _ := s.longKnown(name); known {
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

// parse parses args (without argv[0]). Options are accepted anywhere
// (getopt_long's permutation) unless stopAtOperand is set; "--" ends them.
func (s optSpec) parse(p *sshtest.Process, args []string, stopAtOperand bool) (cmdline, int, bool) {
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
			known, valued := s.longKnown(name)
			switch {
			case ambiguous:
				return c, p.Fail(2, "option '%s' is ambiguous (internal/sim/ubuntu models no abbreviation of it)", a), false
			case !known:
				return c, p.Fail(2, "unrecognized option '%s' (not modelled by internal/sim/ubuntu)", a), false
			case valued && !hasVal:
				if i+1 >= len(args) {
					return c, p.Fail(2, "option '--%s' requires an argument", name), false
				}
				i++
				val = args[i]
			case !valued && hasVal:
				return c, p.Fail(2, "option '--%s' doesn't allow an argument", name), false
			}
			c.opts = append(c.opts, option{"--" + name, val})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				known, valued := s.shortKnown(a[j])
				if !known {
					return c, p.Fail(2, "invalid option -- '%c' (not modelled by internal/sim/ubuntu)", a[j]), false
				}
				if !valued {
					c.opts = append(c.opts, option{"-" + string(a[j]), ""})
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
				c.opts = append(c.opts, option{"-" + string(a[j]), val})
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

// notModelled fails loudly for a form of a command the simulation does not
// model.
func notModelled(p *sshtest.Process, format string, args ...any) int {
	return p.Fail(2, "%s (not modelled by internal/sim/ubuntu)", fmt.Sprintf(format, args...))
}

// isRoot reports whether the process runs as root.
func isRoot(p *sshtest.Process) bool { return p.FS.Cred().UID == 0 }

// errf prints a message to standard error as is (with a newline), for tools
// whose messages do not start with "name: " (apt's "E: ...").
func errf(p *sshtest.Process, format string, args ...any) {
	fmt.Fprintf(p.Stderr, format+"\n", args...)
}

// outf prints a line to standard output.
func outf(p *sshtest.Process, format string, args ...any) {
	fmt.Fprintf(p.Stdout, format+"\n", args...)
}

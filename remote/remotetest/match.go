package remotetest

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
)

// Matcher selects the commands a rule answers. The matchers of this
// package look at the argv ([remote.Cmd.Args]) unless they say otherwise;
// [Sudo] looks at [remote.Cmd.Sudo]. Combine them with [All], [Any] and
// [Not], or write one: any func(remote.Cmd) bool is a Matcher.
type Matcher func(c remote.Cmd) bool

// Equal matches the command whose argv is exactly argv.
func Equal(argv ...string) Matcher {
	return func(c remote.Cmd) bool { return slices.Equal(c.Args, argv) }
}

// HasPrefix matches the commands whose argv starts with argv, word by
// word: HasPrefix("apt-get", "install") matches "apt-get install -y
// nginx", not "apt-get installer".
func HasPrefix(argv ...string) Matcher {
	return func(c remote.Cmd) bool { return len(c.Args) >= len(argv) && slices.Equal(c.Args[:len(argv)], argv) }
}

// Program matches the commands that run the program name, called by its
// name or its path: Program("apt-get") matches "apt-get ..." and
// "/usr/bin/apt-get ...".
func Program(name string) Matcher {
	return func(c remote.Cmd) bool { return len(c.Args) > 0 && path.Base(c.Args[0]) == name }
}

// HasArg matches the commands that have arg as one of their arguments
// (after the program).
func HasArg(arg string) Matcher {
	return func(c remote.Cmd) bool { return len(c.Args) > 1 && slices.Contains(c.Args[1:], arg) }
}

// Contains matches the commands whose argv, joined by single spaces,
// contains s: Contains("--now kubelet").
func Contains(s string) Matcher {
	return func(c remote.Cmd) bool { return strings.Contains(strings.Join(c.Args, " "), s) }
}

// Matches matches the commands whose argv, joined by single spaces,
// matches the regular expression pattern (regexp syntax). It panics if
// pattern does not compile.
func Matches(pattern string) Matcher {
	re := regexp.MustCompile(pattern)
	return func(c remote.Cmd) bool { return re.MatchString(strings.Join(c.Args, " ")) }
}

// Script matches a script run as `sh -c SCRIPT NAME ARG...` or
// `bash -c SCRIPT NAME ARG...`, by NAME, its $0: the name of a
// [remote.Script] and of the scripts the SDK's steps run
// (Script("mgmtkit-hostname") answers system.SetHostname's).
func Script(name string) Matcher {
	return func(c remote.Cmd) bool { return scriptName(c.Args) == name }
}

// scriptName returns NAME of `sh|bash -c SCRIPT NAME ...`, or "".
func scriptName(argv []string) string {
	if len(argv) < 4 || argv[1] != "-c" {
		return ""
	}
	switch path.Base(argv[0]) {
	case "sh", "bash", "dash":
		return argv[3]
	}
	return ""
}

// Sudo matches the commands run as root ([remote.Cmd.Sudo]).
func Sudo() Matcher {
	return func(c remote.Cmd) bool { return c.Sudo }
}

// Not matches the commands m does not match.
func Not(m Matcher) Matcher {
	return func(c remote.Cmd) bool { return !m(c) }
}

// All matches the commands every one of ms matches (every command when ms
// is empty).
func All(ms ...Matcher) Matcher {
	return func(c remote.Cmd) bool {
		for _, m := range ms {
			if !m(c) {
				return false
			}
		}
		return true
	}
}

// Any matches the commands at least one of ms matches (none when ms is
// empty).
func Any(ms ...Matcher) Matcher {
	return func(c remote.Cmd) bool {
		for _, m := range ms {
			if m(c) {
				return true
			}
		}
		return false
	}
}

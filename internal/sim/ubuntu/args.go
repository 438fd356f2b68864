package ubuntu

import (
	"fmt"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The option parser of the fakes is sshtest's (GNU getopt_long): an
// option a fake does not model makes it fail loudly with status 2, so that
// a test notices the SDK used something nobody simulated.

// cmdline is a parsed command line.
type cmdline = sshtest.CommandLine

// optSpec says which options a fake accepts: letters in short (followed
// by ':' when they take a value), names in long (followed by '=').
type optSpec struct {
	short string
	long  []string
}

// parse parses args (without argv[0]); see sshtest.OptionSpec.Parse.
func (s optSpec) parse(p *sshtest.Process, args []string, stopAtOperand bool) (cmdline, int, bool) {
	return sshtest.OptionSpec{Short: s.short, Long: s.long, Modeller: "internal/sim/ubuntu"}.Parse(p, args, stopAtOperand)
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

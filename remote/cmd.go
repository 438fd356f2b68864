package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"al.essio.dev/pkg/shellescape"
)

// Cmd is one command to run on a host. It is built from an argv, never from
// a shell string: every element is quoted by the library before it reaches
// the remote shell, so a value such as `a b; rm -rf /` arrives as one
// argument. For compound commands use a [Script].
type Cmd struct {
	// Args is the argv. Args[0] is the program, looked up on the host's PATH.
	Args []string
	// Env sets environment variables for the command only. The values are
	// part of the command line, so they must not be secrets: pass secrets on
	// Stdin or in a file written with WriteFile.
	Env map[string]string
	// Stdin is streamed to the command's standard input; nil means empty.
	Stdin io.Reader
	// Sudo runs the command as root: unwrapped when the login user is root,
	// with `sudo -n` when the user may sudo without a password, and with
	// `sudo -S` and the password on standard input otherwise. Never with a
	// PTY.
	Sudo bool
	// Stdout and Stderr, when set, receive the command's output as it
	// arrives. With Stdout set, [Output.Stdout] stays empty; standard
	// error is kept all the same, its last [StderrTail] bytes in
	// [Output.Stderr] and in the error, whether Stderr is set or not.
	Stdout, Stderr io.Writer
	// OKExit lists exit statuses besides 0 that are answers, not failures
	// (`grep -q` exits 1 for "no match", `systemctl is-active` 3 for
	// "inactive"). [Output.ExitCode] tells which one it was.
	OKExit []int
	// Idempotent marks a command that may safely run twice: if the
	// connection drops while it runs, Run redials once and runs it again,
	// with Stdin rewound to its start when it is an io.Seeker (a command
	// with any other Stdin is not run again). Leave it false for commands
	// whose second run would differ (appending to a file, creating a
	// token).
	Idempotent bool
	// Secrets are extra values to scrub from errors and logs, in addition to
	// the connection's passwords (for example a token the command prints).
	Secrets []Secret
	// Brief marks a command that ends on its own within moments whether or
	// not its connection survives: it stats, reads, hashes or renames local
	// files, or reads its standard input to the end, and waits on nothing
	// else (no network, no lock, no service). Such a command is bounded
	// from the client side only: a context deadline or cancellation ends it
	// with signals as usual, but it runs without the host-side `timeout`
	// wrapper, whose extra process costs a fork and exec per command
	// (BENCHMARKS.md). Leave it false for anything that may block or run
	// long (package managers, kubeadm, service restarts, downloads): when
	// the connection drops, only that wrapper stops such a command on the
	// host, and under sudo only the wrapper passes a cancellation on to the
	// command's children.
	Brief bool
	// ReadOnly marks a command that changes nothing on the host: it
	// reads files, lists packages, asks a service or an API what state it
	// is in. A dry run ([WithDryRun]) runs such commands and withholds
	// every other one, so leave it false for anything that writes, starts,
	// stops, installs, creates or deletes, even in passing (a lock file, a
	// cache, a temporary directory). Unmarked is the safe default: an
	// unmarked read only makes a dry run report a change that would not
	// happen.
	ReadOnly bool
}

// Command returns a Cmd that runs name with args.
func Command(name string, args ...string) Cmd {
	return Cmd{Args: append([]string{name}, args...)}
}

// Output is what a finished command produced.
type Output struct {
	Stdout []byte
	// Stderr holds at most the last [StderrTail] bytes of standard error.
	Stderr   []byte
	ExitCode int
}

// StderrTail is how much of a command's standard error is kept for its
// [Output] and its [CommandError].
const StderrTail = 64 << 10

// String returns standard output with surrounding white space trimmed.
func (o Output) String() string { return strings.TrimSpace(string(o.Stdout)) }

// sudoMode is how a host elevates to root.
type sudoMode int

const (
	sudoUnknown  sudoMode = iota
	sudoRoot              // the login user is root: no wrapper
	sudoNoPasswd          // sudo -n
	sudoPasswd            // sudo -S with the password on stdin
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// killAfter is how long the remote `timeout` wrapper waits after SIGTERM
// before it sends SIGKILL.
const killAfter = 5 * time.Second

// commandLine renders c as the string sent in the SSH exec request.
//
// Layout, every element quoted by shellescape (POSIX single quotes):
//
//	[sudo -n -- | sudo -S -k -p '' --] [timeout -k 5 SECS] [env K=V...] argv...
//
// The `timeout` wrapper is added when ctx has a deadline, so the
// command dies on the host even if the connection is lost, and under sudo,
// because sudo relays SIGTERM only to its direct child and `timeout` passes
// it on to the whole process group of the command. A Brief command goes
// without it: it cannot outlive a lost connection by more than moments.
func commandLine(ctx context.Context, c Cmd, mode sudoMode) (string, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return "", errors.New("remote: empty command")
	}
	for _, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("remote: argument %q contains a NUL byte, which no argv can carry", a)
		}
	}
	var words []string
	if c.Sudo {
		switch mode {
		case sudoNoPasswd:
			words = append(words, "sudo", "-n", "--")
		case sudoPasswd:
			words = append(words, "sudo", "-S", "-k", "-p", "", "--")
		}
	}
	if deadline, ok := ctx.Deadline(); (ok || len(words) > 0) && !c.Brief {
		secs := "0" // no time limit; the wrapper still forwards signals
		if ok {
			secs = strconv.FormatInt(max(int64(math.Ceil(time.Until(deadline).Seconds())), 0)+1, 10)
		}
		words = append(words, "timeout", "-k", strconv.Itoa(int(killAfter.Seconds())), secs)
	}
	if len(c.Env) > 0 {
		words = append(words, "env")
		keys := make([]string, 0, len(c.Env))
		for k := range c.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := c.Env[k]
			if !envName.MatchString(k) {
				return "", fmt.Errorf("remote: invalid environment variable name %q", k)
			}
			if strings.IndexByte(v, 0) >= 0 {
				return "", fmt.Errorf("remote: environment variable %s contains a NUL byte", k)
			}
			words = append(words, k+"="+v)
		}
	}
	words = append(words, c.Args...)
	return Quote(words...), nil
}

// Quote returns argv as one POSIX shell command line, each word in single
// quotes unless it consists only of safe characters. It is the quoting every
// command of this package goes through.
func Quote(argv ...string) string {
	return shellescape.QuoteCommand(argv)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf.Reset()
		p = p[len(p)-t.max:]
	} else if over := t.buf.Len() + len(p) - t.max; over > 0 {
		t.buf.Next(over)
	}
	t.buf.Write(p)
	return n, nil
}

func (t *tailBuffer) Bytes() []byte { return bytes.Clone(t.buf.Bytes()) }

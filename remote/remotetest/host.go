package remotetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/internal/redact"
)

// ErrUnmatched is wrapped by the error of a command that no rule of the
// [Host] answers. It means the test has not said what the host does for
// that command, never that the command failed on a host.
var ErrUnmatched = errors.New("remotetest: no rule answers the command")

// Reply is what a command answers: its output and exit status, or an
// error in place of an exit status.
type Reply struct {
	// Stdout and Stderr are the command's output.
	Stdout, Stderr string
	// Exit is the exit status, 0 to 255. A status other than 0 that the
	// command's OKExit does not list makes Run return a
	// *remote.CommandError, as [remote.SSHHost] does.
	Exit int
	// Err, when set, is returned instead of an exit status, as for a
	// command that did not finish: a context error or
	// [remote.ErrConnectionLost] (or any other error) is wrapped in a
	// *remote.CommandError with ExitCode -1 and Err set, as SSHHost wraps
	// them; remote's own error types (*remote.CommandError,
	// *remote.SudoError, *remote.DialError, *remote.AuthError,
	// *remote.HostKeyError) are returned as they are.
	Err error
}

// Op is the kind of a [Call].
type Op string

// The operations a [Host] records.
const (
	OpRun       Op = "Run"
	OpWriteFile Op = "WriteFile"
	OpReadFile  Op = "ReadFile"
)

// Call is one operation in a [Host]'s transcript.
type Call struct {
	// Op is what the step called: Run, WriteFile (also once per file of
	// WriteFiles) or ReadFile.
	Op Op
	// Args is the argv of a command, as the step built it: a secret in
	// argv (where none belongs) shows here.
	Args []string
	// Env is the command's environment (Cmd.Env), nil when none.
	Env map[string]string
	// Sudo is Cmd.Sudo for a command and FileOptions.Sudo for a file.
	Sudo bool
	// Stdin is what the command read on standard input, with the
	// command's secrets (Cmd.Secrets) replaced by [remote.Redacted].
	Stdin string
	// Exit is the exit status the command got, -1 when it got none (an
	// error reply, no rule, a command still running).
	Exit int
	// Unmatched reports a command that no rule answered.
	Unmatched bool
	// Withheld reports a command or a file write that a dry run
	// ([remote.WithDryRun]) withheld: the command was not answered by a
	// rule nor run, its standard input not read; the file was not
	// written. Err is the [*remote.WithheldError] the call returned.
	Withheld bool
	// Path and Options are the file of a WriteFile or ReadFile and the
	// options it was given.
	Path    string
	Options remote.FileOptions
	// Changed reports whether a WriteFile changed the file.
	Changed bool
	// Err is the error the call returned, nil on success.
	Err error
}

// String returns the command line of a command as [Host.Commands] shows
// it, or "WriteFile PATH" or "ReadFile PATH" (with " (sudo)") for a file.
func (c Call) String() string {
	if c.Op != OpRun {
		s := string(c.Op) + " " + c.Path
		if c.Sudo {
			s += " (sudo)"
		}
		return s
	}
	return displayLine(c.Sudo, c.Env, c.Args)
}

// Host is an in-memory [remote.Host] and [remote.FilesWriter]: it answers
// commands from rules, keeps files in memory and records a transcript.
// See the package documentation for the contract it keeps. A Host is safe
// for concurrent use.
type Host struct {
	name, addr string

	mu     sync.Mutex
	user   string
	rules  []rule
	files  map[string]*File
	calls  []*Call // pointers: a running command's exit status lands later
	closed bool
}

type rule struct {
	match Matcher
	reply func(ctx context.Context, c remote.Cmd, stdin []byte) Reply
}

var (
	_ remote.Host        = (*Host)(nil)
	_ remote.FilesWriter = (*Host)(nil)
)

// NewHost returns a host called name, reached at name:22, whose login
// user is ubuntu, without rules or files.
func NewHost(name string) *Host {
	return &Host{name: name, addr: net.JoinHostPort(name, "22"), user: "ubuntu", files: map[string]*File{}}
}

// SetUser sets the login user (ubuntu by default): the owner of the files
// written without Sudo, and whose permissions apply to them. With "root",
// every file is readable and writable. It returns h.
func (h *Host) SetUser(user string) *Host {
	if user == "" || strings.ContainsAny(user, ":/ \n") {
		panic(fmt.Sprintf("remotetest: invalid user name %q", user))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.user = user
	return h
}

// User returns the login user.
func (h *Host) User() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.user
}

// On adds a rule: the commands m matches answer r, unless a rule added
// earlier matches them first. It returns h, so rules chain.
func (h *Host) On(m Matcher, r Reply) *Host {
	return h.OnFunc(m, func(context.Context, remote.Cmd, []byte) Reply { return r })
}

// OnFunc adds a rule whose reply f computes from the command and the
// bytes it read on standard input (unscrubbed; c.Stdin has been read).
// ctx is the caller's: a reply that models a hang waits for it to end
// and returns Reply{Err: ctx.Err()}. f runs without the host's lock and
// may run concurrently with other commands when the step runs commands
// concurrently; it may use the host's other methods. It returns h.
func (h *Host) OnFunc(m Matcher, f func(ctx context.Context, c remote.Cmd, stdin []byte) Reply) *Host {
	if m == nil || f == nil {
		panic("remotetest: a rule needs a Matcher and a reply")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rules = append(h.rules, rule{m, f})
	return h
}

// Name returns the host's name.
func (h *Host) Name() string { return h.name }

// Addr returns name:22.
func (h *Host) Addr() string { return h.addr }

// Close makes every later call fail with [remote.ErrClosed], as calls
// on a closed [remote.SSHHost] do. Closing twice is harmless.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}

// envName is what remote accepts as an environment variable's name
// (remote/cmd.go).
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkCmd refuses what remote refuses before a command is sent, with
// remote's words (commandLine in remote/cmd.go).
func checkCmd(c remote.Cmd) error {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return errors.New("remote: empty command")
	}
	for _, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("remote: argument %q contains a NUL byte, which no argv can carry", a)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if !envName.MatchString(k) {
			return fmt.Errorf("remote: invalid environment variable name %q", k)
		}
		if strings.IndexByte(c.Env[k], 0) >= 0 {
			return fmt.Errorf("remote: environment variable %s contains a NUL byte", k)
		}
	}
	return nil
}

// commandLine renders a command as "[sudo] [env K=V...] argv", quoted by
// remote.Quote: the Command of the host's errors.
func commandLine(sudo bool, env map[string]string, args []string) string {
	var words []string
	if sudo {
		words = append(words, "sudo")
	}
	if len(env) > 0 {
		words = append(words, "env")
		for _, k := range slices.Sorted(maps.Keys(env)) {
			words = append(words, k+"="+env[k])
		}
	}
	return remote.Quote(append(words, args...)...)
}

// displayLine is commandLine with the text of a named script
// (`sh -c SCRIPT NAME ...`) shown as "...".
func displayLine(sudo bool, env map[string]string, args []string) string {
	if scriptName(args) != "" {
		args = slices.Clone(args)
		args[2] = "..."
	}
	return commandLine(sudo, env, args)
}

// Run answers c from the first rule that matches it. See [remote.Host]
// and the package documentation.
func (h *Host) Run(ctx context.Context, c remote.Cmd) (remote.Output, error) {
	if err := ctx.Err(); err != nil {
		return remote.Output{ExitCode: -1}, err
	}
	if remote.IsDryRun(ctx) && !c.ReadOnly {
		// As SSHHost.Run (remote/ssh.go): a dry run sends no command
		// that is not ReadOnly, before anything else is looked at, and
		// returns the WithheldError of its argv, scrubbed of its
		// secrets; its standard input is not read.
		err := remote.Withhold(ctx, &remote.WithheldError{Host: h.name, Args: slices.Clone(c.Args), Sudo: c.Sudo}, c.Secrets...)
		h.mu.Lock()
		h.record(Call{Op: OpRun, Args: slices.Clone(c.Args), Env: maps.Clone(c.Env), Sudo: c.Sudo, Exit: -1, Withheld: true, Err: err})
		h.mu.Unlock()
		return remote.Output{ExitCode: -1}, err
	}
	if err := checkCmd(c); err != nil {
		return remote.Output{}, err
	}
	var secrets []string
	for _, s := range c.Secrets {
		secrets = append(secrets, s.Reveal())
	}
	red := redact.New(secrets...)
	line := red.String(commandLine(c.Sudo, c.Env, c.Args))
	failed := func(err error) (remote.Output, error) {
		return remote.Output{ExitCode: -1}, &remote.CommandError{Host: h.name, Command: line, ExitCode: -1, Err: err}
	}
	if h.isClosed() {
		return failed(remote.ErrClosed)
	}
	var stdin []byte
	if c.Stdin != nil {
		b, err := io.ReadAll(c.Stdin)
		if err != nil {
			return failed(fmt.Errorf("reading standard input: %w", err))
		}
		stdin = b
	}

	call := &Call{Op: OpRun, Args: slices.Clone(c.Args), Env: maps.Clone(c.Env), Sudo: c.Sudo, Stdin: red.String(string(stdin)), Exit: -1}
	h.mu.Lock()
	h.calls = append(h.calls, call)
	var reply func(context.Context, remote.Cmd, []byte) Reply
	for _, r := range h.rules {
		if r.match(c) {
			reply = r.reply
			break
		}
	}
	h.mu.Unlock()

	var r Reply
	if reply != nil {
		r = reply(ctx, c, stdin)
	} else if b, ok := h.builtin(c); ok {
		r = b
	} else {
		err := fmt.Errorf("%s: command %q: %w", h.name, line, ErrUnmatched)
		h.finish(call, -1, true, err)
		return remote.Output{ExitCode: -1}, err
	}

	if r.Err != nil {
		err := r.Err
		if !isRemoteError(err) {
			err = &remote.CommandError{Host: h.name, Command: line, ExitCode: -1, Err: err}
		}
		h.finish(call, -1, false, err)
		return remote.Output{ExitCode: -1}, err
	}
	if r.Exit < 0 || r.Exit > 255 {
		err := fmt.Errorf("remotetest: %s: the reply to %q has exit status %d; a status is 0 to 255 (use Reply.Err for none)", h.name, line, r.Exit)
		h.finish(call, -1, false, err)
		return remote.Output{ExitCode: -1}, err
	}
	out := remote.Output{ExitCode: r.Exit, Stderr: []byte(tail(r.Stderr))}
	if c.Stdout != nil {
		io.WriteString(c.Stdout, r.Stdout)
	} else {
		out.Stdout = []byte(r.Stdout)
	}
	if c.Stderr != nil {
		io.WriteString(c.Stderr, r.Stderr)
	}
	var err error
	if r.Exit != 0 && !slices.Contains(c.OKExit, r.Exit) {
		err = &remote.CommandError{Host: h.name, Command: line, ExitCode: r.Exit, Stderr: red.String(string(out.Stderr))}
	}
	h.finish(call, r.Exit, false, err)
	return out, err
}

// isRemoteError reports whether err is one of remote's own error types,
// which a reply's Err stands for as it is (see [Reply]).
func isRemoteError(err error) bool {
	return errors.As(err, new(*remote.CommandError)) || errors.As(err, new(*remote.SudoError)) ||
		errors.As(err, new(*remote.DialError)) || errors.As(err, new(*remote.AuthError)) ||
		errors.As(err, new(*remote.HostKeyError))
}

// tail is the end of stderr that remote keeps ([remote.StderrTail]).
func tail(s string) string {
	if len(s) > remote.StderrTail {
		return s[len(s)-remote.StderrTail:]
	}
	return s
}

// finish records how a command ended.
func (h *Host) finish(c *Call, exit int, unmatched bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.Exit, c.Unmatched, c.Err = exit, unmatched, err
}

func (h *Host) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// record appends a finished file operation to the transcript; h.mu is
// held.
func (h *Host) record(c Call) { h.calls = append(h.calls, &c) }

// Calls returns the transcript, oldest first: every command and every
// file read and write (one per file of WriteFiles). The slices and maps
// in it are copies.
func (h *Host) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Call, len(h.calls))
	for i, c := range h.calls {
		out[i] = *c
		out[i].Args = slices.Clone(c.Args)
		out[i].Env = maps.Clone(c.Env)
	}
	return out
}

// Commands returns the command lines run so far, oldest first (not those
// a dry run withheld: see [Host.Withheld]): the argv
// quoted by [remote.Quote], after "sudo" for a command run as root and
// "env K=V..." for one with an environment, with the text of a named
// script (`sh -c SCRIPT NAME ARG...`) shown as "...":
//
//	systemctl is-active kubelet
//	sudo systemctl enable --now kubelet
//	sudo sh -c ... mgmtkit-hostname worker-1
//
// Calls has the whole argv.
func (h *Host) Commands() []string {
	var out []string
	for _, c := range h.Calls() {
		if c.Op == OpRun && !c.Withheld {
			out = append(out, c.String())
		}
	}
	return out
}

// Withheld returns what a dry run ([remote.WithDryRun]) withheld so far,
// oldest first: the command lines (as Commands shows them) that were
// neither answered nor run, and the files not written, as "WriteFile
// PATH" (see [Call.String]). A test of a plan may check it lists exactly
// the changes a real run then makes.
func (h *Host) Withheld() []string {
	var out []string
	for _, c := range h.Calls() {
		if c.Withheld {
			out = append(out, c.String())
		}
	}
	return out
}

// Unmatched returns the command lines (as Commands shows them) that no
// rule answered: a test may check it is empty at the end, which catches
// a step that swallowed the error.
func (h *Host) Unmatched() []string {
	var out []string
	for _, c := range h.Calls() {
		if c.Unmatched {
			out = append(out, c.String())
		}
	}
	return out
}

// ResetTranscript forgets the recorded calls; rules and files stay.
func (h *Host) ResetTranscript() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = nil
}

// pathError is a *fs.PathError for a file operation on h.
func (h *Host) pathError(verb, op, p string, err error) error {
	return fmt.Errorf("%s: %s %s: %w", h.name, verb, p, &fs.PathError{Op: op, Path: p, Err: err})
}

package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mgmtkit/mgmtkit/remote/internal/redact"
)

// A dry run is a context made by [WithDryRun]. Under it, hosts run only
// the commands marked [Cmd.ReadOnly] and withhold every other change:
//
//   - [SSHHost.Run] and a [GuardDryRun] host do not send a command that is
//     not ReadOnly; they return a [*WithheldError] naming it (errors.Is
//     [ErrWithheld]).
//   - [Host.WriteFile], [WriteFiles] and so [EditBlock] probe the files
//     read-only, as a real write does first, and report unchanged when
//     every file already holds its bytes with its mode and owner;
//     otherwise they return a [*WithheldError] naming the files that
//     would be written. Nothing is staged or uploaded.
//   - [RemoveFiles] looks which files exist (and which directories would
//     be left empty) and withholds their removal, or reports nothing
//     removed.
//
// What a dry run withholds is recorded in the error only: the command's
// argv (secret-free by construction, see [Cmd]; scrubbed of the host's
// passwords all the same) or the files' paths. Standard input, which
// carries secrets and file contents, is never recorded.
//
// A step that meets a WithheldError stops there, as it would at any
// error: the reads that follow a change would judge a state that the
// change did not make. Package lcm turns such a stop into the step's
// "would change" result and goes on with the hook; see lcm.Plan.

type dryRunKey struct{}

// dryRun is a dry run's shared state: how many changes it withheld.
type dryRun struct {
	withheld atomic.Int64
}

// WithDryRun returns a context under which hosts run only read-only
// commands and withhold every change (see [Cmd.ReadOnly] and
// [ErrWithheld]). A context that is a dry run's already is returned as it
// is, so that the count of [AnyWithheld] stays the hook's.
func WithDryRun(ctx context.Context) context.Context {
	if IsDryRun(ctx) {
		return ctx
	}
	return context.WithValue(ctx, dryRunKey{}, &dryRun{})
}

// IsDryRun reports whether ctx is a dry run's ([WithDryRun]).
func IsDryRun(ctx context.Context) bool { return dryRunFrom(ctx) != nil }

// AnyWithheld reports whether the dry run of ctx has withheld a change so
// far. From then on, what the hosts answer is what they were before the
// withheld change, not what a real run would find: a wait for the change
// to take effect would wait in vain, and a failure may be the change's
// absence. It is false outside a dry run.
func AnyWithheld(ctx context.Context) bool {
	d := dryRunFrom(ctx)
	return d != nil && d.withheld.Load() > 0
}

func dryRunFrom(ctx context.Context) *dryRun {
	d, _ := ctx.Value(dryRunKey{}).(*dryRun)
	return d
}

// ErrWithheld is wrapped by every error that reports a change a dry run
// did not make: a [*WithheldError].
var ErrWithheld = errors.New("withheld by a dry run")

// WithheldError reports a change that a dry run did not make: a command
// it did not run, or files it did not write or remove. errors.Is(err,
// ErrWithheld) holds for it.
type WithheldError struct {
	// Host is the name of the host the change was withheld on.
	Host string
	// Args is the command's argv when a command was withheld, nil
	// otherwise: as the command gives it, which by the contract of
	// [Cmd] holds no secret. Sudo says it would have run as root.
	Args []string
	Sudo bool
	// Write lists the files that would have been written (content, mode
	// or owner), Remove those (and the emptied directories) that would
	// have been removed.
	Write, Remove []string

	// line is the command as What shows it: quoted, a script as its
	// name and arguments, and scrubbed of the host's passwords as every
	// error of this package is.
	line string
}

// What says what was withheld, for a plan's result: `run "argv..."`
// (a `sh -c SCRIPT NAME ARGS...` as `run script "NAME ARGS..."`), "write
// PATH, PATH" or "remove PATH".
func (e *WithheldError) What() string {
	var parts []string
	if len(e.Args) > 0 {
		line := e.line
		if line == "" {
			line = commandShown(e.Args, nil)
		}
		if e.Sudo {
			line = "sudo " + line
		}
		what := "run "
		if isScript(e.Args) {
			what = "run script "
		}
		parts = append(parts, what+strconv.Quote(shorten(line, 200)))
	}
	if len(e.Write) > 0 {
		parts = append(parts, "write "+strings.Join(e.Write, ", "))
	}
	if len(e.Remove) > 0 {
		parts = append(parts, "remove "+strings.Join(e.Remove, ", "))
	}
	return strings.Join(parts, "; ")
}

// Error returns "HOST: dry run: would WHAT".
func (e *WithheldError) Error() string {
	return fmt.Sprintf("%s: dry run: would %s", e.Host, e.What())
}

// Is reports whether target is [ErrWithheld].
func (e *WithheldError) Is(target error) bool { return target == ErrWithheld }

// withhold counts e in ctx's dry run and returns it.
func withhold(ctx context.Context, e *WithheldError) error {
	if d := dryRunFrom(ctx); d != nil {
		d.withheld.Add(1)
	}
	return e
}

// Withhold is for a [Host] of one's own that honours a dry run itself,
// as [SSHHost] does, rather than through [GuardDryRun] (package
// remote/remotetest's Host does): it counts e as a change the dry run of
// ctx withheld, so that [AnyWithheld] reports it from then on, and
// returns e, the error the host returns for the change. When e names a
// command (Args), secrets are scrubbed from the command as
// [WithheldError.What] shows it: pass the command's [Cmd.Secrets] and the
// host's own passwords, as SSHHost scrubs both. Outside a dry run it
// counts nothing.
func Withhold(ctx context.Context, e *WithheldError, secrets ...Secret) error {
	if len(e.Args) > 0 {
		vals := make([]string, len(secrets))
		for i, s := range secrets {
			vals[i] = s.Reveal()
		}
		e.line = commandShown(e.Args, redact.New(vals...).String)
	}
	return withhold(ctx, e)
}

// withheldCmd is the WithheldError of c on host, shown scrubbed by
// scrub (nil: as it is).
func withheldCmd(host string, c Cmd, scrub func(string) string) *WithheldError {
	return &WithheldError{Host: host, Args: append([]string(nil), c.Args...), Sudo: c.Sudo, line: commandShown(c.Args, scrub)}
}

// isScript reports whether args is `sh -c SCRIPT NAME ...` (or bash's).
func isScript(args []string) bool {
	return len(args) >= 4 && (args[0] == "sh" || args[0] == "bash") && args[1] == "-c"
}

// commandShown is args quoted as a plan shows them: a script by its name
// and arguments, not its text; scrubbed by scrub unless it is nil.
func commandShown(args []string, scrub func(string) string) string {
	if isScript(args) {
		args = args[3:]
	}
	line := Quote(args...)
	if scrub != nil {
		line = scrub(line)
	}
	return line
}

// GuardDryRun returns h made safe for a dry run: under a [WithDryRun]
// context it withholds every command not marked [Cmd.ReadOnly] and every
// write that would change a file, as [SSHHost] does itself; outside a dry
// run it is h. Wrap the hosts a caller supplies (a test double, a host of
// one's own) before a dry run; an *SSHHost, or a host already guarded,
// is returned as it is.
//
// A guarded host judges a write by reading the file ([Host.ReadFile])
// and, when its bytes are the same and the write sets a mode, owner or
// group, by `stat -L -c '%a %U %G'` (read-only); a file it cannot judge
// is reported as one that would be written.
func GuardDryRun(h Host) Host {
	switch h.(type) {
	case *SSHHost, *guarded:
		return h
	}
	return &guarded{Host: h}
}

// guarded is a Host that honours a dry run.
type guarded struct {
	Host
}

// Run runs c, or withholds it in a dry run unless it is ReadOnly.
func (g *guarded) Run(ctx context.Context, c Cmd) (Output, error) {
	if IsDryRun(ctx) && !c.ReadOnly {
		return Output{ExitCode: -1}, Withhold(ctx, &WithheldError{Host: g.Name(), Args: slices.Clone(c.Args), Sudo: c.Sudo}, c.Secrets...)
	}
	return g.Host.Run(ctx, c)
}

// WriteFile writes, or in a dry run judges the file and withholds a write
// that would change it.
func (g *guarded) WriteFile(ctx context.Context, path string, content io.Reader, opts FileOptions) (bool, error) {
	if !IsDryRun(ctx) {
		return g.Host.WriteFile(ctx, path, content, opts)
	}
	same, err := g.holds(ctx, path, content, opts)
	if err != nil {
		return false, err
	}
	if same {
		return false, nil
	}
	return false, withhold(ctx, &WithheldError{Host: g.Name(), Write: []string{path}})
}

// WriteFiles writes files one by one, or in a dry run withholds the
// writes of those that would change.
func (g *guarded) WriteFiles(ctx context.Context, files []FileWrite) ([]bool, error) {
	changed := make([]bool, len(files))
	if !IsDryRun(ctx) {
		return WriteFiles(ctx, g.Host, files)
	}
	var write []string
	for _, f := range files {
		same, err := g.holds(ctx, f.Path, bytes.NewReader(f.Content), f.Options)
		if err != nil {
			return changed, err
		}
		if !same {
			write = append(write, f.Path)
		}
	}
	if len(write) > 0 {
		return changed, withhold(ctx, &WithheldError{Host: g.Name(), Write: write})
	}
	return changed, nil
}

// holds reports whether the file at path holds content with the mode,
// owner and group opts sets; false when that cannot be told.
func (g *guarded) holds(ctx context.Context, path string, content io.Reader, opts FileOptions) (bool, error) {
	if err := CheckPath(path); err != nil {
		return false, err
	}
	cur, err := g.Host.ReadFile(ctx, path, opts)
	if err != nil {
		// Missing, or unreadable: a write would (try to) make it.
		return false, nil
	}
	want := sha256.New()
	if _, err := io.Copy(want, content); err != nil {
		return false, fmt.Errorf("%s: reading the content for %s: %w", g.Name(), path, err)
	}
	got := sha256.Sum256(cur)
	if !bytes.Equal(want.Sum(nil), got[:]) {
		return false, nil
	}
	if opts.Mode == 0 && opts.Owner == "" && opts.Group == "" {
		return true, nil
	}
	out, err := g.Host.Run(ctx, Cmd{Args: []string{"stat", "-L", "-c", "%a %U %G", "--", path}, Sudo: opts.Sudo, ReadOnly: true, Idempotent: true, Brief: true})
	if err != nil {
		return false, nil
	}
	f := strings.Fields(out.String())
	if len(f) != 3 {
		return false, nil
	}
	mode, err := strconv.ParseUint(f[0], 8, 32)
	if err != nil {
		return false, nil
	}
	return (opts.Mode == 0 || fs.FileMode(mode) == opts.Mode.Perm()) &&
		(opts.Owner == "" || opts.Owner == f[1]) && (opts.Group == "" || opts.Group == f[2]), nil
}

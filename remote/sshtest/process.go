package sshtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"
)

// Program is a fake executable. It runs in-process with the argv, standard
// streams, environment, working directory and identity of a [Process], and
// returns its exit status, as a main function would.
//
// A Program must honour ctx: it is cancelled when the SSH client sends a
// signal, closes the session or drops the connection, when the server
// closes, or when a `timeout` wrapper expires. A program that blocks should
// return 143 (SIGTERM) when ctx ends. A read from Stdin blocked at that
// moment fails, as read(2) does when a signal kills the process, and any
// non-zero status a program returns after ctx ended is recorded and passed
// on as 143.
type Program func(ctx context.Context, p *Process) int

// Process is one invocation of a [Program].
type Process struct {
	// Args is the argv; Args[0] is the name the program was invoked by.
	Args []string
	// Env holds the exported environment as KEY=value strings.
	Env []string
	// Dir is the working directory.
	Dir string
	// Stdin is standard input. A fake that reads only part of it leaves
	// the rest to the programs after it, as sudo -S does.
	Stdin io.Reader
	// Stdout is standard output.
	Stdout io.Writer
	// Stderr is standard error.
	Stderr io.Writer
	// User is the name of the identity the program runs as (root under sudo).
	User string
	// FS is the host's filesystem as seen by this process: permission
	// checks for its identity and relative names resolved against Dir.
	FS *UserFS
	// Host is the fake host the program runs on.
	Host *Server

	ctx context.Context // the program's, once it runs
}

// Getenv returns the value of an environment variable, or "".
func (p *Process) Getenv(key string) string {
	v, _ := lookupEnv(p.Env, key)
	return v
}

// Name returns the program's base name, for messages ("cat: x: ...").
func (p *Process) Name() string { return path.Base(p.Args[0]) }

// Errorf prints "name: message" to standard error, as coreutils do, and
// returns 1 so a program can write `return p.Errorf(...)`. Once the
// program's context is cancelled (it is being killed, and a read from
// standard input fails for that reason) Errorf prints nothing, as a killed
// process reports nothing; the program's exit status is then 143.
func (p *Process) Errorf(format string, args ...any) int {
	if p.ctx == nil || p.ctx.Err() == nil {
		fmt.Fprintf(p.Stderr, "%s: %s\n", p.Name(), fmt.Sprintf(format, args...))
	}
	return 1
}

// Fail prints "name: message" to standard error, as Errorf does, and
// returns code.
func (p *Process) Fail(code int, format string, args ...any) int {
	p.Errorf(format, args...)
	return code
}

// Exec runs another program (found on PATH like execvp) as a child of p with
// the same identity, streams, directory and environment, and returns its
// exit status. The call is recorded in the transcript. When the program
// cannot be started, Exec prints "NAME: ARG0: reason" to standard error, as
// execvp-based tools such as xargs do, and returns 127 (not found) or 126
// (not executable).
func (p *Process) Exec(ctx context.Context, args ...string) int {
	child := *p
	child.Args = args
	return p.Host.start(ctx, &child, func(e *execError) int {
		fmt.Fprintf(p.Stderr, "%s: %s: %s\n", p.Name(), e.name, e.execvpText())
		return e.code
	})
}

// As returns a copy of p that runs as the named user (looked up in
// /etc/passwd), with that user's credentials and supplementary groups and
// p's umask. Directory, streams and environment are unchanged: a fake that
// switches users, as sudo does, sets the environment itself.
func (p *Process) As(user string) (*Process, error) {
	uid, gid, ok := p.Host.fs.LookupUser(user)
	if !ok {
		return nil, fmt.Errorf("unknown user %s", user)
	}
	child := *p
	child.User = user
	child.FS = p.Host.fs.As(Cred{UID: uid, GID: gid, Groups: p.Host.fs.SupplementaryGroups(user)}, p.Dir).WithUmask(p.FS.Umask())
	return &child, nil
}

// ErrMessage renders a filesystem error the way coreutils print it, without
// the operation and path: "No such file or directory", "Permission
// denied", ...; "" for a nil error.
func ErrMessage(err error) string {
	if err == nil {
		return ""
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		err = errno
	}
	msg := err.Error()
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

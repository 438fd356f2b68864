package sshtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// Program is a fake executable. It runs in-process with the argv, standard
// streams, environment, working directory and identity of a [Process], and
// returns its exit status, as a main function would.
//
// A Program must honour ctx: it is cancelled when the SSH client sends a
// signal, closes the session or drops the connection, or when a `timeout`
// wrapper expires. A program that blocks should return 143 (SIGTERM) when ctx
// ends.
type Program func(ctx context.Context, p *Process) int

// Process is one invocation of a [Program].
type Process struct {
	// Args is the argv; Args[0] is the name the program was invoked by.
	Args []string
	// Env holds the exported environment as KEY=value strings.
	Env []string
	// Dir is the working directory.
	Dir string
	// Stdin, Stdout and Stderr are the standard streams.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// User is the name of the identity the program runs as (root under sudo).
	User string
	// FS is the host's filesystem as seen by this process: permission
	// checks for its identity and relative names resolved against Dir.
	FS *UserFS
	// Host is the fake host the program runs on.
	Host *Server
}

// Getenv returns the value of an environment variable, or "".
func (p *Process) Getenv(key string) string {
	for i := len(p.Env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(p.Env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Name returns the program's base name, for messages ("cat: x: ...").
func (p *Process) Name() string { return path.Base(p.Args[0]) }

// Errorf prints "name: message" to standard error, as coreutils do, and
// returns 1 so a program can write `return p.Errorf(...)`.
func (p *Process) Errorf(format string, args ...any) int {
	fmt.Fprintf(p.Stderr, "%s: %s\n", p.Name(), fmt.Sprintf(format, args...))
	return 1
}

// Fail prints "name: message" to standard error and returns code.
func (p *Process) Fail(code int, format string, args ...any) int {
	p.Errorf(format, args...)
	return code
}

// Exec runs another program (found on PATH like execvp) as a child of p with
// the same identity, streams and environment, and returns its exit status.
// sudo, env, timeout and the shells use it.
func (p *Process) Exec(ctx context.Context, args ...string) int {
	child := *p
	child.Args = args
	return p.Host.exec(ctx, &child)
}

// As returns a copy of p that runs as the named user (looked up in
// /etc/passwd) with its home directory's environment, as sudo does.
func (p *Process) As(user string) (*Process, error) {
	uid, gid, ok := p.Host.fs.LookupUser(user)
	if !ok {
		return nil, fmt.Errorf("unknown user %s", user)
	}
	child := *p
	child.User = user
	child.FS = p.Host.fs.As(Cred{UID: uid, GID: gid, Groups: p.Host.fs.SupplementaryGroups(user)}, p.Dir)
	return &child, nil
}

// ErrMessage renders a filesystem error the way coreutils print it:
// "No such file or directory", "Permission denied", ...
func ErrMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	msg := err.Error()
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

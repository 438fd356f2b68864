package sshtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// fakeMagic starts the content of the file [Server.Handle] creates for a
// fake program, followed by the path the program is registered at and a
// newline. It looks like an ELF header, so that a shell refuses to run the
// file as a script, and it names the program, so that a copy of the file
// (cp /usr/bin/true /tmp/t) still runs it, as a copied binary would.
const fakeMagic = "\x7fELF\x02\x01\x01\x00sshtest fake program "

// errCommandNotFound and errBinary are the reasons, besides an errno, for
// which a command cannot be started.
var (
	errCommandNotFound = errors.New("command not found")
	errBinary          = errors.New("cannot execute binary file: Exec format error")
)

// badInterpreter is the error for a script whose #! interpreter cannot be
// run.
type badInterpreter struct {
	interp string
	err    error
}

func (b *badInterpreter) Error() string {
	return b.interp + ": bad interpreter: " + errText(b.err)
}

// execError says why argv[0] cannot be run.
type execError struct {
	name string // the command as written, or the file found on PATH
	err  error  // errCommandNotFound, errBinary, *badInterpreter or a syscall.Errno
	code int    // the shell's exit status: 127 not found, 126 found but not runnable
}

// shellText words the failure as bash does after its "bash: line N: "
// prefix: "foo: command not found", "./x: Permission denied".
func (e *execError) shellText() string { return e.name + ": " + errText(e.err) }

// execvpText words the reason as a program that calls execvp does:
// a failed PATH search is "No such file or directory".
func (e *execError) execvpText() string {
	if e.err == errCommandNotFound {
		return ErrMessage(syscall.ENOENT)
	}
	return errText(e.err)
}

// errText renders an errno as coreutils do, any other error as is.
func errText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return ErrMessage(errno)
	}
	return err.Error()
}

// errnoOf returns the errno inside err, EIO when there is none.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EIO
}

// start runs p.Args[0] as execvp does: a name with a slash is a file, any
// other name is searched on PATH; a registered fake runs in-process, a
// script runs under its #! interpreter (or bash without one). start records
// the call in the transcript and applies injected faults. When the command
// cannot be started, report prints why and returns the exit status.
func (s *Server) start(ctx context.Context, p *Process, report func(*execError) int) (code int) {
	if len(p.Args) == 0 {
		return 0
	}
	idx := s.recordCall(p)
	defer func() { s.finishCall(idx, code) }()

	if code, ok := s.faults.programFault(ctx, p); ok {
		return code
	}
	prog, args, e := s.resolve(p)
	if e != nil {
		return report(e)
	}
	child := *p
	child.Args = args
	child.ctx = ctx
	defer interruptReads(ctx, p.Stdin)()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(p.Stderr, "sshtest: fake program %s panicked: %v\n", args[0], r)
			code = 70
		}
	}()
	code = prog(ctx, &child)
	if code != 0 && ctx.Err() != nil {
		code = 143 // it failed because it was killed, as by SIGTERM
	}
	return code
}

// interruptReads makes a read from stdin (a pipe) fail once ctx ends, as a
// signal interrupts read(2), so that a fake blocked reading its input ends
// when its command is cancelled (a client's signal, a `timeout`). The
// returned function undoes it for the programs that read stdin next.
func interruptReads(ctx context.Context, stdin io.Reader) func() {
	f, ok := stdin.(*os.File)
	if !ok {
		return func() {}
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		f.SetReadDeadline(time.Unix(1, 0))
	})
	return func() {
		if !stop() {
			<-fired
			f.SetReadDeadline(time.Time{})
		}
	}
}

// resolve finds the program that runs for p.Args and the argv it gets
// (which differs from p.Args for a script: the interpreter comes first).
func (s *Server) resolve(p *Process) (Program, []string, *execError) {
	args := p.Args
	for depth := 0; ; depth++ {
		file, argPath, e := s.lookPath(p, args[0])
		if e != nil {
			return nil, nil, e
		}
		if prog := s.program(file); prog != nil {
			return prog, args, nil
		}
		// A file with no registered program: look at its content as
		// the kernel does.
		head := s.fileHead(file)
		switch {
		case strings.HasPrefix(head, fakeMagic):
			target, _, _ := strings.Cut(head[len(fakeMagic):], "\n")
			if prog := s.program(target); prog != nil {
				return prog, args, nil
			}
			return nil, nil, &execError{name: argPath, err: errBinary, code: 126}
		case strings.HasPrefix(head, "#!"):
			interp, arg := parseShebang(head)
			if depth >= 4 || interp == "" {
				return nil, nil, &execError{name: argPath, err: &badInterpreter{interp, syscall.ELOOP}, code: 126}
			}
			next := []string{interp}
			if arg != "" {
				next = append(next, arg)
			}
			next = append(append(next, argPath), args[1:]...)
			child := *p
			child.Args = next
			if _, _, ie := s.lookPath(&child, interp); ie != nil {
				return nil, nil, &execError{name: argPath, err: &badInterpreter{interp, ie.err}, code: 126}
			}
			args = next
		case bytes.IndexByte([]byte(head), 0) >= 0:
			return nil, nil, &execError{name: argPath, err: errBinary, code: 126}
		default:
			// bash runs a text file without #! as a bash script.
			return shellProgram, append([]string{"bash", argPath}, args[1:]...), nil
		}
	}
}

// fileHead returns the first line (at most 256 bytes) of a file, read as
// the kernel reads an executable: whatever the caller's permissions.
func (s *Server) fileHead(file string) string {
	f, err := s.fs.As(Root, "/").OpenFile(file, syscall.O_RDONLY, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	head := string(buf[:n])
	if i := strings.IndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	}
	return head
}

// parseShebang splits a "#!" line into the interpreter and its optional
// single argument, as Linux does.
func parseShebang(line string) (interp, arg string) {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "#!"), "\n")
	line = strings.Trim(line, " \t")
	interp, arg, _ = strings.Cut(line, " ")
	if i := strings.IndexByte(interp, '\t'); i >= 0 {
		interp, arg = interp[:i], interp[i+1:]+" "+arg
	}
	return interp, strings.Trim(arg, " \t")
}

// program returns the fake registered for an absolute path, directly or
// through symbolic links (/bin/cat is /usr/bin/cat on a merged-/usr host).
func (s *Server) program(file string) Program {
	root := s.fs.As(Root, "/")
	real, err := root.Realpath(file)
	if err != nil {
		real = file
	}
	s.mu.Lock()
	if p := s.programs[file]; p != nil {
		s.mu.Unlock()
		return p
	}
	if p := s.programs[real]; p != nil {
		s.mu.Unlock()
		return p
	}
	keys := make([]string, 0, len(s.programs))
	for k := range s.programs {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		// A program registered under a path through a link (/bin/foo).
		if c, err := root.canonical(k, false); err == nil && c == real {
			s.mu.Lock()
			p := s.programs[k]
			s.mu.Unlock()
			return p
		}
	}
	return nil
}

// lookPath resolves a command name to an absolute file and to the path
// execve is given (as written, or as built from a PATH element).
func (s *Server) lookPath(p *Process, name string) (file, argPath string, e *execError) {
	if name == "" {
		return "", "", &execError{name: name, err: errCommandNotFound, code: 127}
	}
	if strings.Contains(name, "/") {
		file := p.FS.Abs(name)
		if e := checkExecutable(p.FS, name, file); e != nil {
			return "", "", e
		}
		return file, name, nil
	}
	pathEnv, ok := lookupEnv(p.Env, "PATH")
	if !ok {
		pathEnv = defaultPath
	}
	found, denied := findOnPath(p.FS, pathEnv, name)
	switch {
	case found != "":
		return p.FS.Abs(found), found, nil
	case denied != "":
		return "", "", &execError{name: denied, err: syscall.EACCES, code: 126}
	}
	return "", "", &execError{name: name, err: errCommandNotFound, code: 127}
}

// checkExecutable checks that file is a regular file the view may execute.
func checkExecutable(u *UserFS, name, file string) *execError {
	fi, err := u.Stat(file)
	switch {
	case err != nil:
		errno := errnoOf(err)
		code := 126
		if errno == syscall.ENOENT {
			code = 127
		}
		return &execError{name: name, err: errno, code: code}
	case fi.IsDir():
		return &execError{name: name, err: syscall.EISDIR, code: 126}
	case !fi.Mode().IsRegular() || u.Access(file, accessExec) != nil:
		return &execError{name: name, err: syscall.EACCES, code: 126}
	}
	return nil
}

// findOnPath searches the colon-separated directory list pathEnv for an
// executable regular file called name, as execvp does (an empty element is
// the working directory). found is the path as built from the element
// ("/usr/bin/cat"); denied is the first regular file found that the view
// may not execute, which bash reports as "Permission denied".
func findOnPath(u *UserFS, pathEnv, name string) (found, denied string) {
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		cand := path.Join(dir, name)
		if !strings.Contains(cand, "/") {
			cand = "./" + cand
		}
		fi, err := u.Stat(cand)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if u.Access(cand, accessExec) != nil {
			if denied == "" {
				denied = cand
			}
			continue
		}
		return cand, denied
	}
	return "", denied
}

// lookupEnv finds a variable in a KEY=value list (the last one wins).
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func (s *Server) recordCall(p *Process) *Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Call{User: p.User, Args: slices.Clone(p.Args), Exit: -1}
	s.calls = append(s.calls, c)
	return c
}

func (s *Server) finishCall(c *Call, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Exit = code
}

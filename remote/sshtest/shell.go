package sshtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// defaultPath is the PATH of a login session and of sudo's secure_path.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// shell is one run of the interpreter: a `bash -c`, a script, or the
// command of an SSH exec request.
type shell struct {
	s    *Server
	p    *Process
	name string // $0 and the prefix of error messages ("bash")

	oneLine    bool             // the script is a single line
	redirLines map[string][]int // lines of file redirections, by literal target ("" for all)

	mu    sync.Mutex
	umask fs.FileMode // set by the umask builtin
}

// runShell interprets script as `bash -c script name params...` would, with
// the process's identity, streams, environment, directory and umask. Every
// file the script touches is in the host's [FS]; every program it runs is a
// fake. options are bash's command-line options ("-e", "-o", "pipefail").
func (s *Server) runShell(ctx context.Context, p *Process, script, name string, params, options []string) int {
	parsed := parsedScripts.get(script, name)
	file, err := parsed.file, parsed.err
	if err != nil {
		// bash: "bash: line 1: syntax error ..."; the text after it is
		// the parser's.
		var pe syntax.ParseError
		var le syntax.LangError
		switch {
		case errors.As(err, &pe):
			fmt.Fprintf(p.Stderr, "%s: line %d: syntax error: %s\n", name, pe.Pos.Line(), pe.Text)
		case errors.As(err, &le):
			fmt.Fprintf(p.Stderr, "%s: line %d: %s is not supported by sshtest's shell\n", name, le.Pos.Line(), le.Feature)
		default:
			fmt.Fprintf(p.Stderr, "%s: %v\n", name, err)
		}
		return 2
	}
	sh := &shell{
		s: s, p: p, name: name,
		oneLine:    !strings.Contains(strings.TrimRight(script, "\n"), "\n"),
		redirLines: parsed.redirLines,
		umask:      p.FS.Umask(),
	}

	// The interpreter wants an *os.File as standard input (it shares it
	// with the programs it runs); give it a pipe we close afterwards,
	// rather than one it would leave open. Closing it when the command is
	// cancelled also ends every fake blocked reading it, as a signal ends
	// a process blocked in read(2).
	stdin := p.Stdin
	if _, ok := stdin.(*os.File); !ok && stdin != nil {
		pr, pw, err := os.Pipe()
		if err != nil {
			fmt.Fprintf(p.Stderr, "%s: %v\n", name, err)
			return 2
		}
		go func() {
			copyPooled(pw, p.Stdin)
			pw.Close()
		}()
		stop := context.AfterFunc(ctx, func() { pr.Close() })
		defer func() {
			if stop() {
				pr.Close()
			}
		}()
		stdin = pr
	}

	runner, err := interp.New(
		interp.StdIO(stdin, p.Stdout, p.Stderr),
		interp.Env(shellEnviron(p)),
		func(r *interp.Runner) error { r.Dir = p.Dir; return nil }, // interp.Dir would stat the real disk
		interp.Params(options...),
		interp.Params(append([]string{"--"}, params...)...),
		interp.CallHandler(sh.call),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return sh.exec }),
		interp.OpenHandler(sh.open),
		interp.StatHandler(func(ctx context.Context, name string, follow bool) (fs.FileInfo, error) {
			u := sh.view(interp.HandlerCtx(ctx).Dir)
			if follow {
				return u.Stat(name)
			}
			return u.Lstat(name)
		}),
		interp.ReadDirHandler2(func(ctx context.Context, name string) ([]fs.DirEntry, error) {
			return sh.view(interp.HandlerCtx(ctx).Dir).ReadDir(name)
		}),
		interp.AccessHandler(func(ctx context.Context, name string, mode interp.AccessMode) error {
			return sh.view(interp.HandlerCtx(ctx).Dir).Access(name, int(mode))
		}),
	)
	if err != nil {
		fmt.Fprintf(p.Stderr, "%s: %v\n", name, err)
		return 2
	}
	err = runner.Run(ctx, file)
	var status interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case ctx.Err() != nil:
		return 143
	default:
		fmt.Fprintf(p.Stderr, "%s: %v\n", name, err)
		return 1
	}
}

// shellEnviron is the environment a shell starts with: p's, plus the
// read-only, unexported UID, EUID and GID of p's identity (the interpreter
// would take the test process's).
func shellEnviron(p *Process) expand.Environ {
	cred := p.FS.Cred()
	ids := map[string]int{"UID": cred.UID, "EUID": cred.UID, "GID": cred.GID}
	vars := map[string]expand.Variable{}
	for name, id := range ids {
		vars[name] = expand.Variable{Set: true, Kind: expand.String, ReadOnly: true, Str: strconv.Itoa(id)}
	}
	return withVars{expand.ListEnviron(p.Env...), vars}
}

// withVars adds variables to an environment.
type withVars struct {
	base expand.Environ
	vars map[string]expand.Variable
}

func (e withVars) Get(name string) expand.Variable {
	if v, ok := e.vars[name]; ok {
		return v
	}
	return e.base.Get(name)
}

func (e withVars) Each(f func(name string, vr expand.Variable) bool) {
	stopped := false
	e.base.Each(func(name string, vr expand.Variable) bool {
		if _, shadowed := e.vars[name]; shadowed {
			return true
		}
		if !f(name, vr) {
			stopped = true
			return false
		}
		return true
	})
	if stopped {
		return
	}
	for name, v := range e.vars {
		if !f(name, v) {
			return
		}
	}
}

// view is the filesystem as the shell's programs see it from dir.
func (sh *shell) view(dir string) *UserFS {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.s.fs.As(sh.p.FS.Cred(), dir).WithUmask(sh.umask)
}

// prefix is what bash prints before an error message: "bash: line 3: ",
// or "bash: " when the line is not known (0).
func (sh *shell) prefix(line int) string {
	if line > 0 {
		return fmt.Sprintf("%s: line %d: ", sh.name, line)
	}
	return sh.name + ": "
}

func posLine(pos syntax.Pos) int {
	if pos.IsValid() {
		return int(pos.Line())
	}
	return 0
}

// exec runs a simple command that is neither a function nor a builtin.
func (sh *shell) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	var code int
	if name, ok := strings.CutPrefix(args[0], builtinPrefix); ok {
		code = sh.builtin(hc, name, args[1:])
	} else {
		child := *sh.p
		child.Args, child.Dir = args, hc.Dir
		child.Stdin, child.Stdout, child.Stderr = hc.Stdin, hc.Stdout, hc.Stderr
		if hc.Stdin == nil {
			child.Stdin = strings.NewReader("") // after <&-
		}
		child.Env = environ(hc.Env)
		child.FS = sh.view(hc.Dir)
		code = sh.s.start(ctx, &child, func(e *execError) int {
			fmt.Fprintf(hc.Stderr, "%s%s\n", sh.prefix(posLine(hc.Pos)), e.shellText())
			return e.code
		})
	}
	if code != 0 {
		return interp.ExitStatus(uint8(code))
	}
	return nil
}

// open serves the shell's redirections from the host's filesystem.
// /dev/stdin, /dev/stdout and /dev/stderr are the shell's own streams.
func (sh *shell) open(ctx context.Context, name string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	switch name {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return stdStream{r: hc.Stdin}, nil
	case "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return stdStream{w: hc.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2":
		return stdStream{w: hc.Stderr}, nil
	}
	f, err := sh.view(hc.Dir).OpenFile(name, flag, perm)
	if err != nil {
		// The interpreter prints an *os.PathError as is: make it read
		// as bash's "bash: line 1: /etc/x: Permission denied".
		op := strings.TrimSuffix(sh.prefix(sh.redirectLine(name)), " ")
		return nil, &os.PathError{Op: op, Path: name, Err: shellErrno{errnoOf(err)}}
	}
	return f, nil
}

// shellErrno is an errno worded as bash words it ("Permission denied").
type shellErrno struct{ syscall.Errno }

func (e shellErrno) Error() string { return ErrMessage(e.Errno) }
func (e shellErrno) Unwrap() error { return e.Errno }

// stdStream is a standard stream opened by name (/dev/stdout).
type stdStream struct {
	r io.Reader
	w io.Writer
}

func (s stdStream) Read(p []byte) (int, error) {
	if s.r == nil {
		return 0, syscall.EBADF
	}
	return s.r.Read(p)
}

func (s stdStream) Write(p []byte) (int, error) {
	if s.w == nil {
		return 0, syscall.EBADF
	}
	return s.w.Write(p)
}

func (stdStream) Close() error { return nil }

// redirectLines indexes the file redirections of a script by line, so that
// an error opening a file can name the line as bash does. The interpreter
// does not say which redirection it is opening, so the line is known when
// the script has one line, when only one line redirects to that literal
// name, or when all redirections are on one line.
func redirectLines(file *syntax.File) map[string][]int {
	lines := map[string][]int{}
	syntax.Walk(file, func(n syntax.Node) bool {
		rd, ok := n.(*syntax.Redirect)
		if !ok || rd.Word == nil {
			return true
		}
		switch rd.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut:
			line := int(rd.Pos().Line())
			if lit, ok := wordLiteral(rd.Word); ok && !slices.Contains(lines[lit], line) {
				lines[lit] = append(lines[lit], line)
			}
			if !slices.Contains(lines[""], line) {
				lines[""] = append(lines[""], line)
			}
		}
		return true
	})
	return lines
}

// wordLiteral returns the value of a word made only of literal text and
// quotes without expansions.
func wordLiteral(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch part := part.(type) {
		case *syntax.Lit:
			b.WriteString(part.Value)
		case *syntax.SglQuoted:
			if part.Dollar {
				return "", false
			}
			b.WriteString(part.Value)
		case *syntax.DblQuoted:
			for _, q := range part.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func (sh *shell) redirectLine(name string) int {
	switch {
	case sh.oneLine:
		return 1
	case len(sh.redirLines[name]) == 1:
		return sh.redirLines[name][0]
	case len(sh.redirLines[""]) == 1:
		return sh.redirLines[""][0]
	}
	return 0
}

// environ lists the exported variables, sorted by name. The interpreter's
// environment yields outer scopes first: a later entry for a name replaces
// (or, unset, removes) an earlier one. PWD and OLDPWD are exported, as bash
// does (the interpreter sets them unexported).
func environ(env expand.Environ) []string {
	vars := map[string]string{}
	for name, v := range env.Each {
		exported := v.Exported || name == "PWD" || name == "OLDPWD"
		if exported && v.IsSet() && v.Kind == expand.String {
			vars[name] = v.String()
		} else {
			delete(vars, name)
		}
	}
	out := make([]string, 0, len(vars))
	for name, v := range vars {
		out = append(out, name+"="+v)
	}
	slices.Sort(out)
	return out
}

// parseScript parses bash source, keeping every byte of it.
//
// The mvdan.cc/sh parser deviates from bash in two ways that matter to a
// transport that must deliver argv byte for byte: it turns CR LF into LF, even
// inside quotes, and it rejects invalid UTF-8, which bash passes through. So
// before parsing, each CR that precedes an LF and each byte that is not valid
// UTF-8 is replaced by a placeholder (a private-use rune that does not occur
// in the script, followed by the byte in hex), and after parsing every
// literal gets its original bytes back. To the parser a placeholder is an
// ordinary word character, which is how bash treats a CR.
func parseScript(src, name string) (*syntax.File, error) {
	marker := pickMarker(src)
	escaped, changed := escapeBytes(src, marker)
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(escaped), name)
	if err != nil || !changed {
		return file, err
	}
	restore := func(s string) string {
		if !strings.ContainsRune(s, marker) {
			return s
		}
		var b strings.Builder
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == marker && i+size+2 <= len(s) {
				var v byte
				fmt.Sscanf(s[i+size:i+size+2], "%02x", &v)
				b.WriteByte(v)
				i += size + 2
				continue
			}
			b.WriteString(s[i : i+size])
			i += size
		}
		return b.String()
	}
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Lit:
			n.Value = restore(n.Value)
		case *syntax.SglQuoted:
			n.Value = restore(n.Value)
		}
		return true
	})
	return file, nil
}

func pickMarker(src string) rune {
	for r := rune(0x10FFFD); ; r-- {
		if !strings.ContainsRune(src, r) {
			return r
		}
	}
}

func escapeBytes(src string, marker rune) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == '\r' && i+1 < len(src) && src[i+1] == '\n',
			r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "%c%02x", marker, src[i])
			changed = true
		default:
			b.WriteString(src[i : i+size])
		}
		i += size
	}
	return b.String(), changed
}

// shellProgram is the fake bash and sh: `-c script [name [args...]]`, a
// script file with arguments, or a script on standard input (also with
// -s, whose operands are then the positional parameters); options -e, -u,
// -x, -f, -a, -o NAME (and their + forms) before them. -l, --login,
// --norc and --noprofile are accepted and ignored: there are no profiles.
func shellProgram(ctx context.Context, p *Process) int {
	args := p.Args[1:]
	var options []string
	command, stdin := false, false
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			goto done
		case a == "-o" || a == "+o":
			if len(args) == 0 {
				return p.Fail(2, "%s: option requires an argument", a)
			}
			options = append(options, a, args[0])
			args = args[1:]
		case a == "-l", a == "--login", a == "--norc", a == "--noprofile":
		case strings.HasPrefix(a, "--"):
			return p.Fail(2, "%s: invalid option (not modelled by sshtest)", a)
		default:
			for _, c := range a[1:] {
				switch c {
				case 'c':
					command = true
				case 's':
					stdin = true
				case 'e', 'u', 'x', 'f', 'a', 'n':
					options = append(options, string(a[0])+string(c))
				case 'o': // -euo pipefail
					if len(args) == 0 {
						return p.Fail(2, "%co: option requires an argument", a[0])
					}
					options = append(options, string(a[0])+"o", args[0])
					args = args[1:]
				default:
					return p.Fail(2, "-%c: invalid option (not modelled by sshtest)", c)
				}
			}
		}
	}
done:
	var script, name string
	switch {
	case command:
		if len(args) == 0 {
			return p.Fail(2, "-c: option requires an argument")
		}
		script, args = args[0], args[1:]
		name = p.Name()
		if len(args) > 0 {
			name, args = args[0], args[1:]
		}
	case len(args) > 0 && !stdin:
		data, err := p.FS.ReadFile(args[0])
		if err != nil {
			code := 126
			if errors.Is(err, fs.ErrNotExist) {
				code = 127
			}
			return p.Fail(code, "%s: %s", args[0], ErrMessage(err))
		}
		script, name, args = string(data), args[0], args[1:]
	default:
		// bash reads a script from standard input as it runs it; this
		// reads it all first, so the script's commands see an empty
		// standard input.
		data, err := io.ReadAll(p.Stdin)
		if err != nil {
			return p.Errorf("reading standard input: %v", err)
		}
		script, name = string(data), p.Name()
		p.Stdin = strings.NewReader("")
	}
	return p.Host.runShell(ctx, p, script, name, args, options)
}

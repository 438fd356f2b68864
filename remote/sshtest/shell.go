package sshtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// defaultPath is the PATH of a login session and of sudo's secure_path.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runShell interprets script as `bash -c script name params...` would, with
// the process's identity, streams, environment and directory. Every file the
// script touches is in the host's [FS]; every program it runs is a fake.
func (s *Server) runShell(ctx context.Context, p *Process, script, name string, params, options []string) int {
	file, err := parseScript(script, name)
	if err != nil {
		fmt.Fprintf(p.Stderr, "%s: %v\n", name, err)
		return 2
	}
	runner, err := interp.New(
		interp.StdIO(p.Stdin, p.Stdout, p.Stderr),
		interp.Env(expand.ListEnviron(p.Env...)),
		func(r *interp.Runner) error { r.Dir = p.Dir; return nil }, // interp.Dir would stat the real disk
		interp.Params(options...),
		interp.Params(append([]string{"--"}, params...)...),
		interp.CallHandler(callHandler),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(ctx context.Context, args []string) error {
				hc := interp.HandlerCtx(ctx)
				child := *p
				child.Args, child.Dir = args, hc.Dir
				child.Stdin, child.Stdout, child.Stderr = hc.Stdin, hc.Stdout, hc.Stderr
				child.Env = environ(hc.Env)
				child.FS = s.fs.As(p.FS.Cred(), hc.Dir)
				if hc.Stdin == nil {
					child.Stdin = strings.NewReader("")
				}
				if code := s.exec(ctx, &child); code != 0 {
					return interp.ExitStatus(uint8(code))
				}
				return nil
			}
		}),
		interp.OpenHandler(func(ctx context.Context, name string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
			f, err := s.fs.As(p.FS.Cred(), interp.HandlerCtx(ctx).Dir).OpenFile(name, flag, perm)
			if err != nil {
				return nil, err // a *fs.PathError, which the interpreter prints as bash does
			}
			return f, nil
		}),
		interp.StatHandler(func(ctx context.Context, name string, follow bool) (fs.FileInfo, error) {
			u := s.fs.As(p.FS.Cred(), interp.HandlerCtx(ctx).Dir)
			if follow {
				return u.Stat(name)
			}
			return u.Lstat(name)
		}),
		interp.ReadDirHandler2(func(ctx context.Context, name string) ([]fs.DirEntry, error) {
			return s.fs.As(p.FS.Cred(), interp.HandlerCtx(ctx).Dir).ReadDir(name)
		}),
		interp.AccessHandler(func(ctx context.Context, name string, mode interp.AccessMode) error {
			return s.fs.As(p.FS.Cred(), interp.HandlerCtx(ctx).Dir).Access(name, int(mode))
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

// callHandler routes `command -v` and `command -V` to the fake `which`, so
// that they look programs up in the fake host's PATH instead of the real
// machine's. Other calls pass through.
func callHandler(_ context.Context, args []string) ([]string, error) {
	if len(args) > 2 && args[0] == "command" && (args[1] == "-v" || args[1] == "-V") {
		return append([]string{commandV}, args[2:]...), nil
	}
	return args, nil
}

// commandV is the internal program behind `command -v`; its name cannot be
// typed in a script.
const commandV = "\x00command-v"

func environ(env expand.Environ) []string {
	var out []string
	for name, v := range env.Each {
		if v.Exported && v.IsSet() {
			out = append(out, name+"="+v.String())
		}
	}
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
// script file, or a script on standard input; options -e, -u, -x, -o NAME
// before them.
func shellProgram(ctx context.Context, p *Process) int {
	args := p.Args[1:]
	var options []string
	command := false
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			goto done
		case a == "-c":
			command = true
		case a == "-o" || a == "+o":
			if len(args) == 0 {
				return p.Fail(2, "%s: option requires an argument", a)
			}
			options = append(options, a, args[0])
			args = args[1:]
		case a == "-s", a == "-l", a == "--login", a == "--norc", a == "--noprofile":
		default:
			for _, c := range a[1:] {
				if c == 'c' {
					command = true
					continue
				}
				options = append(options, string(a[0])+string(c))
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
	case len(args) > 0:
		data, err := p.FS.ReadFile(args[0])
		if err != nil {
			return p.Fail(127, "%s: %s", args[0], ErrMessage(err))
		}
		script, name, args = string(data), args[0], args[1:]
	default:
		data, err := io.ReadAll(p.Stdin)
		if err != nil {
			return p.Errorf("reading standard input: %v", err)
		}
		script, name = string(data), p.Name()
		p.Stdin = strings.NewReader("")
	}
	return p.Host.runShell(ctx, p, script, name, args, options)
}

package sshtest

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// builtinPrefix marks a builtin that the call handler reroutes to this
// package: the interpreter's own would look at the real machine (type,
// command -v, hash, pwd -P), is missing (umask, kill), or words its errors
// unlike bash (cd). The prefix cannot be typed in a script.
const builtinPrefix = "\x00sshtest builtin "

// call rewrites a simple command before the interpreter runs it.
func (sh *shell) call(ctx context.Context, args []string) ([]string, error) {
	reroute := func() []string { return append([]string{builtinPrefix + args[0]}, args[1:]...) }
	switch args[0] {
	case "command", "builtin":
		if args[0] == "command" && len(args) > 2 && (args[1] == "-v" || args[1] == "-V") {
			return reroute(), nil
		}
		// `command kill 1`, `builtin umask`: the interpreter would run
		// its own, missing, builtin.
		if len(args) > 1 {
			switch args[1] {
			case "type", "hash", "umask", "kill", "pwd", "cd":
				return sh.call(ctx, args[1:])
			}
		}
	case "type", "hash", "umask", "kill":
		return reroute(), nil
	case "pwd":
		if slices.Contains(args[1:], "-P") {
			return reroute(), nil
		}
	case "cd":
		hc := interp.HandlerCtx(ctx)
		if _, _, bad := sh.cdTarget(hc, args[1:]); bad {
			return reroute(), nil
		}
	}
	return args, nil
}

// builtin runs a rerouted builtin and returns its exit status.
func (sh *shell) builtin(hc interp.HandlerContext, name string, args []string) int {
	errorf := func(code int, format string, a ...any) int {
		fmt.Fprintf(hc.Stderr, "%s%s: %s\n", sh.prefix(posLine(hc.Pos)), name, fmt.Sprintf(format, a...))
		return code
	}
	switch name {
	case "command":
		return sh.commandV(hc, args[0] == "-V", args[1:], errorf)
	case "type":
		return sh.typeBuiltin(hc, args, errorf)
	case "hash":
		return sh.hash(hc, args, errorf)
	case "umask":
		return sh.umaskBuiltin(hc, args, errorf)
	case "kill":
		return killBuiltin(args, errorf)
	case "pwd":
		dir, err := sh.view("/").Realpath(hc.Dir)
		if err != nil {
			return errorf(1, "error retrieving current directory: %s", ErrMessage(err))
		}
		fmt.Fprintln(hc.Stdout, dir)
		return 0
	case "cd":
		target, errno, _ := sh.cdTarget(hc, args)
		return errorf(1, "%s: %s", target, ErrMessage(errno))
	}
	return errorf(2, "not modelled by sshtest")
}

// cdTarget checks the directory `cd ARGS` would enter. It reports bad when
// cd must fail; forms it does not check (cd -, options, no HOME) pass.
func (sh *shell) cdTarget(hc interp.HandlerContext, args []string) (target string, errno syscall.Errno, bad bool) {
	switch {
	case len(args) == 0:
		target = hc.Env.Get("HOME").String()
	case len(args) == 1 && args[0] != "-" && !strings.HasPrefix(args[0], "-"):
		target = args[0]
	}
	if target == "" {
		return "", 0, false
	}
	u := sh.view(hc.Dir)
	fi, err := u.Stat(target)
	switch {
	case err != nil:
		return target, errnoOf(err), true
	case !fi.IsDir():
		return target, syscall.ENOTDIR, true
	case u.Access(target, accessExec) != nil:
		return target, syscall.EACCES, true
	}
	return target, 0, false
}

// kindOf says what bash would run for a command name: a "keyword", a
// "builtin" or a "file" (with its path), or "" when nothing. Functions and
// aliases are not seen.
func (sh *shell) kindOf(hc interp.HandlerContext, name string) (kind, file string) {
	switch {
	case syntax.IsKeyword(name):
		return "keyword", name
	case interp.IsBuiltin(name):
		return "builtin", name
	}
	if f := sh.pathOf(hc, name); f != "" {
		return "file", f
	}
	return "", ""
}

// pathOf finds an executable as execvp would, "" when there is none.
func (sh *shell) pathOf(hc interp.HandlerContext, name string) string {
	u := sh.view(hc.Dir)
	if strings.Contains(name, "/") {
		if checkExecutable(u, name, u.Abs(name)) == nil {
			return name
		}
		return ""
	}
	pathEnv := defaultPath
	if v := hc.Env.Get("PATH"); v.IsSet() {
		pathEnv = v.String()
	}
	found, _ := findOnPath(u, pathEnv, name)
	return found
}

// commandV implements `command -v` and `command -V`: the status is 0 when
// any name was found.
func (sh *shell) commandV(hc interp.HandlerContext, verbose bool, names []string, errorf func(int, string, ...any) int) int {
	code := 1
	for _, name := range names {
		kind, file := sh.kindOf(hc, name)
		switch {
		case kind == "":
			if verbose {
				errorf(1, "%s: not found", name)
			}
			continue
		case !verbose:
			fmt.Fprintln(hc.Stdout, file)
		case kind == "file":
			fmt.Fprintf(hc.Stdout, "%s is %s\n", name, file)
		default:
			fmt.Fprintf(hc.Stdout, "%s is a shell %s\n", name, kind)
		}
		code = 0
	}
	return code
}

// typeBuiltin implements type [-t|-p|-P] NAME...
func (sh *shell) typeBuiltin(hc interp.HandlerContext, args []string, errorf func(int, string, ...any) int) int {
	mode := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 't', 'p', 'P':
				mode = string(c)
			default:
				return errorf(2, "-%c: invalid option (not modelled by sshtest)", c)
			}
		}
	}
	code := 0
	for _, name := range args {
		if mode == "P" {
			if f := sh.pathOf(hc, name); f != "" {
				fmt.Fprintln(hc.Stdout, f)
			} else {
				code = 1
			}
			continue
		}
		kind, file := sh.kindOf(hc, name)
		switch {
		case kind == "":
			if mode == "" {
				errorf(1, "%s: not found", name)
			}
			code = 1
		case mode == "t":
			fmt.Fprintln(hc.Stdout, kind)
		case mode == "p":
			if kind == "file" {
				fmt.Fprintln(hc.Stdout, file)
			}
		case kind == "file":
			fmt.Fprintf(hc.Stdout, "%s is %s\n", name, file)
		default:
			fmt.Fprintf(hc.Stdout, "%s is a shell %s\n", name, kind)
		}
	}
	return code
}

// hash implements hash [-r] [NAME...]: there is no table, but a name must
// be found.
func (sh *shell) hash(hc interp.HandlerContext, args []string, errorf func(int, string, ...any) int) int {
	if len(args) == 0 {
		fmt.Fprintln(hc.Stdout, "hash: hash table empty")
		return 0
	}
	if args[0] == "-r" {
		args = args[1:]
	}
	code := 0
	for _, name := range args {
		if strings.HasPrefix(name, "-") {
			return errorf(2, "%s: invalid option (not modelled by sshtest)", name)
		}
		if kind, _ := sh.kindOf(hc, name); kind == "" {
			code = errorf(1, "%s: not found", name)
		}
	}
	return code
}

// umaskBuiltin implements umask [-p] [-S] [MODE]. The mask belongs to the
// whole script: a subshell that changes it changes it for its parent too.
func (sh *shell) umaskBuiltin(hc interp.HandlerContext, args []string, errorf func(int, string, ...any) int) int {
	symbolic, reusable := false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-S":
			symbolic = true
		case "-p":
			reusable = true
		default:
			return errorf(2, "%s: invalid option (not modelled by sshtest)", args[0])
		}
		args = args[1:]
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(args) == 0 {
		switch {
		case symbolic:
			fmt.Fprintln(hc.Stdout, symbolicMode(0o777&^sh.umask))
		case reusable:
			fmt.Fprintf(hc.Stdout, "umask %04o\n", uint32(sh.umask))
		default:
			fmt.Fprintf(hc.Stdout, "%04o\n", uint32(sh.umask))
		}
		return 0
	}
	spec := args[0]
	if spec[0] >= '0' && spec[0] <= '9' {
		v, err := strconv.ParseUint(spec, 8, 32)
		if err != nil || v > 0o777 {
			return errorf(1, "%s: octal number out of range", spec)
		}
		sh.umask = fs.FileMode(v)
		return 0
	}
	perm, err := applyModeSpec(spec, 0o777&^sh.umask, true, 0)
	if err != nil {
		return errorf(1, "%s: invalid symbolic mode operator", spec)
	}
	sh.umask = 0o777 &^ perm.Perm()
	return 0
}

// symbolicMode renders permission bits as umask -S does: u=rwx,g=rx,o=rx.
func symbolicMode(perm fs.FileMode) string {
	var parts []string
	for i, who := range []string{"u", "g", "o"} {
		bits := perm >> (6 - 3*i) & 7
		s := who + "="
		for j, c := range "rwx" {
			if bits&(4>>j) != 0 {
				s += string(c)
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// killBuiltin implements bash's kill: there are no processes, so every
// process ID is unknown.
func killBuiltin(args []string, errorf func(int, string, ...any) int) int {
	pids, e := killOperands(args)
	if e != "" {
		return errorf(2, "%s", e)
	}
	if len(pids) == 0 {
		return errorf(2, "usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]")
	}
	for _, pid := range pids {
		switch _, err := strconv.Atoi(pid); {
		case strings.HasPrefix(pid, "%"):
			errorf(1, "%s: no such job", pid)
		case err != nil:
			errorf(1, "%s: arguments must be process or job IDs", pid)
		default:
			errorf(1, "(%s) - No such process", pid)
		}
	}
	return 1
}

// killOperands separates the signal options of kill from its operands. It
// returns a message when an option is not modelled.
func killOperands(args []string) (pids []string, problem string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(pids, args[i+1:]...), ""
		case a == "-s" || a == "-n":
			if i+1 == len(args) {
				return nil, a + ": option requires an argument"
			}
			i++
			if !validSignal(args[i]) {
				return nil, args[i] + ": invalid signal specification"
			}
		case a == "-l" || a == "-L":
			return nil, a + ": listing signals is not modelled by sshtest"
		case strings.HasPrefix(a, "--"):
			return nil, a + ": unrecognized option (not modelled by sshtest)"
		case len(pids) == 0 && len(a) > 1 && a[0] == '-':
			if !validSignal(a[1:]) {
				return nil, a[1:] + ": invalid signal specification"
			}
		default:
			pids = append(pids, a)
		}
	}
	return pids, ""
}

// signals are the signal names kill accepts, by number.
var signals = [...]string{1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE", 9: "KILL", 10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM", 17: "CHLD", 18: "CONT", 19: "STOP", 20: "TSTP"}

func validSignal(s string) bool {
	if n, err := strconv.Atoi(s); err == nil {
		return n >= 0 && n <= 64
	}
	s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
	return s != "" && slices.Contains(signals[:], s)
}

package sshtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// installCoreutils installs the fake programs every host has, in /usr/bin
// (and so, through the /bin link, in /bin).
func installCoreutils(s *Server) {
	progs := map[string]Program{
		"bash": shellProgram, "sh": shellProgram, "sudo": sudoProgram,
		"env": envProgram, "timeout": timeoutProgram, "sleep": sleepProgram,
		"cat": catProgram, "sha256sum": sha256sumProgram, "mkdir": mkdirProgram,
		"install": installProgram, "mv": mvProgram, "rm": rmProgram,
		"chmod": chmodProgram, "chown": chownProgram, "stat": statProgram,
		"mktemp": mktempProgram, "id": idProgram,
	}
	for _, name := range []string{"true", "false", "echo", "printf", "test", "["} {
		progs[name] = builtinProgram(name)
	}
	for name, p := range moreCoreutils() {
		progs[name] = p
	}
	for name, p := range progs {
		s.Handle("/usr/bin/"+name, p)
	}
}

// q quotes a file name in a message as GNU coreutils do: ‘name’ in a UTF-8
// locale (a login session has LANG=C.UTF-8), 'name' otherwise.
func (p *Process) q(name string) string {
	for _, key := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := p.Getenv(key); v != "" {
			if l := strings.ToLower(v); strings.Contains(l, "utf-8") || strings.Contains(l, "utf8") {
				return "\u2018" + name + "\u2019"
			}
			return "'" + name + "'"
		}
	}
	return "'" + name + "'"
}

// qa quotes a file name as GNU coreutils' quoteaf does: always in
// straight single quotes, with a quote inside escaped as the shell does.
func qa(name string) string {
	return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
}

// usage prints "name: message" and coreutils' "Try 'name --help' for more
// information." and returns code.
func (p *Process) usage(code int, format string, args ...any) int {
	p.Errorf(format, args...)
	fmt.Fprintf(p.Stderr, "Try '%s --help' for more information.\n", p.Name())
	return code
}

// readInput returns the content of an input operand: standard input for
// "-" and /dev/stdin, the file otherwise.
func readInput(p *Process, name string) ([]byte, error) {
	if name == "-" || name == "/dev/stdin" {
		return io.ReadAll(p.Stdin)
	}
	return p.FS.ReadFile(name)
}

// builtinProgram returns the program for a shell builtin that is also a
// file in /usr/bin (true, echo, printf, test, ...): it runs the shell's
// implementation, so that `sudo echo` and `env printf` behave as the
// coreutils binaries do, whatever name the program is run by.
func builtinProgram(builtin string) Program {
	return func(ctx context.Context, p *Process) int {
		script := builtin + ` "$@"`
		if builtin == "[" {
			if len(p.Args) < 2 || p.Args[len(p.Args)-1] != "]" {
				return p.Fail(2, "missing %s", p.q("]"))
			}
			script = `[ "$@"`
		}
		return p.Host.runShell(ctx, p, script, p.Name(), p.Args[1:], nil)
	}
}

// sleepProgram: sleep NUMBER[smhd]... (the sum of the durations). It ends
// with 143, as if by SIGTERM, when the command is cancelled.
func sleepProgram(ctx context.Context, p *Process) int {
	c, code, ok := OptionSpec{}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return p.usage(1, "missing operand")
	}
	var total time.Duration
	for _, a := range c.Operands {
		d, err := parseDuration(a)
		if err != nil {
			return p.usage(1, "invalid time interval %s", p.q(a))
		}
		total += d
	}
	t := time.NewTimer(total)
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-ctx.Done():
		return 143
	}
}

// envProgram: env [-i] [-u NAME]... [-C DIR] [NAME=VALUE...] [COMMAND
// [ARG...]]. -C (--chdir) runs COMMAND in DIR; as GNU env 9.1 does, a
// directory it cannot enter fails with "env: cannot change directory to
// 'DIR': REASON" and -C without a command with "env: must specify
// command with --chdir (-C)", both exit 125.
func envProgram(ctx context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "iu:C:", Long: []string{"ignore-environment", "unset=", "chdir="}}.Parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	dir, chdir := c.Value("-C", "--chdir")
	env := p.Env
	if c.Has("-i", "--ignore-environment") {
		env = nil
	}
	for _, name := range c.Values("-u", "--unset") {
		env = unsetEnv(env, name)
	}
	args := c.Operands
	if len(args) > 0 && args[0] == "-" { // obsolete spelling of -i
		env, args = nil, args[1:]
	}
	for len(args) > 0 && strings.Contains(args[0], "=") {
		name, _, _ := strings.Cut(args[0], "=")
		env = append(unsetEnv(env, name), args[0])
		args = args[1:]
	}
	if len(args) == 0 {
		if chdir {
			p.Errorf("must specify command with --chdir (-C)")
			fmt.Fprintf(p.Stderr, "Try '%s --help' for more information.\n", p.Name())
			return 125
		}
		for _, kv := range env {
			fmt.Fprintln(p.Stdout, kv)
		}
		return 0
	}
	child := *p
	child.Env, child.Args = env, args
	if chdir {
		abs := p.FS.Abs(dir)
		fi, err := p.FS.Stat(abs)
		switch {
		case err != nil:
			p.Errorf("cannot change directory to %s: %s", p.q(dir), ErrMessage(err))
			return 125
		case !fi.IsDir():
			p.Errorf("cannot change directory to %s: Not a directory", p.q(dir))
			return 125
		case p.FS.Access(abs, 1) != nil:
			p.Errorf("cannot change directory to %s: Permission denied", p.q(dir))
			return 125
		}
		child.Dir = abs
		child.FS = p.Host.fs.As(p.FS.Cred(), abs).WithUmask(p.FS.Umask())
	}
	return p.Host.start(ctx, &child, func(e *execError) int {
		p.Errorf("%s: %s", p.q(e.name), e.execvpText())
		return e.code
	})
}

func unsetEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return out
}

// timeoutProgram: timeout [-k DURATION] [-s SIGNAL] [--foreground]
// [--preserve-status] DURATION COMMAND [ARG...]. It exits 124 when the
// command times out (the command's own status with --preserve-status);
// cancelling it (a signal) ends the command, as the real one does by
// signalling its process group. -k and -s are accepted and have no further
// effect: fakes end when cancelled.
func timeoutProgram(ctx context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "k:s:v", Long: []string{"kill-after=", "signal=", "foreground", "preserve-status", "verbose"}}.Parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	if len(c.Operands) < 2 {
		return p.usage(125, "missing operand")
	}
	for _, opt := range []string{"-k", "--kill-after"} {
		if v, ok := c.Value(opt); ok {
			if _, err := parseDuration(v); err != nil {
				return p.Fail(125, "invalid time interval %s", p.q(v))
			}
		}
	}
	if sig, ok := c.Value("-s", "--signal"); ok && !validSignal(sig) {
		return p.Fail(125, "%s: invalid signal", sig)
	}
	d, err := parseDuration(c.Operands[0])
	if err != nil {
		return p.Fail(125, "invalid time interval %s", p.q(c.Operands[0]))
	}
	runCtx := ctx
	if d > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	child := *p
	child.Args = c.Operands[1:]
	code = p.Host.start(runCtx, &child, func(e *execError) int {
		p.Errorf("failed to run command %s: %s", p.q(e.name), e.execvpText())
		return e.code
	})
	if ctx.Err() == nil && runCtx.Err() != nil && !c.Has("--preserve-status") {
		return 124
	}
	return code
}

func parseDuration(s string) (time.Duration, error) {
	mult := time.Second
	num := s
	switch {
	case strings.HasSuffix(s, "s"):
		num = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		num, mult = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		num, mult = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		num, mult = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || num == "" || strings.ContainsAny(num, "xXpPnN_") {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return time.Duration(f * float64(mult)), nil
}

// catProgram: cat [FILE...]; "-" or no file reads standard input.
func catProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	files := c.Operands
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		if name == "-" {
			if _, err := io.Copy(p.Stdout, p.Stdin); err != nil {
				return p.Errorf("-: %s", ErrMessage(err))
			}
			continue
		}
		data, err := readInput(p, name)
		if err != nil {
			status = p.Errorf("%s: %s", name, ErrMessage(err))
			continue
		}
		p.Stdout.Write(data)
	}
	return status
}

// sha256sumProgram: sha256sum [-b|-t] [FILE...], printing "HASH  NAME" per
// file ("HASH *NAME" with -b); or sha256sum -c [--quiet] [--status]
// [--strict] [-w] [FILE...] to check such lines.
func sha256sumProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "btcw", Long: []string{"binary", "text", "check", "quiet", "status", "strict", "warn"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	files := c.Operands
	if len(files) == 0 {
		files = []string{"-"}
	}
	if c.Has("-c", "--check") {
		return sha256Check(p, c, files)
	}
	sep := "  "
	if c.Has("-b", "--binary") {
		sep = " *"
	}
	status := 0
	for _, name := range files {
		data, err := readInput(p, name)
		if err != nil {
			status = p.Errorf("%s: %s", name, ErrMessage(err))
			continue
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(p.Stdout, "%s%s%s\n", hex.EncodeToString(sum[:]), sep, name)
	}
	return status
}

func sha256Check(p *Process, c CommandLine, files []string) int {
	quiet, silent := c.Has("--quiet"), c.Has("--status")
	status, failed, unreadable, improper := 0, 0, 0, 0
	for _, list := range files {
		data, err := readInput(p, list)
		if err != nil {
			status = p.Errorf("%s: %s", list, ErrMessage(err))
			continue
		}
		valid := 0
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			if len(line) < 66 || (line[64:66] != "  " && line[64:66] != " *") {
				improper++
				continue
			}
			valid++
			want, name := line[:64], line[66:]
			content, err := readInput(p, name)
			if err != nil {
				p.Errorf("%s: %s", name, ErrMessage(err))
				if !silent {
					fmt.Fprintf(p.Stdout, "%s: FAILED open or read\n", name)
				}
				unreadable++
				continue
			}
			sum := sha256.Sum256(content)
			switch {
			case strings.EqualFold(hex.EncodeToString(sum[:]), want):
				if !quiet && !silent {
					fmt.Fprintf(p.Stdout, "%s: OK\n", name)
				}
			default:
				if !silent {
					fmt.Fprintf(p.Stdout, "%s: FAILED\n", name)
				}
				failed++
			}
		}
		if valid == 0 {
			display := list
			if list == "-" {
				display = "standard input"
			}
			status = p.Errorf("%s: no properly formatted checksum lines found", qa(display))
		}
	}
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	if !silent {
		if improper > 0 && status == 0 {
			p.Errorf("WARNING: %d %s improperly formatted", improper, plural(improper, "line is", "lines are"))
		}
		if unreadable > 0 {
			p.Errorf("WARNING: %d listed %s could not be read", unreadable, plural(unreadable, "file", "files"))
		}
		if failed > 0 {
			p.Errorf("WARNING: %d computed %s did NOT match", failed, plural(failed, "checksum", "checksums"))
		}
	}
	if failed > 0 || unreadable > 0 || (improper > 0 && c.Has("--strict")) {
		return 1
	}
	return status
}

// mkdirProgram: mkdir [-p] [-m MODE] DIR...
func mkdirProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "pm:v", Long: []string{"parents", "mode=", "verbose"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return p.usage(1, "missing operand")
	}
	spec, explicit := c.Value("-m", "--mode")
	var mode fs.FileMode
	if explicit {
		m, err := applyModeSpec(spec, fs.ModePerm, true, p.FS.Umask())
		if err != nil {
			return p.usage(1, "invalid mode %s", p.q(spec))
		}
		mode = m
	}
	parents := c.Has("-p", "--parents")
	status := 0
	for _, dir := range c.Operands {
		if parents {
			if fi, err := p.FS.Stat(dir); err == nil && fi.IsDir() {
				continue // an existing directory is left as it is, mode included
			}
		}
		var err error
		if parents {
			err = p.FS.MkdirAll(dir, 0o777)
		} else {
			err = p.FS.Mkdir(dir, 0o777)
		}
		if err == nil && explicit {
			err = p.FS.Chmod(dir, mode)
		}
		if err != nil {
			name := dir
			var pe *fs.PathError
			if parents && errors.As(err, &pe) && pe.Op == "mkdir" {
				name = relativeTo(dir, p.FS.Abs(dir), pe.Path) // the component that failed
			}
			status = p.Errorf("cannot create directory %s: %s", p.q(name), ErrMessage(err))
			continue
		}
		if c.Has("-v", "--verbose") {
			fmt.Fprintf(p.Stdout, "mkdir: created directory %s\n", p.q(dir))
		}
	}
	return status
}

// relativeTo renders the absolute path sub (a prefix of abs, which is the
// absolute form of name) in the form name was written in.
func relativeTo(name, abs, sub string) string {
	if rest, ok := strings.CutPrefix(abs, sub); ok {
		if trimmed, ok := strings.CutSuffix(strings.TrimRight(name, "/"), rest); ok && trimmed != "" {
			return trimmed
		}
	}
	return sub
}

// Unix permission bits beyond rwx, as in a mode number.
const (
	modeSetuid = 0o4000
	modeSetgid = 0o2000
	modeSticky = 0o1000
)

// unixPerm returns the 12 permission bits of a mode as a number (0o1777).
func unixPerm(m fs.FileMode) uint32 {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= modeSetuid
	}
	if m&fs.ModeSetgid != 0 {
		v |= modeSetgid
	}
	if m&fs.ModeSticky != 0 {
		v |= modeSticky
	}
	return v
}

// fileModeOf is the inverse of unixPerm.
func fileModeOf(v uint32) fs.FileMode {
	m := fs.FileMode(v & 0o777)
	if v&modeSetuid != 0 {
		m |= fs.ModeSetuid
	}
	if v&modeSetgid != 0 {
		m |= fs.ModeSetgid
	}
	if v&modeSticky != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// applyModeSpec applies a chmod mode to the permission bits old: an octal
// number, or symbolic clauses such as u+x,go-w, a=rX, g=u, +t. As GNU
// chmod does, a clause without who letters (+x) leaves the bits set in
// umask alone, and a directory keeps its setuid and setgid bits under a
// numeric mode of fewer than five digits.
func applyModeSpec(spec string, old fs.FileMode, isDir bool, umask fs.FileMode) (fs.FileMode, error) {
	bad := fmt.Errorf("invalid mode %q", spec)
	if spec == "" {
		return 0, bad
	}
	cur := unixPerm(old)
	if spec[0] >= '0' && spec[0] <= '7' {
		v, err := strconv.ParseUint(spec, 8, 32)
		if err != nil || v > 0o7777 {
			return 0, bad
		}
		nv := uint32(v)
		if isDir && len(spec) < 5 {
			nv |= cur & (modeSetuid | modeSetgid)
		}
		return fileModeOf(nv), nil
	}
	mask := uint32(umask.Perm())
	for _, clause := range strings.Split(spec, ",") {
		i := 0
		var who uint32 // a mask of the rwx positions and special bits
		for ; i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0; i++ {
			switch clause[i] {
			case 'u':
				who |= 0o4700
			case 'g':
				who |= 0o2070
			case 'o':
				who |= 0o1007
			case 'a':
				who |= 0o7777
			}
		}
		implicit := who == 0
		if implicit {
			who = 0o7777
		}
		if i == len(clause) {
			return 0, bad
		}
		for i < len(clause) {
			op := clause[i]
			if op != '+' && op != '-' && op != '=' {
				return 0, bad
			}
			i++
			var bits uint32
			switch {
			case i < len(clause) && strings.IndexByte("ugo", clause[i]) >= 0:
				// Copy the bits of one class (g=u) to the others.
				shift := map[byte]uint{'u': 6, 'g': 3, 'o': 0}[clause[i]]
				b := cur >> shift & 7
				bits = b<<6 | b<<3 | b
				i++
			default:
				for ; i < len(clause) && strings.IndexByte("rwxXst", clause[i]) >= 0; i++ {
					switch clause[i] {
					case 'r':
						bits |= 0o444
					case 'w':
						bits |= 0o222
					case 'x':
						bits |= 0o111
					case 'X':
						if isDir || cur&0o111 != 0 {
							bits |= 0o111
						}
					case 's':
						bits |= modeSetuid | modeSetgid
					case 't':
						bits |= modeSticky
					}
				}
			}
			bits &= who
			if implicit {
				bits &^= mask
			}
			switch op {
			case '+':
				cur |= bits
			case '-':
				cur &^= bits
			case '=':
				clearBits := who & 0o777
				if implicit {
					clearBits &^= mask
				}
				if !isDir {
					clearBits |= who & (modeSetuid | modeSetgid)
				}
				clearBits |= who & modeSticky
				cur = cur&^clearBits | bits
			}
		}
	}
	return fileModeOf(cur), nil
}

// lookupOwner parses OWNER[:GROUP] (names or numbers) into IDs; -1 means
// unchanged.
func lookupOwner(p *Process, spec string) (uid, gid int, err error) {
	owner, group, hasGroup := strings.Cut(spec, ":")
	if !hasGroup {
		owner, group, hasGroup = strings.Cut(spec, ".") // obsolete owner.group
		if hasGroup {
			if _, _, ok := p.Host.fs.LookupUser(spec); ok {
				owner, group, hasGroup = spec, "", false
			}
		}
	}
	uid, gid = -1, -1
	if owner != "" {
		if u, g, ok := p.Host.fs.LookupUser(owner); ok {
			uid = u
			if hasGroup && group == "" {
				gid = g
			}
		} else if n, err := strconv.Atoi(owner); err == nil && n >= 0 {
			uid = n
		} else {
			return 0, 0, fmt.Errorf("invalid user: %s", p.q(spec))
		}
	}
	if group != "" {
		if g, ok := p.Host.fs.LookupGroup(group); ok {
			gid = g
		} else if n, err := strconv.Atoi(group); err == nil && n >= 0 {
			gid = n
		} else {
			return 0, 0, fmt.Errorf("invalid group: %s", p.q(spec))
		}
	}
	return uid, gid, nil
}

// installProgram: install [-m MODE] [-o OWNER] [-g GROUP] [-T] SOURCE DEST,
// install [-m MODE] [-o OWNER] [-g GROUP] SOURCE... DIR, or install -d
// [-m MODE] [-o OWNER] [-g GROUP] DIR... As the real one, it removes DEST
// first and writes a new file (so it is not atomic: DEST is missing for a
// moment, and a link at DEST is replaced, not followed), then sets owner
// and mode. A SOURCE of /dev/stdin reads standard input.
func installProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "m:o:g:TdD", Long: []string{"mode=", "owner=", "group=", "no-target-directory", "directory"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	mode := fs.FileMode(0o755)
	if m, ok := c.Value("-m", "--mode"); ok {
		parsed, err := applyModeSpec(m, 0, false, 0) // symbolic modes start from 0
		if err != nil {
			return p.Errorf("invalid mode %s", p.q(m))
		}
		mode = parsed
	}
	uid, gid := -1, -1
	if o, ok := c.Value("-o", "--owner"); ok {
		u, _, err := lookupOwner(p, o)
		if err != nil || strings.Contains(o, ":") {
			return p.Errorf("invalid user %s", p.q(o))
		}
		uid = u
	}
	if g, ok := c.Value("-g", "--group"); ok {
		_, gg, err := lookupOwner(p, ":"+g)
		if err != nil {
			return p.Errorf("invalid group %s", p.q(g))
		}
		gid = gg
	}
	finish := func(name string) error {
		if uid != -1 || gid != -1 {
			if err := p.FS.Chown(name, uid, gid); err != nil {
				return pathErr("chown", name, errnoOf(err))
			}
		}
		if err := p.FS.Chmod(name, mode); err != nil {
			return pathErr("chmod", name, errnoOf(err))
		}
		return nil
	}
	attrsFailed := func(name string, err error) int {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "chown" {
			return p.Errorf("cannot change ownership of %s: %s", qa(name), ErrMessage(err))
		}
		return p.Errorf("cannot change permissions of %s: %s", qa(name), ErrMessage(err))
	}
	if c.Has("-d", "--directory") {
		if len(c.Operands) == 0 {
			return p.usage(1, "missing file operand")
		}
		status := 0
		for _, dir := range c.Operands {
			if err := p.FS.MkdirAll(dir, 0o755); err != nil {
				status = p.Errorf("cannot create directory %s: %s", p.q(dir), ErrMessage(err))
				continue
			}
			if err := finish(dir); err != nil {
				status = attrsFailed(dir, err)
			}
		}
		return status
	}
	srcs, dst, dstIsDir, code, ok := copyOperands(p, c)
	if !ok {
		return code
	}
	if c.Has("-D") {
		if err := p.FS.MkdirAll(path.Dir(p.FS.Abs(dst)), 0o755); err != nil && !dstIsDir {
			return p.Errorf("cannot create directory %s: %s", p.q(path.Dir(dst)), ErrMessage(err))
		}
	}
	status := 0
	for _, src := range srcs {
		target := dst
		if dstIsDir {
			target = path.Join(dst, path.Base(src))
		}
		if fi, err := p.FS.Stat(src); err == nil && fi.IsDir() {
			status = p.Errorf("omitting directory %s", qa(src))
			continue
		}
		data, err := readInput(p, src)
		if err != nil {
			status = p.Errorf("cannot stat %s: %s", qa(src), ErrMessage(err))
			continue
		}
		if err := p.FS.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			status = p.Errorf("cannot remove %s: %s", qa(target), ErrMessage(err))
			continue
		}
		if err := p.FS.WriteFile(target, data, 0o600); err != nil {
			status = p.Errorf("cannot create regular file %s: %s", qa(target), ErrMessage(err))
			continue
		}
		if err := finish(target); err != nil {
			status = attrsFailed(target, err)
		}
	}
	return status
}

// copyOperands splits the operands of cp, mv and install (SOURCE... DEST)
// and tells whether DEST is a directory to copy into (not with -T). It
// fails as they do when an operand is missing or several sources meet a
// DEST that is not a directory.
func copyOperands(p *Process, c CommandLine) (srcs []string, dst string, dstIsDir bool, code int, ok bool) {
	switch len(c.Operands) {
	case 0:
		return nil, "", false, p.usage(1, "missing file operand"), false
	case 1:
		return nil, "", false, p.usage(1, "missing destination file operand after %s", qa(c.Operands[0])), false
	}
	srcs, dst = c.Operands[:len(c.Operands)-1], c.Operands[len(c.Operands)-1]
	if fi, err := p.FS.Stat(dst); err == nil && fi.IsDir() && !c.Has("-T", "--no-target-directory") {
		dstIsDir = true
	}
	if len(srcs) > 1 && !dstIsDir {
		return nil, "", false, p.Errorf("target %s is not a directory", qa(dst)), false
	}
	return srcs, dst, dstIsDir, 0, true
}

// mvProgram: mv [-f] [-T] SOURCE DEST, or mv [-f] SOURCE... DIR (rename(2),
// atomic on one filesystem).
func mvProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "fTnv", Long: []string{"force", "no-target-directory", "no-clobber", "verbose"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	srcs, dst, dstIsDir, code, ok := copyOperands(p, c)
	if !ok {
		return code
	}
	status := 0
	for _, src := range srcs {
		target := dst
		if dstIsDir {
			target = path.Join(dst, path.Base(src))
		}
		if _, err := p.FS.Lstat(src); err != nil {
			status = p.Errorf("cannot stat %s: %s", qa(src), ErrMessage(err))
			continue
		}
		if c.Has("-n", "--no-clobber") {
			if _, err := p.FS.Lstat(target); err == nil {
				continue
			}
		}
		if err := p.FS.Rename(src, target); err != nil {
			status = p.Errorf("cannot move %s to %s: %s", qa(src), qa(target), ErrMessage(err))
			continue
		}
		if c.Has("-v", "--verbose") {
			fmt.Fprintf(p.Stdout, "renamed %s -> %s\n", p.q(src), p.q(target))
		}
	}
	return status
}

// rmProgram: rm [-f] [-r] [-d] FILE...
func rmProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "frRdv", Long: []string{"force", "recursive", "dir", "verbose"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	force := c.Has("-f", "--force")
	recursive := c.Has("-r", "-R", "--recursive")
	if len(c.Operands) == 0 && !force {
		return p.usage(1, "missing operand")
	}
	status := 0
	for _, name := range c.Operands {
		if base := path.Base(name); base == "." || base == ".." || p.FS.Abs(name) == "/" {
			status = p.Errorf("refusing to remove '.' or '..' directory: skipping %s", qa(name))
			continue
		}
		fi, err := p.FS.Lstat(name)
		if err != nil {
			if !force || !errors.Is(err, fs.ErrNotExist) {
				status = p.Errorf("cannot remove %s: %s", qa(name), ErrMessage(err))
			}
			continue
		}
		if fi.IsDir() && !recursive {
			if !c.Has("-d", "--dir") {
				status = p.Errorf("cannot remove %s: Is a directory", qa(name))
			} else if err := p.FS.Remove(name); err != nil {
				status = p.Errorf("cannot remove %s: %s", qa(name), ErrMessage(err))
			}
			continue
		}
		if failed, err := removeAll(p.FS, name); err != nil {
			status = p.Errorf("cannot remove %s: %s", qa(failed), ErrMessage(err))
		}
	}
	return status
}

// removeAll removes name and, for a directory, everything in it. On
// failure it returns the name (under name) that could not be removed.
func removeAll(u *UserFS, name string) (string, error) {
	fi, err := u.Lstat(name)
	if err != nil {
		return name, err
	}
	if fi.IsDir() {
		entries, err := u.ReadDir(name)
		if err != nil {
			return name, err
		}
		for _, e := range entries {
			if failed, err := removeAll(u, path.Join(name, e.Name())); err != nil {
				return failed, err
			}
		}
	}
	return name, u.Remove(name)
}

// walkTree calls fn for name and, when recursive and name is a directory
// (not a link to one), for everything under it, parents first.
func walkTree(u *UserFS, name string, recursive bool, fn func(name string) error) error {
	if err := fn(name); err != nil {
		return err
	}
	if !recursive {
		return nil
	}
	fi, err := u.Lstat(name)
	if err != nil || !fi.IsDir() {
		return nil
	}
	entries, err := u.ReadDir(name)
	if err != nil {
		return pathErr("readdir", name, errnoOf(err))
	}
	var first error
	for _, e := range entries {
		if err := walkTree(u, path.Join(name, e.Name()), true, fn); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// chmodProgram: chmod [-R] [-f] [-v] MODE FILE..., MODE octal or symbolic.
func chmodProgram(_ context.Context, p *Process) int {
	args := p.Args[1:]
	// A mode such as -w looks like an option: GNU chmod takes it as a mode.
	var modeArg string
	for i, a := range args {
		if len(a) > 1 && a[0] == '-' && strings.Trim(a[1:], "rwxXst") == "" && a != "--" {
			modeArg = a
			args = append(args[:i:i], args[i+1:]...)
			break
		}
	}
	c, code, ok := OptionSpec{Short: "Rfvc", Long: []string{"recursive", "silent", "quiet", "verbose", "changes"}}.Parse(p, args, false)
	if !ok {
		return code
	}
	operands := c.Operands
	if modeArg != "" {
		operands = append([]string{modeArg}, operands...)
	}
	switch len(operands) {
	case 0:
		return p.usage(1, "missing operand")
	case 1:
		return p.usage(1, "missing operand after %s", p.q(operands[0]))
	}
	spec := operands[0]
	if _, err := applyModeSpec(spec, 0, false, 0); err != nil {
		return p.usage(1, "invalid mode: %s", p.q(spec))
	}
	return changeTree(p, c, operands[1:], "changing permissions of", func(file string, fi fs.FileInfo) error {
		mode, _ := applyModeSpec(spec, fi.Mode(), fi.IsDir(), p.FS.Umask())
		return p.FS.Chmod(file, mode)
	})
}

// changeTree applies change to each named file (and, with -R, everything
// below it), reporting failures as chmod and chown do: "cannot access X"
// when a file cannot be found, "<what> X" when the change fails; -f
// silences both. Dangling links met while recursing are skipped.
func changeTree(p *Process, c CommandLine, names []string, what string, change func(file string, fi fs.FileInfo) error) int {
	recursive := c.Has("-R", "--recursive")
	quiet := c.Has("-f", "--silent", "--quiet")
	status := 0
	for _, name := range names {
		err := walkTree(p.FS, name, recursive, func(file string) error {
			fi, err := p.FS.Stat(file)
			if err != nil {
				if _, lerr := p.FS.Lstat(file); lerr == nil && recursive {
					return nil // a dangling link met while recursing
				}
				return pathErr("access", file, errnoOf(err))
			}
			if err := change(file, fi); err != nil {
				return pathErr("change", file, errnoOf(err))
			}
			return nil
		})
		var pe *fs.PathError
		switch {
		case err == nil:
		case quiet || !errors.As(err, &pe):
			status = 1
		case pe.Op == "access":
			status = p.Errorf("cannot access %s: %s", qa(pe.Path), ErrMessage(err))
		default:
			status = p.Errorf("%s %s: %s", what, qa(pe.Path), ErrMessage(err))
		}
	}
	return status
}

// chownProgram: chown [-R] [-f] OWNER[:GROUP] FILE...
func chownProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "Rfvc", Long: []string{"recursive", "silent", "quiet", "verbose", "changes"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	switch len(c.Operands) {
	case 0:
		return p.usage(1, "missing operand")
	case 1:
		return p.usage(1, "missing operand after %s", p.q(c.Operands[0]))
	}
	uid, gid, err := lookupOwner(p, c.Operands[0])
	if err != nil {
		return p.Errorf("%v", err)
	}
	return changeTree(p, c, c.Operands[1:], "changing ownership of", func(file string, _ fs.FileInfo) error {
		return p.FS.Chown(file, uid, gid)
	})
}

// statProgram: stat [-L] -c FORMAT FILE... (also --printf, without the
// newline and with backslash escapes) with the directives %a %A %u %g %U
// %G %s %n %N %F %Y %y %h %%.
func statProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "Lc:", Long: []string{"dereference", "format=", "printf="}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	format, ok := c.Value("-c", "--format")
	newline := "\n"
	if f, pok := c.Value("--printf"); pok {
		format, ok, newline = unescapeC(f), true, ""
	}
	if !ok {
		return p.Errorf("only 'stat -c FORMAT' and 'stat --printf FORMAT' are modelled by sshtest")
	}
	if len(c.Operands) == 0 {
		return p.usage(1, "missing operand")
	}
	status := 0
	for _, name := range c.Operands {
		var fi fs.FileInfo
		var err error
		if c.Has("-L", "--dereference") {
			fi, err = p.FS.Stat(name)
		} else {
			fi, err = p.FS.Lstat(name)
		}
		if err != nil {
			status = p.Errorf("cannot statx %s: %s", qa(name), ErrMessage(err))
			continue
		}
		out, err := formatStat(p, format, name, fi)
		if err != nil {
			return p.Fail(2, "%v", err)
		}
		fmt.Fprint(p.Stdout, out+newline)
	}
	return status
}

// unescapeC interprets the backslash escapes of stat --printf.
func unescapeC(s string) string {
	r := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`, `\"`, `"`, `\r`, "\r", `\0`, "\x00")
	return r.Replace(s)
}

func formatStat(p *Process, format, name string, fi fs.FileInfo) (string, error) {
	uid, gid := Owner(fi)
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'a':
			b.WriteString(strconv.FormatUint(uint64(unixPerm(fi.Mode())), 8))
		case 'A':
			b.WriteString(lsMode(fi.Mode()))
		case 'u':
			b.WriteString(strconv.Itoa(uid))
		case 'g':
			b.WriteString(strconv.Itoa(gid))
		case 'U':
			b.WriteString(userNameOr(p, uid, "UNKNOWN"))
		case 'G':
			b.WriteString(groupNameOr(p, gid, "UNKNOWN"))
		case 's':
			b.WriteString(strconv.FormatInt(fi.Size(), 10))
		case 'h':
			b.WriteString("1")
		case 'n':
			b.WriteString(name)
		case 'N':
			b.WriteString("'" + name + "'")
			if fi.Mode()&fs.ModeSymlink != 0 {
				if t, err := p.FS.Readlink(name); err == nil {
					b.WriteString(" -> '" + t + "'")
				}
			}
		case 'Y':
			b.WriteString(strconv.FormatInt(fi.ModTime().Unix(), 10))
		case 'y':
			b.WriteString(fi.ModTime().Format("2006-01-02 15:04:05.000000000 -0700"))
		case 'F':
			switch {
			case fi.IsDir():
				b.WriteString("directory")
			case fi.Mode()&fs.ModeSymlink != 0:
				b.WriteString("symbolic link")
			case fi.Mode()&fs.ModeCharDevice != 0:
				b.WriteString("character special file")
			case fi.Size() == 0:
				b.WriteString("regular empty file")
			default:
				b.WriteString("regular file")
			}
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("format directive %%%c is not modelled by sshtest", format[i])
		}
	}
	return b.String(), nil
}

// userNameOr names a UID from /etc/passwd, or returns unknown.
func userNameOr(p *Process, uid int, unknown string) string {
	if name := p.Host.fs.UserName(uid); name != strconv.Itoa(uid) {
		return name
	}
	return unknown
}

// groupNameOr names a GID from /etc/group, or returns unknown.
func groupNameOr(p *Process, gid int, unknown string) string {
	if name := p.Host.fs.GroupName(gid); name != strconv.Itoa(gid) {
		return name
	}
	return unknown
}

// mktempProgram: mktemp [-d] [-u] [-q] [-p DIR | -t] [TEMPLATE]; the
// template ends in at least three X characters. Without a template the
// name is tmp.XXXXXXXXXX in $TMPDIR or /tmp; a template is relative to the
// working directory unless -p or -t is given.
func mktempProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "dp:tqu", Long: []string{"directory", "tmpdir=", "quiet", "dry-run"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) > 1 {
		return p.Errorf("too many templates")
	}
	template := "tmp.XXXXXXXXXX"
	explicit := len(c.Operands) == 1
	if explicit {
		template = c.Operands[0]
	}
	dir, hasDir := c.Value("-p", "--tmpdir")
	if !hasDir && (c.Has("-t") || !explicit) {
		hasDir = true
	}
	if hasDir {
		if dir == "" {
			dir = p.Getenv("TMPDIR")
		}
		if dir == "" {
			dir = "/tmp"
		}
		switch {
		case c.Has("-t") && strings.Contains(template, "/"):
			return p.Errorf("invalid template, %s, contains directory separator", p.q(template))
		case explicit && path.IsAbs(template):
			return p.Errorf("invalid template, %s; with --tmpdir, it may not be absolute", p.q(template))
		}
		template = path.Join(dir, template)
	}
	base := strings.TrimRight(template, "X")
	xs := len(template) - len(base)
	if xs < 3 {
		return p.Errorf("too few X's in template %s", p.q(template))
	}
	fail := func(err error) int {
		if c.Has("-q", "--quiet") {
			return 1
		}
		what := "file"
		if c.Has("-d", "--directory") {
			what = "directory"
		}
		return p.Errorf("failed to create %s via template %s: %s", what, p.q(template), ErrMessage(err))
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for range 100 {
		suffix := make([]byte, xs)
		for i := range suffix {
			suffix[i] = letters[rand.IntN(len(letters))]
		}
		name := base + string(suffix)
		var err error
		switch {
		case c.Has("-u", "--dry-run"):
			if _, err = p.FS.Lstat(name); err == nil {
				err = fs.ErrExist
			} else if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		case c.Has("-d", "--directory"):
			err = p.FS.Mkdir(name, 0o700)
		default:
			var f *File
			f, err = p.FS.OpenFile(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL, 0o600)
			if err == nil {
				f.Close()
			}
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(p.Stdout, name)
		return 0
	}
	return fail(syscall.EEXIST)
}

// idProgram: id [-u|-g|-G] [-n] [-r] [USER].
func idProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "ugGnr", Long: []string{"user", "group", "groups", "name", "real"}}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	cred := p.FS.Cred()
	switch len(c.Operands) {
	case 0:
	case 1:
		uid, gid, ok := p.Host.fs.LookupUser(c.Operands[0])
		if !ok {
			return p.Errorf("%s: no such user", p.q(c.Operands[0]))
		}
		cred = Cred{UID: uid, GID: gid, Groups: p.Host.fs.SupplementaryGroups(c.Operands[0])}
	default:
		return p.usage(1, "extra operand %s", p.q(c.Operands[1]))
	}
	groups := []int{cred.GID}
	for _, g := range cred.Groups {
		if g != cred.GID {
			groups = append(groups, g)
		}
	}
	name := c.Has("-n", "--name")
	user, group, all := c.Has("-u", "--user"), c.Has("-g", "--group"), c.Has("-G", "--groups")
	if btoi(user)+btoi(group)+btoi(all) > 1 {
		return p.Errorf("cannot print \"only\" of more than one choice")
	}
	if name && !user && !group && !all {
		return p.Errorf("cannot print only names or real IDs in default format")
	}
	switch {
	case user && name:
		fmt.Fprintln(p.Stdout, p.Host.fs.UserName(cred.UID))
	case user:
		fmt.Fprintln(p.Stdout, cred.UID)
	case group && name:
		fmt.Fprintln(p.Stdout, p.Host.fs.GroupName(cred.GID))
	case group:
		fmt.Fprintln(p.Stdout, cred.GID)
	case all:
		words := make([]string, len(groups))
		for i, g := range groups {
			if name {
				words[i] = p.Host.fs.GroupName(g)
			} else {
				words[i] = strconv.Itoa(g)
			}
		}
		fmt.Fprintln(p.Stdout, strings.Join(words, " "))
	default:
		words := make([]string, len(groups))
		for i, g := range groups {
			words[i] = fmt.Sprintf("%d(%s)", g, p.Host.fs.GroupName(g))
		}
		fmt.Fprintf(p.Stdout, "uid=%d(%s) gid=%d(%s) groups=%s\n", cred.UID, p.Host.fs.UserName(cred.UID), cred.GID, p.Host.fs.GroupName(cred.GID), strings.Join(words, ","))
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

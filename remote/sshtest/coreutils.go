package sshtest

import (
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

// installCoreutils installs the fake programs every host has.
func installCoreutils(s *Server) {
	for name, p := range map[string]Program{
		"bash": shellProgram, "sh": shellProgram, "sudo": sudoProgram,
		"env": envProgram, "timeout": timeoutProgram, "sleep": sleepProgram,
		"cat": catProgram, "sha256sum": sha256sumProgram, "mkdir": mkdirProgram,
		"install": installProgram, "mv": mvProgram, "rm": rmProgram,
		"chmod": chmodProgram, "chown": chownProgram, "stat": statProgram,
		"mktemp": mktempProgram, "id": idProgram,
		"true": builtinProgram, "false": builtinProgram, "echo": builtinProgram,
		"printf": builtinProgram, "test": builtinProgram, "[": builtinProgram,
	} {
		s.Handle("/usr/bin/"+name, p)
	}
	for name, p := range extraCoreutils {
		s.Handle("/usr/bin/"+name, p)
	}
}

// extraCoreutils are further fakes, defined next to their tests.
var extraCoreutils = map[string]Program{}

// builtinProgram runs a program that is also a shell builtin (true, echo,
// printf, test, ...) through the shell's implementation, so that `sudo echo`
// and `env printf` behave as the coreutils binaries do.
func builtinProgram(ctx context.Context, p *Process) int {
	return p.Host.runShell(ctx, p, `"$@"`, p.Name(), append([]string{p.Name()}, p.Args[1:]...), nil)
}

func sleepProgram(ctx context.Context, p *Process) int {
	if len(p.Args) != 2 {
		return p.Fail(1, "usage: sleep SECONDS")
	}
	secs, err := strconv.ParseFloat(strings.TrimSuffix(p.Args[1], "s"), 64)
	if err != nil || secs < 0 {
		return p.Errorf("invalid time interval '%s'", p.Args[1])
	}
	t := time.NewTimer(time.Duration(secs * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-ctx.Done():
		return 143
	}
}

// envProgram: env [-i] [-u NAME] [NAME=VALUE...] [COMMAND [ARG...]].
func envProgram(ctx context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "iu:", long: []string{"ignore-environment", "unset="}}.parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	env := p.Env
	if c.has("-i", "--ignore-environment") {
		env = nil
	}
	if name, ok := c.value("-u", "--unset"); ok {
		env = unsetEnv(env, name)
	}
	args := c.operands
	for len(args) > 0 && strings.Contains(args[0], "=") {
		name, _, _ := strings.Cut(args[0], "=")
		env = append(unsetEnv(env, name), args[0])
		args = args[1:]
	}
	if len(args) == 0 {
		for _, kv := range env {
			fmt.Fprintln(p.Stdout, kv)
		}
		return 0
	}
	child := *p
	child.Env, child.Args = env, args
	return p.Host.exec(ctx, &child)
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

// timeoutProgram: timeout [-k DURATION] [-s SIGNAL] DURATION COMMAND [ARG...].
// It exits 124 when the command times out; cancelling it (a signal) ends
// the command as the real one does by signalling its process group.
func timeoutProgram(ctx context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "k:s:", long: []string{"kill-after=", "signal=", "foreground", "preserve-status"}}.parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	if len(c.operands) < 2 {
		return p.Fail(125, "missing operand")
	}
	d, err := parseDuration(c.operands[0])
	if err != nil {
		return p.Fail(125, "invalid time interval '%s'", c.operands[0])
	}
	runCtx := ctx
	if d > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	code = p.Exec(runCtx, c.operands[1:]...)
	if ctx.Err() == nil && runCtx.Err() != nil {
		return 124
	}
	return code
}

func parseDuration(s string) (time.Duration, error) {
	mult := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, mult = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, mult = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, mult = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return time.Duration(f * float64(mult)), nil
}

// catProgram: cat [FILE...]; "-" or no file reads standard input.
func catProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	files := c.operands
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		if name == "-" {
			if _, err := io.Copy(p.Stdout, p.Stdin); err != nil {
				return p.Errorf("-: %v", err)
			}
			continue
		}
		data, err := p.FS.ReadFile(name)
		if err != nil {
			status = p.Errorf("%s: %s", name, ErrMessage(err))
			continue
		}
		p.Stdout.Write(data)
	}
	return status
}

// sha256sumProgram: sha256sum [FILE...], printing "HASH  NAME" per file.
func sha256sumProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "b", long: []string{"binary"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	files := c.operands
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		h := sha256.New()
		if name == "-" {
			io.Copy(h, p.Stdin)
		} else {
			data, err := p.FS.ReadFile(name)
			if err != nil {
				status = p.Errorf("%s: %s", name, ErrMessage(err))
				continue
			}
			h.Write(data)
		}
		fmt.Fprintf(p.Stdout, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
	}
	return status
}

// mkdirProgram: mkdir [-p] [-m MODE] DIR...
func mkdirProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "pm:", long: []string{"parents", "mode="}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.operands) == 0 {
		return p.Errorf("missing operand")
	}
	mode, explicit := fs.FileMode(0o777), false
	if m, ok := c.value("-m", "--mode"); ok {
		parsed, err := parseMode(m)
		if err != nil {
			return p.Errorf("invalid mode '%s'", m)
		}
		mode, explicit = parsed, true
	}
	status := 0
	for _, dir := range c.operands {
		var err error
		if c.has("-p", "--parents") {
			err = p.FS.MkdirAll(dir, 0o777)
		} else {
			err = p.FS.Mkdir(dir, mode)
		}
		if err == nil && explicit {
			err = p.FS.Chmod(dir, mode)
		}
		if err != nil && !(c.has("-p", "--parents") && errors.Is(err, fs.ErrExist)) {
			status = p.Errorf("cannot create directory '%s': %s", dir, ErrMessage(err))
		}
	}
	return status
}

// parseMode parses an octal mode; symbolic modes are not modelled.
func parseMode(s string) (fs.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o7777 {
		return 0, fmt.Errorf("invalid mode %q", s)
	}
	m := fs.FileMode(v & 0o777)
	if v&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	if v&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if v&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	return m, nil
}

// lookupOwner parses OWNER[:GROUP] (names or numbers) into IDs; -1 means
// unchanged.
func lookupOwner(p *Process, spec string) (uid, gid int, err error) {
	owner, group, hasGroup := strings.Cut(spec, ":")
	uid, gid = -1, -1
	if owner != "" {
		if n, err := strconv.Atoi(owner); err == nil {
			uid = n
		} else if u, g, ok := p.Host.fs.LookupUser(owner); ok {
			uid = u
			if hasGroup && group == "" {
				gid = g
			}
		} else {
			return 0, 0, fmt.Errorf("invalid user: '%s'", spec)
		}
	}
	if group != "" {
		if n, err := strconv.Atoi(group); err == nil {
			gid = n
		} else if g, ok := p.Host.fs.LookupGroup(group); ok {
			gid = g
		} else {
			return 0, 0, fmt.Errorf("invalid group: '%s'", spec)
		}
	}
	return uid, gid, nil
}

// installProgram: install [-m MODE] [-o OWNER] [-g GROUP] [-T] SOURCE DEST,
// or install -d [-m MODE] [-o OWNER] [-g GROUP] DIR... As the real one, it
// writes DEST in place (it is not atomic) and sets mode and owner after.
func installProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "m:o:g:Td", long: []string{"mode=", "owner=", "group=", "no-target-directory", "directory"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	mode := fs.FileMode(0o755)
	if m, ok := c.value("-m", "--mode"); ok {
		parsed, err := parseMode(m)
		if err != nil {
			return p.Errorf("invalid mode '%s'", m)
		}
		mode = parsed
	}
	uid, gid := -1, -1
	if o, ok := c.value("-o", "--owner"); ok {
		u, _, err := lookupOwner(p, o)
		if err != nil {
			return p.Errorf("invalid user '%s'", o)
		}
		uid = u
	}
	if g, ok := c.value("-g", "--group"); ok {
		_, gg, err := lookupOwner(p, ":"+g)
		if err != nil {
			return p.Errorf("invalid group '%s'", g)
		}
		gid = gg
	}
	finish := func(name string) error {
		if err := p.FS.Chmod(name, mode); err != nil {
			return err
		}
		if uid != -1 || gid != -1 {
			return p.FS.Chown(name, uid, gid)
		}
		return nil
	}
	if c.has("-d", "--directory") {
		for _, dir := range c.operands {
			if err := p.FS.MkdirAll(dir, 0o755); err != nil {
				return p.Errorf("cannot create directory '%s': %s", dir, ErrMessage(err))
			}
			if err := finish(dir); err != nil {
				return p.Errorf("cannot change attributes of '%s': %s", dir, ErrMessage(err))
			}
		}
		return 0
	}
	if len(c.operands) != 2 {
		return p.Errorf("expected SOURCE and DEST (other forms are not modelled by sshtest)")
	}
	src, dst := c.operands[0], c.operands[1]
	if fi, err := p.FS.Stat(dst); err == nil && fi.IsDir() && !c.has("-T", "--no-target-directory") {
		dst = path.Join(dst, path.Base(src))
	}
	data, err := p.FS.ReadFile(src)
	if err != nil {
		return p.Errorf("cannot stat '%s': %s", src, ErrMessage(err))
	}
	if err := p.FS.WriteFile(dst, data, 0o600); err != nil {
		return p.Errorf("cannot create regular file '%s': %s", dst, ErrMessage(err))
	}
	if err := finish(dst); err != nil {
		return p.Errorf("cannot change attributes of '%s': %s", dst, ErrMessage(err))
	}
	return 0
}

// mvProgram: mv [-f] [-T] SOURCE DEST (rename(2), atomic on one filesystem).
func mvProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "fT", long: []string{"force", "no-target-directory"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.operands) != 2 {
		return p.Errorf("expected SOURCE and DEST (other forms are not modelled by sshtest)")
	}
	src, dst := c.operands[0], c.operands[1]
	if fi, err := p.FS.Stat(dst); err == nil && fi.IsDir() && !c.has("-T", "--no-target-directory") {
		dst = path.Join(dst, path.Base(src))
	}
	if err := p.FS.Rename(src, dst); err != nil {
		return p.Errorf("cannot move '%s' to '%s': %s", src, dst, ErrMessage(err))
	}
	return 0
}

// rmProgram: rm [-f] [-r] FILE...
func rmProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "frR", long: []string{"force", "recursive"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	force := c.has("-f", "--force")
	recursive := c.has("-r", "-R", "--recursive")
	status := 0
	for _, name := range c.operands {
		fi, err := p.FS.Lstat(name)
		if err != nil {
			if !force {
				status = p.Errorf("cannot remove '%s': %s", name, ErrMessage(err))
			}
			continue
		}
		if fi.IsDir() && !recursive {
			status = p.Errorf("cannot remove '%s': Is a directory", name)
			continue
		}
		if err := removeAll(p.FS, name); err != nil {
			status = p.Errorf("cannot remove '%s': %s", name, ErrMessage(err))
		}
	}
	return status
}

func removeAll(u *UserFS, name string) error {
	fi, err := u.Lstat(name)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		entries, err := u.ReadDir(name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := removeAll(u, path.Join(u.Abs(name), e.Name())); err != nil {
				return err
			}
		}
	}
	return u.Remove(name)
}

// chmodProgram: chmod OCTAL-MODE FILE...
func chmodProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{}.parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	if len(c.operands) < 2 {
		return p.Errorf("missing operand")
	}
	mode, err := parseMode(c.operands[0])
	if err != nil {
		return p.Errorf("invalid mode: '%s' (only octal modes are modelled by sshtest)", c.operands[0])
	}
	status := 0
	for _, name := range c.operands[1:] {
		if err := p.FS.Chmod(name, mode); err != nil {
			status = p.Errorf("changing permissions of '%s': %s", name, ErrMessage(err))
		}
	}
	return status
}

// chownProgram: chown OWNER[:GROUP] FILE...
func chownProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{}.parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	if len(c.operands) < 2 {
		return p.Errorf("missing operand")
	}
	uid, gid, err := lookupOwner(p, c.operands[0])
	if err != nil {
		return p.Errorf("%v", err)
	}
	status := 0
	for _, name := range c.operands[1:] {
		if err := p.FS.Chown(name, uid, gid); err != nil {
			status = p.Errorf("changing ownership of '%s': %s", name, ErrMessage(err))
		}
	}
	return status
}

// statProgram: stat [-L] -c FORMAT FILE... with the directives %a %u %g %U
// %G %s %n %F %Y %%.
func statProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "Lc:", long: []string{"dereference", "format="}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	format, ok := c.value("-c", "--format")
	if !ok {
		return p.Errorf("only 'stat -c FORMAT' is modelled by sshtest")
	}
	status := 0
	for _, name := range c.operands {
		var fi fs.FileInfo
		var err error
		if c.has("-L", "--dereference") {
			fi, err = p.FS.Stat(name)
		} else {
			fi, err = p.FS.Lstat(name)
		}
		if err != nil {
			status = p.Errorf("cannot statx '%s': %s", name, ErrMessage(err))
			continue
		}
		out, err := formatStat(p, format, name, fi)
		if err != nil {
			return p.Errorf("%v", err)
		}
		fmt.Fprintln(p.Stdout, out)
	}
	return status
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
			m := fi.Mode()
			v := uint32(m.Perm())
			if m&fs.ModeSticky != 0 {
				v |= 0o1000
			}
			if m&fs.ModeSetgid != 0 {
				v |= 0o2000
			}
			if m&fs.ModeSetuid != 0 {
				v |= 0o4000
			}
			b.WriteString(strconv.FormatUint(uint64(v), 8))
		case 'u':
			b.WriteString(strconv.Itoa(uid))
		case 'g':
			b.WriteString(strconv.Itoa(gid))
		case 'U':
			b.WriteString(p.Host.fs.UserName(uid))
		case 'G':
			b.WriteString(p.Host.fs.GroupName(gid))
		case 's':
			b.WriteString(strconv.FormatInt(fi.Size(), 10))
		case 'n':
			b.WriteString(name)
		case 'Y':
			b.WriteString(strconv.FormatInt(fi.ModTime().Unix(), 10))
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

// mktempProgram: mktemp [-d] [-p DIR] [TEMPLATE]; the template ends in at
// least three X characters.
func mktempProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "dp:", long: []string{"directory", "tmpdir="}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	template := "tmp.XXXXXXXXXX"
	if len(c.operands) > 0 {
		template = c.operands[0]
	}
	dir, hasDir := c.value("-p", "--tmpdir")
	switch {
	case hasDir:
		template = path.Join(dir, template)
	case !strings.Contains(template, "/"):
		tmp := p.Getenv("TMPDIR")
		if tmp == "" {
			tmp = "/tmp"
		}
		template = path.Join(tmp, template)
	}
	base := strings.TrimRight(template, "X")
	xs := len(template) - len(base)
	if xs < 3 {
		return p.Errorf("too few X's in template '%s'", template)
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for range 100 {
		suffix := make([]byte, xs)
		for i := range suffix {
			suffix[i] = letters[rand.IntN(len(letters))]
		}
		name := base + string(suffix)
		var err error
		if c.has("-d", "--directory") {
			err = p.FS.Mkdir(name, 0o700)
			if err == nil {
				err = p.FS.Chmod(name, 0o700)
			}
		} else {
			var f *File
			f, err = p.FS.OpenFile(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL, 0o600)
			if err == nil {
				f.Close()
				err = p.FS.Chmod(name, 0o600)
			}
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return p.Errorf("failed to create file via template '%s': %s", template, ErrMessage(err))
		}
		fmt.Fprintln(p.Stdout, name)
		return 0
	}
	return p.Errorf("failed to create file via template '%s': File exists", template)
}

// idProgram: id [-u|-g] [-n].
func idProgram(_ context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "ugn", long: []string{"user", "group", "name"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	cred := p.FS.Cred()
	name := c.has("-n", "--name")
	switch {
	case c.has("-u", "--user") && name:
		fmt.Fprintln(p.Stdout, p.Host.fs.UserName(cred.UID))
	case c.has("-u", "--user"):
		fmt.Fprintln(p.Stdout, cred.UID)
	case c.has("-g", "--group") && name:
		fmt.Fprintln(p.Stdout, p.Host.fs.GroupName(cred.GID))
	case c.has("-g", "--group"):
		fmt.Fprintln(p.Stdout, cred.GID)
	default:
		fmt.Fprintf(p.Stdout, "uid=%d(%s) gid=%d(%s)\n", cred.UID, p.Host.fs.UserName(cred.UID), cred.GID, p.Host.fs.GroupName(cred.GID))
	}
	return 0
}

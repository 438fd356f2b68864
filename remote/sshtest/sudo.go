package sshtest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// sudoProgram is a fake sudo with the semantics the SDK relies on:
//
//   - the policy is read from /etc/sudoers.d/USER (a line with ALL, or
//     NOPASSWD:ALL); a user without the file is not in the sudoers file;
//   - root needs no password;
//   - -n fails with "sudo: a password is required" when a password would be
//     needed, instead of waiting for one;
//   - -S reads the password from standard input one byte at a time up to a
//     newline, so the rest of standard input reaches the command; -p sets
//     the prompt (written to standard error); three wrong passwords fail;
//   - without -S and with a password needed it fails, as there is no
//     terminal;
//   - credentials are never cached, as if every call used -k;
//   - the command runs as root (or the -u user) with a reset environment
//     (PATH=secure_path, HOME, USER, LOGNAME, SHELL of the target, SUDO_*,
//     and LANG kept), or the caller's with -E (PATH still secure_path);
//   - a command that is not found is "sudo: NAME: command not found", exit
//     status 1.
func sudoProgram(ctx context.Context, p *Process) int {
	c, code, ok := OptionSpec{Short: "nSkp:u:EH", Long: []string{"non-interactive", "stdin", "reset-timestamp", "prompt=", "user=", "preserve-env", "set-home"}}.Parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 && c.Has("-k", "--reset-timestamp") {
		return 0 // nothing is cached anyway
	}
	if len(c.Operands) == 0 {
		return p.Fail(1, "usage: sudo [-nSkEH] [-p prompt] [-u user] [--] command (other forms are not modelled by sshtest)")
	}
	target := "root"
	if u, ok := c.Value("-u", "--user"); ok {
		target = u
		if strings.HasPrefix(u, "#") {
			uid, err := strconv.Atoi(u[1:])
			if name := p.Host.fs.UserName(uid); err == nil && name != u[1:] {
				target = name
			}
		}
	}
	if _, _, ok := p.Host.fs.LookupUser(target); !ok {
		return p.Fail(1, "unknown user %s", target)
	}
	if p.FS.Cred().UID != 0 {
		rule, err := p.Host.fs.ReadFile("/etc/sudoers.d/" + p.User)
		allowed := err == nil && strings.Contains(string(rule), "ALL")
		if !allowed || !strings.Contains(string(rule), "NOPASSWD") {
			// sudo authenticates before it looks the command up in
			// the policy, so a user who may not sudo is asked too.
			if code, ok := sudoAuthenticate(p, c); !ok {
				return code
			}
		}
		if !allowed {
			fmt.Fprintf(p.Stderr, "%s is not in the sudoers file.  This incident will be reported.\n", p.User)
			return 1
		}
	}
	child, err := p.As(target)
	if err != nil {
		return p.Fail(1, "unknown user %s", target)
	}
	uid, gid, _ := p.Host.fs.LookupUser(p.User)
	if c.Has("-E", "--preserve-env") {
		child.Env = append(unsetEnv(p.Env, "PATH"), "PATH="+defaultPath)
	} else {
		child.Env = []string{
			"HOME=" + p.Host.fs.homeDir(target), "LOGNAME=" + target, "PATH=" + defaultPath,
			"SHELL=/bin/bash", "USER=" + target,
		}
		for _, key := range []string{"LANG", "LANGUAGE", "LC_ALL", "TERM"} {
			if v, ok := lookupEnv(p.Env, key); ok {
				child.Env = append(child.Env, key+"="+v)
			}
		}
	}
	command := c.Operands[0]
	if file, _, e := p.Host.lookPath(child, command); e == nil {
		command = file
	}
	child.Env = append(child.Env,
		"SUDO_COMMAND="+strings.Join(append([]string{command}, c.Operands[1:]...), " "),
		"SUDO_GID="+strconv.Itoa(gid), "SUDO_UID="+strconv.Itoa(uid), "SUDO_USER="+p.User,
	)
	slices.Sort(child.Env)
	child.Args = c.Operands
	return p.Host.start(ctx, child, func(e *execError) int {
		if e.err == errBinary {
			return p.Fail(1, "unable to execute %s: Exec format error", e.name)
		}
		return p.Fail(1, "%s: command not found", c.Operands[0])
	})
}

// sudoAuthenticate asks for the invoking user's password as sudo does
// without a terminal. It returns false with the exit status when it fails.
func sudoAuthenticate(p *Process, c CommandLine) (int, bool) {
	if c.Has("-n", "--non-interactive") {
		fmt.Fprintln(p.Stderr, "sudo: a password is required")
		return 1, false
	}
	if !c.Has("-S", "--stdin") {
		fmt.Fprintln(p.Stderr, "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper")
		fmt.Fprintln(p.Stderr, "sudo: a password is required")
		return 1, false
	}
	user, _ := p.Host.user(p.User)
	prompt, ok := c.Value("-p", "--prompt")
	if !ok {
		prompt = fmt.Sprintf("[sudo] password for %s: ", p.User)
	}
	for attempt := 1; attempt <= 3; attempt++ {
		fmt.Fprint(p.Stderr, prompt)
		line, eof := readLine(p)
		if eof && line == "" {
			switch attempt {
			case 1:
				fmt.Fprintln(p.Stderr, "sudo: no password was provided")
			case 2:
				fmt.Fprintln(p.Stderr, "sudo: 1 incorrect password attempt")
			default:
				fmt.Fprintf(p.Stderr, "sudo: %d incorrect password attempts\n", attempt-1)
			}
			return 1, false
		}
		if user.Password != "" && line == user.Password {
			return 0, true
		}
		if attempt < 3 {
			fmt.Fprintln(p.Stderr, "Sorry, try again.")
		}
	}
	fmt.Fprintln(p.Stderr, "sudo: 3 incorrect password attempts")
	return 1, false
}

// readLine reads up to a newline one byte at a time, leaving the rest of
// standard input unread.
func readLine(p *Process) (string, bool) {
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := p.Stdin.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return b.String(), false
			}
			b.WriteByte(buf[0])
		}
		if err != nil {
			return b.String(), true
		}
	}
}

package sshtest

import (
	"context"
	"fmt"
	"strings"
)

// sudoProgram is a fake sudo with the semantics the SDK relies on:
//
//   - the policy is read from /etc/sudoers.d/USER (ALL, or NOPASSWD:ALL);
//   - -n fails with "sudo: a password is required" when a password would be
//     needed, instead of waiting for one;
//   - -S reads the password from standard input one byte at a time up to a
//     newline, so the rest of standard input reaches the command; -p sets
//     the prompt (written to standard error); three wrong passwords fail;
//   - without -S and with a password needed it fails, as there is no
//     terminal;
//   - credentials are never cached, as if every call used -k;
//   - the command runs as root with a reset environment (PATH=secure_path,
//     HOME=/root, SUDO_USER...), or the caller's with -E.
func sudoProgram(ctx context.Context, p *Process) int {
	c, code, ok := optionSpec{short: "nSkp:u:EH", long: []string{"non-interactive", "stdin", "reset-timestamp", "prompt=", "user=", "preserve-env"}}.parse(p, p.Args[1:], true)
	if !ok {
		return code
	}
	if len(c.operands) == 0 {
		return p.Fail(1, "usage: sudo [-nSkEH] [-p prompt] [-u user] [--] command")
	}
	target := "root"
	if u, ok := c.value("-u", "--user"); ok {
		target = u
	}
	if p.FS.Cred().UID != 0 {
		rule, err := p.Host.fs.ReadFile("/etc/sudoers.d/" + p.User)
		if err != nil {
			fmt.Fprintf(p.Stderr, "%s is not in the sudoers file.  This incident will be reported.\n", p.User)
			return 1
		}
		if !strings.Contains(string(rule), "NOPASSWD") {
			if code, ok := sudoAuthenticate(p, c); !ok {
				return code
			}
		}
	}
	child, err := p.As(target)
	if err != nil {
		return p.Fail(1, "unknown user %s", target)
	}
	if !c.has("-E", "--preserve-env") {
		home := "/home/" + target
		if target == "root" {
			home = "/root"
		}
		child.Env = []string{
			"PATH=" + defaultPath, "HOME=" + home, "USER=" + target, "LOGNAME=" + target,
			"SHELL=/bin/bash", "SUDO_USER=" + p.User, "SUDO_COMMAND=" + strings.Join(c.operands, " "),
		}
		if lang := p.Getenv("LANG"); lang != "" {
			child.Env = append(child.Env, "LANG="+lang)
		}
	}
	child.Args = c.operands
	return p.Host.exec(ctx, child)
}

// sudoAuthenticate asks for the invoking user's password as sudo does
// without a terminal. It returns false with the exit status when it fails.
func sudoAuthenticate(p *Process, c cmdline) (int, bool) {
	if c.has("-n", "--non-interactive") {
		fmt.Fprintln(p.Stderr, "sudo: a password is required")
		return 1, false
	}
	if !c.has("-S", "--stdin") {
		fmt.Fprintln(p.Stderr, "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper")
		fmt.Fprintln(p.Stderr, "sudo: a password is required")
		return 1, false
	}
	user, _ := p.Host.user(p.User)
	prompt, ok := c.value("-p", "--prompt")
	if !ok {
		prompt = fmt.Sprintf("[sudo] password for %s: ", p.User)
	}
	for attempt := 1; attempt <= 3; attempt++ {
		fmt.Fprint(p.Stderr, prompt)
		line, eof := readLine(p)
		if eof && line == "" {
			fmt.Fprintln(p.Stderr, "sudo: no password was provided")
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

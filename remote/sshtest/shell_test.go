package sshtest

import (
	"context"
	"strings"
	"testing"
)

func TestShellOperators(t *testing.T) {
	h := newHost(t)
	for _, tc := range []struct {
		name, cmd      string
		stdout, stderr string
		code           int
	}{
		{"pipe", "printf 'b\\na\\nb\\n' | sort | uniq -c", "      1 a\n      2 b\n", "", 0},
		{"pipe status is the last command's", "false | true", "", "", 0},
		{"and", "true && echo yes; false && echo no", "yes\n", "", 1},
		{"or", "false || echo fallback; true || echo no", "fallback\n", "", 0},
		{"redirect out and append", "echo one > f; echo two >> f; cat f", "one\ntwo\n", "", 0},
		{"redirect truncates", "echo long-line > f; echo s > f; cat f", "s\n", "", 0},
		{"stderr to /dev/null", "cat /nope 2>/dev/null; echo $?", "1\n", "", 0},
		{"stderr to stdout", "cat /nope 2>&1", "cat: /nope: No such file or directory\n", "", 1},
		{"stdout to stderr", "echo oops >&2", "", "oops\n", 0},
		{"/dev/stderr by name", "echo oops > /dev/stderr", "", "oops\n", 0},
		{"/dev/stdout by name", "echo ok > /dev/stdout", "ok\n", "", 0},
		{"redirect in", "printf 'x\\ny\\n' > in; wc -l < in", "2\n", "", 0},
		{"both to a file", "{ echo out; echo err >&2; } > both 2>&1; cat both", "out\nerr\n", "", 0},
		{"/dev/null reads empty", "cat < /dev/null | wc -c", "0\n", "", 0},
		{"exit status", "exit 3", "", "", 3},
		{"status variable", "sh -c 'exit 7'; echo $?", "7\n", "", 0},
		{"negation", "! false && echo negated", "negated\n", "", 0},
		{"subshell keeps directory", "(cd /tmp && pwd); pwd", "/tmp\n/home/alice\n", "", 0},
		{"functions", "f() { echo \"in f: $1\"; return 4; }; f arg; echo $?", "in f: arg\n4\n", "", 0},
		{"command substitution", "echo \"[$(echo inner | tr a-z A-Z)]\"", "[INNER]\n", "", 0},
		{"trap on exit", "trap 'echo cleanup' EXIT; echo body", "body\ncleanup\n", "", 0},
		{"environment reaches programs", "export GREETING=hi; env | grep GREETING", "GREETING=hi\n", "", 0},
		{"unexported stays in the shell", "LOCAL=1; env | grep -c LOCAL", "0\n", "", 1},
		{"assignment prefix", "GREETING=once env | grep GREETING; env | grep -c GREETING", "GREETING=once\n0\n", "", 1},
		{"working directory reaches programs", "mkdir -p d/e && cd d && ls", "e\n", "", 0},
		{"login environment", "echo $HOME $USER $LOGNAME $SHELL $PWD; echo $PATH", "/home/alice alice alice /bin/bash /home/alice\n" + defaultPath + "\n", "", 0},
	} {
		got := h.sh(tc.cmd)
		want(t, tc.name, got, tc.stdout, tc.stderr, tc.code)
	}
}

func TestShellErrexitNounsetPipefail(t *testing.T) {
	h := newHost(t)
	for _, tc := range []struct {
		name, cmd      string
		stdout, stderr string
		code           int
	}{
		{"errexit stops", "set -e; echo a; false; echo b", "a\n", "", 1},
		{"errexit spares conditions", "set -e; if false; then :; fi; false || true; ! true; echo reached", "reached\n", "", 0},
		{"errexit stops at a failed program", "set -e; cat /nope; echo b", "", "cat: /nope: No such file or directory\n", 1},
		{"errexit keeps the status", "set -e; sh -c 'exit 9'; echo b", "", "", 9},
		// bash says "bash: line 1: UNSET_VAR: unbound variable": the
		// interpreter words its own errors.
		{"nounset", "set -u; echo \"$UNSET_VAR\"; echo b", "", "UNSET_VAR: unbound variable\n", 1},
		{"nounset spares defaults", "set -u; echo \"${UNSET_VAR:-default}\"", "default\n", "", 0},
		{"without pipefail", "set -e; false | true; echo reached", "reached\n", "", 0},
		{"pipefail", "set -eo pipefail; false | true; echo not-reached", "", "", 1},
		{"pipefail status is the last failure", "set -o pipefail; sh -c 'exit 3' | sh -c 'exit 4' | true; echo $?", "4\n", "", 0},
		{"the usual preamble", "set -euo pipefail\ngrep -q missing /etc/hostname | cat\necho not-reached", "", "", 1},
		{"bash options on the command line", "bash -euo pipefail -c 'false | true; echo no'", "", "", 1},
		{"-e as an option", "bash -e -c 'false; echo no'; echo $?", "1\n", "", 0},
	} {
		got := h.sh(tc.cmd)
		want(t, tc.name, got, tc.stdout, tc.stderr, tc.code)
	}
}

func TestShellTestsAndGlobs(t *testing.T) {
	h := newHost(t)
	fs := h.FS()
	for name, perm := range map[string]uint32{"/srv/app/run.sh": 0o755, "/srv/app/conf.yaml": 0o644, "/srv/app/data.yaml": 0o600, "/srv/app/.hidden.yaml": 0o644} {
		if err := fs.WriteFile(name, []byte("x"), fileModeOf(perm)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, cmd, stdout string
		code              int
	}{
		{"test -f", "test -f /srv/app/conf.yaml && [ ! -f /srv/app ] && echo ok", "ok\n", 0},
		{"test -d", "[ -d /srv/app ] && [ -d /bin ] && ! [ -d /srv/app/run.sh ] && echo ok", "ok\n", 0},
		{"test -x", "[ -x /srv/app/run.sh ] && ! [ -x /srv/app/conf.yaml ] && [ -x /usr/bin/cat ] && echo ok", "ok\n", 0},
		{"test -e and -L", "[ -e /bin/cat ] && [ -L /bin ] && ! [ -L /usr/bin ] && ! [ -e /nope ] && echo ok", "ok\n", 0},
		{"test -r as alice", "[ -r /srv/app/conf.yaml ] && ! [ -r /srv/app/data.yaml ] && ! [ -w /etc/passwd ] && echo ok", "ok\n", 0},
		{"test -s", "[ -s /srv/app/conf.yaml ] && ! [ -s /dev/null ] && echo ok", "ok\n", 0},
		{"[[ ]]", "[[ -f /srv/app/conf.yaml && /srv/app == /srv/* ]] && echo ok", "ok\n", 0},
		{"glob", "echo /srv/app/*.yaml", "/srv/app/conf.yaml /srv/app/data.yaml\n", 0},
		{"glob with a directory part", "cd /srv && echo */*.sh", "app/run.sh\n", 0},
		{"glob without a match stays", "echo /srv/app/*.json", "/srv/app/*.json\n", 0},
		{"glob in a loop", "for f in /srv/app/*; do basename \"$f\"; done", "conf.yaml\ndata.yaml\nrun.sh\n", 0},
		{"dotglob", "shopt -s dotglob; echo /srv/app/.h*", "/srv/app/.hidden.yaml\n", 0},
		{"glob of an unreadable directory", "echo /root/*", "/root/*\n", 0},
	} {
		got := h.sh(tc.cmd)
		want(t, tc.name, got, tc.stdout, "", tc.code)
	}
}

func TestShellCommandLookup(t *testing.T) {
	h := newHost(t)
	fs := h.FS()
	must(fs.WriteFile("/opt/tools/noexec", []byte("echo hi\n"), 0o644))
	must(fs.WriteFile("/opt/tools/blob", []byte("\x00\x01\x02binary"), 0o755))
	must(fs.WriteFile("/opt/tools/hello.sh", []byte("#!/bin/bash\necho \"hello from $0 with $# args: $*\"\n"), 0o755))
	must(fs.WriteFile("/opt/tools/env.sh", []byte("#!/usr/bin/env bash\necho via env\n"), 0o755))
	must(fs.WriteFile("/opt/tools/plain", []byte("echo plain text script $1\n"), 0o755))
	must(fs.WriteFile("/opt/tools/badinterp", []byte("#!/no/such/shell\necho\n"), 0o755))
	must(fs.WriteFile("/opt/tools/strict.sh", []byte("#!/bin/bash -e\nfalse\necho not reached\n"), 0o755))
	for _, tc := range []struct {
		name, cmd      string
		stdout, stderr string
		code           int
	}{
		{"command -v", "command -v cat ls echo if; command -v nosuch || echo missing", "/usr/bin/cat\n/usr/bin/ls\necho\nif\nmissing\n", "", 0},
		{"command -v status", "command -v nosuch other-nosuch; echo $?; command -v nosuch cat; echo $?", "1\n/usr/bin/cat\n0\n", "", 0},
		{"command -v follows the fake PATH", "PATH=/opt/tools command -v hello.sh cat; echo $?", "/opt/tools/hello.sh\n0\n", "", 0},
		{"command -v with a path", "command -v /opt/tools/hello.sh /opt/tools/noexec /bin/cat", "/opt/tools/hello.sh\n/bin/cat\n", "", 0},
		{"command -V", "command -V cat echo if nosuch", "cat is /usr/bin/cat\necho is a shell builtin\nif is a shell keyword\n", "bash: line 1: command: nosuch: not found\n", 0},
		{"type", "type cat echo; type -t cat echo for; type -p cat echo; type -P echo", "cat is /usr/bin/cat\necho is a shell builtin\nfile\nbuiltin\nkeyword\n/usr/bin/cat\n/usr/bin/echo\n", "", 0},
		{"type of nothing", "type nosuch", "", "bash: line 1: type: nosuch: not found\n", 1},
		{"hash", "hash cat && hash nosuch", "", "bash: line 1: hash: nosuch: not found\n", 1},
		{"command runs a program", "command echo hi", "hi\n", "", 0},
		{"not found", "nosuch arg", "", "bash: line 1: nosuch: command not found\n", 127},
		{"not found on a later line", "true\n\nnosuch", "", "bash: line 3: nosuch: command not found\n", 127},
		{"not found in a nested shell", "bash -c 'echo; nosuch'", "\n", "bash: line 1: nosuch: command not found\n", 127},
		{"missing path", "/opt/tools/nosuch", "", "bash: line 1: /opt/tools/nosuch: No such file or directory\n", 127},
		{"not executable", "/opt/tools/noexec", "", "bash: line 1: /opt/tools/noexec: Permission denied\n", 126},
		{"not executable on PATH", "PATH=/opt/tools noexec", "", "bash: line 1: /opt/tools/noexec: Permission denied\n", 126},
		{"a directory", "/opt/tools", "", "bash: line 1: /opt/tools: Is a directory\n", 126},
		{"binary without a program", "/opt/tools/blob", "", "bash: line 1: /opt/tools/blob: cannot execute binary file: Exec format error\n", 126},
		{"through a missing directory", "/opt/nope/x", "", "bash: line 1: /opt/nope/x: No such file or directory\n", 127},
		{"unsearchable directory", "/root/x", "", "bash: line 1: /root/x: Permission denied\n", 126},
		{"a #! script", "/opt/tools/hello.sh a b", "hello from /opt/tools/hello.sh with 2 args: a b\n", "", 0},
		{"a #! script on PATH", "PATH=/opt/tools:/usr/bin hello.sh x", "hello from /opt/tools/hello.sh with 1 args: x\n", "", 0},
		{"#!/usr/bin/env", "/opt/tools/env.sh", "via env\n", "", 0},
		{"#! with an option", "/opt/tools/strict.sh", "", "", 1},
		{"a text file without #!", "/opt/tools/plain arg", "plain text script arg\n", "", 0},
		{"a bad interpreter", "/opt/tools/badinterp", "", "bash: line 1: /opt/tools/badinterp: /no/such/shell: bad interpreter: No such file or directory\n", 126},
		{"/bin is /usr/bin", "/bin/echo via-bin && /usr/bin/echo via-usr-bin", "via-bin\nvia-usr-bin\n", "", 0},
		{"a copied program", "cp /usr/bin/echo ./myecho && ./myecho copied", "copied\n", "", 0},
		{"bash -c with $0 and parameters", "bash -c 'echo \"$0|$1|$2|$#\"' name a 'b c'", "name|a|b c|2\n", "", 0},
		{"bash -c without a name", "bash -c 'echo $0 $#'", "bash 0\n", "", 0},
		{"sh -c", "sh -c 'echo \"$@\"' sh x y", "x y\n", "", 0},
		{"bash -s with parameters", "echo 'echo \"$1-$2\"' | bash -s p q", "p-q\n", "", 0},
		{"bash reading a script from stdin", "printf 'echo from stdin\\nexit 5\\n' | bash", "from stdin\n", "", 5},
		{"bash SCRIPT ARGS", "echo 'echo \"$0 $1\"' > s.sh; bash s.sh arg", "s.sh arg\n", "", 0},
		{"bash with a missing script", "bash nope.sh", "", "bash: nope.sh: No such file or directory\n", 127},
		{"bash with an unmodelled option", "bash -i -c true", "", "bash: -i: invalid option (not modelled by sshtest)\n", 2},
		{"a syntax error", "true\necho 'unterminated", "", "bash: line 2: syntax error: reached EOF without closing quote `'`\n", 2},
	} {
		got := h.sh(tc.cmd)
		want(t, tc.name, got, tc.stdout, tc.stderr, tc.code)
	}
}

func TestShellHeredocs(t *testing.T) {
	h := newHost(t)
	for _, tc := range []struct{ name, cmd, stdout string }{
		{"expanding", "X=v\ncat <<EOF\nx is $X\n$(echo sub)\nEOF", "x is v\nsub\n"},
		{"quoted delimiter", "cat <<'EOF'\nliteral $X `cmd`\nEOF", "literal $X `cmd`\n"},
		{"tab-stripping", "cat <<-EOF\n\t\tindented\n\tEOF", "indented\n"},
		{"to a file", "cat > conf <<EOF\nkey=value\nEOF\ncat conf", "key=value\n"},
		{"into a pipeline", "cat <<EOF | grep b\na\nb\nEOF", "b\n"},
		{"here-string", "tr a-z A-Z <<< hello", "HELLO\n"},
		{"into sudo", "sudo tee /etc/motd >/dev/null <<EOF\nwelcome\nEOF\ncat /etc/motd", "welcome\n"},
	} {
		got := h.sh(tc.cmd)
		wantOK(t, tc.name, got, tc.stdout)
	}
}

func TestShellStdin(t *testing.T) {
	h := newHost(t)
	wantOK(t, "stdin reaches the command", h.sh("cat", "from the client"), "from the client")
	wantOK(t, "stdin is shared along the script", h.sh("read first; echo \"first=$first\"; cat", "line1\nline2\nline3\n"), "first=line1\nline2\nline3\n")
	wantOK(t, "stdin reaches a nested shell", h.sh("bash -c 'cat | wc -l'", "a\nb\n"), "2\n")
	wantOK(t, "stdin reaches sudo's command", h.sh("sudo cat", "x"), "x")

	// A command that does not read its input ends even though the client
	// never closes it, as with sshd.
	sess, err := h.client("alice").NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if out, err := sess.Output("echo done"); string(out) != "done\n" || err != nil {
		t.Errorf("with stdin left open: %q, %v", out, err)
	}
}

func TestShellBashStyleErrors(t *testing.T) {
	h := newHost(t)
	for _, tc := range []struct {
		name, cmd, stderr string
		code              int
	}{
		{"redirect into a read-only directory", "echo x > /etc/x", "bash: line 1: /etc/x: Permission denied\n", 1},
		{"redirect from a missing file", "cat < /nope", "bash: line 1: /nope: No such file or directory\n", 1},
		{"redirect to a directory", "echo x > /tmp", "bash: line 1: /tmp: Is a directory\n", 1},
		{"the line of the redirection", "echo a >/dev/null\necho b >/dev/null\necho c > /etc/x", "bash: line 3: /etc/x: Permission denied\n", 1},
		{"cd into a missing directory", "cd /nope", "bash: line 1: cd: /nope: No such file or directory\n", 1},
		{"cd into a file", "cd /etc/hostname", "bash: line 1: cd: /etc/hostname: Not a directory\n", 1},
		{"cd into a closed directory", "cd /root", "bash: line 1: cd: /root: Permission denied\n", 1},
		{"kill", "kill 4242", "bash: line 1: kill: (4242) - No such process\n", 1},
		{"kill a job", "kill -9 %1", "bash: line 1: kill: %1: no such job\n", 1},
		{"umask out of range", "umask 999", "bash: line 1: umask: 999: octal number out of range\n", 1},
	} {
		got := h.sh(tc.cmd)
		want(t, tc.name, got, "", tc.stderr, tc.code)
	}
	// The redirection error unwraps to the errno, for handlers.
	got := h.sh("set -e; echo x > /etc/x; echo not-reached")
	want(t, "a failed redirection under set -e", got, "", "bash: line 1: /etc/x: Permission denied\n", 1)
}

func TestShellBuiltinsOfTheFakeHost(t *testing.T) {
	h := newHost(t)
	for _, tc := range []struct{ name, cmd, stdout string }{
		{"umask", "umask; umask -S; umask -p", "0022\nu=rwx,g=rx,o=rx\numask 0022\n"},
		{"umask applies to redirections and programs", "umask 077; echo > f; mkdir d; touch t; stat -c '%a %n' f d t", "600 f\n700 d\n600 t\n"},
		{"symbolic umask", "umask u=rwx,g=rx,o=; umask", "0027\n"},
		{"umask reaches a nested shell", "umask 027; bash -c umask", "0027\n"},
		{"pwd -P resolves links", "cd /bin && pwd && pwd -P", "/bin\n/usr/bin\n"},
		{"cd follows links", "cd /bin/../etc && pwd", "/etc\n"},
		{"cd -", "cd /tmp; cd /etc; cd - >/dev/null; pwd", "/tmp\n"},
		{"cd home", "cd /tmp; cd; pwd", "/home/alice\n"},
	} {
		got := h.sh(tc.cmd)
		wantOK(t, tc.name, got, tc.stdout)
	}
	// Builtins are not program calls.
	h.ResetTranscript()
	h.sh("command -v cat; type cat; umask; echo; printf x; test -f /etc/hostname")
	if calls := h.Calls(); len(calls) != 0 {
		t.Errorf("builtins recorded as calls: %+v", calls)
	}
}

func TestShellRunsAsUser(t *testing.T) {
	h := newHost(t)
	got := h.run("carol", "id -un; touch /tmp/c; stat -c '%U %G %a' /tmp/c; touch /etc/c")
	want(t, "carol's identity", got, "carol\ncarol carol 644\n", "touch: cannot touch '/etc/c': Permission denied\n", 1)
	got = h.run("root", "cd; pwd; id -u; touch /etc/c && stat -c %U /etc/c")
	wantOK(t, "root's identity", got, "/root\n0\nroot\n")
}

// TestShellCancel ends a long command by cancelling its context directly.
func TestShellCancel(t *testing.T) {
	s := Start(t, Config{Users: []User{{Name: "root", Password: rootPW}}})
	started := make(chan struct{})
	s.Handle("/usr/local/bin/block", func(ctx context.Context, p *Process) int {
		close(started)
		<-ctx.Done()
		return 143
	})
	p, err := s.login("root")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p.Stdin, p.Stdout, p.Stderr = strings.NewReader(""), &out, &out
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- s.runShell(ctx, p, "block; echo after", "bash", nil, nil) }()
	<-started
	cancel()
	if code := <-done; code != 143 || out.String() != "" {
		t.Errorf("cancelled script: %d, %q", code, out.String())
	}
}

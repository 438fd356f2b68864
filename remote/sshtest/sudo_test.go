package sshtest

import (
	"slices"
	"strings"
	"testing"
)

func TestSudo(t *testing.T) {
	h := newHost(t)
	for _, tc := range []struct {
		name, user, cmd, stdin string
		stdout, stderr         string
		code                   int
	}{
		{"NOPASSWD", "alice", "sudo id -u", "", "0\n", "", 0},
		{"NOPASSWD with -n", "alice", "sudo -n -- id -un", "", "root\n", "", 0},
		{"NOPASSWD does not read stdin", "alice", "sudo -S cat", "not a password\n", "not a password\n", "", 0},
		{"root needs no password", "root", "sudo -n id -un", "", "root\n", "", 0},
		{"password with -S", "bob", "sudo -S id -un", bobPW + "\n", "root\n", "[sudo] password for bob: ", 0},
		{"password with -S and an empty prompt", "bob", "sudo -S -p '' id -un", bobPW + "\n", "root\n", "", 0},
		{"password on a later try", "bob", "sudo -S -p 'pw: ' id -un", "wrong\n" + bobPW + "\n", "root\n", "pw: Sorry, try again.\npw: ", 0},
		{"the rest of stdin reaches the command", "bob", "printf '" + bobPW + "\\nDATA' | sudo -S -p '' cat", "", "DATA", "", 0},
		{"stdin bytes after the password line", "bob", "sudo -S -p '' wc -c", bobPW + "\nabc\n", "4\n", "", 0},
		{"-n fails for a password user", "bob", "sudo -n true", "", "", "sudo: a password is required\n", 1},
		{"no terminal", "bob", "sudo true", "", "", "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper\nsudo: a password is required\n", 1},
		{"wrong password thrice", "bob", "sudo -S -p '' true", "a\nb\nc\nd\n", "", "Sorry, try again.\nSorry, try again.\nsudo: 3 incorrect password attempts\n", 1},
		{"no password at all", "bob", "sudo -S -p '' true", "", "", "sudo: no password was provided\n", 1},
		{"input ends after a wrong one", "bob", "sudo -S -p '' true", "wrong\n", "", "Sorry, try again.\nsudo: 1 incorrect password attempt\n", 1},
		{"not in sudoers", "carol", "sudo -S -p '' true", carolPW + "\n", "", "carol is not in the sudoers file.  This incident will be reported.\n", 1},
		{"not in sudoers, -n", "carol", "sudo -n true", "", "", "sudo: a password is required\n", 1},
		{"-u", "alice", "sudo -u bob id -un; sudo -u bob touch /tmp/by-bob; stat -c %U /tmp/by-bob", "", "bob\nbob\n", "", 0},
		{"-u unknown", "alice", "sudo -u mallory true", "", "", "sudo: unknown user mallory\n", 1},
		{"command not found", "alice", "sudo nosuch", "", "", "sudo: nosuch: command not found\n", 1},
		{"a path not found", "alice", "sudo /opt/nosuch", "", "", "sudo: /opt/nosuch: command not found\n", 1},
		{"status of the command", "alice", "sudo sh -c 'exit 7'", "", "", "", 7},
		{"keeps the directory", "alice", "cd /tmp && sudo pwd", "", "/tmp\n", "", 0},
		{"sudo -k alone", "bob", "sudo -k", "", "", "", 0},
		{"no command", "alice", "sudo", "", "", "sudo: usage: sudo [-nSkEH] [-p prompt] [-u user] [--] command (other forms are not modelled by sshtest)\n", 1},
		{"an unmodelled option", "alice", "sudo -i true", "", "", "sudo: invalid option -- 'i' (not modelled by sshtest)\n", 2},
		{"root writes where the user may not", "alice", "echo x | sudo tee /etc/owned > /dev/null && stat -c '%U %a' /etc/owned", "", "root 644\n", "", 0},
	} {
		got := h.run(tc.user, tc.cmd, tc.stdin)
		want(t, tc.name, got, tc.stdout, tc.stderr, tc.code)
	}
}

func TestSudoEnvironment(t *testing.T) {
	h := newHost(t)
	got := h.sh("export SECRET_TOKEN=x LANG=C.UTF-8; sudo env")
	wantOK(t, "reset environment", got, strings.Join([]string{
		"HOME=/root", "LANG=C.UTF-8", "LOGNAME=root", "PATH=" + defaultPath, "SHELL=/bin/bash",
		"SUDO_COMMAND=/usr/bin/env", "SUDO_GID=1000", "SUDO_UID=1000", "SUDO_USER=alice", "USER=root",
	}, "\n")+"\n")
	got = h.sh("export SECRET_TOKEN=x; sudo -E env | grep -E '^(SECRET_TOKEN|USER|HOME)='")
	wantOK(t, "-E keeps the caller's environment", got, "HOME=/home/alice\nSECRET_TOKEN=x\nUSER=alice\n")
	got = h.sh("sudo -u bob env | grep -E '^(HOME|USER)='")
	wantOK(t, "-u sets the target's home", got, "HOME=/home/bob\nUSER=bob\n")
	got = h.sh("PATH=/nowhere; /usr/bin/sudo printenv-nope 2>&1; /usr/bin/sudo sh -c 'echo $PATH'")
	wantOK(t, "secure_path", got, "sudo: printenv-nope: command not found\n"+defaultPath+"\n")
}

func TestSudoTranscript(t *testing.T) {
	h := newHost(t)
	wantOK(t, "cat", h.run("bob", "sudo -S -k -p '' -- cat", bobPW+"\npayload"), "payload")
	wantOK(t, "id", h.run("bob", "sudo -S -p '' id -u", bobPW+"\n"), "0\n")
	calls := h.Calls()
	var users []string
	for _, c := range calls {
		for _, a := range c.Args {
			if strings.Contains(a, bobPW) {
				t.Errorf("the password is in the args of %+v", c)
			}
		}
		users = append(users, c.User+":"+c.Args[0])
	}
	wantUsers := []string{"bob:sudo", "root:cat", "bob:sudo", "root:id"}
	if !slices.Equal(users, wantUsers) {
		t.Errorf("calls %v, want %v", users, wantUsers)
	}
	for _, e := range h.Transcript() {
		if strings.Contains(e.Command, bobPW) {
			t.Errorf("the password is in the transcript: %q", e.Command)
		}
	}
	if ids := h.CallsTo("id"); len(ids) != 1 || ids[0].User != "root" || ids[0].Exit != 0 {
		t.Errorf("CallsTo(id) = %+v", ids)
	}
}

func TestSudoPolicyFromFile(t *testing.T) {
	h := newHost(t)
	// The policy is the file: removing it takes alice out of sudoers,
	// writing one makes carol a NOPASSWD user.
	if err := h.FS().Remove("/etc/sudoers.d/alice"); err != nil {
		t.Fatal(err)
	}
	if err := h.FS().WriteFile("/etc/sudoers.d/carol", []byte("carol ALL=(ALL) NOPASSWD:ALL\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	want(t, "alice without a rule", h.run("alice", "sudo -S -p '' true", alicePW+"\n"), "", "alice is not in the sudoers file.  This incident will be reported.\n", 1)
	wantOK(t, "carol with a rule", h.run("carol", "sudo -n id -u"), "0\n")
}

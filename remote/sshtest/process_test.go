package sshtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

func TestProcessAPI(t *testing.T) {
	h := newHost(t)
	// A wrapper, as a fake such as nohup or xargs would be.
	h.Handle("/usr/local/bin/wrap", func(ctx context.Context, p *Process) int {
		if len(p.Args) < 2 {
			return p.Fail(64, "usage: wrap COMMAND")
		}
		fmt.Fprintf(p.Stdout, "%s in %s as %s, MARK=%s\n", p.Name(), p.Dir, p.User, p.Getenv("MARK"))
		return p.Exec(ctx, p.Args[1:]...)
	})
	h.Handle("/usr/local/bin/asbob", func(ctx context.Context, p *Process) int {
		child, err := p.As("bob")
		if err != nil {
			return p.Errorf("%v", err)
		}
		if _, err := p.As("mallory"); err == nil {
			return p.Errorf("As found mallory")
		}
		return child.Exec(ctx, "id", "-un")
	})
	h.Handle("/usr/local/bin/boom", func(context.Context, *Process) int { panic("kaput") })
	h.Handle("/usr/local/bin/fserr", func(_ context.Context, p *Process) int {
		_, err := p.FS.ReadFile("/root/x")
		return p.Errorf("%s", ErrMessage(err))
	})
	runCases(t, h, "alice", []fakeCase{
		{"Exec", "cd /tmp && MARK=m wrap sh -c 'echo $MARK; exit 3'", "wrap in /tmp as alice, MARK=m\nm\n", "", 3},
		{"Exec of a missing program", "wrap nosuch", "wrap in /home/alice as alice, MARK=\n", "wrap: nosuch: No such file or directory\n", 127},
		{"Exec of a non-executable file", "wrap /etc/hostname", "wrap in /home/alice as alice, MARK=\n", "wrap: /etc/hostname: Permission denied\n", 126},
		{"Fail", "wrap", "", "wrap: usage: wrap COMMAND\n", 64},
		{"As", "asbob", "bob\n", "", 0},
		{"a panicking program", "boom", "", "sshtest: fake program boom panicked: kaput\n", 70},
		{"ErrMessage", "fserr", "", "fserr: Permission denied\n", 1},
	})
	calls := h.CallsTo("id")
	if len(calls) != 1 || calls[0].User != "bob" {
		t.Errorf("the child of As ran as %+v", calls)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, "No such file or directory"},
		{fmt.Errorf("wrapped: %w", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}), "Permission denied"},
		{syscall.ENOTEMPTY, "Directory not empty"},
		{errors.New("custom"), "Custom"},
		{nil, ""},
		{&fs.PathError{Op: "open", Path: "/x", Err: errors.New("")}, ""},
	} {
		if got := ErrMessage(tc.err); got != tc.want {
			t.Errorf("ErrMessage(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestRegisterAndHandle(t *testing.T) {
	h := newHost(t)
	// Registered, not installed: not found until a file appears, as
	// when a package manager installs the program.
	h.Register("/usr/sbin/exportfs", func(_ context.Context, p *Process) int {
		fmt.Fprintln(p.Stdout, "exported")
		return 0
	})
	want(t, "before install", h.sh("sudo exportfs -ra"), "", "sudo: exportfs: command not found\n", 1)
	must(h.FS().WriteFile("/usr/sbin/exportfs", []byte("#!/bin/sh\necho not this\n"), 0o755))
	wantOK(t, "after install", h.sh("sudo exportfs -ra; sudo /sbin/exportfs"), "exported\nexported\n")

	// Handle replaces the program and leaves an existing file alone.
	h.Handle("/usr/bin/cat", func(_ context.Context, p *Process) int {
		fmt.Fprintln(p.Stdout, "replaced cat")
		return 0
	})
	wantOK(t, "replaced", h.sh("cat /etc/hostname; /bin/cat"), "replaced cat\nreplaced cat\n")

	// Registered through a link: /bin/x is /usr/bin/x.
	h.Handle("/bin/viabin", func(_ context.Context, p *Process) int {
		fmt.Fprintln(p.Stdout, "via bin")
		return 0
	})
	wantOK(t, "through /bin", h.sh("viabin && /usr/bin/viabin && ls /usr/bin/viabin"), "via bin\nvia bin\n/usr/bin/viabin\n")

	defer func() {
		if recover() == nil {
			t.Error("Register accepted a relative path")
		}
	}()
	h.Register("relative", nil)
}

func TestNewServerErrors(t *testing.T) {
	if _, err := NewServer(Config{}); err == nil {
		t.Error("no users accepted")
	}
	for _, name := range []string{"", "a:b", "a/b", "a b"} {
		if _, err := NewServer(Config{Users: []User{{Name: name}}}); err == nil {
			t.Errorf("user name %q accepted", name)
		}
	}
	if _, err := NewServer(Config{Users: []User{{Name: "a"}, {Name: "a"}}}); err == nil {
		t.Error("duplicate user accepted")
	}
	if _, err := NewServer(Config{Addr: "256.0.0.1:0", Users: []User{{Name: "a"}}}); err == nil {
		t.Error("bad address accepted")
	}
	s, err := NewServer(Config{Addr: "127.0.0.1:0", Users: []User{{Name: "a", Password: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.IP() != "127.0.0.1" || s.Hostname() != "sshtest" {
		t.Errorf("IP %q, hostname %q", s.IP(), s.Hostname())
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

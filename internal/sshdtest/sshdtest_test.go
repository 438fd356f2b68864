package sshdtest_test

import (
	"bytes"
	"os"
	"os/user"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sshdtest"
)

func client(t *testing.T, s *sshdtest.Server, u sshdtest.User, auth ssh.AuthMethod) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
		User:            u.Name,
		Auth:            []ssh.AuthMethod{auth},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey()),
	})
	if err != nil {
		t.Fatalf("dial as %s: %v\nsshd log:\n%s", u.Name, err, s.Log())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func run(t *testing.T, c *ssh.Client, cmd string, stdin string) (string, error) {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	sess.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errOut
	err = sess.Run(cmd)
	if err != nil {
		t.Logf("%s: %v: %s", cmd, err, errOut.String())
	}
	return strings.TrimSpace(out.String()), err
}

func TestServer(t *testing.T) {
	sshdtest.Available(t)
	var users []sshdtest.User
	var pid int
	t.Run("running", func(t *testing.T) {
		s := sshdtest.StartWith(t, sshdtest.Options{Transcript: true})
		users, pid = s.Users(), s.Pid()
		if len(users) != 3 {
			t.Fatalf("got %d users, want 3", len(users))
		}
		for _, u := range users {
			signer, err := ssh.ParsePrivateKey(u.PrivateKey)
			if err != nil {
				t.Fatal(err)
			}
			// Password and public-key authentication both work.
			for name, auth := range map[string]ssh.AuthMethod{"password": ssh.Password(u.Password), "key": ssh.PublicKeys(signer)} {
				c := client(t, s, u, auth)
				if out, err := run(t, c, "id -un", ""); err != nil || out != u.Name {
					t.Errorf("%s auth as %s: id -un = %q, %v", name, u.Name, out, err)
				}
			}
			c := client(t, s, u, ssh.PublicKeys(signer))
			_, nopw := run(t, c, "sudo -n true", "")
			out, pw := run(t, c, "sudo -S -k -p '' id -u", u.Password+"\n")
			switch u.Sudo {
			case sshdtest.SudoNoPassword:
				if nopw != nil {
					t.Errorf("%s: sudo -n failed: %v", u.Name, nopw)
				}
			case sshdtest.SudoPassword:
				if nopw == nil || pw != nil || out != "0" {
					t.Errorf("%s: sudo -n: %v; sudo -S: %q, %v", u.Name, nopw, out, pw)
				}
			case sshdtest.SudoNone:
				if nopw == nil || pw == nil {
					t.Errorf("%s: sudo worked: %v %v", u.Name, nopw, pw)
				}
			}
			if fi, err := os.Stat(u.Home); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != u.UID {
				t.Errorf("home %s: %v", u.Home, err)
			}
		}
		tr := strings.Join(s.Transcript(), "\n")
		if !strings.Contains(tr, "sudo -n true") || !strings.Contains(tr, "id -un") {
			t.Errorf("transcript lacks commands:\n%s", tr)
		}
		for _, u := range users {
			if strings.Contains(tr, u.Password) || strings.Contains(s.Log(), u.Password) {
				t.Errorf("password of %s in transcript or log", u.Name)
			}
		}
		if !strings.Contains(s.Log(), "Accepted password for "+users[0].Name) {
			t.Errorf("log lacks the password login:\n%s", s.Log())
		}
	})
	if t.Skipped() || len(users) == 0 {
		return
	}
	// Everything is gone after the subtest's cleanup.
	for _, u := range users {
		if _, err := user.Lookup(u.Name); err == nil {
			t.Errorf("user %s still exists", u.Name)
		}
		if _, err := os.Stat(u.Home); err == nil {
			t.Errorf("home %s still exists", u.Home)
		}
		if _, err := os.Stat("/etc/sudoers.d/mgmtkit-test-" + u.Name); err == nil {
			t.Errorf("sudoers file of %s still exists", u.Name)
		}
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("sshd %d still runs", pid)
	}
}

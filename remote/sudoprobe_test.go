package remote_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// A user who has a password and passwordless sudo (cloud images' default
// user): when the probe's `sudo -n true` fails for a passing reason,
// sudo must not be taken for one that asks for the password, or the
// password, sent ahead of every command's input, reaches the command
// itself (docker login --password-stdin would send it to a registry).
func TestAFailedSudoProbeLeaksNoPassword(t *testing.T) {
	const password = "Deploy-Pa55-w0rd"
	srv := sshtest.Start(t, sshtest.Config{Users: []sshtest.User{{Name: "deploy", Password: password, Sudo: sshtest.SudoNoPassword}}})
	srv.FailProgram("sudo", 1, 1, "sudo: unable to resolve host vm-1: Temporary failure in name resolution\n")
	h := dial(t, remote.Config{Addr: srv.Addr(), User: "deploy", Password: remote.NewSecret(password), HostKey: srv.HostKeyPolicy()})
	out, err := h.Run(testContext(t), remote.Cmd{Args: []string{"cat"}, Sudo: true, Stdin: strings.NewReader("payload\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Stdout); got != "payload\n" {
		t.Errorf("the command read %q, want only its own input", strings.ReplaceAll(got, password, "<PASSWORD>"))
	}
}

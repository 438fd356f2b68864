package remote

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConnectionLost is wrapped by errors from commands whose SSH connection
// dropped before they reported an exit status: the command may or may not
// have run. The next command redials.
var ErrConnectionLost = errors.New("ssh connection lost")

// ErrClosed is returned by a Host used after Close.
var ErrClosed = errors.New("remote: host closed")

// CommandError is the error of a command that failed: it exited with a
// status other than 0 (and not listed in [Cmd.OKExit]), was killed by a
// signal, timed out, was cancelled, or lost its connection. Every string in
// it has had the host's and the command's secrets removed.
type CommandError struct {
	// Host is the name of the host.
	Host string
	// Command is the command line as sent, redacted.
	Command string
	// ExitCode is the exit status, or -1 when the command did not report one.
	ExitCode int
	// Signal is the name of the signal that killed the command ("TERM"), if any.
	Signal string
	// Stderr is the tail of standard error, redacted.
	Stderr string
	// Err is the cause when there is no exit status: a context error
	// (timeout, cancellation) or ErrConnectionLost.
	Err error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: command %q ", e.Host, shorten(e.Command, 300))
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, "did not finish: %v", e.Err)
	case e.Signal != "":
		fmt.Fprintf(&b, "was killed by signal %s", e.Signal)
	default:
		fmt.Fprintf(&b, "exited with status %d", e.ExitCode)
	}
	if tail := lastLines(e.Stderr, 3, 500); tail != "" {
		b.WriteString(": ")
		b.WriteString(tail)
	}
	return b.String()
}

// Unwrap returns the cause (a context error or ErrConnectionLost), if any.
func (e *CommandError) Unwrap() error { return e.Err }

// DialError is returned when a host could not be reached before the
// context ended. Err is the last attempt's error.
type DialError struct {
	Host     string
	Addr     string
	Attempts int
	Err      error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("%s: could not connect to %s after %d attempt(s): %v", e.Host, e.Addr, e.Attempts, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *DialError) Unwrap() error { return e.Err }

// AuthError reports a host that answered but refused the login: its SSH
// server offered no authentication method the credentials satisfy. The
// host is there; the credentials are wrong (or not set up yet on a VM
// still booting, which is why connecting retries it until
// Config.WaitTimeout, as other failures).
type AuthError struct {
	Host string
	Addr string
	User string
	Err  error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("%s: %s refused the login of %s: %v", e.Host, e.Addr, e.User, e.Err)
}

// Unwrap returns the SSH client's error.
func (e *AuthError) Unwrap() error { return e.Err }

// IsUnreachable reports whether err says that a host could not be reached
// at all: a [*DialError] whose last attempt got no SSH server to accept
// the login for reasons of the network or the machine (no answer,
// connection refused, no route, a handshake cut short). A host that
// answered and refused the login ([*AuthError]) or showed another host
// key ([*HostKeyError]) is reachable: something is there, and it is not
// what the caller can treat as gone.
func IsUnreachable(err error) bool {
	var de *DialError
	if !errors.As(err, &de) {
		return false
	}
	var ae *AuthError
	var hk *HostKeyError
	return !errors.As(err, &ae) && !errors.As(err, &hk)
}

// HostKeyError reports a host key that the [HostKeyPolicy] rejected. It is
// never retried: it means a different machine (or an attacker) answered.
type HostKeyError struct {
	Host string
	Addr string
	// Got is the SHA256 fingerprint of the key the server presented.
	Got string
	// Reason says what the policy expected.
	Reason string
}

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("%s: host key %s of %s rejected: %s", e.Host, e.Got, e.Addr, e.Reason)
}

// SudoError is returned when a command needs root and the login user cannot
// get it: not in sudoers, a password is needed and none was configured, or
// the password was refused.
type SudoError struct {
	Host   string
	User   string
	Reason string
}

func (e *SudoError) Error() string {
	return fmt.Sprintf("%s: user %s cannot run commands as root: %s", e.Host, e.User, e.Reason)
}

func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// lastLines returns the last n non-empty lines of s joined by " | ", at most
// max bytes.
func lastLines(s string, n, max int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > max {
		out = "..." + out[len(out)-max:]
	}
	return out
}

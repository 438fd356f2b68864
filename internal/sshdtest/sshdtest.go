// Package sshdtest runs a real OpenSSH sshd for a test, on a free port of
// 127.0.0.1, with throwaway users and sudo policies.
//
// It complements remote/sshtest (an in-process fake): sshdtest checks the
// transport against the server people actually run, with the system's PAM,
// sudo and coreutils. It needs root (to create users and run sshd) and an
// installed sshd; without either, [Start] skips the test with a message
// saying why, so `go test ./...` stays green on a developer's laptop.
//
// Everything a server creates is undone when the test ends: the sshd and
// every process it or its users started are killed, the users are deleted
// with their home directories, and their /etc/sudoers.d files are removed.
// Set MGMTKIT_NO_SSHD=1 to skip these tests even as root.
//
// Because the server runs on the same machine as the test, a test may also
// inspect the "remote" side directly (os.Stat, pgrep), which is how tests
// check that a cancelled command really ended.
package sshdtest

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"al.essio.dev/pkg/shellescape"
	"golang.org/x/crypto/ssh"
)

// SudoPolicy is what sudo lets a throwaway user do.
type SudoPolicy int

const (
	// SudoNone: the user is not in sudoers.
	SudoNone SudoPolicy = iota
	// SudoPassword: the user may run anything as root after typing their
	// own password ("ALL=(ALL:ALL) ALL").
	SudoPassword
	// SudoNoPassword: the user may run anything as root without a password
	// ("ALL=(ALL:ALL) NOPASSWD: ALL").
	SudoNoPassword
)

// String returns "none", "password" or "nopasswd".
func (p SudoPolicy) String() string {
	switch p {
	case SudoNone:
		return "none"
	case SudoPassword:
		return "password"
	case SudoNoPassword:
		return "nopasswd"
	}
	return "SudoPolicy(" + strconv.Itoa(int(p)) + ")"
}

// User is a throwaway account on the machine, created for one server.
type User struct {
	// Name is the login name ("mkt" + a short policy tag + a random suffix).
	Name string
	// UID is the numeric user ID.
	UID int
	// Home is the home directory (created, owned by the user).
	Home string
	// Password is the user's random password. It contains shell
	// metacharacters on purpose (a quote, a dollar sign, a space), so that
	// code passing it through a shell by mistake fails.
	Password string
	// PrivateKey is the PEM-encoded (OpenSSH format) Ed25519 private key
	// whose public half is the user's only authorized key.
	PrivateKey []byte
	// KeyFile is the path of PrivateKey on disk (mode 0600, owned by root),
	// for OpenSSH clients (ssh -i).
	KeyFile string
	// PublicKey is the public half of PrivateKey.
	PublicKey ssh.PublicKey
	// Sudo is the user's sudo policy.
	Sudo SudoPolicy
}

// Options tunes a server.
type Options struct {
	// Transcript records every command line the users' login shell is asked
	// to run (the exec requests), readable with [Server.Transcript]. It
	// costs one extra exec per command, so leave it off for benchmarks.
	Transcript bool
	// Config holds extra sshd_config lines, appended to the generated
	// configuration (for example "ChannelTimeout session:*=1s").
	Config []string
}

// Server is a running sshd with its throwaway users.
type Server struct {
	dir      string
	addr     string
	hostKey  ssh.PublicKey
	logFile  string
	pidFile  string
	khFile   string
	trDir    string
	users    []User
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	shell    string
	sshdPath string
	extra    []string
}

// TB is the part of testing.TB that sshdtest uses; *testing.T and
// *testing.B satisfy it. Declared here so that no package outside tests
// links the testing package.
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
}

// Start starts an sshd for tb with three users, one per [SudoPolicy], and
// stops it and deletes the users when tb ends. It skips tb when sshd is not
// installed, when the test does not run as root, or when MGMTKIT_NO_SSHD is
// set.
func Start(tb TB) *Server { return StartWith(tb, Options{}) }

// StartWith is [Start] with options.
func StartWith(tb TB, o Options) *Server {
	tb.Helper()
	sshd := Available(tb)
	s := &Server{dir: tb.TempDir(), sshdPath: sshd, extra: o.Config}
	if err := s.prepareDirs(); err != nil {
		tb.Fatalf("sshdtest: %v", err)
	}
	if o.Transcript {
		if err := s.writeShell(); err != nil {
			tb.Fatalf("sshdtest: %v", err)
		}
	}
	removeStaleUsers(tb)
	for _, p := range []SudoPolicy{SudoNoPassword, SudoPassword, SudoNone} {
		u, err := s.addUser(tb, p)
		if err != nil {
			tb.Fatalf("sshdtest: creating a %s user: %v", p, err)
		}
		s.users = append(s.users, u)
	}
	if err := s.writeHostKey(); err != nil {
		tb.Fatalf("sshdtest: %v", err)
	}
	// The port is found by listening on :0 and closing; another process may
	// take it in between, so retry on a different port if sshd exits.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = s.start(tb); err == nil {
			break
		}
		tb.Logf("sshdtest: attempt %d: %v", attempt+1, err)
	}
	if err != nil {
		tb.Fatalf("sshdtest: starting sshd: %v\nlog:\n%s", err, s.Log())
	}
	return s
}

// Available returns the path of sshd, or skips tb with the reason sshd
// tests cannot run here.
func Available(tb TB) string {
	tb.Helper()
	if os.Getenv("MGMTKIT_NO_SSHD") != "" {
		tb.Skip("sshdtest: MGMTKIT_NO_SSHD is set")
	}
	if os.Geteuid() != 0 {
		tb.Skip("sshdtest: needs root to run sshd and create users; run the tests as root (CI does)")
	}
	// sshd re-executes itself and insists on an absolute path.
	sshd, err := lookSbin("sshd")
	if err == nil {
		sshd, err = filepath.Abs(sshd)
	}
	if err != nil {
		tb.Skip("sshdtest: OpenSSH sshd is not installed (apt-get install openssh-server)")
	}
	for _, tool := range []string{"useradd", "userdel", "chpasswd"} {
		if _, err := lookSbin(tool); err != nil {
			tb.Skipf("sshdtest: %s is not installed", tool)
		}
	}
	return sshd
}

// lookSbin finds a tool on PATH or in /usr/sbin and /sbin, which PATH may
// lack outside a login shell.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// Addr returns the host:port sshd listens on.
func (s *Server) Addr() string { return s.addr }

// Port returns the port sshd listens on.
func (s *Server) Port() string {
	_, p, _ := net.SplitHostPort(s.addr)
	return p
}

// HostKey returns sshd's public host key.
func (s *Server) HostKey() ssh.PublicKey { return s.hostKey }

// KnownHostsFile returns the path of a known_hosts file that lists the
// server's host key, for OpenSSH clients (-o UserKnownHostsFile=...).
func (s *Server) KnownHostsFile() string { return s.khFile }

// Dir returns the server's temporary directory.
func (s *Server) Dir() string { return s.dir }

// Pid returns the process ID of the listening sshd.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Users returns the throwaway users: one with passwordless sudo, one whose
// sudo asks for the password, one without sudo, in that order.
func (s *Server) Users() []User { return append([]User(nil), s.users...) }

// User returns the user with the given sudo policy.
func (s *Server) User(p SudoPolicy) User {
	for _, u := range s.users {
		if u.Sudo == p {
			return u
		}
	}
	panic("sshdtest: no user with sudo policy " + p.String())
}

// Log returns what sshd has logged so far (LogLevel VERBOSE).
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logFile)
	return string(b)
}

// Transcript returns every command line the users' login shell was asked
// to run, oldest first per user, or nil unless [Options.Transcript] was
// set. SFTP sessions run inside sshd and do not appear.
func (s *Server) Transcript() []string {
	if s.shell == "" {
		return nil
	}
	var out []string
	for _, u := range s.users {
		b, err := os.ReadFile(filepath.Join(s.trDir, u.Name))
		if err != nil {
			continue
		}
		for _, c := range strings.Split(string(b), "\x00") {
			if c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

func (s *Server) prepareDirs() error {
	// sshd reads AuthorizedKeysFile with the user's privileges and the
	// login shell runs as the user, so the users must be able to traverse
	// the temporary directory (not list it) and its parent from t.TempDir.
	for _, d := range []string{filepath.Dir(s.dir), s.dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	if err := os.Mkdir(filepath.Join(s.dir, "keys"), 0o755); err != nil {
		return err
	}
	s.logFile = filepath.Join(s.dir, "sshd.log")
	s.pidFile = filepath.Join(s.dir, "sshd.pid")
	s.khFile = filepath.Join(s.dir, "known_hosts")
	// Privilege separation directory; the sshd package creates it, but a
	// container without systemd may have lost it (it lives on tmpfs).
	return os.MkdirAll("/run/sshd", 0o755)
}

// shellScript is the users' login shell when commands are recorded: it
// appends the command (NUL-terminated) to the user's transcript file and
// hands over to bash.
const shellScript = `#!/bin/sh
if [ "$1" = -c ]; then printf '%%s\0' "$2" >> %s/"${USER:-$(id -un)}"; fi
exec /bin/bash "$@"
`

func (s *Server) writeShell() error {
	s.trDir = filepath.Join(s.dir, "transcript")
	if err := os.Mkdir(s.trDir, 0o711); err != nil {
		return err
	}
	s.shell = filepath.Join(s.dir, "shell")
	return os.WriteFile(s.shell, fmt.Appendf(nil, shellScript, shellescape.Quote(s.trDir)), 0o755)
}

func (s *Server) writeHostKey() error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(priv, "sshdtest host key")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "host_ed25519_key"), pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	s.hostKey, err = ssh.NewPublicKey(pub)
	return err
}

func (s *Server) writeConfig() (string, error) {
	cfg := fmt.Sprintf(`# sshdtest: throwaway configuration
ListenAddress %s
HostKey %s
PidFile %s
UsePAM yes
PasswordAuthentication yes
KbdInteractiveAuthentication yes
PubkeyAuthentication yes
PermitRootLogin no
AuthorizedKeysFile %s/%%u
StrictModes no
Subsystem sftp internal-sftp
MaxSessions 10
MaxStartups 100:30:200
LogLevel VERBOSE
PrintMotd no
UseDNS no
X11Forwarding no
AllowTcpForwarding no
AllowUsers %s
`, s.addr, filepath.Join(s.dir, "host_ed25519_key"), s.pidFile, filepath.Join(s.dir, "keys"), s.userNames())
	if len(s.extra) > 0 {
		cfg += strings.Join(s.extra, "\n") + "\n"
	}
	f := filepath.Join(s.dir, "sshd_config")
	return f, os.WriteFile(f, []byte(cfg), 0o600)
}

func (s *Server) userNames() string {
	var names []string
	for _, u := range s.users {
		names = append(names, u.Name)
	}
	return strings.Join(names, " ")
}

// start runs sshd on a fresh port and waits until it answers with an SSH
// banner.
func (s *Server) start(tb TB) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.addr = ln.Addr().String()
	ln.Close()
	cfg, err := s.writeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.khFile, []byte(knownHostsLine(s.addr, s.hostKey)), 0o644); err != nil {
		return err
	}
	// -t first: a configuration error then reads as one, not as a timeout.
	if out, err := exec.Command(s.sshdPath, "-t", "-f", cfg).CombinedOutput(); err != nil {
		return fmt.Errorf("sshd -t: %v: %s", err, out)
	}
	cmd := exec.Command(s.sshdPath, "-D", "-f", cfg, "-E", s.logFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		s.waitErr = err
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	tb.Cleanup(s.stop)

	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("sshd exited: %v: %s", s.waitErr, stderr.String())
		default:
		}
		if err := banner(s.addr); err == nil {
			break
		} else if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("sshd did not answer on %s within 15s: %v", s.addr, err)
		}
		// Poll, but yield to sshd between attempts.
		select {
		case <-exited:
		case <-time.After(10 * time.Millisecond):
		}
	}
	if pid, err := s.pidFromFile(); err == nil && pid != cmd.Process.Pid {
		return fmt.Errorf("pid file says %d, started %d", pid, cmd.Process.Pid)
	}
	return nil
}

// banner connects to addr and reads the SSH identification string.
func banner(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("unexpected banner %q", line)
	}
	return nil
}

func (s *Server) pidFromFile() (int, error) {
	b, err := os.ReadFile(s.pidFile)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// stop kills sshd, its session processes and every process of the
// throwaway users. It is idempotent.
func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// The pid file names the listener, which start checked is the process
	// it started: kill it first, so that it starts no new sessions, then
	// every process below it (sessions, commands under sudo) and every
	// process of the throwaway users.
	killTree(s.cmd.Process.Pid, s.uids())
	s.cmd.Process.Kill()
	<-s.exited
}

func (s *Server) uids() map[int]bool {
	m := map[int]bool{}
	for _, u := range s.users {
		m[u.UID] = true
	}
	return m
}

func knownHostsLine(addr string, key ssh.PublicKey) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(key))
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errLocked tells a retryable failure of the shadow tools (another process
// holds /etc/passwd's lock) from a real one.
var errLocked = errors.New("passwd database locked")

func runTool(stdin string, name string, args ...string) error {
	path, err := lookSbin(name)
	if err != nil {
		return err
	}
	var last error
	for attempt := 0; attempt < 20; attempt++ {
		cmd := exec.Command(path, args...)
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		last = fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
		if !bytes.Contains(out, []byte("lock")) {
			return last
		}
		// Another useradd/userdel holds the lock: back off and retry.
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond)
	}
	return fmt.Errorf("%w: %v", errLocked, last)
}

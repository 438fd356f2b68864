package sshtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	gliderssh "github.com/gliderlabs/ssh"
	"golang.org/x/crypto/ssh"
	"mvdan.cc/sh/v3/interp"
)

// SudoPolicy says what sudo lets a user do. It is written to
// /etc/sudoers.d/NAME on the fake host, which is where the fake sudo reads it.
type SudoPolicy int

const (
	// SudoNone: the user is not in the sudoers file.
	SudoNone SudoPolicy = iota
	// SudoPassword: the user may run any command as root after giving their
	// own password.
	SudoPassword
	// SudoNoPassword: the user may run any command as root without a
	// password (NOPASSWD: ALL).
	SudoNoPassword
)

// User is an account on a fake host.
type User struct {
	// Name is the login name. "root" gets UID 0 and home /root.
	Name string
	// Password enables password (and keyboard-interactive) authentication.
	Password string
	// AuthorizedKeys enables public-key authentication.
	AuthorizedKeys []ssh.PublicKey
	// Sudo is the user's sudo policy.
	Sudo SudoPolicy
}

// Config describes a fake host.
type Config struct {
	// Addr is the TCP address to listen on; default "127.0.0.1:0". Use a
	// distinct loopback address (127.0.0.2, 127.0.0.3, ...) for each host of
	// a simulated cloud so that each has its own IP.
	Addr string
	// Hostname is written to /etc/hostname; default "sshtest".
	Hostname string
	// Users are the accounts. At least one is required.
	Users []User
	// HostKey is the server's host key; a fresh Ed25519 key by default.
	HostKey ssh.Signer
	// FS is the host's filesystem; a fresh [NewFS] by default.
	FS *FS
}

// Server is a fake host: a real SSH server, in-process, whose exec requests
// are interpreted by a bash-compatible shell over an in-memory filesystem
// and whose SFTP subsystem serves the same filesystem. Programs are fakes
// registered with [Server.Handle]; the coreutils the SDK uses are built in.
// It records a transcript of every command and program call, and injects
// faults on request.
type Server struct {
	addr     string
	hostname string
	hostKey  ssh.Signer
	fs       *FS
	ln       *faultListener
	srv      *gliderssh.Server
	serveErr chan error

	mu       sync.Mutex
	users    map[string]User
	programs map[string]Program // by absolute path
	execs    []Exec
	calls    []Call
	faults   faults
}

// Exec is one SSH exec request in a server's transcript.
type Exec struct {
	User    string
	Command string
	// Exit is the exit status, -1 while running or when the session ended
	// without one (connection dropped, signal).
	Exit int
}

// Call is one program invocation in a server's transcript.
type Call struct {
	// User is the identity the program ran as (root under sudo).
	User string
	Args []string
	// Exit is the exit status, -1 while running.
	Exit int
}

// NewServer starts a fake host listening on cfg.Addr. Close it when done.
func NewServer(cfg Config) (*Server, error) {
	if len(cfg.Users) == 0 {
		return nil, errors.New("sshtest: Config.Users is empty")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "sshtest"
	}
	if cfg.FS == nil {
		cfg.FS = NewFS()
	}
	if cfg.HostKey == nil {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		if cfg.HostKey, err = ssh.NewSignerFromKey(priv); err != nil {
			return nil, err
		}
	}
	s := &Server{
		hostname: cfg.Hostname,
		hostKey:  cfg.HostKey,
		fs:       cfg.FS,
		users:    map[string]User{},
		programs: map[string]Program{},
		serveErr: make(chan error, 1),
	}
	if err := s.addUsers(cfg.Users); err != nil {
		return nil, err
	}
	if err := s.fs.WriteFile("/etc/hostname", []byte(cfg.Hostname+"\n"), 0o644); err != nil {
		return nil, err
	}
	installCoreutils(s)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("sshtest: %w", err)
	}
	s.ln = &faultListener{Listener: ln, s: s}
	s.addr = ln.Addr().String()
	s.srv = &gliderssh.Server{
		Version:                    "OpenSSH_9.2p1 sshtest",
		PasswordHandler:            s.checkPassword,
		KeyboardInteractiveHandler: s.checkKeyboardInteractive,
		PublicKeyHandler:           s.checkPublicKey,
		ConnCallback:               s.onConn,
		ChannelHandlers:            map[string]gliderssh.ChannelHandler{"session": s.handleSession},
	}
	s.srv.AddHostKey(s.hostKey)
	go func() { s.serveErr <- s.srv.Serve(s.ln) }()
	return s, nil
}

// Start starts a fake host for a test and closes it when the test ends.
func Start(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Close stops the server and drops every connection.
func (s *Server) Close() error {
	err := s.srv.Close()
	if errors.Is(err, gliderssh.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// IP returns the IP address the server listens on.
func (s *Server) IP() string {
	host, _, _ := net.SplitHostPort(s.addr)
	return host
}

// HostKey returns the server's public host key.
func (s *Server) HostKey() ssh.PublicKey { return s.hostKey.PublicKey() }

// Hostname returns the host's name.
func (s *Server) Hostname() string { return s.hostname }

// FS returns the host's filesystem, for seeding and inspecting files.
func (s *Server) FS() *FS { return s.fs }

// Handle installs a fake program at an absolute path: the file is created
// (mode 0755) so that PATH lookup and `command -v` find it, and running it
// calls p. Handling an existing path replaces its program.
func (s *Server) Handle(file string, p Program) {
	s.Register(file, p)
	if !s.fs.Exists(file) {
		must(s.fs.WriteFile(file, []byte("#!sshtest fake program\n"), 0o755))
	}
}

// Register attaches a program to an absolute path without creating the
// file. The program becomes runnable when something creates the file, as a
// fake package manager does when it installs a package.
func (s *Server) Register(file string, p Program) {
	if !path.IsAbs(file) {
		panic("sshtest: program path must be absolute: " + file)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.programs[path.Clean(file)] = p
}

// Transcript returns the exec requests received so far, oldest first.
func (s *Server) Transcript() []Exec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.execs)
}

// Calls returns the program invocations so far, oldest first. Args slices
// are copies.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		c.Args = slices.Clone(c.Args)
		out[i] = c
	}
	return out
}

// CallsTo returns the invocations of the program with the given base name.
func (s *Server) CallsTo(name string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if path.Base(c.Args[0]) == name {
			out = append(out, c)
		}
	}
	return out
}

// ResetTranscript forgets the recorded exec requests and program calls.
func (s *Server) ResetTranscript() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execs, s.calls = nil, nil
}

func (s *Server) addUsers(users []User) error {
	passwd := []string{"root:x:0:0:root:/root:/bin/bash"}
	group := []string{"root:x:0:", "sudo:x:27:"}
	uid := 1000
	for _, u := range users {
		if u.Name == "" || strings.ContainsAny(u.Name, ":/\n ") {
			return fmt.Errorf("sshtest: invalid user name %q", u.Name)
		}
		if _, dup := s.users[u.Name]; dup {
			return fmt.Errorf("sshtest: duplicate user %q", u.Name)
		}
		s.users[u.Name] = u
		if u.Name == "root" {
			continue
		}
		home := "/home/" + u.Name
		passwd = append(passwd, fmt.Sprintf("%s:x:%d:%d::%s:/bin/bash", u.Name, uid, uid, home))
		group = append(group, fmt.Sprintf("%s:x:%d:", u.Name, uid))
		if err := s.fs.MkdirAll(home, 0o750); err != nil {
			return err
		}
		if err := s.fs.Chown(home, uid, uid); err != nil {
			return err
		}
		var rule string
		switch u.Sudo {
		case SudoPassword:
			rule = u.Name + " ALL=(ALL:ALL) ALL\n"
		case SudoNoPassword:
			rule = u.Name + " ALL=(ALL) NOPASSWD:ALL\n"
		}
		if rule != "" {
			if err := s.fs.WriteFile("/etc/sudoers.d/"+u.Name, []byte(rule), 0o440); err != nil {
				return err
			}
		}
		uid++
	}
	if err := s.fs.WriteFile("/etc/passwd", []byte(strings.Join(passwd, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return s.fs.WriteFile("/etc/group", []byte(strings.Join(group, "\n")+"\n"), 0o644)
}

func (s *Server) user(name string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[name]
	return u, ok
}

func (s *Server) checkPassword(ctx gliderssh.Context, password string) bool {
	if s.faults.takeAuthRejection() {
		return false
	}
	u, ok := s.user(ctx.User())
	return ok && u.Password != "" && u.Password == password
}

func (s *Server) checkKeyboardInteractive(ctx gliderssh.Context, challenge ssh.KeyboardInteractiveChallenge) bool {
	answers, err := challenge("", "", []string{"Password: "}, []bool{false})
	return err == nil && len(answers) == 1 && s.checkPassword(ctx, answers[0])
}

func (s *Server) checkPublicKey(ctx gliderssh.Context, key gliderssh.PublicKey) bool {
	if s.faults.takeAuthRejection() {
		return false
	}
	u, ok := s.user(ctx.User())
	if !ok {
		return false
	}
	for _, k := range u.AuthorizedKeys {
		if gliderssh.KeysEqual(k, key) {
			return true
		}
	}
	return false
}

// login builds the process of a login session: the user's identity, home
// directory and environment.
func (s *Server) login(user string) (*Process, error) {
	uid, gid, ok := s.fs.LookupUser(user)
	if !ok {
		return nil, fmt.Errorf("no such user %q", user)
	}
	home := "/home/" + user
	if uid == 0 {
		home = "/root"
	}
	return &Process{
		Env: []string{
			"HOME=" + home, "USER=" + user, "LOGNAME=" + user, "SHELL=/bin/bash",
			"PATH=" + defaultPath, "LANG=C.UTF-8", "PWD=" + home,
		},
		Dir:  home,
		User: user,
		FS:   s.fs.As(Cred{UID: uid, GID: gid, Groups: s.fs.SupplementaryGroups(user)}, home),
		Host: s,
	}, nil
}

// exec runs p.Args[0] found on PATH, records the call and applies faults.
func (s *Server) exec(ctx context.Context, p *Process) (code int) {
	if len(p.Args) == 0 {
		return 0
	}
	idx := s.recordCall(p)
	defer func() { s.finishCall(idx, code) }()

	if p.Args[0] == commandV {
		return commandVProgram(p)
	}
	if code, ok := s.faults.programFault(ctx, p); ok {
		return code
	}
	file, code := s.lookPath(p)
	if code != 0 {
		return code
	}
	s.mu.Lock()
	prog := s.programs[file]
	s.mu.Unlock()
	if prog == nil {
		fmt.Fprintf(p.Stderr, "bash: %s: cannot execute binary file: Exec format error\n", p.Args[0])
		return 126
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(p.Stderr, "sshtest: fake program %s panicked: %v\n", file, r)
			code = 70
		}
	}()
	return prog(ctx, p)
}

// lookPath resolves argv[0] as execvp does: a name with a slash is a path,
// any other name is searched on PATH. It returns the file or an exit status
// and message as bash gives them (127 not found, 126 not executable).
func (s *Server) lookPath(p *Process) (string, int) {
	name := p.Args[0]
	if strings.Contains(name, "/") {
		file := p.FS.Abs(name)
		fi, err := p.FS.Stat(file)
		switch {
		case err != nil:
			fmt.Fprintf(p.Stderr, "bash: %s: No such file or directory\n", name)
			return "", 127
		case fi.IsDir():
			fmt.Fprintf(p.Stderr, "bash: %s: Is a directory\n", name)
			return "", 126
		case p.FS.Access(file, accessExec) != nil:
			fmt.Fprintf(p.Stderr, "bash: %s: Permission denied\n", name)
			return "", 126
		}
		return s.resolveLinks(p, file), 0
	}
	if file, ok := s.search(p, name); ok {
		return s.resolveLinks(p, file), 0
	}
	fmt.Fprintf(p.Stderr, "bash: %s: command not found\n", name)
	return "", 127
}

func (s *Server) search(p *Process, name string) (string, bool) {
	pathEnv := p.Getenv("PATH")
	if pathEnv == "" {
		pathEnv = defaultPath
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		file := p.FS.Abs(path.Join(dir, name))
		if fi, err := p.FS.Stat(file); err == nil && fi.Mode().IsRegular() && p.FS.Access(file, accessExec) == nil {
			return file, true
		}
	}
	return "", false
}

// resolveLinks follows symbolic links so that /bin/sh -> /usr/bin/dash finds
// the program registered at the target.
func (s *Server) resolveLinks(p *Process, file string) string {
	for range 40 {
		target, err := p.FS.Readlink(file)
		if err != nil {
			return file
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(file), target)
		}
		file = path.Clean(target)
	}
	return file
}

func (s *Server) recordCall(p *Process) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{User: p.User, Args: slices.Clone(p.Args), Exit: -1})
	return len(s.calls) - 1
}

func (s *Server) finishCall(idx, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx < len(s.calls) {
		s.calls[idx].Exit = code
	}
}

// commandVProgram implements `command -v NAME...`: builtins print their
// name, programs their path.
func commandVProgram(p *Process) int {
	code := 0
	for _, name := range p.Args[1:] {
		if interp.IsBuiltin(name) {
			fmt.Fprintln(p.Stdout, name)
			continue
		}
		if file, ok := p.Host.search(p, name); ok && !strings.Contains(name, "/") {
			fmt.Fprintln(p.Stdout, file)
		} else if strings.Contains(name, "/") && p.FS.Access(name, accessExec) == nil {
			fmt.Fprintln(p.Stdout, name)
		} else {
			code = 1
		}
	}
	return code
}

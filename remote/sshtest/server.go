package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"sync"

	gliderssh "github.com/gliderlabs/ssh"
	"golang.org/x/crypto/ssh"
)

// SudoPolicy says what sudo lets a user do. It is written to
// /etc/sudoers.d/NAME on the fake host, which is where the fake sudo reads it.
type SudoPolicy int

const (
	// SudoNone means the user is not in the sudoers file.
	SudoNone SudoPolicy = iota
	// SudoPassword means the user may run any command as root after giving their
	// own password.
	SudoPassword
	// SudoNoPassword means the user may run any command as root without a
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
	// FS is the host's filesystem; a fresh [NewFS] by default. NewServer
	// (over)writes /etc/passwd, /etc/group, /etc/hostname, the users' home
	// directories and /etc/sudoers.d/NAME, and installs the built-in
	// programs in /usr/bin.
	FS *FS
	// MaxSessions is the number of sessions (commands and SFTP) a
	// connection may have open at once, as sshd's MaxSessions: one more is
	// refused with "administratively prohibited (open failed)". A session
	// counts until the server has finished with it, which can be a moment
	// after the client closed it, as with sshd. 0 means sshd's default of
	// 10; a negative value means no limit.
	MaxSessions int
	// LoginPath is the PATH a login session of a user other than root
	// starts with, sshd's compiled-in default user path; root's is
	// /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin (sshd's
	// superuser path). Default: root's. Either is overridden by a PATH
	// line in /etc/environment, which PAM's pam_env reads for every sshd
	// session (see [Server.SetLoginPath]).
	LoginPath string
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
	done     chan struct{} // closed by Close
	closeMu  sync.Mutex
	maxSess  int

	sessMu   sync.Mutex
	sessions map[*ssh.ServerConn]int // open sessions by connection

	mu       sync.Mutex
	users    map[string]User
	programs map[string]Program // by absolute path
	path     string             // sshd's default PATH for users other than root
	execs    []*Exec            // pointers, so that a late update after ResetTranscript is harmless
	calls    []*Call
	faults   faults
}

// Exec is one SSH exec request in a server's transcript.
type Exec struct {
	// User is the login user.
	User string
	// Command is the command as the client sent it.
	Command string
	// Exit is the exit status, -1 while running or when the session ended
	// without one (connection dropped, signal, session closed by the
	// client).
	Exit int
}

// Call is one program invocation in a server's transcript.
type Call struct {
	// User is the identity the program ran as (root under sudo).
	User string
	// Args is the argv, as the program was invoked (argv[0] as written:
	// "apt-get", "/usr/bin/apt-get", "./script.sh").
	Args []string
	// Exit is the exit status, -1 while running; 143 for a program ended by
	// a signal or a cancelled session.
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
		done:     make(chan struct{}),
		maxSess:  cfg.MaxSessions,
		sessions: map[*ssh.ServerConn]int{},
		path:     cfg.LoginPath,
	}
	if s.path == "" {
		s.path = defaultPath
	}
	if s.maxSess == 0 {
		s.maxSess = 10
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
	go s.srv.Serve(s.ln)
	return s, nil
}

// TB is the part of testing.TB that Start uses; *testing.T, *testing.B
// and *testing.F satisfy it. It is declared here so that sshtest does not
// link the testing package into a program that only uses its
// testing-free constructor (such as the tour).
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Start starts a fake host for a test and closes it when the test ends.
func Start(tb TB, cfg Config) *Server {
	tb.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Close stops the server and drops every connection; running commands are
// cancelled as if the client had hung up. Closing twice is harmless.
func (s *Server) Close() error {
	s.closeMu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.closeMu.Unlock()
	err := s.srv.Close()
	if errors.Is(err, gliderssh.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// Listen makes the host answer on one more address too, as a VM does on its
// fixed IP and its floating IP; addr is host:port (port 0 picks one). It
// returns the address it listens on. Faults apply to every address, and
// [Server.Addr] stays the first one.
func (s *Server) Listen(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("sshtest: %w", err)
	}
	go s.srv.Serve(&faultListener{Listener: ln, s: s})
	return ln.Addr().String(), nil
}

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
// (root-owned, mode 0755, missing directories 0755) so that PATH lookup,
// `command -v` and `test -x` find it, and running it calls p. Handling an
// existing path replaces its program and leaves the file alone. The file's
// content is a small binary-looking stub that names the path, so a copy of
// it (cp, install) runs the same program, as a copied binary would.
//
// Handle panics if file is not absolute or cannot be created.
func (s *Server) Handle(file string, p Program) {
	s.Register(file, p)
	if !s.fs.Exists(file) {
		must(s.fs.WriteFile(file, fakeStub(path.Clean(file)), 0o755))
	}
}

// fakeStub is the content of a fake program's file.
func fakeStub(file string) []byte { return []byte(fakeMagic + file + "\n") }

// Register attaches a program to an absolute path without creating the
// file. The program becomes runnable when something creates the file, as a
// fake package manager does when it installs a package (writing the content
// of [Server.Handle]'s stub is not needed: any executable file at the path
// runs p). Registering an existing path replaces its program.
//
// Register panics if file is not absolute.
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
	out := make([]Exec, len(s.execs))
	for i, e := range s.execs {
		out[i] = *e
	}
	return out
}

// Calls returns the program invocations so far, oldest first: every
// program a command ran, through the shell, sudo, env, timeout or a script,
// including those that were not found (exit status 127). Shell builtins
// (echo, printf, test, cd, command -v, ...) are not programs and do not
// appear, unless run as programs (`sudo echo`, `env printf`). Args slices
// are copies.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = *c
		out[i].Args = slices.Clone(c.Args)
	}
	return out
}

// CallsTo returns the invocations of the program with the given base name
// (argv[0] "/usr/bin/apt-get" and "apt-get" both count for "apt-get").
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
// directory and environment, as /etc/passwd has them.
func (s *Server) login(user string) (*Process, error) {
	uid, gid, ok := s.fs.LookupUser(user)
	if !ok {
		return nil, fmt.Errorf("no such user %q", user)
	}
	home := s.fs.homeDir(user)
	return &Process{
		Env: []string{
			"HOME=" + home, "USER=" + user, "LOGNAME=" + user, "SHELL=/bin/bash",
			"PATH=" + s.loginPath(user), "LANG=C.UTF-8", "PWD=" + home,
		},
		Dir:  home,
		User: user,
		FS:   s.fs.As(Cred{UID: uid, GID: gid, Groups: s.fs.SupplementaryGroups(user)}, home),
		Host: s,
	}, nil
}

// SetLoginPath changes the PATH that sessions of users other than root
// start with, as [Config.LoginPath]; "" restores the default.
func (s *Server) SetLoginPath(path string) {
	if path == "" {
		path = defaultPath
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.path = path
}

// loginPath is the PATH of a new session of user, as OpenSSH builds it:
// sshd's compiled-in default (the superuser path for root; session.c
// do_setup_env), then PAM's environment, where pam_env sets what
// /etc/environment holds (pam_env(8); Debian's and Ubuntu's
// /etc/pam.d/sshd run `session required pam_env.so`). A non-interactive
// `ssh host cmd` reads no shell profile, so /etc/profile does not apply.
func (s *Server) loginPath(user string) string {
	s.mu.Lock()
	path := s.path
	s.mu.Unlock()
	if user == "root" {
		path = defaultPath
	}
	if p, ok := environmentPath(s.fs); ok {
		return p
	}
	return path
}

// environmentPath is the PATH that /etc/environment sets, in pam_env's
// format: KEY=VALUE lines, the value optionally in double or single
// quotes, # comments.
func environmentPath(fsys *FS) (string, bool) {
	b, err := fsys.ReadFile("/etc/environment")
	if err != nil {
		return "", false
	}
	var path string
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "export "))
		v, ok := strings.CutPrefix(l, "PATH=")
		if !ok {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		path, found = v, true
	}
	return path, found
}

package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/remote/internal/redact"
)

// Config describes how to reach a host over SSH.
type Config struct {
	// Addr is "host" or "host:port"; the port defaults to 22.
	Addr string
	// Name labels the host in logs, errors and results; the host part of
	// Addr by default.
	Name string
	// User is the login user.
	User string
	// Password enables password and keyboard-interactive authentication.
	// It is also the sudo password unless SudoPassword is set.
	Password Secret
	// PrivateKey is a PEM-encoded private key (OpenSSH, PKCS#1, PKCS#8),
	// encrypted with PrivateKeyPassphrase if that is set.
	PrivateKey           Secret
	PrivateKeyPassphrase Secret
	// Signers are further keys, for example from an SSH agent.
	Signers []ssh.Signer
	// SudoPassword is the password sudo asks for; Password by default.
	SudoPassword Secret
	// HostKey verifies the server's host key. Required.
	HostKey HostKeyPolicy
	// ConnectTimeout bounds one connection attempt (TCP connect and SSH
	// handshake); 10s by default.
	ConnectTimeout time.Duration
	// WaitTimeout bounds how long connecting keeps retrying while the host
	// boots (connection refused, authentication not yet possible) when the
	// context has no earlier deadline; 5m by default.
	WaitTimeout time.Duration
	// KeepAlive is the interval of keepalive requests on an idle
	// connection; a connection that does not answer within two intervals is
	// closed and redialed by the next command. 15s by default; negative
	// disables keepalives. Whatever it is, an operation whose context ends
	// returns within about a second even when the server has frozen: see
	// [SSHHost].
	KeepAlive time.Duration
	// MaxSessions caps the commands running at once on the connection
	// (plus one SFTP session), below OpenSSH's default MaxSessions of 10.
	// 8 by default.
	MaxSessions int
	// Logger receives debug records for connections and commands, with
	// secrets removed; none by default.
	Logger *slog.Logger
	// Dial opens the TCP connection; a net.Dialer by default. Set it to
	// go through a bastion or a test network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Handshakes, when set, bounds the connection attempts in flight at
	// once (TCP connect, SSH handshake and authentication) over every
	// host whose Config holds it: copies made by [Config.For] share it.
	// None by default. See [HandshakeLimit] for when it matters.
	Handshakes *HandshakeLimit
	// Secrets are further values to scrub from errors and logs.
	Secrets []Secret
}

// SSHHost is a [Host] reached over SSH. It keeps one connection, opened on
// first use and shared by every command and file transfer; a dropped
// connection is redialed once by the next command. It is safe for
// concurrent use.
//
// Every blocking operation on the connection (opening a session, running a
// command, each SFTP request) is watched: when its context ends, the
// connection must answer a keepalive within a second, or it is taken for
// frozen (a stopped sshd, a paused VM, a network that drops everything),
// closed, which unblocks every operation on it, and redialed by the next
// command. So a call returns soon after its context ends, with the
// context's error, whatever state the server is in.
type SSHHost struct {
	cfg      Config
	name     string
	addr     string
	client   *ssh.ClientConfig
	redactor *redact.Redactor
	log      *slog.Logger
	sessions chan struct{} // semaphore of MaxSessions

	mu      sync.Mutex
	cur     *conn
	dialing chan struct{} // closed when the dial in progress ends
	closed  bool
	hostKey string // authorized_keys form of the last key the server presented

	sudoMu sync.Mutex
	sudo   sudoMode
}

// conn is one SSH connection and the SFTP client on it.
type conn struct {
	client *ssh.Client
	nc     net.Conn      // the transport; closing it unblocks every operation
	done   chan struct{} // closed when the connection has ended
	broken atomic.Bool   // set as soon as a failure shows the connection is dead

	sftpMu       sync.Mutex
	sftp         *sftp.Client
	home         string // the login user's home
	stage        string // the private staging directory, once checked (see stagingDir)
	sftpPacket   int    // bytes per SFTP write
	sftpInFlight int    // concurrent write requests per upload
}

func (c *conn) alive() bool {
	if c.broken.Load() {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// NewSSHHost checks cfg and returns a host that connects on first use.
func NewSSHHost(cfg Config) (*SSHHost, error) {
	if cfg.Addr == "" {
		return nil, errors.New("remote: Config.Addr is empty")
	}
	if cfg.User == "" {
		return nil, errors.New("remote: Config.User is empty")
	}
	if cfg.HostKey == nil {
		return nil, errors.New("remote: Config.HostKey is nil: choose KnownHosts, PinnedHostKey, TrustOnFirstUse or, knowingly, InsecureIgnoreHostKey")
	}
	addr := cfg.Addr
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(strings.Trim(addr, "[]"), "22")
	}
	if cfg.Name == "" {
		cfg.Name, _, _ = net.SplitHostPort(addr)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = 5 * time.Minute
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 8
	}
	if cfg.SudoPassword.IsZero() {
		cfg.SudoPassword = cfg.Password
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	auth, err := authMethods(cfg)
	if err != nil {
		return nil, err
	}
	h := &SSHHost{
		cfg:      cfg,
		name:     cfg.Name,
		addr:     addr,
		sessions: make(chan struct{}, cfg.MaxSessions),
		log:      cfg.Logger,
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.log = h.log.With("host", h.name)
	secrets := []string{cfg.Password.Reveal(), cfg.SudoPassword.Reveal(), cfg.PrivateKeyPassphrase.Reveal()}
	for _, s := range cfg.Secrets {
		secrets = append(secrets, s.Reveal())
	}
	h.redactor = redact.New(secrets...)
	h.client = &ssh.ClientConfig{
		User:            cfg.User,
		Auth:            auth,
		HostKeyCallback: h.checkHostKey,
		Timeout:         cfg.ConnectTimeout,
	}
	return h, nil
}

// Dial returns a host with an established connection. It retries while the
// host is booting (connection refused or reset, timeouts, authentication
// not yet possible) until ctx ends or Config.WaitTimeout passes; a rejected
// host key fails at once.
func Dial(ctx context.Context, cfg Config) (*SSHHost, error) {
	h, err := NewSSHHost(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := h.conn(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

func authMethods(cfg Config) ([]ssh.AuthMethod, error) {
	signers := append([]ssh.Signer(nil), cfg.Signers...)
	if !cfg.PrivateKey.IsZero() {
		var s ssh.Signer
		var err error
		if cfg.PrivateKeyPassphrase.IsZero() {
			s, err = ssh.ParsePrivateKey([]byte(cfg.PrivateKey.Reveal()))
		} else {
			s, err = ssh.ParsePrivateKeyWithPassphrase([]byte(cfg.PrivateKey.Reveal()), []byte(cfg.PrivateKeyPassphrase.Reveal()))
		}
		if err != nil {
			// The parser's messages do not contain key material.
			return nil, fmt.Errorf("remote: Config.PrivateKey: %w", err)
		}
		signers = append(signers, s)
	}
	var methods []ssh.AuthMethod
	if len(signers) > 0 {
		methods = append(methods, ssh.PublicKeys(signers...))
	}
	if pw := cfg.Password.Reveal(); pw != "" {
		methods = append(methods,
			ssh.Password(pw),
			ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = pw
				}
				return answers, nil
			}))
	}
	if len(methods) == 0 {
		return nil, errors.New("remote: no credentials: set Config.Password, Config.PrivateKey or Config.Signers")
	}
	return methods, nil
}

func (h *SSHHost) checkHostKey(hostport string, remote net.Addr, key ssh.PublicKey) error {
	h.mu.Lock()
	h.hostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	h.mu.Unlock()
	if err := h.cfg.HostKey.check(hostport, remote, key); err != nil {
		return &HostKeyError{Host: h.name, Addr: h.addr, Got: ssh.FingerprintSHA256(key), Reason: err.Error()}
	}
	return nil
}

// Name returns the host's label.
func (h *SSHHost) Name() string { return h.name }

// Addr returns the host:port the host is reached at.
func (h *SSHHost) Addr() string { return h.addr }

// User returns the login user.
func (h *SSHHost) User() string { return h.cfg.User }

// HostKey returns the last host key the server presented, in
// authorized_keys format, or "" before the first connection.
func (h *SSHHost) HostKey() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hostKey
}

// Close closes the connection. Commands still running fail.
func (h *SSHHost) Close() error {
	h.mu.Lock()
	c := h.cur
	h.cur, h.closed = nil, true
	h.mu.Unlock()
	if c != nil {
		c.close()
	}
	return nil
}

// kill marks the connection dead and closes it, so that the next command
// redials without waiting for the connection's goroutines to notice.
// Closing the network connection itself, not only the SSH client, is what
// wakes up a goroutine blocked writing to a server that stopped reading.
func (c *conn) kill() {
	c.broken.Store(true)
	c.client.Close()
	if c.nc != nil {
		c.nc.Close()
	}
}

// freezeGrace is how long a connection has to answer a keepalive when an
// operation on it outlives its context; one that does not is frozen.
const freezeGrace = time.Second

// guard watches the blocking operations that follow on c until release is
// called. If ctx ends before that, c must answer a keepalive within
// freezeGrace or it is killed, which makes every blocked call on it return.
// A live connection is left alone: the operation ends by its own means (a
// signal to a cancelled command, the close of a cancelled SFTP file).
//
// x/crypto/ssh and pkg/sftp take no context: opening a session, waiting
// for a command's exit status and every SFTP request block until the
// server answers or the connection closes, and a SIGSTOPped sshd keeps the
// TCP connection open without answering.
func (c *conn) guard(ctx context.Context) (release func()) {
	stop := context.AfterFunc(ctx, func() {
		if !c.ping(freezeGrace) {
			c.kill()
		}
	})
	return func() { stop() }
}

// ping reports whether the server answers a keepalive request within
// timeout.
func (c *conn) ping(timeout time.Duration) bool {
	reply := make(chan error, 1)
	go func() {
		// OpenSSH answers a global request it does not know with
		// SSH_MSG_REQUEST_FAILURE, which SendRequest reports as
		// false without an error: an answer all the same.
		_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-reply:
		return err == nil
	case <-t.C:
		return false
	case <-c.done:
		return false
	}
}

// ctxErr returns ctx's error, mentioning err, when ctx has ended; err
// otherwise. An operation cut short because its context ended (and its
// connection perhaps closed for being frozen) reports the context's error,
// not a lost connection, so that nothing retries it.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && err != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

func (c *conn) close() {
	c.broken.Store(true)
	c.sftpMu.Lock()
	if c.sftp != nil {
		c.sftp.Close()
	}
	c.sftpMu.Unlock()
	c.client.Close()
}

// conn returns the live connection, dialing when there is none. Concurrent
// callers share one dial.
func (h *SSHHost) conn(ctx context.Context) (*conn, error) {
	for {
		h.mu.Lock()
		switch {
		case h.closed:
			h.mu.Unlock()
			return nil, ErrClosed
		case h.cur != nil && h.cur.alive():
			c := h.cur
			h.mu.Unlock()
			return c, nil
		case h.dialing != nil:
			wait := h.dialing
			h.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, &DialError{Host: h.name, Addr: h.addr, Err: ctx.Err()}
			}
		}
		wait := make(chan struct{})
		h.dialing = wait
		h.mu.Unlock()

		c, err := h.dial(ctx)

		h.mu.Lock()
		h.dialing = nil
		if err == nil {
			if h.closed {
				c.close()
				err = ErrClosed
			} else {
				h.cur = c
			}
		}
		h.mu.Unlock()
		close(wait)
		return c, err
	}
}

// dial connects with retries and backoff until ctx ends or WaitTimeout.
func (h *SSHHost) dial(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.WaitTimeout)
	defer cancel()
	backoff := 200 * time.Millisecond
	start := time.Now()
	for attempt := 1; ; attempt++ {
		client, nc, err := h.dialOnce(ctx)
		if err == nil {
			c := &conn{client: client, nc: nc, done: make(chan struct{})}
			go func() {
				client.Wait()
				close(c.done)
			}()
			if h.cfg.KeepAlive > 0 {
				go c.keepAlive(h.cfg.KeepAlive)
			}
			h.log.Debug("connected", "attempts", attempt, "duration", time.Since(start))
			return c, nil
		}
		var hke *HostKeyError
		if errors.As(err, &hke) {
			return nil, hke
		}
		h.log.Debug("connection attempt failed", "attempt", attempt, "error", h.redactor.String(err.Error()))
		// Sleep with ±20% jitter, but never past the deadline.
		sleep := time.Duration(float64(backoff) * (0.8 + 0.4*rand.Float64()))
		backoff = min(2*backoff, 5*time.Second)
		t := time.NewTimer(sleep)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, &DialError{Host: h.name, Addr: h.addr, Attempts: attempt, Err: err}
		}
	}
}

func (h *SSHHost) dialOnce(ctx context.Context) (*ssh.Client, net.Conn, error) {
	if l := h.cfg.Handshakes; l != nil {
		// Waiting for a slot is not part of the attempt's ConnectTimeout.
		if err := l.acquire(ctx); err != nil {
			return nil, nil, err
		}
		defer l.release()
	}
	actx, cancel := context.WithTimeout(ctx, h.cfg.ConnectTimeout)
	defer cancel()
	nc, err := h.cfg.Dial(actx, "tcp", h.addr)
	if err != nil {
		return nil, nil, err
	}
	// Bound the handshake by the attempt's context too.
	stop := context.AfterFunc(actx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	cc, chans, reqs, err := ssh.NewClientConn(nc, h.addr, h.client)
	if !stop() {
		nc.Close()
		if err == nil {
			cc.Close()
		}
		return nil, nil, fmt.Errorf("ssh handshake: %w", actx.Err())
	}
	if err != nil {
		nc.Close()
		if isAuthFailure(err) {
			err = &AuthError{Host: h.name, Addr: h.addr, User: h.cfg.User, Err: err}
		}
		return nil, nil, err
	}
	return ssh.NewClient(cc, chans, reqs), nc, nil
}

// isAuthFailure reports whether a client handshake failed because the
// server accepted none of the login's methods. x/crypto/ssh has no type
// for it: clientAuthenticate in ssh/client_auth.go returns
// fmt.Errorf("ssh: unable to authenticate, attempted methods %v, no
// supported methods remain", tried), wrapped by NewClientConn as
// "ssh: handshake failed: ...".
func isAuthFailure(err error) bool {
	return strings.Contains(err.Error(), "ssh: unable to authenticate")
}

// keepAlive sends keepalive requests and closes a connection that stops
// answering, so that the next command redials instead of hanging.
func (c *conn) keepAlive(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if !c.ping(2 * interval) {
			c.kill()
			return
		}
	}
}

// Run runs c on the host. See [Host].
func (h *SSHHost) Run(ctx context.Context, c Cmd) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{ExitCode: -1}, err
	}
	if IsDryRun(ctx) && !c.ReadOnly {
		red := h.redactor
		for _, s := range c.Secrets {
			red = red.With(s.Reveal())
		}
		e := withheldCmd(h.name, c, red.String)
		h.log.Info("dry run: command withheld", "cmd", e.line)
		return Output{ExitCode: -1}, withhold(ctx, e)
	}
	mode := sudoRoot
	if c.Sudo {
		m, err := h.sudoMode(ctx)
		if err != nil {
			return Output{}, err
		}
		mode = m
	}
	line, err := commandLine(ctx, c, mode)
	if err != nil {
		return Output{}, err
	}
	stdin := c.Stdin
	if c.Sudo && mode == sudoPasswd {
		stdin = io.MultiReader(strings.NewReader(h.cfg.SudoPassword.Reveal()+"\n"), orEmpty(c.Stdin))
	}
	red := h.redactor
	for _, s := range c.Secrets {
		red = red.With(s.Reveal())
	}
	viaSudo := c.Sudo && mode != sudoRoot
	out, err := h.exec(ctx, line, stdin, c, viaSudo, red)
	if errors.Is(err, ErrConnectionLost) && c.Idempotent && rewind(c.Stdin) {
		h.log.Info("connection lost during an idempotent command; running it again", "cmd", red.String(line))
		if c.Sudo && mode == sudoPasswd {
			stdin = io.MultiReader(strings.NewReader(h.cfg.SudoPassword.Reveal()+"\n"), orEmpty(c.Stdin))
		}
		out, err = h.exec(ctx, line, stdin, c, viaSudo, red)
	}
	return out, err
}

func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return strings.NewReader("")
	}
	return r
}

// rewind reports whether stdin can be replayed, seeking it back if needed.
func rewind(r io.Reader) bool {
	if r == nil {
		return true
	}
	s, ok := r.(io.Seeker)
	if !ok {
		return false
	}
	_, err := s.Seek(0, io.SeekStart)
	return err == nil
}

// cancelGrace is how long Run waits, after each signal to a cancelled
// command (SIGTERM, then SIGKILL), for the host to report that it ended.
const cancelGrace = 2 * time.Second

// sudoResignal is how often a cancelled command run through sudo is sent
// SIGTERM again until it ends.
const sudoResignal = 100 * time.Millisecond

// exec runs one command line in a new session; viaSudo says the line
// starts with sudo.
func (h *SSHHost) exec(ctx context.Context, line string, stdin io.Reader, c Cmd, viaSudo bool, red *redact.Redactor) (Output, error) {
	start := time.Now()
	fail := func(err error) (Output, error) {
		return Output{ExitCode: -1}, &CommandError{Host: h.name, Command: red.String(line), ExitCode: -1, Err: err}
	}
	select {
	case h.sessions <- struct{}{}:
		defer func() { <-h.sessions }()
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	cn, sess, err := h.session(ctx)
	if err != nil {
		return fail(ctxErr(ctx, err))
	}
	// Deferred first, so it watches sess.Close too.
	defer cn.guard(ctx)()
	defer sess.Close()

	var stdout bytes.Buffer
	stderr := &tailBuffer{max: StderrTail}
	sess.Stdin = stdin
	sess.Stdout = &stdout
	if c.Stdout != nil {
		sess.Stdout = c.Stdout
	}
	sess.Stderr = stderr
	if c.Stderr != nil {
		sess.Stderr = io.MultiWriter(c.Stderr, stderr)
	}
	if err := sess.Start(line); err != nil {
		cn.kill()
		if ctx.Err() != nil {
			return fail(ctxErr(ctx, err))
		}
		return fail(fmt.Errorf("%w: %v", ErrConnectionLost, err))
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		if sig, ok := h.cancel(sess, waited, viaSudo); ok {
			h.log.Debug("command cancelled", "cmd", red.String(line), "signal", string(sig), "duration", time.Since(start), "error", ctx.Err())
		} else {
			h.log.Info("cancelled command did not report its end", "cmd", red.String(line), "duration", time.Since(start))
		}
		return fail(ctx.Err())
	}

	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	cerr := &CommandError{Host: h.name, Command: red.String(line), ExitCode: -1, Stderr: red.String(string(out.Stderr))}
	var exitErr *ssh.ExitError
	switch {
	case err == nil:
		out.ExitCode = 0
	case errors.As(err, &exitErr) && exitErr.Signal() != "":
		cerr.Signal = exitErr.Signal()
	case errors.As(err, &exitErr):
		out.ExitCode = exitErr.ExitStatus()
		cerr.ExitCode = out.ExitCode
	default:
		// No exit status: the connection (or the channel) went away,
		// or was closed as frozen after ctx ended.
		cn.kill()
		cerr.Err = ctxErr(ctx, fmt.Errorf("%w: %v", ErrConnectionLost, err))
	}
	h.log.Debug("command finished", "cmd", cerr.Command, "exit", out.ExitCode, "duration", time.Since(start))
	if err == nil || (cerr.Err == nil && cerr.Signal == "" && okExit(c.OKExit, out.ExitCode)) {
		return out, nil
	}
	if cerr.Err != nil || cerr.Signal != "" {
		out.ExitCode = -1
	}
	return out, cerr
}

// cancel signals the command of sess until waited reports its end, for up
// to two cancelGrace periods, and reports the last signal sent and whether
// the command ended. sshd delivers a signal request to the session's
// process group (killpg), as the login user.
//
// A plain command gets SIGTERM, then SIGKILL if it ignores SIGTERM.
//
// Under sudo, that group holds sudo alone: the command runs as root, which
// the login user cannot signal, and `timeout` has moved it to a group of
// its own. sudo relays SIGTERM to the command, which `timeout` passes on to
// its whole group and follows with SIGKILL after killAfter. But sudo
// relays signals only from the event loop it enters once it has started
// the command: a SIGTERM that arrives earlier, while sudo checks its policy
// and opens its PAM session, is lost. That is what a command cancelled
// right after it was sent meets, and a SIGKILL then kills sudo alone and
// orphans the command it has just started, which runs on as root. So a
// command under sudo is never sent SIGKILL: it is sent SIGTERM again every
// sudoResignal until it ends (timeout ignores the repeats once it has
// passed the first on).
func (h *SSHHost) cancel(sess *ssh.Session, waited <-chan error, viaSudo bool) (ssh.Signal, bool) {
	if viaSudo {
		sess.Signal(ssh.SIGTERM)
		tick := time.NewTicker(sudoResignal)
		defer tick.Stop()
		limit := time.NewTimer(2 * cancelGrace)
		defer limit.Stop()
		for {
			select {
			case <-waited:
				return ssh.SIGTERM, true
			case <-limit.C:
				return ssh.SIGTERM, false
			case <-tick.C:
				sess.Signal(ssh.SIGTERM)
			}
		}
	}
	for _, sig := range []ssh.Signal{ssh.SIGTERM, ssh.SIGKILL} {
		sess.Signal(sig)
		t := time.NewTimer(cancelGrace)
		select {
		case <-waited:
			t.Stop()
			return sig, true
		case <-t.C:
		}
	}
	return ssh.SIGKILL, false
}

func okExit(ok []int, code int) bool {
	for _, c := range ok {
		if c == code {
			return true
		}
	}
	return false
}

// session opens a session, redialing once if the connection turns out to be
// dead.
func (h *SSHHost) session(ctx context.Context) (*conn, *ssh.Session, error) {
	for attempt := 0; ; attempt++ {
		c, err := h.conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		release := c.guard(ctx)
		sess, err := c.client.NewSession()
		release()
		if err == nil {
			return c, sess, nil
		}
		if ctx.Err() != nil {
			return nil, nil, ctxErr(ctx, err)
		}
		var refused *ssh.OpenChannelError
		if errors.As(err, &refused) {
			// sshd frees a session slot only after it has processed the
			// close of a finished session, so a burst of commands can
			// briefly exceed its MaxSessions: wait and try again.
			if sess, err = h.retryRefusedSession(ctx, c); err != nil {
				return nil, nil, fmt.Errorf("opening a session: %w", err)
			}
			return c, sess, nil
		}
		c.kill()
		if attempt == 1 {
			return nil, nil, fmt.Errorf("%w: %v", ErrConnectionLost, err)
		}
		h.log.Info("connection dropped; redialing", "error", err)
	}
}

// retryRefusedSession retries opening a session the server refused, with
// backoff, for up to two seconds or until ctx ends.
func (h *SSHHost) retryRefusedSession(ctx context.Context, c *conn) (*ssh.Session, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	wait := 5 * time.Millisecond
	for {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("the server keeps refusing new sessions: %w", ctx.Err())
		}
		release := c.guard(ctx)
		sess, err := c.client.NewSession()
		release()
		if !errors.As(err, new(*ssh.OpenChannelError)) {
			return sess, err
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// sudoProbe tells how the login user becomes root.
const sudoProbe = `if [ "$(id -u)" = 0 ]; then echo root; elif sudo -n true 2>/dev/null; then echo nopasswd; else echo password; fi`

// sudoCheck runs under `sudo -S` with the password and sudoCheckLine on
// standard input: it exits sudoCheckUnread (3) when the first line it
// reads is not sudoCheckLine, that is when sudo did not read the password.
const (
	sudoCheckLine   = "mgmtkit-sudo-check"
	sudoCheckUnread = 3
	sudoCheck       = `[ "$(head -n 1)" = ` + sudoCheckLine + ` ] || exit ` + string('0'+sudoCheckUnread)
)

// rootEquivalent reports whether the login user is known to become root
// at will: it is root, or sudo asks it for no password.
func (h *SSHHost) rootEquivalent() bool {
	h.sudoMu.Lock()
	defer h.sudoMu.Unlock()
	return h.sudo == sudoRoot || h.sudo == sudoNoPasswd
}

// sudoMode finds out, once per host, how commands get root.
func (h *SSHHost) sudoMode(ctx context.Context) (sudoMode, error) {
	h.sudoMu.Lock()
	defer h.sudoMu.Unlock()
	if h.sudo != sudoUnknown {
		return h.sudo, nil
	}
	// Both probes only look, so they run again (once) after a dropped
	// connection, as an Idempotent command would.
	look := func(line string, stdin func() io.Reader) (Output, error) {
		out, err := h.exec(ctx, line, stdin(), Cmd{}, false, h.redactor)
		if errors.Is(err, ErrConnectionLost) {
			out, err = h.exec(ctx, line, stdin(), Cmd{}, false, h.redactor)
		}
		return out, err
	}
	out, err := look(sudoProbe, func() io.Reader { return nil })
	if err != nil {
		return sudoUnknown, err
	}
	switch out.String() {
	case "root":
		h.sudo = sudoRoot
	case "nopasswd":
		h.sudo = sudoNoPasswd
	default:
		if h.cfg.SudoPassword.IsZero() {
			return sudoUnknown, &SudoError{Host: h.name, User: h.cfg.User, Reason: "sudo asks for a password and none is configured (Config.SudoPassword or Config.Password)"}
		}
		// The command checks that sudo read the password: a sudo that
		// needs none (the probe failed for a passing reason) leaves it on
		// standard input, where every later command would read it.
		check := Quote("sudo", "-S", "-k", "-p", "", "--", "sh", "-c", sudoCheck)
		_, err := look(check, func() io.Reader {
			return strings.NewReader(h.cfg.SudoPassword.Reveal() + "\n" + sudoCheckLine + "\n")
		})
		var cerr *CommandError
		switch {
		case errors.As(err, &cerr) && cerr.Err == nil && cerr.ExitCode == sudoCheckUnread:
			h.sudo = sudoNoPasswd
		case errors.As(err, &cerr) && cerr.Err == nil:
			return sudoUnknown, &SudoError{Host: h.name, User: h.cfg.User, Reason: "sudo refused: " + lastLines(cerr.Stderr, 2, 300)}
		case err != nil:
			return sudoUnknown, err
		default:
			h.sudo = sudoPasswd
		}
	}
	return h.sudo, nil
}

// For returns a copy of c for one host: its address (host or host:port),
// the name to report it by, and its login. The rest (host-key policy,
// dialer, handshake limit, timeouts, logger) is what c shares across a
// VNF's hosts.
func (c Config) For(addr, name, user string, password Secret) Config {
	c.Addr, c.Name, c.User, c.Password = addr, name, user, password
	return c
}

// HandshakeLimit bounds the SSH connection attempts in flight at once
// (TCP connect, key exchange, authentication: the time a connection is
// unauthenticated) over the hosts whose [Config.Handshakes] holds it.
// Once authenticated, a connection no longer counts, so it does not bound
// how many hosts are connected or busy at once.
//
// Hosts that are distinct machines need no such bound: each sshd sees one
// connection. It matters when the connections all reach one sshd: a
// bastion dialed once per host through [Config.Dial], or many nodes
// behind one address (a NAT, a port forwarder). OpenSSH's MaxStartups
// (10:30:100 by default) makes that sshd drop 30 % of new connections once
// 10 are unauthenticated, and all of them at 100; a dropped attempt is
// retried with backoff (see [Dial]), so a wide fan-out through one sshd
// pays seconds of retries instead of failing, unless the attempts in
// flight stay below its start value. A limit of 8, as the package
// plumbing uses per hook, keeps one client below it with room for others.
//
// A HandshakeLimit is safe for concurrent use.
type HandshakeLimit struct {
	slots chan struct{}
}

// NewHandshakeLimit returns a limit of n connection attempts in flight at
// once; n below 1 means 1.
func NewHandshakeLimit(n int) *HandshakeLimit {
	return &HandshakeLimit{slots: make(chan struct{}, max(n, 1))}
}

// acquire waits for a slot until ctx ends.
func (l *HandshakeLimit) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release frees a slot.
func (l *HandshakeLimit) release() { <-l.slots }

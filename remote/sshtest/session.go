package sshtest

import (
	"context"
	"strings"
	"sync"

	gliderssh "github.com/gliderlabs/ssh"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// handleSession serves one "session" channel the way OpenSSH's sshd does for
// a non-interactive client: exec requests run through the user's login shell
// (bash -c), the "sftp" subsystem serves the filesystem, a "signal" request
// or the client closing the channel ends the running command. PTY, shell,
// environment and agent requests are refused (sshd without AcceptEnv
// refuses environment variables too), so code that depends on them fails
// here as it would on a hardened host.
func (s *Server) handleSession(_ *gliderssh.Server, conn *ssh.ServerConn, newChan ssh.NewChannel, connCtx gliderssh.Context) {
	if !s.openSession(conn) {
		newChan.Reject(ssh.Prohibited, "open failed")
		return
	}
	defer s.closeSession(conn)
	ch, reqs, err := newChan.Accept()
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(connCtx)
	defer cancel()
	sess := &session{s: s, conn: conn, ch: ch, user: conn.User()}
	var wg sync.WaitGroup
	defer wg.Wait()
	started := false
	for req := range reqs {
		switch req.Type {
		case "exec", "subsystem":
			var payload struct{ Value string }
			if started || ssh.Unmarshal(req.Payload, &payload) != nil || (req.Type == "subsystem" && payload.Value != "sftp") {
				req.Reply(false, nil)
				continue
			}
			started = true
			req.Reply(true, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if req.Type == "exec" {
					sess.exec(ctx, payload.Value)
				} else {
					sess.sftp()
				}
			}()
		case "signal":
			// A signal that ends a process ends the command (there is
			// none to signal before the exec request).
			var payload struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &payload) == nil && started && terminating(payload.Signal) {
				sess.setSignal(payload.Signal)
				cancel()
			}
		default:
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
	// The client closed the channel (or the connection is gone): like sshd
	// closing the pipes of the session's process group, end the command.
	cancel()
}

// openSession takes one of the connection's MaxSessions slots.
func (s *Server) openSession(conn *ssh.ServerConn) bool {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.maxSess > 0 && s.sessions[conn] >= s.maxSess {
		return false
	}
	s.sessions[conn]++
	return true
}

func (s *Server) closeSession(conn *ssh.ServerConn) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.sessions[conn]--; s.sessions[conn] <= 0 {
		delete(s.sessions, conn)
	}
}

// terminating reports whether a signal's default action ends a process.
func terminating(sig string) bool {
	switch strings.TrimPrefix(sig, "SIG") {
	case "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "WINCH":
		return false
	}
	return true
}

type session struct {
	s    *Server
	conn *ssh.ServerConn
	ch   ssh.Channel
	user string

	mu     sync.Mutex
	signal string
}

func (c *session) setSignal(sig string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.signal == "" {
		c.signal = sig
	}
}

func (c *session) signalName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.signal
}

func (c *session) exec(ctx context.Context, command string) {
	e := c.s.recordExec(c.user, command)
	drop := c.s.faults.takeDrop()
	p, err := c.s.login(c.user)
	if err != nil {
		c.ch.Stderr().Write([]byte(err.Error() + "\n"))
		c.finish(e, 1)
		return
	}
	p.Stdin, p.Stdout, p.Stderr = c.ch, c.ch, c.ch.Stderr()
	code := -1
	if c.s.faults.waitCommand(ctx) { // DelayCommands; a cancelled wait runs nothing
		code = c.s.runShell(ctx, p, command, "bash", nil, nil)
	}
	switch sig := c.signalName(); {
	case drop:
		// The command ran; its outcome never reaches the client.
		c.s.finishExec(e, -1)
		c.conn.Close()
	case sig != "":
		// As sshd reports a command killed by a signal.
		c.s.finishExec(e, -1)
		c.ch.CloseWrite()
		c.ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: strings.TrimPrefix(sig, "SIG")}))
		c.ch.Close()
	case ctx.Err() != nil:
		// The client closed the session, or the connection or the
		// server is gone: the command was cancelled and nobody waits
		// for its status.
		c.s.finishExec(e, -1)
		c.ch.Close()
	default:
		c.finish(e, code)
	}
}

func (c *session) finish(e *Exec, code int) {
	c.s.finishExec(e, code)
	c.ch.CloseWrite()
	c.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
	c.ch.Close()
}

func (c *session) sftp() {
	p, err := c.s.login(c.user)
	if err != nil {
		c.ch.Close()
		return
	}
	h := &sftpHandler{fs: p.FS}
	handlers := sftp.Handlers{FileGet: h, FilePut: h, FileCmd: h, FileList: h}
	srv := sftp.NewRequestServer(c.ch, handlers, sftp.WithStartDirectory(p.Dir))
	srv.Serve()
	srv.Close()
	c.ch.Close()
}

func (s *Server) recordExec(user, command string) *Exec {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := &Exec{User: user, Command: command, Exit: -1}
	s.execs = append(s.execs, e)
	return e
}

func (s *Server) finishExec(e *Exec, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Exit = code
}

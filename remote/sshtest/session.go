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
// or the client closing the channel ends the running command. PTY, shell
// and environment requests are refused (sshd without AcceptEnv ignores
// environment variables too), so code that depends on them fails here as it
// would on a hardened host.
func (s *Server) handleSession(_ *gliderssh.Server, conn *ssh.ServerConn, newChan ssh.NewChannel, connCtx gliderssh.Context) {
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
			var payload struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &payload) == nil {
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
	idx := c.s.recordExec(c.user, command)
	drop := c.s.faults.takeDrop()
	p, err := c.s.login(c.user)
	if err != nil {
		c.ch.Stderr().Write([]byte(err.Error() + "\n"))
		c.finish(idx, 1)
		return
	}
	p.Stdin, p.Stdout, p.Stderr = c.ch, c.ch, c.ch.Stderr()
	code := c.s.runShell(ctx, p, command, "bash", nil, nil)
	if drop {
		// The command ran; its outcome never reaches the client.
		c.s.finishExec(idx, -1)
		c.conn.Close()
		return
	}
	if sig := c.signalName(); sig != "" {
		c.s.finishExec(idx, -1)
		c.ch.CloseWrite()
		c.ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: strings.TrimPrefix(sig, "SIG")}))
		c.ch.Close()
		return
	}
	c.finish(idx, code)
}

func (c *session) finish(idx, code int) {
	c.s.finishExec(idx, code)
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

func (s *Server) recordExec(user, command string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execs = append(s.execs, Exec{User: user, Command: command, Exit: -1})
	return len(s.execs) - 1
}

func (s *Server) finishExec(idx, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx < len(s.execs) {
		s.execs[idx].Exit = code
	}
}

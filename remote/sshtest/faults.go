package sshtest

import (
	"context"
	"fmt"
	"net"
	"path"
	"sync"
	"time"

	gliderssh "github.com/gliderlabs/ssh"
)

// faults holds the failures a test asked a server to inject. Each counter
// is consumed as the matching event happens.
type faults struct {
	mu          sync.Mutex
	dials       int // TCP connections accepted, refused ones included
	refuseDials int
	acceptDelay time.Duration
	cmdDelay    time.Duration // before each exec request runs
	rejectAuth  int
	dropIn      int // drop the connection during the dropIn-th exec from now; 0: never
	programs    []programFault
	conns       []*freezableConn // every connection accepted, for FreezeConnections
}

type programFault struct {
	name   string
	times  int
	hang   bool
	code   int
	stderr string
}

// RefuseDials makes the next n TCP connections fail the way they do while a
// VM boots: the server resets them before the SSH handshake.
func (s *Server) RefuseDials(n int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.refuseDials = n
}

// DelayAccept makes the server wait d after accepting each connection
// before it starts the SSH handshake, like a host under load.
func (s *Server) DelayAccept(d time.Duration) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.acceptDelay = d
}

// DelayCommands makes the server wait d before it runs each exec request
// from now on (0: no delay), like a slow network or a loaded host: the
// latency a real SSH round trip and process start add to every command,
// which the benchmarks count. The wait is cut short when the command is
// cancelled (signal, channel or connection closed, server closed); the
// command then does not run and the client gets no exit status, as for a
// command cancelled while it runs. SFTP requests are not delayed.
func (s *Server) DelayCommands(d time.Duration) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.cmdDelay = d
}

// RejectAuth makes the next n authentication attempts fail whatever the
// credentials, like a VM whose cloud-init has not installed the user's key
// or password yet.
func (s *Server) RejectAuth(n int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.rejectAuth = n
}

// DropConnectionDuring makes the server drop the whole SSH connection while
// it runs the n-th exec request from now (n >= 1): the command runs to
// completion, then the TCP connection is closed instead of the exit status
// being sent, so the client cannot know whether it succeeded.
func (s *Server) DropConnectionDuring(n int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.dropIn = n
}

// FailProgram makes the next `times` runs of the program with base name
// `name` print stderr and exit with code instead of running.
func (s *Server) FailProgram(name string, times, code int, stderr string) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.programs = append(s.faults.programs, programFault{name: name, times: times, code: code, stderr: stderr})
}

// HangProgram makes the next `times` runs of the program with base name
// `name` block until the command is cancelled (signal, session closed,
// connection dropped, timeout); they then exit with 143 as SIGTERM would.
func (s *Server) HangProgram(name string, times int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.programs = append(s.faults.programs, programFault{name: name, times: times, hang: true})
}

// Dials returns how many TCP connections the server has accepted, refused
// ones included.
func (s *Server) Dials() int {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	return s.faults.dials
}

func (f *faults) takeRefusal() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dials++
	if f.refuseDials > 0 {
		f.refuseDials--
		return true
	}
	return false
}

func (f *faults) takeAuthRejection() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rejectAuth > 0 {
		f.rejectAuth--
		return true
	}
	return false
}

func (f *faults) takeDrop() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dropIn == 0 {
		return false
	}
	f.dropIn--
	return f.dropIn == 0
}

func (f *faults) delay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acceptDelay
}

// waitCommand waits the DelayCommands delay; it reports false when ctx
// ended first.
func (f *faults) waitCommand(ctx context.Context) bool {
	f.mu.Lock()
	d := f.cmdDelay
	f.mu.Unlock()
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// programFault applies a pending fault for p's program, if any.
func (f *faults) programFault(ctx context.Context, p *Process) (int, bool) {
	f.mu.Lock()
	var hit *programFault
	for i := range f.programs {
		pf := &f.programs[i]
		if pf.times > 0 && pf.name == path.Base(p.Args[0]) {
			pf.times--
			copied := *pf
			hit = &copied
			break
		}
	}
	f.mu.Unlock()
	switch {
	case hit == nil:
		return 0, false
	case hit.hang:
		<-ctx.Done()
		return 143, true
	default:
		fmt.Fprint(p.Stderr, hit.stderr)
		return hit.code, true
	}
}

// faultListener refuses connections while RefuseDials has some left.
type faultListener struct {
	net.Listener
	s *Server
}

func (l *faultListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.s.faults.takeRefusal() {
			return c, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // reset, not a clean close
		}
		c.Close()
	}
}

// FreezeConnections makes every connection open now stop dead, as one does
// whose sshd process was sent SIGSTOP (or whose VM was paused): the server
// neither reads what the client sends nor sends anything, not even a
// keepalive reply, and the TCP connection stays open. Connections made
// afterwards are served normally, as OpenSSH serves each connection from a
// process of its own (sshd(8): "sshd listens for connections from clients
// [...] and forks a new daemon for each incoming connection"). thaw lets the
// frozen connections go on; closing the server ends them.
func (s *Server) FreezeConnections() (thaw func()) {
	s.faults.mu.Lock()
	conns := s.faults.conns
	s.faults.conns = nil
	s.faults.mu.Unlock()
	thawed := make(chan struct{})
	for _, c := range conns {
		c.freeze(thawed)
	}
	var once sync.Once
	return func() { once.Do(func() { close(thawed) }) }
}

// freezableConn is a server-side connection that FreezeConnections can stop:
// while it is frozen, Read and Write block, and data read just before the
// freeze is held back until the thaw.
type freezableConn struct {
	net.Conn
	done   <-chan struct{} // the server's
	mu     sync.Mutex
	thawed chan struct{} // nil unless frozen
}

func (c *freezableConn) freeze(thawed chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.thawed = thawed
}

// wait blocks while the connection is frozen and the server runs.
func (c *freezableConn) wait() {
	c.mu.Lock()
	thawed := c.thawed
	c.mu.Unlock()
	if thawed != nil {
		select {
		case <-thawed:
		case <-c.done:
		}
	}
}

func (c *freezableConn) Read(p []byte) (int, error) {
	c.wait()
	n, err := c.Conn.Read(p)
	c.wait()
	return n, err
}

func (c *freezableConn) Write(p []byte) (int, error) {
	c.wait()
	return c.Conn.Write(p)
}

// onConn applies the accept delay before the handshake (cut short when the
// server closes) and makes the connection freezable.
func (s *Server) onConn(_ gliderssh.Context, c net.Conn) net.Conn {
	if d := s.faults.delay(); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.done:
		}
	}
	fc := &freezableConn{Conn: c, done: s.done}
	s.faults.mu.Lock()
	s.faults.conns = append(s.faults.conns, fc)
	s.faults.mu.Unlock()
	return fc
}

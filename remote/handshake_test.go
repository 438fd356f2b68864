package remote_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/mgmtkit/mgmtkit/remote"
)

// handshakeGate counts connection attempts that reached the server and
// holds each handshake at its first read until the test lets it go.
type handshakeGate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	arrived int // attempts dialed
	passed  int // attempts let through their first read
	tokens  int // first reads the test allows
	worst   int // the most attempts seen dialed and not let through
}

func (g *handshakeGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.arrived++
	g.worst = max(g.worst, g.arrived-g.passed)
	g.cond.Broadcast()
	g.mu.Unlock()
	return &gatedConn{Conn: c, g: g}, nil
}

// gatedConn blocks its first Read (the server's version line, which the
// handshake starts with) until the gate hands it a token.
type gatedConn struct {
	net.Conn
	g    *handshakeGate
	once sync.Once
}

func (c *gatedConn) Read(p []byte) (int, error) {
	c.once.Do(func() {
		g := c.g
		g.mu.Lock()
		for g.tokens == 0 {
			g.cond.Wait()
		}
		g.tokens--
		g.passed++
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	return c.Conn.Read(p)
}

// Hosts dialed with copies of one Config (Config.For) never have more
// connection attempts in flight than its HandshakeLimit, however many
// dial at once: here six hosts behind one sshd, as through a bastion,
// with a limit of two. The gate lets a handshake go on only when the
// limit's worth of attempts is waiting (or every host has dialed), so an
// attempt beyond the limit would be seen.
func TestHandshakeLimitBoundsConnectionAttemptsInFlight(t *testing.T) {
	srv, _ := fakeHost(t)
	const hosts, limit = 6, 2
	g := &handshakeGate{}
	g.cond = sync.NewCond(&g.mu)
	base := remote.Config{HostKey: srv.HostKeyPolicy(), Dial: g.dial, Handshakes: remote.NewHandshakeLimit(limit), Logger: suite.logs.logger()}
	ctx := testContext(t)
	// A test that goes wrong ends with its context instead of hanging.
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer stop()
	errs := make(chan error, hosts)
	for i := range hosts {
		go func() {
			h, err := remote.Dial(ctx, base.For(srv.Addr(), "node"+string(rune('a'+i)), "ubuntu", remote.NewSecret(ubuntuPassword)))
			if err == nil {
				_, err = h.Run(ctx, remote.Command("true"))
				h.Close()
			}
			errs <- err
		}()
	}
	// Let one handshake go each time the limit's worth is waiting, or all
	// that are left.
	g.mu.Lock()
	for g.passed < hosts {
		for g.arrived-g.passed < limit && g.arrived < hosts && ctx.Err() == nil {
			g.cond.Wait()
		}
		if ctx.Err() != nil {
			break
		}
		if g.tokens == 0 && g.arrived > g.passed {
			g.tokens++
			g.cond.Broadcast()
		}
		for g.tokens > 0 && ctx.Err() == nil {
			g.cond.Wait()
		}
	}
	worst := g.worst
	g.mu.Unlock()
	for range hosts {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if worst != limit {
		t.Errorf("at most %d connection attempts were in flight at once, want %d", worst, limit)
	}
}

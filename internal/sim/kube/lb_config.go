package kube

import (
	"net"
	"slices"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// HAProxyServer is a server line of a loaded backend.
type HAProxyServer struct {
	Name, Address string
	// Port is the server's port; 0 when the line has none (connections
	// go to the port the client connected to).
	Port int
	// Check says whether health checks run ("check"); CheckPort is
	// "port N" of the line, 0 when absent.
	Check     bool
	CheckPort int
}

// HAProxyFrontend is a loaded frontend (or listen section): its name,
// the ports it binds and its default backend.
type HAProxyFrontend struct {
	Name    string
	Ports   []int
	Backend string
}

// HAProxyLoaded is the configuration a machine's haproxy.service loaded
// at its last start or reload: its frontends in file order and its
// backends' servers (in file order) by backend name.
type HAProxyLoaded struct {
	Frontends []HAProxyFrontend
	Backends  map[string][]HAProxyServer
}

// HAProxyConfig returns what m's HAProxy loaded (an external LB VM's
// included: it need not be a cluster member), and false when
// haproxy.service is not active or never loaded a configuration.
func (w *World) HAProxyConfig(m *ubuntu.Machine) (HAProxyLoaded, bool) {
	if !m.Service("haproxy").Active {
		return HAProxyLoaded{}, false
	}
	st := lbOf(m)
	st.mu.Lock()
	cfg := st.haproxy
	st.mu.Unlock()
	if cfg == nil {
		return HAProxyLoaded{}, false
	}
	out := HAProxyLoaded{Backends: map[string][]HAProxyServer{}}
	for _, fe := range cfg.frontends {
		out.Frontends = append(out.Frontends, HAProxyFrontend{Name: fe.name, Ports: slices.Clone(fe.binds), Backend: fe.backend})
	}
	for name, be := range cfg.backends {
		var svs []HAProxyServer
		for _, s := range be.servers {
			host, _, _ := net.SplitHostPort(s.addr)
			svs = append(svs, HAProxyServer{Name: s.name, Address: host, Port: s.port(), Check: s.check, CheckPort: s.checkPort})
		}
		out.Backends[name] = svs
	}
	return out, true
}

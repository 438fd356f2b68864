package heattest

import (
	"fmt"
	"net/netip"
)

// network is a Neutron network with one subnet per address prefix seen on
// it (/24 for IPv4, /64 for IPv6).
type network struct {
	name, id string
	subnets  map[netip.Prefix]string // prefix -> subnet id
}

// prefixOf returns the subnet prefix the fake assigns to an address.
func prefixOf(a netip.Addr) netip.Prefix {
	bits := 24
	if a.Is6() && !a.Is4In6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// parseIPs parses fixed IPs given to the builder; a malformed one is a
// programming error in the test.
func parseIPs(ips []string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			panic(fmt.Sprintf("heattest: invalid IP address %q", ip))
		}
		out = append(out, a.Unmap())
	}
	return out
}

// networkNamedLocked returns the network with that name, creating it.
func (s *Server) networkNamedLocked(name string) *network {
	for _, n := range s.networks {
		if n.name == name {
			return n
		}
	}
	n := &network{name: name, id: s.uuidLocked(), subnets: map[netip.Prefix]string{}}
	s.networks = append(s.networks, n)
	return n
}

// networkForLocked returns the network a port with these addresses lives
// on when the test names none: the network that already holds the first
// address's subnet, or a new one named "net0", "net1", ... in order of
// first use. A port without addresses is on "net0".
func (s *Server) networkForLocked(ips []netip.Addr) *network {
	if len(ips) == 0 {
		return s.networkNamedLocked("net0")
	}
	p := prefixOf(ips[0])
	for _, n := range s.networks {
		if _, ok := n.subnets[p]; ok {
			return n
		}
	}
	return s.networkNamedLocked(fmt.Sprintf("net%d", len(s.networks)))
}

// ensureSubnetsLocked gives n a subnet for each address's prefix. Subnet
// ids are made here, at build time, never while answering a request, so
// that ids do not depend on request timing.
func (s *Server) ensureSubnetsLocked(n *network, ips []netip.Addr) {
	for _, a := range ips {
		p := prefixOf(a)
		if _, ok := n.subnets[p]; !ok {
			n.subnets[p] = s.uuidLocked()
		}
	}
}

// subnetID returns the id of the subnet of a on the port's network.
func subnetID(n *network, a netip.Addr) string { return n.subnets[prefixOf(a)] }

// macLocked returns a MAC address in OpenStack's fa:16:3e prefix.
func (s *Server) macLocked() string {
	v := s.rng.Uint32()
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(v>>16), byte(v>>8), byte(v))
}

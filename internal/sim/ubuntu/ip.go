package ubuntu

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// NIC is the name of the machine's one network interface, as a cloud
// image on a virtio NIC names it.
const NIC = "ens3"

// ipTool is iproute2's ip(8), for what steps ask of it: `ip [-o] [-4|-6]
// addr show [dev IFACE]` (also `address`, `a`, `list`, `ls`), printing
// the loopback and the NIC with the machine's addresses
// ([Options.Addresses]) in iproute2's format (ip/ipaddress.c
// print_addrinfo; -o puts each address on one line, with a backslash
// where the line would break), and `ip [-4|-6] route [show|list]
// [default]` (see [Machine.SetDefaultRoute]). Everything else is refused
// as not modelled.
func ipTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	args := p.Args[1:]
	oneline, family := false, 0
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		switch args[0] {
		case "-o", "-oneline":
			oneline = true
		case "-4":
			family = 4
		case "-6":
			family = 6
		default:
			errf(p, "Option \"%s\" is unknown, try \"ip -help\".", args[0])
			return 255
		}
		args = args[1:]
	}
	if len(args) > 0 && slices.Contains([]string{"route", "ro", "r"}, args[0]) {
		return ipRoute(m, p, args[1:], family)
	}
	if len(args) == 0 || !slices.Contains([]string{"addr", "address", "a"}, args[0]) {
		errf(p, "ip: %v: not modelled by internal/sim/ubuntu (only `ip addr show` and `ip route show`)", args)
		return 1
	}
	args = args[1:]
	if len(args) > 0 && slices.Contains([]string{"show", "list", "ls", "lst"}, args[0]) {
		args = args[1:]
	}
	dev := ""
	if len(args) == 2 && args[0] == "dev" {
		dev, args = args[1], nil
	}
	if len(args) > 0 {
		errf(p, "ip addr show %v: not modelled by internal/sim/ubuntu", args)
		return 1
	}
	type iface struct {
		index int
		name  string
		addrs []netip.Prefix
	}
	m.mu.Lock()
	ifaces := []iface{
		{1, "lo", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8"), netip.MustParsePrefix("::1/128")}},
		{2, NIC, slices.Clone(m.addrs)},
	}
	m.mu.Unlock()
	found := false
	for _, in := range ifaces {
		if dev != "" && in.name != dev {
			continue
		}
		found = true
		if !oneline {
			fmt.Fprintf(p.Stdout, "%d: %s: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000\n", in.index, in.name)
		}
		for _, a := range in.addrs {
			if (family == 4 && !a.Addr().Is4()) || (family == 6 && !a.Addr().Is6()) {
				continue
			}
			kind, scope := "inet", "global"
			if a.Addr().Is6() {
				kind = "inet6"
			}
			if in.name == "lo" {
				scope = "host"
			}
			if oneline {
				fmt.Fprintf(p.Stdout, "%d: %s    %s %s scope %s %s\\       valid_lft forever preferred_lft forever\n", in.index, in.name, kind, a, scope, in.name)
			} else {
				fmt.Fprintf(p.Stdout, "    %s %s scope %s %s\n       valid_lft forever preferred_lft forever\n", kind, a, scope, in.name)
			}
		}
	}
	if !found {
		errf(p, "Device \"%s\" does not exist.", dev)
		return 1
	}
	return 0
}

// The machine's routes. A cloud VM learns its default route from DHCP
// (IPv4) or router advertisements (IPv6): by default the machine has one
// per address family its NIC has an address of, through the NIC, to the
// first address of the NIC's first network of that family (fe80::1 for
// IPv6), beside the link route of each of its networks. A machine whose
// NIC has no modelled address has no routing table at all (no
// /proc/net/route). [Machine.SetDefaultRoute] takes the default routes
// away (a subnet without a gateway, as some provider networks are) or
// gives them back; the change outlasts reboots.
//
// The routing table is in /proc/net/route and /proc/net/ipv6_route, in
// the kernel's formats (net/ipv4/fib_trie.c fib_route_seq_show,
// net/ipv6/route.c rt6_info_route), which is where programs read it:
// kubeadm chooses the API server's address from the default route's
// interface (k8s.io/apimachinery/pkg/util/net/interface.go
// getAllDefaultRoutes). `ip route show` prints it.

// ipRoute is `ip [-4|-6] route [show|list] [default]`: the main table
// of one family (IPv4 unless -6) as iproute2 prints it (ip/iproute.c
// print_route): "default via GW dev ens3 proto dhcp src ADDR metric 100"
// and "NET dev ens3 proto kernel scope link src ADDR metric 100".
func ipRoute(m *Machine, p *sshtest.Process, args []string, family int) int {
	if len(args) > 0 && slices.Contains([]string{"show", "list", "ls", "lst"}, args[0]) {
		args = args[1:]
	}
	onlyDefault := len(args) == 1 && args[0] == "default"
	if len(args) > 0 && !onlyDefault {
		errf(p, "ip route show %v: not modelled by internal/sim/ubuntu", args)
		return 1
	}
	m.mu.Lock()
	rs := m.routesLocked()
	m.mu.Unlock()
	for _, r := range rs {
		if r.dst.Addr().Is6() != (family == 6) || (onlyDefault && r.dst.Bits() != 0) {
			continue
		}
		switch {
		case r.dst.Addr().Is6() && r.gateway.IsValid():
			fmt.Fprintf(p.Stdout, "default via %s dev %s proto ra metric 1024 expires 1799sec hoplimit 64 pref medium\n", r.gateway, NIC)
		case r.dst.Addr().Is6():
			fmt.Fprintf(p.Stdout, "%s dev %s proto kernel metric 256 pref medium\n", r.dst, NIC)
		case r.gateway.IsValid():
			fmt.Fprintf(p.Stdout, "default via %s dev %s proto dhcp src %s metric 100\n", r.gateway, NIC, r.src)
		default:
			fmt.Fprintf(p.Stdout, "%s dev %s proto kernel scope link src %s metric 100\n", r.dst, NIC, r.src)
		}
	}
	return 0
}

// route is one entry of the routing table.
type route struct {
	dst     netip.Prefix
	gateway netip.Addr // invalid for a link route
	src     netip.Addr
}

// SetDefaultRoute gives the machine its default routes (on) or takes
// them away (off); the link routes of the NIC's networks stay.
func (m *Machine) SetDefaultRoute(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noDefaultRoute = !on
	m.writeProcRoutesLocked()
}

// HasDefaultRoute reports whether the machine has a default route.
func (m *Machine) HasDefaultRoute() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.ContainsFunc(m.routesLocked(), func(r route) bool { return r.dst.Bits() == 0 })
}

// routesLocked is the routing table: for each family, the default route
// (unless taken away) and the NIC's networks.
func (m *Machine) routesLocked() []route {
	var rs []route
	for _, v6 := range []bool{false, true} {
		var nets []netip.Prefix
		for _, a := range m.addrs {
			if a.Addr().Is6() == v6 {
				nets = append(nets, a)
			}
		}
		if len(nets) == 0 {
			continue
		}
		if !m.noDefaultRoute {
			gw := nets[0].Masked().Addr().Next()
			dst := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
			if v6 {
				gw, dst = netip.MustParseAddr("fe80::1"), netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			}
			rs = append(rs, route{dst: dst, gateway: gw, src: nets[0].Addr()})
		}
		for _, n := range nets {
			rs = append(rs, route{dst: n.Masked(), src: n.Addr()})
		}
	}
	return rs
}

// writeProcRoutesLocked writes /proc/net/route and /proc/net/ipv6_route
// from the routing table; with no NIC address it writes neither.
func (m *Machine) writeProcRoutesLocked() {
	if len(m.addrs) == 0 {
		return
	}
	// The kernel pads each line of /proc/net/route to 127 characters.
	pad := func(s string) string { return fmt.Sprintf("%-127s\n", s) }
	v4 := pad("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT")
	// The loopback's routes are in the local table, which neither file
	// shows, except IPv6's "unreachable" default on lo (gateway ::, which
	// readers skip).
	var v6 strings.Builder
	for _, r := range m.routesLocked() {
		if r.dst.Addr().Is4() {
			// Addresses are in network order, printed as a host-order
			// (little-endian) integer: 10.0.0.1 is 0100000A. Flags: RTF_UP,
			// and RTF_GATEWAY for a route through a gateway.
			flags, gw := 0x1, uint32(0)
			if r.gateway.IsValid() {
				flags, gw = 0x3, le32(r.gateway)
			}
			mask := uint32(0)
			if r.dst.Bits() > 0 {
				mask = le32(netip.AddrFrom4([4]byte(net.CIDRMask(r.dst.Bits(), 32))))
			}
			v4 += pad(fmt.Sprintf("%s\t%08X\t%08X\t%04X\t0\t0\t100\t%08X\t0\t0\t0", NIC, le32(r.dst.Addr()), gw, flags, mask))
			continue
		}
		// RTF_UP|RTF_GATEWAY (0x3) for the default route, RTF_UP for the
		// link route; metric 1024 (RA) or 256 (kernel).
		gw, metric, flags := netip.IPv6Unspecified(), 256, 0x1
		if r.gateway.IsValid() {
			gw, metric, flags = r.gateway, 1024, 0x3
		}
		fmt.Fprintf(&v6, "%x %02x %032x 00 %x %08x 00000001 00000000 %08x %8s\n", r.dst.Addr().As16(), r.dst.Bits(), [16]byte{}, gw.As16(), metric, flags, NIC)
	}
	fmt.Fprintf(&v6, "%032x 00 %032x 00 %032x ffffffff 00000001 00000000 00200200 %8s\n", [16]byte{}, [16]byte{}, [16]byte{}, "lo")
	m.writeFile("/proc/net/route", v4, 0o444)
	m.writeFile("/proc/net/ipv6_route", v6.String(), 0o444)
}

// le32 is an IPv4 address as the little-endian integer the kernel prints.
func le32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

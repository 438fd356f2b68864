package ubuntu

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

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
// where the line would break). Everything else is refused as not
// modelled.
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
	if len(args) == 0 || !slices.Contains([]string{"addr", "address", "a"}, args[0]) {
		errf(p, "ip: %v: not modelled by internal/sim/ubuntu (only `ip addr show`)", args)
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

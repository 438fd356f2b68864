package kubeadm

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// The load balancer of several control-plane nodes: HAProxy on every
// master spreads APILBPort over the masters' API servers, and keepalived
// holds the virtual IP on one of them (the layout of kubeadm's "Options
// for Software Load Balancing", kubernetes/kubeadm
// docs/ha-considerations.md: keepalived and haproxy as services).
const (
	// APILBPort is the port HAProxy serves the API on: the endpoint of a
	// cluster of three masters is VIP:16443.
	APILBPort = 16443
	// APIServerPort is the API server's own port on every master
	// (kubeadm's KubeAPIServerPort).
	APIServerPort = 6443
	// HAProxyConfig is HAProxy's configuration; the whole file is
	// mgmtkit's.
	HAProxyConfig = "/etc/haproxy/haproxy.cfg"
	// KeepalivedConfig is keepalived's configuration; the whole file is
	// mgmtkit's.
	KeepalivedConfig = "/etc/keepalived/keepalived.conf"
	// DefaultVRRPRouterID is the VRRP virtual router ID when
	// APIServerLB.RouterID is 0: the reference's 51.
	DefaultVRRPRouterID = 51
)

// APIServerLB is the API load balancer as one master runs it.
type APIServerLB struct {
	// VIP is the virtual IP and its network's prefix length
	// (10.0.0.100/24): cluster_cp_name's fixed IP on the masters'
	// network. Required.
	VIP netip.Prefix
	// Port is what HAProxy listens on, on every address; [APILBPort]
	// when 0.
	Port int
	// Backends are the masters, each served at its [APIServerPort].
	// At least one.
	Backends []Backend
	// Priority is this node's VRRP priority, 1 to 254: the highest
	// priority whose HAProxy runs holds the VIP (give the masters
	// different ones, the first the highest, as the reference's
	// 103-index does).
	Priority int
	// RouterID is the VRRP virtual_router_id, 1 to 255, the same on
	// every master and unique on the network; [DefaultVRRPRouterID] when 0.
	RouterID int
	// Interface is the network interface VRRP runs on and the VIP is
	// added to. Empty: the interface that holds NodeAddress or, without
	// one, an address inside VIP's network, which ConfigureKeepalived
	// asks `ip -o addr show` for.
	Interface string
	// NodeAddress is the master's own cluster (NIC) address. When set and
	// Interface is empty, VRRP runs on the interface that holds it, and
	// the VIP takes the prefix length that address has there (the
	// subnet as the node has it configured), so that VIP may be given
	// as a single address (/32, /128): Heat knows the VIP's port but not
	// its subnet's length.
	NodeAddress netip.Addr
}

// Backend is one master behind HAProxy.
type Backend struct {
	// Name is the master's node name ([NodeName]).
	Name string
	// Address is its cluster (NIC) address.
	Address string
}

// serverName is what HAProxy takes as a server name (haproxy
// configuration.txt, section 2.3: names are made of letters, digits,
// '-', '_', '.' and ':').
var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,62}$`)

// ifaceName is a Linux interface name (IFNAMSIZ - 1 characters, no
// '/', white space or ':', net/core/dev.c dev_valid_name).
var ifaceName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,15}$`)

// check validates lb and fills in its defaults; keepalived says whether
// the VRRP fields matter.
func (lb *APIServerLB) check(keepalived bool) error {
	var probs []lcm.Problem
	add := func(path, format string, args ...any) {
		probs = append(probs, lcm.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if lb.Port == 0 {
		lb.Port = APILBPort
	}
	if lb.RouterID == 0 {
		lb.RouterID = DefaultVRRPRouterID
	}
	if lb.Port < 1 || lb.Port > 65535 || lb.Port == APIServerPort {
		add("Port", "must be a port from 1 to 65535 other than the API server's %d, got %d", APIServerPort, lb.Port)
	}
	if len(lb.Backends) == 0 {
		add("Backends", "must name at least one master")
	}
	seen := map[string]bool{}
	for i, b := range lb.Backends {
		at := "Backends[" + strconv.Itoa(i) + "]"
		if !serverName.MatchString(b.Name) {
			add(at+".Name", "%q is not a server name (letters, digits, '.', '_', ':' and '-', at most 63)", b.Name)
		} else if seen[b.Name] {
			add(at+".Name", "%q is given twice", b.Name)
		}
		seen[b.Name] = true
		if a, err := netip.ParseAddr(b.Address); err != nil || a.Zone() != "" || a.IsUnspecified() {
			add(at+".Address", "%q is not an IP address", b.Address)
		}
	}
	if !keepalived {
		return paramsErr(probs)
	}
	if !lb.VIP.IsValid() || lb.VIP.Addr().Zone() != "" || lb.VIP.Addr().IsUnspecified() {
		add("VIP", "must be an address with its prefix length (10.0.0.100/24), got %q", lb.VIP.String())
	}
	if lb.Priority < 1 || lb.Priority > 254 {
		// 255 is the address owner's (RFC 9568 section 6.1).
		add("Priority", "must be from 1 to 254, got %d", lb.Priority)
	}
	if lb.RouterID < 1 || lb.RouterID > 255 {
		add("RouterID", "must be from 1 to 255, got %d", lb.RouterID)
	}
	if lb.Interface != "" && !ifaceName.MatchString(lb.Interface) {
		add("Interface", "%q is not an interface name", lb.Interface)
	}
	return paramsErr(probs)
}

// paramsErr returns probs as a ParamsError, nil without any.
func paramsErr(probs []lcm.Problem) error {
	if probs == nil {
		return nil
	}
	return &lcm.ParamsError{Problems: probs}
}

// haproxyTemplate renders haproxy.cfg (haproxy configuration.txt:
// section 3 "global", 4 "proxies"; "mode tcp" passes the API's TLS
// through, "option tcp-check" with "check" marks a master down when its
// port stops accepting connections, "balance roundrobin" spreads
// connections). The global section is Ubuntu's packaged one, less TLS
// defaults that a TCP proxy does not use. Timeouts are long because
// kubectl and the kubelet keep watches open for minutes.
var haproxyTemplate = template.Must(template.New("haproxy.cfg").Parse(`# Managed by mgmtkit: the Kubernetes API load balancer of this master.
global
	log /dev/log local0
	log /dev/log local1 notice
	chroot /var/lib/haproxy
	stats socket /run/haproxy/admin.sock mode 660 level admin
	stats timeout 30s
	user haproxy
	group haproxy
	daemon

defaults
	log global
	mode tcp
	option tcplog
	option dontlognull
	timeout connect 5s
	timeout client 1h
	timeout server 1h
	timeout check 5s

frontend kube-apiserver
	bind *:{{.Port}}
	default_backend kube-apiserver

backend kube-apiserver
	balance roundrobin
	option tcp-check
	default-server inter 5s fall 3 rise 2
{{- range .Backends}}
	server {{.Name}} {{.Addr}} check
{{- end}}
`))

// haproxyCfg renders lb's haproxy.cfg.
func haproxyCfg(lb APIServerLB) ([]byte, error) {
	type server struct{ Name, Addr string }
	data := struct {
		Port     int
		Backends []server
	}{Port: lb.Port}
	for _, b := range lb.Backends {
		a := netip.MustParseAddr(b.Address).Unmap()
		// An IPv6 address with its port: haproxy takes the last colon
		// as the port's separator (configuration.txt 2.4, "bind" and
		// "server" addresses); the ipv6@ prefix makes it explicit.
		addr := a.String() + ":" + strconv.Itoa(APIServerPort)
		if a.Is6() {
			addr = "ipv6@" + addr
		}
		data.Backends = append(data.Backends, server{b.Name, addr})
	}
	var buf bytes.Buffer
	err := haproxyTemplate.Execute(&buf, data)
	return buf.Bytes(), err
}

// ConfigureHAProxy installs HAProxy on a master and makes it balance
// lb.Port over lb.Backends' API servers. A new configuration is written
// beside the old one, checked by the node's own `haproxy -c -f`, and only
// then moved into place (system.ConfigureDaemon), so a configuration
// HAProxy would refuse never replaces a working one; HAProxy is then
// reloaded (its unit's ExecReload keeps established connections). A
// converged node costs two commands.
func ConfigureHAProxy(ctx context.Context, h remote.Host, lb APIServerLB) (lcm.Result, error) {
	if err := lb.check(false); err != nil {
		return lcm.Unchanged, err
	}
	cfg, err := haproxyCfg(lb)
	if err != nil {
		return lcm.Unchanged, err
	}
	return configureDaemon(ctx, h, daemon{
		pkg: "haproxy", unit: "haproxy", file: HAProxyConfig, content: cfg,
		// haproxy(1): -c checks the configuration and exits, -f names it.
		check: func(f string) []string { return []string{"haproxy", "-c", "-f", f} },
	})
}

// keepalivedTemplate renders keepalived.conf (keepalived.conf(5):
// global_defs, vrrp_script, vrrp_instance). Every master starts as
// BACKUP and the election picks the highest priority; the VIP follows
// HAProxy: a master whose haproxy.service is not active goes to FAULT
// and gives it up (track_script without a weight). router_id is left
// to its default, the host name. The check is
// systemctl, run as root (script_user) with enable_script_security,
// which refuses scripts that non-root users could change. VRRP
// authentication is not used: VRRPv3 (RFC 9568) dropped it, and its
// AH and PASS forms protect nothing on a shared network; keepalived's
// own documentation advises against it.
var keepalivedTemplate = template.Must(template.New("keepalived.conf").Parse(`# Managed by mgmtkit: the Kubernetes API virtual IP.
global_defs {
	enable_script_security
	script_user root
}

vrrp_script chk_haproxy {
	script "/usr/bin/systemctl is-active --quiet haproxy.service"
	interval 2
	timeout 5
	fall 2
	rise 2
}

vrrp_instance kube_apiserver {
	state BACKUP
	interface {{.Interface}}
	virtual_router_id {{.RouterID}}
	priority {{.Priority}}
	advert_int 1
	virtual_ipaddress {
		{{.VIP}} dev {{.Interface}}
	}
	track_script {
		chk_haproxy
	}
}
`))

// keepalivedConf renders lb's keepalived.conf.
func keepalivedConf(lb APIServerLB) ([]byte, error) {
	var buf bytes.Buffer
	err := keepalivedTemplate.Execute(&buf, struct {
		APIServerLB
		VIP string
	}{lb, lb.VIP.String()})
	return buf.Bytes(), err
}

// ConfigureKeepalived installs keepalived on a master and makes it hold
// lb.VIP with the other masters by VRRP (see keepalivedTemplate). The
// interface is lb.Interface, or the one whose address is inside lb.VIP's
// network. As [ConfigureHAProxy], the configuration is checked on the
// node (`keepalived --config-test -f`) before it replaces the old one,
// and keepalived is reloaded only when it changed.
func ConfigureKeepalived(ctx context.Context, h remote.Host, lb APIServerLB) (lcm.Result, error) {
	if err := lb.check(true); err != nil {
		return lcm.Unchanged, err
	}
	if lb.Interface == "" {
		iface, vip, err := interfaceFor(ctx, h, lb.VIP, lb.NodeAddress)
		if err != nil {
			return lcm.Unchanged, stepErr(h, "finding the VRRP interface", err)
		}
		lb.Interface, lb.VIP = iface, vip
	}
	cfg, err := keepalivedConf(lb)
	if err != nil {
		return lcm.Unchanged, err
	}
	return configureDaemon(ctx, h, daemon{
		pkg: "keepalived", unit: "keepalived", file: KeepalivedConfig, content: cfg,
		// keepalived(8): -t, --config-test checks the configuration and
		// exits non-zero on an error; -f, --use-file names it.
		check: func(f string) []string { return []string{"keepalived", "--config-test", "-f", f} },
	})
}

// interfaceFor returns the interface holding node, with vip given the
// prefix length node has there, or (node unset) the interface holding an
// address inside vip's network, with vip as it is; from `ip -o addr
// show` (one line per address: "2: ens3    inet 10.0.0.5/24 brd ...
// scope global ens3\ ..."; iproute2 ip/ipaddress.c print_addrinfo with
// -oneline).
func interfaceFor(ctx context.Context, h remote.Host, vip netip.Prefix, node netip.Addr) (string, netip.Prefix, error) {
	family := "-4"
	if vip.Addr().Is6() {
		family = "-6"
	}
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"ip", "-o", family, "addr", "show"}, Idempotent: true, ReadOnly: true})
	if err != nil {
		return "", vip, err
	}
	network := vip.Masked()
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || (f[2] != "inet" && f[2] != "inet6") {
			continue
		}
		p, err := netip.ParsePrefix(f[3])
		if err != nil || p.Addr() == vip.Addr() {
			continue // the VIP itself, on the node that holds it now
		}
		iface := strings.TrimSuffix(f[1], ":")
		switch {
		case node.IsValid() && p.Addr() == node:
			return iface, netip.PrefixFrom(vip.Addr(), p.Bits()), nil
		case !node.IsValid() && network.Contains(p.Addr()):
			return iface, vip, nil
		}
	}
	if node.IsValid() {
		return "", vip, fmt.Errorf("no interface has the address %s (`ip -o %s addr show`): give APIServerLB.Interface", node, family)
	}
	return "", vip, fmt.Errorf("no interface has an address in %s (`ip -o %s addr show`): give APIServerLB.Interface", network, family)
}

// daemon is a package whose one configuration file mgmtkit owns.
type daemon struct {
	pkg, unit, file string
	content         []byte
	check           func(file string) []string
}

// configureDaemon installs d's package and has system.ConfigureDaemon
// replace its file, after the daemon's own check, when the content
// differs, and reload the running unit (a reload owed survives a run that
// fails before it: the unit's restart marker).
func configureDaemon(ctx context.Context, h remote.Host, d daemon) (lcm.Result, error) {
	res, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{d.pkg}})
	if err != nil {
		return res, stepErr(h, "installing "+d.pkg, err)
	}
	r, err := system.ConfigureDaemon(ctx, h, system.DaemonOptions{
		UnitOptions: system.UnitOptions{Unit: d.unit, Inputs: map[string]string{d.file: string(d.content)}},
		Check:       func(staged map[string]string) []string { return d.check(staged[d.file]) },
	})
	res = res.And(r)
	if err != nil {
		return res, stepErr(h, d.unit+".service", err)
	}
	return res, nil
}

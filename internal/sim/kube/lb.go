package kube

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// HAProxy and keepalived in front of the API servers: the fake programs
// check the configurations kubeadm's documented software load balancing
// uses (kubernetes/kubeadm docs/ha-considerations.md: keepalived holds a
// VIP, HAProxy on every master forwards a port to the API servers), and
// their units load them, so that the world routes the VIP and the port
// as the loaded configurations say.

// The configuration files and versions (Ubuntu 22.04, jammy: haproxy
// 2.4.24-0ubuntu0.22.04.1 from jammy-updates, keepalived 1:2.2.4-0.2build1).
const (
	haproxyCfgFile    = "/etc/haproxy/haproxy.cfg"
	keepalivedCfgFile = "/etc/keepalived/keepalived.conf"
	haproxyVersion    = "2.4.24-0ubuntu0.22.04.1"
	keepalivedVersion = "1:2.2.4-0.2build1"
)

// lbState is what a machine's haproxy and keepalived loaded at their last
// start or reload (nil: not running).
type lbState struct {
	mu         sync.Mutex
	haproxy    *haproxyConfig
	keepalived *keepalivedConfig
}

type lbKey struct{}

func lbOf(m *ubuntu.Machine) *lbState {
	return m.Extension(lbKey{}, func() any { return &lbState{} }).(*lbState)
}

// --- HAProxy ---------------------------------------------------------------

// haproxyConfig is a parsed haproxy.cfg, reduced to what routing needs.
type haproxyConfig struct {
	frontends []haproxyFrontend
	backends  map[string]*haproxyBackend
}

type haproxyFrontend struct {
	name     string
	binds    []int // ports
	mode     string
	backend  string
	isListen bool
}

type haproxyBackend struct {
	name    string
	kind    string // "backend" or "proxy" (a listen section)
	line    int
	mode    string
	servers []haproxyServer
}

type haproxyServer struct {
	name      string
	addr      string // host:port; port 0: the client's destination port
	check     bool
	checkPort int // "port N" after "check"; 0 without
	line      int
}

// port is the server's port, 0 when it has none.
func (s haproxyServer) port() int {
	_, p, _ := net.SplitHostPort(s.addr)
	n, _ := strconv.Atoi(p)
	return n
}

// backendsInOrder returns the backends in the order of the file.
func (c *haproxyConfig) backendsInOrder() []*haproxyBackend {
	var out []*haproxyBackend
	for _, b := range c.backends {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *haproxyBackend) int { return a.line - b.line })
	return out
}

// haproxyServerAddr reads a server address: an IPv4 address, a
// bracketed IPv6 address ("[fd00::5]", "[fd00::5]:6443") or one with the
// ipv6@ prefix ("ipv6@fd00::5:6443", where the last colon starts the
// port), each with an optional ":port" (0 without one).
func haproxyServerAddr(a string) (string, int, error) {
	a = strings.TrimPrefix(a, "ipv4@")
	v6 := strings.HasPrefix(a, "ipv6@")
	a = strings.TrimPrefix(a, "ipv6@")
	host, portS := a, ""
	switch {
	case strings.HasPrefix(a, "["):
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("missing ']' in '%s'", a)
		}
		host, portS = a[1:end], strings.TrimPrefix(a[end+1:], ":")
		if rest := a[end+1:]; rest != "" && !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("garbage after ']' in '%s'", a)
		}
	case v6 || strings.Count(a, ":") == 1:
		i := strings.LastIndexByte(a, ':')
		host, portS = a[:i], a[i+1:]
	case strings.Contains(a, ":"):
		// A bare IPv6 address: HAProxy takes the last colon for the
		// port's ("could not resolve address 'fd00:'").
		return "", 0, fmt.Errorf("could not resolve address '%s'", a[:strings.LastIndexByte(a, ':')])
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return "", 0, fmt.Errorf("could not resolve address '%s'", host)
	}
	port := 0
	if portS != "" {
		p, err := strconv.Atoi(portS)
		if err != nil || p < 1 || p > 65535 {
			return "", 0, fmt.Errorf("invalid port '%s'", portS)
		}
		port = p
	}
	return host, port, nil
}

// haproxyKeywords are the keywords the parser accepts per section
// (HAProxy 2.4 configuration.txt, sections 3 and 4; "keyword matrix"):
// those a TCP load balancer in front of API servers uses, and the ones
// of Ubuntu's packaged haproxy.cfg.
var haproxyKeywords = map[string][]string{
	"global": {"log", "chroot", "stats", "user", "group", "daemon", "maxconn", "pidfile", "ca-base", "crt-base",
		"ssl-default-bind-ciphers", "ssl-default-bind-ciphersuites", "ssl-default-bind-options", "nbthread", "master-worker", "tune.ssl.default-dh-param"},
	"defaults": {"log", "mode", "option", "timeout", "maxconn", "retries", "balance", "default-server", "errorfile"},
	"frontend": {"log", "mode", "option", "timeout", "maxconn", "bind", "default_backend", "use_backend", "acl", "tcp-request"},
	"backend":  {"log", "mode", "option", "timeout", "retries", "balance", "default-server", "server", "tcp-check", "http-check"},
	"listen": {"log", "mode", "option", "timeout", "maxconn", "retries", "bind", "balance", "default-server", "server",
		"tcp-check", "http-check", "default_backend", "use_backend"},
}

// parseHAProxy parses haproxy.cfg; the error reads as HAProxy 2.4's
// alerts ("parsing [FILE:LINE] : ...").
func parseHAProxy(file string, data []byte) (*haproxyConfig, error) {
	cfg := &haproxyConfig{backends: map[string]*haproxyBackend{}}
	section, name := "", ""
	defaultMode := "tcp" // HAProxy's mode without one is tcp (configuration.txt 4.2 "mode")
	var fe *haproxyFrontend
	var be *haproxyBackend
	alert := func(line int, format string, args ...any) error {
		return fmt.Errorf("parsing [%s:%d] : %s", file, line, fmt.Sprintf(format, args...))
	}
	for i, raw := range strings.Split(string(data), "\n") {
		ln := i + 1
		if j := strings.IndexByte(raw, '#'); j >= 0 {
			raw = raw[:j]
		}
		f := strings.Fields(raw)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "global", "defaults":
			section, name, fe, be = f[0], "", nil, nil
			continue
		case "frontend", "backend", "listen":
			if len(f) < 2 {
				return nil, alert(ln, "'%s' expects <name> as an argument.", f[0])
			}
			section, name, fe, be = f[0], f[1], nil, nil
			if f[0] != "backend" {
				cfg.frontends = append(cfg.frontends, haproxyFrontend{name: name, mode: defaultMode, isListen: f[0] == "listen"})
				fe = &cfg.frontends[len(cfg.frontends)-1]
			}
			if f[0] != "frontend" {
				if cfg.backends[name] != nil {
					return nil, alert(ln, "backend '%s' has the same name as another backend", name)
				}
				kind := "backend"
				if f[0] == "listen" {
					kind = "proxy"
				}
				be = &haproxyBackend{name: name, kind: kind, line: ln, mode: defaultMode}
				cfg.backends[name] = be
			}
			if f[0] == "listen" {
				fe.backend = name
			}
			continue
		}
		if section == "" {
			return nil, alert(ln, "unknown keyword '%s' out of section.", f[0])
		}
		if f[0] == "server" && section == "frontend" {
			// The reference's sed appends a server line after the
			// last section, a frontend (checked with haproxy 2.6.12).
			return nil, alert(ln, "'server' not allowed because frontend '%s' has no backend capability.", name)
		}
		if !slices.Contains(haproxyKeywords[section], f[0]) {
			return nil, alert(ln, "unknown keyword '%s' in '%s' section", f[0], section)
		}
		switch f[0] {
		case "mode":
			if len(f) != 2 || !slices.Contains([]string{"tcp", "http", "health"}, f[1]) {
				return nil, alert(ln, "'mode' expects one of 'tcp', 'http' or 'health'")
			}
			switch {
			case section == "defaults":
				defaultMode = f[1]
			default:
				if fe != nil {
					fe.mode = f[1]
				}
				if be != nil {
					be.mode = f[1]
				}
			}
		case "bind":
			if len(f) < 2 {
				return nil, alert(ln, "'bind' : missing address")
			}
			for _, a := range strings.Split(f[1], ",") {
				port, err := haproxyPort(a)
				if err != nil {
					return nil, alert(ln, "'bind %s' : %v", f[1], err)
				}
				fe.binds = append(fe.binds, port)
			}
		case "default_backend":
			if len(f) != 2 {
				return nil, alert(ln, "'default_backend' expects a backend name.")
			}
			fe.backend = f[1]
		case "balance":
			if len(f) < 2 || !slices.Contains([]string{"roundrobin", "static-rr", "leastconn", "first", "source", "uri", "url_param", "hdr", "random", "rdp-cookie"}, strings.SplitN(f[1], "(", 2)[0]) {
				return nil, alert(ln, "'balance' only supports 'roundrobin', 'static-rr', 'leastconn', 'source', 'uri', 'url_param', 'hdr(name)', 'random' and 'rdp-cookie(name)' options.")
			}
		case "timeout":
			if len(f) != 3 {
				return nil, alert(ln, "'timeout' expects a type and a value")
			}
			if _, err := haproxyTime(f[2]); err != nil {
				return nil, alert(ln, "unexpected character '%s' in 'timeout %s'", f[2], f[1])
			}
		case "server":
			if len(f) < 3 {
				return nil, alert(ln, "'server' expects <name> and <addr>[:<port>] as arguments.")
			}
			// The port is optional: without one HAProxy connects to
			// the port the client connected to (configuration.txt
			// 5.2, "server", <port>: "If unset, the same port the
			// client connected to will be used"); port 0 stands for
			// that here.
			host, port, err := haproxyServerAddr(f[2])
			if err != nil && strings.HasPrefix(err.Error(), "could not resolve") {
				// As haproxy 2.6.12 -c words it, for "fd00::5".
				return nil, toolMsg(fmt.Sprintf("[%s:%d] : 'server %s/%s' : %v.\nFailed to initialize server(s) addr.", file, ln, name, f[1], err))
			}
			if err != nil {
				return nil, alert(ln, "'server %s' : invalid address: '%s'", f[1], f[2])
			}
			for _, other := range be.servers {
				if other.name == f[1] {
					// src/server.c _srv_parse_init (2.4 and 2.6,
					// checked with haproxy 2.6.12 -c).
					return nil, alert(ln, "%s '%s', another server named '%s' was already defined at line %d, please use distinct names.", be.kind, name, f[1], other.line)
				}
			}
			srv := haproxyServer{name: f[1], addr: net.JoinHostPort(host, strconv.Itoa(port)), check: slices.Contains(f[3:], "check"), line: ln}
			if i := slices.Index(f[3:], "port"); i >= 0 && 3+i+1 < len(f) {
				srv.checkPort, _ = strconv.Atoi(f[3+i+1])
			}
			be.servers = append(be.servers, srv)
		}
	}
	// A server with "check" needs a port to check: its own, or "port N"
	// (src/check.c init_srv_check in 2.4, server_healthcheck_validate in
	// src/server.c of 1.8 and 2.0: ERR_ALERT | ERR_ABORT). Every such
	// server is reported, in file order, as haproxy 2.6.12 -c reports
	// the reference's NodePort backend.
	var noPort []string
	for _, be := range cfg.backendsInOrder() {
		for _, s := range be.servers {
			if s.check && s.port() == 0 && s.checkPort == 0 {
				noPort = append(noPort, fmt.Sprintf("config: %s '%s': server '%s' has neither service port nor check port nor tcp_check rule 'connect' with port information.", be.kind, be.name, s.name))
			}
		}
	}
	if noPort != nil {
		return nil, toolMsg(strings.Join(noPort, "\n"))
	}
	for _, fe := range cfg.frontends {
		if fe.backend != "" && cfg.backends[fe.backend] == nil {
			return nil, toolMsg(fmt.Sprintf("Proxy '%s': unable to find required default_backend: '%s'.", fe.name, fe.backend))
		}
		if len(fe.binds) == 0 {
			return nil, toolMsg(fmt.Sprintf("Proxy '%s' has no 'bind' directive. Please declare it as a backend if this was intended.", fe.name))
		}
	}
	return cfg, nil
}

// haproxyPort reads the port of a bind or server address ("*:16443",
// ":6443", "10.0.0.5:6443", "ipv6@fd00::5:6443", "[::]:16443").
func haproxyPort(a string) (int, error) {
	a = strings.TrimPrefix(strings.TrimPrefix(a, "ipv4@"), "ipv6@")
	i := strings.LastIndexByte(a, ':')
	if i < 0 {
		return 0, fmt.Errorf("missing port number: '%s'", a)
	}
	port, err := strconv.Atoi(a[i+1:])
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("invalid port '%s'", a[i+1:])
	}
	host := strings.Trim(a[:i], "[]")
	if host != "" && host != "*" {
		if _, err := netip.ParseAddr(host); err != nil {
			return 0, fmt.Errorf("could not resolve address '%s'", host)
		}
	}
	return port, nil
}

// haproxyTime parses a time value ("5s", "1h", "100" ms).
func haproxyTime(v string) (int, error) {
	num := strings.TrimRight(v, "usmhd")
	n, err := strconv.Atoi(num)
	if err != nil || !slices.Contains([]string{"", "us", "ms", "s", "m", "h", "d"}, v[len(num):]) {
		return 0, fmt.Errorf("bad time %q", v)
	}
	return n, nil
}

// haproxyTool is /usr/sbin/haproxy: -c -f FILE [-q] checks a
// configuration ("Configuration file is valid", or the alerts and exit
// 1), -v prints the version; the daemon itself is haproxy.service.
func haproxyTool(_ context.Context, _ *ubuntu.Machine, p *sshtest.Process) int {
	var check, quiet bool
	var files []string
	args := p.Args[1:]
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-c":
			check = true
		case "-q":
			quiet = true
		case "-f":
			if i+1 >= len(args) {
				return p.Fail(1, "-f expects a file name")
			}
			i++
			files = append(files, args[i])
		case "-v", "-vv":
			fmt.Fprintf(p.Stdout, "HAProxy version %s 2023/12/08 - https://haproxy.org/\n", haproxyVersion)
			return 0
		default:
			return p.Fail(2, "%s: not modelled by internal/sim/kube (haproxy runs as haproxy.service; -c -f FILE checks a file)", args[i])
		}
	}
	if !check || len(files) != 1 {
		return p.Fail(2, "only `haproxy -c -f FILE` is modelled by internal/sim/kube")
	}
	data, err := p.FS.ReadFile(files[0])
	if err != nil {
		fmt.Fprintf(p.Stderr, "[ALERT]    (4321) : Cannot open configuration file/directory %s : %s\n", files[0], sshtest.ErrMessage(err))
		return 1
	}
	if _, err := parseHAProxy(files[0], data); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(p.Stderr, "[ALERT]    (4321) : config : %s\n", line)
		}
		fmt.Fprintf(p.Stderr, "[ALERT]    (4321) : config : Fatal errors found in configuration.\n")
		return 1
	}
	if !quiet {
		fmt.Fprintln(p.Stdout, "Configuration file is valid")
	}
	return 0
}

// haproxyStart loads haproxy.cfg, as the unit's ExecStartPre check and
// ExecStart do: a configuration HAProxy refuses fails the start (and a
// reload, keeping the running configuration).
func (w *World) haproxyStart(m *ubuntu.Machine) error {
	data, err := m.Server().FS().ReadFile(haproxyCfgFile)
	if err != nil {
		return fmt.Errorf("haproxy: [ALERT] Cannot open configuration file %s", haproxyCfgFile)
	}
	cfg, err := parseHAProxy(haproxyCfgFile, data)
	if err != nil {
		return fmt.Errorf("haproxy: [ALERT] config : %v", err)
	}
	st := lbOf(m)
	st.mu.Lock()
	st.haproxy = cfg
	st.mu.Unlock()
	w.mu.Lock()
	w.lbs[m] = true
	w.mu.Unlock()
	return nil
}

func haproxyStop(m *ubuntu.Machine) error {
	st := lbOf(m)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.haproxy = nil
	return nil
}

// haproxyRoute is a connection to port on m through its HAProxy: the
// frontend binding the port forwards to its backend's first server that
// answers, skipping those with "check" whose API server is down
// (HAProxy's health checks mark them DOWN; "option tcp-check" checks the
// port accepts connections). Without "check" a server is not known to be
// down: the first server takes the connection and a dead one fails it
// (roundrobin starting at the first server; deterministic here). A
// frontend in mode http in front of the TLS API server breaks the TLS
// handshake.
func (w *World) haproxyRoute(m *ubuntu.Machine, port, hops int, noVIP bool) (*Cluster, error) {
	if !m.Service("haproxy").Active {
		return nil, nil
	}
	st := lbOf(m)
	st.mu.Lock()
	cfg := st.haproxy
	st.mu.Unlock()
	if cfg == nil {
		return nil, nil
	}
	for _, fe := range cfg.frontends {
		if !slices.Contains(fe.binds, port) {
			continue
		}
		be := cfg.backends[fe.backend]
		if be == nil {
			return nil, fmt.Errorf("EOF")
		}
		if fe.mode == "http" || be.mode == "http" {
			return nil, fmt.Errorf("tls: first record does not look like a TLS handshake")
		}
		for _, s := range be.servers {
			addr := s.addr
			if s.port() == 0 {
				host, _, _ := net.SplitHostPort(addr)
				addr = net.JoinHostPort(host, strconv.Itoa(port))
			}
			c, err := w.dial(m, addr, hops+1, noVIP)
			if err == nil {
				return c, nil
			}
			if !s.check {
				return nil, fmt.Errorf("EOF")
			}
		}
		// Every server DOWN: HAProxy accepts and closes.
		return nil, fmt.Errorf("EOF")
	}
	return nil, nil
}

// --- keepalived ------------------------------------------------------------

// keepalivedConfig is a parsed keepalived.conf.
type keepalivedConfig struct {
	scripts   map[string]vrrpScript
	instances []vrrpInstance
}

type vrrpScript struct {
	script string
	weight int
}

type vrrpInstance struct {
	name      string
	routerID  int
	priority  int
	srcIP     string
	vips      []string // addresses without prefix
	tracks    []string
	nopreempt bool
}

// keepalivedKeywords are the keywords of the blocks the parser accepts
// (keepalived.conf(5) of 2.2).
var keepalivedKeywords = map[string][]string{
	"global_defs": {"router_id", "enable_script_security", "script_user", "max_auto_priority", "vrrp_skip_check_adv_addr",
		"vrrp_garp_interval", "vrrp_gna_interval", "vrrp_strict", "notification_email", "notification_email_from",
		"smtp_server", "smtp_connect_timeout", "lvs_id", "dynamic_interfaces", "vrrp_version"},
	"vrrp_script": {"script", "interval", "timeout", "weight", "rise", "fall", "user", "init_fail"},
	"vrrp_instance": {"state", "interface", "virtual_router_id", "priority", "advert_int", "nopreempt", "preempt_delay",
		"unicast_src_ip", "unicast_peer", "authentication", "virtual_ipaddress", "virtual_ipaddress_excluded",
		"track_script", "track_interface", "notify_master", "notify_backup", "notify_fault", "notify", "garp_master_delay",
		"dont_track_primary", "use_vmac", "vmac_xmit_base", "native_ipv6", "version"},
	"authentication": {"auth_type", "auth_pass"},
}

// kaNode is a keepalived.conf statement: words, and a block.
type kaNode struct {
	line  int
	words []string
	block []kaNode
}

// parseKABlocks tokenises keepalived.conf ('#' and '!' comments, '{' '}'
// blocks) into statements.
func parseKABlocks(data []byte) ([]kaNode, error) {
	type frame struct{ nodes []kaNode }
	stack := []*frame{{}}
	for i, raw := range strings.Split(string(data), "\n") {
		if j := strings.IndexAny(raw, "#!"); j >= 0 {
			raw = raw[:j]
		}
		raw = strings.ReplaceAll(strings.ReplaceAll(raw, "{", " { "), "}", " } ")
		words := splitKAWords(raw)
		var cur []string
		flush := func(open bool) {
			if len(cur) == 0 && !open {
				return
			}
			top := stack[len(stack)-1]
			top.nodes = append(top.nodes, kaNode{line: i + 1, words: cur})
			cur = nil
		}
		for _, w := range words {
			switch w {
			case "{":
				flush(true)
				stack = append(stack, &frame{})
			case "}":
				flush(false)
				if len(stack) == 1 {
					return nil, fmt.Errorf("(Line %d) Unexpected '}'", i+1)
				}
				done := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				top := stack[len(stack)-1]
				if len(top.nodes) == 0 {
					return nil, fmt.Errorf("(Line %d) Unexpected block", i+1)
				}
				top.nodes[len(top.nodes)-1].block = done.nodes
			default:
				cur = append(cur, w)
			}
		}
		flush(false)
	}
	if len(stack) != 1 {
		return nil, toolMsg("Missing '}' at end of configuration")
	}
	return stack[0].nodes, nil
}

// splitKAWords splits a line into words, a double-quoted string being
// one word.
func splitKAWords(s string) []string {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t\r")
		if s == "" {
			return out
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return append(out, s[1:])
			}
			out = append(out, s[1:end+1])
			s = s[end+2:]
			continue
		}
		end := strings.IndexAny(s, " \t\r")
		if end < 0 {
			return append(out, s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

// parseKeepalived parses keepalived.conf; errors read as keepalived's
// "(FILE: Line N) message".
func parseKeepalived(file string, data []byte) (*keepalivedConfig, error) {
	nodes, err := parseKABlocks(data)
	if err != nil {
		return nil, fmt.Errorf("(%s: %v", file, strings.TrimPrefix(err.Error(), "("))
	}
	cfg := &keepalivedConfig{scripts: map[string]vrrpScript{}}
	bad := func(n kaNode, format string, args ...any) error {
		return fmt.Errorf("(%s: Line %d) %s", file, n.line, fmt.Sprintf(format, args...))
	}
	checkKeywords := func(block string, nodes []kaNode) error {
		for _, n := range nodes {
			if !slices.Contains(keepalivedKeywords[block], n.words[0]) {
				return bad(n, "Unknown keyword '%s'", n.words[0])
			}
		}
		return nil
	}
	for _, n := range nodes {
		switch n.words[0] {
		case "global_defs":
			if err := checkKeywords("global_defs", n.block); err != nil {
				return nil, err
			}
		case "vrrp_script":
			if len(n.words) != 2 {
				return nil, bad(n, "vrrp_script needs a name")
			}
			if err := checkKeywords("vrrp_script", n.block); err != nil {
				return nil, err
			}
			var s vrrpScript
			for _, k := range n.block {
				switch k.words[0] {
				case "script":
					if len(k.words) < 2 {
						return nil, bad(k, "script requires a command")
					}
					s.script = strings.Join(k.words[1:], " ")
				case "weight":
					if len(k.words) < 2 {
						return nil, bad(k, "weight requires a value")
					}
					w, err := strconv.Atoi(k.words[1])
					if err != nil || w < -253 || w > 253 {
						return nil, bad(k, "vrrp_script %s weight %s must be in [-253, 253]", n.words[1], k.words[1])
					}
					s.weight = w
				}
			}
			if s.script == "" {
				return nil, bad(n, "vrrp_script %s has no script - disabling", n.words[1])
			}
			cfg.scripts[n.words[1]] = s
		case "vrrp_instance":
			if len(n.words) != 2 {
				return nil, bad(n, "vrrp_instance needs a name")
			}
			if err := checkKeywords("vrrp_instance", n.block); err != nil {
				return nil, err
			}
			in := vrrpInstance{name: n.words[1], priority: 100}
			hasIface := false
			for _, k := range n.block {
				arg := ""
				if len(k.words) > 1 {
					arg = k.words[1]
				}
				switch k.words[0] {
				case "state":
					if arg != "MASTER" && arg != "BACKUP" {
						return nil, bad(k, "(%s) unknown state '%s', defaulting to BACKUP", in.name, arg)
					}
				case "interface":
					hasIface = arg != ""
				case "virtual_router_id":
					id, err := strconv.Atoi(arg)
					if err != nil || id < 1 || id > 255 {
						return nil, bad(k, "(%s) VRID '%s' not valid - must be between 1 & 255", in.name, arg)
					}
					in.routerID = id
				case "priority":
					p, err := strconv.Atoi(arg)
					if err != nil || p < 1 || p > 255 {
						return nil, bad(k, "(%s) Priority not valid! must be between 1 & 255. Reconfigure !", in.name)
					}
					in.priority = p
				case "nopreempt":
					in.nopreempt = true
				case "unicast_src_ip":
					in.srcIP = arg
				case "virtual_ipaddress":
					for _, v := range k.block {
						a := v.words[0]
						if i := strings.IndexByte(a, '/'); i >= 0 {
							a = a[:i]
						}
						if _, err := netip.ParseAddr(a); err != nil {
							return nil, bad(v, "(%s) Invalid virtual_ipaddress %s", in.name, v.words[0])
						}
						in.vips = append(in.vips, a)
					}
				case "track_script":
					for _, v := range k.block {
						in.tracks = append(in.tracks, v.words[0])
					}
				case "authentication":
					if err := checkKeywords("authentication", k.block); err != nil {
						return nil, err
					}
				}
			}
			switch {
			case !hasIface:
				return nil, bad(n, "(%s) Unknown interface !", in.name)
			case in.routerID == 0:
				return nil, bad(n, "(%s) the virtual router id must be set", in.name)
			case len(in.vips) == 0:
				return nil, bad(n, "(%s) No VIP specified; at least one is required", in.name)
			}
			for _, t := range in.tracks {
				if _, ok := cfg.scripts[t]; !ok {
					return nil, bad(n, "(%s) track script %s not found, ignoring...", in.name, t)
				}
			}
			cfg.instances = append(cfg.instances, in)
		default:
			return nil, bad(n, "Unknown keyword '%s'", n.words[0])
		}
	}
	return cfg, nil
}

// keepalivedTool is /usr/sbin/keepalived: --config-test (-t) with -f
// (--use-file) FILE checks a configuration, exiting 4
// (KEEPALIVED_EXIT_CONFIG, keepalived/include/main.h) on an error;
// --version. The daemon is keepalived.service.
func keepalivedTool(_ context.Context, _ *ubuntu.Machine, p *sshtest.Process) int {
	test := false
	file := keepalivedCfgFile
	args := p.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-t" || a == "--config-test":
			test = true
		case a == "-f" || a == "--use-file":
			if i+1 >= len(args) {
				return p.Fail(1, "option requires an argument -- 'f'")
			}
			i++
			file = args[i]
		case strings.HasPrefix(a, "--use-file="):
			file = strings.TrimPrefix(a, "--use-file=")
		case a == "-v" || a == "--version":
			fmt.Fprintf(p.Stderr, "Keepalived v2.2.4 (08/21,2021)\n")
			return 0
		default:
			return p.Fail(2, "%s: not modelled by internal/sim/kube (keepalived runs as keepalived.service; --config-test -f FILE checks a file)", a)
		}
	}
	if !test {
		return p.Fail(2, "only `keepalived --config-test -f FILE` is modelled by internal/sim/kube")
	}
	data, err := p.FS.ReadFile(file)
	if err != nil {
		fmt.Fprintf(p.Stderr, "Configuration file '%s' is not a regular non-executable file\n", file)
		return 4
	}
	if _, err := parseKeepalived(file, data); err != nil {
		fmt.Fprintln(p.Stderr, err)
		return 4
	}
	return 0
}

// keepalivedStart loads keepalived.conf. The unit starts only with a
// non-empty file (ConditionFileNotEmpty); a configuration with errors
// fails the start or reload.
func (w *World) keepalivedStart(m *ubuntu.Machine) error {
	data, err := m.Server().FS().ReadFile(keepalivedCfgFile)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	cfg, err := parseKeepalived(keepalivedCfgFile, data)
	if err != nil {
		return fmt.Errorf("keepalived: %v", err)
	}
	st := lbOf(m)
	st.mu.Lock()
	st.keepalived = cfg
	st.mu.Unlock()
	w.mu.Lock()
	w.lbs[m] = true
	w.mu.Unlock()
	return nil
}

func keepalivedStop(m *ubuntu.Machine) error {
	st := lbOf(m)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.keepalived = nil
	return nil
}

// VIPHolder returns the machine that holds the virtual IP vip, or nil:
// among the machines whose keepalived.service is active with a loaded
// configuration naming vip, the VRRP election (RFC 5798 6.4: the highest
// priority becomes master; on a tie the higher primary address) over
// each instance's effective priority. A tracked script that fails puts
// the instance in FAULT (it gives the address up) unless the script has
// a weight, which is then added to the priority when it succeeds (weight
// > 0) or when it fails (weight < 0) (keepalived.conf(5), vrrp_script
// "weight"). The scripts the simulation evaluates: `systemctl is-active
// [--quiet] UNIT`, `killall -0 NAME` / `pidof NAME` / `pgrep NAME` (the
// unit NAME.service is active), and curl/wget of https://HOST:PORT/...
// (the machine's own API server or HAProxy answers on PORT: the script
// runs there); any other script fails.
func (w *World) VIPHolder(vip string) *ubuntu.Machine {
	if a, err := netip.ParseAddr(vip); err == nil {
		vip = a.String()
	}
	w.mu.Lock()
	var ms []*ubuntu.Machine
	for m := range w.lbs {
		ms = append(ms, m)
	}
	w.mu.Unlock()
	var best *ubuntu.Machine
	bestPrio, bestAddr := -1, netip.Addr{}
	for _, m := range ms {
		if !m.Service("keepalived").Active {
			continue
		}
		st := lbOf(m)
		st.mu.Lock()
		cfg := st.keepalived
		st.mu.Unlock()
		if cfg == nil {
			continue
		}
		for _, in := range cfg.instances {
			if !slices.Contains(in.vips, vip) {
				continue
			}
			prio, ok := w.effectivePriority(m, cfg, in)
			if !ok {
				continue
			}
			addr, _ := netip.ParseAddr(in.srcIP)
			if !addr.IsValid() {
				addr, _ = netip.ParseAddr(hostAddress(m))
			}
			if prio > bestPrio || prio == bestPrio && addr.Compare(bestAddr) > 0 {
				best, bestPrio, bestAddr = m, prio, addr
			}
		}
	}
	return best
}

func (w *World) effectivePriority(m *ubuntu.Machine, cfg *keepalivedConfig, in vrrpInstance) (int, bool) {
	prio := in.priority
	for _, t := range in.tracks {
		s := cfg.scripts[t]
		ok := w.scriptPasses(m, s.script)
		switch {
		case s.weight == 0 && !ok:
			return 0, false
		case s.weight > 0 && ok, s.weight < 0 && !ok:
			prio += s.weight
		}
	}
	return min(max(prio, 1), 254), true
}

// answersLocally reports whether an API server answers a check script's
// request to hostport on m itself: the script runs on m, and its
// localhost, m's address or a VIP (which, once held, is m's) all lead to
// m's own API server or HAProxy. The HAProxy's backends are dialled
// without VIPs, so that no election depends on itself.
func (w *World) answersLocally(m *ubuntu.Machine, hostport string) bool {
	_, portS, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	port, _ := strconv.Atoi(portS)
	if w.apiserverOn(m, port) != nil {
		return true
	}
	c, err := w.haproxyRoute(m, port, 1, true)
	return c != nil && err == nil
}

// isVIP reports whether some loaded keepalived configuration names ip
// as a virtual address.
func (w *World) isVIP(ip string) bool {
	if a, err := netip.ParseAddr(ip); err == nil {
		ip = a.String()
	}
	w.mu.Lock()
	var ms []*ubuntu.Machine
	for m := range w.lbs {
		ms = append(ms, m)
	}
	w.mu.Unlock()
	for _, m := range ms {
		st := lbOf(m)
		st.mu.Lock()
		cfg := st.keepalived
		st.mu.Unlock()
		if cfg == nil {
			continue
		}
		for _, in := range cfg.instances {
			if slices.Contains(in.vips, ip) {
				return true
			}
		}
	}
	return false
}

// scriptPasses evaluates a tracked script (see VIPHolder).
func (w *World) scriptPasses(m *ubuntu.Machine, script string) bool {
	f := strings.Fields(script)
	if len(f) == 0 {
		return false
	}
	if data, err := m.Server().FS().ReadFile(f[0]); err == nil && len(f) == 1 && strings.HasPrefix(string(data), "#!") {
		// A script file: judge its last command line.
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		return w.scriptPasses(m, lines[len(lines)-1])
	}
	base := f[0][strings.LastIndexByte(f[0], '/')+1:]
	args := slices.DeleteFunc(slices.Clone(f[1:]), func(s string) bool { return strings.HasPrefix(s, "-") })
	switch base {
	case "systemctl":
		if len(args) == 2 && args[0] == "is-active" {
			return m.Service(args[1]).Active
		}
	case "killall", "pidof", "pgrep":
		if len(args) == 1 {
			return m.Service(args[0] + ".service").Active
		}
	case "curl", "wget":
		for _, a := range args {
			if rest, ok := strings.CutPrefix(a, "https://"); ok {
				hostport, _, _ := strings.Cut(rest, "/")
				return w.answersLocally(m, hostport)
			}
		}
	}
	return false
}

// toolMsg is an error worded exactly as the real program words it
// (capitals and final punctuation included).
type toolMsg string

func (e toolMsg) Error() string { return string(e) }

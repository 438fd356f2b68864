package lb

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// The names and ports of the load balancer's haproxy.cfg, the reference's
// (tacker samples/mgmt_driver/kubernetes/kubespray/install_external_lb.sh
// and cnf_nodeport_setting/configure_lb.sh).
const (
	// ConfigFile is HAProxy's configuration on the load balancer VM; in
	// native mode the whole file is mgmtkit's.
	ConfigFile = "/etc/haproxy/haproxy.cfg"
	// DefaultAPIPort is the port the load balancer serves the Kubernetes
	// API on, the reference's 8383: the VIM's endpoint is
	// https://LB:8383.
	DefaultAPIPort = 8383
	// APIServerPort is the API server's own port on every master
	// (kubeadm's and kubespray's kube_apiserver_port default).
	APIServerPort = 6443
	// APIBackend names the API frontend and its backend, the masters.
	APIBackend = "kubernetes-apiserver"
	// NodePortBackend names the backend of every node, which the
	// frontends of NodePort Services forward to.
	NodePortBackend = "kubernetes-nodeport"
)

// Server is one server of a backend: a Kubernetes node.
type Server struct {
	// Name is the server's name in its backend: the node's name
	// (Kubernetes' node name, the inventory's host name), unique in
	// the backend, made of the characters HAProxy allows in names
	// (configuration.txt section 4: "upper and lower case letters,
	// digits, '-' (dash), '_' (underscore) , '.' (dot) and ':'
	// (colon)"), at most 253 (a Kubernetes node name's limit). Adding
	// and removing a server goes by this exact name.
	Name string
	// Address is the node's IP address on the cluster network (its
	// NIC address), without a port.
	Address string
}

// Service is a NodePort Service the load balancer publishes: a frontend
// named "<Namespace>_<Name>" (as the reference's configure_lb.sh names
// it) that listens on each of the Service's node ports on every address
// of the load balancer and forwards to the same port of a node
// ([NodePortBackend]).
type Service struct {
	// Namespace and Name are the Service's (RFC 1123 labels).
	Namespace, Name string
	// NodePorts are the node ports of its TCP ports, each from 1 to
	// 65535 (the API server's default range is 30000-32767, and
	// --service-node-port-range may move it).
	NodePorts []int
}

// frontend is the frontend's name.
func (s Service) frontend() string { return s.Namespace + "_" + s.Name }

// Config is the load balancer's HAProxy configuration as data:
//
//   - a frontend [APIBackend] on APIPort (every address) whose backend
//     balances (roundrobin) over the masters' API servers, each
//     "server NAME ADDRESS:6443 check" with a TCP connect check, so
//     that a master whose API server is down gets no connection;
//   - a backend [NodePortBackend] with every node of Nodes, "server
//     NAME ADDRESS" without a port: HAProxy then connects to the port
//     the client connected to (configuration.txt 5.2, "server", <port>:
//     "If unset, the same port the client connected to will be used"),
//     so one backend serves every NodePort. It has no check:
//     HAProxy's check needs a port ("server X has neither service port
//     nor check port" is a fatal error, which the reference's
//     "server workerN IP check" lines hit: see the package
//     documentation), and one node port says nothing about another.
//     The hooks remove a node from it before the node goes;
//   - for each Service, a frontend binding its node ports, forwarding
//     to [NodePortBackend].
//
// Every section is "mode tcp": TLS passes through to the API servers,
// whose certificate the VIM verifies (the load balancer's address must
// be among its names: kubespray's supplementary_addresses_in_ssl_keys).
type Config struct {
	// APIPort is the API frontend's port; [DefaultAPIPort] when 0.
	APIPort int
	// Masters are the API servers' nodes. At least one.
	Masters []Server
	// Nodes are the nodes NodePort traffic goes to: the masters and
	// the workers, as the reference lists them ([NewConfig]). May be
	// empty only without Services.
	Nodes []Server
	// Services are the published NodePort Services.
	Services []Service
}

// NewConfig returns the configuration of a cluster of masters and
// workers: the masters behind the API port, and the masters and the
// workers (a NodePort is served on every node, the control plane's
// included) behind [NodePortBackend], as the reference's script writes
// them.
func NewConfig(masters, workers []Server) Config {
	return Config{
		Masters: slices.Clone(masters),
		Nodes:   append(slices.Clone(masters), workers...),
	}
}

// AddNodes returns c with the servers in [NodePortBackend]: a server of
// the same name is replaced (a healed node keeps its name and may get a
// new address), others are added. The Masters are not changed.
func (c Config) AddNodes(servers ...Server) Config {
	c = c.clone()
	for _, s := range servers {
		if i := slices.IndexFunc(c.Nodes, func(n Server) bool { return n.Name == s.Name }); i >= 0 {
			c.Nodes[i] = s
		} else {
			c.Nodes = append(c.Nodes, s)
		}
	}
	return c
}

// RemoveNodes returns c without the servers of [NodePortBackend] named
// exactly names: removing "worker-1" never touches "worker-12"
// (Tacker's `grep -n worker1 haproxy.cfg` does: its first match may be
// worker12's line). A name that is not there is not an error: a rerun
// after a partial failure finds it gone. The Masters are not changed.
func (c Config) RemoveNodes(names ...string) Config {
	c = c.clone()
	c.Nodes = slices.DeleteFunc(c.Nodes, func(n Server) bool { return slices.Contains(names, n.Name) })
	return c
}

// clone returns a copy of c that shares no slice with it.
func (c Config) clone() Config {
	c.Masters = slices.Clone(c.Masters)
	c.Nodes = slices.Clone(c.Nodes)
	c.Services = slices.Clone(c.Services)
	for i := range c.Services {
		c.Services[i].NodePorts = slices.Clone(c.Services[i].NodePorts)
	}
	return c
}

// serverName is a server name HAProxy takes (see [Server.Name]).
var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$`)

// dnsLabel is an RFC 1123 label, as Kubernetes validates namespaces and
// Service names (k8s.io/apimachinery/pkg/util/validation IsDNS1123Label).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate checks c: an *lcm.ParamsError naming every problem by its
// path ("Masters[1].Address"), or nil. Render and ConfigureLB call it;
// nothing runs on a configuration it refuses.
func (c Config) Validate() error {
	var probs []lcm.Problem
	add := func(path, format string, args ...any) {
		probs = append(probs, lcm.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	port := cmp.Or(c.APIPort, DefaultAPIPort)
	if port < 1 || port > 65535 {
		add("APIPort", "must be a port from 1 to 65535, got %d", c.APIPort)
	}
	if len(c.Masters) == 0 {
		add("Masters", "must name at least one master")
	}
	servers := func(field string, list []Server) {
		names, addrs := map[string]int{}, map[netip.Addr]int{}
		for i, s := range list {
			at := field + "[" + strconv.Itoa(i) + "]"
			if !serverName.MatchString(s.Name) {
				add(at+".Name", "%q is not a server name (letters, digits, '.', '_', ':' and '-', starting with a letter or digit, at most 253)", s.Name)
			} else if j, dup := names[s.Name]; dup {
				// HAProxy: "another server named 'X' was already
				// defined at line N, please use distinct names".
				add(at+".Name", "%q is also %s[%d]'s name: server names are unique in a backend", s.Name, field, j)
			} else {
				names[s.Name] = i
			}
			a, err := netip.ParseAddr(s.Address)
			switch {
			case err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast():
				add(at+".Address", "%q is not a node's IP address", s.Address)
			case addrs[a.Unmap()] > 0:
				add(at+".Address", "%s is also %s[%d]'s address", s.Address, field, addrs[a.Unmap()]-1)
			default:
				addrs[a.Unmap()] = i + 1
			}
		}
	}
	servers("Masters", c.Masters)
	servers("Nodes", c.Nodes)
	if len(c.Services) > 0 && len(c.Nodes) == 0 {
		add("Nodes", "must name the nodes the %d Services' node ports forward to", len(c.Services))
	}
	frontends := map[string]int{}
	bound := map[int]string{port: "APIPort"}
	for i, s := range c.Services {
		at := "Services[" + strconv.Itoa(i) + "]"
		if !dnsLabel.MatchString(s.Namespace) {
			add(at+".Namespace", "%q is not a namespace name (RFC 1123 label)", s.Namespace)
		}
		if !dnsLabel.MatchString(s.Name) {
			add(at+".Name", "%q is not a Service name (RFC 1123 label)", s.Name)
		}
		if j, dup := frontends[s.frontend()]; dup {
			add(at, "%s/%s is also Services[%d]", s.Namespace, s.Name, j)
		}
		frontends[s.frontend()] = i
		if len(s.NodePorts) == 0 {
			add(at+".NodePorts", "must name at least one node port")
		}
		for k, p := range s.NodePorts {
			pat := at + ".NodePorts[" + strconv.Itoa(k) + "]"
			switch other, dup := bound[p]; {
			case p < 1 || p > 65535:
				add(pat, "must be a port from 1 to 65535, got %d", p)
			case dup:
				add(pat, "port %d is also %s's: one port, one frontend", p, other)
			default:
				bound[p] = pat
			}
		}
	}
	if probs == nil {
		return nil
	}
	return &lcm.ParamsError{Problems: probs}
}

// ubuntuGlobal is the start of haproxy.cfg as Ubuntu 22.04's haproxy
// package ships it (haproxy 2.4.24-0ubuntu0.22.04.1, debian/haproxy.cfg:
// Debian's file with "expose-fd listeners" on the stats socket, which
// lets a reload hand the listening sockets over), kept byte for byte so
// that a diff against the packaged file shows only mgmtkit's sections.
// Its defaults are "mode http": every section below sets "mode tcp" and
// "option tcplog" for itself. The errorfile lines name files the package
// installs (/etc/haproxy/errors/*.http), which haproxy -c opens.
const ubuntuGlobal = `global
	log /dev/log	local0
	log /dev/log	local1 notice
	chroot /var/lib/haproxy
	stats socket /run/haproxy/admin.sock mode 660 level admin expose-fd listeners
	stats timeout 30s
	user haproxy
	group haproxy
	daemon

	# Default SSL material locations
	ca-base /etc/ssl/certs
	crt-base /etc/ssl/private

	# See: https://ssl-config.mozilla.org/#server=haproxy&server-version=2.0.3&config=intermediate
        ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384
        ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256
        ssl-default-bind-options ssl-min-ver TLSv1.2 no-tls-tickets

defaults
	log	global
	mode	http
	option	httplog
	option	dontlognull
        timeout connect 5000
        timeout client  50000
        timeout server  50000
	errorfile 400 /etc/haproxy/errors/400.http
	errorfile 403 /etc/haproxy/errors/403.http
	errorfile 408 /etc/haproxy/errors/408.http
	errorfile 500 /etc/haproxy/errors/500.http
	errorfile 502 /etc/haproxy/errors/502.http
	errorfile 503 /etc/haproxy/errors/503.http
	errorfile 504 /etc/haproxy/errors/504.http
`

// sectionsTemplate renders mgmtkit's sections (configuration.txt section
// 4, "Proxies"). Every value it prints was validated by Config.Validate
// and formatted by render: names of a restricted alphabet, addresses
// printed by net/netip, ports as integers. The API's frontend and
// backend keep connections idle for up to an hour, as the API's watches
// are (kubeadm's load balancer does the same); the NodePort sections
// keep the packaged defaults' timeouts.
var sectionsTemplate = template.Must(template.New("haproxy.cfg").Parse(`
# Managed by mgmtkit (package lb): the external load balancer of a
# Kubernetes cluster. The file is rendered whole from data; edits are lost.

frontend {{.APIBackend}}
	mode tcp
	option tcplog
	bind *:{{.APIPort}}
	timeout client 1h
	default_backend {{.APIBackend}}

backend {{.APIBackend}}
	mode tcp
	balance roundrobin
	option tcp-check
	timeout server 1h
	default-server inter 5s fall 3 rise 2
{{- range .Masters}}
	server {{.Name}} {{.Addr}} check
{{- end}}
{{- if .Nodes}}

backend {{.NodePortBackend}}
	mode tcp
	balance roundrobin
{{- range .Nodes}}
	server {{.Name}} {{.Addr}}
{{- end}}
{{- end}}
{{- range .Frontends}}

frontend {{.Name}}
	mode tcp
	option tcplog
{{- range .Ports}}
	bind *:{{.}}
{{- end}}
	default_backend {{$.NodePortBackend}}
{{- end}}
`))

// Render returns the whole haproxy.cfg of c: Ubuntu's packaged global
// and defaults sections, then c's (see [Config]). The output depends on
// c's content only, not on its order: servers are sorted by name,
// frontends by name and ports in increasing order, so that the same
// cluster listed in another order renders the same bytes, and
// [ConfigureLB] does not reload for nothing. It refuses what
// [Config.Validate] refuses.
func Render(c Config) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	type server struct{ Name, Addr string }
	type frontend struct {
		Name  string
		Ports []int
	}
	data := struct {
		APIBackend, NodePortBackend string
		APIPort                     int
		Masters, Nodes              []server
		Frontends                   []frontend
	}{APIBackend: APIBackend, NodePortBackend: NodePortBackend, APIPort: cmp.Or(c.APIPort, DefaultAPIPort)}
	servers := func(list []Server, port int) []server {
		out := make([]server, 0, len(list))
		for _, s := range list {
			out = append(out, server{s.Name, serverAddr(netip.MustParseAddr(s.Address), port)})
		}
		slices.SortFunc(out, func(a, b server) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	data.Masters = servers(c.Masters, APIServerPort)
	data.Nodes = servers(c.Nodes, 0)
	for _, s := range c.Services {
		ports := slices.Clone(s.NodePorts)
		slices.Sort(ports)
		data.Frontends = append(data.Frontends, frontend{s.frontend(), ports})
	}
	slices.SortFunc(data.Frontends, func(a, b frontend) int { return strings.Compare(a.Name, b.Name) })
	var buf bytes.Buffer
	buf.WriteString(ubuntuGlobal)
	if err := sectionsTemplate.Execute(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// serverAddr is a server's address as HAProxy reads it, with port when
// not 0. HAProxy takes an address's last colon for the port's separator
// (configuration.txt 5.2 "server", <address>), so
// an IPv6 address is bracketed: "[fd00::5]:6443", and "[fd00::5]" for
// no port, which the real haproxy -c accepts (realtest), where a bare
// "fd00::5" is read as host "fd00:" and port 5.
func serverAddr(a netip.Addr, port int) string {
	a = a.Unmap()
	host := a.String()
	if a.Is6() {
		host = "[" + host + "]"
	}
	if port == 0 {
		return host
	}
	return host + ":" + strconv.Itoa(port)
}

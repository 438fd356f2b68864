package registry

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Top-level additionalParams keys this package reads.
const (
	// InstallParamKey holds the registry VNF's [InstallParams].
	InstallParamKey = "private_registry_installation_param"
	// ClusterParamKey holds a Kubernetes cluster VNF's parameters; this
	// package owns its private_registry_connection_info ([TrustParams]).
	ClusterParamKey = "k8s_cluster_installation_param"
)

// DefaultPort is the registry's TCP port when port_no is absent.
const DefaultPort = 5000

// InstallParams is private_registry_installation_param: how to reach the
// registry VNF's VM and what to run on it.
type InstallParams struct {
	// SSHCPName is ssh_cp_name, the connection point the driver connects
	// to.
	SSHCPName string `json:"ssh_cp_name" params:"required"`
	// SSHUsername and SSHPassword are the VM's login.
	SSHUsername string        `json:"ssh_username" params:"required"`
	SSHPassword remote.Secret `json:"ssh_password" params:"required"`
	// ImagePath is image_path: a `docker save` tar in the VNF package
	// holding the registry image. Empty: the image is pulled from Docker
	// Hub. Validation makes it the canonical package path.
	ImagePath string `json:"image_path"`
	// Image is the archive at ImagePath as validation read it
	// ([ReadImageArchive]); nil without image_path or without a package.
	Image *ImageArchive `json:"-"`
	// PortNo is port_no, the registry's TCP port; [DefaultPort] when
	// absent. A number or a decimal string.
	PortNo lcm.Int `json:"port_no"`
	// Proxy is the HTTP proxy Docker uses to reach Docker Hub.
	Proxy *system.Proxy `json:"proxy"`
}

// Port returns port_no, or [DefaultPort].
func (p InstallParams) Port() int {
	if p.PortNo == 0 {
		return DefaultPort
	}
	return p.PortNo.Int()
}

// Validate checks the parameters before anything runs.
func (p *InstallParams) Validate(v *lcm.Validator) {
	heat.ValidateResourceName(v, "ssh_cp_name", p.SSHCPName)
	v.Username("ssh_username", p.SSHUsername)
	if p.ImagePath != "" {
		if resolved, ok := v.PackageFile("image_path", p.ImagePath); ok {
			p.ImagePath = resolved
			if pkg := v.Package(); pkg != nil {
				// Judged now, before any command: the manifest's tag
				// reaches docker's argv.
				if arc, err := readImageArchive(pkg, resolved); err != nil {
					v.At("image_path").Errorf("docker save archive: %v", err)
				} else {
					p.Image = &arc
				}
			}
		}
	}
	if p.PortNo != 0 && (p.PortNo < 1 || p.PortNo > 65535) {
		v.At("port_no").Errorf("must be a TCP port, 1 to 65535, got %d", p.PortNo)
	}
}

// TrustParams is this package's part of k8s_cluster_installation_param.
// A Kubernetes cluster driver embeds it in its own parameter struct, so
// that the one object decodes strictly into both.
type TrustParams struct {
	// PrivateRegistryConnectionInfo is private_registry_connection_info:
	// the registries every node must be able to pull from, at most
	// [MaxConnections].
	PrivateRegistryConnectionInfo []Connection `json:"private_registry_connection_info" params:"max=64"`
}

// MaxConnections caps private_registry_connection_info: every connection
// adds files and settings to every node, and a cluster that pulls from more
// registries than this is a mistake in the request.
const MaxConnections = 64

// Validate rejects two connections to the same server, compared in
// [CanonicalServer] form.
func (p *TrustParams) Validate(v *lcm.Validator) {
	for _, d := range duplicateServers(p.PrivateRegistryConnectionInfo) {
		v.At("private_registry_connection_info").Index(d.i).At("server").Errorf("repeats private_registry_connection_info[%d].server %q", d.first, p.PrivateRegistryConnectionInfo[d.i].Server)
	}
}

// duplicate is a connection (i) whose server repeats an earlier one's
// (first) in canonical form.
type duplicate struct{ i, first int }

// duplicateServers returns every connection whose server repeats an
// earlier one's in canonical form.
func duplicateServers(conns []Connection) []duplicate {
	var dups []duplicate
	seen := map[string]int{}
	for i, c := range conns {
		if c.Server == "" {
			continue
		}
		key := CanonicalServer(c.Server)
		if j, dup := seen[key]; dup {
			dups = append(dups, duplicate{i, j})
			continue
		}
		seen[key] = i
	}
	return dups
}

// CanonicalServer returns server (host[:port]) in the one spelling that
// identifies its registry: a host name in lower case (DNS names are
// case-insensitive, RFC 4343), an IP address as [netip.Addr.String]
// writes it (so "[0:0::1]:5000" is "[::1]:5000"), the port as given.
// "host" and "host:443" stay different: containerd looks their
// directories up under different names (hostDirectory in
// core/remotes/docker/config/hosts.go and hostPaths in config_unix.go:
// "host_443_", then "host:443", then "_default") and Docker keys
// insecure-registries and certs.d by the same string. A server that is
// not host[:port] is returned in lower case.
func CanonicalServer(server string) string {
	host, port := splitServer(server)
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.String()
		if ip.Is6() {
			host = "[" + host + "]"
		}
	} else {
		host = strings.ToLower(host)
	}
	if port == "" {
		return host
	}
	return host + ":" + port
}

// Host returns the host of the connection's server: its name or address
// (an IPv6 address without brackets), without the port; what a node's
// no_proxy must list to reach the registry directly.
func (c Connection) Host() string {
	host, _ := splitServer(c.Server)
	return host
}

// splitServer splits a server, host[:port], into its host (an IPv6
// address without its brackets) and its port ("" when it has none).
func splitServer(server string) (host, port string) {
	if h, p, err := net.SplitHostPort(server); err == nil {
		return h, p
	}
	if inner, ok := strings.CutPrefix(server, "["); ok {
		return strings.TrimSuffix(inner, "]"), ""
	}
	return server, ""
}

// ConnectionType is connection_type: how nodes talk to a registry.
type ConnectionType int

// The connection types of the spec.
const (
	HTTP  ConnectionType = 0
	HTTPS ConnectionType = 1
)

func (t ConnectionType) String() string {
	switch t {
	case HTTP:
		return "HTTP"
	case HTTPS:
		return "HTTPS"
	}
	return strconv.Itoa(int(t))
}

// UnmarshalJSON accepts 0, 1, "0" and "1" (the spec's samples send
// strings); anything else is an error that says so.
func (t *ConnectionType) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	switch s {
	case "0":
		*t = HTTP
	case "1":
		*t = HTTPS
	default:
		return fmt.Errorf(`must be "0" (HTTP) or "1" (HTTPS), got %s`, string(b))
	}
	return nil
}

// MarshalJSON encodes the type as the spec's samples do, a string.
func (t ConnectionType) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.Itoa(int(t)))
}

// Connection is one entry of private_registry_connection_info.
type Connection struct {
	// ConnectionType is connection_type: "0" HTTP, "1" HTTPS.
	ConnectionType *ConnectionType `json:"connection_type" params:"required"`
	// Server is server: the registry as image names start with it,
	// host[:port] ("192.168.0.10:5000", "registry.example.com"); at most
	// 259 bytes, a 253-byte DNS name and a port.
	//
	// Files and entries are written under Server exactly as given, not in
	// [CanonicalServer] form: containerd (hostPaths in
	// core/remotes/docker/config/config_unix.go), Docker (certs.d:
	// hostCertsDir in moby's registry/registry.go; insecure-registries)
	// and CRI-O find a registry's settings by the
	// host of the image reference, byte for byte, and image references
	// keep the case they are written in. So spell Server as the images
	// do: pods that pull "Registry.Example.com:5000/app" need
	// "Registry.Example.com:5000" here. Two connections whose servers
	// are one registry in canonical form are refused.
	Server string `json:"server" params:"required,max=259"`
	// Username and Password log the nodes in to the registry; both or
	// neither (there are no default credentials). Username is at most 256
	// bytes and is a `docker login --username` value: no white space,
	// ':', ';', control characters or leading '-'.
	Username string        `json:"username" params:"max=256"`
	Password remote.Secret `json:"password"`
	// CertificatePath is certificate_path: the registry's CA certificate
	// (PEM) in the VNF package, for HTTPS. Validation makes it the
	// canonical package path and, given the package, reads and checks the
	// file once; trust installs what it read.
	CertificatePath string `json:"certificate_path"`
	// HostsString is hosts_string, "<IP> <FQDN>": a line for /etc/hosts
	// when the nodes have no DNS for the registry's name; at most 300
	// bytes, an IPv6 address and a 253-byte name. Validation parses it
	// once ([Connection.HostsEntry]).
	HostsString string `json:"hosts_string" params:"max=300"`

	// What validation parsed and read, with the value it came from, so
	// that trust uses them instead of parsing again, and a field changed
	// after validation is not answered from a stale copy.
	hosts     HostsEntry   // hosts_string, canonical
	hostsFrom string       // the HostsString hosts came from
	ca        string       // the certificate_path file, checked
	caFrom    string       // the CertificatePath ca was read from
	caPkg     *lcm.Package // the package ca was read from
}

// HostsEntry is one /etc/hosts line: an address and the name it answers
// for. Validation parses hosts_string into one ([Connection.HostsEntry]).
type HostsEntry struct {
	// IP is the address, without a zone.
	IP netip.Addr
	// Name is the host name in lower case, without a trailing dot.
	Name string
}

// String returns the entry as an /etc/hosts line, "IP NAME", or "" for
// the zero entry.
func (e HostsEntry) String() string {
	if !e.IP.IsValid() {
		return ""
	}
	return e.IP.String() + " " + e.Name
}

// Type returns the connection type (HTTP when absent, which validation
// does not let through).
func (c Connection) Type() ConnectionType {
	if c.ConnectionType == nil {
		return HTTP
	}
	return *c.ConnectionType
}

// Validate checks every field; see the package documentation for the
// rules.
func (c *Connection) Validate(v *lcm.Validator) {
	if c.Server != "" {
		if p := checkServer(c.Server); p != nil {
			p.report(v.At("server"))
		} else if c.ConnectionType != nil && *c.ConnectionType == HTTP && strings.HasPrefix(c.Server, "[") && strings.HasSuffix(c.Server, "]") {
			// dockerd 20.10 (moby registry/config.go validateHostPort)
			// refuses "[fd00::1]" in insecure-registries ("invalid host")
			// and then does not start; with a port it is valid. Checked
			// against the real dockerd 20.10.24.
			v.At("server").Errorf("an IPv6 registry over HTTP needs its port (%s:5000): dockerd refuses %s in insecure-registries and then does not start", c.Server, c.Server)
		}
	}
	if (c.Username == "") != c.Password.IsZero() {
		field := "password"
		if c.Username == "" {
			field = "username"
		}
		v.At(field).Errorf("is required when %s is given (there are no default credentials)", map[string]string{"password": "username", "username": "password"}[field])
	}
	if strings.HasPrefix(c.Username, "-") {
		v.At("username").Errorf("must not start with '-', got %q", c.Username)
	} else if strings.ContainsFunc(c.Username, badUsernameRune) {
		v.At("username").Errorf("must not contain white space, ':', ';' or control characters, got %q", c.Username)
	}
	if c.CertificatePath != "" {
		if c.ConnectionType != nil && *c.ConnectionType == HTTP {
			v.At("certificate_path").Errorf(`is only for HTTPS (connection_type "1")`)
		} else if resolved, ok := v.PackageFile("certificate_path", c.CertificatePath); ok {
			c.CertificatePath = resolved
			if pkg := v.Package(); pkg != nil {
				// Read and judged once, here; trust installs these bytes.
				if ca, err := readCA(pkg, resolved); err != nil {
					v.At("certificate_path").Errorf("%s: %v", resolved, err)
				} else {
					c.ca, c.caFrom, c.caPkg = ca, resolved, pkg
				}
			}
		}
	}
	if c.HostsString != "" {
		if e, p := parseHostsString(c.HostsString); p != nil {
			p.report(v.At("hosts_string"))
		} else {
			c.hosts, c.hostsFrom = e, c.HostsString
		}
	}
}

// readCA reads a CA file from the VNF package and checks that it holds
// PEM certificates and nothing else.
func readCA(pkg *lcm.Package, file string) (string, error) {
	b, err := pkg.ReadFile(file)
	if err == nil {
		err = checkCertificates(b)
	}
	return string(b), err
}

// complete fills in what [Connection.Validate] parses and reads, for a
// connection that did not go through it (built in Go rather than
// decoded, or changed since): the hosts entry, and the CA read from pkg
// (read again when pkg is another package than the one validation read;
// a nil pkg keeps what validation read).
// A decoded connection costs nothing here. Errors name the field, as
// validation would, below the connection's index i.
func (c *Connection) complete(i int, pkg *lcm.Package) error {
	at := func(field string) string { return fmt.Sprintf("private_registry_connection_info[%d].%s", i, field) }
	if c.HostsString != c.hostsFrom {
		c.hosts, c.hostsFrom = HostsEntry{}, ""
		if c.HostsString != "" {
			e, p := parseHostsString(c.HostsString)
			if p != nil {
				return fmt.Errorf("%s: %s", at("hosts_string"), fmt.Sprintf(p.format, p.args...))
			}
			c.hosts, c.hostsFrom = e, c.HostsString
		}
	}
	if c.CertificatePath != c.caFrom || pkg != nil && pkg != c.caPkg {
		c.ca, c.caFrom, c.caPkg = "", "", nil
		if c.CertificatePath != "" {
			if pkg == nil {
				return fmt.Errorf("%s: no VNF package to read it from", at("certificate_path"))
			}
			ca, err := readCA(pkg, c.CertificatePath)
			if err != nil {
				return fmt.Errorf("%s %s: %w", at("certificate_path"), c.CertificatePath, err)
			}
			c.ca, c.caFrom, c.caPkg = ca, c.CertificatePath, pkg
		}
	}
	return nil
}

// badUsernameRune reports the runes a registry username must not hold:
// white space, ':' (the separator of HTTP basic auth), ';', and anything
// unprintable (control and format characters).
func badUsernameRune(r rune) bool {
	return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == ':' || r == ';'
}

// HostsEntry returns hosts_string as validation parsed it, and whether
// there is a valid one. A connection not validated since HostsString was
// set (built in Go rather than decoded) has it parsed now.
func (c Connection) HostsEntry() (HostsEntry, bool) {
	switch {
	case c.HostsString == "":
		return HostsEntry{}, false
	case c.HostsString == c.hostsFrom:
		return c.hosts, true
	}
	e, p := parseHostsString(c.HostsString)
	return e, p == nil
}

// HostsLine returns hosts_string normalised to "IP FQDN", or "" when
// there is no valid one (see [Connection.HostsEntry]).
func (c Connection) HostsLine() string {
	e, _ := c.HostsEntry()
	return e.String()
}

// problem is a validation message and its arguments, kept unformatted so
// that [lcm.Validator.Errorf] formats it and clips the values in it.
type problem struct {
	format string
	args   []any
}

func problemf(format string, args ...any) *problem { return &problem{format, args} }

func (p *problem) report(v *lcm.Validator) { v.Errorf(p.format, p.args...) }

// checkServer accepts host[:port]: an IPv4 address, a bracketed IPv6
// address without a zone, or a DNS name without a trailing dot (image
// references cannot have one), and a port from 1 to 65535 written as
// [lcm.ParsePort] reads it.
func checkServer(s string) *problem {
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/ \t\r\n@?#") {
		return problemf("must be host[:port] with no scheme, path or spaces, got %q", s)
	}
	host := s
	if h, port, err := net.SplitHostPort(s); err == nil {
		host = h
		if _, err := lcm.ParsePort(port); err != nil {
			return problemf("has port %q, which %v", port, err)
		}
		if strings.HasPrefix(s, "[") {
			host = "[" + h + "]"
		}
	} else if strings.Contains(s, ":") && !strings.HasPrefix(s, "[") {
		return problemf("must be host[:port], got %q", s)
	}
	if inner, ok := strings.CutPrefix(host, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		ip, err := netip.ParseAddr(inner)
		switch {
		case !ok || err != nil || !ip.Is6():
			return problemf("has host %q, but only an IPv6 address goes in brackets", host)
		case ip.Zone() != "":
			return problemf("has host %q, which has an IPv6 zone; a registry address cannot have one", host)
		}
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil { // IPv4: IPv6 has colons
		return nil
	}
	if strings.HasSuffix(host, ".") {
		return problemf("has host %q, which ends in a dot; write the name without it", host)
	}
	if !lcm.IsDNSName(host) {
		return problemf("has host %q, which is neither an IP address nor a DNS name", host)
	}
	return nil
}

// parseHostsString parses "<IP> <FQDN>". The name has no trailing dot: an
// /etc/hosts name "r.example.com." does not answer lookups of
// "r.example.com", which is what image references name.
func parseHostsString(s string) (HostsEntry, *problem) {
	fields := strings.Fields(s)
	if len(fields) != 2 || strings.ContainsAny(s, "\r\n") {
		return HostsEntry{}, problemf(`must be "<IP address> <FQDN>", got %q`, s)
	}
	ip, err := netip.ParseAddr(fields[0])
	if err != nil || ip.Zone() != "" {
		return HostsEntry{}, problemf("must start with an IP address, got %q", fields[0])
	}
	if strings.HasSuffix(fields[1], ".") {
		return HostsEntry{}, problemf("must end with a host name without a trailing dot, got %q", fields[1])
	}
	if !lcm.IsDNSName(fields[1]) {
		return HostsEntry{}, problemf("must end with a host name, got %q", fields[1])
	}
	return HostsEntry{IP: ip, Name: strings.ToLower(fields[1])}, nil
}

// checkCertificates requires at least one PEM certificate block, each of
// which parses as X.509, and nothing that is not a certificate.
func checkCertificates(b []byte) error {
	n := 0
	rest := bytes.TrimSpace(b)
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return fmt.Errorf("is not a PEM certificate")
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a PEM %q block, want only CERTIFICATE blocks", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %v", n+1, err)
		}
		n++
		rest = bytes.TrimSpace(rest)
	}
	if n == 0 {
		return fmt.Errorf("is empty, want a PEM certificate")
	}
	return nil
}

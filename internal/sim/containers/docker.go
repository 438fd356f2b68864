package containers

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// Docker's files on a machine.
const (
	dockerDaemonJSON = "/etc/docker/daemon.json"
	dockerCertsDir   = "/etc/docker/certs.d"
	dockerSock       = "/var/run/docker.sock"
	dockerVersion    = "24.0.7"
	dockerAPIVersion = "1.43"
)

// DockerConfig is the configuration the Docker daemon loaded: what it
// read from /etc/docker/daemon.json and its unit's environment when it
// last started, and the insecure registries of the last reload (SIGHUP)
// that read a valid file.
type DockerConfig struct {
	// InsecureRegistries are daemon.json's insecure-registries (host[:port]
	// or CIDR), as given. 127.0.0.0/8 is always insecure as well.
	InsecureRegistries []string
	// RegistryMirrors are daemon.json's registry-mirrors (loaded, not
	// used: the simulation pulls from Docker Hub itself).
	RegistryMirrors []string
	// HTTPProxy, HTTPSProxy and NoProxy come from the unit's environment
	// (systemd drop-ins under docker.service.d, as loaded at the last
	// daemon-reload) or daemon.json's "proxies".
	HTTPProxy, HTTPSProxy, NoProxy string
}

// DockerState is a machine's Docker daemon: its images, its containers
// and the configuration it loaded. Tests read it with [Docker] and seed
// images with [DockerState.AddImage]. It is safe for concurrent use.
type DockerState struct {
	m *ubuntu.Machine

	mu         sync.Mutex
	running    bool
	cfg        DockerConfig
	images     map[string]*localImage // by ID
	tags       map[string]string      // fully qualified name:tag → ID
	containers []*container           // in creation order
}

// localImage is an image in a runtime's store.
type localImage struct {
	im      *image
	digests []string // repository@digest, fully qualified
	source  string   // registry domain it was pulled from, "docker load", or "" when seeded
	tagged  time.Time
}

type dockerKey struct{}

// Docker returns the Docker daemon state of m (empty when Docker was
// never installed).
func Docker(m *ubuntu.Machine) *DockerState { return dockerOf(m) }

func dockerOf(m *ubuntu.Machine) *DockerState {
	return m.Extension(dockerKey{}, func() any {
		return &DockerState{m: m, images: map[string]*localImage{}, tags: map[string]string{}}
	}).(*DockerState)
}

// Image is an image in a runtime's store, as tests see it.
type Image struct {
	// ID is the image ID, "sha256:" and the config digest.
	ID string
	// Tags are its names: Docker's familiar form ("registry:latest",
	// "192.168.0.10:5000/app:1"); containerd's and CRI-O's fully
	// qualified one ("docker.io/library/registry:latest").
	Tags []string
	// Digests are its repository digests ("192.168.0.10:5000/app@sha256:…").
	Digests []string
	// Source is the registry it was last pulled from ("docker.io",
	// "192.168.0.10:5000"), "docker load" for a loaded archive, "" for an
	// image seeded by a test.
	Source string
}

// Container is a Docker container, as tests see it.
type Container struct {
	// ID is the 64-hex container ID; Name its name without the "/".
	ID, Name string
	// Image is the image as given to docker run; ImageID its ID.
	Image, ImageID string
	// Status is "created", "running" or "exited".
	Status string
	// Ports are the published ports.
	Ports []PortBinding
	// Binds are the -v bindings as given ("/var/lib/private-registry:/var/lib/registry").
	Binds []string
	// Restart is the restart policy's name ("no", "always",
	// "unless-stopped", "on-failure").
	Restart string
	// Registry says the container serves a registry (a registry image
	// publishing container port 5000 and running).
	Registry bool
}

// PortBinding is a published port: HostIP ("" for every address) and
// HostPort on the host to ContainerPort (tcp) in the container.
type PortBinding struct {
	HostIP                  string
	HostPort, ContainerPort int
}

// Running reports whether the daemon is up.
func (s *DockerState) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Config returns the configuration the daemon loaded.
func (s *DockerState) Config() DockerConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cfg
	c.InsecureRegistries = slices.Clone(c.InsecureRegistries)
	c.RegistryMirrors = slices.Clone(c.RegistryMirrors)
	return c
}

// Images returns the daemon's images, by ID.
func (s *DockerState) Images() []Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Image
	for _, id := range slices.Sorted(maps.Keys(s.images)) {
		out = append(out, s.imageLocked(id))
	}
	return out
}

// Image returns the image a reference names ("registry" is
// registry:latest), by tag or ID.
func (s *DockerState) Image(name string) (Image, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.resolveImageLocked(name)
	if !ok {
		return Image{}, false
	}
	return s.imageLocked(id), true
}

func (s *DockerState) imageLocked(id string) Image {
	li := s.images[id]
	img := Image{ID: id, Source: li.source}
	for _, t := range s.tagsOfLocked(id) {
		r, _ := parseRef(t)
		img.Tags = append(img.Tags, r.familiar())
	}
	for _, d := range li.digests {
		r, _ := parseRef(d)
		img.Digests = append(img.Digests, r.familiar())
	}
	return img
}

// AddImage puts an image into the daemon's store under name ("app:1"),
// as if it had been built there, and returns its ID. Its content derives
// from the name. It panics on an invalid name.
func (s *DockerState) AddImage(name string) string {
	r, err := parseRef(name)
	if err != nil || r.tag == "" {
		panic(fmt.Sprintf("containers: AddImage(%q): not a name:tag", name))
	}
	im := synthImage(r.String())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tagLocked(r, im, "")
	return im.id()
}

// Containers returns the daemon's containers, oldest first.
func (s *DockerState) Containers() []Container {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Container
	for _, c := range s.containers {
		out = append(out, c.snapshot())
	}
	return out
}

// Container returns a container by name or ID (prefix).
func (s *DockerState) Container(name string) (Container, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.findLocked(name)
	if c == nil {
		return Container{}, false
	}
	return c.snapshot(), true
}

// Registry returns the registry a running registry container serves on
// the host port, false when none does.
func (s *DockerState) Registry(port int) (RegistryView, bool) {
	cr := s.registryOn(port, true)
	return cr, cr != nil
}

// --- the image store ------------------------------------------------------

// resolveImageLocked finds an image by reference, full or short ID.
func (s *DockerState) resolveImageLocked(name string) (string, bool) {
	if r, err := parseRef(name); err == nil {
		if r.tag != "" {
			if id, ok := s.tags[r.name()+":"+r.tag]; ok && r.digest == "" {
				return id, true
			}
		}
		if r.digest != "" {
			for id, li := range s.images {
				if slices.Contains(li.digests, r.name()+"@"+r.digest) {
					return id, true
				}
			}
		}
	}
	hexID := strings.TrimPrefix(name, "sha256:")
	if len(hexID) >= 4 && isHex(hexID) {
		var found []string
		for id := range s.images {
			if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), hexID) {
				found = append(found, id)
			}
		}
		if len(found) == 1 {
			return found[0], true
		}
	}
	return "", false
}

// tagLocked stores im and points r at it; it returns the ID r pointed to
// before, if another.
func (s *DockerState) tagLocked(r ref, im *image, source string) string {
	id := im.id()
	li := s.images[id]
	if li == nil {
		li = &localImage{im: im}
		s.images[id] = li
	}
	if source != "" {
		li.source = source
	}
	li.tagged = time.Now()
	old := ""
	if r.tag != "" {
		key := r.name() + ":" + r.tag
		if prev, ok := s.tags[key]; ok && prev != id {
			old = prev
		}
		s.tags[key] = id
	}
	return old
}

func (s *DockerState) addDigestLocked(r ref, id, digest string) {
	li := s.images[id]
	d := r.name() + "@" + digest
	if li != nil && !slices.Contains(li.digests, d) {
		li.digests = append(li.digests, d)
	}
}

// tagsOfLocked returns the fully qualified tags of an image, sorted.
func (s *DockerState) tagsOfLocked(id string) []string {
	var out []string
	for t, tid := range s.tags {
		if tid == id {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// --- containers -----------------------------------------------------------

type container struct {
	id, name        string
	image           string // as given
	imageID         string
	registry        bool // a registry image
	cmd             []string
	env             []string
	ports           []PortBinding
	binds           []string
	mounts          []mount
	restart         string
	restartMax      int
	state           string // created, running, exited
	exitCode        int
	created         time.Time
	started         time.Time
	finished        time.Time
	manuallyStopped bool
	restartCount    int
	pulls           []PullRecord
}

// mount is a resolved volume or bind of a container.
type mount struct {
	typ    string // "bind" or "volume"
	name   string // volume name
	source string // host path
	dest   string
	rw     bool
}

func (c *container) snapshot() Container {
	return Container{
		ID: c.id, Name: c.name, Image: c.image, ImageID: c.imageID, Status: c.state,
		Ports: slices.Clone(c.ports), Binds: slices.Clone(c.binds), Restart: c.restart,
		Registry: c.servesRegistry(),
	}
}

// servesRegistry: a running registry image publishing its port 5000.
func (c *container) servesRegistry() bool {
	if !c.registry || c.state != "running" {
		return false
	}
	for _, p := range c.ports {
		if p.ContainerPort == 5000 {
			return true
		}
	}
	return false
}

// registryDir is the host directory holding the registry's storage: the
// mount at /var/lib/registry, or the container's own layer.
func (c *container) registryDir() string {
	for _, mt := range c.mounts {
		if mt.dest == "/var/lib/registry" {
			return mt.source
		}
	}
	return "/var/lib/docker/overlay2/" + c.id + "/diff/var/lib/registry"
}

// findLocked finds a container by name (with or without the leading /)
// or ID prefix.
func (s *DockerState) findLocked(name string) *container {
	name = strings.TrimPrefix(name, "/")
	for _, c := range s.containers {
		if c.name == name || c.id == name {
			return c
		}
	}
	if len(name) >= 1 && isHex(name) {
		var found *container
		for _, c := range s.containers {
			if strings.HasPrefix(c.id, name) {
				if found != nil {
					return nil
				}
				found = c
			}
		}
		return found
	}
	return nil
}

// registryOn returns the registry a running registry container serves at
// a host port; local says the client is on the machine itself, so a
// binding to a loopback address counts.
func (s *DockerState) registryOn(port int, local bool) *containerRegistry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	for _, c := range s.containers {
		if !c.servesRegistry() {
			continue
		}
		for _, p := range c.ports {
			if p.HostPort != port || p.ContainerPort != 5000 {
				continue
			}
			if p.HostIP == "" || p.HostIP == "0.0.0.0" || p.HostIP == "::" || (local && isLoopback(p.HostIP)) {
				return &containerRegistry{d: s, c: c, st: store{fs: s.m.Server().FS(), root: c.registryDir()}}
			}
		}
	}
	return nil
}

// portUserLocked returns who holds a host port: a running container other
// than self, or "host" for a host process.
func (s *DockerState) portUserLocked(self *container, p PortBinding) (*container, bool) {
	for _, c := range s.containers {
		if c == self || c.state != "running" {
			continue
		}
		for _, q := range c.ports {
			if q.HostPort == p.HostPort && ipsOverlap(q.HostIP, p.HostIP) {
				return c, true
			}
		}
	}
	return nil, portTaken(s.m, p.HostPort)
}

func ipsOverlap(a, b string) bool {
	any := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	return any(a) || any(b) || a == b
}

// startLocked starts a container: its ports must be free. The error is
// the daemon's.
func (s *DockerState) startLocked(c *container) error {
	if c.state == "running" {
		return nil
	}
	for _, p := range c.ports {
		other, taken := s.portUserLocked(c, p)
		if other != nil {
			return fmt.Errorf("driver failed programming external connectivity on endpoint %s (%s): Bind for %s:%d failed: port is already allocated", c.name, endpointID(c), bindIP(p.HostIP), p.HostPort)
		}
		if taken {
			return fmt.Errorf("driver failed programming external connectivity on endpoint %s (%s): Error starting userland proxy: listen tcp4 %s:%d: bind: address already in use", c.name, endpointID(c), bindIP(p.HostIP), p.HostPort)
		}
	}
	c.state, c.exitCode, c.started = "running", 0, time.Now()
	c.manuallyStopped = false
	return nil
}

func bindIP(ip string) string {
	if ip == "" {
		return "0.0.0.0"
	}
	return ip
}

// endpointID is the network endpoint's ID docker names in port errors.
func endpointID(c *container) string {
	sum := digestOf([]byte("endpoint " + c.id))
	return strings.TrimPrefix(sum, "sha256:")
}

func (s *DockerState) stopLocked(c *container, manual bool) {
	if c.state != "running" {
		return
	}
	c.state, c.finished = "exited", time.Now()
	c.exitCode = 0
	if manual {
		c.manuallyStopped = true
	}
}

// --- the daemon's lifecycle (docker.service) ------------------------------

// dockerStart is docker.service's start: dockerd reads daemon.json (an
// invalid one stops it from starting) and its environment, then restarts
// the containers whose policy says so.
func dockerStart(m *ubuntu.Machine) error {
	s := dockerOf(m)
	cfg, err := loadDaemonJSON(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	prev := s.cfg
	s.mu.Unlock()
	env, err := unitEnvironment(m, "docker.service")
	if err != nil {
		return err
	}
	if m.Service("docker").NeedDaemonReload {
		// systemd still has the drop-ins it loaded before they changed.
		env = map[string]string{"HTTP_PROXY": prev.HTTPProxy, "HTTPS_PROXY": prev.HTTPSProxy, "NO_PROXY": prev.NoProxy}
	}
	if cfg.HTTPProxy == "" {
		cfg.HTTPProxy = proxyEnv(env, "HTTP_PROXY")
	}
	if cfg.HTTPSProxy == "" {
		cfg.HTTPSProxy = proxyEnv(env, "HTTPS_PROXY")
	}
	if cfg.NoProxy == "" {
		cfg.NoProxy = proxyEnv(env, "NO_PROXY")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	s.running = true
	for _, c := range s.containers {
		if c.state == "running" {
			continue
		}
		if c.restart == "always" || (c.restart == "unless-stopped" && !c.manuallyStopped) {
			if s.startLocked(c) == nil {
				c.restartCount++
			}
		}
	}
	return nil
}

// dockerStop is docker.service's stop: the containers stop with the
// daemon (no live-restore).
func dockerStop(m *ubuntu.Machine) error {
	s := dockerOf(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.containers {
		s.stopLocked(c, false)
	}
	s.running = false
	return nil
}

// dockerReload is SIGHUP: dockerd reloads insecure-registries and
// registry-mirrors; a file it cannot read leaves the configuration as it
// was (dockerd logs the error and carries on).
func dockerReload(m *ubuntu.Machine) error {
	s := dockerOf(m)
	cfg, err := loadDaemonJSON(m)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.InsecureRegistries = cfg.InsecureRegistries
	s.cfg.RegistryMirrors = cfg.RegistryMirrors
	return nil
}

// daemonJSONKeys are the daemon.json directives dockerd 24 knows; any
// other stops it from starting.
var daemonJSONKeys = []string{
	"allow-nondistributable-artifacts", "api-cors-header", "authorization-plugins", "bip", "bridge",
	"builder", "cgroup-parent", "cluster-advertise", "cluster-store", "containerd", "containerd-namespace",
	"cpu-rt-period", "cpu-rt-runtime", "data-root", "debug", "default-address-pools", "default-cgroupns-mode",
	"default-gateway", "default-ipc-mode", "default-runtime", "default-shm-size", "default-ulimits", "dns",
	"dns-opts", "dns-search", "exec-opts", "exec-root", "experimental", "features", "fixed-cidr", "fixed-cidr-v6",
	"group", "hosts", "icc", "init", "init-path", "insecure-registries", "ip", "ip-forward", "ip-masq", "iptables",
	"ip6tables", "ipv6", "labels", "live-restore", "log-driver", "log-format", "log-level", "log-opts",
	"max-concurrent-downloads", "max-concurrent-uploads", "max-download-attempts", "metrics-addr", "mtu",
	"no-new-privileges", "node-generic-resources", "oom-score-adjust", "pidfile", "proxies", "raw-logs",
	"registry-mirrors", "runtimes", "seccomp-profile", "selinux-enabled", "shutdown-timeout", "storage-driver",
	"storage-opts", "swarm-default-advertise-addr", "tls", "tlscacert", "tlscert", "tlskey", "tlsverify",
	"userland-proxy", "userland-proxy-path", "userns-remap",
}

// loadDaemonJSON reads /etc/docker/daemon.json as dockerd does; a missing
// file is the defaults.
func loadDaemonJSON(m *ubuntu.Machine) (DockerConfig, error) {
	var cfg DockerConfig
	data, err := m.Server().FS().ReadFile(dockerDaemonJSON)
	if err != nil {
		return cfg, nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("unable to configure the Docker daemon with file %s: %s", dockerDaemonJSON, fmt.Sprintf(format, args...))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return cfg, fail("%v", err)
	}
	var unknown []string
	for k := range raw {
		if !slices.Contains(daemonJSONKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return cfg, fail("the following directives don't match any configuration option: %s", strings.Join(unknown, ", "))
	}
	var typed struct {
		InsecureRegistries []string `json:"insecure-registries"`
		RegistryMirrors    []string `json:"registry-mirrors"`
		Proxies            struct {
			HTTPProxy  string `json:"http-proxy"`
			HTTPSProxy string `json:"https-proxy"`
			NoProxy    string `json:"no-proxy"`
		} `json:"proxies"`
	}
	if err := json.Unmarshal(data, &typed); err != nil {
		return cfg, fail("%v", err)
	}
	for _, r := range typed.InsecureRegistries {
		r, err := insecureRegistry(r)
		if err != nil {
			return cfg, err
		}
		cfg.InsecureRegistries = append(cfg.InsecureRegistries, r)
	}
	cfg.RegistryMirrors = typed.RegistryMirrors
	cfg.HTTPProxy, cfg.HTTPSProxy, cfg.NoProxy = typed.Proxies.HTTPProxy, typed.Proxies.HTTPSProxy, typed.Proxies.NoProxy
	return cfg, nil
}

// insecureRegistry checks one insecure-registries entry as dockerd does
// and returns what it keeps: moby v20.10.24 registry/config.go
// (serviceConfig.LoadInsecureRegistries, ValidateIndexName,
// validateHostPort), unchanged in substance in the current
// daemon/pkg/registry/config.go. A name may not begin or end with '-';
// an http:// or https:// prefix is dropped (with a warning), any other
// "://" refused; then the entry is a CIDR, or host[:port] where the whole
// entry matches distribution's domain pattern or the host is an IP
// address, and the port is a number up to 65535. So "" is refused
// (invalid host ""), as is "reg.example.com:5000/" or "a b". dockerd
// refuses to start on such an entry, and a reload (SIGHUP) keeps the
// configuration it had.
func insecureRegistry(r string) (string, error) {
	if strings.HasPrefix(r, "-") || strings.HasSuffix(r, "-") {
		return "", fmt.Errorf("invalid index name (%s). Cannot begin or end with a hyphen", r)
	}
	switch lower := strings.ToLower(r); {
	case strings.HasPrefix(lower, "http://"):
		r = r[len("http://"):]
	case strings.HasPrefix(lower, "https://"):
		r = r[len("https://"):]
	case strings.Contains(r, "://"):
		return "", fmt.Errorf("insecure registry %s should not contain '://'", r)
	}
	if _, _, err := net.ParseCIDR(r); err == nil {
		return r, nil
	}
	host, port, err := net.SplitHostPort(r)
	if err != nil {
		host, port = r, ""
	}
	if !domainPattern.MatchString(r) && net.ParseIP(host) == nil {
		return "", fmt.Errorf("insecure registry %s is not valid: invalid host %q", r, host)
	}
	if port != "" {
		v, err := strconv.Atoi(port)
		if err != nil {
			return "", fmt.Errorf("insecure registry %s is not valid: %v", r, err)
		}
		if v < 0 || v > 65535 {
			return "", fmt.Errorf("insecure registry %s is not valid: invalid port %q", r, port)
		}
	}
	return r, nil
}

// unitEnvironment reads the Environment= and EnvironmentFile= settings
// of a unit's drop-ins (/etc, /run and /lib systemd directories,
// NAME.d/*.conf in name order, a drop-in in /etc hiding one of the same
// name below it), with systemd's quoting. As systemd.exec(5) says, the
// files' variables override Environment='s, an empty EnvironmentFile=
// resets the list, and a file that is missing fails the start unless its
// name starts with "-"; a file holds KEY=VALUE lines, "#" and ";" start
// comments, and specifiers are not expanded in it (systemd's
// src/basic/env-file.c).
func unitEnvironment(m *ubuntu.Machine, unit string) (map[string]string, error) {
	files := map[string]string{}
	for _, dir := range []string{"/lib/systemd/system", "/run/systemd/system", "/etc/systemd/system"} {
		d := dir + "/" + unit + ".d"
		entries, _ := m.Server().FS().ReadDir(d)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
				files[e.Name()] = path.Join(d, e.Name())
			}
		}
	}
	env := map[string]string{}
	var envFiles []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data, err := m.Server().FS().ReadFile(files[name])
		if err != nil {
			continue
		}
		section := ""
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				section = line
				continue
			}
			if section != "[Service]" {
				continue
			}
			if f, ok := strings.CutPrefix(line, "EnvironmentFile="); ok {
				if f = strings.TrimSpace(f); f == "" {
					envFiles = nil
				} else {
					envFiles = append(envFiles, f)
				}
				continue
			}
			v, ok := strings.CutPrefix(line, "Environment=")
			if !ok {
				continue
			}
			if strings.TrimSpace(v) == "" {
				clear(env)
				continue
			}
			for _, w := range systemdWords(v) {
				if k, val, ok := strings.Cut(w, "="); ok {
					env[k] = strings.ReplaceAll(val, "%%", "%")
				}
			}
		}
	}
	for _, f := range envFiles {
		name, optional := strings.CutPrefix(f, "-")
		data, err := m.Server().FS().ReadFile(name)
		if err != nil {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s: Failed to load environment files: %w", unit, err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			if k, v, ok := strings.Cut(line, "="); ok {
				env[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	return env, nil
}

// systemdWords splits a unit file value into words as systemd does:
// white space separates, double and single quotes group, backslash
// escapes inside double quotes.
func systemdWords(s string) []string {
	var words []string
	var b strings.Builder
	in, quote, escaped := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			b.WriteByte(c)
			escaped = false
		case c == '\\' && quote != '\'':
			escaped = true
			in = true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, b.String())
	}
	return words
}

// proxyEnv reads a proxy variable as Go's net/http does: the upper-case
// name, else the lower-case one.
func proxyEnv(env map[string]string, key string) string {
	if v := env[key]; v != "" {
		return v
	}
	return env[strings.ToLower(key)]
}

// --- the registry a container serves --------------------------------------

// containerRegistry is the registry a running registry container serves:
// plain HTTP, no auth, its storage in the container's /var/lib/registry
// (usually a host directory bound there).
type containerRegistry struct {
	d  *DockerState
	c  *container
	st store
}

func (r *containerRegistry) isTLS() bool                { return false }
func (r *containerRegistry) caPEM() []byte              { return nil }
func (r *containerRegistry) needsAuth() bool            { return false }
func (r *containerRegistry) checkAuth(_, _ string) bool { return true }
func (r *containerRegistry) lookup(repo, reference string) (*image, bool) {
	return r.st.get(repo, reference)
}
func (r *containerRegistry) put(repo, tag string, im *image) error { return r.st.put(repo, tag, im) }
func (r *containerRegistry) record(p PullRecord) {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	r.c.pulls = append(r.c.pulls, p)
}

// TLS implements [RegistryView]: a registry container speaks HTTP.
func (r *containerRegistry) TLS() bool { return false }

// Auth implements [RegistryView]: no auth.
func (r *containerRegistry) Auth() bool { return false }

// Push implements [RegistryView].
func (r *containerRegistry) Push(image string) { pushSynth(r.st, image) }

// Has implements [RegistryView].
func (r *containerRegistry) Has(image string) bool { return hasImage(r.st, image) }

// Images implements [RegistryView].
func (r *containerRegistry) Images() []string { return r.st.list() }

// Pulls implements [RegistryView]: the pulls this container served.
func (r *containerRegistry) Pulls() []PullRecord {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	return slices.Clone(r.c.pulls)
}

// --- small helpers ----------------------------------------------------------

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

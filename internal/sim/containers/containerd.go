package containers

import (
	"context"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// containerd's files and version.
const (
	containerdConfigFile = "/etc/containerd/config.toml"
	containerdSock       = "/run/containerd/containerd.sock"
	containerdVersion    = "1.7.12"
)

// ContainerdConfig is the configuration containerd loaded from
// /etc/containerd/config.toml when it last started (containerd has no
// reload: a change takes a restart).
type ContainerdConfig struct {
	// Exists says config.toml was there; without it containerd runs on its
	// defaults (schema version 2, the CRI plugin enabled, no config_path).
	Exists bool
	// Version is the schema version: the file's "version", 1 when it has
	// none. containerd 1.7.12 reads a version 3 file (containerd 2's) as
	// version 2: its io.containerd.cri.v1.images section, and so its
	// config_path, is ignored.
	Version int
	// ConfigPath is the CRI registry's config_path (the hosts.toml root),
	// "" when unset.
	ConfigPath string
	// LegacyMirrors and LegacyConfigs say the deprecated
	// registry.mirrors and registry.configs tables are set (non-empty).
	LegacyMirrors, LegacyConfigs bool
	// CRIDisabled says disabled_plugins turns the CRI plugin off (as
	// containerd.io's packaged config.toml does).
	CRIDisabled bool
	// CRIError is why the CRI plugin failed to load, "" when it loaded.
	// containerd itself keeps running without it (it logs "failed to load
	// plugin io.containerd.grpc.v1.cri"), so the kubelet and crictl find
	// no CRI service: config_path combined with registry.mirrors or
	// registry.configs.*.tls gives "invalid plugin config: `mirrors`
	// cannot be set when `config_path` is provided" (kubespray#9743).
	CRIError string
}

// ContainerdState is a machine's containerd: the configuration it loaded
// and the images of its CRI namespace (k8s.io). It is safe for concurrent
// use.
type ContainerdState struct {
	m *ubuntu.Machine

	mu      sync.Mutex
	running bool
	cfg     ContainerdConfig
	mirrors map[string][]string    // legacy registry.mirrors: host → endpoints
	configs map[string]legacyConf  // legacy registry.configs: host → settings
	images  map[string]*localImage // by ID
	tags    map[string]string      // fully qualified name:tag → ID
}

// legacyConf is one registry.configs entry.
type legacyConf struct {
	caFile     string
	skipVerify bool
	hasTLS     bool
	auth       creds
}

type containerdKey struct{}

// Containerd returns the containerd state of m (empty when containerd
// never ran).
func Containerd(m *ubuntu.Machine) *ContainerdState { return containerdOf(m) }

func containerdOf(m *ubuntu.Machine) *ContainerdState {
	return m.Extension(containerdKey{}, func() any {
		return &ContainerdState{m: m, images: map[string]*localImage{}, tags: map[string]string{}}
	}).(*ContainerdState)
}

// Running reports whether containerd is up.
func (s *ContainerdState) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Config returns the configuration containerd loaded.
func (s *ContainerdState) Config() ContainerdConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Images returns the images of the k8s.io namespace, with fully
// qualified tags.
func (s *ContainerdState) Images() []Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return criImages(s.images, s.tags)
}

// Image returns the image a reference names ("registry" is
// docker.io/library/registry:latest), by tag or ID.
func (s *ContainerdState) Image(name string) (Image, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return criImage(s.images, s.tags, name)
}

func criImages(images map[string]*localImage, tags map[string]string) []Image {
	var out []Image
	for _, id := range slices.Sorted(maps.Keys(images)) {
		out = append(out, criImageOf(images, tags, id))
	}
	return out
}

func criImageOf(images map[string]*localImage, tags map[string]string, id string) Image {
	li := images[id]
	img := Image{ID: id, Source: li.source, Digests: slices.Clone(li.digests)}
	for t, tid := range tags {
		if tid == id {
			img.Tags = append(img.Tags, t)
		}
	}
	slices.Sort(img.Tags)
	return img
}

// criResolve finds an image by reference, ID or ID prefix.
func criResolve(images map[string]*localImage, tags map[string]string, name string) (string, bool) {
	if r, err := parseRef(name); err == nil {
		if r.tag != "" && r.digest == "" {
			if id, ok := tags[r.String()]; ok {
				return id, true
			}
		}
		if r.digest != "" {
			for id, li := range images {
				if slices.Contains(li.digests, r.name()+"@"+r.digest) {
					return id, true
				}
			}
		}
	}
	hexID := strings.TrimPrefix(name, "sha256:")
	if isHex(hexID) {
		var found []string
		for id := range images {
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

func criImage(images map[string]*localImage, tags map[string]string, name string) (Image, bool) {
	id, ok := criResolve(images, tags, name)
	if !ok {
		return Image{}, false
	}
	return criImageOf(images, tags, id), true
}

// criStore stores a pulled image under r.
func criStore(images map[string]*localImage, tags map[string]string, r ref, im *image, source string) {
	id := im.id()
	li := images[id]
	if li == nil {
		li = &localImage{im: im}
		images[id] = li
	}
	li.source = source
	if r.tag != "" {
		tags[r.String()] = id
	}
	d := r.name() + "@" + im.digest()
	if !slices.Contains(li.digests, d) {
		li.digests = append(li.digests, d)
	}
}

// --- containerd.service ---------------------------------------------------------

// containerdStart loads config.toml as containerd 1.7.12 does. A file
// that does not parse stops it from starting; a CRI plugin that cannot
// load does not.
func containerdStart(m *ubuntu.Machine) error {
	s := containerdOf(m)
	cfg := ContainerdConfig{Version: 2}
	mirrors := map[string][]string{}
	configs := map[string]legacyConf{}
	if data, err := m.Server().FS().ReadFile(containerdConfigFile); err == nil {
		cfg.Exists = true
		var doc map[string]any
		if err := toml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("containerd: failed to load TOML from %s: %v", containerdConfigFile, err)
		}
		cfg.Version = 1
		if v, ok := doc["version"].(int64); ok {
			cfg.Version = int(v)
		}
		// containerd 1.7.12 predates the check for unsupported versions
		// (1.7.17): a version 3 file loads as version 2, and its
		// io.containerd.cri.v1.* sections are plugins 1.7 does not have.
		plugin := "io.containerd.grpc.v1.cri"
		if cfg.Version == 1 {
			plugin = "cri"
		}
		if dis, ok := doc["disabled_plugins"].([]any); ok {
			for _, d := range dis {
				if d == "cri" || d == "io.containerd.grpc.v1.cri" {
					cfg.CRIDisabled = true
				}
			}
		}
		reg := subTable(subTable(subTable(doc, "plugins"), plugin), "registry")
		cfg.ConfigPath, _ = reg["config_path"].(string)
		for host, v := range subTable(reg, "mirrors") {
			if t, ok := v.(map[string]any); ok {
				mirrors[host] = append(mirrors[host], asStrings(t["endpoint"])...)
			}
		}
		for host, v := range subTable(reg, "configs") {
			t, _ := v.(map[string]any)
			var lc legacyConf
			if tlsT, ok := t["tls"].(map[string]any); ok {
				lc.hasTLS = true
				lc.caFile, _ = tlsT["ca_file"].(string)
				lc.skipVerify, _ = tlsT["insecure_skip_verify"].(bool)
			}
			if a, ok := t["auth"].(map[string]any); ok {
				var e authEntry
				e.Username, _ = a["username"].(string)
				e.Password, _ = a["password"].(string)
				e.Auth, _ = a["auth"].(string)
				lc.auth, _ = e.creds()
			}
			configs[host] = lc
		}
		cfg.LegacyMirrors = len(mirrors) > 0
		cfg.LegacyConfigs = len(configs) > 0
		if cfg.ConfigPath != "" && len(mirrors) > 0 {
			cfg.CRIError = "invalid plugin config: `mirrors` cannot be set when `config_path` is provided"
		}
		for _, lc := range configs {
			if cfg.ConfigPath != "" && lc.hasTLS && cfg.CRIError == "" {
				cfg.CRIError = "invalid plugin config: `configs.tls` cannot be set when `config_path` is provided"
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.mirrors, s.configs, s.running = cfg, mirrors, configs, true
	return nil
}

func containerdStop(m *ubuntu.Machine) error {
	s := containerdOf(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	return nil
}

func subTable(m map[string]any, key string) map[string]any {
	if t, ok := m[key].(map[string]any); ok {
		return t
	}
	return map[string]any{}
}

func asStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// --- the CRI image service --------------------------------------------------------

// criError is a gRPC status as crictl and the kubelet print it.
type criError struct{ code, desc string }

func (e *criError) Error() string { return "rpc error: code = " + e.code + " desc = " + e.desc }

// criUnavailable is the error of a CRI client whose runtime is not there.
func criUnavailable(sock string, cause string) *criError {
	return &criError{"Unavailable", fmt.Sprintf("connection error: desc = \"transport: Error while dialing: dial unix %s: connect: %s\"", sock, cause)}
}

// criAvailable checks that containerd serves the CRI.
func (s *ContainerdState) criAvailable(service string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.running:
		return criUnavailable(containerdSock, "no such file or directory")
	case s.cfg.CRIDisabled || s.cfg.CRIError != "":
		return &criError{"Unimplemented", "unknown service " + service}
	}
	return nil
}

// criHost is one host containerd tries for a registry namespace.
type criHost struct {
	endpoint
	resolve    bool
	cas        []string // CA files
	skipVerify bool
	authHost   string // the host whose legacy auth applies
}

// hostsFile is a certs.d/HOST/hosts.toml.
type hostsFile struct {
	Server       string               `toml:"server"`
	Capabilities []string             `toml:"capabilities"`
	CA           any                  `toml:"ca"`
	SkipVerify   bool                 `toml:"skip_verify"`
	Host         map[string]hostEntry `toml:"host"`
}

type hostEntry struct {
	Capabilities []string `toml:"capabilities"`
	CA           any      `toml:"ca"`
	SkipVerify   bool     `toml:"skip_verify"`
	OverridePath bool     `toml:"override_path"`
}

var hostHeader = regexp.MustCompile(`(?m)^\s*\[\s*host\s*\.\s*(?:"([^"]+)"|'([^']+)')\s*\]`)

// parseHostURL parses a hosts.toml host key: scheme://host[:port][/path],
// https when no scheme is given.
func parseHostURL(s string) endpoint {
	scheme := "https"
	if i := strings.Index(s, "://"); i >= 0 {
		scheme, s = s[:i], s[i+3:]
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	return endpoint{scheme: scheme, host: s}
}

// hosts returns the hosts containerd tries for a registry domain, from
// the config it loaded: config_path's hosts.toml (read now, as containerd
// reads it on every pull), or the legacy mirrors, or the default: HTTPS
// to the registry itself (HTTP for localhost).
func (s *ContainerdState) hosts(domain string) ([]criHost, error) {
	s.mu.Lock()
	cfg, mirrors, configs := s.cfg, s.mirrors, s.configs
	s.mu.Unlock()
	upstream := domain
	if domain == hubDomain {
		upstream = hubHost
	}
	defaultScheme := "https"
	if h, _ := splitHostPort(domain); h == "localhost" || h == "127.0.0.1" || h == "::1" {
		defaultScheme = "http"
	}
	fsys := s.m.Server().FS()
	if cfg.ConfigPath != "" {
		var dir string
		for _, d := range []string{domain, strings.ReplaceAll(domain, ":", "_") + "_", "_default"} {
			if fi, err := fsys.Stat(path.Join(cfg.ConfigPath, d)); err == nil && fi.IsDir() {
				dir = path.Join(cfg.ConfigPath, d)
				break
			}
		}
		if dir != "" {
			data, err := fsys.ReadFile(path.Join(dir, "hosts.toml"))
			if err != nil {
				// No hosts.toml: Docker's certs.d layout, *.crt as CAs.
				h := criHost{endpoint: endpoint{defaultScheme, upstream}, resolve: true, authHost: upstream}
				entries, _ := fsys.ReadDir(dir)
				for _, e := range entries {
					if strings.HasSuffix(e.Name(), ".crt") {
						h.cas = append(h.cas, path.Join(dir, e.Name()))
					}
				}
				return []criHost{h}, nil
			}
			var hf hostsFile
			if err := toml.Unmarshal(data, &hf); err != nil {
				return nil, fmt.Errorf("failed to decode %s: %v", path.Join(dir, "hosts.toml"), err)
			}
			var out []criHost
			seen := map[string]bool{}
			for _, m := range hostHeader.FindAllStringSubmatch(string(data), -1) {
				key := m[1] + m[2]
				e, ok := hf.Host[key]
				if !ok || seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, makeCRIHost(dir, parseHostURL(key), e.Capabilities, e.CA, e.SkipVerify))
			}
			root := endpoint{defaultScheme, upstream}
			if hf.Server != "" {
				root = parseHostURL(hf.Server)
			}
			out = append(out, makeCRIHost(dir, root, hf.Capabilities, hf.CA, hf.SkipVerify))
			return out, nil
		}
	}
	var out []criHost
	if cfg.ConfigPath == "" {
		for _, e := range mirrors[domain] {
			u := parseHostURL(e)
			if u.host == upstream && u.scheme == defaultScheme {
				continue
			}
			out = append(out, legacyHost(u, configs))
		}
	}
	return append(out, legacyHost(endpoint{defaultScheme, upstream}, configs)), nil
}

func legacyHost(e endpoint, configs map[string]legacyConf) criHost {
	h := criHost{endpoint: e, resolve: true, authHost: e.host}
	if lc, ok := configs[e.host]; ok {
		if lc.caFile != "" {
			h.cas = []string{lc.caFile}
		}
		h.skipVerify = lc.skipVerify
	}
	return h
}

func makeCRIHost(dir string, e endpoint, caps []string, ca any, skip bool) criHost {
	h := criHost{endpoint: e, resolve: caps == nil || slices.Contains(caps, "resolve"), skipVerify: skip, authHost: e.host}
	for _, f := range asStrings(ca) {
		if !path.IsAbs(f) {
			f = path.Join(dir, f)
		}
		h.cas = append(h.cas, f)
	}
	return h
}

// criPull pulls r as containerd's CRI plugin does for crictl or the
// kubelet; auth is the request's credentials (from crictl --creds or the
// kubelet's config.json). It returns the image ID.
func (s *ContainerdState) criPull(_ context.Context, n Network, r ref, auth creds) (string, error) {
	if err := s.criAvailable("runtime.v1.ImageService"); err != nil {
		return "", err
	}
	name := r.String()
	fail := func(code, msg string) error {
		return &criError{code, fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s", name, name, msg)}
	}
	hosts, err := s.hosts(r.domain)
	if err != nil {
		return "", fail("Unknown", err.Error())
	}
	s.mu.Lock()
	configs := s.configs
	s.mu.Unlock()
	var firstErr string
	resolvers := 0
	for _, h := range hosts {
		if !h.resolve {
			continue
		}
		resolvers++
		u := h.url("/v2/" + r.path + "/manifests/" + r.reference())
		var cas [][]byte
		for _, f := range h.cas {
			data, err := s.m.Server().FS().ReadFile(f)
			if err != nil {
				return "", fail("Unknown", fmt.Sprintf("failed to load host configuration: unable to read CA cert %q: open %s: no such file or directory", f, f))
			}
			cas = append(cas, data)
		}
		srv, f := dial(n, s.m, h.endpoint, dialOptions{tls: tlsSettings{cas: cas, skipVerify: h.skipVerify}, internet: n.Internet()})
		if f != nil {
			if firstErr == "" {
				if f.kind == failHTTPToTLS {
					firstErr = fmt.Sprintf("unexpected status from HEAD request to %s: 400 Bad Request", u)
				} else {
					firstErr = fmt.Sprintf("failed to do request: Head %q: %s", u, f.goErr())
				}
			}
			continue
		}
		c := auth
		if !c.set {
			c = configs[h.authHost].auth
		}
		rec := PullRecord{Host: s.m.Hostname(), Runtime: "containerd", Image: r.path + ":" + r.reference()}
		if authorize(srv, c) != authOK {
			srv.record(rec)
			if firstErr == "" {
				firstErr = fmt.Sprintf("unexpected status from HEAD request to %s: 401 Unauthorized", u)
			}
			continue
		}
		im, ok := srv.lookup(r.path, r.reference())
		if !ok {
			srv.record(rec)
			continue
		}
		rec.OK = true
		srv.record(rec)
		s.mu.Lock()
		criStore(s.images, s.tags, r, im, r.domain)
		s.mu.Unlock()
		return im.id(), nil
	}
	if resolvers == 0 {
		return "", fail("NotFound", "no resolve hosts: not found")
	}
	if firstErr == "" {
		return "", fail("NotFound", name+": not found")
	}
	return "", fail("Unknown", firstErr)
}

// --- ctr ----------------------------------------------------------------------------

// ctrTool is /usr/bin/ctr: version, and images ls in a namespace.
func ctrTool(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	f, err := flagSpec{"n|namespace=", "a|address=", "debug"}.parse(p.Args[1:], false)
	if err != nil {
		fmt.Fprintf(p.Stderr, "Incorrect Usage: %v\n", err)
		return 1
	}
	if len(f.args) == 0 {
		fmt.Fprintln(p.Stdout, "NAME:\n   ctr - \n        __\n  _____/ /______\n / ___/ __/ ___/\n/ /__/ /_/ /\n\\___/\\__/_/\n\ncontainerd CLI")
		return 0
	}
	s := containerdOf(m)
	dialErr := func() int {
		if p.FS.Cred().UID != 0 {
			fmt.Fprintf(p.Stderr, "ctr: failed to dial %q: connection error: desc = \"transport: error while dialing: dial unix:///run/containerd/containerd.sock: connect: permission denied\"\n", containerdSock)
			return 1
		}
		if !s.Running() {
			fmt.Fprintf(p.Stderr, "ctr: failed to dial %q: context deadline exceeded: connection error: desc = \"transport: error while dialing: dial unix:///run/containerd/containerd.sock: connect: no such file or directory\"\n", containerdSock)
			return 1
		}
		return 0
	}
	switch f.args[0] {
	case "version":
		fmt.Fprintf(p.Stdout, "Client:\n  Version:  %s\n  Revision: \n  Go version: go1.21.1\n\n", containerdVersion)
		if code := dialErr(); code != 0 {
			return code
		}
		fmt.Fprintf(p.Stdout, "Server:\n  Version:  %s\n  Revision: \n  UUID: %s\n", containerdVersion, strings.TrimPrefix(digestOf([]byte(m.Hostname())), "sha256:")[:32])
		return 0
	case "images", "image", "i":
		sub := f.args[1:]
		if len(sub) == 0 || !slices.Contains([]string{"ls", "list"}, sub[0]) {
			fmt.Fprintf(p.Stderr, "ctr: images %s: not modelled by internal/sim/containers (only images ls)\n", strings.Join(sub, " "))
			return 1
		}
		g, err := flagSpec{"q|quiet"}.parse(sub[1:], true)
		if err != nil {
			fmt.Fprintf(p.Stderr, "Incorrect Usage: %v\n", err)
			return 1
		}
		if code := dialErr(); code != 0 {
			return code
		}
		ns, _ := f.value("namespace")
		if ns == "" {
			ns = p.Getenv("CONTAINERD_NAMESPACE")
		}
		var refs [][3]string // name, digest, size
		if ns == "k8s.io" {
			s.mu.Lock()
			for id, li := range s.images {
				for t, tid := range s.tags {
					if tid == id {
						refs = append(refs, [3]string{t, li.im.digest(), humanSize(li.im.size())})
					}
				}
				for _, d := range li.digests {
					refs = append(refs, [3]string{d, li.im.digest(), humanSize(li.im.size())})
				}
				refs = append(refs, [3]string{id, li.im.digest(), humanSize(li.im.size())})
			}
			s.mu.Unlock()
		}
		slices.SortFunc(refs, func(a, b [3]string) int { return strings.Compare(a[0], b[0]) })
		if g.has("quiet") {
			for _, r := range refs {
				fmt.Fprintln(p.Stdout, r[0])
			}
			return 0
		}
		fmt.Fprintln(p.Stdout, "REF TYPE DIGEST SIZE PLATFORMS LABELS")
		for _, r := range refs {
			fmt.Fprintf(p.Stdout, "%s application/vnd.docker.distribution.manifest.v2+json %s %s linux/%s io.cri-containerd.image=managed\n", r[0], r[1], r[2], m.Arch())
		}
		return 0
	}
	fmt.Fprintf(p.Stderr, "ctr: %s: not modelled by internal/sim/containers\n", f.args[0])
	return 1
}

// containerdVersionTool is /usr/bin/containerd: --version (and -v).
func containerdVersionTool(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	if len(p.Args) == 2 && (p.Args[1] == "--version" || p.Args[1] == "-v") {
		if m.Installed("containerd.io") {
			fmt.Fprintf(p.Stdout, "containerd containerd.io %s 71909c1814c544ac47ab91d2e8b84718e517bb99\n", containerdVersion)
			return 0
		}
		// Ubuntu's build has no commit: the line ends in a space.
		fmt.Fprintf(p.Stdout, "containerd github.com/containerd/containerd %s \n", containerdVersion)
		return 0
	}
	fmt.Fprintf(p.Stderr, "containerd: %s: only --version is modelled by internal/sim/containers (the daemon runs as containerd.service)\n", strings.Join(p.Args[1:], " "))
	return 1
}

package containers

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// CRI-O's files and version.
const (
	crioRegistriesConf = "/etc/containers/registries.conf"
	crioRegistriesDir  = "/etc/containers/registries.conf.d"
	crioCertsDir       = "/etc/containers/certs.d"
	crioSock           = "/var/run/crio/crio.sock"
	crioVersion        = "1.28.4"
)

// CRIORegistry is one [[registry]] of registries.conf as CRI-O loaded it.
type CRIORegistry struct {
	// Location is the registry (host[:port], optionally with a path).
	Location string
	// Prefix is the namespace the entry applies to; Location when unset.
	Prefix string
	// Insecure allows plain HTTP and unverified TLS.
	Insecure bool
	// Blocked refuses every pull from it.
	Blocked bool
}

// CRIOConfig is the registries configuration CRI-O loaded from
// /etc/containers/registries.conf and registries.conf.d/*.conf when it
// last started or reloaded (SIGHUP).
type CRIOConfig struct {
	// Registries are the [[registry]] entries (and version 1's
	// [registries.insecure]), a later file's entry replacing an earlier
	// one with the same prefix.
	Registries []CRIORegistry
	// UnqualifiedSearchRegistries is unqualified-search-registries.
	UnqualifiedSearchRegistries []string
}

// CRIOState is a machine's CRI-O: the configuration it loaded and its
// images. It is safe for concurrent use.
type CRIOState struct {
	m *ubuntu.Machine

	mu      sync.Mutex
	running bool
	cfg     CRIOConfig
	proxy   proxyConfig // crio.service's environment at the last start
	images  map[string]*localImage
	tags    map[string]string
}

type crioKey struct{}

// CRIO returns the CRI-O state of m (empty when CRI-O never ran).
func CRIO(m *ubuntu.Machine) *CRIOState { return crioOf(m) }

func crioOf(m *ubuntu.Machine) *CRIOState {
	return m.Extension(crioKey{}, func() any {
		return &CRIOState{m: m, images: map[string]*localImage{}, tags: map[string]string{}}
	}).(*CRIOState)
}

// Running reports whether CRI-O is up.
func (s *CRIOState) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Config returns the registries configuration CRI-O loaded.
func (s *CRIOState) Config() CRIOConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cfg
	c.Registries = slices.Clone(c.Registries)
	return c
}

// Images returns CRI-O's images, with fully qualified tags.
func (s *CRIOState) Images() []Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return criImages(s.images, s.tags)
}

// Image returns the image a reference names, by tag or ID.
func (s *CRIOState) Image(name string) (Image, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return criImage(s.images, s.tags, name)
}

// registriesFile is registries.conf (version 2, and version 1's
// [registries.insecure]).
type registriesFile struct {
	UnqualifiedSearchRegistries []string `toml:"unqualified-search-registries"`
	Registry                    []struct {
		Location string `toml:"location"`
		Prefix   string `toml:"prefix"`
		Insecure bool   `toml:"insecure"`
		Blocked  bool   `toml:"blocked"`
	} `toml:"registry"`
	Registries struct {
		Insecure struct {
			Registries []string `toml:"registries"`
		} `toml:"insecure"`
	} `toml:"registries"`
}

// loadRegistriesConf reads registries.conf and the drop-ins in name
// order; an entry of a later file replaces one with the same prefix.
func loadRegistriesConf(m *ubuntu.Machine) (CRIOConfig, error) {
	fsys := m.Server().FS()
	files := []string{crioRegistriesConf}
	entries, _ := fsys.ReadDir(crioRegistriesDir)
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
			files = append(files, path.Join(crioRegistriesDir, e.Name()))
		}
	}
	var cfg CRIOConfig
	for _, f := range files {
		data, err := fsys.ReadFile(f)
		if err != nil {
			continue
		}
		var rf registriesFile
		if err := toml.Unmarshal(data, &rf); err != nil {
			return cfg, fmt.Errorf("loading registries configuration %q: %v", f, err)
		}
		// Drop-ins must be in the version 2 format: containers/image
		// pkg/sysregistriesv2 (tryUpdatingCache loads every drop-in with
		// loadConfigFile(path, forceV2=true)), and the whole
		// configuration fails to load.
		if f != crioRegistriesConf && len(rf.Registries.Insecure.Registries) > 0 {
			return cfg, fmt.Errorf("loading drop-in registries configuration %q: registry must be in v2 format but is in v1", f)
		}
		if rf.UnqualifiedSearchRegistries != nil {
			cfg.UnqualifiedSearchRegistries = rf.UnqualifiedSearchRegistries
		}
		add := func(r CRIORegistry) {
			if r.Prefix == "" {
				r.Prefix = r.Location
			}
			cfg.Registries = slices.DeleteFunc(cfg.Registries, func(x CRIORegistry) bool { return x.Prefix == r.Prefix })
			cfg.Registries = append(cfg.Registries, r)
		}
		for _, r := range rf.Registry {
			add(CRIORegistry{Location: r.Location, Prefix: r.Prefix, Insecure: r.Insecure, Blocked: r.Blocked})
		}
		for _, loc := range rf.Registries.Insecure.Registries {
			add(CRIORegistry{Location: loc, Insecure: true})
		}
	}
	return cfg, nil
}

// crioStart is crio.service's start: a registries configuration that
// does not parse stops CRI-O from starting.
func crioStart(m *ubuntu.Machine) error {
	cfg, err := loadRegistriesConf(m)
	if err != nil {
		return err
	}
	// CRI-O's Go HTTP client (containers/image) reads HTTP_PROXY,
	// HTTPS_PROXY and NO_PROXY from crio.service's environment, as
	// containerd does (CRI-O's tutorials/setup: "the proxy environment
	// in a systemd drop-in").
	env, err := unitEnvironment(m, "crio.service")
	if err != nil {
		return err
	}
	s := crioOf(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.running = cfg, true
	s.proxy = proxyConfig{HTTP: proxyEnv(env, "HTTP_PROXY"), HTTPS: proxyEnv(env, "HTTPS_PROXY"), NoProxy: proxyEnv(env, "NO_PROXY")}
	return nil
}

// crioReload is SIGHUP: the registries configuration is read again; a bad
// one is logged and the old one kept.
func crioReload(m *ubuntu.Machine) error {
	cfg, err := loadRegistriesConf(m)
	if err != nil {
		return nil
	}
	s := crioOf(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	return nil
}

func crioStop(m *ubuntu.Machine) error {
	s := crioOf(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	return nil
}

// registryFor returns the registries.conf entry of an image: the longest
// prefix matching at a path boundary.
func (c CRIOConfig) registryFor(r ref) (CRIORegistry, bool) {
	name := r.name()
	var best CRIORegistry
	found := false
	for _, e := range c.Registries {
		p := strings.TrimSuffix(e.Prefix, "/")
		if (name == p || strings.HasPrefix(name, p+"/") || r.domain == p) && (!found || len(p) > len(best.Prefix)) {
			best, found = e, true
		}
	}
	return best, found
}

func (s *CRIOState) criAvailable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return criUnavailable(crioSock, "no such file or directory")
	}
	return nil
}

// crioCertDir is the one directory containers/image reads a registry's
// certificates from: the first of /etc/containers/certs.d/HOST and
// /etc/docker/certs.d/HOST that exists (docker/docker_client.go
// dockerCertDir; root's ~/.config/containers/certs.d, searched first,
// is not modelled). A CA in the other directory is not read.
func crioCertDir(m *ubuntu.Machine, host string) string {
	for _, dir := range []string{crioCertsDir, dockerCertsDir} {
		if m.Server().FS().Exists(path.Join(dir, host)) {
			return path.Join(dir, host)
		}
	}
	return path.Join(dockerCertsDir, host)
}

// criPull pulls r as CRI-O (containers/image) does: HTTPS with the CAs
// of the first existing certs directory (crioCertDir), HTTPS without
// verification then HTTP for a registry registries.conf marks insecure,
// credentials only from the request.
func (s *CRIOState) criPull(_ context.Context, n Network, r ref, auth creds) (string, error) {
	if err := s.criAvailable(); err != nil {
		return "", err
	}
	cfg := s.Config()
	src := "docker://" + r.String()
	fail := func(msg string) error {
		return &criError{"Unknown", fmt.Sprintf("initializing source %s: %s", src, msg)}
	}
	reg, _ := cfg.registryFor(r)
	if reg.Blocked {
		return "", fail(fmt.Sprintf("registry %s is blocked in %s or %s", r.domain, crioRegistriesConf, crioRegistriesDir))
	}
	host := r.domain
	if host == hubDomain {
		host = hubHost
	}
	s.mu.Lock()
	o := dialOptions{internet: n.Internet(), proxy: s.proxy}
	s.mu.Unlock()
	if r.domain != hubDomain {
		o.tls.cas = readCAFiles(s.m, crioCertDir(s.m, r.domain))
	}
	eps := []endpoint{{"https", host}}
	if reg.Insecure {
		o.tls.skipVerify = true
		eps = append(eps, endpoint{"http", host})
	}
	var srv server
	var lastErr string
	for _, e := range eps {
		var f *failure
		srv, f = dial(n, s.m, e, o)
		if f == nil {
			break
		}
		msg := f.goErr()
		if f.kind == failHTTPToTLS {
			msg = "StatusCode: 400, \"Client sent an HTTP request to an HTTPS server.\\n\""
		}
		lastErr = fmt.Sprintf("pinging container registry %s: Get %q: %s", host, e.url("/v2/"), msg)
	}
	if srv == nil {
		return "", fail(lastErr)
	}
	rec := PullRecord{Host: s.m.Hostname(), Runtime: "cri-o", Image: r.path + ":" + r.reference()}
	if authorize(srv, auth) != authOK {
		srv.record(rec)
		return "", fail(fmt.Sprintf("reading manifest %s in %s: unauthorized: authentication required", r.reference(), r.name()))
	}
	im, ok := srv.lookup(r.path, r.reference())
	if !ok {
		srv.record(rec)
		if r.domain == hubDomain && !hubRepoExists(r) {
			return "", fail(fmt.Sprintf("reading manifest %s in %s: requested access to the resource is denied", r.reference(), r.name()))
		}
		return "", fail(fmt.Sprintf("reading manifest %s in %s: manifest unknown: manifest unknown", r.reference(), r.name()))
	}
	rec.OK = true
	srv.record(rec)
	s.mu.Lock()
	criStore(s.images, s.tags, r, im, r.domain)
	s.mu.Unlock()
	return im.id(), nil
}

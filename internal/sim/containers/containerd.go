package containers

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"path/filepath"
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
)

// ContainerdConfig is the configuration containerd loaded from
// /etc/containerd/config.toml when it last started (containerd has no
// reload: a change takes a restart).
type ContainerdConfig struct {
	// Release is the containerd version that runs ("1.7.12"), from the
	// installed containerd or containerd.io package.
	Release string
	// Exists says config.toml was there; without it containerd runs on its
	// defaults (the CRI plugin enabled; schema version 2 and no
	// config_path in 1.x, version 3 and config_path
	// "/etc/containerd/certs.d:/etc/docker/certs.d" in 2.x).
	Exists bool
	// Version is the schema version: the file's "version", 1 when it has
	// none. containerd 1.6 and 1.7 before 1.7.17 read a version 3 file
	// (containerd 2's) as version 2: its io.containerd.cri.v1.images
	// section, and so its config_path, is ignored; 1.7.17 and later
	// refuse to start.
	Version int
	// ConfigPath is the CRI registry's config_path (the hosts.toml root,
	// or a list of roots separated by ":"), "" when unset.
	ConfigPath string
	// ConfigPathLiteral says the CRI's pulls take ConfigPath as one
	// directory, ":" and all, instead of splitting it: containerd 2's
	// pulls through the transfer service (containerd#12808).
	ConfigPathLiteral bool
	// LegacyMirrors and LegacyConfigs say the deprecated
	// registry.mirrors and registry.configs tables are set (non-empty).
	LegacyMirrors, LegacyConfigs bool
	// HTTPProxy, HTTPSProxy and NoProxy come from the unit's environment
	// (Environment= and EnvironmentFile= of containerd.service and its
	// drop-ins, as systemd loaded them), which containerd's Go HTTP
	// client reads for its registry requests (net/http's
	// ProxyFromEnvironment; containerd's docs/hosts.md and the
	// Kubernetes "containerd proxy" drop-in
	// /etc/systemd/system/containerd.service.d/http-proxy.conf).
	HTTPProxy, HTTPSProxy, NoProxy string
	// CRIDisabled says disabled_plugins turns the CRI plugin off (as
	// containerd.io's packaged config.toml does).
	CRIDisabled bool
	// CRIError is why the CRI plugin failed to load, "" when it loaded.
	// containerd itself keeps running without it (it logs "failed to load
	// plugin io.containerd.grpc.v1.cri"), so the kubelet and crictl find
	// no CRI service: config_path combined with registry.mirrors (or, in
	// 1.x, registry.configs.*.tls) gives "invalid plugin config: `mirrors`
	// cannot be set when `config_path` is provided" (kubespray#9743).
	CRIError string
}

// ConfigPathRoots returns the directories the CRI's pulls search for a
// registry's host directory, in order: config_path split with
// filepath.SplitList (containerd 1.6/1.7 pkg/cri/server/image_pull.go
// registryHosts and hostDirFromRoots; 2.x's local pulls), or config_path
// whole where ConfigPathLiteral.
func (c ContainerdConfig) ConfigPathRoots() []string {
	if c.ConfigPath == "" {
		return nil
	}
	if c.ConfigPathLiteral {
		return []string{c.ConfigPath}
	}
	return filepath.SplitList(c.ConfigPath)
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

// containerdDefaultConfigPath is containerd 2.x's default config_path: a
// list, split with filepath.SplitList
// (containerd v2.2.0 internal/cri/config/config_unix.go DefaultImageConfig).
const containerdDefaultConfigPath = "/etc/containerd/certs.d:/etc/docker/certs.d"

// containerdRelease is the containerd a machine has installed: the
// upstream version of its containerd or containerd.io package.
type containerdRelease struct {
	major, minor, patch int
}

// containerdReleaseOf reads the installed package's version: its Debian
// version without epoch and revision ("1.7.12-0ubuntu2~22.04.1",
// "1.6.20~ds1-1+deb12u3", "2.2.0-1").
func containerdReleaseOf(m *ubuntu.Machine) containerdRelease {
	v := m.Version("containerd.io")
	if v == "" {
		v = m.Version("containerd")
	}
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	v, _, _ = strings.Cut(v, "~")
	var r containerdRelease
	if _, err := fmt.Sscanf(v, "%d.%d.%d", &r.major, &r.minor, &r.patch); err != nil {
		return containerdRelease{1, 7, 12}
	}
	return r
}

func (r containerdRelease) String() string { return fmt.Sprintf("%d.%d.%d", r.major, r.minor, r.patch) }

// before reports whether r is older than major.minor.patch.
func (r containerdRelease) before(major, minor, patch int) bool {
	return slices.Compare([]int{r.major, r.minor, r.patch}, []int{major, minor, patch}) < 0
}

// criPlugin is the table of config.toml's plugins that holds the CRI
// image settings (registry) for a schema version: "cri" in version 1
// (plugin IDs), "io.containerd.grpc.v1.cri" in version 2, and in version
// 3 containerd 2's image plugin "io.containerd.cri.v1.images"
// (containerd v2.2.0 cmd/containerd/server/config/config.go
// v1MigratePluginName; internal/cri/config/config.go). containerd 1.x
// reads a version 3 file as version 2 (see validate), so the v3 table is
// a plugin it does not have.
func (r containerdRelease) criPlugin(version int) string {
	switch {
	case version == 1:
		return "cri"
	case version >= 3 && r.major >= 2:
		return "io.containerd.cri.v1.images"
	}
	return "io.containerd.grpc.v1.cri"
}

// validate is the check containerd makes of a config.toml before it
// starts; an error stops it from starting.
//   - 1.6: version 2+ wants plugin URIs (4 dot-separated parts) in
//     disabled_plugins, required_plugins and plugins' keys; version 3 is
//     read as version 2 (v1.6.20 services/server/config/config.go
//     ValidateV2).
//   - 1.7: the same URIs must start with "io.containerd." (v1.7.12
//     ValidateV2); from 1.7.17 a version above 2 is refused ("containerd
//     config version `3` is not supported, the max version is `2`").
//   - 2.x: versions up to 3 (1 and 2 are migrated in memory); plugin
//     names in disabled_plugins and required_plugins need a dot once
//     migrated: a version 1 file's "cri" becomes io.containerd.grpc.v1.cri
//     (v2.2.0 cmd/containerd/server/config/config.go ValidateVersion,
//     v1MigratePluginName).
func (r containerdRelease) validate(doc map[string]any, version int) error {
	if r.major >= 2 {
		if version > 3 {
			return fmt.Errorf("expected containerd config version equal to or less than `3`, got `%d`", version)
		}
		if version == 1 {
			return nil
		}
		for _, key := range []string{"disabled_plugins", "required_plugins"} {
			for _, p := range asStrings(doc[key]) {
				if !strings.Contains(p, ".") {
					return fmt.Errorf("invalid %s plugin URI %q expect io.containerd.x.vx", strings.TrimSuffix(key, "_plugins"), p)
				}
			}
		}
		return nil
	}
	if version < 2 {
		return nil
	}
	if version > 2 && !r.before(1, 7, 17) {
		return fmt.Errorf("unsupported config version `%d`", version)
	}
	uri := func(p string) bool {
		if r.before(1, 7, 0) {
			return len(strings.Split(p, ".")) >= 4
		}
		return strings.HasPrefix(p, "io.containerd.") && len(strings.SplitN(p, ".", 4)) >= 4
	}
	for _, key := range []string{"disabled_plugins", "required_plugins"} {
		for _, p := range asStrings(doc[key]) {
			if !uri(p) {
				return fmt.Errorf("invalid %s plugin URI %q expect io.containerd.x.vx", strings.TrimSuffix(key, "_plugins"), p)
			}
		}
	}
	for p := range subTable(doc, "plugins") {
		if !uri(p) {
			return fmt.Errorf("invalid plugin key URI %q expect io.containerd.x.vx", p)
		}
	}
	return nil
}

// criDisabled reports whether disabled_plugins turns the CRI off: by
// plugin ID ("cri") in a version 1 file on 1.x (V1DisabledFilter), by
// URI otherwise (V2DisabledFilter; v1.7.12
// services/server/config/config.go). In 2.x the CRI service
// io.containerd.grpc.v1.cri needs the image and runtime plugins
// io.containerd.cri.v1.images and io.containerd.cri.v1.runtime, so
// disabling any of them leaves no CRI.
func (r containerdRelease) criDisabled(disabled []string, version int) bool {
	names := []string{"io.containerd.grpc.v1.cri"}
	switch {
	case r.major >= 2 && version == 1:
		names = append(names, "cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime")
	case r.major >= 2:
		names = append(names, "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime")
	case version == 1:
		names = []string{"cri"}
	}
	return slices.ContainsFunc(disabled, func(d string) bool { return slices.Contains(names, d) })
}

// containerdStart loads config.toml as the installed containerd does. A
// file that does not parse or that containerd refuses stops it from
// starting; a CRI plugin that cannot load does not.
func containerdStart(m *ubuntu.Machine) error {
	s := containerdOf(m)
	rel := containerdReleaseOf(m)
	cfg := ContainerdConfig{Release: rel.String(), Version: 2}
	if rel.major >= 2 {
		cfg.Version = 3
	}
	mirrors := map[string][]string{}
	configs := map[string]legacyConf{}
	doc := map[string]any{}
	if data, err := m.Server().FS().ReadFile(containerdConfigFile); err == nil {
		cfg.Exists = true
		if err := toml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("containerd: failed to load TOML from %s: %v", containerdConfigFile, err)
		}
		cfg.Version = 1
		if v, ok := doc["version"].(int64); ok {
			cfg.Version = int(v)
		}
		if err := rel.validate(doc, cfg.Version); err != nil {
			return fmt.Errorf("containerd: failed to load TOML from %s: %v", containerdConfigFile, err)
		}
	}
	cfg.CRIDisabled = rel.criDisabled(asStrings(doc["disabled_plugins"]), cfg.Version)
	cri := subTable(subTable(doc, "plugins"), rel.criPlugin(cfg.Version))
	reg := subTable(cri, "registry")
	configPath, set := reg["config_path"].(string)
	cfg.ConfigPath = configPath
	for host, v := range subTable(reg, "mirrors") {
		if t, ok := v.(map[string]any); ok {
			mirrors[host] = append(mirrors[host], asStrings(t["endpoint"])...)
		}
	}
	for host, v := range subTable(reg, "configs") {
		t, _ := v.(map[string]any)
		var lc legacyConf
		if tlsT, ok := t["tls"].(map[string]any); ok && rel.major < 2 {
			// containerd 2 has no configs.tls: RegistryConfig holds only
			// auth (v2.2.0 internal/cri/config/config.go).
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
	if rel.major >= 2 {
		// The file's registry table is decoded over DefaultImageConfig,
		// whose config_path is the list, so a file that does not set it
		// gets the list, legacy mirrors or not; migrating a version 2 file
		// turns an empty one into the list too (v2.2.0
		// plugins/cri/images/plugin.go).
		if !set || (configPath == "" && cfg.Version < 3) {
			cfg.ConfigPath = containerdDefaultConfigPath
		}
		cfg.ConfigPathLiteral = !localImagePull(cri, mirrors, configs, reg)
	}
	cfg.CRIError = criConfigError(rel, cfg.ConfigPath, mirrors, configs)
	env, err := unitEnvironment(m, "containerd.service")
	if err != nil {
		return err
	}
	s.mu.Lock()
	prev := s.cfg
	s.mu.Unlock()
	if m.Service("containerd").NeedDaemonReload {
		// systemd still has the drop-ins it loaded before they changed.
		env = map[string]string{"HTTP_PROXY": prev.HTTPProxy, "HTTPS_PROXY": prev.HTTPSProxy, "NO_PROXY": prev.NoProxy}
	}
	cfg.HTTPProxy, cfg.HTTPSProxy, cfg.NoProxy = proxyEnv(env, "HTTP_PROXY"), proxyEnv(env, "HTTPS_PROXY"), proxyEnv(env, "NO_PROXY")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.mirrors, s.configs, s.running = cfg, mirrors, configs, true
	return nil
}

// localImagePull reports whether containerd 2's CRI pulls images itself
// rather than through the transfer service: when use_local_image_pull
// is set or a setting the transfer service does not support is
// (registry mirrors, configs or auths, discard_unpacked_layers; v2.2.0
// internal/cri/config/config.go CheckLocalImagePullConfigs). Only that
// path splits config_path into a list (internal/cri/server/images/
// image_pull.go registryHosts); the transfer service takes it as one
// directory (registry.WithHostDir: containerd#12808, open as of 2.2.0).
func localImagePull(cri map[string]any, mirrors map[string][]string, configs map[string]legacyConf, reg map[string]any) bool {
	local, _ := cri["use_local_image_pull"].(bool)
	discard, _ := cri["discard_unpacked_layers"].(bool)
	return local || discard || len(mirrors) > 0 || len(configs) > 0 || len(subTable(reg, "auths")) > 0
}

// criConfigError is why the CRI plugin refuses its registry settings:
// config_path with registry.mirrors, and in 1.x with any
// registry.configs.*.tls (v1.6.20 and v1.7.12 pkg/cri/config/config.go
// ValidatePluginConfig; v2.2.0 internal/cri/config/config.go
// ValidateImageConfig keeps only the mirrors check). Credentials alone
// (configs.*.auth) are accepted.
func criConfigError(rel containerdRelease, configPath string, mirrors map[string][]string, configs map[string]legacyConf) string {
	if configPath == "" {
		return ""
	}
	if len(mirrors) > 0 {
		return "invalid plugin config: `mirrors` cannot be set when `config_path` is provided"
	}
	for _, lc := range configs {
		if lc.hasTLS && rel.major < 2 {
			return "invalid plugin config: `configs.tls` cannot be set when `config_path` is provided"
		}
	}
	return ""
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
	if dir := hostDir(s.m.Server().FS(), cfg.ConfigPathRoots(), domain); dir != "" {
		return s.loadHostDir(dir, endpoint{defaultScheme, upstream}), nil
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

// hostPaths are the directories containerd looks for under a root, in
// order: "host_port_" (":port" rewritten), "host:port", then "_default"
// (containerd core/remotes/docker/config/config_unix.go hostPaths and
// hosts.go hostDirectory, the same in 1.6.20, 1.7 and 2.2.0).
func hostPaths(root, host string) []string {
	var out []string
	if i := strings.LastIndex(host, ":"); i > 0 {
		out = append(out, path.Join(root, host[:i]+"_"+host[i+1:]+"_"))
	}
	return append(out, path.Join(root, host), path.Join(root, "_default"))
}

// hostDir is the first of hostPaths that exists, root after root: a
// root's _default wins over a later root's host directory (hosts.go
// HostDirFromRoot; image_pull.go hostDirFromRoots). "" when none does.
func hostDir(fsys interface {
	Stat(string) (fs.FileInfo, error)
}, roots []string, host string) string {
	for _, root := range roots {
		for _, p := range hostPaths(root, host) {
			if _, err := fsys.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}

// loadHostDir reads a host directory as containerd does on every pull
// (hosts.go loadHostDir): hosts.toml's host entries in file order, then
// its server (root: the registry itself when unset). A missing or empty
// hosts.toml, or one that does not parse (bad TOML, an unknown
// capability, a ca that is neither a string nor a list), falls back to
// the directory's certificate files as Docker lays them out: *.crt are
// CAs (loadCertFiles).
func (s *ContainerdState) loadHostDir(dir string, root endpoint) []criHost {
	fsys := s.m.Server().FS()
	certFiles := func() []criHost {
		h := criHost{endpoint: root, resolve: true, authHost: root.host}
		entries, _ := fsys.ReadDir(dir)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".crt") {
				h.cas = append(h.cas, path.Join(dir, e.Name()))
			}
		}
		return []criHost{h}
	}
	data, err := fsys.ReadFile(path.Join(dir, "hosts.toml"))
	if err != nil || len(data) == 0 {
		return certFiles()
	}
	var hf hostsFile
	if err := toml.Unmarshal(data, &hf); err != nil {
		return certFiles()
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
		h, ok := makeCRIHost(dir, parseHostURL(key), e.Capabilities, e.CA, e.SkipVerify)
		if !ok {
			return certFiles()
		}
		out = append(out, h)
	}
	if hf.Server != "" {
		root = parseHostURL(hf.Server)
	}
	h, ok := makeCRIHost(dir, root, hf.Capabilities, hf.CA, hf.SkipVerify)
	if !ok {
		return certFiles()
	}
	return append(out, h)
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

// makeCRIHost is one host of a hosts.toml; ok is false for settings
// containerd refuses (hosts.go parseHostConfig): an unknown capability,
// or a ca that is neither a string nor a list of strings. No
// capabilities (unset or empty) means all of them.
func makeCRIHost(dir string, e endpoint, caps []string, ca any, skip bool) (criHost, bool) {
	h := criHost{endpoint: e, resolve: len(caps) == 0, skipVerify: skip, authHost: e.host}
	for _, c := range caps {
		switch strings.ToLower(c) {
		case "resolve":
			h.resolve = true
		case "pull", "push":
		default:
			return criHost{}, false
		}
	}
	switch ca.(type) {
	case nil, string, []any:
	default:
		return criHost{}, false
	}
	for _, f := range asStrings(ca) {
		if !path.IsAbs(f) {
			f = path.Join(dir, f)
		}
		h.cas = append(h.cas, f)
	}
	return h, true
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
		s.mu.Lock()
		proxy := proxyConfig{HTTP: s.cfg.HTTPProxy, HTTPS: s.cfg.HTTPSProxy, NoProxy: s.cfg.NoProxy}
		s.mu.Unlock()
		srv, f := dial(n, s.m, h.endpoint, dialOptions{tls: tlsSettings{cas: cas, skipVerify: h.skipVerify}, internet: n.Internet(), proxy: proxy})
		if f != nil {
			if firstErr == "" {
				switch {
				case f.kind == failHTTPToTLS:
					firstErr = fmt.Sprintf("unexpected status from HEAD request to %s: 400 Bad Request", u)
				case f.status != 0: // a proxy's answer (containerd's core/remotes/docker/resolver.go)
					firstErr = fmt.Sprintf("unexpected status from HEAD request to %s: %d %s", u, f.status, http.StatusText(f.status))
				default:
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
		containerdVersion := containerdReleaseOf(m).String()
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

// containerdCommits are the upstream commits of the releases the
// catalog has (git rev-list -n1 vX.Y.Z in containerd/containerd).
var containerdCommits = map[string]string{
	"1.6.33": "d2d58213f83a351ca8f528a95fbd145f5654e957",
	"1.7.12": "71909c1814c544ac47ab91d2e8b84718e517bb99",
	"2.2.0":  "1c4457e00facac03ce1d75f7b6777a7a851e5c41",
}

// containerdVersionTool is /usr/bin/containerd: --version (and -v), as
// each build prints it: Docker's containerd.io names itself and its
// commit, Ubuntu's build has no commit (the line ends in a space),
// Debian's prints its package version where the commit goes.
func containerdVersionTool(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	if len(p.Args) == 2 && (p.Args[1] == "--version" || p.Args[1] == "-v") {
		rel := containerdReleaseOf(m).String()
		pkg := "github.com/containerd/containerd"
		if strings.HasPrefix(rel, "2.") {
			pkg += "/v2"
		}
		switch v := m.Version("containerd"); {
		case m.Installed("containerd.io"):
			fmt.Fprintf(p.Stdout, "containerd containerd.io %s %s\n", rel, containerdCommits[rel])
		case strings.Contains(v, "~ds"):
			upstream, _, _ := strings.Cut(v, "-")
			fmt.Fprintf(p.Stdout, "containerd %s %s %s\n", pkg, upstream, v)
		default:
			fmt.Fprintf(p.Stdout, "containerd %s %s \n", pkg, rel)
		}
		return 0
	}
	fmt.Fprintf(p.Stderr, "containerd: %s: only --version is modelled by internal/sim/containers (the daemon runs as containerd.service)\n", strings.Join(p.Args[1:], " "))
	return 1
}

package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Runtime is a container runtime a node may run.
type Runtime string

// The runtimes ConfigureRegistryTrust configures.
const (
	Docker     Runtime = "docker"
	Containerd Runtime = "containerd"
	CRIO       Runtime = "crio"
)

// Paths ConfigureRegistryTrust writes.
const (
	DockerDaemonJSON     = "/etc/docker/daemon.json"
	DockerCertsDir       = "/etc/docker/certs.d"
	DockerAuthFile       = "/root/.docker/config.json"
	ContainerdConfig     = "/etc/containerd/config.toml"
	ContainerdCertsDir   = "/etc/containerd/certs.d"
	CRIORegistriesDir    = "/etc/containers/registries.conf.d"
	CRIOCertsDir         = "/etc/containers/certs.d"
	KubeletAuthFile      = "/var/lib/kubelet/config.json"
	HostsFile            = "/etc/hosts"
	HostsBlock           = "private-registries"
	criORegistriesPrefix = "50-mgmtkit-"
	// TrustPendingDir holds one file per daemon (docker, containerd,
	// crio) whose configuration ConfigureRegistryTrust has changed but
	// that has not reloaded since: the file is put in place no later than
	// the configuration and removed by the command that reloads the
	// daemon, so a run cut short in between (a failed or lost systemctl)
	// leaves the reload to the next run instead of forgetting it.
	TrustPendingDir = "/var/lib/mgmtkit/registry-trust/pending"
)

// daemonReload is how a runtime's daemon picks up a changed
// configuration file. try-reload-or-restart is SIGHUP for Docker and
// CRI-O; containerd cannot reload, so it is try-restart. Either leaves a
// stopped daemon stopped: it reads the file when it starts.
type daemonReload struct {
	rt         Runtime
	verb, unit string
}

var daemonReloads = []daemonReload{
	{Docker, "try-reload-or-restart", "docker"},
	{Containerd, "try-restart", "containerd"},
	{CRIO, "try-reload-or-restart", "crio"},
}

// pending is the daemon's file in TrustPendingDir.
func (r daemonReload) pending() string { return path.Join(TrustPendingDir, r.unit) }

// reloadScript reloads (or restarts) a daemon, then forgets that it had
// to.
const reloadScript = `systemctl "$1" "$2" && rm -f -- "$3"`

// detectScript lists the runtimes whose daemons are installed. It looks
// in root's PATH (sshd's superuser path, sudo's secure_path) before the
// login user's own: a login user's PATH is no guide to what is installed.
// On Debian it is OpenSSH's default user path
// /usr/local/bin:/usr/bin:/bin:/usr/games (Debian's openssh is built
// --with-default-path so, and Debian's /etc/environment, which pam_env
// reads, sets none), without /usr/sbin, where Debian's docker.io installs
// dockerd; a non-interactive `ssh host cmd` reads no /etc/profile.
var detectScript = remote.MustParseScript("detect-runtimes", `
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
for daemon in dockerd containerd crio; do
	if command -v "$daemon" >/dev/null 2>&1; then echo "$daemon"; fi
done
`)

// DetectRuntimes returns the container runtimes installed on h, by their
// daemons' programs (dockerd, containerd, crio), looked for in the
// standard bin and sbin directories and then on the login user's PATH,
// so that /usr/sbin/dockerd is found whoever logs in. Docker's own
// containerd counts as containerd: the kubelet may use it.
func DetectRuntimes(ctx context.Context, h remote.Host) ([]Runtime, error) {
	cmd, err := detectScript.Cmd(nil)
	if err != nil {
		return nil, err
	}
	cmd.Idempotent = true
	out, err := h.Run(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var rts []Runtime
	for _, l := range strings.Fields(string(out.Stdout)) {
		switch l {
		case "dockerd":
			rts = append(rts, Docker)
		case "containerd":
			rts = append(rts, Containerd)
		case "crio":
			rts = append(rts, CRIO)
		}
	}
	return rts, nil
}

// TrustOptions configure ConfigureRegistryTrust.
type TrustOptions struct {
	// Package is the VNF package the connections' certificate_path files
	// are read from. Required when a connection has one.
	Package *lcm.Package
	// Runtimes, when set, are the runtimes to configure instead of those
	// DetectRuntimes finds.
	Runtimes []Runtime
}

// trustState is what one host's configuration run has done.
type trustState struct {
	h       remote.Host
	changes []string
	// Planned before anything is written, so that a file mgmtkit refuses
	// to touch stops the run before its first change.
	daemonJSON       []byte // the merged daemon.json; nil when unchanged
	containerdDir    string // where containerd reads hosts.toml files
	containerdConfig []byte // config.toml with config_path; nil when unchanged
	// files are the root-owned files plan read with one command; a
	// missing one is absent.
	files map[string][]byte
	// writes are every file the run wants, written together at the end.
	writes []remote.FileWrite
}

func (s *trustState) did(format string, args ...any) {
	s.changes = append(s.changes, fmt.Sprintf(format, args...))
}

// want asks for a root-owned file with content and mode.
func (s *trustState) want(file string, content []byte, mode fs.FileMode) {
	s.writes = append(s.writes, remote.FileWrite{Path: file, Content: content, Options: remote.FileOptions{Mode: mode, Owner: "root", Group: "root", Sudo: true}})
}

// write puts every wanted file in place at once.
func (s *trustState) write(ctx context.Context) error {
	changed, err := remote.WriteFiles(ctx, s.h, s.writes)
	for i, w := range s.writes {
		if changed[i] && path.Dir(w.Path) != TrustPendingDir {
			s.did("wrote %s", w.Path)
		}
	}
	return err
}

// reloads returns the daemons to reload after the planned writes: those
// whose file the writes change, and those an earlier run left pending.
// For the former it puts their pending file first among the writes, so
// that it is in place before the configuration it stands for.
func (s *trustState) reloads(rts []Runtime) []daemonReload {
	var out, marks []daemonReload
	for _, r := range daemonReloads {
		if !slices.Contains(rts, r.rt) {
			continue
		}
		var changed bool
		switch r.rt {
		case Docker:
			changed = s.daemonJSON != nil
		case Containerd:
			changed = s.containerdConfig != nil
		case CRIO:
			changed = slices.ContainsFunc(s.writes, func(w remote.FileWrite) bool {
				cur, ok := s.files[w.Path]
				return path.Dir(w.Path) == CRIORegistriesDir && (!ok || !bytes.Equal(cur, w.Content))
			})
		}
		_, pending := s.files[r.pending()]
		if changed && !pending {
			marks = append(marks, r)
		}
		if changed || pending {
			out = append(out, r)
		}
	}
	var first []remote.FileWrite
	for _, r := range marks {
		first = append(first, remote.FileWrite{Path: r.pending(), Content: []byte("systemctl " + r.verb + " " + r.unit + "\n"),
			Options: remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true}})
	}
	s.writes = append(first, s.writes...)
	return out
}

// ConfigureRegistryTrust makes h able to pull from every registry of
// conns with every container runtime installed on it:
//
//   - /etc/hosts: the connections' hosts_string lines in one managed block,
//     and the same block in cloud-init's [HostsTemplate] when that file
//     exists: with manage_etc_hosts: true, cloud-init renders /etc/hosts
//     from it at every boot (cc_update_etc_hosts), so a line in /etc/hosts
//     alone would be gone after a reboot. With manage_etc_hosts
//     "localhost" or false (cloud-init's default) the template is unused
//     and /etc/hosts keeps the block by itself; the template is written
//     anyway, since the setting may change (cloud-init's own comment in
//     the file says to edit the template to make changes persist; a
//     cloud-init upgrade that ships a new template treats it as an
//     edited configuration file);
//   - Docker: HTTP registries merged into daemon.json's
//     insecure-registries (then `systemctl try-reload-or-restart docker`,
//     only when the file changed), CAs in /etc/docker/certs.d/SERVER/ca.crt, and
//     credentials through `docker login --password-stdin` (skipped when
//     root's config.json already holds them);
//   - containerd: config_path set once in config.toml (then a restart;
//     the file is re-encoded that one time, so its comments go; refused
//     when config.toml uses the legacy registry.mirrors or
//     registry.configs, which cannot be mixed with it), and one
//     certs.d/SERVER/hosts.toml per registry (http:// for HTTP, ca = for
//     a CA), which containerd reads on each pull, so no restart;
//   - CRI-O: a registries.conf.d entry for HTTP registries (then
//     `systemctl try-reload-or-restart crio`), CAs in
//     /etc/containers/certs.d/SERVER;
//   - kubelet: credentials merged into /var/lib/kubelet/config.json
//     (0600), which the kubelet sends with every image pull under any
//     runtime.
//
// All connections of a node are applied at once: the shared files are
// read with one command, every file is compared with one command and put
// in place with one more ([remote.WriteFiles]), and each daemon reloads
// at most once: 9 commands for a fresh node with Docker and containerd
// and the cir sample's two registries, 4 for a converged one. A daemon
// whose file changed is told even when the run that changed the file
// failed before telling it: the next run does (see [TrustPendingDir]).
// Secrets
// reach the host only on standard input and inside root-only files. A
// second run changes nothing and reports so. Trust is
// only ever added: a registry that an earlier call configured and this
// one does not name keeps its files (the /etc/hosts block excepted, which
// holds exactly the lines given).
func ConfigureRegistryTrust(ctx context.Context, h remote.Host, conns []Connection, opts TrustOptions) (lcm.Result, error) {
	s := &trustState{h: h}
	if len(conns) == 0 {
		return lcm.Unchanged, nil
	}
	rts := opts.Runtimes
	if rts == nil {
		var err error
		if rts, err = DetectRuntimes(ctx, h); err != nil {
			return lcm.Unchanged, err
		}
	}
	cas, err := readCAs(conns, opts.Package)
	if err != nil {
		return lcm.Unchanged, err
	}
	if err := s.plan(ctx, rts, conns); err != nil {
		return lcm.Unchanged, err
	}
	// Decide every file, write them together, then tell the daemons
	// whose configuration changed, then log Docker in.
	steps := []func([]Connection, map[string][]byte) error{s.hosts}
	if slices.Contains(rts, Docker) {
		steps = append(steps, s.docker)
	}
	if slices.Contains(rts, Containerd) {
		steps = append(steps, s.containerd)
	}
	if slices.Contains(rts, CRIO) {
		steps = append(steps, s.crio)
	}
	steps = append(steps, s.kubeletAuth)
	for _, step := range steps {
		if err := step(conns, cas); err != nil {
			return lcm.Unchanged, err
		}
	}
	reloads := s.reloads(rts)
	if err := s.write(ctx); err != nil {
		return result(s.changes), err
	}
	// Every daemon is told, even after another failed.
	for _, r := range reloads {
		err = errors.Join(err, s.reload(ctx, r))
	}
	if err == nil && slices.Contains(rts, Docker) {
		err = s.dockerLogin(ctx, conns)
	}
	return result(s.changes), err
}

// readCAs reads the CA files of the connections, by server.
func readCAs(conns []Connection, pkg *lcm.Package) (map[string][]byte, error) {
	cas := map[string][]byte{}
	for i, c := range conns {
		if c.CertificatePath == "" {
			continue
		}
		if pkg == nil {
			return nil, fmt.Errorf("private_registry_connection_info[%d].certificate_path: no VNF package to read it from", i)
		}
		b, err := pkg.ReadFile(c.CertificatePath)
		if err == nil {
			err = checkCertificates(b)
		}
		if err != nil {
			return nil, fmt.Errorf("private_registry_connection_info[%d].certificate_path %s: %w", i, c.CertificatePath, err)
		}
		cas[c.Server] = b
	}
	return cas, nil
}

// HostsTemplate is cloud-init's template for /etc/hosts on Debian and
// Ubuntu (their osfamily is debian), which ConfigureRegistryTrust also
// writes when it exists.
const HostsTemplate = "/etc/cloud/templates/hosts.debian.tmpl"

// hosts puts the hosts_string lines into their managed block of
// /etc/hosts and, when cloud-init's template exists, of [HostsTemplate]
// too, keeping each file's mode and owner.
func (s *trustState) hosts(conns []Connection, _ map[string][]byte) error {
	var lines []string
	for _, c := range conns {
		if l := c.HostsLine(); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	if err := s.hostsBlock(HostsFile, lines, len(lines) > 0); err != nil {
		return err
	}
	return s.hostsBlock(HostsTemplate, lines, false)
}

// hostsBlock makes the managed block of a hosts file hold lines; a
// missing file is created only when create is set. The template's first
// line ("## template:jinja") stays first: the block goes at the end, and
// hosts lines hold nothing Jinja would interpret (an address and a name).
func (s *trustState) hostsBlock(file string, lines []string, create bool) error {
	current, exists := s.files[file]
	if !exists && !create {
		return nil
	}
	content, err := remote.ReplaceBlock(current, HostsBlock, lines)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	s.writes = append(s.writes, remote.FileWrite{Path: file, Content: content, Options: remote.FileOptions{Sudo: true}})
	return nil
}

// docker installs CAs and the merged daemon.json.
func (s *trustState) docker(conns []Connection, cas map[string][]byte) error {
	for _, c := range conns {
		if ca, ok := cas[c.Server]; ok {
			s.want(path.Join(DockerCertsDir, c.Server, "ca.crt"), ca, 0o644)
		}
	}
	if s.daemonJSON != nil {
		s.want(DockerDaemonJSON, s.daemonJSON, 0o644)
	}
	return nil
}

// plan reads the shared configuration files the runtimes need changed and
// decides their new content, refusing (before anything is written) files
// mgmtkit will not rewrite: a daemon.json that is not JSON, a config.toml
// that is not TOML, has no schema version, or uses the legacy registry
// settings.
func (s *trustState) plan(ctx context.Context, rts []Runtime, conns []Connection) error {
	var insecure []string
	creds := false
	for _, c := range conns {
		if c.Type() == HTTP {
			insecure = append(insecure, c.Server)
		}
		creds = creds || c.Username != ""
	}
	// Every shared file this run may merge, in one command.
	read := []string{HostsFile, HostsTemplate}
	if slices.Contains(rts, Docker) && len(insecure) > 0 {
		read = append(read, DockerDaemonJSON)
	}
	if slices.Contains(rts, Containerd) {
		read = append(read, ContainerdConfig)
	}
	if creds {
		read = append(read, KubeletAuthFile)
		if slices.Contains(rts, Docker) {
			read = append(read, DockerAuthFile)
		}
	}
	if slices.Contains(rts, CRIO) {
		for _, c := range conns {
			if c.Type() == HTTP {
				read = append(read, crioRegistriesFile(c))
			}
		}
	}
	for _, r := range daemonReloads {
		if slices.Contains(rts, r.rt) {
			read = append(read, r.pending())
		}
	}
	files, err := remote.ReadFiles(ctx, s.h, read, remote.FileOptions{Sudo: true})
	if err != nil {
		return err
	}
	s.files = files
	if slices.Contains(rts, Docker) && len(insecure) > 0 {
		merged, changed, err := mergeInsecure(s.files[DockerDaemonJSON], insecure)
		if err != nil {
			return err
		}
		if changed {
			s.daemonJSON = merged
		}
	}
	if slices.Contains(rts, Containerd) {
		var err error
		s.containerdDir, s.containerdConfig, err = s.planContainerd(ctx)
		return err
	}
	return nil
}

// mergeInsecure adds servers to daemon.json's insecure-registries,
// keeping every other setting.
func mergeInsecure(old []byte, servers []string) ([]byte, bool, error) {
	cfg := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(old))
		dec.UseNumber()
		if err := dec.Decode(&cfg); err != nil {
			return nil, false, fmt.Errorf("%s is not a JSON object (%v): fix it by hand; mgmtkit will not overwrite it", DockerDaemonJSON, err)
		}
	}
	var list []any
	switch v := cfg["insecure-registries"].(type) {
	case nil:
	case []any:
		list = v
	default:
		return nil, false, fmt.Errorf("%s: insecure-registries is not a list", DockerDaemonJSON)
	}
	changed := false
	for _, srv := range servers {
		if !slices.Contains(list, any(srv)) {
			list = append(list, srv)
			changed = true
		}
	}
	if !changed {
		return old, false, nil
	}
	cfg["insecure-registries"] = list
	b, err := json.MarshalIndent(cfg, "", "  ")
	return append(b, '\n'), true, err
}

// reload makes a daemon pick up its changed file and removes its pending
// file, in one command.
func (s *trustState) reload(ctx context.Context, r daemonReload) error {
	if _, err := s.h.Run(ctx, sudo("sh", "-c", reloadScript, "mgmtkit-reload", r.verb, r.unit, r.pending())); err != nil {
		return fmt.Errorf("systemctl %s %s: %w", r.verb, r.unit, err)
	}
	s.did("systemctl %s %s", r.verb, r.unit)
	return nil
}

// containerd sets config_path once (in the planned config.toml) and
// writes one hosts.toml per registry.
func (s *trustState) containerd(conns []Connection, cas map[string][]byte) error {
	if s.containerdConfig != nil {
		s.want(ContainerdConfig, s.containerdConfig, 0o644)
	}
	for _, c := range conns {
		dir := path.Join(s.containerdDir, c.Server)
		scheme := "https"
		if c.Type() == HTTP {
			scheme = "http"
		}
		host := hostEntry{Capabilities: []string{"pull", "resolve"}}
		if ca, ok := cas[c.Server]; ok {
			host.CA = path.Join(dir, "ca.crt")
			s.want(host.CA, ca, 0o644)
		}
		url := scheme + "://" + c.Server
		b, err := toml.Marshal(hostsTOML{Server: url, Host: map[string]hostEntry{url: host}})
		if err != nil {
			return err
		}
		s.want(path.Join(dir, "hosts.toml"), append([]byte("# Managed by mgmtkit: how containerd reaches "+c.Server+".\n"), b...), 0o644)
	}
	return nil
}

type hostsTOML struct {
	Server string               `toml:"server"`
	Host   map[string]hostEntry `toml:"host"`
}

type hostEntry struct {
	Capabilities []string `toml:"capabilities"`
	CA           string   `toml:"ca,omitempty"`
}

// planContainerd returns the directory containerd reads hosts.toml files
// from and, the first time, config.toml with config_path set there (nil
// when it already names one, ours or whoever set containerd up).
func (s *trustState) planContainerd(ctx context.Context) (string, []byte, error) {
	old := s.files[ContainerdConfig]
	cfg := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := toml.Unmarshal(old, &cfg); err != nil {
			return "", nil, fmt.Errorf("%s is not valid TOML (%v): fix it by hand; mgmtkit will not overwrite it", ContainerdConfig, err)
		}
	}
	version, err := configVersion(ctx, s.h, cfg, len(bytes.TrimSpace(old)) > 0)
	if err != nil {
		return "", nil, err
	}
	plugin := "io.containerd.grpc.v1.cri"
	if version == 3 {
		plugin = "io.containerd.cri.v1.images"
	}
	reg := table(table(table(cfg, "plugins"), plugin), "registry")
	for _, legacy := range []string{"mirrors", "configs"} {
		if v, ok := reg[legacy]; ok && !isEmptyTable(v) {
			return "", nil, fmt.Errorf("%s sets plugins.%q.registry.%s, the legacy registry settings that containerd refuses to combine with config_path: move them to hosts.toml files and remove them, then run again", ContainerdConfig, plugin, legacy)
		}
	}
	if p, _ := reg["config_path"].(string); p != "" {
		return p, nil, nil
	}
	reg["config_path"] = ContainerdCertsDir
	cfg["version"] = int64(version)
	b, err := toml.Marshal(cfg)
	return ContainerdCertsDir, b, err
}

// configVersion returns the config.toml schema version: the file's, or
// for a new file the one containerd's major version reads (3 for 2.x, 2
// for 1.x).
func configVersion(ctx context.Context, h remote.Host, cfg map[string]any, exists bool) (int, error) {
	if v, ok := cfg["version"].(int64); ok && (v == 2 || v == 3) {
		return int(v), nil
	}
	if exists {
		return 0, fmt.Errorf("%s has no version 2 or 3 (schema version 1 is not supported): run `containerd config migrate` first", ContainerdConfig)
	}
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"containerd", "--version"}, Idempotent: true})
	if err != nil {
		return 0, err
	}
	for _, f := range strings.Fields(string(out.Stdout)) {
		f = strings.TrimPrefix(f, "v")
		if strings.HasPrefix(f, "2.") {
			return 3, nil
		}
		if strings.HasPrefix(f, "1.") {
			return 2, nil
		}
	}
	return 0, fmt.Errorf("cannot tell containerd's version from %q", strings.TrimSpace(string(out.Stdout)))
}

// table returns m[key] as a table, creating it.
func table(m map[string]any, key string) map[string]any {
	if t, ok := m[key].(map[string]any); ok {
		return t
	}
	t := map[string]any{}
	m[key] = t
	return t
}

func isEmptyTable(v any) bool {
	t, ok := v.(map[string]any)
	return ok && len(t) == 0
}

// crio writes a registries.conf.d entry for HTTP registries and installs
// CAs.
func (s *trustState) crio(conns []Connection, cas map[string][]byte) error {
	for _, c := range conns {
		if ca, ok := cas[c.Server]; ok {
			s.want(path.Join(CRIOCertsDir, c.Server, "ca.crt"), ca, 0o644)
		}
		if c.Type() != HTTP {
			continue
		}
		b, err := toml.Marshal(struct {
			Registry []crioRegistry `toml:"registry"`
		}{[]crioRegistry{{Location: c.Server, Insecure: true}}})
		if err != nil {
			return err
		}
		s.want(crioRegistriesFile(c), append([]byte("# Managed by mgmtkit: "+c.Server+" over HTTP.\n"), b...), 0o644)
	}
	return nil
}

// crioRegistriesFile is the registries.conf.d entry of an HTTP registry.
func crioRegistriesFile(c Connection) string {
	return path.Join(CRIORegistriesDir, criORegistriesPrefix+strings.NewReplacer(":", "_", "/", "_").Replace(c.Server)+".conf")
}

type crioRegistry struct {
	Location string `toml:"location"`
	Insecure bool   `toml:"insecure"`
}

// authEntry is one registry of a Docker-style credentials file.
type authEntry struct {
	Auth string `json:"auth"`
}

func basicAuth(c Connection) string {
	return base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password.Reveal()))
}

// parseAuthConfig reads a config.json, keeping its other keys.
func parseAuthConfig(b []byte, file string) (map[string]json.RawMessage, map[string]json.RawMessage, error) {
	top := map[string]json.RawMessage{}
	auths := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(b)) == 0 {
		return top, auths, nil
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, nil, fmt.Errorf("%s is not a JSON object: fix it by hand; mgmtkit will not overwrite it", file)
	}
	if raw, ok := top["auths"]; ok {
		if err := json.Unmarshal(raw, &auths); err != nil {
			return nil, nil, fmt.Errorf("%s: auths is not an object", file)
		}
	}
	return top, auths, nil
}

func hasAuth(auths map[string]json.RawMessage, c Connection) bool {
	var e authEntry
	return json.Unmarshal(auths[c.Server], &e) == nil && e.Auth == basicAuth(c)
}

// kubeletAuth merges the connections' credentials into the kubelet's
// config.json.
func (s *trustState) kubeletAuth(conns []Connection, _ map[string][]byte) error {
	if !slices.ContainsFunc(conns, func(c Connection) bool { return c.Username != "" }) {
		return nil
	}
	top, auths, err := parseAuthConfig(s.files[KubeletAuthFile], KubeletAuthFile)
	if err != nil {
		return err
	}
	changed := false
	for _, c := range conns {
		if c.Username == "" || hasAuth(auths, c) {
			continue
		}
		auths[c.Server], _ = json.Marshal(authEntry{Auth: basicAuth(c)})
		changed = true
	}
	if !changed {
		return nil
	}
	top["auths"], _ = json.Marshal(auths)
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return err
	}
	s.want(KubeletAuthFile, append(b, '\n'), 0o600)
	return nil
}

// dockerLogin logs Docker in to registries whose credentials root's
// config.json does not hold yet; the password goes on standard input.
func (s *trustState) dockerLogin(ctx context.Context, conns []Connection) error {
	if !slices.ContainsFunc(conns, func(c Connection) bool { return c.Username != "" }) {
		return nil
	}
	_, auths, err := parseAuthConfig(s.files[DockerAuthFile], DockerAuthFile)
	if err != nil {
		return err
	}
	for _, c := range conns {
		if c.Username == "" || hasAuth(auths, c) {
			continue
		}
		login := remote.Cmd{
			Args:    []string{"docker", "login", "--username", c.Username, "--password-stdin", c.Server},
			Stdin:   strings.NewReader(c.Password.Reveal() + "\n"),
			Sudo:    true,
			Secrets: []remote.Secret{c.Password},
			// Logging in again is harmless; the password is re-read from
			// the start of Stdin.
			Idempotent: true,
		}
		if _, err := s.h.Run(ctx, login); err != nil {
			return fmt.Errorf("docker login to %s as %s: %w", c.Server, c.Username, err)
		}
		s.did("docker logged in to %s", c.Server)
	}
	return nil
}

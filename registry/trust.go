package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Paths ConfigureRegistryTrust writes.
const (
	DockerDaemonJSON     = "/etc/docker/daemon.json"
	DockerCertsDir       = "/etc/docker/certs.d"
	DockerAuthFile       = "/root/.docker/config.json"
	ContainerdConfig     = system.ContainerdConfigFile
	ContainerdCertsDir   = "/etc/containerd/certs.d"
	CRIORegistriesDir    = "/etc/containers/registries.conf.d"
	CRIOCertsDir         = "/etc/containers/certs.d"
	KubeletAuthFile      = "/var/lib/kubelet/config.json"
	HostsFile            = "/etc/hosts"
	HostsBlock           = "private-registries"
	criORegistriesPrefix = "50-mgmtkit-"
)

// daemonReload is how a runtime's daemon picks up a changed
// configuration file. try-reload-or-restart is SIGHUP for Docker and
// CRI-O; containerd cannot reload, so it is try-restart. Either leaves a
// stopped daemon stopped: it reads the file when it starts.
type daemonReload struct {
	rt         system.Runtime
	verb, unit string
}

var daemonReloads = []daemonReload{
	{system.Docker, "try-reload-or-restart", "docker"},
	{system.Containerd, "try-restart", "containerd"},
	{system.CRIO, "try-reload-or-restart", "crio"},
}

// pending is the daemon's marker of a reload (or restart) owed
// (system.PendingMarker): the file is put in place no later than the
// configuration and removed by the command that tells the daemon, so a
// run cut short in between (a failed or lost systemctl) leaves the
// reload to the next run instead of forgetting it, this step's or
// system.ConfigureUnit's, which pays it too.
func (r daemonReload) pending() string { return system.PendingMarker(r.unit) }

// restarts reports whether the verb restarts rather than reloads.
func (r daemonReload) restarts() bool { return r.verb == "try-restart" }

// TrustOptions configure ConfigureRegistryTrust.
type TrustOptions struct {
	// Package is the VNF package the connections' certificate_path files
	// are read from when validation has not read them from it: needed for
	// connections built in Go, or decoded without a package, that have
	// one. A decoded connection carries its CA as validation read it;
	// given another package than validation's, the CA is read again from
	// this one.
	Package *lcm.Package
	// Runtimes, when set, are the runtimes to configure instead of those
	// [system.DetectRuntimes] finds.
	Runtimes []system.Runtime
}

// trustState is what one host's configuration run has done.
type trustState struct {
	h       remote.Host
	changes []string
	// Planned before anything is written, so that a file mgmtkit refuses
	// to touch stops the run before its first change.
	daemonJSON []byte // the merged daemon.json; nil when unchanged
	// containerdDirs are where containerd reads hosts.toml files (see
	// containerdDirs).
	containerdDirs   []string
	containerdConfig []byte // config.toml with config_path; nil when unchanged
	// containerdSkip is why containerd is left alone ("" when it is not):
	// its CRI plugin is disabled, so the kubelet cannot use it.
	containerdSkip string
	// files are the root-owned files plan read with one command; a
	// missing one is absent. attrs are the attributes of those that are
	// regular files.
	files map[string][]byte
	attrs map[string]fileAttrs
	// containerdVersion is what `containerd --version` printed in the
	// read; "" without an answer.
	containerdVersion string
	// writes are every file the run wants, written together at the end.
	writes []remote.FileWrite
	// book is what mgmtkit added on h, before and after this run.
	book ledger
}

func (s *trustState) did(format string, args ...any) {
	s.changes = append(s.changes, fmt.Sprintf(format, args...))
}

// result is what the run changed, followed by why it skipped what it
// skipped.
func (s *trustState) result() lcm.Result {
	r := result(s.changes)
	if s.containerdSkip != "" {
		r.Detail = strings.Join(append(slices.Clone(s.changes), s.containerdSkip), "; ")
	}
	return r
}

// want asks for a root-owned file with content and mode.
func (s *trustState) want(file string, content []byte, mode fs.FileMode) {
	s.writes = append(s.writes, remote.FileWrite{Path: file, Content: content, Options: remote.FileOptions{Mode: mode, Owner: "root", Group: "root", Sudo: true}})
}

// write puts every wanted file in place at once; nothing runs when the
// read found them all in place already.
func (s *trustState) write(ctx context.Context) error {
	if s.inPlace() {
		return nil
	}
	changed, err := remote.WriteFiles(ctx, s.h, s.writes)
	for i, w := range s.writes {
		if changed[i] && path.Dir(w.Path) != system.PendingDir && w.Path != TrustStateFile {
			s.did("wrote %s", w.Path)
		}
	}
	return err
}

// reloads returns the daemons to reload after the planned writes: those
// whose file the writes change, and those an earlier run left pending.
// For the former it puts their pending file first among the writes, so
// that it is in place before the configuration it stands for.
func (s *trustState) reloads(rts []system.Runtime) []daemonReload {
	var out, marks []daemonReload
	for _, r := range daemonReloads {
		if !slices.Contains(rts, r.rt) {
			continue
		}
		var changed bool
		switch r.rt {
		case system.Docker:
			changed = s.daemonJSON != nil
		case system.Containerd:
			changed = s.containerdConfig != nil
		case system.CRIO:
			changed = slices.ContainsFunc(s.writes, func(w remote.FileWrite) bool {
				cur, ok := s.files[w.Path]
				return path.Dir(w.Path) == CRIORegistriesDir && (!ok || !bytes.Equal(cur, w.Content))
			}) || s.staleCRIODropIn()
		}
		mark, pending := s.files[r.pending()]
		if pending && !system.PendingReloadOnly(mark) && !r.restarts() {
			// Someone owes the daemon a restart (system.ConfigureUnit
			// changed its drop-ins and lost the restart): a reload
			// would not pay it.
			r.verb = "try-restart"
		}
		if changed && (!pending || (system.PendingReloadOnly(mark) && r.restarts())) {
			marks = append(marks, r)
		}
		if changed || pending {
			out = append(out, r)
		}
	}
	var first []remote.FileWrite
	for _, r := range marks {
		first = append(first, system.PendingMarkerFile(r.unit, !r.restarts()))
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
//   - containerd: config_path set once in config.toml when it has none
//     (then a restart; the file is re-encoded that one time, so its
//     comments go), and one certs.d/SERVER/hosts.toml per registry
//     (http:// for HTTP, ca = for a CA), which containerd reads on each
//     pull, so no restart. A config_path someone set is kept; when it
//     lists directories ("/etc/containerd/certs.d:/etc/docker/certs.d",
//     containerd 2's default), hosts.toml goes under its first directory,
//     where containerd 1.6/1.7 (and 2.x's local pulls), which split it,
//     look first, and under the whole list as one directory, where 2.x's
//     transfer-service pulls look (containerd#12808): correct whichever
//     way that is fixed. Refused, with containerd's own reason, is only
//     what containerd refuses beside config_path: registry.mirrors, and
//     registry.configs.HOST.tls in a version 2 file; credentials alone
//     (configs.HOST.auth) are kept. A versionless (schema 1) file is
//     refused with a hint for the containerd release found. A containerd
//     whose CRI plugin is disabled (Docker CE's containerd.io ships
//     disabled_plugins = ["cri"]) is skipped, with the reason and a hint
//     in the result's Detail: the kubelet does not use it;
//   - CRI-O: a registries.conf.d entry for HTTP registries (then
//     `systemctl try-reload-or-restart crio`), CAs in
//     /etc/containers/certs.d/SERVER;
//   - kubelet: credentials merged into /var/lib/kubelet/config.json
//     (0600), which the kubelet sends with every image pull under any
//     runtime.
//
// All connections of a node are applied at once, in few commands. One
// reads the shared files, the files the run may write (with their mode
// and owner), the runtimes installed and containerd's version; when every
// file the run wants is found in place, that is all. Otherwise every
// file is compared with one command and put in place with one more
// ([remote.WriteFiles]), and one last command tells each daemon whose
// configuration changed, at most once each, then logs Docker in: with the
// connection's sudo probe, 5 commands for a fresh node with Docker and
// containerd and the cir sample's two registries, 2 for a converged one.
// A daemon whose file changed is told even when the run that changed the
// file failed before telling it: the next run does (see
// [system.PendingMarker]). Secrets reach the host only on standard input and
// inside root-only files. A second run changes nothing and reports so.
//
// Trust is declarative: what mgmtkit manages on h ends equal to conns.
// [TrustStateFile] records what mgmtkit added (read with the other files,
// written with them, so a converged node still costs 2 commands), and a
// registry an earlier call configured and this one does not name loses
// it: its hosts.toml and ca.crt files (a per-registry directory goes only
// when that empties it), Docker's certs.d CA, the daemon.json
// insecure-registries entry and kubelet config.json auths entry mgmtkit
// added, the CRI-O drop-in, and Docker's login (`docker logout`). What
// someone else configured stays, even for a registry conns names. Each
// daemon is told as for an addition (removing a hosts.toml or a certs.d
// CA needs no reload). A removal costs one `rm` command, one `docker
// logout` per login and two commands to write the state that forgets it,
// which happens only once everything it forgets is gone; the state is
// written before the files it records, so a run cut short anywhere
// leaves the next run able to finish. With no connections the call takes
// away everything mgmtkit added, and costs one command on a node it never
// configured. Two connections naming one registry ([CanonicalServer]) are
// refused before anything runs, and so is a connection built in Go (not
// decoded) whose hosts_string or certificate_path validation would refuse.
func ConfigureRegistryTrust(ctx context.Context, h remote.Host, conns []Connection, opts TrustOptions) (lcm.Result, error) {
	if err := refuseDuplicates(conns); err != nil {
		return lcm.Unchanged, err
	}
	// What validation parsed and read, for connections that did not go
	// through it; a copy, so that the caller's slice stays as it was.
	conns = slices.Clone(conns)
	for i := range conns {
		if err := conns[i].complete(i, opts.Package); err != nil {
			return lcm.Unchanged, err
		}
	}
	s := &trustState{h: h}
	if len(conns) == 0 {
		if nothing, err := nothingToUndo(ctx, h); nothing || err != nil {
			return lcm.Unchanged, err
		}
	}
	rts, err := s.plan(ctx, opts.Runtimes, conns)
	if err != nil {
		return lcm.Unchanged, err
	}
	if s.containerdSkip != "" {
		rts = slices.DeleteFunc(slices.Clone(rts), func(r system.Runtime) bool { return r == system.Containerd })
	}
	// Decide every file, write them together, then tell the daemons
	// whose configuration changed, then log Docker in.
	if err := s.hosts(conns); err != nil {
		return lcm.Unchanged, err
	}
	if slices.Contains(rts, system.Docker) {
		s.docker(conns)
	}
	if slices.Contains(rts, system.Containerd) {
		if err := s.containerd(conns); err != nil {
			return lcm.Unchanged, err
		}
	}
	if slices.Contains(rts, system.CRIO) {
		if err := s.crio(conns); err != nil {
			return lcm.Unchanged, err
		}
	}
	if err := s.kubeletAuth(conns); err != nil {
		return lcm.Unchanged, err
	}
	if err := s.settle(rts, conns); err != nil {
		return lcm.Unchanged, err
	}
	reloads := s.reloads(rts)
	s.recordAdditions()
	if err = s.write(ctx); err != nil {
		return s.result(), err
	}
	// What mgmtkit added for registries no longer passed goes before the
	// daemons are told, so that a reload covers it too. Every daemon is
	// told, even after another failed or the removal did; Docker is
	// logged in (with the same command) only when all went well.
	err = s.removeStale(ctx)
	var logins []Connection
	if err == nil && slices.Contains(rts, system.Docker) {
		logins, err = s.logins(conns)
	}
	if err != nil {
		logins = nil
	}
	err = errors.Join(err, s.tell(ctx, reloads, logins))
	if err == nil && slices.Contains(rts, system.Docker) {
		err = s.dockerLogout(ctx)
	}
	if err == nil {
		err = s.forget(ctx)
	}
	return s.result(), err
}

// HostsTemplate is cloud-init's template for /etc/hosts on Debian and
// Ubuntu ([system.CloudHostsTemplate]), which ConfigureRegistryTrust
// keeps in step with /etc/hosts when it exists.
const HostsTemplate = system.CloudHostsTemplate

// hostsOptions is the managed block of the connections' hosts_string
// lines, one line per address with its names.
func hostsOptions(conns []Connection) system.HostsOptions {
	o := system.HostsOptions{Block: HostsBlock}
	at := map[netip.Addr]int{}
	for _, c := range conns {
		if !c.hosts.IP.IsValid() {
			continue
		}
		i, ok := at[c.hosts.IP]
		if !ok {
			i = len(o.Entries)
			at[c.hosts.IP] = i
			o.Entries = append(o.Entries, system.HostsEntry{IP: c.hosts.IP.String()})
		}
		if e := &o.Entries[i]; !slices.Contains(e.Names, c.hosts.Name) {
			e.Names = append(e.Names, c.hosts.Name)
		}
	}
	return o
}

// hosts puts the hosts_string lines into their managed block of
// /etc/hosts and, when cloud-init's template exists, of [HostsTemplate]
// too, keeping each file's mode and owner ([system.PlanHostsBlock]).
func (s *trustState) hosts(conns []Connection) error {
	writes, err := system.PlanHostsBlock(s.files, hostsOptions(conns))
	s.writes = append(s.writes, writes...)
	return err
}

// docker installs CAs and the merged daemon.json.
func (s *trustState) docker(conns []Connection) {
	for _, c := range conns {
		if c.ca != "" {
			s.own(path.Join(DockerCertsDir, c.Server, "ca.crt"), []byte(c.ca), 0o644)
		}
	}
	if s.daemonJSON != nil {
		s.want(DockerDaemonJSON, s.daemonJSON, 0o644)
	}
}

// plan reads the shared configuration files the runtimes need changed and
// decides their new content, refusing (before anything is written) files
// mgmtkit will not rewrite: a daemon.json that is not JSON, a config.toml
// that is not TOML, has no schema version, or uses the legacy registry
// settings.
func (s *trustState) plan(ctx context.Context, given []system.Runtime, conns []Connection) ([]system.Runtime, error) {
	var insecure []string
	creds := false
	for _, c := range conns {
		if c.Type() == HTTP {
			insecure = append(insecure, c.Server)
		}
		creds = creds || c.Username != ""
	}
	// Until detection has answered, every runtime may be installed.
	may := func(rt system.Runtime) bool { return given == nil || slices.Contains(given, rt) }
	// Every shared file this run may merge, and every file it may write
	// whose path does not depend on what it reads (so that a converged
	// node needs no further command to say so), in one command that
	// detects the runtimes too.
	read := append(system.HostsBlockFiles(hostsOptions(conns)), TrustStateFile, KubeletAuthFile)
	if may(system.Docker) {
		read = append(read, DockerDaemonJSON)
		if creds {
			read = append(read, DockerAuthFile)
		}
	}
	if may(system.Containerd) {
		read = append(read, ContainerdConfig)
	}
	for _, c := range conns {
		if c.ca != "" && may(system.Docker) {
			read = append(read, path.Join(DockerCertsDir, c.Server, "ca.crt"))
		}
		if may(system.Containerd) {
			// Where config_path is ours (the usual case).
			read = append(read, path.Join(ContainerdCertsDir, c.Server, "hosts.toml"))
			if c.ca != "" {
				read = append(read, path.Join(ContainerdCertsDir, c.Server, "ca.crt"))
			}
		}
		if may(system.CRIO) {
			if c.ca != "" {
				read = append(read, path.Join(CRIOCertsDir, c.Server, "ca.crt"))
			}
			if c.Type() == HTTP {
				read = append(read, crioRegistriesFile(c))
			}
		}
	}
	for _, r := range daemonReloads {
		if may(r.rt) {
			read = append(read, r.pending())
		}
	}
	view, err := readNode(ctx, s.h, given == nil, unite(read))
	if err != nil {
		return nil, err
	}
	rts := given
	if rts == nil {
		rts = view.runtimes
	}
	s.files, s.attrs, s.containerdVersion = view.files, view.attrs, view.containerdVersion
	if err := s.readRecord(); err != nil {
		return rts, err
	}
	if slices.Contains(rts, system.Docker) {
		if err := s.planInsecure(insecure); err != nil {
			return rts, err
		}
	}
	if slices.Contains(rts, system.Containerd) {
		return rts, s.planContainerd(ctx)
	}
	return rts, nil
}

// mergeInsecure adds servers to daemon.json's insecure-registries and
// takes the entries remove away, keeping every other setting. It returns
// the new file (nil when nothing changes) and the servers it added.
func mergeInsecure(old []byte, servers []string, remove ...string) ([]byte, []string, error) {
	cfg := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(old))
		dec.UseNumber()
		if err := dec.Decode(&cfg); err != nil {
			return nil, nil, fmt.Errorf("%s is not a JSON object (%v): fix it by hand; mgmtkit will not overwrite it", DockerDaemonJSON, err)
		}
	}
	var list []any
	switch v := cfg["insecure-registries"].(type) {
	case nil:
	case []any:
		list = v
	default:
		return nil, nil, fmt.Errorf("%s: insecure-registries is not a list", DockerDaemonJSON)
	}
	list, removed := removeEntries(list, remove)
	var added []string
	for _, srv := range servers {
		if !slices.Contains(list, any(srv)) {
			list = append(list, srv)
			added = append(added, srv)
		}
	}
	if !removed && len(added) == 0 {
		return nil, nil, nil
	}
	cfg["insecure-registries"] = list
	b, err := json.MarshalIndent(cfg, "", "  ")
	return append(b, '\n'), added, err
}

// containerd sets config_path once (in the planned config.toml) and
// writes one hosts.toml per registry.
func (s *trustState) containerd(conns []Connection) error {
	if s.containerdConfig != nil {
		s.want(ContainerdConfig, s.containerdConfig, 0o644)
	}
	for _, root := range s.containerdDirs {
		for _, c := range conns {
			if err := s.containerdHost(root, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// containerdHost writes a registry's hosts.toml (and CA) under root.
func (s *trustState) containerdHost(root string, c Connection) error {
	dir := path.Join(root, c.Server)
	scheme := "https"
	if c.Type() == HTTP {
		scheme = "http"
	}
	host := hostEntry{Capabilities: []string{"pull", "resolve"}}
	if c.ca != "" {
		host.CA = path.Join(dir, "ca.crt")
		s.own(host.CA, []byte(c.ca), 0o644)
	}
	url := scheme + "://" + c.Server
	b, err := toml.Marshal(hostsTOML{Server: url, Host: map[string]hostEntry{url: host}})
	if err != nil {
		return err
	}
	s.own(path.Join(dir, "hosts.toml"), append([]byte("# Managed by mgmtkit: how containerd reaches "+c.Server+".\n"), b...), 0o644)
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

// planContainerd decides where containerd reads hosts.toml files and,
// the first time, config.toml with config_path set there (nil when it
// already names one, ours or whoever set containerd up), through
// system.ContainerdConfig, config.toml's one editor, which kubeadm's
// InstallContainerd shares. A containerd whose CRI plugin is disabled is
// skipped with the reason: the kubelet does not use it, and it reads no
// config_path.
func (s *trustState) planContainerd(ctx context.Context) error {
	cfg, err := system.ParseContainerdConfig(s.files[ContainerdConfig])
	if err != nil {
		return err
	}
	version := cfg.Version()
	disabled := cfg.DisabledCRI()
	if version > 3 {
		// Refused before a disabled CRI is skipped, as Edit refuses it.
		return fmt.Errorf("%s has version %d, which no containerd reads: fix it by hand", ContainerdConfig, version)
	}
	if version >= 2 && slices.Contains(disabled, "cri") {
		// containerd 1.6, 1.7 (ValidateV2) and 2.x (ValidateVersion)
		// refuse to start on it.
		return fmt.Errorf(`%s is a version %d config whose disabled_plugins names "cri", on which containerd does not start ("invalid disabled plugin URI \"cri\" expect io.containerd.x.vx"): name io.containerd.grpc.v1.cri instead, or remove it to use containerd for Kubernetes`, ContainerdConfig, version)
	}
	if len(disabled) > 0 {
		release, major, err := s.containerdRelease(ctx)
		if err != nil {
			return err
		}
		s.containerdSkip = fmt.Sprintf("containerd %s skipped: %s disables its CRI plugin (disabled_plugins %q), so the kubelet cannot use it; %s",
			release, ContainerdConfig, disabled, enableCRIHint(major))
		return nil
	}
	changes, err := cfg.Edit(system.ContainerdSettings{RegistryConfigPath: ContainerdCertsDir}, func() (int, error) {
		_, major, err := s.containerdRelease(ctx)
		return major, err
	})
	if err != nil {
		return err
	}
	if changes != nil {
		if s.containerdConfig, err = cfg.Encode(); err != nil {
			return err
		}
	}
	s.containerdDirs, err = containerdDirs(cfg.RegistryConfigPath())
	return err
}

// enableCRIHint says how to give a containerd of a major version its CRI
// back: `containerd config migrate` exists from containerd 2.0 only.
func enableCRIHint(major int) string {
	if major >= 2 {
		return "to use it for Kubernetes, write a version 3 config (`containerd config migrate`, or `containerd config default`), remove the CRI plugins from disabled_plugins, restart containerd and run again"
	}
	return "to use it for Kubernetes, replace the file with the output of `containerd config default` (a version 2 config with the CRI enabled: containerd 1.x has no command that migrates a config), keep your own settings, restart containerd and run again"
}

// containerdDirs returns the directories mgmtkit writes a registry's
// hosts.toml under for a config_path. containerd 1.6 and 1.7 split
// config_path as a list (filepath.SplitList) and take the first
// directory in which the registry's directory (or _default) exists
// (pkg/cri/server/image_pull.go hostDirFromRoots); so does 2.x when it
// pulls locally, while its transfer-service pulls take config_path as
// one directory, ":" and all (containerd#12808, open as of 2.2.0, whose
// `containerd config default` writes the list
// "/etc/containerd/certs.d:/etc/docker/certs.d"). For a list, mgmtkit
// therefore writes under its first directory, where a split lookup finds
// the registry first, and under the whole list as one directory, where a
// literal lookup finds it: the node pulls on 1.6, 1.7 and 2.x whichever
// way #12808 is fixed, and config_path, someone else's setting, is left
// as it is (rewriting it would restart containerd and drop the other
// directories someone relies on).
func containerdDirs(configPath string) ([]string, error) {
	first, _, list := strings.Cut(configPath, ":")
	if !path.IsAbs(first) {
		return nil, fmt.Errorf("%s: config_path %q does not start with an absolute directory: fix it by hand", ContainerdConfig, configPath)
	}
	dirs := []string{path.Clean(first)}
	if list {
		dirs = append(dirs, path.Clean(configPath))
	}
	return dirs, nil
}

// crio writes a registries.conf.d entry for HTTP registries and installs
// CAs.
func (s *trustState) crio(conns []Connection) error {
	for _, c := range conns {
		if c.ca != "" {
			s.own(path.Join(CRIOCertsDir, c.Server, "ca.crt"), []byte(c.ca), 0o644)
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
		s.own(crioRegistriesFile(c), append([]byte("# Managed by mgmtkit: "+c.Server+" over HTTP.\n"), b...), 0o644)
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
// config.json and takes out the entries mgmtkit added for registries no
// longer passed.
func (s *trustState) kubeletAuth(conns []Connection) error {
	var wanted []string
	for _, c := range conns {
		if c.Username != "" {
			wanted = append(wanted, c.Server)
		}
	}
	stale := minus(s.book.old.KubeletAuths, wanted)
	if len(wanted) == 0 && len(stale) == 0 {
		return nil
	}
	top, auths, err := parseAuthConfig(s.files[KubeletAuthFile], KubeletAuthFile)
	if err != nil {
		return err
	}
	changed := false
	var added []string
	for _, c := range conns {
		if c.Username == "" || hasAuth(auths, c) {
			continue
		}
		if _, had := auths[c.Server]; !had {
			added = append(added, c.Server)
		}
		auths[c.Server], _ = json.Marshal(authEntry{Auth: basicAuth(c)})
		changed = true
	}
	for _, srv := range stale {
		if _, ok := auths[srv]; ok {
			delete(auths, srv)
			changed = true
		}
	}
	s.book.next.KubeletAuths = kept(s.book.old.KubeletAuths, wanted, added)
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

// logins returns the connections Docker must log in to: those with
// credentials that root's config.json does not hold yet.
func (s *trustState) logins(conns []Connection) ([]Connection, error) {
	if !slices.ContainsFunc(conns, func(c Connection) bool { return c.Username != "" }) {
		return nil, nil
	}
	_, auths, err := parseAuthConfig(s.files[DockerAuthFile], DockerAuthFile)
	if err != nil {
		return nil, err
	}
	var out []Connection
	for _, c := range conns {
		if c.Username != "" && !hasAuth(auths, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// hostsCacheAge is how long dockerd may go on answering from an
// /etc/hosts it read before this run rewrote it: dockerd resolves with
// Go's resolver, which re-reads the file at most every 5 s (Go's
// src/net/hosts.go, cacheMaxAge), so a registry name just added can fail
// to resolve for that long ("no such host" from DNS). Found against the
// real dockerd 20.10 (realtest).
const hostsCacheAge = 5 * time.Second

// dockerLoginTo logs Docker in to one registry, the password on standard
// input, asking again while dockerd cannot resolve the registry's name,
// for as long as it may still answer from an /etc/hosts older than this
// run's; any other failure is final.
func (s *trustState) dockerLoginTo(ctx context.Context, c Connection) error {
	deadline := time.Now().Add(hostsCacheAge + time.Second)
	// Go's net.DNSError reads "lookup NAME on SERVER: ..." or "lookup
	// NAME: ...".
	host, _ := splitServer(c.Server)
	lookup := "lookup " + host
	for {
		_, err := s.h.Run(ctx, remote.Cmd{
			Args:    []string{"docker", "login", "--username", c.Username, "--password-stdin", c.Server},
			Stdin:   strings.NewReader(c.Password.Reveal() + "\n"),
			Sudo:    true,
			Secrets: []remote.Secret{c.Password},
			// Logging in again is harmless; the password is re-read from
			// the start of Stdin.
			Idempotent: true,
		})
		var ce *remote.CommandError
		if err == nil || !errors.As(err, &ce) || !strings.Contains(ce.Stderr, lookup) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

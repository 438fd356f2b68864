package ubuntu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Options configures [Install].
type Options struct {
	// Catalog holds the packages apt-get can install and marks the base
	// set of the cloud image; [DefaultCatalog] when nil. To add packages,
	// start from DefaultCatalog() and [Catalog.Add] to it: a catalog
	// without the base packages gives a machine without apt-get, systemctl
	// or mount.
	Catalog *Catalog
	// Packages are installed in addition to the base set, as if apt-get
	// had installed them after boot: their OnInstall hooks run and their
	// units start (and count as started).
	Packages []string
	// Arch is the dpkg architecture: "amd64" (x86_64, the default) or
	// "arm64" (aarch64).
	Arch string
	// UpdatedLists says that `apt-get update` already ran (cloud-init's
	// package_update). By default the package lists are empty, as on a
	// fresh Ubuntu cloud image: apt-get install finds nothing that is not
	// installed until apt-get update has run.
	UpdatedLists bool
	// LoginPath is the PATH flavour of SSH sessions of users other than
	// root: [UbuntuLoginPath] (the default, with the sbin directories) or
	// [DebianLoginPath] (without them).
	LoginPath LoginPath
	// ManageEtcHosts is cloud-init's manage_etc_hosts, as the instance's
	// user-data sets it ([CloudConfigFile]): [ManageEtcHostsTrue] by
	// default, so that /etc/hosts is rendered from [HostsTemplate] at
	// every [Machine.Reboot].
	ManageEtcHosts ManageEtcHosts
	// Addresses are the addresses of the machine's NIC ([NIC]), with
	// their network's prefix length, as `ip addr show` prints them.
	Addresses []netip.Prefix
}

// Machine is a simulated Ubuntu 22.04 VM: the state behind the fake
// programs that [Install] puts on an [sshtest.Server]. Its methods let a
// test seed that state and assert outcomes (a package is installed, a
// service restarted once, a disk formatted once and mounted). A Machine is
// safe for concurrent use, by tests and by the commands of several SSH
// sessions.
type Machine struct {
	srv     *sshtest.Server
	catalog *Catalog
	arch    string
	// dpkgLock is the dpkg frontend lock: a token in the channel means it
	// is free. apt-get holds it for a whole operation, hooks included.
	dpkgLock chan struct{}

	mu            sync.Mutex
	pkgs          map[string]*pkgState
	holds         map[string]bool
	lists         map[string]bool // repositories whose lists apt-get update fetched ("" is the Ubuntu archive)
	listsFetched  bool
	aptUpdates    int
	lockHeldFor   int // invocations that will still find the lock held by unattended-upgrades
	locksHeldFor  int // HoldAptLocks: lock attempts that will still find the dpkg and lists locks held
	kernel        kernelState
	units         map[string]*unitState
	daemonReloads int
	disks         map[string]*Disk
	mounts        []*mountEntry
	ext           map[any]any
	nextPID       int
	rootParts     []rootPart
	addrs         []netip.Prefix // the NIC's, Options.Addresses
	// noDefaultRoute: SetDefaultRoute(false) took the default routes away.
	noDefaultRoute bool
}

// pkgState is a package dpkg knows about.
type pkgState struct {
	pkg    Package
	status string // statusInstalled, statusHalfConfigured or statusConfigFiles
	auto   bool   // installed as a dependency
}

// dpkg package states (the third word of Status:).
const (
	statusInstalled      = "installed"
	statusHalfConfigured = "half-configured"
	statusConfigFiles    = "config-files"
)

// Install makes srv an Ubuntu 22.04 machine (22.04.4 LTS, jammy): it
// writes the files of the cloud image (/etc/os-release, /etc/lsb-release,
// /etc/hosts as cloud-init writes it unless the test already wrote one,
// /etc/fstab, /etc/apt, /var/lib/dpkg, /proc/mounts, the root disk's device
// nodes), installs the base packages of the catalog with their fake
// programs (apt-get, dpkg, systemctl, mount, ...) and starts their units,
// then installs opts.Packages.
//
// Install panics on an invalid Options (an unknown Arch, a package of
// opts.Packages that the catalog lacks or whose hook fails), as a test
// fixture would fail the test.
func Install(srv *sshtest.Server, opts Options) *Machine {
	if opts.Catalog == nil {
		opts.Catalog = DefaultCatalog()
	}
	switch opts.Arch {
	case "":
		opts.Arch = "amd64"
	case "amd64", "arm64":
	default:
		panic(fmt.Sprintf("ubuntu: architecture %q is not modelled (amd64 or arm64)", opts.Arch))
	}
	switch opts.LoginPath {
	case "", UbuntuLoginPath, DebianLoginPath:
	default:
		panic(fmt.Sprintf("ubuntu: login PATH flavour %q is not modelled (ubuntu or debian)", opts.LoginPath))
	}
	switch opts.ManageEtcHosts {
	case "", ManageEtcHostsTrue, ManageEtcHostsLocalhost, ManageEtcHostsFalse:
	default:
		panic(fmt.Sprintf("ubuntu: manage_etc_hosts %q is not modelled (true, localhost or false)", opts.ManageEtcHosts))
	}
	m := &Machine{
		srv:       srv,
		catalog:   opts.Catalog,
		arch:      opts.Arch,
		dpkgLock:  make(chan struct{}, 1),
		pkgs:      map[string]*pkgState{},
		holds:     map[string]bool{},
		lists:     map[string]bool{},
		units:     map[string]*unitState{},
		disks:     map[string]*Disk{},
		ext:       map[any]any{},
		nextPID:   3150,
		rootParts: newRootParts(),
		kernel:    newKernelState(),
		addrs:     slices.Clone(opts.Addresses),
	}
	m.dpkgLock <- struct{}{}
	if err := m.writeImage(opts.ManageEtcHosts); err != nil {
		panic("ubuntu: " + err.Error())
	}
	if err := m.SetLoginPath(opts.LoginPath); err != nil {
		panic(err.Error())
	}
	m.mu.Lock()
	m.writeProcKernelLocked()
	m.writeProcRoutesLocked()
	m.mu.Unlock()
	if m.arch != "amd64" {
		// sshtest's uname answers x86_64.
		m.handle("/usr/bin/uname", m.tool(unameTool))
	}
	var base []step
	for _, p := range m.catalog.base() {
		base = append(base, step{pkg: p})
	}
	if err := m.applyInstall(nil, nil, base, true); err != nil { // the error names the package
		panic("ubuntu: base package " + err.Error())
	}
	if opts.UpdatedLists {
		m.mu.Lock()
		m.fetchListsLocked()
		m.mu.Unlock()
	}
	if len(opts.Packages) > 0 {
		if err := m.InstallPackages(opts.Packages...); err != nil {
			panic("ubuntu: " + err.Error())
		}
	}
	return m
}

// Server returns the fake SSH host the machine runs on.
func (m *Machine) Server() *sshtest.Server { return m.srv }

// Catalog returns the machine's package catalog.
func (m *Machine) Catalog() *Catalog { return m.catalog }

// Arch returns the dpkg architecture ("amd64").
func (m *Machine) Arch() string { return m.arch }

// Hostname returns the host name as /etc/hostname has it now (after
// `hostnamectl set-hostname`), where [sshtest.Server.Hostname] keeps the
// name the server was created with.
func (m *Machine) Hostname() string {
	data, err := m.srv.FS().ReadFile("/etc/hostname")
	if err != nil {
		return "localhost"
	}
	name, _, _ := strings.Cut(string(data), "\n")
	if name = strings.TrimSpace(name); name == "" {
		return "localhost"
	}
	return name
}

// Installed reports whether a package is installed (dpkg status "install ok
// installed"; not a package that was removed but keeps its configuration
// files, nor one whose installation failed half-way).
func (m *Machine) Installed(pkg string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.pkgs[pkg]
	return st != nil && st.status == statusInstalled
}

// Version returns the installed version of a package, "" if it is not
// installed.
func (m *Machine) Version(pkg string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.pkgs[pkg]; st != nil && st.status == statusInstalled {
		return st.pkg.Version
	}
	return ""
}

// Packages returns the names of the installed packages, sorted.
func (m *Machine) Packages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name, st := range m.pkgs {
		if st.status == statusInstalled {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// InstallPackages installs packages (name or name=version) and their
// dependencies directly, as if apt had installed them: files, programs and
// units are installed, OnInstall hooks run and units start. Package lists,
// holds and the dpkg lock are not consulted. Packages already installed in
// the wanted version are left alone.
func (m *Machine) InstallPackages(pkgs ...string) error {
	var reqs []request
	for _, a := range pkgs {
		reqs = append(reqs, parseRequest(a))
	}
	m.mu.Lock()
	r := m.resolveLocked(reqs, func(Package) bool { return true })
	m.mu.Unlock()
	if err := r.err(); err != nil {
		return err
	}
	return m.applyInstall(nil, nil, r.steps, false)
}

// Held reports whether a package is on hold (apt-mark hold).
func (m *Machine) Held(pkg string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds[pkg]
}

// HoldDpkgLock makes the next attempts invocations of apt-get, apt or dpkg
// that need the dpkg lock fail as they do on a VM whose unattended-upgrades
// runs at boot: "E: Could not get lock /var/lib/dpkg/lock-frontend. It is
// held by process 2425 (unattended-upgr)", exit status 100 (dpkg: exit 2).
// An apt-get given -o DPkg::Lock::Timeout=N waits instead, and the
// simulated unattended-upgrades finishes within any timeout.
func (m *Machine) HoldDpkgLock(attempts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lockHeldFor = attempts
}

// HoldAptLocks makes unattended-upgrades hold the dpkg frontend lock and
// the package lists lock for the next attempts attempts to take them, as
// it does for minutes after a VM boots; the fake counts attempts, not
// time, so that a test depends on no clock. An attempt is one try of
// apt's GetLock (apt-pkg/contrib/fileutl.cc): apt-get install (and remove,
// upgrade) makes one, or, given -o DPkg::Lock::Timeout=N, up to N, as
// apt's GetLockMaybeWait tries once a second for N seconds
// (apt-pkg/deb/debsystem.cc), printing "Waiting for cache lock: ..." on
// standard output; the fake does not sleep between them. apt-get update
// makes one whatever its options, since the lists lock is taken without
// waiting (apt-pkg/acquire.cc, pkgAcquire::GetLock: "Unable to lock
// directory /var/lib/apt/lists/"), and so do apt-mark hold (its `dpkg
// --set-selections`) and dpkg --configure -a. One that fails fails as
// apt does: "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held
// by process 2425 (unattended-upgr)" and exit status 100; apt-mark with
// dpkg's "dpkg: error: dpkg frontend lock was locked by another process
// with pid 2425", then apt-mark's "E: Executing dpkg failed. Are you
// root?" (cmdline/apt-mark.cc); dpkg --configure -a with status 2. Once
// attempts have failed, the locks are free.
func (m *Machine) HoldAptLocks(attempts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.locksHeldFor = attempts
}

// tryAptLocks makes up to tries attempts to take the locks HoldAptLocks
// holds, and reports whether one succeeded and whether one failed first.
func (m *Machine) tryAptLocks(tries int) (ok, waited bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locksHeldFor <= 0 {
		return true, false
	}
	if tries <= m.locksHeldFor {
		m.locksHeldFor -= tries
		return false, true
	}
	m.locksHeldFor = 0
	return true, true
}

// AptUpdates returns how many times apt-get update succeeded.
func (m *Machine) AptUpdates() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aptUpdates
}

// Extension returns the value stored under key on this machine, calling
// create to make it the first time (if two callers race, one value wins and
// both get it). Packages of the simulated cloud keep their per-machine
// state this way (a fake Docker daemon's containers), rather than in
// package-level maps; the value guards its own fields. Keys should be of an
// unexported type of the package that uses them, as for context values.
func (m *Machine) Extension(key any, create func() any) any {
	m.mu.Lock()
	v, ok := m.ext[key]
	m.mu.Unlock()
	if ok {
		return v
	}
	created := create()
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.ext[key]; ok {
		return v
	}
	m.ext[key] = created
	return created
}

// pid returns a fresh process ID for messages that name one.
func (m *Machine) pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextPID += 7
	return m.nextPID
}

// fs is the machine's filesystem as root.
func (m *Machine) fs() *sshtest.FS { return m.srv.FS() }

// writeFile writes a file as root, creating parent directories.
func (m *Machine) writeFile(name, content string, perm fs.FileMode) error {
	return m.fs().WriteFile(name, []byte(content), perm)
}

// handle installs a fake program at file.
func (m *Machine) handle(file string, prog sshtest.Program) { m.srv.Handle(file, prog) }

// tool turns a Tool into a Program for this machine.
func (m *Machine) tool(t Tool) sshtest.Program {
	return func(ctx context.Context, p *sshtest.Process) int { return t(ctx, m, p) }
}

// --- installing and removing packages -------------------------------------

// request is one package operand: name, or name=version.
type request struct{ name, version string }

func parseRequest(arg string) request {
	name, version, _ := strings.Cut(arg, "=")
	return request{name, version}
}

// step is one package to unpack and configure.
type step struct {
	pkg         Package
	old         *Package // the version it replaces, for an upgrade or downgrade
	auto        bool     // installed only as a dependency
	reconfigure bool     // unpacked already, its configuration failed before
}

// resolution is the outcome of resolving install requests.
type resolution struct {
	steps   []step   // dependencies first
	already []string // "X is already the newest version (V)." subjects
	manual  []string // auto-installed packages now asked for by name
	unknown []string // names apt cannot locate
	badVer  []request
	unmet   [][2]string // {package, missing dependency}
	held    []string    // held packages that would change
}

func (r resolution) err() error {
	switch {
	case len(r.unknown) > 0:
		return fmt.Errorf("unable to locate package %s", r.unknown[0])
	case len(r.badVer) > 0:
		return fmt.Errorf("version %q for %q was not found", r.badVer[0].version, r.badVer[0].name)
	case len(r.unmet) > 0:
		return fmt.Errorf("package %s depends on %s, which is not installable", r.unmet[0][0], r.unmet[0][1])
	}
	return nil
}

// resolveLocked plans the installation of reqs: the version each gets and
// the dependencies to install first. available says which catalog entries
// apt can see.
func (m *Machine) resolveLocked(reqs []request, available func(Package) bool) resolution {
	var r resolution
	seen := map[string]bool{}
	candidates := func(name string) []Package {
		var out []Package
		for _, p := range m.catalog.Versions(name) {
			if available(p) {
				out = append(out, p)
			}
		}
		return out
	}
	var visit func(name, version, parent string) bool
	visit = func(name, version, parent string) bool {
		explicit := parent == ""
		if seen[name] {
			if explicit {
				// Asked for by name after another package pulled it
				// in: it is installed manually.
				for i := range r.steps {
					if r.steps[i].pkg.Name == name {
						r.steps[i].auto = false
					}
				}
			}
			return true
		}
		seen[name] = true
		st := m.pkgs[name]
		if !explicit && st != nil && st.status != statusConfigFiles {
			return true // any installed version satisfies a dependency
		}
		cands := candidates(name)
		if len(cands) == 0 {
			if explicit {
				r.unknown = append(r.unknown, name)
			} else {
				r.unmet = append(r.unmet, [2]string{parent, name})
			}
			return false
		}
		chosen := cands[0]
		if version != "" {
			i := slices.IndexFunc(cands, func(p Package) bool { return p.Version == version })
			if i < 0 {
				r.badVer = append(r.badVer, request{name, version})
				return false
			}
			chosen = cands[i]
		}
		var old *Package
		if st != nil && st.status != statusConfigFiles {
			if st.status == statusInstalled && st.pkg.Version == chosen.Version {
				r.already = append(r.already, fmt.Sprintf("%s is already the newest version (%s).", name, chosen.Version))
				if st.auto {
					r.manual = append(r.manual, name)
				}
				return true
			}
			if st.status == statusHalfConfigured && st.pkg.Version == chosen.Version {
				r.steps = append(r.steps, step{pkg: chosen, auto: st.auto && !explicit, reconfigure: true})
				return true
			}
			if st.pkg.Version != chosen.Version {
				o := st.pkg
				old = &o
				if m.holds[name] {
					r.held = append(r.held, name)
				}
			}
		}
		ok := true
		for _, dep := range chosen.Depends {
			if !visit(dep, "", name) {
				ok = false
			}
		}
		if ok {
			auto := !explicit && st == nil
			if st != nil && st.status != statusConfigFiles && !explicit {
				auto = st.auto
			}
			r.steps = append(r.steps, step{pkg: chosen, old: old, auto: auto})
		}
		return ok
	}
	for _, q := range reqs {
		visit(q.name, q.version, "")
	}
	return r
}

// isConffile reports whether a package file is a configuration file.
func isConffile(name string) bool { return strings.HasPrefix(path.Clean(name), "/etc/") }

// fileMode is the mode of a file a package installs.
func fileMode(name string) fs.FileMode {
	switch path.Base(path.Dir(name)) {
	case "bin", "sbin":
		return 0o755
	}
	return 0o644
}

// progress receives apt's and dpkg's lines about each package (applyInstall's
// out: standard output; warn: standard error); nil for a silent
// installation.
type progress func(format string, args ...any)

// applyInstall unpacks and configures each step in order. boot marks the
// packages of the image: their units are enabled and running without
// counting as started. It stops at the first failure, leaving that package
// half-configured.
//
// /var/lib/dpkg/status is written once, when the run ends (also when it
// fails), as one dpkg run does: dpkg records each package's status change
// in the journal /var/lib/dpkg/updates/ and folds the journal into the
// status file at a checkpoint, every 250 changes and when the run
// finishes (lib/dpkg/dbmodify.c modstatdb_note, modstatdb_checkpoint,
// modstatdb_shutdown). Nothing reads the file in between (the fake
// programs read the package states, as dpkg-query reads status plus
// journal), so the file after the run is the same.
func (m *Machine) applyInstall(out, warn progress, steps []step, boot bool) error {
	if len(steps) > 0 {
		defer m.writeStatus()
	}
	say := func(format string, args ...any) {
		if out != nil {
			out(format, args...)
		}
	}
	for _, s := range steps {
		p := s.pkg
		deb := fmt.Sprintf(".../%s_%s_%s.deb", p.Name, strings.ReplaceAll(p.Version, ":", "%3a"), m.arch)
		switch {
		case s.reconfigure:
		case s.old == nil:
			say("Selecting previously unselected package %s.", p.Name)
			say("Preparing to unpack %s ...", deb)
			say("Unpacking %s (%s) ...", p.Name, p.Version)
		default:
			say("Preparing to unpack %s ...", deb)
			say("Unpacking %s (%s) over (%s) ...", p.Name, p.Version, s.old.Version)
		}
		if err := m.unpack(s); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		say("Setting up %s (%s) ...", p.Name, p.Version)
		if p.OnInstall != nil {
			if err := p.OnInstall(m); err != nil {
				return &configureError{pkg: p.Name, err: err}
			}
		}
		for _, u := range p.Units {
			var err error
			switch {
			case boot:
				err = m.bootUnit(u.Name)
			case s.old == nil:
				m.enableUnit(u.Name, nil)
				err = m.job(u.Name, jobStart)
			default:
				err = m.job(u.Name, jobTryRestart)
			}
			var je *jobError
			if err != nil && p.IgnoreStartFailure && errors.As(err, &je) {
				if warn != nil {
					warn("Job for %s failed because the control process exited with error code.", je.unit)
					warn("See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.", je.unit, je.unit)
				}
				err = nil
			}
			if err != nil {
				return &configureError{pkg: p.Name, err: err}
			}
		}
		m.mu.Lock()
		if st := m.pkgs[p.Name]; st != nil {
			st.status = statusInstalled
		}
		m.mu.Unlock()
	}
	return nil
}

// configureError is a package whose configuration (postinst) failed.
type configureError struct {
	pkg string
	err error
}

func (e *configureError) Error() string {
	return fmt.Sprintf("configuring %s: %v", e.pkg, e.err)
}

func (e *configureError) Unwrap() error { return e.err }

// unpack writes a package's files and programs and registers its units.
func (m *Machine) unpack(s step) error {
	p := s.pkg
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.old != nil {
		// Files of the old version that the new one no longer ships.
		for name := range s.old.Files {
			if _, keep := p.Files[name]; !keep && !isConffile(name) {
				m.fs().Remove(name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Files)) {
		if isConffile(name) && m.fs().Exists(name) {
			continue
		}
		if err := m.writeFile(name, p.Files[name], fileMode(name)); err != nil {
			return err
		}
	}
	for _, file := range slices.Sorted(maps.Keys(p.Programs)) {
		m.handle(file, p.Programs[file])
	}
	for _, file := range slices.Sorted(maps.Keys(p.Tools)) {
		m.handle(file, m.tool(p.Tools[file]))
	}
	for _, u := range p.Units {
		m.addUnitLocked(u, p.Name)
	}
	auto := s.auto
	if st := m.pkgs[p.Name]; st != nil && st.status != statusConfigFiles {
		auto = st.auto && s.auto
	}
	m.pkgs[p.Name] = &pkgState{pkg: p, status: statusHalfConfigured, auto: auto}
	return nil
}

// applyRemove removes (or purges) installed packages: units stop and are
// dropped, OnRemove runs, programs and files go (configuration files stay
// unless purging).
func (m *Machine) applyRemove(out progress, names []string, purge bool) error {
	changed := false
	defer func() {
		if changed { // once per run, as applyInstall
			m.writeStatus()
		}
	}()
	say := func(format string, args ...any) {
		if out != nil {
			out(format, args...)
		}
	}
	for _, name := range names {
		m.mu.Lock()
		st := m.pkgs[name]
		m.mu.Unlock()
		if st == nil {
			continue
		}
		p := st.pkg
		if st.status != statusConfigFiles {
			say("Removing %s (%s) ...", p.Name, p.Version)
			for _, u := range p.Units {
				if err := m.job(u.Name, jobStop); err != nil {
					return err
				}
				m.disableUnit(u.Name, nil)
			}
			if p.OnRemove != nil {
				if err := p.OnRemove(m); err != nil {
					return fmt.Errorf("removing %s: %w", p.Name, err)
				}
			}
		}
		if purge {
			say("Purging configuration files for %s (%s) ...", p.Name, p.Version)
		}
		m.mu.Lock()
		for _, u := range p.Units {
			if us := m.units[unitName(u.Name)]; us != nil && us.pkg == p.Name {
				delete(m.units, unitName(u.Name))
				m.fs().Remove(us.file)
			}
		}
		for file := range p.Programs {
			m.fs().Remove(file)
		}
		for file := range p.Tools {
			m.fs().Remove(file)
		}
		keep := false
		for name := range p.Files {
			if isConffile(name) && !purge {
				keep = keep || m.fs().Exists(name)
				continue
			}
			m.fs().Remove(name)
		}
		delete(m.holds, name)
		if keep {
			m.pkgs[name] = &pkgState{pkg: p, status: statusConfigFiles}
		} else {
			delete(m.pkgs, name)
		}
		changed = true
		m.mu.Unlock()
	}
	return nil
}

// writeStatus rewrites /var/lib/dpkg/status from the package states.
func (m *Machine) writeStatus() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeStatusLocked()
}

// writeStatusLocked rewrites /var/lib/dpkg/status from the package states.
func (m *Machine) writeStatusLocked() {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(m.pkgs)) {
		st := m.pkgs[name]
		b.WriteString("Package: " + name + "\nStatus: " + m.statusLineLocked(name) +
			"\nPriority: optional\nSection: misc\nMaintainer: Ubuntu Developers <ubuntu-devel-discuss@lists.ubuntu.com>\nArchitecture: " +
			m.arch + "\nVersion: " + st.pkg.Version + "\n")
		if len(st.pkg.Depends) > 0 {
			b.WriteString("Depends: " + strings.Join(st.pkg.Depends, ", ") + "\n")
		}
		b.WriteString("Description: " + description(st.pkg) + "\n\n")
	}
	m.writeFile("/var/lib/dpkg/status", b.String(), 0o644)
}

// statusLineLocked is dpkg's Status: value ("install ok installed").
func (m *Machine) statusLineLocked(name string) string {
	st := m.pkgs[name]
	want := "install"
	switch {
	case st == nil:
		return "unknown ok not-installed"
	case st.status == statusConfigFiles:
		want = "deinstall"
	case m.holds[name]:
		want = "hold"
	}
	return want + " ok " + st.status
}

func description(p Package) string {
	if p.Description != "" {
		return p.Description
	}
	return p.Name + " (simulated package)"
}

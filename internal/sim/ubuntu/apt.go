package ubuntu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The process that holds the dpkg lock in HoldDpkgLock's messages, as on a
// VM whose unattended-upgrades runs right after boot.
const unattendedUpgrades = "2425 (unattended-upgr)"

// aptOptions are the options apt-get and apt accept.
var aptOptions = optSpec{short: "yqo:", long: []string{
	"yes", "assume-yes", "quiet", "no-install-recommends", "install-recommends",
	"allow-downgrades", "allow-change-held-packages", "allow-unauthenticated", "purge",
	"force-yes", "option=", "installed", "upgradable",
}}

// aptRun is one invocation of apt-get or apt.
type aptRun struct {
	m        *Machine
	ctx      context.Context
	p        *sshtest.Process
	c        cmdline
	yes      bool
	quiet    int
	timeout  time.Duration     // DPkg::Lock::Timeout
	opts     map[string]string // -o settings apt.conf also holds (Acquire::http::Proxy), lower-case keys
	released func()
}

// out prints a line on standard output unless -qq.
func (a *aptRun) out(format string, args ...any) {
	if a.quiet < 2 {
		outf(a.p, format, args...)
	}
}

// aptGetTool: apt-get [-y] [-q] [-o KEY=VALUE] update | install PKG[=VER]...
// | remove | purge | autoremove | upgrade | dist-upgrade | clean.
func aptGetTool(ctx context.Context, m *Machine, p *sshtest.Process) int {
	return m.apt(ctx, p, false)
}

// aptTool: apt, as apt-get plus `apt list`, with apt's warning that its
// command line is not stable.
func aptTool(ctx context.Context, m *Machine, p *sshtest.Process) int {
	return m.apt(ctx, p, true)
}

func (m *Machine) apt(ctx context.Context, p *sshtest.Process, isApt bool) int {
	c, code, ok := aptOptions.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if isApt {
		errf(p, "\nWARNING: apt does not have a stable CLI interface. Use with caution in scripts.\n")
	}
	a := &aptRun{m: m, ctx: ctx, p: p, c: c, yes: c.Has("-y", "--yes", "--assume-yes", "--force-yes"), quiet: c.Count("-q", "--quiet")}
	for _, o := range c.Values("-o", "--option") {
		key, val, ok := strings.Cut(o, "=")
		switch k := strings.ToLower(key); {
		case !ok:
			errf(p, "E: Option %s: Configuration item specification must have an =<val>.", o)
			return 100
		case k == "dpkg::options::":
			if !strings.HasPrefix(val, "--force-conf") {
				return notModelled(p, "dpkg option %s", val)
			}
		case k == "dpkg::lock::timeout":
			n, err := strconv.Atoi(val)
			if err != nil {
				return notModelled(p, "DPkg::Lock::Timeout=%s", val)
			}
			a.timeout = time.Duration(n) * time.Second
		case k == "apt::get::assume-yes":
			a.yes = val == "true" || val == "1" || val == "yes"
		case strings.HasPrefix(k, "acquire::http::proxy"), strings.HasPrefix(k, "acquire::https::proxy"):
			if a.opts == nil {
				a.opts = map[string]string{}
			}
			a.opts[k] = val
		case k == "acquire::retries", k == "apt::install-recommends", k == "apt::install-suggests", k == "acquire::http::timeout":
		default:
			return notModelled(p, "apt option %s", key)
		}
	}
	if len(c.Operands) == 0 {
		return notModelled(p, "%s without a command", p.Name())
	}
	cmd, args := c.Operands[0], c.Operands[1:]
	switch cmd {
	case "update":
		return a.update()
	case "install":
		return a.install(args)
	case "remove", "purge":
		return a.remove(args, cmd == "purge" || c.Has("--purge"), false)
	case "autoremove", "autopurge":
		return a.remove(args, cmd == "autopurge" || c.Has("--purge"), true)
	case "upgrade", "dist-upgrade", "full-upgrade":
		return a.upgrade()
	case "clean", "autoclean":
		if !isRoot(p) {
			errf(p, "E: Could not open lock file /var/cache/apt/archives/lock - open (13: Permission denied)")
			errf(p, "E: Unable to lock directory /var/cache/apt/archives/")
			return 100
		}
		return 0
	case "list":
		if isApt {
			return a.list(args)
		}
	}
	return notModelled(p, "%s %s", p.Name(), cmd)
}

// lock takes the dpkg frontend lock (or, for update, the lists lock) as
// apt does, printing apt's errors when it cannot.
func (a *aptRun) lock(lists bool) bool {
	p, m := a.p, a.m
	file, what := "/var/lib/dpkg/lock-frontend", "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?"
	if lists {
		file, what = "/var/lib/apt/lists/lock", "E: Unable to lock directory /var/lib/apt/lists/"
	}
	if !isRoot(p) {
		errf(p, "E: Could not open lock file %s - open (13: Permission denied)", file)
		if lists {
			errf(p, "%s", what)
		} else {
			errf(p, "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), are you root?")
		}
		return false
	}
	fail := func(holder string) bool {
		errf(p, "E: Could not get lock %s. It is held by process %s", file, holder)
		errf(p, "N: Be aware that removing the lock file is not a solution and may break your system.")
		errf(p, "%s", what)
		return false
	}
	// HoldAptLocks: one attempt for the lists lock and without a
	// timeout, one a second for DPkg::Lock::Timeout seconds otherwise
	// (debsystem.cc, GetLockMaybeWait).
	tries := 1
	if !lists && a.timeout > 0 {
		tries = int(a.timeout / time.Second)
	}
	ok, waited := m.tryAptLocks(tries)
	if waited && !lists && a.timeout > 0 {
		a.waiting(file)
	}
	if !ok {
		return fail(unattendedUpgrades)
	}
	// HoldDpkgLock holds the dpkg frontend lock only.
	m.mu.Lock()
	held := !lists && m.lockHeldFor > 0
	if held && a.timeout > 0 {
		m.lockHeldFor = 0 // unattended-upgrades finishes while we wait
	} else if held {
		m.lockHeldFor--
	}
	m.mu.Unlock()
	if held {
		if a.timeout <= 0 {
			return fail(unattendedUpgrades)
		}
		if !waited {
			a.waiting(file)
		}
	}
	select {
	case <-m.dpkgLock:
	default:
		if a.timeout <= 0 {
			return fail(fmt.Sprintf("%d (apt-get)", m.pid()))
		}
		t := time.NewTimer(a.timeout)
		defer t.Stop()
		select {
		case <-m.dpkgLock:
		case <-t.C:
			return fail(fmt.Sprintf("%d (apt-get)", m.pid()))
		case <-a.ctx.Done():
			return false
		}
	}
	a.released = func() { m.dpkgLock <- struct{}{} }
	return true
}

// waiting prints apt's progress line while it waits for a lock held by
// unattended-upgrades. It is progress, not an error: debSystem::Lock's
// GetLockMaybeWait (apt-pkg/deb/debsystem.cc) hands "Waiting for cache
// lock: %s" to the OpProgress, and apt-get's OpTextProgress writes to
// standard output (apt-pkg/contrib/progress.cc, OpTextProgress::Write and
// Update: cout), once with -q (NoUpdate) and not at all with -qq
// (NoDisplay); the fake prints it once, as with -q, without the
// spinner's "\r... N/Ts" updates. Only if the wait fails does apt print
// its errors ("E: ...") on standard error (GlobalError::DumpErrors:
// std::cerr).
func (a *aptRun) waiting(file string) {
	a.out("Waiting for cache lock: Could not get lock %s. It is held by process %s...", file, unattendedUpgrades)
}

func (a *aptRun) unlock() {
	if a.released != nil {
		a.released()
		a.released = nil
	}
}

func (a *aptRun) readingLists() {
	a.out("Reading package lists...")
	a.out("Building dependency tree...")
	a.out("Reading state information...")
}

// --- sources and package lists ----------------------------------------------

// source is one repository named in the apt sources.
type source struct {
	uri, suite string
	signedBy   string // the signed-by option, "" if none
}

// ubuntuArchive reports whether a repository URI is an Ubuntu archive
// mirror, which publishes the packages whose Repo is "".
func ubuntuArchive(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return (strings.HasSuffix(h, "archive.ubuntu.com") || h == "security.ubuntu.com" || h == "ports.ubuntu.com") && strings.HasPrefix(u.Path, "/ubuntu")
}

// repoKey is the key of a repository in Machine.lists.
func repoKey(uri string) string {
	if uri == "" || ubuntuArchive(uri) {
		return ""
	}
	return strings.TrimSuffix(uri, "/")
}

// readSources parses /etc/apt/sources.list and /etc/apt/sources.list.d
// (one-line .list files and deb822 .sources files, sources.list(5):
// "ONE-LINE-STYLE FORMAT" and "DEB822-STYLE FORMAT", whose Signed-By
// field is the one-line format's signed-by option), returning apt's
// error line for a malformed entry ("" if there is none).
func (m *Machine) readSources() ([]source, string) {
	files := []string{"/etc/apt/sources.list"}
	entries, _ := m.fs().ReadDir("/etc/apt/sources.list.d")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".list") || strings.HasSuffix(e.Name(), ".sources") {
			files = append(files, "/etc/apt/sources.list.d/"+e.Name())
		}
	}
	var out []source
	for _, f := range files {
		data, err := m.fs().ReadFile(f)
		if err != nil {
			continue
		}
		if strings.HasSuffix(f, ".sources") {
			for _, para := range strings.Split(string(data), "\n\n") {
				fields := map[string]string{}
				for _, line := range strings.Split(para, "\n") {
					if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " ") {
						fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
					}
				}
				if len(fields) == 0 || strings.EqualFold(fields["enabled"], "no") || !slices.Contains(strings.Fields(fields["types"]), "deb") {
					continue
				}
				if fields["uris"] == "" || fields["suites"] == "" {
					return nil, fmt.Sprintf("E: Malformed entry in list file %s (URI)", f)
				}
				for _, uri := range strings.Fields(fields["uris"]) {
					for _, suite := range strings.Fields(fields["suites"]) {
						out = append(out, source{uri: uri, suite: suite, signedBy: fields["signed-by"]})
					}
				}
			}
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if j := strings.IndexByte(line, '#'); j >= 0 {
				line = line[:j]
			}
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			if fields[0] == "deb-src" {
				continue
			}
			if fields[0] != "deb" {
				return nil, fmt.Sprintf("E: Malformed entry %d in list file %s (Component)", i+1, f)
			}
			fields = fields[1:]
			signedBy := ""
			if len(fields) > 0 && strings.HasPrefix(fields[0], "[") {
				// [key=value ...] (sources.list(5)); signed-by is the
				// one the simulation reads.
				for len(fields) > 0 {
					opt := strings.Trim(fields[0], "[]")
					if v, ok := strings.CutPrefix(opt, "signed-by="); ok {
						signedBy = v
					}
					last := strings.HasSuffix(fields[0], "]")
					fields = fields[1:]
					if last {
						break
					}
				}
			}
			if len(fields) < 2 {
				return nil, fmt.Sprintf("E: Malformed entry %d in list file %s (Suite)", i+1, f)
			}
			if u, err := url.Parse(fields[0]); err != nil || u.Scheme == "" {
				return nil, fmt.Sprintf("E: Malformed entry %d in list file %s (URI parse)", i+1, f)
			}
			out = append(out, source{uri: fields[0], suite: fields[1], signedBy: signedBy})
		}
	}
	return out, ""
}

// fetchListsLocked marks the repositories of the current sources as
// fetched, as apt-get update does.
func (m *Machine) fetchListsLocked() []source {
	srcs, bad := m.readSources()
	if bad != "" {
		return nil
	}
	m.lists = map[string]bool{}
	for _, s := range srcs {
		m.lists[repoKey(s.uri)] = true
	}
	m.listsFetched = true
	return srcs
}

// availableLocked reports whether apt sees a catalog entry: its repository
// was fetched by the last apt-get update, or it is the installed version.
func (m *Machine) availableLocked(p Package) bool {
	if m.listsFetched && m.lists[repoKey(p.Repo)] {
		return true
	}
	st := m.pkgs[p.Name]
	return st != nil && st.status != statusConfigFiles && st.pkg.Version == p.Version
}

func (a *aptRun) update() int {
	p, m := a.p, a.m
	if !a.lock(true) {
		return 100
	}
	defer a.unlock()
	srcs, bad := m.readSources()
	if bad != "" {
		errf(p, "%s", bad)
		errf(p, "E: The list of sources could not be read.")
		return 100
	}
	cfg := m.aptConfig()
	maps.Copy(cfg, a.opts)
	transport := m.catalog.Transport()
	// What apt prints after the progress lines (W:, E:, N: on standard
	// error; apt-pkg/contrib/error.cc), and which repositories it fetched.
	var warnings, errs []string
	fetched, failed := map[string]bool{}, map[string]bool{}
	fetchFailed := false
	for i, s := range srcs {
		key := repoKey(s.uri)
		fileURL, shown := s.inRelease()
		if transport != nil {
			if err := transport(a.ctx, m, fileURL, a.aptProxy(fileURL, cfg)); err != nil {
				a.out("Err:%d %s InRelease", i+1, shown)
				a.out("  %s", err)
				failed[key] = true
				if _, ok := err.(AptHTTPError); ok {
					// An HTTP error for InRelease (and so Release): no
					// signed file, an error (checked against the real
					// apt-get in containers' aptproxy_real_test.go).
					errs = append(errs, fmt.Sprintf("E: Failed to fetch %s  %s", fileURL, err),
						fmt.Sprintf("E: The repository '%s InRelease' is not signed.", shown))
					continue
				}
				// A repository apt cannot reach: Err on the progress
				// lines, a warning, and the old lists stay (exit 0;
				// apt-get.cc's update: "Some index files failed to
				// download. They have been ignored, or old ones used
				// instead.").
				warnings = append(warnings, fmt.Sprintf("W: Failed to fetch %s  %s", fileURL, err))
				fetchFailed = true
				continue
			}
		}
		if repo, signed := m.catalog.Repository(s.uri); signed {
			bin, _ := Dearmor([]byte(repo.Key))
			ok, ws := m.keyringCheck(s, bin, fileURL)
			warnings = append(warnings, ws...)
			if !ok {
				// apt-secure(8): a repository whose Release signature
				// cannot be verified is not used; apt words it so
				// (apt-pkg/acquire-item.cc, "The following signatures
				// couldn't be verified because the public key is not
				// available: NO_PUBKEY %s", "The repository '%s' is not
				// signed."; aptrepo_real_test.go compares with the real
				// apt-get). Its notices ("N: Updating from such a
				// repository can't be done securely...") are printed
				// only to a terminal, which an SSH exec request has not.
				why := "The following signatures couldn't be verified because the public key is not available: NO_PUBKEY " + KeyID(bin)
				a.out("Get:%d %s InRelease [1186 B]", i+1, shown)
				a.out("Err:%d %s InRelease", i+1, shown)
				a.out("  %s", why)
				warnings = append(warnings, fmt.Sprintf("W: GPG error: %s InRelease: %s", shown, why))
				errs = append(errs, fmt.Sprintf("E: The repository '%s InRelease' is not signed.", shown))
				failed[key] = true
				continue
			}
		}
		a.out("Hit:%d %s InRelease", i+1, shown)
		fetched[key] = true
	}
	m.mu.Lock()
	old := m.lists
	oldFetched := m.listsFetched
	m.lists = map[string]bool{}
	for _, s := range srcs {
		key := repoKey(s.uri)
		switch {
		case fetched[key]:
			m.lists[key] = true
		case failed[key] && oldFetched && old[key]:
			m.lists[key] = true // the old lists are used instead
		}
	}
	m.listsFetched = true
	m.aptUpdates++
	m.mu.Unlock()
	a.out("Reading package lists...")
	for _, w := range warnings {
		errf(p, "%s", w)
	}
	if fetchFailed {
		errf(p, "W: Some index files failed to download. They have been ignored, or old ones used instead.")
	}
	for _, e := range errs {
		errf(p, "%s", e)
	}
	if len(errs) > 0 {
		return 100
	}
	return 0
}

// --- install ----------------------------------------------------------------

// wrapList prints apt's indented, wrapped package list.
func (a *aptRun) wrapList(title string, names []string) {
	if len(names) == 0 {
		return
	}
	a.out("%s", title)
	line := " "
	for _, n := range names {
		if len(line)+1+len(n) > 79 && line != " " {
			a.out("%s", line)
			line = " "
		}
		line += " " + n
	}
	a.out("%s", line)
}

// confirm asks apt's question and reads the answer from standard input;
// without a terminal and without input, apt aborts.
func (a *aptRun) confirm() bool {
	if a.yes {
		return true
	}
	fmt.Fprint(a.p.Stdout, "Do you want to continue? [Y/n] ")
	line, err := bufio.NewReader(a.p.Stdin).ReadString('\n')
	answer := strings.TrimSpace(line)
	if (err != nil && line == "") || (answer != "" && !strings.HasPrefix(strings.ToLower(answer), "y")) {
		outf(a.p, "Abort.")
		return false
	}
	return true
}

func (a *aptRun) summary(upgraded, installed, downgraded, removed, notUpgraded int) {
	down := ""
	if downgraded > 0 {
		down = fmt.Sprintf("%d downgraded, ", downgraded)
	}
	a.out("%d upgraded, %d newly installed, %s%d to remove and %d not upgraded.", upgraded, installed, down, removed, notUpgraded)
}

func (a *aptRun) install(args []string) int {
	p, m := a.p, a.m
	if len(args) == 0 {
		// apt-get install with nothing to do.
		if !a.lock(false) {
			return 100
		}
		defer a.unlock()
		a.readingLists()
		a.summary(0, 0, 0, 0, 0)
		return 0
	}
	if !a.lock(false) {
		return 100
	}
	defer a.unlock()
	a.readingLists()
	var reqs []request
	for _, arg := range args {
		reqs = append(reqs, parseRequest(arg))
	}
	m.mu.Lock()
	r := m.resolveLocked(reqs, m.availableLocked)
	m.mu.Unlock()
	if a.resolutionFailed(r) {
		return 100
	}
	var extra, fresh, upgraded, downgraded []string
	broken := 0
	for _, s := range r.steps {
		switch {
		case s.reconfigure:
			broken++
		case s.old == nil:
			fresh = append(fresh, s.pkg.Name)
			if s.auto {
				extra = append(extra, s.pkg.Name)
			}
		case compareVersions(s.pkg.Version, s.old.Version) < 0:
			downgraded = append(downgraded, s.pkg.Name)
		default:
			upgraded = append(upgraded, s.pkg.Name)
		}
	}
	for _, name := range r.manual {
		m.mu.Lock()
		if st := m.pkgs[name]; st != nil {
			st.auto = false
		}
		m.mu.Unlock()
	}
	for _, line := range r.already {
		a.out("%s", line)
	}
	for _, name := range r.manual {
		a.out("%s set to manually installed.", name)
	}
	slices.Sort(extra)
	slices.Sort(fresh)
	a.wrapList("The following additional packages will be installed:", extra)
	a.wrapList("The following NEW packages will be installed:", fresh)
	a.wrapList("The following held packages will be changed:", r.held)
	a.wrapList("The following packages will be upgraded:", upgraded)
	a.wrapList("The following packages will be DOWNGRADED:", downgraded)
	a.summary(len(upgraded), len(fresh), len(downgraded), 0, 0)
	if broken > 0 {
		a.out("%d not fully installed or removed.", broken)
	}
	if len(r.held) > 0 && !a.c.Has("--allow-change-held-packages") && a.yes {
		errf(p, "E: Held packages were changed and -y was used without --allow-change-held-packages.")
		return 100
	}
	if len(downgraded) > 0 && !a.c.Has("--allow-downgrades") && a.yes {
		errf(p, "E: Packages were downgraded and -y was used without --allow-downgrades.")
		return 100
	}
	if len(r.steps) == 0 {
		return 0
	}
	if (len(extra) > 0 || len(r.held) > 0 || len(downgraded) > 0) && !a.confirm() {
		return 1
	}
	return a.apply(r.steps)
}

// resolutionFailed prints apt's errors for an impossible request.
func (a *aptRun) resolutionFailed(r resolution) bool {
	p := a.p
	if len(r.unknown) > 0 || len(r.badVer) > 0 {
		for _, name := range r.unknown {
			errf(p, "E: Unable to locate package %s", name)
		}
		for _, q := range r.badVer {
			errf(p, "E: Version '%s' for '%s' was not found", q.version, q.name)
		}
		return true
	}
	if len(r.unmet) > 0 {
		a.out("Some packages could not be installed. This may mean that you have")
		a.out("requested an impossible situation or if you are using the unstable")
		a.out("distribution that some required packages have not yet been created")
		a.out("or been moved out of Incoming.")
		a.out("The following information may help to resolve the situation:")
		a.out("")
		a.out("The following packages have unmet dependencies:")
		for _, u := range r.unmet {
			a.out(" %s : Depends: %s but it is not installable", u[0], u[1])
		}
		errf(p, "E: Unable to correct problems, you have held broken packages.")
		return true
	}
	return false
}

// apply unpacks and configures packages, printing dpkg's progress and its
// errors.
func (a *aptRun) apply(steps []step) int {
	p := a.p
	if a.p.Getenv("DEBIAN_FRONTEND") != "noninteractive" && slices.ContainsFunc(steps, func(s step) bool { return s.pkg.Debconf }) {
		errf(p, "debconf: unable to initialize frontend: Dialog")
		errf(p, "debconf: (Dialog frontend will not work on a dumb terminal, an emacs shell buffer, or without a controlling terminal.)")
		errf(p, "debconf: falling back to frontend: Readline")
		errf(p, "debconf: unable to initialize frontend: Readline")
		errf(p, "debconf: (This frontend requires a controlling tty.)")
		errf(p, "debconf: falling back to frontend: Teletype")
		errf(p, "dpkg-preconfigure: unable to re-open stdin: ")
	}
	err := a.m.applyInstall(func(format string, args ...any) { outf(p, format, args...) }, func(format string, args ...any) { errf(p, format, args...) }, steps, false)
	var ce *configureError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		var je *jobError
		if errors.As(ce.err, &je) {
			errf(p, "Job for %s failed because the control process exited with error code.", je.unit)
			errf(p, "See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.", je.unit, je.unit)
		} else {
			errf(p, "%s: %v", ce.pkg, ce.err)
		}
		errf(p, "dpkg: error processing package %s (--configure):", ce.pkg)
		errf(p, " installed %s package post-installation script subprocess returned error exit status 1", ce.pkg)
		errf(p, "Errors were encountered while processing:")
		errf(p, " %s", ce.pkg)
	default:
		errf(p, "dpkg: error: %v", err)
	}
	errf(p, "E: Sub-process /usr/bin/dpkg returned an error code (1)")
	return 100
}

// --- remove, autoremove, upgrade ------------------------------------------------

func (a *aptRun) remove(args []string, purge, auto bool) int {
	p, m := a.p, a.m
	if !a.lock(false) {
		return 100
	}
	defer a.unlock()
	a.readingLists()
	m.mu.Lock()
	want := map[string]bool{}
	var unknown []string
	for _, arg := range args {
		name := parseRequest(arg).name
		st := m.pkgs[name]
		switch {
		case st == nil && len(m.catalog.Versions(name)) == 0:
			unknown = append(unknown, name)
		case st == nil || (st.status == statusConfigFiles && !purge):
			a.out("Package '%s' is not installed, so not removed", name)
		default:
			want[name] = true
		}
	}
	if auto {
		for _, name := range m.unneededLocked() {
			want[name] = true
		}
	}
	// Packages that depend on a removed one go too.
	for changed := true; changed; {
		changed = false
		for name, st := range m.pkgs {
			if want[name] || st.status == statusConfigFiles {
				continue
			}
			if slices.ContainsFunc(st.pkg.Depends, func(d string) bool { return want[d] }) {
				want[name], changed = true, true
			}
		}
	}
	names := slices.Sorted(maps.Keys(want))
	var held []string
	for _, n := range names {
		if m.holds[n] {
			held = append(held, n)
		}
	}
	m.mu.Unlock()
	if len(unknown) > 0 {
		for _, n := range unknown {
			errf(p, "E: Unable to locate package %s", n)
		}
		return 100
	}
	shown := names
	if purge {
		shown = nil
		for _, n := range names {
			shown = append(shown, n+"*")
		}
	}
	a.wrapList("The following held packages will be changed:", held)
	a.wrapList("The following packages will be REMOVED:", shown)
	a.summary(0, 0, 0, len(names), 0)
	if len(names) == 0 {
		return 0
	}
	if len(held) > 0 && !a.c.Has("--allow-change-held-packages") && a.yes {
		errf(p, "E: Held packages were changed and -y was used without --allow-change-held-packages.")
		return 100
	}
	if !a.confirm() {
		return 1
	}
	// Dependents first.
	order := m.removalOrder(names)
	if err := m.applyRemove(func(format string, args ...any) { outf(p, format, args...) }, order, purge); err != nil {
		errf(p, "dpkg: error: %v", err)
		errf(p, "E: Sub-process /usr/bin/dpkg returned an error code (1)")
		return 100
	}
	return 0
}

// removalOrder sorts packages so that each comes before the packages it
// depends on.
func (m *Machine) removalOrder(names []string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	var out []string
	done := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if done[n] {
			return
		}
		done[n] = true
		for other := range set {
			if st := m.pkgs[other]; st != nil && slices.Contains(st.pkg.Depends, n) {
				visit(other)
			}
		}
		out = append(out, n)
	}
	for _, n := range names {
		visit(n)
	}
	return out
}

// unneededLocked returns the automatically installed packages that no
// manually installed package needs any more.
func (m *Machine) unneededLocked() []string {
	needed := map[string]bool{}
	var mark func(string)
	mark = func(n string) {
		st := m.pkgs[n]
		if needed[n] || st == nil || st.status == statusConfigFiles {
			return
		}
		needed[n] = true
		for _, d := range st.pkg.Depends {
			mark(d)
		}
	}
	for n, st := range m.pkgs {
		if !st.auto {
			mark(n)
		}
	}
	var out []string
	for n, st := range m.pkgs {
		if st.auto && st.status != statusConfigFiles && !needed[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (a *aptRun) upgrade() int {
	m := a.m
	if !a.lock(false) {
		return 100
	}
	defer a.unlock()
	a.readingLists()
	a.out("Calculating upgrade...")
	m.mu.Lock()
	var reqs []request
	var kept []string
	for _, name := range slices.Sorted(maps.Keys(m.pkgs)) {
		st := m.pkgs[name]
		if st.status != statusInstalled {
			continue
		}
		for _, cand := range m.catalog.Versions(name) {
			if m.availableLocked(cand) {
				if compareVersions(cand.Version, st.pkg.Version) > 0 {
					if m.holds[name] {
						kept = append(kept, name)
					} else {
						reqs = append(reqs, request{name, cand.Version})
					}
				}
				break
			}
		}
	}
	r := m.resolveLocked(reqs, m.availableLocked)
	m.mu.Unlock()
	if a.resolutionFailed(r) {
		return 100
	}
	var names []string
	for _, s := range r.steps {
		names = append(names, s.pkg.Name)
	}
	a.wrapList("The following packages have been kept back:", kept)
	a.wrapList("The following packages will be upgraded:", names)
	a.summary(len(r.steps), 0, 0, 0, len(kept))
	if len(r.steps) == 0 {
		return 0
	}
	if !a.confirm() {
		return 1
	}
	return a.apply(r.steps)
}

// list: apt list [--installed] [PATTERN...].
func (a *aptRun) list(patterns []string) int {
	m := a.m
	outf(a.p, "Listing...")
	m.mu.Lock()
	defer m.mu.Unlock()
	names := map[string]bool{}
	for n := range m.pkgs {
		names[n] = true
	}
	if !a.c.Has("--installed") {
		for _, n := range m.catalog.Names() {
			for _, v := range m.catalog.Versions(n) {
				if m.availableLocked(v) {
					names[n] = true
				}
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if len(patterns) > 0 && !slices.ContainsFunc(patterns, func(pat string) bool { ok, _ := path.Match(pat, n); return ok }) {
			continue
		}
		st := m.pkgs[n]
		installed := st != nil && st.status == statusInstalled
		if a.c.Has("--installed") && !installed {
			continue
		}
		version, where, tags := "", "jammy", ""
		var cand *Package
		for _, v := range m.catalog.Versions(n) {
			if m.listsFetched && m.lists[repoKey(v.Repo)] {
				cand = &v
				break
			}
		}
		switch {
		case installed:
			version = st.pkg.Version
			tags = " [installed]"
			if st.auto {
				tags = " [installed,automatic]"
			}
			if cand == nil {
				where, tags = "now", strings.Replace(tags, "installed", "installed,local", 1)
			} else {
				where += ",now"
			}
		case cand != nil:
			version = cand.Version
			if st != nil && st.status == statusConfigFiles {
				tags = " [residual-config]"
			}
		default:
			continue
		}
		outf(a.p, "%s/%s %s %s%s", n, where, version, m.arch, tags)
	}
	return 0
}

// --- apt-mark and apt-cache -------------------------------------------------

// aptMarkTool: apt-mark hold|unhold PKG..., apt-mark showhold.
func aptMarkTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return notModelled(p, "apt-mark without a command")
	}
	cmd, args := c.Operands[0], c.Operands[1:]
	switch cmd {
	case "showhold", "showheld":
		m.mu.Lock()
		held := slices.Sorted(maps.Keys(m.holds))
		m.mu.Unlock()
		for _, n := range held {
			if len(args) == 0 || slices.Contains(args, n) {
				outf(p, "%s", n)
			}
		}
		return 0
	case "hold", "unhold":
		if len(args) == 0 {
			errf(p, "E: No packages found")
			return 100
		}
		if !isRoot(p) {
			errf(p, "dpkg: error: requested operation requires superuser privilege")
			errf(p, "E: Executing dpkg failed. Are you root?")
			return 100
		}
		if ok, _ := m.tryAptLocks(1); !ok {
			errf(p, "dpkg: error: dpkg frontend lock was locked by another process with pid 2425")
			errf(p, "Note: removing the lock file is always wrong, and can end up damaging the")
			errf(p, "locked area and the entire system. See <https://wiki.debian.org/Teams/Dpkg/FAQ#db-lock>.")
			errf(p, "E: Executing dpkg failed. Are you root?")
			return 100
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, n := range args {
			if m.pkgs[n] == nil && !slices.ContainsFunc(m.catalog.Versions(n), m.availableLocked) {
				errf(p, "E: Unable to locate package %s", n)
				return 100
			}
		}
		for _, n := range args {
			switch {
			case cmd == "hold" && m.holds[n]:
				outf(p, "%s was already set on hold.", n)
			case cmd == "hold":
				m.holds[n] = true
				outf(p, "%s set on hold.", n)
			case m.holds[n]:
				delete(m.holds, n)
				outf(p, "Canceled hold on %s.", n)
			default:
				outf(p, "%s was already not on hold.", n)
			}
		}
		m.writeStatusLocked()
		return 0
	}
	return notModelled(p, "apt-mark %s", cmd)
}

// aptCacheTool: apt-cache policy PKG... and apt-cache madison PKG....
func aptCacheTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) < 2 {
		return notModelled(p, "apt-cache %s", strings.Join(c.Operands, " "))
	}
	cmd, args := c.Operands[0], c.Operands[1:]
	if cmd != "policy" && cmd != "madison" {
		return notModelled(p, "apt-cache %s", cmd)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range args {
		var avail []Package
		for _, v := range m.catalog.Versions(n) {
			if m.availableLocked(v) {
				avail = append(avail, v)
			}
		}
		st := m.pkgs[n]
		installed := ""
		if st != nil && st.status == statusInstalled {
			installed = st.pkg.Version
			if !slices.ContainsFunc(avail, func(v Package) bool { return v.Version == installed }) {
				avail = append(avail, st.pkg)
				slices.SortStableFunc(avail, func(a, b Package) int { return compareVersions(b.Version, a.Version) })
			}
		}
		if len(avail) == 0 {
			errf(p, "N: Unable to locate package %s", n)
			continue
		}
		repoOf := func(v Package) (string, bool) {
			if !m.listsFetched || !m.lists[repoKey(v.Repo)] {
				return "", false
			}
			if v.Repo == "" {
				return "http://archive.ubuntu.com/ubuntu jammy/main " + m.arch + " Packages", true
			}
			return v.Repo + " jammy/stable " + m.arch + " Packages", true
		}
		if cmd == "madison" {
			for _, v := range avail {
				if r, ok := repoOf(v); ok {
					outf(p, "%10s | %s | %s", n, v.Version, r)
				}
			}
			continue
		}
		candidate := "(none)"
		for _, v := range avail {
			if _, ok := repoOf(v); ok || v.Version == installed {
				candidate = v.Version
				break
			}
		}
		if m.holds[n] && installed != "" {
			candidate = installed
		}
		shown := installed
		if shown == "" {
			shown = "(none)"
		}
		outf(p, "%s:", n)
		outf(p, "  Installed: %s", shown)
		outf(p, "  Candidate: %s", candidate)
		outf(p, "  Version table:")
		for _, v := range avail {
			mark := "    "
			if v.Version == installed {
				mark = " ***"
			}
			outf(p, "%s %s 500", mark, v.Version)
			if r, ok := repoOf(v); ok {
				outf(p, "        500 %s", r)
			}
			if v.Version == installed {
				outf(p, "        100 /var/lib/dpkg/status")
			}
		}
	}
	return 0
}

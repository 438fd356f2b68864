package ubuntu

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Package is a Debian package that apt-get can install on a [Machine].
//
// A package of the simulated cloud (docker-ce, kubeadm, nfs-kernel-server,
// ...) is a Package added to the machine's [Catalog]: its fake programs,
// the files it ships, the systemd units it brings and a hook for what its
// maintainer scripts do. Installing it, by apt-get or by
// [Machine.InstallPackages], does what dpkg and Ubuntu's maintainer scripts
// do: unpack Files, Programs and Tools, run OnInstall (postinst), then
// enable and start its Units (deb-systemd-helper, deb-systemd-invoke).
//
// The maps and slices of a Package must not be modified after it is added
// to a catalog.
type Package struct {
	// Name is the package name ("docker-ce").
	Name string
	// Version is the Debian version ("5:24.0.7-1~ubuntu.22.04~jammy"),
	// ordered as dpkg orders versions.
	Version string
	// Description is dpkg's one-line description; a generic one if empty.
	Description string
	// Repo is the URI of the apt repository that publishes the package, as
	// it appears in a sources.list entry
	// ("https://download.docker.com/linux/ubuntu"). Empty means the Ubuntu
	// archive, which every machine's /etc/apt/sources.list names. apt-get
	// finds a package only once `apt-get update` has run while a source
	// naming its repository was configured, as on a real machine.
	Repo string
	// Base marks a package of the Ubuntu cloud image: [Install] installs it.
	Base bool
	// Depends names the packages it needs (no version constraints); apt-get
	// installs them first, marked as automatically installed.
	Depends []string
	// Files are the files the package installs, path → content (mode 0644,
	// owned by root; 0755 under a bin or sbin directory). Files under /etc
	// are configuration files (conffiles): installing never overwrites an
	// existing one, removing keeps them, purging deletes them.
	Files map[string]string
	// Programs are the fake programs the package provides, absolute path →
	// program; installing creates the executable, removing deletes it.
	Programs map[string]sshtest.Program
	// Tools are fake programs that need the machine they run on (its
	// services, its packages, its [Machine.Extension] state), installed
	// and removed as Programs are.
	Tools map[string]Tool
	// Units are the systemd units the package ships. As on Ubuntu, they are
	// enabled and started when the package is installed, restarted when it
	// is upgraded, and stopped when it is removed.
	Units []Unit
	// OnInstall runs after the package is unpacked and before its units
	// start, as a postinst script does, on every install and upgrade (not
	// when apt-get finds it already installed). An error fails the
	// installation as a failing postinst does: the package is left
	// half-configured and the next install runs OnInstall again.
	OnInstall func(m *Machine) error
	// OnRemove runs when the package is removed or purged, after its units
	// stopped, as a postrm script does.
	OnRemove func(m *Machine) error
	// Debconf marks a package that asks debconf questions: unless apt-get
	// runs with DEBIAN_FRONTEND=noninteractive, debconf complains on
	// standard error that it has no terminal (the installation still
	// succeeds, with the default answers, as on a real machine).
	Debconf bool
	// IgnoreStartFailure makes a unit of the package that fails to start
	// (or to restart, on an upgrade) leave the package installed and the
	// unit failed, systemctl's "Job for UNIT failed" on standard error,
	// as the maintainer scripts debhelper generates do: they run
	// `deb-systemd-invoke start UNIT >/dev/null || true` (debhelper's
	// autoscripts/postinst-systemd-start, e.g. Debian 12's
	// /var/lib/dpkg/info/containerd.postinst). By default a unit that
	// fails to start fails the package's configuration, as a postinst
	// that checks the start does.
	IgnoreStartFailure bool
}

// Tool is a fake program that is given the machine it runs on.
type Tool func(ctx context.Context, m *Machine, p *sshtest.Process) int

// Unit is a systemd unit a package ships or a test registers with
// [Machine.AddUnit].
type Unit struct {
	// Name is the unit's name with its suffix ("docker.service").
	Name string
	// File is the unit file's content, written to /lib/systemd/system/NAME
	// unless a file is already there. Empty means a simple service with an
	// [Install] section (WantedBy=multi-user.target). A unit file without
	// an [Install] section makes a static unit that cannot be enabled.
	File string
	// OnStart runs when the unit starts (start, restart, enable --now,
	// package installation); a fake daemon reads its configuration here. An
	// error makes the start fail as a unit whose control process exited with
	// an error does: systemctl exits 1 and the unit is "failed".
	OnStart func(m *Machine) error
	// OnStop runs when the unit stops (stop, restart, package removal).
	OnStop func(m *Machine) error
	// OnReload runs on reload. A unit without OnReload cannot be reloaded
	// ("Job type reload is not applicable"); reload-or-restart restarts it.
	OnReload func(m *Machine) error
}

// Catalog is the set of packages apt-get can install: for each name, one or
// more versions. The zero value is an empty catalog ready to use. A
// catalog may be shared by several machines; it is safe for concurrent use.
type Catalog struct {
	mu        sync.RWMutex
	pkgs      map[string][]Package  // newest version first
	repos     map[string]Repository // signed repositories, by repoKey
	transport AptTransport          // how apt reaches repositories; nil: always
}

// Add adds a package version to the catalog, replacing one with the same
// name and version. Several versions of a package may coexist; apt-get
// installs the newest unless a version is asked for (pkg=version).
func (c *Catalog) Add(p Package) {
	if p.Name == "" || p.Version == "" {
		panic("ubuntu: a catalog package needs a Name and a Version")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pkgs == nil {
		c.pkgs = map[string][]Package{}
	}
	vs := slices.DeleteFunc(c.pkgs[p.Name], func(q Package) bool { return q.Version == p.Version })
	vs = append(vs, p)
	slices.SortStableFunc(vs, func(a, b Package) int { return compareVersions(b.Version, a.Version) })
	c.pkgs[p.Name] = vs
}

// Lookup returns the newest version of a package.
func (c *Catalog) Lookup(name string) (Package, bool) {
	vs := c.Versions(name)
	if len(vs) == 0 {
		return Package{}, false
	}
	return vs[0], true
}

// Versions returns every version of a package, newest first.
func (c *Catalog) Versions(name string) []Package {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.pkgs[name])
}

// Names returns the names of the packages in the catalog, sorted.
func (c *Catalog) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.pkgs))
}

// base returns the newest version of every Base package, by name.
func (c *Catalog) base() []Package {
	var out []Package
	for _, name := range c.Names() {
		if p, ok := c.Lookup(name); ok && p.Base {
			out = append(out, p)
		}
	}
	return out
}

// compareVersions orders Debian versions as dpkg does: epoch, then upstream
// version, then revision, each compared by dpkg's rules ('~' sorts before
// anything, even the end of the string).
func compareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if ea != eb {
		if ea < eb {
			return -1
		}
		return 1
	}
	if c := verrevcmp(ua, ub); c != 0 {
		return c
	}
	return verrevcmp(ra, rb)
}

func splitVersion(v string) (epoch int, upstream, revision string) {
	if e, rest, ok := strings.Cut(v, ":"); ok {
		epoch, _ = strconv.Atoi(e)
		v = rest
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// order is dpkg's weight of a non-digit character.
func order(s string) int {
	if s == "" {
		return 0
	}
	c := s[0]
	switch {
	case isDigit(c):
		return 0
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return int(c)
	case c == '~':
		return -1
	}
	return int(c) + 256
}

// verrevcmp is dpkg's comparison of upstream versions and revisions.
func verrevcmp(a, b string) int {
	for a != "" || b != "" {
		for (a != "" && !isDigit(a[0])) || (b != "" && !isDigit(b[0])) {
			ac, bc := order(a), order(b)
			if ac != bc {
				return ac - bc
			}
			if a != "" {
				a = a[1:]
			}
			if b != "" {
				b = b[1:]
			}
		}
		for a != "" && a[0] == '0' {
			a = a[1:]
		}
		for b != "" && b[0] == '0' {
			b = b[1:]
		}
		firstDiff := 0
		for a != "" && isDigit(a[0]) && b != "" && isDigit(b[0]) {
			if firstDiff == 0 {
				firstDiff = int(a[0]) - int(b[0])
			}
			a, b = a[1:], b[1:]
		}
		if a != "" && isDigit(a[0]) {
			return 1
		}
		if b != "" && isDigit(b[0]) {
			return -1
		}
		if firstDiff != 0 {
			return firstDiff
		}
	}
	return 0
}

package cloudtest

import (
	"fmt"
	"path"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// Package is a Debian package of yours that apt-get can install on the
// simulated VMs: its files and the systemd units it ships. Installing it
// (apt-get install, or [VMOptions.Installed]) does what dpkg and
// debhelper's maintainer scripts do: unpack Files, then enable and start
// Units; a unit that fails to start leaves the package installed and the
// unit failed, as debhelper's `deb-systemd-invoke start UNIT || true`
// does. Removing it stops its units; files under /etc are configuration
// files, kept by a remove and deleted by a purge.
//
// The package provides no program: running a binary it names fails with
// "command not found" (status 127), which tells a test that the step
// under test runs something nobody modelled.
type Package struct {
	// Name is the package name ("acme-agent"). Required.
	Name string
	// Version is the Debian version ("1.4.2-1"), ordered as dpkg orders
	// versions; "1.0" when empty. Several versions of one package may be
	// in a catalog: apt-get installs the newest unless asked for one
	// (name=version).
	Version string
	// Depends names packages of the catalog that apt-get installs first.
	Depends []string
	// Files are the files the package installs, absolute path → content
	// (mode 0644, owned by root; 0755 under a bin or sbin directory).
	Files map[string]string
	// Units are the systemd units the package ships.
	Units []Unit
}

// Unit is a systemd unit a [Package] ships.
type Unit struct {
	// Name is the unit's name ("acme-agent.service"; ".service" is added
	// to a name without a unit type suffix, as systemctl does). Required.
	Name string
	// File is the unit file's content, written to /lib/systemd/system;
	// a simple service with an [Install] section (WantedBy=
	// multi-user.target) when empty.
	File string
	// Requires are the files the daemon reads when it starts, absolute
	// paths: while one is missing, a start or restart fails as a unit
	// whose ExecStart exits 1 does (systemctl: "Job for UNIT failed
	// because the control process exited with error code.", exit status
	// 1; the unit is failed). That is how a test catches a step that
	// forgot to write the daemon's configuration.
	Requires []string
}

// catalog returns the function that makes each VM's apt catalog: Ubuntu's
// with pkgs (the simulated cloud adds its own packages to it).
func catalog(pkgs []Package) (func() *ubuntu.Catalog, error) {
	var converted []ubuntu.Package
	for _, p := range pkgs {
		up, err := p.ubuntu()
		if err != nil {
			return nil, err
		}
		converted = append(converted, up)
	}
	return func() *ubuntu.Catalog {
		c := ubuntu.DefaultCatalog()
		for _, p := range converted {
			c.Add(p)
		}
		return c
	}, nil
}

// ubuntu returns the package as the simulated Ubuntu's catalog holds it.
func (p Package) ubuntu() (ubuntu.Package, error) {
	if p.Name == "" {
		return ubuntu.Package{}, fmt.Errorf("cloudtest: a Package needs a Name")
	}
	up := ubuntu.Package{
		Name: p.Name, Version: p.Version, Depends: p.Depends, Files: map[string]string{},
		IgnoreStartFailure: true, // debhelper's postinst
	}
	if up.Version == "" {
		up.Version = "1.0"
	}
	for name, content := range p.Files {
		if !path.IsAbs(name) || path.Clean(name) != name {
			return ubuntu.Package{}, fmt.Errorf("cloudtest: package %s: file %q is not a clean absolute path", p.Name, name)
		}
		up.Files[name] = content
	}
	for _, u := range p.Units {
		uu, err := u.ubuntu(p.Name)
		if err != nil {
			return ubuntu.Package{}, err
		}
		up.Units = append(up.Units, uu)
	}
	return up, nil
}

// ubuntu returns the unit as the simulated systemd runs it: a start
// fails while one of Requires is missing.
func (u Unit) ubuntu(pkg string) (ubuntu.Unit, error) {
	name := u.Name
	if name == "" {
		return ubuntu.Unit{}, fmt.Errorf("cloudtest: package %s: a Unit needs a Name", pkg)
	}
	switch path.Ext(name) {
	case ".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target", ".path", ".timer", ".slice", ".scope":
		// systemd.unit(5)'s unit types
	default:
		name += ".service" // as systemctl completes a bare name
	}
	requires := make([]string, len(u.Requires))
	for i, r := range u.Requires {
		if !path.IsAbs(r) || path.Clean(r) != r {
			return ubuntu.Unit{}, fmt.Errorf("cloudtest: unit %s: Requires %q is not a clean absolute path", name, r)
		}
		requires[i] = r
	}
	uu := ubuntu.Unit{Name: name, File: u.File}
	if len(requires) > 0 {
		// What the daemon does at start: read each file, exit 1 when it
		// cannot (the message is what it logs to the journal).
		uu.OnStart = func(m *ubuntu.Machine) error {
			for _, r := range requires {
				fi, err := m.Server().FS().Stat(r)
				if err != nil {
					return fmt.Errorf("%s: open %s: no such file or directory", strings.TrimSuffix(name, ".service"), r)
				}
				if fi.IsDir() {
					return fmt.Errorf("%s: read %s: is a directory", strings.TrimSuffix(name, ".service"), r)
				}
			}
			return nil
		}
	}
	return uu, nil
}

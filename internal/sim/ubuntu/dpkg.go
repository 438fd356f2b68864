package ubuntu

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// dpkgTool: dpkg -s|--status PKG..., -l|--list [PATTERN...], -L|--listfiles
// PKG..., --print-architecture, --get-selections, --configure -a. Installing
// .deb files (-i) is not modelled: packages come from apt-get.
func dpkgTool(ctx context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "slLia", long: []string{"status", "list", "listfiles", "print-architecture", "get-selections", "configure", "pending", "audit"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	switch c.Last("-s", "--status", "-l", "--list", "-L", "--listfiles", "--print-architecture", "--get-selections", "--configure", "--audit") {
	case "-s", "--status":
		return m.dpkgStatus(p, "dpkg-query", c.Operands)
	case "-l", "--list":
		return m.dpkgList(p, c.Operands)
	case "-L", "--listfiles":
		return m.dpkgListFiles(p, c.Operands)
	case "--print-architecture":
		outf(p, "%s", m.arch)
		return 0
	case "--get-selections":
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, n := range slices.Sorted(maps.Keys(m.pkgs)) {
			want := strings.Fields(m.statusLineLocked(n))[0]
			outf(p, "%s\t\t\t\t\t%s", n, want)
		}
		return 0
	case "--audit":
		return 0
	case "--configure":
		if !c.Has("-a", "--pending") || len(c.Operands) > 0 {
			return notModelled(p, "dpkg --configure of a named package")
		}
		if !isRoot(p) {
			return p.Fail(2, "error: requested operation requires superuser privilege")
		}
		return m.dpkgConfigurePending(p)
	}
	if c.Has("-i") {
		return notModelled(p, "dpkg -i (install packages with apt-get)")
	}
	return notModelled(p, "dpkg %s", strings.Join(p.Args[1:], " "))
}

// dpkgConfigurePending configures half-configured packages (dpkg
// --configure -a), running their OnInstall hooks and units again.
func (m *Machine) dpkgConfigurePending(p *sshtest.Process) int {
	m.mu.Lock()
	held := m.lockHeldFor > 0
	if held {
		m.lockHeldFor--
	}
	m.mu.Unlock()
	if !held {
		ok, _ := m.tryAptLocks(1)
		held = !ok
	}
	if held {
		errf(p, "dpkg: error: dpkg frontend lock was locked by another process with pid 2425")
		errf(p, "Note: removing the lock file is always wrong, and can end up damaging the")
		errf(p, "locked area and the entire system. See <https://wiki.debian.org/Teams/Dpkg/FAQ#db-lock>.")
		return 2
	}
	select {
	case <-m.dpkgLock:
		defer func() { m.dpkgLock <- struct{}{} }()
	default:
		errf(p, "dpkg: error: dpkg frontend lock was locked by another process with pid %d", m.pid())
		return 2
	}
	m.mu.Lock()
	var steps []step
	for _, n := range slices.Sorted(maps.Keys(m.pkgs)) {
		if st := m.pkgs[n]; st.status == statusHalfConfigured {
			steps = append(steps, step{pkg: st.pkg, auto: st.auto})
		}
	}
	m.mu.Unlock()
	if len(steps) > 0 {
		defer m.writeStatus() // once per run (see applyInstall)
	}
	for _, s := range steps {
		// Configure only: the files are unpacked already.
		if s.pkg.OnInstall != nil {
			if err := s.pkg.OnInstall(m); err != nil {
				errf(p, "dpkg: error processing package %s (--configure):", s.pkg.Name)
				errf(p, " installed %s package post-installation script subprocess returned error exit status 1", s.pkg.Name)
				return 1
			}
		}
		outf(p, "Setting up %s (%s) ...", s.pkg.Name, s.pkg.Version)
		for _, u := range s.pkg.Units {
			m.enableUnit(u.Name, nil)
			if err := m.job(u.Name, jobStart); err != nil {
				if s.pkg.IgnoreStartFailure { // deb-systemd-invoke start UNIT || true
					name := unitName(u.Name)
					errf(p, "Job for %s failed because the control process exited with error code.", name)
					errf(p, "See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.", name, name)
					continue
				}
				errf(p, "dpkg: error processing package %s (--configure):", s.pkg.Name)
				return 1
			}
		}
		m.mu.Lock()
		if st := m.pkgs[s.pkg.Name]; st != nil {
			st.status = statusInstalled
		}
		m.mu.Unlock()
	}
	return 0
}

// dpkgQueryTool: dpkg-query -W|--show [-f|--showformat=FORMAT] [PKG...],
// -s|--status PKG..., -l|--list [PATTERN...], -L|--listfiles PKG....
func dpkgQueryTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "WslLf:", long: []string{"show", "status", "list", "listfiles", "showformat="}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	switch c.Last("-W", "--show", "-s", "--status", "-l", "--list", "-L", "--listfiles") {
	case "-s", "--status":
		return m.dpkgStatus(p, "dpkg-query", c.Operands)
	case "-l", "--list":
		return m.dpkgList(p, c.Operands)
	case "-L", "--listfiles":
		return m.dpkgListFiles(p, c.Operands)
	case "-W", "--show":
		format, ok := c.Value("-f", "--showformat")
		if !ok {
			format = "${binary:Package}\t${Version}\n"
		}
		if c.Last("-f", "--showformat") == "-f" {
			// dpkg's option parser takes "-f=FORMAT" as "-f FORMAT".
			format = strings.TrimPrefix(format, "=")
		}
		return m.dpkgShow(p, format, c.Operands)
	}
	return p.Fail(2, "error: need an action option")
}

// statusAbbrev is dpkg's db:Status-Abbrev ("ii ").
func (m *Machine) statusAbbrevLocked(name string) string {
	st := m.pkgs[name]
	want := "i"
	if m.holds[name] {
		want = "h"
	}
	switch st.status {
	case statusConfigFiles:
		return "rc "
	case statusHalfConfigured:
		return want + "F "
	}
	return want + "i "
}

func (m *Machine) dpkgStatus(p *sshtest.Process, prog string, names []string) int {
	if len(names) == 0 {
		errf(p, "%s: error: --status needs at least one package name argument", prog)
		return 2
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	code := 0
	for i, n := range names {
		st := m.pkgs[n]
		if st == nil {
			errf(p, "dpkg-query: package '%s' is not installed and no information is available", n)
			code = 1
			continue
		}
		if i > 0 {
			outf(p, "")
		}
		outf(p, "Package: %s", n)
		outf(p, "Status: %s", m.statusLineLocked(n))
		outf(p, "Priority: optional")
		outf(p, "Section: misc")
		outf(p, "Maintainer: Ubuntu Developers <ubuntu-devel-discuss@lists.ubuntu.com>")
		outf(p, "Architecture: %s", m.arch)
		outf(p, "Version: %s", st.pkg.Version)
		if len(st.pkg.Depends) > 0 {
			outf(p, "Depends: %s", strings.Join(st.pkg.Depends, ", "))
		}
		var conf []string
		for f := range st.pkg.Files {
			if isConffile(f) {
				conf = append(conf, f)
			}
		}
		if len(conf) > 0 {
			slices.Sort(conf)
			outf(p, "Conffiles:")
			for _, f := range conf {
				outf(p, " %s", f)
			}
		}
		outf(p, "Description: %s", description(st.pkg))
	}
	if code != 0 {
		errf(p, "Use dpkg --info (= dpkg-deb --info) to examine archive files.")
	}
	return code
}

// matchNames returns the known packages matching dpkg's glob patterns (all
// of them without patterns), and the patterns that matched nothing.
func (m *Machine) matchNamesLocked(patterns []string) (names, unmatched []string) {
	all := slices.Sorted(maps.Keys(m.pkgs))
	if len(patterns) == 0 {
		return all, nil
	}
	seen := map[string]bool{}
	for _, pat := range patterns {
		found := false
		for _, n := range all {
			if ok, _ := path.Match(pat, n); ok {
				found = true
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
		if !found {
			unmatched = append(unmatched, pat)
		}
	}
	slices.Sort(names)
	return names, unmatched
}

func (m *Machine) dpkgList(p *sshtest.Process, patterns []string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	names, unmatched := m.matchNamesLocked(patterns)
	code := 0
	for _, pat := range unmatched {
		errf(p, "dpkg-query: no packages found matching %s", pat)
		code = 1
	}
	if len(names) == 0 {
		return code
	}
	wn, wv, wa, wd := len("Name"), len("Version"), len("Architecture"), len("Description")
	for _, n := range names {
		st := m.pkgs[n]
		wn, wv, wa, wd = max(wn, len(n)), max(wv, len(st.pkg.Version)), max(wa, len(m.arch)), max(wd, len(description(st.pkg)))
	}
	outf(p, "Desired=Unknown/Install/Remove/Purge/Hold")
	outf(p, "| Status=Not/Inst/Conf-files/Unpacked/halF-conf/Half-inst/trig-aWait/Trig-pend")
	outf(p, "|/ Err?=(none)/Reinst-required (Status,Err: uppercase=bad)")
	outf(p, "||/ %-*s %-*s %-*s %s", wn, "Name", wv, "Version", wa, "Architecture", "Description")
	outf(p, "+++-%s-%s-%s-%s", strings.Repeat("=", wn), strings.Repeat("=", wv), strings.Repeat("=", wa), strings.Repeat("=", wd))
	for _, n := range names {
		st := m.pkgs[n]
		outf(p, "%s %-*s %-*s %-*s %s", m.statusAbbrevLocked(n), wn, n, wv, st.pkg.Version, wa, m.arch, description(st.pkg))
	}
	return code
}

func (m *Machine) dpkgListFiles(p *sshtest.Process, names []string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	code := 0
	for _, n := range names {
		st := m.pkgs[n]
		if st == nil {
			errf(p, "dpkg-query: package '%s' is not installed", n)
			code = 1
			continue
		}
		files := map[string]bool{}
		for f := range st.pkg.Files {
			files[f] = true
		}
		if st.status != statusConfigFiles {
			for f := range st.pkg.Programs {
				files[f] = true
			}
			for f := range st.pkg.Tools {
				files[f] = true
			}
			for _, u := range st.pkg.Units {
				files["/lib/systemd/system/"+unitName(u.Name)] = true
			}
		}
		for _, f := range slices.Sorted(maps.Keys(files)) {
			outf(p, "%s", f)
		}
	}
	return code
}

// dpkgShow prints dpkg-query -W output with a --showformat.
func (m *Machine) dpkgShow(p *sshtest.Process, format string, patterns []string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	names, unmatched := m.matchNamesLocked(patterns)
	for _, n := range names {
		fmt.Fprint(p.Stdout, m.formatLocked(n, format))
	}
	for _, pat := range unmatched {
		errf(p, "dpkg-query: no packages found matching %s", pat)
	}
	if len(unmatched) > 0 {
		return 1
	}
	return 0
}

// formatLocked expands dpkg-query's ${Field} references and \n, \t, \\
// escapes for one package.
func (m *Machine) formatLocked(name, format string) string {
	st := m.pkgs[name]
	status := m.statusLineLocked(name)
	words := strings.Fields(status)
	fields := map[string]string{
		"package": name, "binary:package": name, "version": st.pkg.Version,
		"status": status, "db:status-abbrev": m.statusAbbrevLocked(name),
		"db:status-want": words[0], "db:status-eflag": words[1], "db:status-status": words[2],
		"architecture": m.arch, "description": description(st.pkg), "binary:summary": description(st.pkg),
		"maintainer": "Ubuntu Developers <ubuntu-devel-discuss@lists.ubuntu.com>",
		"depends":    strings.Join(st.pkg.Depends, ", "), "priority": "optional", "section": "misc",
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		switch {
		case format[i] == '\\' && i+1 < len(format):
			i++
			switch format[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(format[i])
			}
		case format[i] == '$' && i+1 < len(format) && format[i+1] == '{':
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				b.WriteString(format[i:])
				i = len(format)
				continue
			}
			field := format[i+2 : i+end]
			width := ""
			if f, w, ok := strings.Cut(field, ";"); ok {
				field, width = f, w
			}
			v := fields[strings.ToLower(field)]
			if width != "" {
				var n int
				if _, err := fmt.Sscan(width, &n); err == nil {
					if n < 0 {
						v = fmt.Sprintf("%-*s", -n, v)
					} else {
						v = fmt.Sprintf("%*s", n, v)
					}
				}
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

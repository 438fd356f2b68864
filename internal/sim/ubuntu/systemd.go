package ubuntu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// ServiceState is what systemd knows about a unit, and how many jobs of
// each kind ran on it since [Install] (the boot of the image's units is
// not counted).
type ServiceState struct {
	// Known says the unit exists: registered by a package or
	// [Machine.AddUnit], or found as a unit file.
	Known bool
	// Enabled says the unit starts at boot (systemctl enable).
	Enabled bool
	// Active says the unit is running.
	Active bool
	// Failed says the last start failed (systemctl is-active prints
	// "failed").
	Failed bool
	// NeedDaemonReload says the unit file or a drop-in changed on disk
	// since systemd last loaded it: a `systemctl daemon-reload` is due.
	NeedDaemonReload bool
	// Starts counts the start jobs that ran on a stopped unit, successful
	// or not (start, enable --now, reload-or-restart of a stopped unit,
	// package installation). Starting a running unit is not a job.
	Starts int
	// Stops counts the stop jobs that ran on a running unit.
	Stops int
	// Restarts counts restart jobs (restart, try-restart of a running unit,
	// reload-or-restart of a running unit that cannot reload, package
	// upgrades).
	Restarts int
	// Reloads counts reload jobs (reload, reload-or-restart of a running
	// unit that can reload).
	Reloads int
}

// unitState is systemd's state of one unit.
type unitState struct {
	unit        Unit
	pkg         string // the package that ships it, "" for AddUnit or a unit file
	discovered  bool   // found as a file rather than registered
	enabled     bool
	active      bool
	failed      bool
	activeSince time.Time
	starts      int
	stops       int
	restarts    int
	reloads     int
	file        string // the unit file (first in the search path)
	loaded      string // fingerprint of the unit file and drop-ins when last loaded
	transient   string // ReportTransientState: the ActiveState `systemctl show` reports...
	transientN  int    // ...for this many more show calls
}

// unitDirs is systemd's unit search path, most important first.
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system"}

// unitName adds ".service" to a name without a unit suffix.
func unitName(name string) string {
	switch path.Ext(name) {
	case ".service", ".socket", ".target", ".timer", ".mount", ".path", ".slice", ".scope", ".device", ".swap", ".automount":
		return name
	}
	return name + ".service"
}

// Service returns the state of a unit ("docker" or "docker.service").
func (m *Machine) Service(name string) ServiceState {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.lookupUnitLocked(unitName(name))
	if u == nil {
		return ServiceState{}
	}
	return m.serviceStateLocked(u)
}

// Services returns the state of every known unit, by full name: the
// registered ones and those whose unit files are on disk.
func (m *Machine) Services() map[string]ServiceState {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, dir := range unitDirs {
		entries, _ := m.fs().ReadDir(dir)
		for _, e := range entries {
			if !e.IsDir() && unitName(e.Name()) == e.Name() {
				m.lookupUnitLocked(e.Name())
			}
		}
	}
	out := map[string]ServiceState{}
	for name, u := range m.units {
		out[name] = m.serviceStateLocked(u)
	}
	return out
}

// DaemonReloads returns how many times `systemctl daemon-reload` ran.
func (m *Machine) DaemonReloads() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.daemonReloads
}

func (m *Machine) serviceStateLocked(u *unitState) ServiceState {
	return ServiceState{
		Known: true, Enabled: u.enabled, Active: u.active, Failed: u.failed,
		NeedDaemonReload: m.fingerprintLocked(u) != u.loaded,
		Starts:           u.starts, Stops: u.stops, Restarts: u.restarts, Reloads: u.reloads,
	}
}

// transientSubStates are the ActiveState values [Machine.ReportTransientState]
// takes, with the SubState a service shows meanwhile (systemd's
// src/basic/unit-def.c, service_state_table: "start", "reload", "stop").
var transientSubStates = map[string]string{"activating": "start", "reloading": "reload", "deactivating": "stop"}

// ReportTransientState makes the next shows `systemctl show` calls on the
// unit report ActiveState=state, one of "activating", "reloading" and
// "deactivating": the states a unit passes through while a start, reload
// or stop job runs (org.freedesktop.systemd1(5), ActiveState: "activating
// indicates that the unit has previously been inactive but is currently in
// the process of entering an active state", "reloading indicates that the
// unit is active and currently reloading its configuration",
// "deactivating indicates that the unit is currently in the process of
// deactivation"), as a Type=notify daemon is activating until it reports
// READY=1. Only `systemctl show` reports it (is-active and status report
// the unit's settled state), and the unit's jobs behave as for its settled
// state: a start of a unit that runs does nothing, as systemd's start job
// is redundant for an active unit and merges into one already running
// (src/core/job.c, job_type_is_redundant and job_type_merge_and_collapse),
// so the process keeps the configuration it started with. A restart, stop
// or reload job that runs ends the transition.
func (m *Machine) ReportTransientState(name, state string, shows int) {
	if _, ok := transientSubStates[state]; !ok {
		panic("ubuntu: ReportTransientState: " + state + " is not activating, reloading or deactivating")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.lookupUnitLocked(unitName(name))
	if u == nil {
		panic("ubuntu: ReportTransientState: no unit " + name)
	}
	u.transient, u.transientN = state, shows
}

// AddUnit registers a systemd unit, disabled and inactive, and writes its
// unit file to /lib/systemd/system unless one exists. Packages register
// theirs when installed; a test registers one for a service that some
// other means put on the machine. Registering a known unit replaces its
// hooks and keeps its state.
func (m *Machine) AddUnit(u Unit) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addUnitLocked(u, "")
}

func (m *Machine) addUnitLocked(u Unit, pkg string) {
	name := unitName(u.Name)
	u.Name = name
	file := "/lib/systemd/system/" + name
	if !m.fs().Exists(file) {
		content := u.File
		if content == "" {
			content = fmt.Sprintf("[Unit]\nDescription=%s (simulated)\n\n[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n", strings.TrimSuffix(name, path.Ext(name)))
		}
		m.writeFile(file, content, 0o644)
	}
	us := m.units[name]
	if us == nil {
		us = &unitState{}
		m.units[name] = us
	}
	us.unit, us.pkg, us.discovered = u, pkg, false
	us.file = m.unitFileLocked(name)
	us.loaded = m.fingerprintLocked(us)
}

// unitFileLocked returns the unit file systemd would load for name, "" if
// there is none.
func (m *Machine) unitFileLocked(name string) string {
	for _, dir := range unitDirs {
		file := dir + "/" + name
		if fi, err := m.fs().Stat(file); err == nil && fi.Mode().IsRegular() {
			return file
		}
	}
	return ""
}

// fingerprintLocked is the content of a unit's file and drop-ins, to tell
// when they changed on disk.
func (m *Machine) fingerprintLocked(u *unitState) string {
	var b strings.Builder
	name := u.unit.Name
	file := m.unitFileLocked(name)
	data, _ := m.fs().ReadFile(file)
	fmt.Fprintf(&b, "%s\x00%s\x00", file, data)
	for _, dir := range unitDirs {
		entries, _ := m.fs().ReadDir(dir + "/" + name + ".d")
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".conf") {
				f := dir + "/" + name + ".d/" + e.Name()
				data, _ := m.fs().ReadFile(f)
				fmt.Fprintf(&b, "%s\x00%s\x00", f, data)
			}
		}
	}
	return b.String()
}

// lookupUnitLocked returns a registered unit, or one found as a unit file
// (a step may write its own service file), nil if there is none. A unit
// file that is a symbolic link to a unit file of another name is an
// alias of that unit (systemd.unit(5): "if a unit file is a symlink ...
// the name of the symlink target ... is an alias"; Debian's
// nfs-kernel-server.service links to nfs-server.service), so both names
// are one unit.
func (m *Machine) lookupUnitLocked(name string) *unitState {
	return m.lookupAliasLocked(name, 0)
}

func (m *Machine) lookupAliasLocked(name string, depth int) *unitState {
	if u := m.units[name]; u != nil {
		return u
	}
	file := m.unitFileLocked(name)
	if file == "" {
		return nil
	}
	if target, err := m.fs().Readlink(file); err == nil && depth < 8 {
		if base := path.Base(target); base != name && unitName(base) == base {
			if u := m.lookupAliasLocked(base, depth+1); u != nil {
				return u
			}
		}
	}
	u := &unitState{unit: Unit{Name: name}, discovered: true, file: file}
	u.loaded = m.fingerprintLocked(u)
	m.units[name] = u
	return u
}

// unitFileContentLocked returns the content of the unit's file.
func (m *Machine) unitFileContentLocked(u *unitState) string {
	data, _ := m.fs().ReadFile(m.unitFileLocked(u.unit.Name))
	return string(data)
}

// installTargets returns the targets a unit is wanted by ([Install]
// WantedBy=), and whether it has an [Install] section at all.
func installTargets(unitFile string) ([]string, bool) {
	var targets []string
	hasInstall := false
	section := ""
	for _, line := range strings.Split(unitFile, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
			if section == "[Install]" {
				hasInstall = true
			}
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && section == "[Install]" && (strings.TrimSpace(k) == "WantedBy" || strings.TrimSpace(k) == "RequiredBy") {
			targets = append(targets, strings.Fields(v)...)
		}
	}
	return targets, hasInstall
}

// unitDescription returns the Description= of a unit file.
func unitDescription(unitFile, name string) string {
	for _, line := range strings.Split(unitFile, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Description="); ok {
			return v
		}
	}
	return name
}

// canReload reports whether a unit supports reload: a registered unit
// with OnReload, or a unit file with ExecReload=.
func (m *Machine) canReloadLocked(u *unitState) bool {
	if u.unit.OnReload != nil {
		return true
	}
	return u.discovered && strings.Contains(m.unitFileContentLocked(u), "ExecReload=")
}

// Errors of unit jobs.
var (
	errUnitNotFound = errors.New("unit not found")
	errNotActive    = errors.New("unit not active")
	errNoReload     = errors.New("reload not applicable")
)

// jobError is a unit whose start (or stop, or reload) hook failed.
type jobError struct {
	unit string
	err  error
}

func (e *jobError) Error() string { return e.unit + ": " + e.err.Error() }
func (e *jobError) Unwrap() error { return e.err }

type jobKind int

const (
	jobStart jobKind = iota
	jobStop
	jobRestart
	jobTryRestart
	jobReload
	jobReloadOrRestart
	jobTryReloadOrRestart
)

// job runs a systemd job on a unit: its hooks run without the machine's
// lock, so that they may use the Machine.
func (m *Machine) job(name string, kind jobKind) error {
	name = unitName(name)
	m.mu.Lock()
	u := m.lookupUnitLocked(name)
	if u == nil {
		m.mu.Unlock()
		return errUnitNotFound
	}
	name = u.unit.Name // an alias's unit
	active, hooks := u.active, u.unit
	reloadable := m.canReloadLocked(u)
	m.mu.Unlock()

	switch kind {
	case jobTryRestart:
		if !active {
			return nil
		}
		kind = jobRestart
	case jobTryReloadOrRestart:
		if !active {
			return nil
		}
		kind = jobReloadOrRestart
	}
	if kind == jobReloadOrRestart {
		switch {
		case !active:
			kind = jobStart
		case reloadable:
			kind = jobReload
		default:
			kind = jobRestart
		}
	}

	update := func(fn func(u *unitState)) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if cur := m.units[name]; cur != nil {
			fn(cur)
		}
	}
	run := func(hook func(*Machine) error) error {
		if hook == nil {
			return nil
		}
		if err := hook(m); err != nil {
			return &jobError{unit: name, err: err}
		}
		return nil
	}
	start := func() error {
		err := run(hooks.OnStart)
		update(func(u *unitState) {
			u.active, u.failed = err == nil, err != nil
			u.activeSince = time.Now()
		})
		return err
	}
	switch kind {
	case jobStart:
		if active {
			return nil
		}
		update(func(u *unitState) { u.starts++ })
		return start()
	case jobStop:
		if !active {
			update(func(u *unitState) { u.failed = false })
			return nil
		}
		update(func(u *unitState) { u.stops++; u.transientN = 0 })
		err := run(hooks.OnStop)
		update(func(u *unitState) { u.active, u.failed = false, err != nil })
		return err
	case jobRestart:
		update(func(u *unitState) { u.restarts++; u.transientN = 0 })
		if active {
			if err := run(hooks.OnStop); err != nil {
				update(func(u *unitState) { u.active, u.failed = false, true })
				return err
			}
		}
		return start()
	case jobReload:
		if !active {
			return errNotActive
		}
		if !reloadable {
			return errNoReload
		}
		update(func(u *unitState) { u.reloads++; u.transientN = 0 })
		return run(hooks.OnReload)
	}
	return nil
}

// bootUnit enables and starts a unit of the image, as at boot, without
// counting a start.
func (m *Machine) bootUnit(name string) error {
	name = unitName(name)
	m.enableUnit(name, nil)
	m.mu.Lock()
	u := m.lookupUnitLocked(name)
	if u == nil {
		m.mu.Unlock()
		return errUnitNotFound
	}
	hook := u.unit.OnStart
	m.mu.Unlock()
	var err error
	if hook != nil {
		err = hook(m)
	}
	m.mu.Lock()
	u.active, u.failed, u.activeSince = err == nil, err != nil, time.Now()
	m.mu.Unlock()
	return err
}

// enableUnit enables a unit and links it into the .wants directories of
// its targets, reporting each link as systemctl does. It returns false for
// a static unit (no [Install] section), which cannot be enabled, and an
// error for an unknown unit.
func (m *Machine) enableUnit(name string, say func(string)) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.lookupUnitLocked(unitName(name))
	if u == nil {
		return false, errUnitNotFound
	}
	targets, ok := installTargets(m.unitFileContentLocked(u))
	if !ok {
		return false, nil
	}
	if u.enabled {
		return true, nil
	}
	u.enabled = true
	file := m.unitFileLocked(u.unit.Name)
	for _, t := range targets {
		link := "/etc/systemd/system/" + t + ".wants/" + u.unit.Name
		if !m.fs().Exists(link) {
			m.fs().MkdirAll(path.Dir(link), 0o755)
			m.fs().Symlink(file, link)
			if say != nil {
				say(fmt.Sprintf("Created symlink %s → %s.", link, file))
			}
		}
	}
	return true, nil
}

// disableUnit disables a unit and removes its .wants links.
func (m *Machine) disableUnit(name string, say func(string)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.lookupUnitLocked(unitName(name))
	if u == nil {
		return errUnitNotFound
	}
	u.enabled = false
	wants, _ := m.fs().ReadDir("/etc/systemd/system")
	for _, w := range wants {
		if !strings.HasSuffix(w.Name(), ".wants") {
			continue
		}
		link := "/etc/systemd/system/" + w.Name() + "/" + u.unit.Name
		if fi, err := m.fs().Lstat(link); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			m.fs().Remove(link)
			if say != nil {
				say("Removed " + link + ".")
			}
		}
	}
	return nil
}

// daemonReload reloads every unit's configuration from disk.
func (m *Machine) daemonReload() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.daemonReloads++
	for name, u := range m.units {
		if u.discovered && m.unitFileLocked(name) == "" && !u.active {
			delete(m.units, name)
			continue
		}
		u.file = m.unitFileLocked(name)
		u.loaded = m.fingerprintLocked(u)
	}
}

// --- systemctl ------------------------------------------------------------

// systemctlTool: systemctl [OPTIONS] VERB [UNIT...], for the verbs a
// deployment uses: start, stop, restart, try-restart, reload,
// reload-or-restart, try-reload-or-restart, force-reload, enable and
// disable (with --now), is-active, is-enabled, is-failed, status, show,
// reset-failed and daemon-reload. Other verbs fail loudly.
func systemctlTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{short: "qp:laf", long: []string{"quiet", "property=", "value", "now", "no-pager", "no-block", "no-legend", "no-ask-password", "system", "full", "all", "force", "plain"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	if len(c.Operands) == 0 {
		return notModelled(p, "systemctl without a verb (list-units)")
	}
	return m.systemctl(p, c, c.Operands[0], c.Operands[1:])
}

func (m *Machine) systemctl(p *sshtest.Process, c cmdline, verb string, args []string) int {
	quiet := c.Has("-q", "--quiet")
	root := isRoot(p)
	needUnits := func() bool {
		if len(args) == 0 {
			p.Errorf("Too few arguments.")
			return false
		}
		return true
	}
	var jobs = map[string]jobKind{
		"start": jobStart, "stop": jobStop, "restart": jobRestart, "try-restart": jobTryRestart,
		"condrestart": jobTryRestart, "reload": jobReload, "reload-or-restart": jobReloadOrRestart,
		"try-reload-or-restart": jobTryReloadOrRestart, "force-reload": jobTryReloadOrRestart,
	}
	if kind, ok := jobs[verb]; ok {
		if !needUnits() {
			return 1
		}
		code := 0
		for _, a := range args {
			name := unitName(a)
			m.mu.Lock()
			u := m.lookupUnitLocked(name)
			stale := u != nil && m.fingerprintLocked(u) != u.loaded
			m.mu.Unlock()
			verbWord := strings.ReplaceAll(verb, "condrestart", "try-restart")
			switch {
			case u == nil && kind == jobStop:
				errf(p, "Failed to stop %s: Unit %s not loaded.", name, name)
				code = 5
				continue
			case u == nil:
				errf(p, "Failed to %s %s: Unit %s not found.", verbWord, name, name)
				code = 5
				continue
			case !root:
				errf(p, "Failed to %s %s: Interactive authentication required.", verbWord, name)
				errf(p, "See system logs and 'systemctl status %s' for details.", name)
				code = 1
				continue
			}
			if stale && !quiet {
				errf(p, "Warning: The unit file, source configuration file or drop-ins of %s changed on disk. Run 'systemctl daemon-reload' to reload units.", name)
			}
			var je *jobError
			switch err := m.job(name, kind); {
			case err == nil:
			case errors.Is(err, errNotActive):
				errf(p, "%s is not active, cannot reload.", name)
				code = 1
			case errors.Is(err, errNoReload):
				errf(p, "Failed to reload %s: Job type reload is not applicable for unit %s.", name, name)
				code = 1
			case errors.As(err, &je):
				errf(p, "Job for %s failed because the control process exited with error code.", name)
				errf(p, "See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.", name, name)
				code = 1
			default:
				errf(p, "Failed to %s %s: %v", verbWord, name, err)
				code = 1
			}
		}
		return code
	}
	switch verb {
	case "enable", "disable", "reenable":
		if !needUnits() {
			return 1
		}
		if !root {
			errf(p, "Failed to %s unit: Interactive authentication required.", verb)
			return 1
		}
		say := func(s string) {
			if !quiet {
				errf(p, "%s", s)
			}
		}
		for _, a := range args {
			name := unitName(a)
			var err error
			static := false
			if verb != "enable" {
				err = m.disableUnit(name, say)
			}
			if err == nil && verb != "disable" {
				var enabled bool
				enabled, err = m.enableUnit(name, say)
				static = err == nil && !enabled
			}
			if errors.Is(err, errUnitNotFound) {
				errf(p, "Failed to %s unit: Unit file %s does not exist.", verb, name)
				return 1
			}
			if static && !quiet {
				errf(p, "The unit files have no installation config (WantedBy=, RequiredBy=, Also=,\nAlias= settings in the [Install] section, and DefaultInstance= for template\nunits). This means they are not meant to be enabled or disabled using systemctl.\n ")
			}
		}
		if c.Has("--now") {
			kind := jobStart
			switch verb {
			case "disable":
				kind = jobStop
			case "reenable":
				kind = jobRestart
			}
			for _, a := range args {
				if err := m.job(a, kind); err != nil {
					name := unitName(a)
					errf(p, "Job for %s failed because the control process exited with error code.", name)
					errf(p, "See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.", name, name)
					return 1
				}
			}
		}
		return 0
	case "is-active", "is-failed":
		if !needUnits() {
			return 1
		}
		code := 3
		if verb == "is-failed" {
			code = 1
		}
		for _, a := range args {
			st := m.Service(a)
			word := "inactive"
			switch {
			case st.Active:
				word = "active"
			case st.Failed:
				word = "failed"
			}
			if !quiet {
				outf(p, "%s", word)
			}
			if (verb == "is-active" && word == "active") || (verb == "is-failed" && word == "failed") {
				code = 0
			}
		}
		return code
	case "is-enabled":
		if !needUnits() {
			return 1
		}
		code := 1
		for _, a := range args {
			name := unitName(a)
			m.mu.Lock()
			u := m.lookupUnitLocked(name)
			var word string
			if u != nil {
				word = "disabled"
				if _, ok := installTargets(m.unitFileContentLocked(u)); !ok {
					word = "static"
				} else if u.enabled {
					word = "enabled"
				}
			}
			m.mu.Unlock()
			if u == nil {
				errf(p, "Failed to get unit file state for %s: No such file or directory", name)
				continue
			}
			if !quiet {
				outf(p, "%s", word)
			}
			if word != "disabled" {
				code = 0
			}
		}
		return code
	case "status":
		if !needUnits() {
			return notModelled(p, "systemctl status without a unit")
		}
		code := 0
		for i, a := range args {
			if i > 0 {
				outf(p, "")
			}
			if c := m.printStatus(p, unitName(a)); c > code {
				code = c
			}
		}
		return code
	case "show":
		if !needUnits() {
			return notModelled(p, "systemctl show without a unit")
		}
		for i, a := range args {
			if i > 0 {
				outf(p, "")
			}
			m.printShow(p, c, unitName(a))
		}
		return 0
	case "daemon-reload", "daemon-reexec":
		if !root {
			errf(p, "Failed to reload daemon: Interactive authentication required.")
			return 1
		}
		m.daemonReload()
		return 0
	case "reset-failed":
		if !root {
			errf(p, "Failed to reset failed state of unit: Interactive authentication required.")
			return 1
		}
		m.mu.Lock()
		for name, u := range m.units {
			if len(args) == 0 || slices.ContainsFunc(args, func(a string) bool { return unitName(a) == name }) {
				u.failed = false
			}
		}
		m.mu.Unlock()
		return 0
	}
	return notModelled(p, "systemctl %s", verb)
}

// printStatus prints a short `systemctl status` and returns its exit
// status: 0 active, 3 not active, 4 no such unit.
func (m *Machine) printStatus(p *sshtest.Process, name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.lookupUnitLocked(name)
	if u == nil {
		errf(p, "Unit %s could not be found.", name)
		return 4
	}
	content := m.unitFileContentLocked(u)
	state := "disabled"
	if _, ok := installTargets(content); !ok {
		state = "static"
	} else if u.enabled {
		state = "enabled"
	}
	dot := "○"
	active := "inactive (dead)"
	switch {
	case u.active:
		dot = "●"
		active = "active (running) since " + since(u.activeSince)
	case u.failed:
		dot = "×"
		active = "failed (Result: exit-code) since " + since(u.activeSince)
	}
	outf(p, "%s %s - %s", dot, name, unitDescription(content, name))
	outf(p, "     Loaded: loaded (%s; %s; vendor preset: enabled)", m.unitFileLocked(name), state)
	outf(p, "     Active: %s", active)
	if m.fingerprintLocked(u) != u.loaded {
		outf(p, "")
		outf(p, "Warning: The unit file, source configuration file or drop-ins of %s changed on disk. Run 'systemctl daemon-reload' to reload units.", name)
	}
	if u.active {
		return 0
	}
	return 3
}

// since formats a time as systemctl status does: "Mon 2024-01-01 10:00:00
// UTC; 5s ago".
func since(t time.Time) string {
	secs := int(time.Since(t) / time.Second)
	var ago string
	switch {
	case secs < 60:
		ago = fmt.Sprintf("%ds", secs)
	case secs < 3600:
		ago = fmt.Sprintf("%dmin %ds", secs/60, secs%60)
	default:
		ago = fmt.Sprintf("%dh %dmin", secs/3600, secs%3600/60)
	}
	return t.UTC().Format("Mon 2006-01-02 15:04:05 MST") + "; " + ago + " ago"
}

// printShow prints `systemctl show` properties as KEY=value (values only
// with --value).
func (m *Machine) printShow(p *sshtest.Process, c cmdline, name string) {
	m.mu.Lock()
	u := m.lookupUnitLocked(name)
	props := map[string]string{
		"Id": name, "Names": name, "LoadState": "not-found", "ActiveState": "inactive",
		"SubState": "dead", "UnitFileState": "", "NeedDaemonReload": "no", "Result": "success",
		"FragmentPath": "", "Description": name, "MainPID": "0", "NRestarts": "0",
	}
	if u != nil {
		content := m.unitFileContentLocked(u)
		props["LoadState"] = "loaded"
		props["FragmentPath"] = m.unitFileLocked(name)
		props["Description"] = unitDescription(content, name)
		props["UnitFileState"] = "disabled"
		if _, ok := installTargets(content); !ok {
			props["UnitFileState"] = "static"
		} else if u.enabled {
			props["UnitFileState"] = "enabled"
		}
		switch {
		case u.active:
			props["ActiveState"], props["SubState"] = "active", "running"
			props["MainPID"] = fmt.Sprint(1000 + len(name)*7)
		case u.failed:
			props["ActiveState"], props["SubState"], props["Result"] = "failed", "failed", "exit-code"
		}
		if m.fingerprintLocked(u) != u.loaded {
			props["NeedDaemonReload"] = "yes"
		}
		if u.transientN > 0 {
			u.transientN--
			props["ActiveState"], props["SubState"] = u.transient, transientSubStates[u.transient]
		}
	}
	m.mu.Unlock()
	var want []string
	for _, v := range c.Values("-p", "--property") {
		want = append(want, strings.Split(v, ",")...)
	}
	if len(want) == 0 {
		want = slices.Sorted(maps.Keys(props))
	}
	for _, k := range want {
		v, ok := props[k]
		if !ok {
			continue
		}
		if c.Has("--value") {
			outf(p, "%s", v)
		} else {
			outf(p, "%s=%s", k, v)
		}
	}
}

// serviceTool: service NAME start|stop|restart|reload|force-reload|status,
// through systemctl as on Ubuntu.
func serviceTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	args := p.Args[1:]
	if len(args) != 2 || strings.HasPrefix(args[0], "-") {
		return notModelled(p, "service %s", strings.Join(args, " "))
	}
	switch args[1] {
	case "start", "stop", "restart", "reload", "force-reload", "status", "try-restart":
		return m.systemctl(p, cmdline{}, args[1], []string{args[0]})
	}
	return notModelled(p, "service %s %s", args[0], args[1])
}

// --- hostnamectl ----------------------------------------------------------

// hostnamectlTool: hostnamectl [status] [--static|--transient|--pretty],
// hostnamectl set-hostname NAME, hostnamectl hostname [NAME]. Setting the
// name writes /etc/hostname, which `hostname` reads.
func hostnamectlTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	c, code, ok := optSpec{long: []string{"static", "transient", "pretty", "no-ask-password"}}.parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	verb := "status"
	args := c.Operands
	if len(args) > 0 {
		verb, args = args[0], args[1:]
	}
	switch {
	case verb == "status" && len(args) == 0, verb == "hostname" && len(args) == 0:
		if verb == "hostname" || c.Has("--static", "--transient", "--pretty") {
			outf(p, "%s", m.Hostname())
			return 0
		}
		kernel := "Linux 5.15.0-fake"
		outf(p, " Static hostname: %s", m.Hostname())
		outf(p, "       Icon name: computer-vm")
		outf(p, "         Chassis: vm")
		outf(p, "  Virtualization: kvm")
		outf(p, "Operating System: Ubuntu 22.04.4 LTS")
		outf(p, "          Kernel: %s", kernel)
		outf(p, "    Architecture: %s", map[string]string{"amd64": "x86-64", "arm64": "arm64"}[m.arch])
		return 0
	case (verb == "set-hostname" || verb == "hostname") && len(args) == 1:
		name := args[0]
		if !isRoot(p) {
			errf(p, "Could not set static hostname: Interactive authentication required.")
			return 1
		}
		if !validHostname(name) {
			errf(p, "Invalid static hostname '%s'", name)
			return 1
		}
		if err := m.writeFile("/etc/hostname", name+"\n", 0o644); err != nil {
			return p.Fail(1, "Could not set static hostname: %s", sshtest.ErrMessage(err))
		}
		return 0
	}
	return notModelled(p, "hostnamectl %s", strings.Join(c.Operands, " "))
}

// validHostname checks a static host name as systemd does: labels of
// letters, digits and hyphens, separated by dots, at most 64 characters.
func validHostname(name string) bool {
	if name == "" || len(name) > 64 || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

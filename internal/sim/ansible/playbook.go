package ansible

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	yaml "go.yaml.in/yaml/v2"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Network is what the simulated Ansible server reaches the inventory's
// hosts through: the simulated cloud ([sim.Cloud] implements it). Dial
// connects to an address (port 22 for SSH) as the cloud's network
// delivers it, refusing addresses no running VM answers at; Machine is
// the machine answering at an address (nil when none), on which the
// package installations of the playbooks act.
type Network interface {
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
	Machine(ip string) *ubuntu.Machine
}

// Task results.
const (
	statusOK = iota
	statusChanged
	statusFailed
	statusSkipped
	statusUnreachable
)

// result is one task's result for one host.
type result struct {
	status  int
	data    map[string]any
	verbose bool // _ansible_verbose_always: printed with the result
	ignored bool
	items   []item
}

type item struct {
	label   string
	changed bool
}

func okResult() result { return result{status: statusOK, data: map[string]any{"changed": false}} }
func changedResult() result {
	return result{status: statusChanged, data: map[string]any{"changed": true}}
}
func skipResult() result {
	return result{status: statusSkipped, data: map[string]any{"changed": false, "skip_reason": "Conditional result was False"}}
}
func statusOf(changed bool) result {
	if changed {
		return changedResult()
	}
	return okResult()
}

// failResult is a failed module or action ("fail" module: changed false
// and msg).
func failResult(msg string) result {
	return result{status: statusFailed, data: map[string]any{"changed": false, "msg": msg}}
}

// assertResult is the assert action's result (lib/ansible/plugins/
// action/assert.py): "All assertions passed", or the first failed
// assertion with evaluated_to false and msg (default "Assertion
// failed"); always verbose.
func assertResult(passed bool, assertion, msg string) result {
	if passed {
		return result{status: statusOK, verbose: true, data: map[string]any{"changed": false, "msg": "All assertions passed"}}
	}
	if msg == "" {
		msg = "Assertion failed"
	}
	return result{status: statusFailed, verbose: true, data: map[string]any{"assertion": assertion, "changed": false, "evaluated_to": false, "msg": msg}}
}

// connResult turns a connection error into the task's result: an
// unreachable host ({"changed": false, "msg": ..., "unreachable": true})
// or a failed task ({"msg": ...}).
func connResult(err error) result {
	if ce, ok := err.(*connError); ok {
		if ce.unreachable {
			return result{status: statusUnreachable, data: map[string]any{"changed": false, "msg": ce.msg, "unreachable": true}}
		}
		return result{status: statusFailed, data: map[string]any{"msg": ce.msg}}
	}
	return result{status: statusFailed, data: map[string]any{"msg": err.Error()}}
}

// commandResult is the command module's result (lib/ansible/modules/
// command.py): changed true, the argv, rc, stdout and stderr with their
// lines, and "non-zero return code" when rc is not 0.
func commandResult(cmd string, res cmdResult, start, end time.Time) result {
	r := result{status: statusChanged, data: map[string]any{
		"changed": true, "cmd": strings.Fields(cmd), "rc": res.rc,
		"stdout": strings.TrimRight(res.stdout, "\n"), "stderr": strings.TrimRight(res.stderr, "\n"),
		"stdout_lines": lines(res.stdout), "stderr_lines": lines(res.stderr),
		"start": start.Format("2006-01-02 15:04:05.000000"), "end": end.Format("2006-01-02 15:04:05.000000"),
		"delta": fmt.Sprintf("%d:%02d:%02d.%06d", int(end.Sub(start).Hours()), int(end.Sub(start).Minutes())%60, int(end.Sub(start).Seconds())%60, end.Sub(start).Microseconds()%1000000),
	}}
	if res.rc != 0 {
		r.status = statusFailed
		r.data["msg"] = "non-zero return code"
	}
	return r
}

func lines(s string) []any {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return []any{}
	}
	var out []any
	for _, l := range strings.Split(s, "\n") {
		out = append(out, l)
	}
	return out
}

// run is one ansible-playbook invocation.
type run struct {
	ctx     context.Context
	p       *sshtest.Process
	server  *ubuntu.Machine
	env     Network
	cfg     config
	disp    *display
	inv     *inventory
	extra   map[string]any
	limit   []string
	limited bool
	core    string // ansible-core version
	ks      kubespray
	become  bool
	now     func() time.Time

	stats       stats
	failed      map[string]bool
	unreachable map[string]bool
	conns       map[string]*hostConn
	facts       map[string]map[string]any // cached or gathered this run
	cacheDir    string                    // jsonfile cache, "" for memory
	state       map[string]string         // values tasks register (token, certificate key)
	ended       bool
}

// hostVars are a host's variables with the extra vars over them.
func (r *run) hostVars(host string) map[string]any {
	v := map[string]any{}
	if r.inv != nil && slices.Contains(r.inv.hosts, host) {
		v = r.inv.vars(host)
	}
	for k, x := range r.extra {
		v[k] = x
	}
	return v
}

// playbookOptions are ansible-playbook's options the simulation models
// (lib/ansible/cli/arguments/option_helpers.py).
var playbookOptions = sshtest.OptionSpec{
	Short:    "i:be:l:u:vt:f:",
	Long:     []string{"inventory=", "inventory-file=", "become", "become-user=", "become-method=", "extra-vars=", "limit=", "user=", "version", "verbose", "tags=", "skip-tags=", "forks=", "private-key="},
	Modeller: "internal/sim/ansible",
}

// PlaybookTool is ansible-playbook of ansible-core version core (the
// version it reports and kubespray's version check sees) on the
// simulated Ansible server, reaching hosts through net. See the package
// documentation for what it models.
func PlaybookTool(net Network, core string) ubuntu.Tool {
	return func(ctx context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
		c, code, ok := playbookOptions.Parse(p, p.Args[1:], false)
		if !ok {
			return code
		}
		cfg := loadConfig(p)
		if c.Has("--version") {
			printVersion(p, "ansible-playbook", core, cfg)
			return 0
		}
		if cb := cfg.stdoutCallback(); cb != "default" {
			// Built-in stdout callbacks of ansible-core: default, junit,
			// minimal, oneline, tree; json is ansible.posix's.
			if !slices.Contains([]string{"minimal", "oneline", "tree", "junit"}, cb) {
				fmt.Fprintf(p.Stderr, "ERROR! Invalid callback for stdout specified: %s\n", cb)
				return 1
			}
			return p.Fail(2, "stdout callback %s is not modelled by internal/sim/ansible (only default)", cb)
		}
		if len(c.Operands) == 0 {
			fmt.Fprintln(p.Stderr, "usage: ansible-playbook [-h] [--version] [-v] [--private-key PRIVATE_KEY_FILE] ... playbook [playbook ...]")
			fmt.Fprintln(p.Stderr, "ansible-playbook: error: the following arguments are required: playbook")
			return 2
		}
		if len(c.Operands) > 1 {
			return p.Fail(2, "several playbooks in one run are not modelled by internal/sim/ansible")
		}
		r := &run{
			ctx: ctx, p: p, server: m, env: net, cfg: cfg, core: core, now: time.Now,
			extra: map[string]any{}, failed: map[string]bool{}, unreachable: map[string]bool{},
			conns: map[string]*hostConn{}, facts: map[string]map[string]any{}, state: map[string]string{},
			become: c.Has("-b", "--become"),
		}
		defer func() {
			for _, hc := range r.conns {
				hc.close()
			}
		}()
		if u, ok := c.Value("--become-user"); ok && u != "root" {
			return p.Fail(2, "--become-user %s is not modelled by internal/sim/ansible (root only)", u)
		}
		for _, e := range c.Values("-e", "--extra-vars") {
			vars, err := parseExtraVars(p, e)
			if err != nil {
				fmt.Fprintf(p.Stderr, "ERROR! %v\n", err)
				return 1
			}
			for k, v := range vars {
				r.extra[k] = v
			}
		}
		r.disp = &display{out: p.Stdout, errOut: p.Stderr, lazyBanners: !cfg.displaySkippedHosts()}
		if slices.ContainsFunc(cfg.callbacksEnabled(), func(s string) bool {
			return s == "profile_tasks" || s == "ansible.posix.profile_tasks"
		}) {
			r.disp.profile = newProfileTasks(r.now)
		}
		// The playbook: found relative to the working directory.
		pb := c.Operands[0]
		abs := p.FS.Abs(pb)
		if _, err := p.FS.Stat(abs); err != nil {
			fmt.Fprintf(p.Stderr, "ERROR! the playbook: %s could not be found\n", pb)
			return 1
		}
		ks, err := detectKubespray(p, abs)
		if err != nil {
			fmt.Fprintf(p.Stderr, "ERROR! %v\n", err)
			return 1
		}
		if ks.playbook == "" {
			return p.Fail(2, "%s: only kubespray's cluster.yml, scale.yml, remove-node.yml and facts.yml are modelled by internal/sim/ansible", pb)
		}
		r.ks = ks
		// The inventory.
		invs := c.Values("-i", "--inventory", "--inventory-file")
		if len(invs) == 0 {
			invs = []string{r.cfg.get([]string{"ANSIBLE_INVENTORY"}, [][2]string{{"defaults", "inventory"}}, "/etc/ansible/hosts")}
		}
		if len(invs) > 1 {
			return p.Fail(2, "several inventories are not modelled by internal/sim/ansible")
		}
		inv, err := loadInventory(p, expandHome(invs[0], homeOf(p)))
		if err != nil {
			// lib/ansible/inventory/manager.py parse_sources.
			fmt.Fprintf(p.Stderr, "[WARNING]: Unable to parse %s as an inventory source\n", p.FS.Abs(invs[0]))
			if cfg.inventoryUnparsedFailed() {
				fmt.Fprintln(p.Stderr, "ERROR! No inventory was parsed, please check your configuration and options.")
				return 1
			}
			fmt.Fprintln(p.Stderr, "[WARNING]: No inventory was parsed, only implicit localhost is available")
			fmt.Fprintln(p.Stderr, wrap("[WARNING]: provided hosts list is empty, only localhost is available. Note that the implicit localhost does not match 'all'"))
			inv = &inventory{hostVars: map[string]map[string]any{}, groups: map[string]*group{}, groupVarFiles: map[string]map[string]any{}, hostVarFiles: map[string]map[string]any{}}
			inv.group("all")
			inv.group("ungrouped")
		}
		r.inv = inv
		if l, ok := c.Value("-l", "--limit"); ok {
			r.limited = true
			hosts, unmatched := inv.hostPattern(l)
			for _, u := range unmatched {
				r.disp.warning("Could not match supplied host pattern, ignoring: " + u)
			}
			if len(hosts) == 0 {
				fmt.Fprintln(p.Stderr, "ERROR! Specified inventory, host pattern and/or --limit leaves us with no hosts to target.")
				return 1
			}
			r.limit = hosts
		}
		plugin, dir := cfg.factCache()
		if plugin == "jsonfile" && dir != "" {
			r.cacheDir = expandHome(dir, homeOf(p))
			r.loadFactCache()
		}
		r.runPlaybook()
		r.disp.recap(&r.stats)
		switch {
		case len(r.unreachable) > 0:
			return 4
		case len(r.failed) > 0:
			return 2
		}
		return 0
	}
}

// printVersion is `ansible-playbook --version` as ansible-core 2.14+
// prints it (lib/ansible/cli/__init__.py version_info, checked against
// Debian 12's ansible-playbook 2.14.18).
func printVersion(p *sshtest.Process, prog, core string, cfg config) {
	cf := cfg.file
	if cf == "" {
		cf = "None"
	}
	home := homeOf(p)
	if compareVersions(core, "2.11.0") < 0 {
		// ansible-base 2.10 prints "ansible-playbook 2.10.17".
		fmt.Fprintf(p.Stdout, "%s %s\n", prog, core)
	} else {
		fmt.Fprintf(p.Stdout, "%s [core %s]\n", prog, core)
	}
	fmt.Fprintf(p.Stdout, "  config file = %s\n", cf)
	fmt.Fprintf(p.Stdout, "  configured module search path = ['%s/.ansible/plugins/modules', '/usr/share/ansible/plugins/modules']\n", home)
	fmt.Fprintf(p.Stdout, "  ansible python module location = /usr/lib/python3/dist-packages/ansible\n")
	fmt.Fprintf(p.Stdout, "  ansible collection location = %s/.ansible/collections:/usr/share/ansible/collections\n", home)
	fmt.Fprintf(p.Stdout, "  executable location = /usr/bin/%s\n", prog)
	fmt.Fprintf(p.Stdout, "  python version = 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (/usr/bin/python3)\n")
	fmt.Fprintf(p.Stdout, "  jinja version = 3.0.3\n")
	fmt.Fprintf(p.Stdout, "  libyaml = True\n")
}

// parseExtraVars is load_extra_vars: @FILE (YAML or JSON), a YAML/JSON
// mapping, or key=value pairs (parse_kv: values are strings).
func parseExtraVars(p *sshtest.Process, s string) (map[string]any, error) {
	if f, ok := strings.CutPrefix(s, "@"); ok {
		data, err := p.FS.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("the file_name '%s' does not exist, or is not readable", p.FS.Abs(f))
		}
		s = string(data)
	}
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(s, "---") || strings.Contains(t, "\n") {
		var m yaml.MapSlice
		if err := yaml.Unmarshal([]byte(t), &m); err != nil {
			var j map[string]any
			if err := json.Unmarshal([]byte(t), &j); err != nil {
				return nil, fmt.Errorf("invalid extra vars: %s", s)
			}
			return j, nil
		}
		out, _ := plain(m).(map[string]any)
		return out, nil
	}
	out := map[string]any{}
	for _, kv := range splitArgs(t) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, ansibleMsg(fmt.Sprintf("Invalid extra vars data supplied. '%s' could not be made into a dictionary", s))
		}
		out[k] = v
	}
	return out, nil
}

// splitArgs splits key=value pairs on spaces, honouring quotes.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quote := rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote = r
		case quote == 0 && r == ' ':
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// task is one task of a play.
type task struct {
	name    string
	runOnce bool
	// delegate names the host a delegated task runs on, for the result
	// label "[H -> D]".
	delegate func() string
	fn       func(host string) result
}

// play runs a play on hosts as the linear strategy does (lib/ansible/
// plugins/strategy/linear.py): each task on every host still in the
// play, in inventory order; failed and unreachable hosts leave the run;
// a failure in a run_once task or in a play with any_errors_fatal fails
// every host and ends the playbook ("NO MORE HOSTS LEFT"); a play whose
// hosts all failed ends the playbook too.
func (r *run) play(name string, hosts []string, anyErrorsFatal bool, tasks ...task) {
	if r.ended {
		return
	}
	r.disp.playStart(name)
	if r.limited && !slices.Contains(hosts, "localhost") {
		hosts = slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return !slices.Contains(r.limit, h) })
	}
	if len(hosts) == 0 {
		r.disp.noHostsMatched()
		return
	}
	live := slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return r.failed[h] || r.unreachable[h] })
	for _, t := range tasks {
		if len(live) == 0 || r.ended {
			break
		}
		if r.ctx.Err() != nil {
			r.ended = true
			return
		}
		r.disp.taskStart(t.name)
		if f := r.faults(); f != nil {
			if err := f.hangAt(r.ctx, t.name); err != nil {
				r.ended = true
				return
			}
		}
		targets := live
		if t.runOnce {
			targets = live[:1]
		}
		var bad bool
		for _, h := range targets {
			res := t.fn(h)
			if f := r.faults(); f != nil {
				if msg, ok := f.taskFailure(h, t.name); ok && res.status != statusSkipped {
					res = failResult(msg)
				}
			}
			if r.ctx.Err() != nil {
				r.ended = true
				return
			}
			d := ""
			if t.delegate != nil && res.status != statusSkipped {
				d = t.delegate()
			}
			r.disp.result(h, d, res)
			r.stats.add(h, res)
			switch {
			case res.status == statusFailed && !res.ignored:
				r.failed[h] = true
				bad = true
			case res.status == statusUnreachable:
				r.unreachable[h] = true
				bad = true
			}
		}
		if bad && (anyErrorsFatal || t.runOnce) {
			for _, h := range live {
				if !r.unreachable[h] {
					r.failed[h] = true
				}
			}
			r.disp.noHostsRemaining()
			r.ended = true
			return
		}
		live = slices.DeleteFunc(live, func(h string) bool { return r.failed[h] || r.unreachable[h] })
	}
	if len(live) == 0 {
		// playbook_executor.py: a batch whose hosts all failed breaks
		// the run.
		r.ended = true
	}
}

// group returns a group's hosts (none when the group does not exist).
func (r *run) group(name string) []string {
	if _, ok := r.inv.groups[name]; !ok {
		return nil
	}
	return r.inv.members(name)
}

// pattern resolves a play's hosts pattern.
func (r *run) pattern(p string) []string {
	hs, _ := r.inv.hostPattern(p)
	return hs
}

// union returns the hosts of several groups in inventory order.
func (r *run) union(groups ...string) []string {
	set := map[string]bool{}
	for _, g := range groups {
		for _, h := range r.group(g) {
			set[h] = true
		}
	}
	var out []string
	for _, h := range r.inv.hosts {
		if set[h] {
			out = append(out, h)
		}
	}
	return out
}

// loadFactCache reads the jsonfile fact cache: one file per host named
// after it, valid for fact_caching_timeout seconds (lib/ansible/plugins/
// cache/__init__.py BaseFileCacheModule; default timeout 86400).
func (r *run) loadFactCache() {
	timeout := 86400
	fmt.Sscanf(r.cfg.get([]string{"ANSIBLE_CACHE_PLUGIN_TIMEOUT"}, [][2]string{{"defaults", "fact_caching_timeout"}}, "86400"), "%d", &timeout)
	for _, h := range r.inv.hosts {
		f := path.Join(r.cacheDir, h)
		fi, err := r.p.FS.Stat(f)
		if err != nil {
			continue
		}
		if timeout > 0 && r.now().Sub(fi.ModTime()) > time.Duration(timeout)*time.Second {
			continue
		}
		data, err := r.p.FS.ReadFile(f)
		if err != nil {
			continue
		}
		var facts map[string]any
		if json.Unmarshal(data, &facts) == nil {
			r.facts[h] = facts
		}
	}
}

// saveFacts stores a host's facts in the run and, with the jsonfile
// cache, in its file.
func (r *run) saveFacts(host string, facts map[string]any) {
	r.facts[host] = facts
	if r.cacheDir == "" {
		return
	}
	_ = r.p.FS.MkdirAll(r.cacheDir, 0o755)
	_ = r.p.FS.WriteFile(path.Join(r.cacheDir, host), jsonVars(facts), 0o644)
}

// Faults are the failures a test injects into the Ansible server's
// playbook runs. Get them with [FaultsOf].
type Faults struct {
	mu     sync.Mutex
	tasks  map[[2]string]string
	down   map[string]bool
	hangs  map[string]bool
	hangCh chan struct{}
}

type faultsKey struct{}

// FaultsOf returns the fault knobs of the Ansible server machine m.
func FaultsOf(m *ubuntu.Machine) *Faults {
	return m.Extension(faultsKey{}, func() any {
		return &Faults{tasks: map[[2]string]string{}, down: map[string]bool{}, hangs: map[string]bool{}}
	}).(*Faults)
}

func (r *run) faults() *Faults {
	if r.server == nil {
		return nil
	}
	return FaultsOf(r.server)
}

// FailTask makes the task named task (as its banner shows it,
// "kubernetes/kubeadm : Join to cluster if needed") fail on inventory
// host host with msg, as a module failing there would ({"changed":
// false, "msg": msg}), in every run until cleared with msg "".
func (f *Faults) FailTask(host, task, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if msg == "" {
		delete(f.tasks, [2]string{host, task})
		return
	}
	f.tasks[[2]string{host, task}] = msg
}

// Unreachable makes inventory host host unreachable from the Ansible
// server (ssh times out) while down is true, whatever its VM does.
func (f *Faults) Unreachable(host string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[host] = down
}

// HangAt makes a playbook run stop at the start of the task named task
// (after printing its banner) until the run is cancelled, as a task
// waiting on a host that never answers does. The channel it returns is
// closed when a run reaches the task.
func (f *Faults) HangAt(task string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hangs[task] = true
	f.hangCh = make(chan struct{})
	return f.hangCh
}

func (f *Faults) taskFailure(host, task string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	msg, ok := f.tasks[[2]string{host, task}]
	return msg, ok
}

func (f *Faults) unreachable(host string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down[host]
}

func (f *Faults) hangAt(ctx context.Context, task string) error {
	f.mu.Lock()
	hang := f.hangs[task]
	f.mu.Unlock()
	if !hang {
		return nil
	}
	f.mu.Lock()
	if f.hangCh != nil {
		close(f.hangCh)
		f.hangCh = nil
	}
	f.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}

package ansible

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v2"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// inventory is a parsed YAML inventory (ansible-core's yaml inventory
// plugin, lib/ansible/plugins/inventory/yaml.py) with the group_vars and
// host_vars beside it (lib/ansible/plugins/vars/host_group_vars.py).
type inventory struct {
	source   string
	hosts    []string // in order of first appearance
	hostVars map[string]map[string]any
	groups   map[string]*group
	// groupVarFiles and hostVarFiles are the variables of
	// group_vars/NAME and host_vars/NAME next to the inventory.
	groupVarFiles map[string]map[string]any
	hostVarFiles  map[string]map[string]any
}

type group struct {
	name     string
	hosts    []string
	children []string
	vars     map[string]any
}

// errUnparsed is an inventory source no plugin could parse; the message
// is the reason the yaml plugin gives.
type errUnparsed struct{ reason string }

func (e errUnparsed) Error() string { return e.reason }

// loadInventory parses the YAML inventory file name as user p and loads
// the group_vars and host_vars directories beside it.
func loadInventory(p *sshtest.Process, name string) (*inventory, error) {
	data, err := p.FS.ReadFile(name)
	if err != nil {
		return nil, errUnparsed{sshtest.ErrMessage(err)}
	}
	ext := path.Ext(name)
	if ext != "" && !slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
		// yaml.py verify_file: only these extensions (or none); the ini
		// plugin would try an .ini file, which the simulation does not
		// model.
		return nil, errUnparsed{"yaml declined parsing " + name + " as it did not pass its verify_file() method"}
	}
	var top yaml.MapSlice
	if err := yaml.Unmarshal(data, &top); err != nil || top == nil {
		return nil, errUnparsed{"Plugin configuration YAML file, not YAML inventory"}
	}
	inv := &inventory{source: p.FS.Abs(name), hostVars: map[string]map[string]any{}, groups: map[string]*group{},
		groupVarFiles: map[string]map[string]any{}, hostVarFiles: map[string]map[string]any{}}
	inv.group("all")
	inv.group("ungrouped")
	for _, kv := range top {
		name := fmt.Sprint(kv.Key)
		if err := inv.parseGroup(name, kv.Value); err != nil {
			return nil, errUnparsed{err.Error()}
		}
		if name != "all" {
			inv.addChild("all", name)
		}
	}
	// Hosts in no group but all are in ungrouped.
	for _, h := range inv.hosts {
		if len(inv.groupsOf(h)) <= 1 {
			inv.groups["ungrouped"].hosts = append(inv.groups["ungrouped"].hosts, h)
		}
	}
	inv.addChild("all", "ungrouped")
	dir := path.Dir(inv.source)
	for _, g := range inv.groupNames() {
		if v := loadVarsDir(p, path.Join(dir, "group_vars"), g); v != nil {
			inv.groupVarFiles[g] = v
		}
	}
	for _, h := range inv.hosts {
		if v := loadVarsDir(p, path.Join(dir, "host_vars"), h); v != nil {
			inv.hostVarFiles[h] = v
		}
	}
	return inv, nil
}

func (inv *inventory) group(name string) *group {
	g := inv.groups[name]
	if g == nil {
		g = &group{name: name, vars: map[string]any{}}
		inv.groups[name] = g
	}
	return g
}

func (inv *inventory) addChild(parent, child string) {
	g := inv.group(parent)
	inv.group(child)
	if !slices.Contains(g.children, child) && parent != child {
		g.children = append(g.children, child)
	}
}

func (inv *inventory) addHost(groupName, host string, vars map[string]any) {
	if !slices.Contains(inv.hosts, host) {
		inv.hosts = append(inv.hosts, host)
		inv.hostVars[host] = map[string]any{}
	}
	for k, v := range vars {
		inv.hostVars[host][k] = v
	}
	g := inv.group(groupName)
	if !slices.Contains(g.hosts, host) {
		g.hosts = append(g.hosts, host)
	}
}

// parseGroup is yaml.py _parse_group: a mapping with hosts, vars and
// children; a null group is an empty one.
func (inv *inventory) parseGroup(name string, v any) error {
	inv.group(name)
	if v == nil {
		return nil
	}
	m, ok := v.(yaml.MapSlice)
	if !ok {
		return ansibleMsg(fmt.Sprintf("Invalid \"%s\" entry for \"%s\" group, requires a dictionary, found \"%T\" instead.", "group", name, v))
	}
	for _, kv := range m {
		key := fmt.Sprint(kv.Key)
		switch key {
		case "hosts":
			hs, isMap := kv.Value.(yaml.MapSlice)
			if kv.Value != nil && !isMap {
				return ansibleMsg(fmt.Sprintf("Invalid \"hosts\" entry for \"%s\" group, requires a dictionary, found \"%T\" instead.", name, kv.Value))
			}
			for _, h := range hs {
				vars, _ := plain(h.Value).(map[string]any)
				inv.addHost(name, fmt.Sprint(h.Key), vars)
			}
		case "vars":
			vars, _ := plain(kv.Value).(map[string]any)
			for k, v := range vars {
				inv.groups[name].vars[k] = v
			}
		case "children":
			cs, _ := kv.Value.(yaml.MapSlice)
			for _, c := range cs {
				child := fmt.Sprint(c.Key)
				if err := inv.parseGroup(child, c.Value); err != nil {
					return err
				}
				inv.addChild(name, child)
			}
		default:
			// yaml.py: "Skipping unexpected key (%s) in group (%s), only
			// "vars", "children" and "hosts" are valid" (a warning).
		}
	}
	return nil
}

// plain turns yaml.v2 values into JSON-like Go values.
func plain(v any) any {
	switch x := v.(type) {
	case yaml.MapSlice:
		m := map[string]any{}
		for _, kv := range x {
			m[fmt.Sprint(kv.Key)] = plain(kv.Value)
		}
		return m
	case map[any]any:
		m := map[string]any{}
		for k, v := range x {
			m[fmt.Sprint(k)] = plain(v)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// loadVarsDir loads dir/NAME, dir/NAME.{yml,yaml,json} and every such
// file under the directory dir/NAME (sorted), as host_group_vars.py does;
// nil when there is none.
func loadVarsDir(p *sshtest.Process, dir, name string) map[string]any {
	var files []string
	base := path.Join(dir, name)
	for _, f := range []string{base, base + ".yml", base + ".yaml", base + ".json"} {
		if fi, err := p.FS.Stat(f); err == nil && !fi.IsDir() {
			files = append(files, f)
		}
	}
	if fi, err := p.FS.Stat(base); err == nil && fi.IsDir() {
		files = append(files, walkVarFiles(p, base)...)
	}
	if len(files) == 0 {
		return nil
	}
	out := map[string]any{}
	for _, f := range files {
		data, err := p.FS.ReadFile(f)
		if err != nil {
			continue
		}
		var m yaml.MapSlice
		if err := yaml.Unmarshal(data, &m); err != nil {
			continue
		}
		for k, v := range plain(m).(map[string]any) {
			out[k] = v
		}
	}
	return out
}

func walkVarFiles(p *sshtest.Process, dir string) []string {
	entries, err := p.FS.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		f := path.Join(dir, n)
		if fi, err := p.FS.Stat(f); err == nil && fi.IsDir() {
			out = append(out, walkVarFiles(p, f)...)
			continue
		}
		if ext := path.Ext(n); ext == "" || ext == ".yml" || ext == ".yaml" || ext == ".json" {
			out = append(out, f)
		}
	}
	return out
}

func (inv *inventory) groupNames() []string {
	var out []string
	for n := range inv.groups {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// members returns a group's hosts, its children's included, in inventory
// order.
func (inv *inventory) members(name string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		g := inv.groups[n]
		if g == nil || seen["group:"+n] {
			return
		}
		seen["group:"+n] = true
		for _, h := range g.hosts {
			seen[h] = true
		}
		for _, c := range g.children {
			walk(c)
		}
	}
	walk(name)
	if name == "all" {
		return slices.Clone(inv.hosts)
	}
	var out []string
	for _, h := range inv.hosts {
		if seen[h] {
			out = append(out, h)
		}
	}
	return out
}

// groupsOf returns the groups host is in (all included).
func (inv *inventory) groupsOf(host string) []string {
	var out []string
	for _, n := range inv.groupNames() {
		if slices.Contains(inv.members(n), host) {
			out = append(out, n)
		}
	}
	return out
}

// depth is a group's distance from all.
func (inv *inventory) depth(name string) int {
	if name == "all" {
		return 0
	}
	best := -1
	for _, g := range inv.groups {
		if slices.Contains(g.children, name) {
			if d := inv.depth(g.name); best < 0 || d+1 < best {
				best = d + 1
			}
		}
	}
	if best < 0 {
		return 1
	}
	return best
}

// vars returns a host's variables with Ansible's precedence (docs
// "Understanding variable precedence", for the inventory's part):
// inventory group vars < group_vars/all < group_vars/* < inventory host
// vars < host_vars/*; groups merge by depth then name, children over
// parents (lib/ansible/inventory/helpers.py sort_groups), values
// replaced whole (hash_behaviour = replace). Magic variables
// (inventory_hostname, groups, group_names) are added.
func (inv *inventory) vars(host string) map[string]any {
	gs := inv.groupsOf(host)
	sort.SliceStable(gs, func(i, j int) bool {
		di, dj := inv.depth(gs[i]), inv.depth(gs[j])
		if di != dj {
			return di < dj
		}
		return gs[i] < gs[j]
	})
	out := map[string]any{}
	merge := func(m map[string]any) {
		for k, v := range m {
			out[k] = v
		}
	}
	for _, g := range gs {
		merge(inv.groups[g].vars)
	}
	merge(inv.groupVarFiles["all"])
	for _, g := range gs {
		if g != "all" {
			merge(inv.groupVarFiles[g])
		}
	}
	merge(inv.hostVars[host])
	merge(inv.hostVarFiles[host])
	out["inventory_hostname"] = host
	var names []string
	for _, g := range gs {
		if g != "all" && g != "ungrouped" {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	out["group_names"] = names
	return out
}

// str returns a variable as a string ("" when unset).
func str(vars map[string]any, key string) string {
	v, ok := vars[key]
	if !ok || v == nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// list returns a variable as a list of strings.
func list(vars map[string]any, key string) []string {
	switch x := vars[key].(type) {
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	case string:
		if x == "" {
			return nil
		}
		return []string{x}
	}
	return nil
}

// hostPattern resolves an Ansible host pattern (lib/ansible/inventory/
// manager.py): ',' or ':' separate terms, '&' intersects, '!' excludes,
// a term is a group, a host, a shell wildcard or a group with a
// subscript (g[0], g[1:], g[-1]). Unknown terms match nothing (with the
// warning "Could not match supplied host pattern, ignoring: TERM").
func (inv *inventory) hostPattern(pattern string) (hosts []string, unmatched []string) {
	terms := splitPattern(pattern)
	var base []string
	var inter [][]string
	var excl [][]string
	for _, t := range terms {
		op := byte(0)
		if t != "" && (t[0] == '&' || t[0] == '!') {
			op, t = t[0], t[1:]
		}
		hs, ok := inv.term(t)
		if !ok {
			unmatched = append(unmatched, t)
		}
		switch op {
		case '&':
			inter = append(inter, hs)
		case '!':
			excl = append(excl, hs)
		default:
			for _, h := range hs {
				if !slices.Contains(base, h) {
					base = append(base, h)
				}
			}
		}
	}
	for _, h := range inv.hosts { // inventory order
		if !slices.Contains(base, h) {
			continue
		}
		keep := true
		for _, s := range inter {
			keep = keep && slices.Contains(s, h)
		}
		for _, s := range excl {
			keep = keep && !slices.Contains(s, h)
		}
		if keep {
			hosts = append(hosts, h)
		}
	}
	return hosts, unmatched
}

func splitPattern(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ",") {
		// ':' separates terms too, except inside a subscript.
		cur, depth := "", 0
		for _, r := range part {
			switch {
			case r == '[':
				depth++
			case r == ']':
				depth--
			}
			if r == ':' && depth == 0 {
				out = append(out, strings.TrimSpace(cur))
				cur = ""
				continue
			}
			cur += string(r)
		}
		out = append(out, strings.TrimSpace(cur))
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

var subscriptRE = regexp.MustCompile(`^(.+)\[(-?\d*)(?::(-?\d*))?\]$`)

func (inv *inventory) term(t string) ([]string, bool) {
	if m := subscriptRE.FindStringSubmatch(t); m != nil {
		hs, ok := inv.term(m[1])
		if !ok {
			return nil, false
		}
		idx := func(s string, def int) int {
			if s == "" {
				return def
			}
			n, _ := strconv.Atoi(s)
			if n < 0 {
				n += len(hs)
			}
			return min(max(n, 0), len(hs))
		}
		if !strings.Contains(t[len(m[1]):], ":") {
			i := idx(m[2], 0)
			if i >= len(hs) {
				return nil, true
			}
			return hs[i : i+1], true
		}
		a, b := idx(m[2], 0), idx(m[3], len(hs))
		if m[3] != "" {
			b = min(b+1, len(hs)) // Ansible's subscript end is inclusive
		}
		if a >= b {
			return nil, true
		}
		return hs[a:b], true
	}
	if t == "all" || t == "*" {
		return slices.Clone(inv.hosts), true
	}
	if _, ok := inv.groups[t]; ok {
		return inv.members(t), true
	}
	if slices.Contains(inv.hosts, t) {
		return []string{t}, true
	}
	if strings.ContainsAny(t, "*?[") {
		var out []string
		for _, h := range inv.hosts {
			if ok, _ := path.Match(t, h); ok {
				out = append(out, h)
			}
		}
		for _, g := range inv.groupNames() {
			if ok, _ := path.Match(t, g); ok {
				out = append(out, inv.members(g)...)
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// jsonVars turns a variables map into what the JSON fact cache stores.
func jsonVars(v map[string]any) []byte {
	data, _ := json.MarshalIndent(v, "", "    ")
	return data
}

// ansibleMsg is an error worded exactly as Ansible words it (capitals and
// final punctuation included).
type ansibleMsg string

func (e ansibleMsg) Error() string { return string(e) }

package ansible

import (
	"path"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// config is the part of Ansible's configuration the simulation acts on,
// found as lib/ansible/config/manager.py find_ini_config_file finds it:
// ANSIBLE_CONFIG (a file, or a directory holding ansible.cfg), else
// ./ansible.cfg in the working directory, else ~/.ansible.cfg, else
// /etc/ansible/ansible.cfg; environment variables override the file
// (lib/ansible/config/base.yml and the ssh connection plugin's
// documentation give each setting's ini key and variables).
type config struct {
	file string // "" when none was found ("config file = None")
	ini  map[string]map[string]string
	env  func(string) string
}

func loadConfig(p *sshtest.Process) config {
	c := config{ini: map[string]map[string]string{}, env: p.Getenv}
	home := homeOf(p)
	var candidates []string
	if v := p.Getenv("ANSIBLE_CONFIG"); v != "" {
		v = expandHome(v, home)
		if fi, err := p.FS.Stat(v); err == nil && fi.IsDir() {
			v = path.Join(v, "ansible.cfg")
		}
		candidates = append(candidates, v)
	}
	candidates = append(candidates, path.Join(p.Dir, "ansible.cfg"), path.Join(home, ".ansible.cfg"), "/etc/ansible/ansible.cfg")
	for _, f := range candidates {
		if f == path.Join(p.Dir, "ansible.cfg") {
			// manager.py: a world-writable current directory's
			// ansible.cfg is ignored ("Ansible is being run in a world
			// writable directory ..., ignoring it as an ansible.cfg
			// source").
			if fi, err := p.FS.Stat(p.Dir); err == nil && fi.Mode().Perm()&0o002 != 0 {
				continue
			}
		}
		data, err := p.FS.ReadFile(f)
		if err != nil {
			continue
		}
		c.file = p.FS.Abs(f)
		c.ini = parseINI(string(data))
		break
	}
	return c
}

// parseINI parses an ansible.cfg as Python's configparser does for these
// files: [section], key = value or key=value, '#' and ';' comment lines.
func parseINI(s string) map[string]map[string]string {
	out := map[string]map[string]string{}
	sec := ""
	for _, ln := range strings.Split(s, "\n") {
		t := strings.TrimSpace(ln)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			sec = strings.TrimSpace(t[1 : len(t)-1])
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			k, v, ok = strings.Cut(t, ":")
		}
		if !ok {
			continue
		}
		if out[sec] == nil {
			out[sec] = map[string]string{}
		}
		out[sec][strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return out
}

// get returns a setting: the first environment variable set, else the
// first ini section/key present, else def.
func (c config) get(envs []string, ini [][2]string, def string) string {
	for _, e := range envs {
		if v := c.env(e); v != "" {
			return v
		}
	}
	for _, si := range ini {
		if v, ok := c.ini[si[0]][si[1]]; ok {
			return v
		}
	}
	return def
}

// boolean is ansible.module_utils.parsing.convert_bool.boolean.
func boolean(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "y", "yes", "on", "1", "true", "t", "1.0":
		return true
	}
	return false
}

func (c config) hostKeyChecking() bool {
	return boolean(c.get([]string{"ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_SSH_HOST_KEY_CHECKING"},
		[][2]string{{"defaults", "host_key_checking"}, {"ssh_connection", "host_key_checking"}}, "True"))
}

// sshArgs is the ssh connection's ssh_args (default "-C -o
// ControlMaster=auto -o ControlPersist=60s"). Its ini key is ssh_args:
// kubespray v2.23's ansible.cfg writes `ansible_ssh_args = ...`, a key
// Ansible does not read, so that release runs with the default.
func (c config) sshArgs() string {
	return c.get([]string{"ANSIBLE_SSH_ARGS"}, [][2]string{{"ssh_connection", "ssh_args"}}, "-C -o ControlMaster=auto -o ControlPersist=60s")
}

func (c config) displaySkippedHosts() bool {
	return boolean(c.get([]string{"ANSIBLE_DISPLAY_SKIPPED_HOSTS"}, [][2]string{{"defaults", "display_skipped_hosts"}}, "True"))
}

func (c config) stdoutCallback() string {
	return c.get([]string{"ANSIBLE_STDOUT_CALLBACK"}, [][2]string{{"defaults", "stdout_callback"}}, "default")
}

// callbacksEnabled is CALLBACKS_ENABLED (callbacks_enabled, before 2.11
// callback_whitelist, which 2.x still reads).
func (c config) callbacksEnabled() []string {
	v := c.get([]string{"ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_CALLBACK_WHITELIST"},
		[][2]string{{"defaults", "callbacks_enabled"}, {"defaults", "callback_whitelist"}}, "")
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// factCache is the fact cache plugin and its directory: "memory" (the
// default; nothing survives the run) or "jsonfile" in
// fact_caching_connection.
func (c config) factCache() (plugin, dir string) {
	plugin = c.get([]string{"ANSIBLE_CACHE_PLUGIN"}, [][2]string{{"defaults", "fact_caching"}}, "memory")
	dir = c.get([]string{"ANSIBLE_CACHE_PLUGIN_CONNECTION"}, [][2]string{{"defaults", "fact_caching_connection"}}, "")
	return plugin, dir
}

func (c config) inventoryUnparsedFailed() bool {
	return boolean(c.get([]string{"ANSIBLE_INVENTORY_UNPARSED_FAILED"}, [][2]string{{"inventory", "unparsed_is_failed"}}, "False"))
}

func homeOf(p *sshtest.Process) string {
	if h := p.Getenv("HOME"); h != "" {
		return h
	}
	if p.User == "root" {
		return "/root"
	}
	return "/home/" + p.User
}

func expandHome(s, home string) string {
	if s == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		return path.Join(home, rest)
	}
	return s
}

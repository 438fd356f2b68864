package ubuntu

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// cloud-init's files on the image.
const (
	// HostsTemplate is the template cloud-init renders /etc/hosts from
	// at every boot when manage_etc_hosts is true: hosts.<osfamily>.tmpl
	// in templates_dir (cloud-init's cloudinit/config/cc_update_etc_hosts.py,
	// config/cloud.cfg.tmpl), and Ubuntu's osfamily is debian
	// (cloudinit/distros/__init__.py OSFAMILIES).
	HostsTemplate = "/etc/cloud/templates/hosts.debian.tmpl"
	// CloudConfigFile is where the fake keeps the instance's user-data
	// cloud-config, which cloud-init merges over /etc/cloud/cloud.cfg and
	// /etc/cloud/cloud.cfg.d/*.cfg.
	CloudConfigFile = "/var/lib/cloud/instance/cloud-config.txt"

	// HostsDebianTmpl is cloud-init's templates/hosts.debian.tmpl
	// (canonical/cloud-init), as Ubuntu installs it at [HostsTemplate].
	HostsDebianTmpl = `## template:jinja
{#
This file (/etc/cloud/templates/hosts.debian.tmpl) is only utilized
if enabled in cloud-config.  Specifically, in order to enable it
you need to add the following to config:
   manage_etc_hosts: True
-#}
# Your system has configured 'manage_etc_hosts' as True.
# As a result, if you wish for changes to this file to persist
# then you will need to either
# a.) make changes to the master file in /etc/cloud/templates/hosts.debian.tmpl
# b.) change or remove the value of 'manage_etc_hosts' in
#     /etc/cloud/cloud.cfg or cloud-config from user-data
#
{# The value '{{hostname}}' will be replaced with the local-hostname -#}
127.0.1.1 {{fqdn}} {{hostname}}
127.0.0.1 localhost

# The following lines are desirable for IPv6 capable hosts
::1 localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
`
)

// ManageEtcHosts is cloud-init's manage_etc_hosts setting.
type ManageEtcHosts string

// The manage_etc_hosts values cloud-init knows
// (cloudinit/config/cc_update_etc_hosts.py handle).
const (
	// ManageEtcHostsTrue: /etc/hosts is rendered from [HostsTemplate] at
	// every boot; lines added to /etc/hosts alone are lost.
	ManageEtcHostsTrue ManageEtcHosts = "true"
	// ManageEtcHostsLocalhost: at every boot cloud-init only makes sure
	// that 127.0.1.1 names the host (Distro.update_etc_hosts).
	ManageEtcHostsLocalhost ManageEtcHosts = "localhost"
	// ManageEtcHostsFalse: cloud-init leaves /etc/hosts alone
	// (cloud-init's default).
	ManageEtcHostsFalse ManageEtcHosts = "false"
)

// writeCloudInit lays out cloud-init's hosts template and the instance's
// cloud-config with manage_etc_hosts.
func (m *Machine) writeCloudInit(manage ManageEtcHosts) error {
	if manage == "" {
		manage = ManageEtcHostsTrue
	}
	if err := m.writeFile(HostsTemplate, HostsDebianTmpl, 0o644); err != nil {
		return err
	}
	return m.writeFile(CloudConfigFile, "#cloud-config\nmanage_etc_hosts: "+string(manage)+"\n", 0o600)
}

// renderHosts is the /etc/hosts that cloud-init renders from the
// template for the current host name.
func (m *Machine) renderHosts() (string, error) {
	tmpl, err := m.fs().ReadFile(HostsTemplate)
	if err != nil {
		return "", err
	}
	host := m.Hostname()
	return renderTemplate(string(tmpl), map[string]string{"hostname": host, "fqdn": host})
}

// manageEtcHosts is the manage_etc_hosts value in effect: the last one in
// /etc/cloud/cloud.cfg, /etc/cloud/cloud.cfg.d/*.cfg (in name order) and
// the instance's cloud-config. Only a top-level `manage_etc_hosts: VALUE`
// line is understood.
func (m *Machine) manageEtcHosts() ManageEtcHosts {
	files := []string{"/etc/cloud/cloud.cfg"}
	if entries, err := m.fs().ReadDir("/etc/cloud/cloud.cfg.d"); err == nil {
		var names []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".cfg") {
				names = append(names, path.Join("/etc/cloud/cloud.cfg.d", e.Name()))
			}
		}
		slices.Sort(names)
		files = append(files, names...)
	}
	files = append(files, CloudConfigFile)
	value := ManageEtcHostsFalse
	for _, f := range files {
		b, err := m.fs().ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "manage_etc_hosts:"); ok {
				value = parseManageEtcHosts(strings.Trim(strings.TrimSpace(v), `"'`))
			}
		}
	}
	return value
}

// parseManageEtcHosts reads a value as util.translate_bool(value,
// addons=["template"]) does, with "localhost" apart.
func parseManageEtcHosts(v string) ManageEtcHosts {
	switch strings.ToLower(v) {
	case "true", "1", "on", "yes", "template":
		return ManageEtcHostsTrue
	case "localhost":
		return ManageEtcHostsLocalhost
	}
	return ManageEtcHostsFalse
}

// updateEtcHosts is cloud-init's cc_update_etc_hosts at boot (its
// frequency is PER_ALWAYS): with manage_etc_hosts true /etc/hosts is
// rendered from the template (a missing or unrenderable template leaves
// it as it was: the module fails); with localhost a "127.0.1.1 FQDN
// HOSTNAME" line is added when 127.0.1.1 does not name the host yet.
func (m *Machine) updateEtcHosts() error {
	switch m.manageEtcHosts() {
	case ManageEtcHostsTrue:
		hosts, err := m.renderHosts()
		if err != nil {
			return fmt.Errorf("cloud-init: cc_update_etc_hosts: %w", err)
		}
		return m.writeFile("/etc/hosts", hosts, 0o644)
	case ManageEtcHostsLocalhost:
		b, _ := m.fs().ReadFile("/etc/hosts")
		host := m.Hostname()
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "127.0.1.1" && f[1] == host && slices.Contains(f[2:], host) {
				return nil
			}
		}
		text := string(b)
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return m.writeFile("/etc/hosts", text+"127.0.1.1 "+host+" "+host+"\n", 0o644)
	}
	return nil
}

var (
	jinjaComment = regexp.MustCompile(`(?s)\{#.*?(-#\}\s*|#\}\n?)`)
	jinjaVar     = regexp.MustCompile(`\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}`)
	basicVar     = regexp.MustCompile(`\$\{([A-Za-z0-9_.]+)\}|\$([A-Za-z0-9_.]+)`)
)

// renderTemplate renders a cloud-init template as cloudinit/templater.py
// does: a first line "## template:jinja" selects Jinja (comments go, with
// the newline after them as trim_blocks does, or all white space after
// "-#}"; {{name}} is replaced), anything else the basic renderer ($name
// and ${name}). Jinja statements ({% ... %}) are not modelled and fail.
func renderTemplate(text string, params map[string]string) (string, error) {
	first, rest, _ := strings.Cut(text, "\n")
	if !regexp.MustCompile(`(?i)^##\s*template:\s*jinja\s*$`).MatchString(first) {
		return basicVar.ReplaceAllStringFunc(text, func(s string) string {
			sub := basicVar.FindStringSubmatch(s)
			name := sub[1] + sub[2]
			if v, ok := params[name]; ok {
				return v
			}
			return s
		}), nil
	}
	out := jinjaComment.ReplaceAllString(rest, "")
	if strings.Contains(out, "{%") {
		return "", fmt.Errorf("template statements are not modelled")
	}
	out = jinjaVar.ReplaceAllStringFunc(out, func(s string) string {
		name := jinjaVar.FindStringSubmatch(s)[1]
		if v, ok := params[name]; ok {
			return v
		}
		return "CI_MISSING_JINJA_VAR/" + name
	})
	return out, nil
}

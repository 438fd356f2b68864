package ubuntu

import (
	"strings"
	"testing"
)

func TestCloudInitRewritesEtcHostsAtBoot(t *testing.T) {
	const image = `# Your system has configured 'manage_etc_hosts' as True.
# As a result, if you wish for changes to this file to persist
# then you will need to either
# a.) make changes to the master file in /etc/cloud/templates/hosts.debian.tmpl
# b.) change or remove the value of 'manage_etc_hosts' in
#     /etc/cloud/cloud.cfg or cloud-config from user-data
#
127.0.1.1 node-1 node-1
127.0.0.1 localhost

# The following lines are desirable for IPv6 capable hosts
::1 localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
`
	for _, tc := range []struct {
		manage       ManageEtcHosts
		keepsHosts   bool // a line added to /etc/hosts survives
		readsTmpl    bool // a line added to the template appears
		addsLocalEnt bool // 127.0.1.1 is added back when missing
	}{
		{"", false, true, false},
		{ManageEtcHostsLocalhost, true, false, true},
		{ManageEtcHostsFalse, true, false, false},
	} {
		t.Run(string(tc.manage), func(t *testing.T) {
			v := newVM(t, Options{ManageEtcHosts: tc.manage})
			want(t, "image /etc/hosts", v.root("cat /etc/hosts"), image, "", 0)
			v.mustOK(`grep -v '^127.0.1.1' /etc/hosts > /tmp/h; cat /tmp/h > /etc/hosts && echo '10.0.0.5 reg.example.com' >> /etc/hosts && echo '10.0.0.6 tmpl.example.com' >> ` + HostsTemplate)
			if err := v.Reboot(); err != nil {
				t.Fatal(err)
			}
			hosts := v.root("cat /etc/hosts").stdout
			if got := strings.Contains(hosts, "reg.example.com"); got != tc.keepsHosts {
				t.Errorf("the added line survived: %v, want %v:\n%s", got, tc.keepsHosts, hosts)
			}
			if got := strings.Contains(hosts, "tmpl.example.com"); got != tc.readsTmpl {
				t.Errorf("the template's line appeared: %v, want %v:\n%s", got, tc.readsTmpl, hosts)
			}
			if got := strings.Contains(hosts, "127.0.1.1 node-1 node-1"); got != (tc.readsTmpl || tc.addsLocalEnt) {
				t.Errorf("127.0.1.1 names the host: %v:\n%s", got, hosts)
			}
		})
	}
}

func TestRenderTemplate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"## template:jinja\n{# c\n-#}\n\na {{fqdn}} {{ hostname }}\n{# x #}\nb\n", "a f.example h\nb\n"},
		{"127.0.1.1 $fqdn ${hostname} $other\n", "127.0.1.1 f.example h $other\n"},
		{"## template:jinja\n{{nope}}\n", "CI_MISSING_JINJA_VAR/nope\n"},
	} {
		got, err := renderTemplate(tc.in, map[string]string{"hostname": "h", "fqdn": "f.example"})
		if err != nil || got != tc.want {
			t.Errorf("render %q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := renderTemplate("## template:jinja\n{% if x %}\n", nil); err == nil {
		t.Error("a statement rendered")
	}
}

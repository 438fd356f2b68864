package realtest

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/registry"
)

// renderScript renders a cloud-init template with cloud-init's own
// renderer (cloudinit/templater.py render_string), as
// cc_update_etc_hosts does at boot with manage_etc_hosts: true.
const renderScript = `import sys
from cloudinit import templater
with open(sys.argv[1]) as f:
    sys.stdout.write(templater.render_string(f.read(), {"hostname": "node-1", "fqdn": "node-1.example.com"}))
`

// checkHostsTemplate renders, with Debian's real cloud-init, the hosts
// template mgmtkit has just added its block to: the header stays first
// (cloud-init picks the renderer from it), and the /etc/hosts cloud-init
// would write at the next boot holds every hosts_string line and the
// template's own lines.
func (e *env) checkHostsTemplate(t *testing.T) {
	tmpl, err := os.ReadFile(registry.HostsTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(tmpl, []byte("## template:jinja")) {
		t.Errorf("%s no longer starts with its template header:\n%s", registry.HostsTemplate, tmpl)
	}
	// Debian's python3 and its cloudinit package, not a python3 on PATH.
	out, err := exec.Command("/usr/bin/python3", "-c", renderScript, registry.HostsTemplate).CombinedOutput()
	if err != nil {
		t.Fatalf("cloud-init's renderer: %v\n%s", err, out)
	}
	hosts := string(out)
	for _, r := range e.registries() {
		// system.SetHostsBlock writes "IP<TAB>NAMES" (hosts(5): blanks or
		// tabs between fields).
		if want := "127.0.0.1\t" + r.host; !strings.Contains(hosts, "\n"+want+"\n") {
			t.Errorf("the rendered /etc/hosts lacks %q:\n%s", want, hosts)
		}
	}
	if !strings.Contains(hosts, "127.0.1.1 node-1.example.com node-1") {
		t.Errorf("the rendered /etc/hosts lost the template's own lines:\n%s", hosts)
	}
}

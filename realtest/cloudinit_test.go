package realtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/system"
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
	// hosts(5): an address, then its names, separated by blanks or tabs;
	// system.SetHostsBlock writes one line per address with all its names.
	names := map[string]string{}
	for line := range strings.Lines(hosts) {
		if f := strings.Fields(line); len(f) > 1 && !strings.HasPrefix(f[0], "#") {
			for _, n := range f[1:] {
				names[n] = f[0]
			}
		}
	}
	for _, r := range e.registries() {
		if addr := names[r.host]; addr != "127.0.0.1" {
			t.Errorf("the rendered /etc/hosts maps %s to %q, want 127.0.0.1:\n%s", r.host, addr, hosts)
		}
	}
	if !strings.Contains(hosts, "127.0.1.1 node-1.example.com node-1") {
		t.Errorf("the rendered /etc/hosts lost the template's own lines:\n%s", hosts)
	}
}

// TestCloudInitRendersSystemHostsBlock renders, with the real
// cloud-init's renderer, this machine's own hosts template after
// system.PlanHostsBlock has added a block to it (an IPv4 and an IPv6
// line, an address with two names): the template header stays first, and
// the /etc/hosts cloud-init would write at boot holds every line of the
// block as written and the template's own lines. It needs only
// /usr/bin/python3 with Debian's cloudinit package, not the rest of the
// suite's machine.
func TestCloudInitRendersSystemHostsBlock(t *testing.T) {
	tmpl, err := os.ReadFile(system.CloudHostsTemplate)
	if err != nil {
		t.Skipf("no cloud-init hosts template here: %v", err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import cloudinit.templater").Run(); err != nil {
		t.Skipf("no cloud-init Python package here: %v", err)
	}
	opts := system.HostsOptions{Block: "mgmtkit-k8s", Entries: []system.HostsEntry{
		{IP: "10.0.0.5", Names: []string{"master-10-0-0-5", "k8s-api.example.com"}},
		{IP: "fd00::12", Names: []string{"worker-fd00--12"}},
	}}
	writes, err := system.PlanHostsBlock(map[string][]byte{system.CloudHostsTemplate: tmpl}, system.HostsOptions{Block: opts.Block, Entries: opts.Entries, Files: []string{system.CloudHostsTemplate}})
	if err != nil || len(writes) != 1 {
		t.Fatalf("%d writes, %v", len(writes), err)
	}
	if !bytes.HasPrefix(writes[0].Content, []byte("## template:jinja")) {
		t.Errorf("the template no longer starts with its header:\n%s", writes[0].Content)
	}
	file := filepath.Join(t.TempDir(), "hosts.debian.tmpl")
	if err := os.WriteFile(file, writes[0].Content, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", "-c", renderScript, file).CombinedOutput()
	if err != nil {
		t.Fatalf("cloud-init's renderer: %v\n%s", err, out)
	}
	for _, want := range []string{"10.0.0.5\tmaster-10-0-0-5 k8s-api.example.com", "fd00::12\tworker-fd00--12", "127.0.1.1 node-1.example.com node-1"} {
		if !strings.Contains(string(out), "\n"+want+"\n") {
			t.Errorf("the rendered /etc/hosts lacks %q:\n%s", want, out)
		}
	}
}

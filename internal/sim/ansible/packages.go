package ansible

import (
	"context"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The ansible-core versions the catalog offers, each as the version
// ansible-playbook reports and the package version dpkg shows.
// 2.14.18-0+deb12u2 is Debian 12's package (apt-cache policy
// ansible-core on bookworm); kubespray's requirements install the others
// with pip (ansible==9.x pulls ansible-core 2.16.x, 10.x 2.17.x;
// kubespray's docs/ansible/ansible.md), which the simulation carries as
// packages so that a test can choose one and dpkg tells which is there.
var coreVersions = []struct{ core, deb string }{
	{"2.10.17", "2.10.17-0~pip"}, // ansible-base, for kubespray v2.16 (2.9 <= core < 2.11)
	{"2.14.18", "2.14.18-0+deb12u2"},
	{"2.16.12", "2.16.12-0~pip"},
	{"2.17.5", "2.17.5-0~pip"},
}

// DefaultCoreVersion is the ansible-core a cloud's Ansible server has
// unless told otherwise: in [DefaultRelease]'s range (v2.28.1: 2.16.4 <=
// core < 2.17.0).
const DefaultCoreVersion = "2.16.12"

// CoreVersions returns the ansible-core versions [AddPackages] offers.
func CoreVersions() []string {
	var out []string
	for _, v := range coreVersions {
		out = append(out, v.core)
	}
	return out
}

// CorePackage returns the package argument ("ansible-core=VERSION") that
// installs ansible-core version core, "" when the catalog has none.
func CorePackage(core string) string {
	for _, v := range coreVersions {
		if v.core == core {
			return "ansible-core=" + v.deb
		}
	}
	return ""
}

// AddPackages adds the Ansible server's packages to a catalog:
// ansible-core in each of [CoreVersions] (/usr/bin/ansible-playbook, the
// semantic fake of this package, reaching hosts through net; it depends
// on python3, as Debian's package does) and sshpass 1.09 (jammy's), which
// Ansible's ssh connection needs for password logins.
func AddPackages(cat *ubuntu.Catalog, net Network) {
	for _, v := range coreVersions {
		cat.Add(ubuntu.Package{
			Name: "ansible-core", Version: v.deb, Depends: []string{"python3", "openssh-client"},
			Description: "Configuration management, deployment, and task execution system",
			Tools:       map[string]ubuntu.Tool{"/usr/bin/ansible-playbook": PlaybookTool(net, v.core)},
		})
	}
	cat.Add(ubuntu.Package{Name: "sshpass", Version: "1.09-1", Description: "Non-interactive ssh password authentication",
		Programs: map[string]sshtest.Program{"/usr/bin/sshpass": sshpassProgram}})
}

// sshpassProgram is /usr/bin/sshpass. Ansible's ssh connection runs it
// with the password on a pipe (`sshpass -d FD ssh ...`), which the
// simulated ansible-playbook does in-process; by hand only the usage
// (sshpass 1.09 without arguments prints it and exits 0: Debian 12's
// sshpass_1.09-1+b1 run here) is modelled.
func sshpassProgram(_ context.Context, p *sshtest.Process) int {
	if len(p.Args) == 1 || p.Args[1] == "-h" {
		p.Stdout.Write([]byte(strings.Join([]string{
			"Usage: sshpass [-f|-d|-p|-e] [-hV] command parameters",
			"   -f filename   Take password to use from file",
			"   -d number     Use number as file descriptor for getting password",
			"   -p password   Provide password as argument (security unwise)",
			"   -e            Password is passed as env-var \"SSHPASS\"",
			"   With no parameters - password will be taken from stdin",
			"",
			"   -P prompt     Which string should sshpass search for to detect a password prompt",
			"   -v            Be verbose about what you're doing",
			"   -h            Show help (this screen)",
			"   -V            Print version information",
			"At most one of -f, -d, -p or -e should be used",
			"",
		}, "\n")))
		return 0
	}
	return p.Fail(2, "running sshpass by hand is not modelled by internal/sim/ansible (ansible-playbook's ssh connection uses it in-process)")
}

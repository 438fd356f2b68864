package ubuntu

import (
	"fmt"
	"strings"
)

// LoginPath is the flavour of the PATH that a non-interactive SSH
// session of a user other than root gets (`ssh host cmd` reads no shell
// profile, so /etc/profile does not apply; see [sshtest.Server.SetLoginPath]).
type LoginPath string

// The login PATH flavours.
const (
	// UbuntuLoginPath: Ubuntu's /etc/environment sets
	// PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin"
	// (https://wiki.ubuntu.com/PATH), which pam_env gives every sshd
	// session: the sbin directories are on every user's PATH.
	UbuntuLoginPath LoginPath = "ubuntu"
	// DebianLoginPath: Debian 12's /etc/environment is empty, so a user
	// other than root keeps OpenSSH's compiled-in default user path,
	// /usr/local/bin:/usr/bin:/bin:/usr/games (Debian's openssh is built
	// --with-default-path so; `strings /usr/sbin/sshd` on Debian 12 shows
	// it): no sbin directory, so /usr/sbin/dockerd of Debian's docker.io
	// is not found by name. root keeps the superuser path, and sudo its
	// secure_path, both with the sbin directories.
	DebianLoginPath LoginPath = "debian"
)

// Paths of the two flavours.
const (
	// opensshDefaultPath is Debian's and Ubuntu's openssh
	// --with-default-path (both build it from the same debian/rules).
	opensshDefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/games"
	ubuntuEnvironment  = `PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin"` + "\n"
)

// SetLoginPath makes the machine give SSH sessions the login PATH of a
// flavour: sshd's default user path is OpenSSH's as Debian and Ubuntu
// build it, and /etc/environment holds Ubuntu's PATH line or, for
// Debian, none (its other lines are kept).
func (m *Machine) SetLoginPath(flavour LoginPath) error {
	var keep []string
	if b, err := m.fs().ReadFile("/etc/environment"); err == nil {
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if l != "" && !strings.HasPrefix(strings.TrimSpace(l), "PATH=") {
				keep = append(keep, l)
			}
		}
	}
	switch flavour {
	case UbuntuLoginPath, "":
		keep = append([]string{ubuntuEnvironment}, keep...)
	case DebianLoginPath:
	default:
		return fmt.Errorf("ubuntu: login PATH flavour %q is not modelled (ubuntu or debian)", flavour)
	}
	m.srv.SetLoginPath(opensshDefaultPath)
	return m.writeFile("/etc/environment", strings.Join(keep, ""), 0o644)
}

package system

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
)

// Runtime is a container runtime a node may run.
type Runtime string

// The container runtimes [DetectRuntimes] recognises.
const (
	Docker     Runtime = "docker"
	Containerd Runtime = "containerd"
	CRIO       Runtime = "crio"
)

// detectScript lists the runtimes whose daemons are installed. It looks
// in root's PATH (sshd's superuser path, sudo's secure_path) before the
// login user's own: a login user's PATH is no guide to what is installed.
// On Debian it is OpenSSH's default user path
// /usr/local/bin:/usr/bin:/bin:/usr/games (Debian's openssh is built
// --with-default-path so, and Debian's /etc/environment, which pam_env
// reads, sets none), without /usr/sbin, where Debian's docker.io installs
// dockerd; a non-interactive `ssh host cmd` reads no /etc/profile.
var detectScript = remote.MustParseScript("detect-runtimes", `
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
for daemon in dockerd containerd crio; do
	if command -v "$daemon" >/dev/null 2>&1; then echo "$daemon"; fi
done
`)

// DetectRuntimes returns the container runtimes installed on h, by their
// daemons' programs (dockerd, containerd, crio), looked for in the
// standard bin and sbin directories and then on the login user's PATH,
// so that /usr/sbin/dockerd is found whoever logs in. It runs one
// command and changes nothing. Docker's own containerd counts as
// containerd: the kubelet may use it.
func DetectRuntimes(ctx context.Context, h remote.Host) ([]Runtime, error) {
	cmd, err := detectScript.Cmd(nil)
	if err != nil {
		return nil, err
	}
	cmd.Idempotent, cmd.ReadOnly = true, true
	out, err := h.Run(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var rts []Runtime
	for _, l := range strings.Fields(string(out.Stdout)) {
		switch l {
		case "dockerd":
			rts = append(rts, Docker)
		case "containerd":
			rts = append(rts, Containerd)
		case "crio":
			rts = append(rts, CRIO)
		}
	}
	return rts, nil
}

// ContainerdRelease returns the release `containerd --version` prints on
// h ("1.7.12", "2.2.0") and its major version. The first field that
// starts with a positive number and a dot is the release, with any "v"
// prefix dropped: containerd prints "containerd github.com/containerd/containerd
// v2.2.0 SHA", Docker's containerd.io "containerd containerd.io 1.7.12
// SHA" (cmd/containerd/command/main.go: app.Version).
func ContainerdRelease(ctx context.Context, h remote.Host) (release string, major int, err error) {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"containerd", "--version"}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return "", 0, err
	}
	for _, f := range strings.Fields(string(out.Stdout)) {
		f = strings.TrimPrefix(f, "v")
		m, _, ok := strings.Cut(f, ".")
		if n, err := strconv.Atoi(m); ok && err == nil && n >= 1 {
			return f, n, nil
		}
	}
	return "", 0, fmt.Errorf("cannot tell containerd's version from %q", strings.TrimSpace(string(out.Stdout)))
}

package system

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
)

// OSRelease is the content of a host's /etc/os-release (os-release(5)):
// ID, VERSION_ID, PRETTY_NAME and the rest, unquoted.
type OSRelease map[string]string

// ID returns the distribution's ID ("ubuntu", "debian", "rhel", ...).
func (r OSRelease) ID() string { return r["ID"] }

// VersionID returns VERSION_ID ("22.04").
func (r OSRelease) VersionID() string { return r["VERSION_ID"] }

// String returns PRETTY_NAME, or ID and VERSION_ID.
func (r OSRelease) String() string {
	if p := r["PRETTY_NAME"]; p != "" {
		return p
	}
	return strings.TrimSpace(r.ID() + " " + r.VersionID())
}

// ReadOSRelease reads and parses /etc/os-release (falling back to
// /usr/lib/os-release, as os-release(5) says): which distribution a host
// runs, for steps whose commands or paths depend on it.
func ReadOSRelease(ctx context.Context, h remote.Host) (OSRelease, error) {
	var firstErr error
	for _, f := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := h.ReadFile(ctx, f, remote.FileOptions{})
		if err == nil {
			return ParseOSRelease(b)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("system: %s: reading os-release: %w", h.Name(), firstErr)
}

// ParseOSRelease parses os-release(5) content: KEY=value lines, values
// optionally in shell quotes; comments and blank lines are skipped.
func ParseOSRelease(b []byte) (OSRelease, error) {
	r := OSRelease{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("system: os-release line %d: %q is not KEY=value", n, line)
		}
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			if val[0] == '"' {
				if uq, err := strconv.Unquote(val); err == nil {
					val = uq
				} else {
					val = val[1 : len(val)-1]
				}
			} else {
				val = val[1 : len(val)-1]
			}
		}
		r[key] = val
	}
	return r, sc.Err()
}

// archScript prints the Debian architecture: dpkg's own answer where dpkg
// exists, else the kernel's machine name for Architecture to translate.
const archScript = `if command -v dpkg >/dev/null 2>&1; then dpkg --print-architecture; else uname -m; fi`

// unameArch maps `uname -m` names to Debian architecture names, for hosts
// without dpkg. The pairs are Debian's (https://wiki.debian.org/ArchitectureSpecificsMemo,
// "Summary" table; dpkg's data/cputable).
var unameArch = map[string]string{
	"x86_64":  "amd64",
	"aarch64": "arm64",
	"arm64":   "arm64",
	"armv7l":  "armhf",
	"i386":    "i386",
	"i686":    "i386",
	"ppc64le": "ppc64el",
	"s390x":   "s390x",
	"riscv64": "riscv64",
}

// Architecture returns h's architecture as Debian names it ("amd64",
// "arm64", ...): `dpkg --print-architecture` where dpkg exists, otherwise
// `uname -m` translated ("x86_64" → "amd64", "aarch64" → "arm64"). Steps
// use it to pick a download (a binary release, an image) for the host.
// One command.
func Architecture(ctx context.Context, h remote.Host) (string, error) {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", archScript}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return "", err
	}
	a := strings.TrimSpace(string(out.Stdout))
	if d, ok := unameArch[a]; ok {
		a = d
	}
	if a == "" || strings.ContainsAny(a, " \t\n") {
		return "", fmt.Errorf("system: %s: unexpected architecture %q", h.Name(), out.Stdout)
	}
	return a, nil
}

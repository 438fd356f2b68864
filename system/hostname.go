package system

import (
	"context"
	"fmt"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// hostNameMax is Linux's HOST_NAME_MAX (include/uapi/linux/utsname.h,
// __NEW_UTS_LEN): the longest name the kernel keeps; hostnamectl refuses
// longer ones too.
const hostNameMax = 64

// hostnameScript sets the host name to $1 unless both the static name
// (/etc/hostname, hostname(5)) and the kernel's (hostname(1)) already are
// $1; it prints "unchanged" or "changed". hostnamectl(1) set-hostname sets
// both where systemd runs; elsewhere /etc/hostname is written and
// `hostname NAME` sets the kernel's.
const hostnameScript = `set -eu
name=$1
static=$(head -n 1 /etc/hostname 2>/dev/null || true)
if [ "$static" = "$name" ] && [ "$(hostname)" = "$name" ]; then echo unchanged; exit 0; fi
if command -v hostnamectl >/dev/null 2>&1; then
  hostnamectl set-hostname "$name"
else
  printf '%s\n' "$name" > /etc/hostname
  hostname "$name"
fi
echo changed`

// hostnameCheck is hostnameScript's test alone: it prints "unchanged"
// when the host name is $1 already, "differs" otherwise.
const hostnameCheck = `set -eu
name=$1
static=$(head -n 1 /etc/hostname 2>/dev/null || true)
if [ "$static" = "$name" ] && [ "$(hostname)" = "$name" ]; then echo unchanged; else echo differs; fi`

// SetHostname makes name h's host name, static and current, when it is
// not already: with `hostnamectl set-hostname` where systemd runs, else
// by writing /etc/hostname and running `hostname`. name must be an RFC
// 1123 host name of at most 64 characters. One command either way.
//
// The VM's /etc/hosts should resolve the new name (cloud-init's
// manage_etc_hosts does it at boot; [SetHostsBlock] can do it now).
func SetHostname(ctx context.Context, h remote.Host, name string) (lcm.Result, error) {
	if msg := checkDNSName(name, hostNameMax); msg != "" {
		return lcm.Unchanged, problems{{Path: "name", Message: msg}}.err()
	}
	if remote.IsDryRun(ctx) {
		// The script looks and sets in one: a plan looks alone.
		out, err := h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", hostnameCheck, "mgmtkit-hostname-check", name}, ReadOnly: true, Idempotent: true, Brief: true})
		if err == nil && strings.TrimSpace(string(out.Stdout)) == "unchanged" {
			return lcm.Unchanged, nil
		}
	}
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", hostnameScript, "mgmtkit-hostname", name}, Sudo: true, Idempotent: true})
	if err != nil {
		return lcm.Unchanged, err
	}
	switch strings.TrimSpace(string(out.Stdout)) {
	case "unchanged":
		return lcm.Unchanged, nil
	case "changed":
		return lcm.Changed("host name set to " + name), nil
	}
	return lcm.Unchanged, fmt.Errorf("system: %s: setting the host name: unexpected output %q", h.Name(), out.Stdout)
}

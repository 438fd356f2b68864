package ubuntu

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Reboot restarts the machine, as `sudo reboot` and a wait would: every
// mount goes (a disk keeps its files), every running unit stops, /tmp is
// emptied; then /etc/fstab is mounted as at boot (mount -a, through
// /sbin/mount.TYPE helpers for network filesystems), cloud-init rewrites
// /etc/hosts as its manage_etc_hosts says (see [ManageEtcHosts]: by
// default rendered anew from [HostsTemplate], so a line added to
// /etc/hosts alone is gone), and the enabled units start, the failed ones
// are forgotten. Files, packages, holds and the
// package lists persist. Counters do not count the shutdown and the boot.
//
// A test reboots to check what persists: a mount that is not in fstab is
// gone, a service that was started but not enabled is stopped. Reboot
// returns an error, as a machine that drops to emergency mode, when an
// fstab entry without nofail cannot be mounted; the units still start.
func (m *Machine) Reboot() error {
	// Shutdown: units, then mounts.
	m.mu.Lock()
	var stops []func(*Machine) error
	for _, name := range slices.Sorted(maps.Keys(m.units)) {
		if u := m.units[name]; u.active && u.unit.OnStop != nil {
			stops = append(stops, u.unit.OnStop)
		}
	}
	m.mu.Unlock()
	for _, stop := range stops {
		stop(m)
	}
	m.mu.Lock()
	for _, u := range m.units {
		u.active, u.failed = false, false
	}
	for i := len(m.mounts) - 1; i >= 0; i-- {
		mt := m.mounts[i]
		switch {
		case mt.system:
		case mt.disk != nil:
			mt.disk.mu.Lock()
			m.forceUnmountLocked(mt)
			mt.disk.mu.Unlock()
		default:
			m.dropMountLocked(mt)
		}
	}
	m.clearDirLocked("/tmp")
	// The kernel starts afresh: systemd-modules-load and systemd-sysctl
	// apply their configuration directories.
	m.kernelBootLocked()
	m.mu.Unlock()

	// Boot: local and network filesystems, then services.
	var stdout, stderr bytes.Buffer
	p := &sshtest.Process{
		Args:   []string{"mount", "-a"},
		Env:    []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "USER=root", "LANG=C.UTF-8"},
		Dir:    "/",
		Stdin:  strings.NewReader(""),
		Stdout: &stdout,
		Stderr: &stderr,
		User:   "root",
		FS:     m.fs().As(sshtest.Root, "/"),
		Host:   m.srv,
	}
	var bootErr error
	if code := m.mountAll(context.Background(), p, false); code != 0 {
		bootErr = fmt.Errorf("ubuntu: boot: mounting /etc/fstab failed (emergency mode): %s", strings.TrimSpace(stderr.String()))
	}
	// cloud-init's init stage, every boot: a template it cannot render
	// leaves /etc/hosts as it was, and the boot goes on.
	_ = m.updateEtcHosts()
	m.mu.Lock()
	var enabled []string
	for name, u := range m.units {
		if u.enabled {
			enabled = append(enabled, name)
		}
	}
	m.mu.Unlock()
	slices.Sort(enabled)
	for _, name := range enabled {
		m.bootUnit(name)
	}
	return bootErr
}

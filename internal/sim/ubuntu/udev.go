package ubuntu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// udevActions are the uevent actions udevadm trigger --action accepts
// (systemd's device_action_table).
var udevActions = []string{"add", "remove", "change", "move", "online", "offline", "bind", "unbind"}

// syspath is a plausible sysfs path of a block device for udevadm's
// messages: the root disk and the virtio disks on the PCI bus, SCSI disks
// behind the virtio-scsi controller.
func (d blockDev) syspath(index int) string {
	switch {
	case d.name == rootDiskName:
		return "/sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda"
	case d.typ == "part":
		return "/sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda/" + d.name
	case strings.HasPrefix(d.name, "sd"):
		return fmt.Sprintf("/sys/devices/pci0000:00/0000:00:06.0/virtio3/host2/target2:0:0/2:0:0:%d/block/%s", index, d.name)
	}
	return fmt.Sprintf("/sys/devices/pci0000:00/0000:00:%02x.0/virtio%d/block/%s", 5+index, 4+index, d.name)
}

// udevadmTool: udevadm trigger [-v] [-n] [-q] [-t devices] [-c ACTION]
// [-s SUBSYSTEM] [-S SUBSYSTEM] [-w] [DEVICE...], udevadm settle [-t
// SECONDS], udevadm --version (systemd 249, Ubuntu 22.04's udev).
//
// trigger replays the kernel's uevents of the block devices (the only
// devices modelled): udevd, which the simulation runs synchronously,
// rewrites /dev/disk/by-id, by-uuid and by-label, and a disk whose event
// udev missed ([Disk.DelayUdev]) gets its links once enough triggers
// replayed it. The default action is "change", as udevadm's; "add" works
// the same way for links (60-persistent-storage.rules skips only
// "remove"), and "remove" is not modelled. -s and -S filter by subsystem
// ("block"), DEVICE operands by device node. A user other than root
// cannot write the devices' uevent files: "Failed to write 'change' to
// '/sys/.../uevent': Permission denied" and exit status 1
// (src/udev/udevadm-trigger.c, exec_list). Since events are handled at
// once, settle never has anything to wait for and exits 0.
func udevadmTool(_ context.Context, m *Machine, p *sshtest.Process) int {
	if len(p.Args) < 2 {
		return notModelled(p, "udevadm without a command")
	}
	switch p.Args[1] {
	case "--version", "-V", "version":
		outf(p, "249")
		return 0
	case "trigger":
		return m.udevadmTrigger(p)
	case "settle":
		c, code, ok := optSpec{short: "t:E:q", long: []string{"timeout=", "exit-if-exists=", "quiet"}}.parse(p, p.Args[2:], false)
		if !ok {
			return code
		}
		if t, ok := c.Value("-t", "--timeout"); ok {
			if _, err := time.ParseDuration(t + "s"); err != nil {
				if _, err := time.ParseDuration(t); err != nil {
					errf(p, "Failed to parse timeout value '%s': Invalid argument", t)
					return 1
				}
			}
		}
		if len(c.Operands) > 0 {
			errf(p, "Extraneous argument: %s", c.Operands[0])
			return 1
		}
		return 0
	}
	return notModelled(p, "udevadm %s", p.Args[1])
}

func (m *Machine) udevadmTrigger(p *sshtest.Process) int {
	c, code, ok := optSpec{short: "vnqt:c:s:S:w", long: []string{"verbose", "dry-run", "quiet", "type=", "action=", "subsystem-match=", "subsystem-nomatch=", "settle"}}.parse(p, p.Args[2:], false)
	if !ok {
		return code
	}
	if t, ok := c.Value("-t", "--type"); ok && t != "devices" {
		return notModelled(p, "udevadm trigger --type=%s", t)
	}
	action := "change"
	if a, ok := c.Value("-c", "--action"); ok {
		if !slices.Contains(udevActions, a) {
			errf(p, "Unknown action '%s'", a)
			return 1
		}
		if a != "add" && a != "change" {
			return notModelled(p, "udevadm trigger --action=%s", a)
		}
		action = a
	}
	match, nomatch := c.Values("-s", "--subsystem-match"), c.Values("-S", "--subsystem-nomatch")
	if len(match) > 0 && !slices.Contains(match, "block") || slices.Contains(nomatch, "block") {
		return 0 // no block device is triggered: nothing modelled changes
	}
	m.mu.Lock()
	devs := flatten(m.blockDevsLocked(), true)
	m.mu.Unlock()
	var chosen []blockDev
	for _, a := range c.Operands {
		real, err := p.FS.Realpath(a)
		i := slices.IndexFunc(devs, func(d blockDev) bool { return d.path == real })
		if err != nil || i < 0 {
			errf(p, "Failed to open the device '%s': No such device", a)
			return 1
		}
		chosen = append(chosen, devs[i])
	}
	if len(c.Operands) == 0 {
		chosen = devs
	}
	index := map[string]int{}
	for i, d := range devs {
		index[d.name] = i
	}
	if c.Has("-v", "--verbose") {
		for _, d := range chosen {
			outf(p, "%s", d.syspath(index[d.name]))
		}
	}
	if c.Has("-n", "--dry-run") {
		return 0
	}
	if !isRoot(p) {
		if !c.Has("-q", "--quiet") {
			errf(p, "Failed to write '%s' to '%s/uevent': Permission denied", action, chosen[0].syspath(index[chosen[0].name]))
		}
		return 1
	}
	var only []string
	if len(c.Operands) > 0 {
		for _, d := range chosen {
			only = append(only, d.path)
		}
	}
	m.udevTrigger(only)
	return 0
}

package nfs

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Files SetupVolume reads and edits.
const (
	// FstabFile is the file system table; SetupVolume owns one managed
	// block in it per mount_to ("# BEGIN mgmtkit volume /volume").
	FstabFile = "/etc/fstab"
	// mountsFile is the kernel's mount table (proc(5)).
	mountsFile = "/proc/mounts"
	// byIDDir is where udev links block devices by serial
	// (60-persistent-storage.rules).
	byIDDir = "/dev/disk/by-id"
)

// Volume is a Cinder volume to set up on the storage server.
type Volume struct {
	// ID is the Cinder volume's ID (the physical ID of the
	// OS::Cinder::Volume resource): the serial the VM sees the disk by.
	ID string
	// Device is the device Heat's attachment names (attachments_list's
	// device, like /dev/vdb). It is a hint only: Nova and Cinder can
	// report a device path the guest kernel did not use (kubernetes/
	// kubernetes#33128), so the device is found by the volume's ID.
	Device string
	// MountTo is mount_to: the directory the volume is mounted on, a
	// clean absolute path.
	MountTo string
}

// VolumeOptions tune [SetupVolume].
type VolumeOptions struct {
	// DeviceTimeout bounds the wait for the volume's device to appear
	// under /dev/disk/by-id; [DefaultDeviceTimeout] when zero.
	DeviceTimeout time.Duration
}

// DefaultDeviceTimeout is how long [SetupVolume] waits for a volume's
// device to appear, asking udev to replay the block devices' events
// between looks: cloud-provider-openstack's mount utility waits about as
// long, in 15 exponential steps from a second (pkg/util/mount/mount.go).
const DefaultDeviceTimeout = 30 * time.Second

// ByIDNames returns the names under /dev/disk/by-id that a Cinder volume
// with ID id may appear as, in the order cloud-provider-openstack's mount
// utility tries them (pkg/util/mount/mount.go getDevicePathBySerialID):
// a virtio disk's serial is the ID cut to 20 characters (the virtio-blk
// serial's length, VIRTIO_BLK_ID_BYTES) or, on some hypervisors, whole;
// a virtio-scsi disk shows QEMU's SCSI identity; a disk with a WWN the
// ID without dashes.
func ByIDNames(id string) []string {
	short := id
	if len(short) > 20 {
		short = short[:20]
	}
	names := []string{"virtio-" + short, "virtio-" + id, "scsi-0QEMU_QEMU_HARDDISK_" + short, "scsi-0QEMU_QEMU_HARDDISK_" + id, "wwn-0x" + strings.ReplaceAll(id, "-", "")}
	return slices.Compact(names)
}

// SetupVolume makes the Cinder volume v hold an ext4 file system mounted
// at v.MountTo, at every boot, without ever formatting a volume that
// holds data:
//
//  1. The device is the one the volume's ID names under /dev/disk/by-id
//     ([ByIDNames]). When none is there yet (udev has not caught up
//     with a hot-plugged disk), `udevadm trigger` replays the block
//     devices' add events and `udevadm settle` waits for them, and the
//     step looks again, until opts.DeviceTimeout. Heat's device name
//     is not trusted: formatting the wrong disk is the one mistake this
//     step must not make. Names that resolve to different devices are
//     an error.
//  2. `blkid -p` (a low-level probe, not the cache) says what the
//     device holds ([ParseProbe], [Probe.Decide]). Only a device where
//     it finds nothing at all (exit status 2) is formatted, with
//     `mkfs.ext4`: mke2fs asks before it overwrites a file system only
//     when its standard input and output are terminals (e2fsprogs
//     misc/mke2fs.c), so without the probe a second run would silently
//     wipe the volume, as Tacker's heal does. An ext4 file system is
//     kept, data and all; a partition table or another file system is
//     refused, naming what blkid saw.
//  3. /etc/fstab mounts the file system by UUID at v.MountTo with
//     `defaults,nofail 0 2` (nofail: the VM still boots when the volume
//     is gone, fstab(5); a Cinder volume is a local disk to the guest,
//     so no _netdev), in a managed block of its own; an fstab line of
//     someone else's that mounts v.MountTo is an error.
//  4. The file system is mounted at v.MountTo (created if missing)
//     unless it already is. Another device mounted there, or the device
//     mounted elsewhere, is an error: nothing is unmounted.
//
// On a converged VM it runs three commands, none of which changes
// anything: it looks the device up, reads the mount table and fstab,
// and probes the device.
func SetupVolume(ctx context.Context, h remote.Host, v Volume, opts VolumeOptions) (lcm.Result, error) {
	if err := v.check(); err != nil {
		return lcm.Unchanged, err
	}
	dev, err := findDevice(ctx, h, v, opts)
	if err != nil {
		return lcm.Unchanged, err
	}
	res := lcm.Unchanged
	state, err := remote.ReadFiles(ctx, h, []string{mountsFile, FstabFile}, remote.FileOptions{Sudo: true})
	if err != nil {
		return res, fmt.Errorf("nfs: reading the mount table: %w", err)
	}
	mounted, err := mountedAt(state[mountsFile], dev, v.MountTo)
	if err != nil {
		return res, fmt.Errorf("nfs: volume %s (%s): %w", v.ID, dev, err)
	}
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"blkid", "-p", "-o", "export", dev}, Sudo: true, OKExit: []int{2, 8}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return res, fmt.Errorf("nfs: probing %s: %w", dev, err)
	}
	probe, err := ParseProbe(dev, out.ExitCode, out.Stdout)
	if err != nil {
		return res, fmt.Errorf("nfs: volume %s: %w", v.ID, err)
	}
	action, err := probe.Decide()
	if err != nil {
		return res, fmt.Errorf("nfs: volume %s: %w", v.ID, err)
	}
	uuid := probe.UUID
	if action == FormatExt4 {
		if mounted {
			// blkid found nothing on a mounted device: not a state
			// this step made, and not one to format over.
			return res, fmt.Errorf("nfs: volume %s: %s is mounted at %s but blkid finds no file system on it", v.ID, dev, v.MountTo)
		}
		uuid = newUUID()
		// The UUID is chosen here, so that fstab can name it without
		// probing again. Not idempotent: a second mkfs is the very
		// thing the probe guards against, so it is never rerun blindly.
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"mkfs.ext4", "-q", "-U", uuid, dev}, Sudo: true}); err != nil {
			return res, fmt.Errorf("nfs: formatting %s: %w", dev, err)
		}
		res = res.And(lcm.Changed("formatted " + dev + " (volume " + v.ID + ") as ext4"))
	}
	if uuid == "" {
		return res, fmt.Errorf("nfs: volume %s: blkid reports ext4 on %s without a UUID", v.ID, dev)
	}
	fstab := state[FstabFile]
	if other := fstabMountsAt(fstab, v.MountTo); other != "" {
		return res, fmt.Errorf("nfs: volume %s: %s already mounts %s (%q): remove that line or choose another mount_to", v.ID, FstabFile, v.MountTo, other)
	}
	line := fmt.Sprintf("UUID=%s %s ext4 defaults,nofail 0 2", uuid, v.MountTo)
	edited, err := remote.ReplaceBlock(fstab, fstabBlock(v.MountTo), []string{line})
	if err != nil {
		return res, fmt.Errorf("nfs: %s: %w", FstabFile, err)
	}
	if string(edited) != string(fstab) {
		if _, err := h.WriteFile(ctx, FstabFile, strings.NewReader(string(edited)), remote.FileOptions{Sudo: true, Mode: 0o644}); err != nil {
			return res, fmt.Errorf("nfs: writing %s: %w", FstabFile, err)
		}
		res = res.And(lcm.Changed(FstabFile + " mounts " + v.MountTo + " by UUID"))
	}
	if !mounted {
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"mkdir", "-p", v.MountTo}, Sudo: true, Idempotent: true, Brief: true}); err != nil {
			return res, fmt.Errorf("nfs: creating %s: %w", v.MountTo, err)
		}
		// mount reads the rest from fstab: the line just written.
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"mount", v.MountTo}, Sudo: true}); err != nil {
			return res, fmt.Errorf("nfs: mounting %s at %s: %w", dev, v.MountTo, err)
		}
		res = res.And(lcm.Changed("mounted " + dev + " at " + v.MountTo))
	}
	return res, nil
}

// check refuses a Volume the step cannot act on safely.
func (v Volume) check() error {
	var problems []string
	if v.ID == "" || strings.ContainsAny(v.ID, "/ \t\n") {
		problems = append(problems, fmt.Sprintf("the volume ID %q is not a Cinder ID", v.ID))
	}
	if !path.IsAbs(v.MountTo) || path.Clean(v.MountTo) != v.MountTo || v.MountTo == "/" || strings.ContainsAny(v.MountTo, " \t\n\\") {
		problems = append(problems, fmt.Sprintf("mount_to %q must be a clean absolute directory other than /, without blanks", v.MountTo))
	}
	if len(problems) > 0 {
		return errors.New("nfs: SetupVolume: " + strings.Join(problems, "; "))
	}
	return nil
}

// fstabBlock names SetupVolume's managed block in fstab for a mount
// directory.
func fstabBlock(mountTo string) string { return "volume " + mountTo }

// findDevice returns the device the volume's by-id names resolve to,
// replaying udev's events while none does, until the timeout.
func findDevice(ctx context.Context, h remote.Host, v Volume, opts VolumeOptions) (string, error) {
	var links []string
	for _, n := range ByIDNames(v.ID) {
		links = append(links, byIDDir+"/"+n)
	}
	// readlink -e prints the target of each name that resolves and
	// exits 1 when one does not (GNU coreutils): the answer, not a
	// failure.
	look := remote.Cmd{Args: append([]string{"readlink", "-e", "--"}, links...), OKExit: []int{1}, Idempotent: true, Brief: true, ReadOnly: true}
	resolve := func(ctx context.Context) (string, error) {
		out, err := h.Run(ctx, look)
		if err != nil {
			return "", err
		}
		var devs []string
		for _, l := range strings.Fields(string(out.Stdout)) {
			if !slices.Contains(devs, l) {
				devs = append(devs, l)
			}
		}
		if len(devs) > 1 {
			return "", fmt.Errorf("volume %s: its /dev/disk/by-id names resolve to several devices (%s)", v.ID, strings.Join(devs, ", "))
		}
		if len(devs) == 1 {
			return devs[0], nil
		}
		return "", nil
	}
	var dev string
	missing := fmt.Errorf("no device under %s names volume %s (%s); Heat attached it as %s", byIDDir, v.ID, strings.Join(ByIDNames(v.ID), ", "), cmp.Or(v.Device, "an unknown device"))
	// A command that fails is an answer, not a "not yet": it ends the
	// wait, unless it failed because the wait's time ran out.
	var failed error
	fail := func(ctx context.Context, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, missing
		}
		failed = err
		return true, nil
	}
	err := system.Wait(ctx, "the device of volume "+v.ID, cmp.Or(opts.DeviceTimeout, DefaultDeviceTimeout), 2*time.Second, func(ctx context.Context) (bool, error) {
		d, err := resolve(ctx)
		if err != nil {
			return fail(ctx, err)
		}
		if dev = d; dev != "" {
			return true, nil
		}
		// udev may not have linked a hot-plugged disk yet: replay the
		// block devices' add events and wait for the rules to run
		// (udevadm(8)), then look once more.
		for _, args := range [][]string{{"udevadm", "trigger", "--action=add", "--subsystem-match=block"}, {"udevadm", "settle", "--timeout=10"}} {
			if _, err := h.Run(ctx, remote.Cmd{Args: args, Sudo: true, Idempotent: true}); err != nil {
				return fail(ctx, fmt.Errorf("%s: %w", strings.Join(args[:2], " "), err))
			}
		}
		if d, err = resolve(ctx); err != nil {
			return fail(ctx, err)
		}
		if dev = d; dev != "" {
			return true, nil
		}
		return false, missing
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		return "", fmt.Errorf("nfs: %w", err)
	}
	return dev, nil
}

// mountedAt reads the mount table and reports whether dev is mounted at
// dir. dev mounted elsewhere, or something else mounted at dir, is an
// error: the step unmounts nothing.
func mountedAt(mounts []byte, dev, dir string) (bool, error) {
	here := false
	for line := range strings.Lines(string(mounts)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		src, target := unescapeMount(f[0]), unescapeMount(f[1])
		switch {
		case src == dev && target == dir:
			if f[2] != "ext4" {
				return false, fmt.Errorf("mounted at %s as %s, not ext4", dir, f[2])
			}
			here = true
		case src == dev:
			return false, fmt.Errorf("mounted at %s, not at mount_to %s: unmount it first", target, dir)
		case target == dir:
			return false, fmt.Errorf("%s is already mounted at %s: choose another mount_to or unmount it", src, dir)
		}
	}
	return here, nil
}

// unescapeMount undoes the octal escapes of /proc/mounts and fstab
// ("\040" for a space; proc(5), fstab(5)).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if o := s[i+1 : i+4]; o[0] >= '0' && o[0] <= '3' && o[1] >= '0' && o[1] <= '7' && o[2] >= '0' && o[2] <= '7' {
				b.WriteByte((o[0]-'0')<<6 | (o[1]-'0')<<3 | (o[2] - '0'))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fstabMountsAt returns the fstab line, outside SetupVolume's own block
// for dir, that mounts something at dir; "" when none does.
func fstabMountsAt(fstab []byte, dir string) string {
	ours, err := remote.ReplaceBlock(fstab, fstabBlock(dir), nil)
	if err != nil {
		ours = fstab // a damaged block is ReplaceBlock's to report
	}
	for line := range strings.Lines(string(ours)) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if f := strings.Fields(t); len(f) >= 2 && path.Clean(unescapeMount(f[1])) == dir {
			return t
		}
	}
	return ""
}

// newUUID returns a random (version 4) UUID for a new file system.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

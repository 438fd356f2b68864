package nfs

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The format guard. mkfs.ext4 run without a terminal formats over what a
// device holds, silently: e2fsprogs misc/mke2fs.c asks before
// overwriting an existing filesystem only "if (isatty(0) && isatty(1)
// ...)" ("The isatty() test is so we don't break existing scripts"), and
// a local experiment with Debian 12's e2fsprogs 1.47.0 shows rc 0, a new
// UUID and the old files gone, over an ext4 and over a GPT label alike.
// Tacker's reference driver runs `mkfs -t ext4` on every install and
// heal. mgmtkit asks `blkid -p -o export DEVICE` first ([ParseProbe]) and
// formats only when it finds nothing ([Probe.Decide]).

// Probe is what `blkid -p -o export DEVICE` said about a device. blkid(8)
// EXIT STATUS: 0 when it found something, 2 when it found nothing ("the
// specified token was not found, or no (specified) devices could be
// identified"), 8 when the low-level probe was ambivalent (more than one
// signature), 4 on a usage or other error.
type Probe struct {
	// Device is the device probed, as given to ParseProbe.
	Device string
	// Type is TYPE (the filesystem or other signature: "ext4", "xfs",
	// "swap"), UUID its UUID, PTType PTTYPE (a partition table: "gpt",
	// "dos") and Usage USAGE ("filesystem", "raid", "crypto", "other").
	Type, UUID, PTType, Usage string
	// Nothing is true when blkid found no signature at all (exit 2).
	Nothing bool
}

// blkid's exit statuses (util-linux misc-utils/blkid.c BLKID_EXIT_*,
// blkid(8) EXIT STATUS).
const (
	blkidFound      = 0
	blkidNotFound   = 2
	blkidOther      = 4
	blkidAmbivalent = 8
)

// ParseProbe reads the exit status and standard output of
// `blkid -p -o export DEVICE`. Exit 2 with no output is a Probe with
// Nothing set. Exit 0 is read as the KEY=value lines of -o export, one
// per line, values escaped with backslashes (util-linux blkid.c
// print_value and safe_print: "LABEL=a\ b", control characters as "^J");
// it must report TYPE or PTTYPE. Exit 8 (ambivalent: signatures of more
// than one filesystem, "use wipefs(8) to see more details"), exit 4 and
// any other status are errors naming the device: a probe that cannot
// tell what the device holds is a reason to touch nothing.
func ParseProbe(device string, exitCode int, stdout []byte) (Probe, error) {
	p := Probe{Device: device}
	switch exitCode {
	case blkidNotFound:
		if len(strings.TrimSpace(string(stdout))) != 0 {
			return Probe{}, fmt.Errorf("blkid -p %s exited 2 (nothing found) but printed %q", device, stdout)
		}
		p.Nothing = true
		return p, nil
	case blkidFound:
	case blkidAmbivalent:
		return Probe{}, fmt.Errorf("blkid -p %s exited 8: an ambivalent probe, signatures of more than one filesystem (wipefs %s lists them); mgmtkit neither formats nor mounts it", device, device)
	case blkidOther:
		return Probe{}, fmt.Errorf("blkid -p %s exited 4: a usage error or it could not open the device", device)
	default:
		return Probe{}, fmt.Errorf("blkid -p %s exited %d, which blkid(8) does not define", device, exitCode)
	}
	for n, line := range strings.Split(string(stdout), "\n") {
		if line == "" {
			continue
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok || !blkidKey.MatchString(key) {
			return Probe{}, fmt.Errorf("blkid -p -o export %s line %d %q: want KEY=value", device, n+1, line)
		}
		value := unescapeBlkid(raw)
		switch key {
		case "TYPE":
			p.Type = value
		case "UUID":
			p.UUID = value
		case "PTTYPE":
			p.PTType = value
		case "USAGE":
			p.Usage = value
		}
	}
	if p.Type == "" && p.PTType == "" {
		return Probe{}, fmt.Errorf("blkid -p %s exited 0 but reported neither TYPE nor PTTYPE: %q", device, stdout)
	}
	return p, nil
}

// blkidKey is a tag name of blkid's output (TYPE, PTTYPE,
// PART_ENTRY_SCHEME, SBMAGIC_OFFSET).
var blkidKey = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// unescapeBlkid undoes safe_print's backslashes: "\x" is x.
func unescapeBlkid(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Action is what SetupVolume does with a device, as [Probe.Decide]
// judges it.
type Action int

const (
	// FormatExt4 formats the device with ext4: blkid found nothing on it.
	FormatExt4 Action = iota + 1
	// MountExt4 mounts the ext4 filesystem the device holds, by its UUID,
	// without formatting.
	MountExt4
)

// String returns "format ext4" or "mount ext4".
func (a Action) String() string {
	switch a {
	case FormatExt4:
		return "format ext4"
	case MountExt4:
		return "mount ext4"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// fsUUID is an ext4 UUID as blkid prints it (lib/uuid unparse: 8-4-4-4-12
// lower-case hex digits); it goes into fstab as UUID=<uuid>.
var fsUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Decide says what SetupVolume does with the probed device: [FormatExt4]
// only when blkid found nothing on it; [MountExt4] when it holds an ext4
// filesystem, whose UUID (p.UUID, checked to be one) goes into fstab;
// otherwise an error naming the device and what blkid saw
// ("/dev/vdb holds a gpt partition table", "/dev/vdb holds an xfs
// filesystem"): a partition table, another filesystem (ext3 too), swap, a
// RAID member or an encrypted volume may hold data, and mgmtkit never
// formats over data. A partition table is refused even beside a TYPE.
func (p Probe) Decide() (Action, error) {
	switch {
	case p.Nothing:
		return FormatExt4, nil
	case p.PTType != "":
		return 0, fmt.Errorf("%s holds %s partition table (blkid PTTYPE=%s): %s", p.Device, article(p.PTType), p.PTType, leftAlone)
	case p.Type == "ext4":
		if !fsUUID.MatchString(p.UUID) {
			return 0, fmt.Errorf("%s holds an ext4 filesystem whose UUID blkid reports as %q, not a UUID: mgmtkit cannot mount it by UUID", p.Device, p.UUID)
		}
		return MountExt4, nil
	case p.Type != "":
		return 0, fmt.Errorf("%s holds %s (blkid TYPE=%s USAGE=%s): %s", p.Device, whatType(p.Type, p.Usage), p.Type, p.Usage, leftAlone)
	}
	return 0, errors.New(p.Device + ": blkid reported neither a signature nor nothing: " + leftAlone)
}

// leftAlone ends every refusal of Decide.
const leftAlone = "mgmtkit formats a volume only when blkid -p finds nothing on it and mounts only ext4, so it leaves this one as it is"

// whatType names a signature by its USAGE (libblkid's usage names).
func whatType(typ, usage string) string {
	switch usage {
	case "filesystem":
		return article(typ) + " filesystem"
	case "raid":
		return article(typ) + " RAID member"
	case "crypto":
		return article(typ) + " encrypted volume"
	}
	return article(typ) + " signature"
}

// article returns word with "a" or "an" before it, as it is read aloud
// ("an xfs", "an ext3", "a gpt", "a swap").
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouxAEIOUX", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

package ubuntu

import (
	"fmt"
	"io/fs"
	"strings"
)

// The release the machine runs.
const (
	osRelease = `PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
`
	lsbRelease = `DISTRIB_ID=Ubuntu
DISTRIB_RELEASE=22.04
DISTRIB_CODENAME=jammy
DISTRIB_DESCRIPTION="Ubuntu 22.04.4 LTS"
`
	fstab = "LABEL=cloudimg-rootfs\t/\t ext4\tdiscard,errors=remount-ro\t0 1\nLABEL=UEFI\t/boot/efi\tvfat\tumask=0077\t0 1\n"
)

// sourcesList is the cloud image's /etc/apt/sources.list (without its
// comments).
func sourcesList(arch string) string {
	mirror, security := "http://archive.ubuntu.com/ubuntu/", "http://security.ubuntu.com/ubuntu"
	if arch != "amd64" {
		mirror, security = "http://ports.ubuntu.com/ubuntu-ports/", "http://ports.ubuntu.com/ubuntu-ports"
	}
	var b strings.Builder
	b.WriteString("## Note, this file is written by cloud-init on first boot of an instance\n")
	for _, suite := range []string{"jammy", "jammy-updates", "jammy-backports"} {
		fmt.Fprintf(&b, "deb %s %s main restricted universe multiverse\n", mirror, suite)
	}
	fmt.Fprintf(&b, "deb %s jammy-security main restricted universe multiverse\n", security)
	return b.String()
}

// writeImage lays out the files of the Ubuntu 22.04 cloud image, with
// cloud-init's manage_etc_hosts set to manage.
func (m *Machine) writeImage(manage ManageEtcHosts) error {
	f := m.fs()
	var firstErr error
	try := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if _, err := f.Lstat("/lib"); err != nil {
		try(f.MkdirAll("/usr/lib", 0o755))
		try(f.Symlink("usr/lib", "/lib"))
	}
	try(m.writeFile("/usr/lib/os-release", osRelease, 0o644))
	if !f.Exists("/etc/os-release") {
		try(f.Symlink("../usr/lib/os-release", "/etc/os-release"))
	}
	try(m.writeFile("/etc/lsb-release", lsbRelease, 0o644))
	try(m.writeFile("/etc/issue", "Ubuntu 22.04.4 LTS \\n \\l\n\n", 0o644))
	try(m.writeFile("/etc/issue.net", "Ubuntu 22.04.4 LTS\n", 0o644))
	try(m.writeFile("/etc/debian_version", "bookworm/sid\n", 0o644))
	try(m.writeFile("/etc/machine-id", strings.ReplaceAll(newUUID(), "-", "")+"\n", 0o444))
	try(m.writeCloudInit(manage))
	if !f.Exists("/etc/hosts") {
		// As cloud-init rendered it at first boot.
		hosts, err := m.renderHosts()
		try(err)
		try(m.writeFile("/etc/hosts", hosts, 0o644))
	}
	try(m.writeFile("/etc/fstab", fstab, 0o644))
	try(m.writeFile("/etc/apt/sources.list", sourcesList(m.arch), 0o644))
	for _, dir := range []string{
		"/etc/apt/sources.list.d", "/etc/apt/trusted.gpg.d", "/etc/apt/keyrings", "/etc/apt/apt.conf.d",
		"/etc/apt/preferences.d", "/var/lib/dpkg/info", "/var/lib/dpkg/updates", "/var/lib/apt/lists/partial",
		"/var/cache/apt/archives/partial", "/usr/lib/systemd/system", "/etc/systemd/system/multi-user.target.wants",
		"/run/systemd/system", "/etc/sysctl.d", "/etc/modules-load.d", "/boot/efi", "/mnt", "/media", "/srv", "/opt", "/proc", "/sys", "/usr/share/keyrings",
	} {
		try(f.MkdirAll(dir, 0o755))
	}
	// World-writable temporary directories, sticky as on Ubuntu.
	try(f.MkdirAll("/var/tmp", 0o755))
	try(f.Chmod("/var/tmp", fs.ModeSticky|0o777))
	for _, lock := range []string{"/var/lib/dpkg/lock", "/var/lib/dpkg/lock-frontend", "/var/lib/apt/lists/lock", "/var/cache/apt/archives/lock"} {
		try(m.writeFile(lock, "", 0o640))
	}
	try(m.writeFile("/var/lib/apt/extended_states", "", 0o644))
	try(m.writeFile("/etc/apt/apt.conf.d/20auto-upgrades", "APT::Periodic::Update-Package-Lists \"1\";\nAPT::Periodic::Unattended-Upgrade \"1\";\n", 0o644))
	try(m.writeFile("/lib/modules/"+kernelRelease+"/modules.builtin", strings.Join(builtinModules, "\n")+"\n", 0o644))
	try(m.writeFile("/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n", 0o444))
	if !f.Exists("/etc/mtab") {
		try(f.Symlink("../proc/mounts", "/etc/mtab"))
	}
	try(m.addSystemAccounts())

	// The root disk and the mounts of a booted VM.
	for _, dev := range []string{"vda", "vda1", "vda14", "vda15"} {
		try(f.Mknod("/dev/"+dev, fs.ModeDevice|0o660))
		try(f.Chown("/dev/"+dev, 0, gidDisk))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mt := range []Mount{
		{"sysfs", "/sys", "sysfs", []string{"rw", "nosuid", "nodev", "noexec", "relatime"}},
		{"proc", "/proc", "proc", []string{"rw", "nosuid", "nodev", "noexec", "relatime"}},
		{"udev", "/dev", "devtmpfs", []string{"rw", "nosuid", "relatime", "size=1977212k", "nr_inodes=494303", "mode=755", "inode64"}},
		{"tmpfs", "/run", "tmpfs", []string{"rw", "nosuid", "nodev", "noexec", "relatime", "size=401756k", "mode=755", "inode64"}},
		{"/dev/vda1", "/", "ext4", []string{"rw", "relatime", "discard", "errors=remount-ro"}},
		{"tmpfs", "/dev/shm", "tmpfs", []string{"rw", "nosuid", "nodev", "inode64"}},
		{"tmpfs", "/run/lock", "tmpfs", []string{"rw", "nosuid", "nodev", "noexec", "relatime", "size=5120k", "inode64"}},
		{"/dev/vda15", "/boot/efi", "vfat", []string{"rw", "relatime", "fmask=0077", "dmask=0077", "codepage=437", "iocharset=iso8859-1", "shortname=mixed", "errors=remount-ro"}},
	} {
		m.mounts = append(m.mounts, &mountEntry{Mount: mt, system: true})
	}
	m.writeProcMountsLocked()
	m.updateDiskLinksLocked(nil)
	return firstErr
}

// addSystemAccounts adds the accounts and groups of a stock Ubuntu that a
// deployment refers to (nobody, nogroup, disk, ...) to /etc/passwd and
// /etc/group, unless they are there.
func (m *Machine) addSystemAccounts() error {
	add := func(file string, lines []string) error {
		data, err := m.fs().ReadFile(file)
		if err != nil {
			return err
		}
		content := string(data)
		for _, line := range lines {
			name, _, _ := strings.Cut(line, ":")
			if !strings.HasPrefix(content, name+":") && !strings.Contains(content, "\n"+name+":") {
				if content != "" && !strings.HasSuffix(content, "\n") {
					content += "\n"
				}
				content += line + "\n"
			}
		}
		return m.fs().WriteFile(file, []byte(content), 0o644)
	}
	if err := add("/etc/passwd", []string{
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
		"bin:x:2:2:bin:/bin:/usr/sbin/nologin",
		"sys:x:3:3:sys:/dev:/usr/sbin/nologin",
		"www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin",
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
		"_apt:x:105:65534::/nonexistent:/usr/sbin/nologin",
		"systemd-network:x:100:102:systemd Network Management,,,:/run/systemd:/usr/sbin/nologin",
		"systemd-resolve:x:101:103:systemd Resolver,,,:/run/systemd:/usr/sbin/nologin",
		"messagebus:x:102:105::/nonexistent:/usr/sbin/nologin",
		"syslog:x:104:111::/home/syslog:/usr/sbin/nologin",
		"sshd:x:109:65534::/run/sshd:/usr/sbin/nologin",
	}); err != nil {
		return err
	}
	return add("/etc/group", []string{
		"daemon:x:1:", "bin:x:2:", "sys:x:3:", "adm:x:4:syslog", "tty:x:5:", "disk:x:6:",
		"www-data:x:33:", "users:x:100:", "systemd-journal:x:101:", "systemd-network:x:102:",
		"systemd-resolve:x:103:", "messagebus:x:105:", "syslog:x:111:", "nogroup:x:65534:",
	})
}

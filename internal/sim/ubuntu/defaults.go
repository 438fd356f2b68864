package ubuntu

import (
	"context"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// DefaultCatalog returns a new catalog (each call makes its own, so
// machines never share mutable state through it) with the packages of the
// Ubuntu 22.04 cloud image, marked Base, and the common packages that
// deployment steps install from the Ubuntu archive, each with a jammy
// version.
//
// The base packages provide the fake programs of this package: apt
// (apt, apt-get, apt-mark, apt-cache), dpkg (dpkg, dpkg-query), systemd
// (systemctl, hostnamectl), udev (udevadm), init-system-helpers (service), util-linux and
// mount (lsblk, blkid, mkfs, mount, umount, mountpoint, findmnt),
// e2fsprogs (mke2fs, mkfs.ext2/3/4), coreutils (df, arch), lsb-release
// (lsb_release) and gnupg (gpg --dearmor). Removing one of them removes
// its programs, as on a real machine. Packages outside the base set bring no programs unless noted:
// running jq after installing it fails with "command not found", which
// tells a test author that the simulation lacks it.
func DefaultCatalog() *Catalog {
	c := &Catalog{}
	base := func(name, version string, deps ...string) Package {
		return Package{Name: name, Version: version, Base: true, Depends: deps}
	}
	tools := func(p Package, t map[string]Tool) Package { p.Tools = t; return p }
	units := func(p Package, names ...string) Package {
		for _, n := range names {
			p.Units = append(p.Units, Unit{Name: n})
		}
		return p
	}
	for _, p := range []Package{
		tools(base("apt", "2.4.11"), map[string]Tool{
			"/usr/bin/apt": aptTool, "/usr/bin/apt-get": aptGetTool,
			"/usr/bin/apt-mark": aptMarkTool, "/usr/bin/apt-cache": aptCacheTool,
		}),
		tools(base("dpkg", "1.21.1ubuntu2.2"), map[string]Tool{"/usr/bin/dpkg": dpkgTool, "/usr/bin/dpkg-query": dpkgQueryTool}),
		units(tools(base("systemd", "249.11-0ubuntu3.12"), map[string]Tool{
			"/usr/bin/systemctl": systemctlTool, "/usr/bin/hostnamectl": hostnamectlTool,
		}), "systemd-journald.service", "systemd-networkd.service", "systemd-resolved.service", "systemd-logind.service"),
		units(base("systemd-timesyncd", "249.11-0ubuntu3.12"), "systemd-timesyncd.service"),
		tools(base("udev", "249.11-0ubuntu3.12"), map[string]Tool{"/usr/bin/udevadm": udevadmTool}),
		tools(base("init-system-helpers", "1.62"), map[string]Tool{"/usr/sbin/service": serviceTool}),
		tools(base("util-linux", "2.37.2-4ubuntu3.3"), map[string]Tool{
			"/usr/bin/lsblk": lsblkTool, "/usr/sbin/blkid": blkidTool, "/usr/sbin/mkfs": mkfsTool,
			"/usr/bin/mountpoint": mountpointTool, "/usr/bin/findmnt": findmntTool,
		}),
		tools(base("mount", "2.37.2-4ubuntu3.3"), map[string]Tool{"/usr/bin/mount": mountTool, "/usr/bin/umount": umountTool}),
		tools(base("e2fsprogs", "1.46.5-2ubuntu1.1"), map[string]Tool{
			"/usr/sbin/mke2fs": mke2fsTool, "/usr/sbin/mkfs.ext2": mke2fsTool,
			"/usr/sbin/mkfs.ext3": mke2fsTool, "/usr/sbin/mkfs.ext4": mke2fsTool,
		}),
		tools(base("coreutils", "8.32-4.1ubuntu1.1"), map[string]Tool{"/usr/bin/df": dfTool, "/usr/bin/arch": archTool}),
		// kmod's and procps's programs (Ubuntu 22.04 ships modprobe and
		// sysctl in /usr/sbin, lsmod in /usr/bin).
		tools(base("kmod", "29-1ubuntu1"), map[string]Tool{"/usr/sbin/modprobe": modprobeTool, "/usr/bin/lsmod": lsmodTool}),
		tools(base("procps", "2:3.3.17-6ubuntu2.1"), map[string]Tool{"/usr/sbin/sysctl": sysctlTool}),
		tools(base("lsb-release", "11.1.0ubuntu4"), map[string]Tool{"/usr/bin/lsb_release": lsbReleaseTool}),
		base("bash", "5.1-6ubuntu1.1"),
		base("sudo", "1.9.9-1ubuntu2.4"),
		base("grep", "3.7-1build1"),
		base("sed", "4.8-1ubuntu2"),
		base("tar", "1.34+dfsg-1ubuntu0.1.22.04.2"),
		base("gzip", "1.10-4ubuntu4.1"),
		base("libc6", "2.35-0ubuntu3.6"),
		base("tzdata", "2024a-0ubuntu0.22.04"),
		base("python3", "3.10.6-1~22.04"),
		base("openssh-client", "1:8.9p1-3ubuntu0.6"),
		units(base("openssh-server", "1:8.9p1-3ubuntu0.6", "openssh-client"), "ssh.service"),
		base("ca-certificates", "20230311ubuntu0.22.04.1", "openssl"),
		base("openssl", "3.0.2-0ubuntu1.14"),
		base("libcurl4", "7.81.0-1ubuntu1.15"),
		base("curl", "7.81.0-1ubuntu1.15", "libcurl4"),
		tools(base("gnupg", "2.2.27-3ubuntu2.1"), map[string]Tool{"/usr/bin/gpg": gpgTool}),
		base("software-properties-common", "0.99.22.9", "python3"),
		units(base("cron", "3.0pl1-137ubuntu3"), "cron.service"),
		units(base("rsyslog", "8.2112.0-2ubuntu2.2"), "rsyslog.service"),
		units(base("unattended-upgrades", "2.8ubuntu1", "python3"), "unattended-upgrades.service"),
		tools(base("iproute2", "5.15.0-1ubuntu2"), map[string]Tool{"/usr/sbin/ip": ipTool}),
		base("iptables", "1.8.7-1ubuntu5.2"),
		base("ethtool", "1:5.16-1"),
		base("git", "1:2.34.1-1ubuntu1.10"),
		base("cloud-init", "23.4.4-0ubuntu0~22.04.1", "python3"),
		base("netplan.io", "0.106.1-7ubuntu0.22.04.2", "python3"),

		{Name: "apt-transport-https", Version: "2.4.11", Depends: []string{"apt"}, Description: "transitional package for https support"},
		{Name: "gnupg2", Version: "2.2.27-3ubuntu2.1", Depends: []string{"gnupg"}, Description: "GNU privacy guard - a free PGP replacement (dummy transitional package)"},
		{Name: "jq", Version: "1.6-2.1ubuntu3", Depends: []string{"libjq1"}, Description: "lightweight and flexible command-line JSON processor"},
		{Name: "libjq1", Version: "1.6-2.1ubuntu3", Depends: []string{"libonig5"}, Description: "lightweight and flexible command-line JSON processor - shared library"},
		{Name: "libonig5", Version: "6.9.7.1-2build1", Description: "regular expressions library"},
		{Name: "socat", Version: "1.7.4.1-3ubuntu4", Description: "multipurpose relay for bidirectional data transfer"},
		{Name: "conntrack", Version: "1:1.4.6-2build2", Description: "Program to modify the conntrack tables"},
		{Name: "ebtables", Version: "2.0.11-4build2", Description: "Ethernet bridge frame table administration"},
		{Name: "ipset", Version: "7.15-1build1", Depends: []string{"libipset13"}, Description: "administration tool for kernel IP sets"},
		{Name: "libipset13", Version: "7.15-1build1", Description: "Library of the ipset administration tool"},
		{Name: "sshpass", Version: "1.09-1", Description: "Non-interactive ssh password authentication"},
		{Name: "net-tools", Version: "1.60+git20181103.0eebece-1ubuntu5", Description: "NET-3 networking toolkit"},
		{Name: "unzip", Version: "6.0-26ubuntu3.2", Description: "De-archiver for .zip files"},
		{Name: "python3-pip", Version: "22.0.2+dfsg-1ubuntu0.4", Depends: []string{"python3"}, Description: "Python package installer"},
		{Name: "chrony", Version: "4.2-2ubuntu2", Description: "Versatile implementation of the Network Time Protocol",
			Units: []Unit{{Name: "chrony.service"}}, Files: map[string]string{"/etc/chrony/chrony.conf": "pool ntp.ubuntu.com iburst maxsources 4\n"}},
		{Name: "keyutils", Version: "1.6.1-2ubuntu3", Description: "Linux Key Management Utilities"},
		{Name: "libnfsidmap1", Version: "1:2.6.1-1ubuntu1.2", Description: "NFS idmapping library"},
		{Name: "rpcbind", Version: "1.2.6-2build1", Description: "converts RPC program numbers into universal addresses",
			Units: []Unit{{Name: "rpcbind.service"}, {Name: "rpcbind.socket", File: "[Unit]\nDescription=RPCbind Server Activation Socket\n\n[Socket]\nListenStream=/run/rpcbind.sock\n\n[Install]\nWantedBy=sockets.target\n"}}},
		{Name: "nfs-common", Version: "1:2.6.1-1ubuntu1.2", Depends: []string{"rpcbind", "keyutils", "libnfsidmap1"},
			Description: "NFS support files common to client and server",
			Files: map[string]string{
				"/etc/idmapd.conf":                    "[General]\n\nVerbosity = 0\n# set your own domain here, if it differs from FQDN minus hostname\n# Domain = localdomain\n\n[Mapping]\n\nNobody-User = nobody\nNobody-Group = nogroup\n",
				"/etc/default/nfs-common":             "NEED_STATD=\nSTATDOPTS=\nNEED_IDMAPD=\nNEED_GSSD=\n",
				"/etc/request-key.d/id_resolver.conf": "create\tid_resolver\t*\t*\t/usr/sbin/nfsidmap -t 600 %k %d\n",
			},
			Programs: map[string]sshtest.Program{"/usr/sbin/mount.nfs": mountNFSNotModelled, "/usr/sbin/mount.nfs4": mountNFSNotModelled},
		},
		{Name: "netfilter-persistent", Version: "1.0.16", Description: "boot-time loader for netfilter configuration",
			Units: []Unit{{Name: "netfilter-persistent.service"}}},
		{Name: "iptables-persistent", Version: "1.0.16", Depends: []string{"netfilter-persistent", "iptables"}, Debconf: true,
			Description: "boot-time loader for netfilter rules, iptables plugin",
			Files:       map[string]string{"/etc/iptables/rules.v4": "", "/etc/iptables/rules.v6": ""}},
	} {
		c.Add(p)
	}
	return c
}

// mountNFSNotModelled is the mount.nfs of the default nfs-common: it exists
// (so mount finds a helper and `command -v mount.nfs` succeeds) but fails
// loudly until the simulated cloud replaces nfs-common with a package
// whose mount.nfs talks to its NFS servers.
func mountNFSNotModelled(_ context.Context, p *sshtest.Process) int {
	return p.Fail(32, "NFS mounts are not modelled by internal/sim/ubuntu's default catalog: add an nfs-common whose /usr/sbin/mount.nfs the simulated cloud provides")
}

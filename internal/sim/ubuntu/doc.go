// Package ubuntu turns an [sshtest.Server] into a simulated Ubuntu 22.04
// VM: the programs every host of the simulated cloud shares, as semantic
// fakes over shared state, so that tests of idempotent steps assert
// outcomes — a package is installed, a service restarted exactly once, a
// disk formatted once, mounted and listed in /etc/fstab — rather than
// command strings.
//
//	srv := sshtest.Start(t, sshtest.Config{Users: ...})
//	m := ubuntu.Install(srv, ubuntu.Options{})
//	disk := ubuntu.NewDisk(10 << 30)
//	m.AttachDisk("/dev/vdb", disk)
//	// ... run the step under test over SSH ...
//	m.Installed("nfs-common"); m.Service("docker").Restarts; disk.Formats()
//
// # What is modelled
//
//   - The cloud image: /etc/os-release (22.04.4 LTS, jammy), lsb-release,
//     /etc/hosts as cloud-init writes it, /etc/fstab with the root and EFI
//     lines, /etc/apt with the Ubuntu archive in sources.list, /var/lib/dpkg
//     (a status file kept in step with the package state), /proc/mounts,
//     /proc/swaps (no swap), the root disk /dev/vda with its partitions, the
//     system accounts (nobody, nogroup, disk, ...), and merged /usr (/lib is
//     a link to usr/lib).
//   - Packages ([Catalog], [Package]): apt-get and apt update, install
//     (pkg=version, dependencies marked automatic, upgrades, downgrades
//     refused without --allow-downgrades, held packages refused without
//     --allow-change-held-packages, the "Do you want to continue?" question
//     read from standard input without -y), remove, purge (configuration
//     files under /etc survive remove, so dpkg -s then reports "deinstall
//     ok config-files"), autoremove, upgrade; apt list; apt-mark
//     hold/unhold/showhold; apt-cache policy/madison; dpkg -s/-l/-L,
//     --print-architecture, --configure -a; dpkg-query -W with
//     --showformat. apt-get needs root and the dpkg lock, which
//     [Machine.HoldDpkgLock] holds as unattended-upgrades does after boot
//     (and which a concurrent apt-get really holds). A fresh machine's
//     package lists are empty: apt-get finds only installed packages until
//     apt-get update runs, and a package from a third-party repository
//     ([Package.Repo]) only once a source names that repository. A
//     signed repository ([Catalog.AddRepository]) is used only when the
//     keyring its source names (signed-by, one-line or deb822), or else
//     /etc/apt/trusted.gpg(.d), holds its key: binary in *.gpg, armored
//     in *.asc; otherwise apt 2.4's NO_PUBKEY error, exit 100. With a
//     [Catalog.SetTransport], apt-get update reaches each repository over
//     the network, through the proxy apt's configuration names
//     (Acquire::http(s)::Proxy[::HOST] in /etc/apt/apt.conf(.d), -o, or
//     http(s)_proxy and no_proxy); an unreachable one is a warning and its
//     old lists stay. gpg --dearmor ([Dearmor]) turns an armored key into
//     a keyring.
//     DEBIAN_FRONTEND=noninteractive silences debconf for packages that ask
//     questions. Installing runs [Package.OnInstall] (the postinst), then
//     enables and starts the package's units; a failing hook leaves the
//     package half-configured, as dpkg does.
//   - systemd ([Unit], [ServiceState]): systemctl start, stop, restart,
//     try-restart, reload, reload-or-restart, enable/disable [--now],
//     is-active, is-enabled, is-failed, status, show -p, daemon-reload,
//     reset-failed, and service. Units come from packages,
//     [Machine.AddUnit], or unit files a step writes under
//     /etc/systemd/system; a unit file linked to another unit's is its
//     alias; a changed unit file or drop-in makes the unit
//     NeedDaemonReload until daemon-reload, with systemctl's warning;
//     [Machine.ReportTransientState] makes `systemctl show` report a unit
//     activating, reloading or deactivating for a number of calls.
//     Jobs call the unit's hooks, so a fake daemon can re-read its
//     configuration on restart and fail to start on a bad one. Every job
//     is counted. hostnamectl set-hostname writes /etc/hostname, which
//     hostname and uname -n read.
//   - Block devices ([Disk]): lsblk, blkid (exit 2 on a blank disk; -p,
//     the low-level probe, with VERSION and USAGE, its exit statuses and
//     its "Permission denied" for a user who may not read the device),
//     mkfs/mke2fs/mkfs.ext4 (which, as without a terminal, replace a
//     filesystem or partition table without asking, and refuse a mounted
//     device), mount (device, UUID=, LABEL=, /dev/disk/by-* links, one
//     operand from /etc/fstab, -a, and /sbin/mount.TYPE helpers for other
//     filesystems), umount, mountpoint, findmnt, df. A disk's files are its
//     own: mounting it at a directory shows them there (hiding what the
//     directory held until umount), files written there belong to the disk
//     and survive umount, remount and attachment to another machine, and
//     mkfs wipes them. Programs and SFTP see the mounted files, because the
//     machine moves them into its filesystem on mount and back on umount.
//     A disk's serial and bus ([DiskBus]: virtio, or SCSI with an optional
//     WWN) give its /dev/disk/by-id names as udev does; udevadm trigger
//     and settle replay and wait for udev's events, and [Disk.DelayUdev]
//     makes a disk's links late until enough triggers. A test can put
//     what other programs write on a disk ([Disk.WriteGPT],
//     [Disk.FormatXFS], [Disk.MakeSwap]) and files in its filesystem
//     ([Disk.WriteFile]).
//   - The kernel: modules (modprobe [-a] [--dry-run], lsmod,
//     /proc/modules; br_netfilter brings the net.bridge.* sysctls; ext4, dm-mod and a few
//     others are built in, listed in /lib/modules/RELEASE/modules.builtin) and
//     parameters (sysctl KEY, -n, -e, -w, -p FILE, --system; /proc/sys),
//     root only for changes, as kmod and procps-ng behave. A
//     [Machine.Reboot] unloads every module and resets the parameters,
//     then applies modules-load.d and sysctl.d as systemd does at boot.
//     [Machine.HoldAptLocks] holds the dpkg and lists locks for a number
//     of attempts to take them (apt-get's DPkg::Lock::Timeout=N makes up
//     to N), so that a step's lock timeout and retries can be tested
//     without a clock.
//   - lsb_release, arch and, on arm64, uname report the release and the
//     architecture.
//   - The login PATH of SSH sessions ([LoginPath]): OpenSSH's default user
//     path overridden by /etc/environment (pam_env); Ubuntu's
//     /etc/environment puts the sbin directories on it, Debian's
//     ([DebianLoginPath]) leaves a user other than root without them.
//   - cloud-init's /etc/hosts ([ManageEtcHosts], [HostsTemplate]): with
//     manage_etc_hosts true (the default here), every boot renders
//     /etc/hosts from /etc/cloud/templates/hosts.debian.tmpl.
//   - [Machine.Reboot]: mounts and running units go; /etc/fstab is mounted,
//     cloud-init rewrites /etc/hosts, and the enabled units start again, so a test can check that a step
//     made its changes persistent.
//
// # What is not modelled
//
//   - Package contents beyond what a [Package] declares, maintainer
//     script prompts about changed configuration files, version
//     constraints in dependencies, alternatives, virtual packages,
//     signatures themselves (a repository's key is checked, nothing is
//     verified; repositories not added as signed are trusted once named),
//     keyring fingerprints in signed-by, downloads and sizes. gpg does
//     --dearmor only.
//   - systemd dependencies between units, sockets activating services,
//     timers, masking, the journal; boot itself: the image's units are
//     running when Install returns, and their counters start at zero.
//   - Files and mounts of filesystems other than ext2/3/4 on simulated
//     disks (an XFS or a swap area is only a signature), partitions in a
//     partition table, ambivalent probes (a disk holds one signature),
//     udev's events for devices other than disks, read-only mounts (ro is
//     shown but not enforced), bind mounts,
//     mounting one device twice or stacking mounts (refused as "already
//     mounted or mount point busy"), disk space (df and lsblk show
//     plausible figures from the files' sizes), hard links inside a disk's
//     files (they become copies when the disk is unmounted), open files and
//     working directories of other sessions keeping a mount busy. blkid
//     without -p reports nothing to users other than root (its cache is
//     not modelled). NFS: the default catalog's nfs-common has a mount.nfs
//     that fails loudly; the simulated cloud replaces it with one that
//     talks to its NFS servers (internal/sim/nfsd), using [Machine.AddMount].
//
// # Extending the catalog
//
// Other packages of the simulated cloud (docker, containerd, kubeadm, an
// NFS server) add [Package] values to a catalog made by [DefaultCatalog]:
// fake programs as [Package.Programs] or, when they need the machine, as
// [Package.Tools]; daemons as [Package.Units] whose hooks act on state kept
// with [Machine.Extension]; configuration files as [Package.Files]. See
// the package example.
//
// All state is per [Machine] and guarded by its mutex: commands of several
// SSH sessions run concurrently. There is no package-level mutable state.
package ubuntu

package nfsd

import (
	"context"
	"io"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Version is the version of Ubuntu 22.04's nfs-utils packages
// (nfs-common, nfs-kernel-server) in jammy-updates.
const Version = "1:2.6.1-1ubuntu1.2"

// etcExports is the /etc/exports the package's postinst installs with
// ucf from /usr/share/nfs-kernel-server/conffiles/etc.exports (Debian's
// nfs-kernel-server 1:2.6.2-4+deb12u1, dpkg -x; the same file in Ubuntu's
// packaging).
const etcExports = `# /etc/exports: the access control list for filesystems which may be exported
#		to NFS clients.  See exports(5).
#
# Example for NFSv2 and NFSv3:
# /srv/homes       hostname1(rw,sync,no_subtree_check) hostname2(ro,sync,no_subtree_check)
#
# Example for NFSv4:
# /srv/nfs4        gss/krb5i(rw,sync,fsid=0,crossmnt,no_subtree_check)
# /srv/nfs4/homes  gss/krb5i(rw,sync,no_subtree_check)
#
`

// defaultNFSKernelServer is /etc/default/nfs-kernel-server, from the
// package's nfs-kernel-server.default.
const defaultNFSKernelServer = `# Number of servers to start up
RPCNFSDCOUNT=8

# Runtime priority of server (see nice(1))
RPCNFSDPRIORITY=0

# Options for rpc.mountd.
# If you have a port-based firewall, you might want to set up
# a fixed port here using the --port option. For more information, 
# see rpc.mountd(8) or http://wiki.debian.org/SecuringNFS
# To disable NFSv4 on the server, specify '--no-nfs-version 4' here
RPCMOUNTDOPTS="--manage-gids"

# Do you want to start the svcgssd daemon? It is only required for Kerberos
# exports. Valid alternatives are "yes" and "no"; the default is "no".
NEED_SVCGSSD=""

# Options for rpc.svcgssd.
RPCSVCGSSDOPTS=""
`

// nfsServerUnit is /lib/systemd/system/nfs-server.service as the package
// ships it: exportfs -r before rpc.nfsd starts and on reload, exportfs
// -au and -f after it stops ("-" prefixes: their failures are ignored).
const nfsServerUnit = `[Unit]
Description=NFS server and services
DefaultDependencies=no
Requires=network.target proc-fs-nfsd.mount
Requires=nfs-mountd.service
Wants=rpcbind.socket network-online.target
Wants=rpc-statd.service nfs-idmapd.service
Wants=rpc-statd-notify.service
Wants=nfsdcld.service

After=network-online.target local-fs.target
After=proc-fs-nfsd.mount rpcbind.socket nfs-mountd.service
After=nfs-idmapd.service rpc-statd.service
After=nfsdcld.service
Before=rpc-statd-notify.service

# GSS services dependencies and ordering
Wants=auth-rpcgss-module.service rpc-svcgssd.service
After=rpc-gssd.service gssproxy.service rpc-svcgssd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStartPre=-/usr/sbin/exportfs -r
ExecStart=/usr/sbin/rpc.nfsd
ExecStop=/usr/sbin/rpc.nfsd 0
ExecStopPost=/usr/sbin/exportfs -au
ExecStopPost=/usr/sbin/exportfs -f

ExecReload=-/usr/sbin/exportfs -r

[Install]
WantedBy=multi-user.target
`

// nfsMountdUnit is the package's nfs-mountd.service.
const nfsMountdUnit = `[Unit]
Description=NFS Mount Daemon
DefaultDependencies=no
Requires=proc-fs-nfsd.mount
Wants=network-online.target
After=proc-fs-nfsd.mount
After=network-online.target local-fs.target
After=rpcbind.socket
BindsTo=nfs-server.service

[Service]
Type=forking
ExecStart=/usr/sbin/rpc.mountd
`

// aliasUnit is the alias the package links to nfs-server.service
// (debian/nfs-kernel-server.links: "nfs-kernel-server.service alias
// symlink, to match SysV init script"), so that `systemctl restart
// nfs-kernel-server` restarts nfs-server.
const aliasUnit = "/lib/systemd/system/nfs-kernel-server.service"

// nfsConf is /etc/nfs.conf, which nfs-common's postinst installs with
// ucf (its conffiles/nfs.conf).
const nfsConf = `#
# This is a general configuration for the
# NFS daemons and tools
#
[general]
pipefs-directory=/run/rpc_pipefs
#
[exports]
# rootdir=/export
#
[exportfs]
# debug=0
#
[mountd]
# debug="all|auth|call|general|parse"
manage-gids=y
# state-directory-path=/var/lib/nfs
#
[nfsd]
# threads=8
# vers3=y
# vers4=y
`

// AddPackages puts the NFS packages of Ubuntu 22.04 in c, bound to net:
//
//   - nfs-common, replacing [ubuntu.DefaultCatalog]'s (whose mount.nfs
//     fails as not modelled): mount.nfs and mount.nfs4 that mount from
//     the NFS servers of net ([Resolve]) and record the mount
//     ([ubuntu.Machine.AddMount]), umount.nfs and umount.nfs4, its
//     configuration files and /var/lib/nfs;
//   - nfs-kernel-server: exportfs, /etc/exports (the stock comment
//     header), /etc/default/nfs-kernel-server, /var/lib/nfs/etab and
//     rmtab, and the units nfs-server.service (with the alias
//     nfs-kernel-server.service) and nfs-mountd.service. Starting
//     nfs-server mounts the nfsd filesystem (/proc/fs/nfsd) and runs
//     exportfs -r; reloading it runs exportfs -r; stopping it exportfs -au.
//     As in Ubuntu's and Debian's packages, /etc/exports.d is not shipped
//     (debian/nfs-kernel-server.dirs; dpkg -c of nfs-kernel-server
//     1:2.6.2-4+deb12u1): whoever writes a file there creates it.
func AddPackages(c *ubuntu.Catalog, net Network) {
	base, _ := c.Lookup("nfs-common")
	files := map[string]string{"/etc/nfs.conf": nfsConf}
	for k, v := range base.Files {
		files[k] = v
	}
	mount := mountNFSTool(net)
	c.Add(ubuntu.Package{
		Name: "nfs-common", Version: Version, Depends: []string{"rpcbind", "keyutils", "libnfsidmap1"},
		Description: "NFS support files common to client and server",
		Files:       files,
		Tools: map[string]ubuntu.Tool{
			"/usr/sbin/mount.nfs": mount, "/usr/sbin/mount.nfs4": mount,
			"/usr/sbin/umount.nfs": umountNFSTool, "/usr/sbin/umount.nfs4": umountNFSTool,
		},
		OnInstall: func(m *ubuntu.Machine) error {
			f := m.Server().FS()
			for _, d := range []string{stateDir, stateDir + "/sm", stateDir + "/sm.bak", "/etc/nfs.conf.d"} {
				if err := f.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if !f.Exists(stateDir + "/state") {
				return f.WriteFile(stateDir+"/state", nil, 0o644)
			}
			return nil
		},
	})
	c.Add(ubuntu.Package{
		Name: "nfs-kernel-server", Version: Version, Depends: []string{"nfs-common", "keyutils"},
		Description: "support for NFS kernel server",
		Files: map[string]string{
			"/etc/exports":                   etcExports,
			"/etc/default/nfs-kernel-server": defaultNFSKernelServer,
		},
		Tools: map[string]ubuntu.Tool{"/usr/sbin/exportfs": exportfsTool},
		Units: []ubuntu.Unit{
			{Name: "nfs-mountd.service", File: nfsMountdUnit},
			{Name: serverUnit, File: nfsServerUnit, OnStart: serverStart, OnStop: serverStop, OnReload: serverReload},
		},
		OnInstall: func(m *ubuntu.Machine) error {
			f := m.Server().FS()
			if err := f.MkdirAll(stateDir+"/v4recovery", 0o755); err != nil {
				return err
			}
			for _, name := range []string{etabFile, stateDir + "/rmtab"} {
				if !f.Exists(name) {
					if err := f.WriteFile(name, nil, 0o644); err != nil {
						return err
					}
				}
			}
			if _, err := f.Lstat(aliasUnit); err != nil {
				return f.Symlink("nfs-server.service", aliasUnit)
			}
			return nil
		},
		OnRemove: func(m *ubuntu.Machine) error {
			m.Server().FS().Remove(aliasUnit)
			return nil
		},
	})
}

// exportfsTool is /usr/sbin/exportfs ([runExportfs]).
func exportfsTool(_ context.Context, _ *ubuntu.Machine, p *sshtest.Process) int {
	return runExportfs(p.FS, p.Args[1:], p.Stdout, p.Stderr)
}

// rootExportfs runs exportfs as root with its output discarded, as
// systemd runs the unit's Exec lines (their output goes to the journal).
func rootExportfs(m *ubuntu.Machine, args ...string) int {
	return runExportfs(m.Server().FS().As(sshtest.Root, "/"), args, io.Discard, io.Discard)
}

// serverStart is nfs-server.service's start: proc-fs-nfsd.mount (which
// the unit requires) mounts the nfsd filesystem, ExecStartPre=-exportfs
// -r exports what the files say (its failure ignored), and rpc.nfsd
// starts the kernel server.
func serverStart(m *ubuntu.Machine) error {
	if err := m.Server().FS().WriteFile(exportFeaturesFile, []byte(exportFeatures), 0o444); err != nil {
		return err
	}
	rootExportfs(m, "-r")
	return nil
}

// serverStop is ExecStopPost=exportfs -au (and exportfs -f).
func serverStop(m *ubuntu.Machine) error {
	rootExportfs(m, "-au")
	return nil
}

// serverReload is ExecReload=-exportfs -r.
func serverReload(m *ubuntu.Machine) error {
	rootExportfs(m, "-r")
	return nil
}

// Package nfsd is NFS in the simulated cloud: the NFS server of Ubuntu
// 22.04 (nfs-kernel-server: exportfs, /etc/exports, nfs-server.service),
// its client (nfs-common: mount.nfs) and the network between them, which
// decides, as mountd and the kernel would, whether a client may mount an
// export.
//
// [AddPackages] puts both packages in a machine's catalog, bound to a
// [Network] (the simulated cloud: which machine answers at an address,
// which address a machine's packets come from). [Resolve] and [Mount]
// answer an NFS mount without a shell, for a simulated kubelet.
//
// # exportfs
//
// exportfs is nfs-utils 2.6.x's (Ubuntu 22.04 ships 2.6.1, Debian 12
// 2.6.2; exportfs and its support code are the same in both), rewritten
// from its source (utils/exportfs/exportfs.c, support/nfs/exports.c,
// support/export/{client,export,xtab}.c at tag nfs-utils-2-6-2) and
// checked against the real program (Debian's nfs-kernel-server
// 1:2.6.2-4+deb12u1, run in a private mount namespace): its messages, exit
// statuses and outputs are the real ones, quirks included.
//
//   - It reads /etc/exports, then the files of /etc/exports.d whose names
//     end in ".exports" and do not start with a dot, in versionsort
//     order. A missing /etc/exports is an error ("can't open /etc/exports
//     for reading", exit 1) after which exports.d is still read.
//   - An entry is a path and clients, each optionally followed by
//     "(options)" with no space: "PATH CLIENT (OPTIONS)" is two clients,
//     CLIENT with the defaults (ro) and "(OPTIONS)" for the world ("No host
//     name given ..."). Defaults are ro, sync, wdelay, hide, secure,
//     root_squash, no_all_squash, no_subtree_check (with a warning when
//     neither subtree option is given). A client is a host name or address,
//     a subnetwork (ADDRESS/PREFIX or /NETMASK; host bits kept), a wildcard
//     (any name with '*', '?' or '[': "*;reboot" is one), "@netgroup",
//     "gss/..." or "*".
//   - An unknown option ('unknown keyword "bogus"'), a bad value or a bad
//     option list stops the reading of its file (the rest is not
//     exported) and makes the exit status 1; a bad client ("Invalid
//     prefix", "Failed to resolve") drops the entry; duplicates are
//     errors. Line numbers are nfs-utils': lower than the real line by the
//     comment lines above it.
//   - A path that does not exist is an error ("Failed to stat ...", exit
//     1) but stays exported: `exportfs -v` and `-s` list it.
//   - -r (with or without -a) makes /var/lib/nfs/etab what the files say;
//     -a adds them to it; host:/path exports one more (-o options, -i
//     without the files); -u host:/path and -au unexport. Without
//     operands it lists etab: `exportfs` path and client, -v with
//     options, -s one "PATH  CLIENT(OPTIONS)" line per export. Paths of
//     more than 14 characters put the client on a line of its own, "*" is
//     "<world>" but with -s, and the listing order is nfs-utils' hash
//     order, not the files'.
//   - The options listed show secure or insecure only while nfsd runs
//     (/proc/fs/nfsd/export_features, which starting nfs-server creates),
//     as on a real server; in a chroot without nfsd they do not.
//   - As a user other than root it cannot lock /var/lib/nfs/.etab.lock.
//
// Host names are resolved with the machine's /etc/hosts only (the cloud
// has no DNS); netgroups match nobody (no NIS); Kerberos flavors are
// parsed but an export without sec=sys is not mountable here.
//
// # The server and its clients
//
// nfs-server.service (alias nfs-kernel-server.service) runs exportfs -r
// when it starts or reloads and exportfs -au when it stops, as Debian's
// unit does. A mount succeeds only while it runs ("Connection refused"
// otherwise); the exports are its etab, matched as mountd matches them:
// the path or its nearest exported parent, client types in the order
// host, subnetwork, wildcard, netgroup, world, the first match winning.
// A client without nfs-common gets util-linux mount's "bad option ...
// /sbin/mount.<type> helper program" error.
//
// mount.nfs records the mount on the client ([ubuntu.Machine.AddMount]);
// findmnt, df and umount see it. Files under the client's mount point are
// the client's own: reading and writing through an NFS mount is not
// modelled on the client's filesystem. [Export.ReadFile] and
// [Export.WriteFile] act on the server's files as a client's uid and gid
// would (root_squash, all_squash, ro, the server's permissions).
package nfsd

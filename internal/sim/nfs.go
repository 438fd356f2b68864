package sim

import (
	"context"

	"github.com/mgmtkit/mgmtkit/internal/sim/nfsd"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// The cloud's NFS: every host's apt finds nfs-kernel-server and an
// nfs-common whose mount.nfs mounts from the NFS servers of the cloud's
// network (see [nfsd.AddPackages]).

// addNFSPackages adds nfs-kernel-server and the working nfs-common to a
// host's catalog.
func (c *Cloud) addNFSPackages(cat *ubuntu.Catalog) { nfsd.AddPackages(cat, c) }

// SourceAddress returns the address a host's packets to other hosts come
// from: its NIC's fixed IP (a floating IP is NAT outside the VM). It is
// "" for a machine that is no running host of the cloud. It implements
// [nfsd.Network].
func (c *Cloud) SourceAddress(m *ubuntu.Machine) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		if h.Machine == m {
			return h.NICAddress
		}
	}
	return ""
}

var _ nfsd.Network = (*Cloud)(nil)

// MountNFS does what `mount -t nfs SERVER:PATH TARGET` does on client,
// as far as the server and the client's packages decide, without
// recording a mount on client (the caller, a kubelet, owns it): it
// returns nil when the server at SERVER exports PATH (or a directory
// above it) to the client's address, and otherwise a *[nfsd.MountError]
// whose message is mount's output and whose Status is its exit status
// (32):
//
//   - without nfs-common on client: "mount: TARGET: bad option; for
//     several filesystems (e.g. nfs, cifs) you might need a
//     /sbin/mount.<type> helper program.";
//   - no NFS server running at SERVER: "mount.nfs: Connection refused";
//   - PATH not exported to the client's address: "mount.nfs: access
//     denied by server while mounting SERVER:PATH";
//   - PATH exported but missing on the server: "mount.nfs: mounting
//     SERVER:PATH failed, reason given by server: No such file or
//     directory".
//
// TARGET appears only in messages. [Cloud.OpenNFS] returns the export
// itself, for reading and writing files as a client would.
func (c *Cloud) MountNFS(ctx context.Context, client *ubuntu.Machine, server, path, target string) error {
	_, err := nfsd.Mount(ctx, c, client, server, path, target)
	return err
}

// OpenNFS is [Cloud.MountNFS] that returns what the server granted: the
// export, whose ReadFile and WriteFile act on the server's files as the
// client's uid and gid would over NFS (squashed as the export says).
func (c *Cloud) OpenNFS(ctx context.Context, client *ubuntu.Machine, server, path, target string) (*nfsd.Export, error) {
	return nfsd.Mount(ctx, c, client, server, path, target)
}

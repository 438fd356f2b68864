// Package nfs implements the pv-k8s-cluster spec: a storage server VM
// whose Cinder volumes are exported over NFS, the NFS client on every
// Kubernetes node, and the PersistentVolumes registered on those exports.
//
// This package owns two keys of k8s_cluster_installation_param:
// storage_server ([StorageServer]) and pv_registration_params
// ([PVRegistration]), gathered in [StorageParams], which a Kubernetes
// cluster driver embeds in its own parameter struct next to the other
// domain packages' parts.
//
// # Steps
//
// Each step is idempotent: run again on a converged VM it changes nothing
// and says so, with read-only commands only.
//
//   - [SetupVolume] finds a Cinder volume's disk by the volume's ID under
//     /dev/disk/by-id (Heat's device name is a hint: [ByIDNames]), formats
//     it with ext4 only when `blkid -p` finds nothing on it ([ParseProbe],
//     [Probe.Decide]: mke2fs overwrites a file system without asking when
//     it has no terminal, which is how Tacker's heal wipes the volume),
//     refuses a partition table or another file system, mounts it at
//     mount_to and keeps it in /etc/fstab by UUID with nofail.
//   - [InstallNFSServer] installs nfs-kernel-server and keeps nfs-server
//     running; [ExportNFS] exports the directories from a file of its own
//     in /etc/exports.d ([ExportsFile], [RenderExports] with
//     [ExportOptions]), re-exports only on a change, and proves the result
//     with `exportfs -s` ([ParseExportfsS], [CheckExported]).
//   - [InstallNFSClient] installs nfs-common, the mount helper the kubelet
//     needs to mount an NFS volume.
//   - [RegisterPV] applies a PersistentVolume manifest of the package
//     ([ReadPV]) with its server set to the storage server's address
//     ([PV.Manifest]: as data, not by text substitution) and waits until it
//     is Available; [CheckPVsNotInUse] and [DeletePVs] refuse while one is
//     Bound, naming it and its claim, and delete them otherwise. All three
//     act only on PersistentVolumes the VNF registered ([OwnerAnnotation]).
//
// # In a cluster's hooks
//
// [StorageParams.Extensions] plugs all of it into a Kubernetes cluster's
// hooks (kubeadm's, and kubespray's) as a [plumbing.Extension] with the
// storage server as its own VM: what Heat must hold is checked before
// anything changes; every node that joins gets the NFS client;
// instantiate_end (and heal_end of the entire VNF) sets up the storage
// server and registers the PersistentVolumes; a heal of the storage
// server is refused at heal_start while one of them is Bound and deletes
// them otherwise, and heal_end sets up the new VM (mounting the kept
// volume as it is) and registers them again at its address.
//
// # Parameters
//
// [lcm.DecodeParams] runs every check below before any remote command,
// and reports each problem with its full path, like
// "k8s_cluster_installation_param.storage_server.nfs_server_setup_params[1].export_dir".
// Passwords are [remote.Secret]s and never appear in a message. A
// required value that is absent, null or "" is "is required"; the checks
// are made in Validate methods rather than with `params:"required"` tags
// so that one decode reports every problem of the block at once.
//
// storage_server (optional):
//   - ssh_cp_name, username and password are required; ssh_cp_name and
//     the optional nic_cp_name (which Tacker reads to recognise the
//     storage server among heal targets; the spec's table omits it) are
//     Heat resource names ([heat.CheckResourceName]); username is a user
//     name ([lcm.Validator.Username]).
//   - cinder_volume_setup_params and nfs_server_setup_params are
//     required and hold at least one entry (cardinality 1..N).
//   - volume_resource_id is a Heat resource name, each given once.
//   - mount_to and export_dir are directories the steps own: absolute,
//     portable characters, no "." or ".." element, and not "/", a home
//     directory or a system directory ([lcm.Validator.HostDataDir]).
//     Validation cleans them ("/volume/" is "/volume"). Each mount_to is
//     given once.
//   - Every export_dir lies on a volume: in (or at) one of the mount_to
//     directories. The spec exports the Cinder volume ("MgmtDriver exposes
//     Cinder volume as NFS shared directories"); a directory elsewhere
//     would export the server's root disk, which a heal replaces.
//   - export_to is an IP network or a single IP address ([Network]); a
//     network's host bits are cleared ("10.10.0.5/24" is "10.10.0.0/24",
//     which is also how the kernel matches it), an address is a /32 or
//     /128. Host names, wildcards and netgroups are refused: the storage
//     server would have to resolve the nodes' names, which Heat does not
//     give them. A /0 network (every address) is refused: name the
//     cluster's network. The same export_dir and export_to pair is given
//     once; one directory may be exported to several networks.
//
// pv_registration_params (optional, 0..N):
//   - pv_manifest_file_path is required and names a regular file in the
//     VNF package ([lcm.Validator.PackageFile]); validation makes it the
//     canonical package path. Each manifest is given once.
//   - nfs_server_cp is required and is a Heat resource name: the port
//     whose first fixed IP replaces the server address in the manifest.
//     It is not compared with storage_server's connection points: the
//     NFS traffic may use a port of its own, and whether the name exists
//     only Heat can tell.
//   - pv_registration_params needs storage_server: the PersistentVolumes
//     live on its exports. (Tacker registers them only after setting up
//     a storage server and silently ignores them without one.)
package nfs

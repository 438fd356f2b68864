// Package sim is the simulated cloud that mgmtkit's tests and its tour run
// against: an OpenStack tenant whose Heat is [heattest] over real HTTP and
// whose VMs are fake SSH hosts ([sshtest]) dressed as Ubuntu 22.04
// ([ubuntu]), each on its own loopback address.
//
// One call, [Cloud.Build], turns a [Topology] into a Heat stack and the
// hosts behind it: ports carry the hosts' addresses, AutoScalingGroup
// members are member stacks, servers have Nova IDs, volumes are attached
// block devices. [RegistryVNF] and [KubernetesCluster] derive the
// topologies of the specs from the typed parameters that the packages
// owning them decode (registry.InstallParams; kubeadm's master_node and
// worker_node, nfs's storage_server, lb's external_lb_param: connection
// point names, aspect IDs, usernames and passwords); the simulation parses
// no parameter itself. The specs' samples hold placeholders mgmtkit
// refuses; [WorkingRequest] and [Cloud.Request] replace them with values
// that work here, and [Cloud.SampleCluster] and [Cloud.SampleRegistry]
// decode a sample and build its topology in one call.
//
// The world is queried and mutated through [Cloud] and [VNF]: which hosts
// exist, their files, packages and services; scale-out creates new hosts,
// scale-in removes them, heal replaces a host with a fresh, empty one at
// the address Heat then reports, with its volumes re-attached (or, with
// [HealOptions].NewVolumes, re-created blank with new IDs). Heat and the
// hosts stay consistent through every mutation.
//
// Storage: a Cinder volume is a disk whose serial is the volume ID, on the
// virtio or SCSI bus ([VolumeSpec]), so that it appears under
// /dev/disk/by-id as udev names it; Nova's device in Heat's attachments
// may be only a hint. Every host's apt finds nfs-kernel-server (exportfs
// as nfs-utils 2.6 behaves, nfs-server.service) and an nfs-common whose
// mount.nfs mounts from the NFS servers of the cloud's network, as mountd
// decides from the server's exports and the client's address (package
// internal/sim/nfsd). [Cloud.MountNFS] answers a mount as mount(8) would,
// for the simulated kubelets; [Cloud.OpenNFS] also returns the export, to
// read and write the server's files as a client would.
//
// Hooks reach the hosts with [Cloud.SSHConfig]: its Dial maps the address
// Heat reports (port 22) to the host's listener, refuses addresses no VM
// has (as a deleted VM does), and never sends a packet anywhere but
// loopback; its HostKey verifies against the known_hosts file the cloud
// keeps current. Nothing in a hook is specific to the simulation.
//
// This package sits below the domain packages' tests and beside the
// examples: it imports heat/heattest, remote/sshtest and the domain
// packages' parameter types, and nothing but tests and the tour imports
// it.
package sim

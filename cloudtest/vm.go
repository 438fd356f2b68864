package cloudtest

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/nfsd"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// VMOptions configure [NewVM].
type VMOptions struct {
	// User and Password are the login the code under test uses;
	// "ubuntu" and "ubuntu" when empty. The user has passwordless sudo,
	// as on cloud images, unless SudoWithPassword.
	User, Password string
	// SudoWithPassword makes sudo ask for the user's password.
	SudoWithPassword bool
	// Role is the VM's role in its VNF, for a step that cares
	// (Node().Role); none by default.
	Role lcm.Role
	// Packages are added to the VM's apt catalog, beside Ubuntu's, the
	// container runtimes', Kubernetes' and NFS's: apt-get installs them
	// once `apt-get update` has run, as on a fresh cloud image.
	Packages []Package
	// Installed are packages (name or name=version, from the catalog)
	// installed before the test starts, as the image or cloud-init would
	// have: their units run.
	Installed []string
}

// NewVM starts one Ubuntu 22.04 VM, for a step's test: a real SSH server
// on a loopback address whose programs (apt-get and dpkg, systemctl,
// modprobe and sysctl, mount and mkfs, hostnamectl, coreutils, ...)
// are semantic fakes over one machine's state, with the packages of
// opts in its apt catalog. Everything is stopped when t ends.
//
// The VM is the one VM of a VNF in a simulated cloud of its own: Addr is
// its address on the cloud's network, which [VM.Config]'s Dial reaches.
func NewVM(t TB, opts VMOptions) *VM {
	t.Helper()
	c := Start(t, Options{Packages: opts.Packages})
	login := Login{User: opts.User, Password: opts.Password, SudoWithPassword: opts.SudoWithPassword}
	if login.User == "" {
		login.User = "ubuntu"
	}
	if login.Password == "" {
		login.Password = "ubuntu"
	}
	v := c.NewVNF(Topology{Servers: []ServerSpec{{
		Role: opts.Role, Name: "vm", SSHCP: "vm_CP", Login: login, Packages: opts.Installed,
	}}})
	return v.All()[0]
}

// VM is one simulated Ubuntu 22.04 VM: [NewVM]'s, or one of a simulated
// VNF's ([VNF.VMs]). Its methods assert the machine's state as root sees
// it, without going through SSH, and inject faults.
//
// A VM that a heal replaced or a scale-in removed stays inspectable; it
// no longer answers SSH.
type VM struct {
	t     TB
	cloud *sim.Cloud
	h     *sim.Host

	mu   sync.Mutex
	conn *remote.SSHHost
}

// Name returns the VM's name in Heat: its server resource, or its
// member resource in a scaling group.
func (v *VM) Name() string { return v.h.Resource }

// Addr returns the address the VM's SSH port (22) answers at on the
// simulated network, as Heat reports it; [VM.Config]'s Dial reaches it.
func (v *VM) Addr() string { return v.h.SSHAddress }

// Role returns the VM's role in its VNF.
func (v *VM) Role() lcm.Role { return v.h.Role }

// Node returns the VM as Heat describes it, as a hook resolves it.
func (v *VM) Node() lcm.Node { return v.h.Node() }

// Config returns a remote.Config ready for remote.Dial or
// remote.NewSSHHost: the VM's address, its login, the simulated network's
// Dial, short timeouts, and the host key pinned to the VM's own.
func (v *VM) Config() remote.Config {
	v.t.Helper()
	cfg, err := v.cloud.SSHConfig()
	if err != nil {
		v.t.Fatalf("cloudtest: %v", err)
	}
	key, err := remote.PinnedHostKey(string(ssh.MarshalAuthorizedKey(v.h.SSH.HostKey())))
	if err != nil {
		v.t.Fatalf("cloudtest: pinning %s's host key: %v", v.Name(), err)
	}
	cfg.HostKey = key
	return cfg.For(v.h.SSHAddress, v.h.Resource, v.h.Login.User, remote.NewSecret(v.h.Login.Password))
}

// Host returns a remote.Host for the VM, made with [VM.Config]: one
// connection, opened by its first command and closed when the test
// ends. Every call returns the same host.
func (v *VM) Host() remote.Host {
	v.t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conn == nil {
		conn, err := remote.NewSSHHost(v.Config())
		if err != nil {
			v.t.Fatalf("cloudtest: %v", err)
		}
		v.conn = conn
		v.t.Cleanup(func() { conn.Close() })
	}
	return v.conn
}

// Installed reports whether a package is installed (dpkg's "install ok
// installed"; not one removed with its configuration files kept, nor one
// whose configuration failed).
func (v *VM) Installed(pkg string) bool { return v.h.Machine.Installed(pkg) }

// Version returns the installed version of a package, "" when it is not
// installed.
func (v *VM) Version(pkg string) string { return v.h.Machine.Version(pkg) }

// Held reports whether a package is on hold (apt-mark hold).
func (v *VM) Held(pkg string) bool { return v.h.Machine.Held(pkg) }

// UnitState is what systemd knows about a unit, and how many jobs of each
// kind ran on it since the VM booted.
type UnitState struct {
	// Exists says the unit is known: shipped by a package, or a unit
	// file on disk.
	Exists bool
	// Enabled says it starts at boot; Active that it runs; Failed that
	// its last start failed.
	Enabled, Active, Failed bool
	// NeedDaemonReload says its unit file or a drop-in changed since
	// systemd loaded it: a `systemctl daemon-reload` is due.
	NeedDaemonReload bool
	// Starts, Stops, Restarts and Reloads count the jobs that ran: a
	// start of a stopped unit (successful or not; package installation
	// included), a stop of a running one, restarts (an upgrade's
	// included), reloads.
	Starts, Stops, Restarts, Reloads int
}

// Unit returns the state of a systemd unit ("docker" or
// "docker.service").
func (v *VM) Unit(name string) UnitState {
	s := v.h.Machine.Service(name)
	return UnitState{
		Exists: s.Known, Enabled: s.Enabled, Active: s.Active, Failed: s.Failed, NeedDaemonReload: s.NeedDaemonReload,
		Starts: s.Starts, Stops: s.Stops, Restarts: s.Restarts, Reloads: s.Reloads,
	}
}

// ReadFile returns a file's content, read as root.
func (v *VM) ReadFile(name string) ([]byte, error) { return v.h.FS().ReadFile(name) }

// WriteFile writes a file as root would, with mode (no umask), creating
// missing parent directories (0755); a new file is owned by root, an
// existing one keeps its owner. A test seeds the VM with it.
func (v *VM) WriteFile(name string, data []byte, mode fs.FileMode) error {
	return v.h.FS().WriteFile(name, data, mode)
}

// Commands returns the commands the VM received over SSH (exec
// requests), in order: what the code under test sent.
func (v *VM) Commands() []string {
	var out []string
	for _, e := range v.h.SSH.Transcript() {
		out = append(out, e.Command)
	}
	return out
}

// Hostname returns the host name as /etc/hostname has it now.
func (v *VM) Hostname() string { return v.h.Machine.Hostname() }

// Modules returns the loaded kernel modules, sorted.
func (v *VM) Modules() []string { return v.h.Machine.LoadedModules() }

// Sysctl returns the current value of a kernel parameter (dotted key)
// and whether the kernel has it.
func (v *VM) Sysctl(key string) (string, bool) { return v.h.Machine.Sysctl(key) }

// Mount is one entry of a VM's mount table, as /proc/mounts shows it.
type Mount struct {
	// Source is the device or remote filesystem ("/dev/vdb",
	// "10.0.0.5:/exports/a"); Target the mount point; FSType the type
	// ("ext4", "nfs4").
	Source, Target, FSType string
	// Options are the options as the kernel reports them.
	Options []string
}

// Mounts returns the VM's mount table, in mount order.
func (v *VM) Mounts() []Mount {
	var out []Mount
	for _, m := range v.h.Machine.Mounts() {
		out = append(out, Mount{Source: m.Source, Target: m.Target, FSType: m.FSType, Options: m.Options})
	}
	return out
}

// Reboot restarts the VM, as `sudo reboot` and a wait for it would: mounts
// and running units go, /tmp is emptied; then /etc/fstab is mounted,
// cloud-init renders /etc/hosts again and the enabled units start. Files,
// packages, modules-load.d and sysctl.d persist (and apply), so a test
// sees what a step made persistent. It returns an error, as a VM dropping
// to emergency mode, when an fstab entry without nofail cannot be mounted.
// Open connections to the VM survive (SSH is not modelled as going down).
func (v *VM) Reboot() error { return v.h.Machine.Reboot() }

// AttachVolume attaches a blank disk of size bytes to the VM as dev
// ("/dev/vdb"), as Nova attaches a Cinder volume: lsblk and blkid see it.
// Heat does not know it: a VNF's Cinder volumes are in its [Topology]
// ([ServerSpec.Volumes]; see [VM.Volume]). It fails the test when dev is
// not a /dev path or already has a disk.
func (v *VM) AttachVolume(dev string, size int64) *Volume {
	v.t.Helper()
	if !strings.HasPrefix(dev, "/dev/") || path.Clean(dev) != dev {
		v.t.Fatalf("cloudtest: AttachVolume: %q is not a device path", dev)
	}
	if v.h.Machine.Disk(dev) != nil {
		v.t.Fatalf("cloudtest: AttachVolume: %s of %s already has a disk", dev, v.Name())
	}
	d := ubuntu.NewDisk(size)
	v.h.Machine.AttachDisk(dev, d)
	return &Volume{d: d}
}

// Volume returns the disk attached to the VM as dev (a Cinder volume of
// its VNF, or one AttachVolume attached), or nil.
func (v *VM) Volume(dev string) *Volume {
	if d := v.h.Machine.Disk(dev); d != nil {
		return &Volume{d: d}
	}
	return nil
}

// OpenNFS does what `mount -t nfs SERVER:PATH` does on the VM as far as
// the server and the VM's packages decide, and returns the export to
// read and write through as this client would: export is "SERVER:PATH",
// SERVER an address of the simulated cloud. It fails as mount.nfs does
// (without nfs-common on the VM, with no NFS server at SERVER, with PATH
// not exported to the VM's address, or missing), the error's text being
// mount's. Nothing is mounted on the VM: a test reads and writes through
// the result as a pod or an application would.
func (v *VM) OpenNFS(ctx context.Context, export string) (*NFSExport, error) {
	server, p, ok := strings.Cut(export, ":")
	if !ok || server == "" || !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("cloudtest: OpenNFS: %q is not SERVER:/PATH", export)
	}
	x, err := v.cloud.OpenNFS(ctx, v.h.Machine, server, p, "/mnt")
	if err != nil {
		return nil, err
	}
	return &NFSExport{x: x}, nil
}

// NFSExport is what an NFS server granted a client: files under the
// mounted path, read and written as the client's identity would be over
// NFS (squashed as the export says, with the server's permission checks).
type NFSExport struct {
	x        *nfsd.Export
	uid, gid int
}

// As returns the export as a client process of another identity sees
// it; the identity is root (0, 0) by default.
func (e *NFSExport) As(uid, gid int) *NFSExport { return &NFSExport{x: e.x, uid: uid, gid: gid} }

// ReadFile reads a file; name is relative to the mounted path.
func (e *NFSExport) ReadFile(name string) ([]byte, error) { return e.x.ReadFile(name, e.uid, e.gid) }

// WriteFile writes a file, relative to the mounted path: the file is the
// server's, owned by the identity the export maps the client's to; it
// fails with "permission denied" where that identity may not write, and
// "read-only file system" on a read-only export.
func (e *NFSExport) WriteFile(name string, data []byte) error {
	return e.x.WriteFile(name, data, e.uid, e.gid)
}

// FailProgram makes the next times runs of the program called name (its
// base name: "apt-get") print stderr and exit with code, without running.
func (v *VM) FailProgram(name string, times, code int, stderr string) {
	v.h.SSH.FailProgram(name, times, code, stderr)
}

// HangProgram makes the next times runs of the program called name block
// until their command is cancelled (a context deadline, a dropped
// connection); they then exit as SIGTERM would.
func (v *VM) HangProgram(name string, times int) { v.h.SSH.HangProgram(name, times) }

// DropConnectionDuring drops the SSH connection while the VM runs the
// n-th command from now (n >= 1): the command runs to completion but its
// exit status never arrives, so the client cannot know it succeeded.
func (v *VM) DropConnectionDuring(n int) { v.h.SSH.DropConnectionDuring(n) }

// RefuseDials makes the next n connections to the VM fail as they do
// while a VM boots.
func (v *VM) RefuseDials(n int) { v.h.SSH.RefuseDials(n) }

// HoldDpkgLock makes the next attempts invocations of apt-get, apt or
// dpkg that need the dpkg lock fail as on a VM whose unattended-upgrades
// runs after boot ("E: Could not get lock /var/lib/dpkg/lock-frontend.
// It is held by process 2425 (unattended-upgr)", exit status 100);
// apt-get's -o DPkg::Lock::Timeout=N waits it out.
func (v *VM) HoldDpkgLock(attempts int) { v.h.Machine.HoldDpkgLock(attempts) }

// Volume is a block device's content: a VM's Cinder volume or a disk
// [VM.AttachVolume] attached. It outlives the VM, as a volume outlives
// the VM a heal replaces.
type Volume struct{ d *ubuntu.Disk }

// Formats returns how many times mkfs made a filesystem on the volume.
func (v *Volume) Formats() int { return v.d.Formats() }

// FSType returns the type of its filesystem ("ext4"), "" when it has none.
func (v *Volume) FSType() string { return v.d.FSType() }

// UUID returns its filesystem's UUID, "" when it has none.
func (v *Volume) UUID() string { return v.d.UUID() }

// Label returns its filesystem's label, "" when none.
func (v *Volume) Label() string { return v.d.Label() }

// Serial returns its serial: a Cinder volume's ID.
func (v *Volume) Serial() string { return v.d.Serial() }

// Files returns the paths of the regular files on its filesystem,
// relative to the filesystem's root, sorted.
func (v *Volume) Files() []string { return v.d.Files() }

// ReadFile returns a file of its filesystem; name is relative to the
// filesystem's root ("exports/a.txt"), whether or not it is mounted.
func (v *Volume) ReadFile(name string) ([]byte, error) { return v.d.ReadFile(name) }

// WriteFile writes a file on its filesystem (mode 0644, owned by root),
// as data an application left there; name is relative to the
// filesystem's root.
func (v *Volume) WriteFile(name string, data []byte) error { return v.d.WriteFile(name, data) }

package nfsd

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// Network is the simulated network as NFS clients and servers see it.
type Network interface {
	// Machine returns the machine answering at ip, nil if none does.
	Machine(ip string) *ubuntu.Machine
	// SourceAddress returns the address m's packets to the other
	// machines come from (its fixed IP on their network, not a floating
	// IP, which is NAT outside the VM), "" if m is not on the network.
	SourceAddress(m *ubuntu.Machine) string
}

// The exit statuses of mount(8) and mount.nfs (support/include/xcommon.h:
// EX_USAGE 1, EX_FILEIO 16, EX_FAIL 32).
const (
	exUsage  = 1
	exFileIO = 16
	exFail   = 32
)

// MountError is an NFS mount that failed: what mount(8) or mount.nfs
// printed (without the final newline) and the exit status (32, mount's
// EX_FAIL, for every failure of the server or the client's helper).
type MountError struct {
	Status int
	Output string
}

// Error returns the output, as the kubelet quotes it after "Output: ".
func (e *MountError) Error() string { return e.Output }

// helperMissing is util-linux mount's message when `mount -t nfs` finds
// no /sbin/mount.nfs: the error of a node without nfs-common
// (kubernetes/website PR #19774 and longhorn/longhorn #1799 quote it).
func helperMissing(target string) *MountError {
	return &MountError{Status: exFail, Output: fmt.Sprintf("mount: %s: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.", target)}
}

func mountNFSError(format string, args ...any) *MountError {
	return &MountError{Status: exFail, Output: "mount.nfs: " + fmt.Sprintf(format, args...)}
}

// Export is what an NFS server granted a client: the export entry that
// admitted it and the options the server applies to its requests.
type Export struct {
	// Server is the server's machine and Addr the address mounted from.
	Server *ubuntu.Machine
	Addr   string
	// Path is the path mounted; Root the exported path that admitted it
	// (Path itself or, as mountd looks for the longest exported prefix,
	// a directory above it).
	Path, Root string
	// Client is the export's client as etab names it ("10.0.0.0/24",
	// "*").
	Client string
	// ReadOnly, RootSquash and AllSquash are the export's ro,
	// root_squash and all_squash; AnonUID and AnonGID the anonymous
	// identity squashed requests get (65534, nobody:nogroup, by default).
	ReadOnly, RootSquash, AllSquash bool
	AnonUID, AnonGID                int
}

// Squash maps a client's uid and gid to the identity the server uses for
// its requests (exports(5), "User ID Mapping"): every identity with
// all_squash, root's with root_squash, the anonymous one.
func (x *Export) Squash(uid, gid int) (int, int) {
	if x.AllSquash || x.RootSquash && uid == 0 {
		uid = x.AnonUID
	}
	if x.AllSquash || x.RootSquash && gid == 0 {
		gid = x.AnonGID
	}
	return uid, gid
}

// WriteFile writes a file under the mounted path as the client's uid and
// gid would over NFS: with the export's squashing, the server's
// permission checks ("permission denied" where the mapped identity may
// not write, as a non-root pod on a root-owned export gets) and
// "read-only file system" on a ro export. name is relative to the mount.
// The file is the server's: its owner is the mapped identity.
func (x *Export) WriteFile(name string, data []byte, uid, gid int) error {
	if x.ReadOnly {
		return &fs.PathError{Op: "open", Path: path.Join(x.Path, name), Err: syscall.EROFS}
	}
	u, g := x.Squash(uid, gid)
	view := x.Server.Server().FS().As(sshtest.Cred{UID: u, GID: g}, "/")
	return view.WriteFile(path.Join(x.Path, path.Clean("/"+name)), data, 0o644)
}

// ReadFile reads a file under the mounted path as the client's uid and
// gid would over NFS (squashed, with the server's permission checks).
func (x *Export) ReadFile(name string, uid, gid int) ([]byte, error) {
	u, g := x.Squash(uid, gid)
	view := x.Server.Server().FS().As(sshtest.Cred{UID: u, GID: g}, "/")
	return view.ReadFile(path.Join(x.Path, path.Clean("/"+name)))
}

// serverUnit is the unit that makes a machine an NFS server: while it
// is not active nothing listens on port 2049 (Debian's nfs-server.service
// runs rpc.nfsd).
const serverUnit = "nfs-server.service"

// Resolve is what an NFS server at server answers a client asking to
// mount path: the export that admits the client, or mount.nfs's error.
//
//   - No machine at that address, or no nfs-server.service running there:
//     "mount.nfs: Connection refused" (stropts.c treats ECONNREFUSED as
//     temporary and retries for the 2-minute foreground retry period,
//     nfsmount_fg; the simulation answers at once).
//   - No export of path, or of a directory above it, whose client admits
//     the client's source address: "mount.nfs: access denied by server
//     while mounting SERVER:PATH" (mountd's MNT3ERR_ACCES, EACCES in
//     utils/mount/error.c mount_error; the NFSv4 attempt falls back to
//     v3 on ENOENT or EACCES, nfs_autonegotiate).
//   - An admitted export whose path does not exist on the server:
//     "mount.nfs: mounting SERVER:PATH failed, reason given by server: No
//     such file or directory" (mountd's get_rootfh stat fails, ENOENT).
//
// The exports are the server's /var/lib/nfs/etab, read as mountd reads it
// (support/export/xtab.c), and matched as auth_authenticate does
// (support/export/auth.c): exact path first, then each parent directory;
// within a path, the first export in etab order, client types in the
// order host, subnetwork, wildcard, netgroup, world (client_check in
// support/export/client.c). Security flavors other than sys are not
// modelled: such an export is refused loudly.
func Resolve(net Network, client *ubuntu.Machine, server, exportPath string) (*Export, error) {
	spec := server + ":" + exportPath
	srv := net.Machine(server)
	if srv == nil || !srv.Service(serverUnit).Active {
		return nil, mountNFSError("Connection refused")
	}
	src, err := netip.ParseAddr(net.SourceAddress(client))
	if err != nil {
		return nil, mountNFSError("the simulated network does not know the client's address (not modelled by internal/sim/nfsd)")
	}
	root := srv.Server().FS().As(sshtest.Root, "/")
	hosts, _ := root.ReadFile("/etc/hosts")
	tab := newTable(newResolver(hosts), &logger{w: io.Discard})
	etab, _ := root.ReadFile(etabFile)
	f := newExportsFile(etabFile, etab, tab.log, secinfoMask(root), nil)
	for {
		e, ok := f.next(false)
		if !ok {
			break
		}
		x := tab.lookup(e.hostname, e.path)
		if x == nil {
			x = tab.create(e)
		}
		if x != nil {
			x.xtabent = true
		}
	}
	want := fixPath(exportPath)
	for p := want; ; {
		if x := tab.first(p, src); x != nil {
			if !slices.ContainsFunc(x.e.sec, func(s secEntry) bool { return s.num == 1 }) && len(x.e.sec) > 0 {
				return nil, mountNFSError("%s is exported with security flavors other than sys (not modelled by internal/sim/nfsd)", spec)
			}
			fi, err := root.Stat(want)
			if err != nil || !fi.IsDir() {
				return nil, mountNFSError("mounting %s failed, reason given by server: No such file or directory", spec)
			}
			return &Export{
				Server: srv, Addr: server, Path: want, Root: x.e.path, Client: x.client.hostname,
				ReadOnly: x.e.flags&flagReadOnly != 0, RootSquash: x.e.flags&flagRootSquash != 0,
				AllSquash: x.e.flags&flagAllSquash != 0, AnonUID: x.e.anonuid, AnonGID: x.e.anongid,
			}, nil
		}
		if p == "/" {
			return nil, mountNFSError("access denied by server while mounting %s", spec)
		}
		p = path.Dir(p)
	}
}

// fixPath is auth_fixpath: duplicate slashes and trailing slashes go.
func fixPath(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	return p
}

// first is the loop of auth_authenticate_newcache: the first export of
// exactly p, in type and list order, whose client admits addr.
func (t *table) first(p string, addr netip.Addr) *export {
	for typ := range mclMax {
		for _, x := range t.exports[typ] {
			if x.e.path == p && x.xtabent && x.e.flags&flagV4Root == 0 && t.check(x.client, addr) {
				return x
			}
		}
	}
	return nil
}

// hasHelper reports whether the client has /sbin/mount.nfs, which mount(8)
// runs for the nfs type (util-linux libmount, /sbin/mount.<type>).
func hasHelper(client *ubuntu.Machine) bool {
	return client.Server().FS().Exists("/sbin/mount.nfs")
}

// Mount is what `mount -t nfs SERVER:PATH TARGET` does on client, as far
// as the server and the client's packages decide: without nfs-common
// (no /sbin/mount.nfs) util-linux's "bad option ... helper program"
// error; otherwise the server's answer ([Resolve]). It changes nothing
// on the client: the caller (a kubelet) owns the mount. TARGET appears
// only in messages.
func Mount(_ context.Context, net Network, client *ubuntu.Machine, server, exportPath, target string) (*Export, error) {
	if !hasHelper(client) {
		return nil, helperMissing(target)
	}
	return Resolve(net, client, server, exportPath)
}

// --- mount.nfs and umount.nfs -------------------------------------------------

// nfsOptions are the mount options mount.nfs and the kernel's NFS client
// accept here (nfs(5)); anything else is rejected as the kernel does,
// with EINVAL.
var nfsOptions = []string{
	"rw", "ro", "defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser",
	"exec", "noexec", "suid", "nosuid", "dev", "nodev", "sync", "async",
	"atime", "noatime", "relatime", "strictatime", "nodiratime",
	"soft", "hard", "softreval", "nosoftreval", "intr", "nointr", "bg", "fg",
	"ac", "noac", "cto", "nocto", "lock", "nolock", "sharecache", "nosharecache", "resvport", "noresvport",
	"tcp", "rdma",
}

var nfsValueOptions = []string{
	"vers", "nfsvers", "minorversion", "proto", "timeo", "retrans", "retry", "rsize", "wsize", "port",
	"acregmin", "acregmax", "acdirmin", "acdirmax", "actimeo", "sec", "clientaddr", "mountport", "mountproto",
	"mountvers", "local_lock", "lookupcache", "nconnect", "namlen", "fsc",
}

// kernelMountOptions builds the options /proc/mounts shows for an NFS
// mount (Ubuntu 22.04's kernel 5.15; mount.nfs negotiates NFSv4.2 first,
// nfs_autonegotiate), and the filesystem type: "nfs4" for version 4,
// "nfs" for 3.
func kernelMountOptions(opts []string, server, client string) (fstype string, out []string, bad bool) {
	rw, atime, vers := "rw", "relatime", "4.2"
	var flags []string
	for _, o := range opts {
		k, v, hasValue := strings.Cut(o, "=")
		switch {
		case o == "":
		case o == "ro" || o == "rw":
			rw = o
		case o == "noatime" || o == "relatime" || o == "strictatime":
			atime = o
		case o == "nosuid" || o == "nodev" || o == "noexec" || o == "sync" || o == "nodiratime":
			if !slices.Contains(flags, o) {
				flags = append(flags, o)
			}
		case hasValue && (k == "vers" || k == "nfsvers"):
			switch v {
			case "3", "4", "4.0", "4.1", "4.2":
				vers = map[string]string{"3": "3", "4": "4.2", "4.0": "4.0", "4.1": "4.1", "4.2": "4.2"}[v]
			default:
				return "", nil, true
			}
		case hasValue && slices.Contains(nfsValueOptions, k):
		case !hasValue && slices.Contains(nfsOptions, o):
		case strings.HasPrefix(o, "x-") || strings.HasPrefix(o, "comment="):
		default:
			return "", nil, true
		}
	}
	out = append(append([]string{rw}, flags...), atime, "vers="+vers,
		"rsize=1048576", "wsize=1048576", "namlen=255", "hard", "proto=tcp", "timeo=600", "retrans=2", "sec=sys")
	if vers == "3" {
		out = append(out, "mountaddr="+server, "mountvers=3", "mountport=20048", "mountproto=udp", "local_lock=none", "addr="+server)
		return "nfs", out, false
	}
	return "nfs4", append(out, "clientaddr="+client, "local_lock=none", "addr="+server), false
}

// mountNFSTool is mount.nfs (utils/mount/mount.c): mount.nfs
// SERVER:/PATH DIR [-o OPTIONS] [-r] [-w] [-n] [-f] [-s]. Run as root it
// asks the server ([Resolve]) and records the mount with
// [ubuntu.Machine.AddMount]; a user other than root is refused unless
// /etc/fstab lists the mount (user mounts are not modelled).
func mountNFSTool(net Network) ubuntu.Tool {
	return func(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
		var opts []string
		var operands []string
		fake := false
		args := p.Args[1:]
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-o" && i+1 < len(args):
				i++
				opts = append(opts, strings.Split(args[i], ",")...)
			case strings.HasPrefix(a, "-o") && len(a) > 2:
				opts = append(opts, strings.Split(a[2:], ",")...)
			case a == "-r":
				opts = append(opts, "ro")
			case a == "-w":
				opts = append(opts, "rw")
			case a == "-n" || a == "-s":
			case a == "-f":
				fake = true
			case strings.HasPrefix(a, "-"):
				return p.Fail(2, "option %s (not modelled by internal/sim/nfsd)", a)
			default:
				operands = append(operands, a)
			}
		}
		if len(operands) != 2 {
			fmt.Fprintf(p.Stderr, "usage: %s remotetarget dir [-rvVwfnsh] [-o nfsoptions]\n", p.Name())
			return exUsage
		}
		spec, dir := operands[0], operands[1]
		if !isRoot(p) {
			fmt.Fprintf(p.Stderr, "%s: permission denied: no match for %s found in /etc/fstab\n", p.Name(), dir)
			return exUsage
		}
		target := p.FS.Abs(dir)
		if real, err := p.FS.Realpath(target); err == nil {
			target = real
		}
		fi, err := p.FS.Stat(target)
		switch {
		case err != nil:
			fmt.Fprintf(p.Stderr, "%s: mount point %s does not exist\n", p.Name(), target)
			return exUsage
		case !fi.IsDir():
			fmt.Fprintf(p.Stderr, "%s: mount point %s is not a directory\n", p.Name(), target)
			return exUsage
		}
		host, exportPath, ok := strings.Cut(spec, ":")
		if !ok || host == "" {
			fmt.Fprintf(p.Stderr, "%s: remote share not in 'host:dir' format\n", p.Name())
			return exFail
		}
		if strings.HasPrefix(host, "[") {
			return p.Fail(2, "IPv6 server addresses (not modelled by internal/sim/nfsd)")
		}
		addr := host
		if _, err := netip.ParseAddr(host); err != nil {
			hosts, _ := p.FS.ReadFile("/etc/hosts")
			_, addrs, ok := newResolver(hosts).lookup(host)
			if !ok {
				fmt.Fprintf(p.Stderr, "%s: Failed to resolve server %s: Name or service not known\n", p.Name(), host)
				return exFail
			}
			addr = addrs[0].String()
		}
		fstype, kopts, bad := kernelMountOptions(opts, addr, net.SourceAddress(m))
		if bad {
			fmt.Fprintf(p.Stderr, "%s: an incorrect mount option was specified\n", p.Name())
			return exFail
		}
		if _, err := Resolve(net, m, addr, exportPath); err != nil {
			msg := strings.ReplaceAll(err.Error(), addr+":"+exportPath, spec)
			fmt.Fprintln(p.Stderr, p.Name()+strings.TrimPrefix(msg, "mount.nfs")) // progname: mount.nfs4 for nfs4
			return exFail
		}
		if fake {
			return 0
		}
		for _, mt := range m.Mounts() {
			if mt.Target == target && mt.Source == spec {
				return 0 // EBUSY for the same filesystem at the same place: success (nfsmount_fg)
			}
		}
		if err := m.AddMount(ubuntu.Mount{Source: spec, Target: target, FSType: fstype, Options: kopts}); err != nil {
			return p.Fail(2, "mounting over another mount (not modelled by internal/sim/nfsd)")
		}
		return 0
	}
}

// umountNFSTool is umount.nfs (utils/mount/nfsumount.c): umount.nfs
// DIR|SPEC [-f] [-v] [-n] [-r] [-l], which umount(8) runs for an nfs or
// nfs4 mount.
func umountNFSTool(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	if len(p.Args) < 2 {
		fmt.Fprintf(p.Stderr, "usage: %s dir [-fvnrlh]\n", p.Name())
		return exUsage
	}
	spec := p.Args[1]
	for _, a := range p.Args[2:] {
		if !slices.Contains([]string{"-f", "-v", "-n", "-r", "-l"}, a) {
			fmt.Fprintf(p.Stderr, "usage: %s dir [-fvnrlh]\n", p.Name())
			return exUsage
		}
	}
	if !strings.HasPrefix(spec, "/") && !strings.Contains(spec, ":") {
		fmt.Fprintf(p.Stderr, "%s: %s: not found\n\n", p.Name(), spec)
		return exUsage
	}
	var found *ubuntu.Mount
	mounts := m.Mounts()
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].Target == spec || mounts[i].Source == spec {
			found = &mounts[i]
			break
		}
	}
	if found != nil && found.FSType != "nfs" && found.FSType != "nfs4" {
		fmt.Fprintf(p.Stderr, "%s: %s on %s is not an NFS filesystem\n", p.Name(), found.Source, found.Target)
		return exUsage
	}
	if !isRoot(p) {
		if found == nil {
			return 0
		}
		fmt.Fprintf(p.Stderr, "%s: You are not permitted to unmount %s\n", p.Name(), spec)
		return exUsage
	}
	if found == nil || !m.RemoveMount(found.Target) {
		fmt.Fprintf(p.Stderr, "%s: %s: not mounted\n", p.Name(), spec)
		return exFileIO
	}
	return 0
}

func isRoot(p *sshtest.Process) bool { return p.FS.Cred().UID == 0 }

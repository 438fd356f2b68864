package nfsd

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// testNet is a Network of machines at fixed addresses.
type testNet struct {
	mu       sync.Mutex
	machines map[string]*ubuntu.Machine
}

func (n *testNet) Machine(ip string) *ubuntu.Machine {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.machines[ip]
}

func (n *testNet) SourceAddress(m *ubuntu.Machine) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ip, x := range n.machines {
		if x == m {
			return ip
		}
	}
	return ""
}

// host is a machine of the test network with a root SSH client.
type host struct {
	*ubuntu.Machine
	t    *testing.T
	addr string
	c    *ssh.Client
}

func (n *testNet) add(t *testing.T, addr string, packages ...string) *host {
	t.Helper()
	srv := sshtest.Start(t, sshtest.Config{Users: []sshtest.User{{Name: "root", Password: "pw"}, {Name: "ubuntu", Password: "pw", Sudo: sshtest.SudoNoPassword}}})
	cat := ubuntu.DefaultCatalog()
	AddPackages(cat, n)
	m := ubuntu.Install(srv, ubuntu.Options{Catalog: cat, Packages: packages, Addresses: []netip.Prefix{netip.MustParsePrefix(addr + "/24")}})
	n.mu.Lock()
	if n.machines == nil {
		n.machines = map[string]*ubuntu.Machine{}
	}
	n.machines[addr] = m
	n.mu.Unlock()
	return &host{Machine: m, t: t, addr: addr}
}

func (h *host) client(user string) *ssh.Client {
	h.t.Helper()
	if user == "root" && h.c != nil {
		return h.c
	}
	c, err := ssh.Dial("tcp", h.Server().Addr(), &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.Password("pw")}, HostKeyCallback: ssh.FixedHostKey(h.Server().HostKey())})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	if user == "root" {
		h.c = c
	}
	return c
}

// runAs runs a shell command and returns stdout, stderr and the exit status.
func (h *host) runAs(user, cmd string) (string, string, int) {
	h.t.Helper()
	s, err := h.client(user).NewSession()
	if err != nil {
		h.t.Fatal(err)
	}
	defer s.Close()
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	err = s.Run(cmd)
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitStatus()
	}
	h.t.Fatalf("%s: %v", cmd, err)
	return "", "", 0
}

func (h *host) run(cmd string) (string, string, int) { return h.runAs("root", cmd) }

func (h *host) ok(cmd string) string {
	h.t.Helper()
	out, errs, code := h.run(cmd)
	if code != 0 {
		h.t.Fatalf("%s: exit %d, %s", cmd, code, errs)
	}
	return out
}

func wantRun(t *testing.T, what string, h *host, cmd, stdout, stderr string, code int) {
	t.Helper()
	out, errs, c := h.run(cmd)
	if out != stdout || errs != stderr || c != code {
		t.Errorf("%s:\n got exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", what, c, out, errs, code, stdout, stderr)
	}
}

func wantMountErr(t *testing.T, what string, err error, output string) {
	t.Helper()
	var me *MountError
	if !errors.As(err, &me) || me.Status != 32 || me.Output != output {
		t.Errorf("%s: %v, want %q", what, err, output)
	}
}

// server returns a test network with an NFS server at 10.0.0.5 serving
// /srv/a and /srv/b.
func server(t *testing.T) (*testNet, *host) {
	n := &testNet{}
	s := n.add(t, "10.0.0.5", "nfs-kernel-server")
	s.ok("mkdir -p /srv/a/sub /srv/b /etc/exports.d")
	return n, s
}

func TestNFSKernelServerPackage(t *testing.T) {
	_, s := server(t)
	wantRun(t, "the stock /etc/exports", s, "cat /etc/exports", etcExports, "", 0)
	wantRun(t, "an empty etab", s, "stat -c '%s %a' /var/lib/nfs/etab", "0 644\n", "", 0)
	if st := s.Service("nfs-kernel-server"); !st.Active || !st.Enabled || st != s.Service("nfs-server") {
		t.Errorf("nfs-kernel-server %+v, nfs-server %+v", st, s.Service("nfs-server"))
	}
	if !s.Service("nfs-mountd").Active {
		t.Error("nfs-mountd is not running")
	}
	wantRun(t, "the unit runs exportfs", s, "grep -c exportfs /lib/systemd/system/nfs-server.service", "4\n", "", 0)
	wantRun(t, "exportfs is there", s, "command -v exportfs", "/usr/sbin/exportfs\n", "", 0)

	// A running server shows secure/insecure in the options (nfsd's
	// export_features); etab holds the full set.
	s.ok("rm -r /etc/exports.d && mkdir /etc/exports.d && echo '/srv/a 10.0.0.0/24(rw,sync,no_subtree_check,insecure,all_squash)' > /etc/exports.d/k.exports && exportfs -ra")
	wantRun(t, "exportfs -s on a running server", s, "exportfs -s",
		"/srv/a  10.0.0.0/24(sync,wdelay,hide,no_subtree_check,sec=sys,rw,insecure,root_squash,all_squash)\n", "", 0)
	wantRun(t, "etab", s, "cat /var/lib/nfs/etab",
		"/srv/a\t10.0.0.0/24(rw,sync,wdelay,hide,nocrossmnt,insecure,root_squash,all_squash,no_subtree_check,secure_locks,acl,no_pnfs,anonuid=65534,anongid=65534,sec=sys,rw,insecure,root_squash,all_squash)\n", "", 0)
	if out, errs, code := s.runAs("ubuntu", "exportfs -ra"); code != 1 || out != "" ||
		errs != "exportfs: could not open /var/lib/nfs/.etab.lock for locking: errno 13 (Permission denied)\nexportfs: can't lock /var/lib/nfs/etab for writing\n" {
		t.Errorf("exportfs -ra as a user: %d %q %q", code, out, errs)
	}

	// Stop unexports everything; start and reload export the files again.
	s.ok("systemctl stop nfs-kernel-server")
	wantRun(t, "stopped", s, "exportfs -s", "", "", 0)
	s.ok("systemctl start nfs-server")
	wantRun(t, "started", s, "exportfs", "/srv/a        \t10.0.0.0/24\n", "", 0)
	s.ok("rm /etc/exports.d/k.exports && systemctl reload nfs-kernel-server")
	wantRun(t, "reloaded", s, "exportfs", "", "", 0)

	// /etc/exports is a configuration file: kept on remove, gone on purge,
	// and the alias goes with the package.
	s.ok("echo '# mine' >> /etc/exports && apt-get remove -y nfs-kernel-server")
	wantRun(t, "removed", s, "tail -1 /etc/exports; test -e /lib/systemd/system/nfs-kernel-server.service", "# mine\n", "", 1)
	s.ok("apt-get purge -y nfs-kernel-server")
	wantRun(t, "purged", s, "test -e /etc/exports", "", "", 1)
}

func TestResolveMatchesClients(t *testing.T) {
	n, s := server(t)
	exports := "/srv/a 10.0.0.0/24(ro,no_subtree_check) *(rw,no_subtree_check) 10.0.1.7(rw,no_subtree_check,all_squash,anonuid=1000,anongid=1000)\n" +
		"/srv/b 10.0.2.9/30(rw,no_subtree_check) web*.example(rw,no_subtree_check) @trusted(rw,no_subtree_check) gss/krb5(rw,no_subtree_check)\n" +
		"/srv/c 10.0.0.0/24(rw,no_subtree_check)\n" +
		"/srv/k 10.0.0.0/24(rw,no_subtree_check,sec=krb5)\n"
	s.ok("mkdir /srv/k && echo '10.0.3.4 web1.example web1' >> /etc/hosts && cat > /etc/exports.d/t.exports <<'EOF'\n" + exports + "EOF\nexportfs -ra || true")
	c := n.add(t, "10.0.0.6", "nfs-common")
	other := n.add(t, "10.0.9.9", "nfs-common")
	hostIP := n.add(t, "10.0.1.7", "nfs-common")
	subnet := n.add(t, "10.0.2.10", "nfs-common")
	named := n.add(t, "10.0.3.4", "nfs-common")
	unnamed := n.add(t, "10.0.3.5", "nfs-common")
	ctx := context.Background()

	// The subnetwork comes before the world: the client in it gets ro.
	x, err := Mount(ctx, n, c.Machine, s.addr, "/srv/a", "/mnt")
	if err != nil || !x.ReadOnly || x.Client != "10.0.0.0/24" || x.Root != "/srv/a" {
		t.Errorf("a client of the subnetwork: %+v, %v", x, err)
	}
	if err := x.WriteFile("f", nil, 0, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("a write through a ro export: %v", err)
	}
	if x, err := Mount(ctx, n, other.Machine, s.addr, "/srv/a", "/mnt"); err != nil || x.ReadOnly || x.Client != "*" {
		t.Errorf("a client of the world: %+v, %v", x, err)
	}
	// A host comes first of all, with its squashing.
	x, err = Mount(ctx, n, hostIP.Machine, s.addr, "/srv/a", "/mnt")
	if err != nil || x.Client != "10.0.1.7" || !x.AllSquash {
		t.Fatalf("a host: %+v, %v", x, err)
	}
	if u, g := x.Squash(0, 0); u != 1000 || g != 1000 {
		t.Errorf("all_squash with anonuid=1000 maps root to %d:%d", u, g)
	}
	// A subdirectory of an export is mounted through it.
	if x, err := Mount(ctx, n, c.Machine, s.addr, "/srv/a/sub/", "/mnt"); err != nil || x.Root != "/srv/a" || x.Path != "/srv/a/sub" {
		t.Errorf("a subdirectory: %+v, %v", x, err)
	}
	_, err = Mount(ctx, n, c.Machine, s.addr, "/srv/a/nosuch", "/mnt")
	wantMountErr(t, "a missing subdirectory", err, "mount.nfs: mounting 10.0.0.5:/srv/a/nosuch failed, reason given by server: No such file or directory")
	_, err = Mount(ctx, n, c.Machine, s.addr, "/srv/c", "/mnt")
	wantMountErr(t, "an exported path that does not exist", err, "mount.nfs: mounting 10.0.0.5:/srv/c failed, reason given by server: No such file or directory")

	// /30 with host bits in the export: 10.0.2.8-11.
	if _, err := Mount(ctx, n, subnet.Machine, s.addr, "/srv/b", "/mnt"); err != nil {
		t.Errorf("a client of 10.0.2.9/30: %v", err)
	}
	// A wildcard matches the name the server's /etc/hosts gives the
	// address; an address without a name matches no wildcard; netgroups and
	// Kerberos clients admit nobody here.
	if _, err := Mount(ctx, n, named.Machine, s.addr, "/srv/b", "/mnt"); err != nil {
		t.Errorf("web1.example by wildcard: %v", err)
	}
	_, err = Mount(ctx, n, unnamed.Machine, s.addr, "/srv/b", "/mnt")
	wantMountErr(t, "an address without a name", err, "mount.nfs: access denied by server while mounting 10.0.0.5:/srv/b")
	_, err = Mount(ctx, n, c.Machine, s.addr, "/srv/b", "/mnt")
	wantMountErr(t, "outside every client of /srv/b", err, "mount.nfs: access denied by server while mounting 10.0.0.5:/srv/b")
	if _, err := Mount(ctx, n, c.Machine, s.addr, "/srv/k", "/mnt"); err == nil || !strings.Contains(err.Error(), "not modelled") {
		t.Errorf("a Kerberos-only export: %v", err)
	}
	_, err = Mount(ctx, n, c.Machine, s.addr, "/", "/mnt")
	wantMountErr(t, "the root, not exported", err, "mount.nfs: access denied by server while mounting 10.0.0.5:/")
	_, err = Mount(ctx, n, c.Machine, "10.0.0.99", "/srv/a", "/mnt")
	wantMountErr(t, "no machine there", err, "mount.nfs: Connection refused")
	_, err = Mount(ctx, n, c.Machine, other.addr, "/srv/a", "/mnt")
	wantMountErr(t, "a machine without NFS server", err, "mount.nfs: Connection refused")

	bare := n.add(t, "10.0.0.7")
	_, err = Mount(ctx, n, bare.Machine, s.addr, "/srv/a", "/var/lib/kubelet/pods/u/volumes/kubernetes.io~nfs/pv")
	wantMountErr(t, "no nfs-common", err, "mount: /var/lib/kubelet/pods/u/volumes/kubernetes.io~nfs/pv: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.")
}

func TestMountNFSProgram(t *testing.T) {
	n, s := server(t)
	s.ok("echo '/srv/a 10.0.0.0/24(rw,no_subtree_check,root_squash)' > /etc/exports.d/a.exports && exportfs -ra && chmod 777 /srv/a")
	c := n.add(t, "10.0.0.6")
	c.ok("mkdir -p /mnt/a /mnt/b && touch /mnt/file")
	wantRun(t, "without nfs-common", c, "mount -t nfs 10.0.0.5:/srv/a /mnt/a", "",
		"mount: /mnt/a: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.\n", 32)
	c.ok("apt-get update -qq && apt-get install -y -qq nfs-common")
	wantRun(t, "mount", c, "mount -t nfs 10.0.0.5:/srv/a /mnt/a && findmnt -n -o SOURCE,FSTYPE /mnt/a && grep /mnt/a /proc/mounts", "10.0.0.5:/srv/a nfs4\n"+
		"10.0.0.5:/srv/a /mnt/a nfs4 rw,relatime,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.6,local_lock=none,addr=10.0.0.5 0 0\n", "", 0)
	wantRun(t, "the same mount again", c, "mount -t nfs 10.0.0.5:/srv/a /mnt/a && findmnt -n /mnt/a | wc -l", "1\n", "", 0)
	wantRun(t, "umount", c, "umount /mnt/a && mountpoint -q /mnt/a", "", "", 32)
	wantRun(t, "NFSv3, read-only", c, "mount -t nfs -o vers=3,ro 10.0.0.5:/srv/a /mnt/b && findmnt -n -o FSTYPE,OPTIONS /mnt/b && umount /mnt/b", "nfs ro,relatime,vers=3,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=10.0.0.5,mountvers=3,mountport=20048,mountproto=udp,local_lock=none,addr=10.0.0.5\n", "", 0)
	wantRun(t, "a bad option", c, "mount -t nfs -o bogus 10.0.0.5:/srv/a /mnt/a", "", "mount.nfs: an incorrect mount option was specified\n", 32)
	wantRun(t, "access denied", c, "mount -t nfs 10.0.0.5:/srv/b /mnt/a", "", "mount.nfs: access denied by server while mounting 10.0.0.5:/srv/b\n", 32)
	wantRun(t, "as mount.nfs4", c, "mount -t nfs4 10.0.0.5:/srv/b /mnt/a", "", "mount.nfs4: access denied by server while mounting 10.0.0.5:/srv/b\n", 32)
	wantRun(t, "not host:dir", c, "mount.nfs /srv/a /mnt/a", "", "mount.nfs: remote share not in 'host:dir' format\n", 32)
	wantRun(t, "a missing mount point", c, "mount.nfs 10.0.0.5:/srv/a /mnt/nosuch", "", "mount.nfs: mount point /mnt/nosuch does not exist\n", 1)
	wantRun(t, "a file as mount point", c, "mount.nfs 10.0.0.5:/srv/a /mnt/file", "", "mount.nfs: mount point /mnt/file is not a directory\n", 1)
	wantRun(t, "an unknown server name", c, "mount -t nfs storage:/srv/a /mnt/a", "", "mount.nfs: Failed to resolve server storage: Name or service not known\n", 32)
	wantRun(t, "a server name from /etc/hosts", c, "echo '10.0.0.5 storage' >> /etc/hosts && mount -t nfs storage:/srv/a /mnt/a && findmnt -n -o SOURCE /mnt/a && umount /mnt/a", "storage:/srv/a\n", "", 0)
	out, errs, code := c.runAs("ubuntu", "mount.nfs 10.0.0.5:/srv/a /mnt/a")
	if code != 1 || out != "" || errs != "mount.nfs: permission denied: no match for /mnt/a found in /etc/fstab\n" {
		t.Errorf("mount.nfs as a user: %d %q %q", code, out, errs)
	}
	wantRun(t, "umount.nfs of a directory not mounted", c, "umount.nfs /mnt/a", "", "umount.nfs: /mnt/a: not mounted\n", 16)
	wantRun(t, "from fstab", c, "echo '10.0.0.5:/srv/a /mnt/a nfs defaults,_netdev 0 0' >> /etc/fstab && mount /mnt/a && findmnt -n -o SOURCE /mnt/a", "10.0.0.5:/srv/a\n", "", 0)
	// The server stops: the mount stays; a new one is refused.
	s.ok("systemctl stop nfs-server")
	wantRun(t, "a stopped server", c, "mount -t nfs 10.0.0.5:/srv/a /mnt/b", "", "mount.nfs: Connection refused\n", 32)
}

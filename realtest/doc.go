// Package realtest checks registry trust, the NFS steps' parsers, the
// load balancer's HAProxy configurations and kubespray's inventory,
// group_vars and PLAY RECAP parser against real software on this
// machine, where the rest of the repository's tests use the simulated
// runtimes of internal/sim. It is a Go module of its own, so that its
// dependencies (go-containerregistry, the CRI API and gRPC) never enter
// the SDK's go.mod; it has no non-test code.
//
// # What runs for real
//
// [github.com/mgmtkit/mgmtkit/registry.ConfigureRegistryTrust] runs over SSH (a real OpenSSH sshd on
// 127.0.0.1, internal/sshdtest, as a throwaway user whose sudo asks for
// its password) against this machine, with private_registry_connection_info
// decoded by lcm.DecodeParams into registry.TrustParams from JSON, as
// a driver decodes it, and the CA read from a VNF package directory the
// test builds. Then:
//
//   - three CNCF distribution registries (Debian's docker-registry 2.8.2)
//     on free ports of 127.0.0.1: plain HTTP, TLS with a CA the test
//     creates, and TLS plus htpasswd basic auth, each reached by a DNS
//     name that only the hosts_string lines mgmtkit writes into /etc/hosts
//     resolve; the test pushes a tiny one-layer image into each with
//     go-containerregistry;
//   - containerd (Debian's 1.6.20, with the node's own
//     /etc/containerd/config.toml, its root, state and socket under the
//     test's directory) pulls each image through its CRI image service
//     (runtime.v1.ImageService/PullImage), with the credentials the
//     kubelet would read from the /var/lib/kubelet/config.json mgmtkit
//     wrote, matched as the kubelet's keyring does;
//   - a second run reports unchanged and containerd keeps its PID; with
//     mgmtkit's files moved aside and the images removed (CRI RemoveImage)
//     the same pulls fail;
//   - containerd 2.x's list-valued default config_path and a legacy
//     registry.configs entry holding only credentials (issue #9, bugs 1
//     and 4), in a version 2 config that containerd 1.6 reads;
//   - dockerd (Debian's docker.io 20.10, --iptables=false --bridge=none),
//     when it starts here: runtime detection as the login user, whose
//     PATH lacks /usr/sbin, finds it (bug 2); the daemon.json
//     insecure-registries reload (SIGHUP) makes `docker pull` of the HTTP
//     registry by name work, and mgmtkit's `docker login
//     --password-stdin` makes `docker pull` of the private image work,
//     although dockerd read /etc/hosts just before the run and Go's
//     resolver keeps it for 5 s; registry.ReadImageArchive reads a real
//     `docker save` of the tiny image;
//   - cloud-init (Debian's 22.4): its own renderer (templater.py) renders
//     the hosts template mgmtkit added its block to into an /etc/hosts
//     holding every hosts_string line, as at boot with
//     manage_etc_hosts: true.
//
// # NFS (package nfs)
//
// The pure parts of the nfs steps meet the programs they face:
//
//   - exportfs (Debian's nfs-kernel-server 2.6.2, unpacked by test.sh and
//     named by MGMTKIT_EXPORTFS) loads the file nfs.RenderExports writes
//     without a warning, exportfs -ra is idempotent (etab unchanged),
//     nfs.ParseExportfsS reads exportfs -s and nfs.CheckExported accepts
//     it; exportfs -ra without /etc/exports exits 1, "path client (opts)"
//     exports read-write to the world and "*;reboot" is accepted, and
//     nfs.RenderExports refuses what would produce them. exportfs runs
//     in the private view with tmpfs over /etc/exports.d, /var/lib/nfs
//     and /srv, in a network namespace of its own (no nfsd cache of the
//     machine is flushed);
//   - mkfs.ext4, debugfs, blkid -p, sfdisk, mkfs.xfs and mkswap on sparse
//     files: the format guard (nfs.ParseProbe, nfs.Probe.Decide) formats
//     only a blank volume, mounts an ext4 holding data without formatting
//     it, refuses a GPT label, an XFS, a swap area and an ambivalent probe
//     (exit 8), and mkfs.ext4 without a TTY is shown to format over data.
//     These need no root and run without the private view.
//
// The outputs of the real programs are kept in nfs/testdata (go test
// -run Nfs -update rewrites them), where nfs's unit tests parse them.
//
// # The external load balancer (package lb)
//
// The real haproxy -c (Debian's 2.6) judges every haproxy.cfg lb.Render
// writes: package lb's golden files (lb/testdata/render) and the
// configurations the test renders (one master or three, no worker or
// twelve, no, one or three NodePort Services, IPv4 and IPv6, another API
// port), each without an alert or a warning. The sample VNF package's
// Scripts/ExternalLB_installation.sh runs in the real bash with the
// reference's -m and -w (sudo, apt-get and systemctl stubbed, install(1)
// catching its haproxy.cfg), and HAProxy refuses what it writes with the
// exact alerts lb.RunScript reports ("server 'node1' has neither service
// port nor check port ..."); the same script without "check" on its
// portless servers passes. The refusals the reference's line edits
// provoke (a duplicate server name, a server after a frontend) and a bare
// IPv6 server address are pinned with their real words, which the
// simulated haproxy -c of internal/sim repeats. None of it needs the
// private view.
//
// Names the tests do not put in /etc/hosts are looked up at 127.0.0.1
// (the private view's resolv.conf), where nothing answers: no query
// leaves loopback.
//
// The registry and login passwords are looked for, and must not be found,
// in sshd's log, in every command line the login shell ran, and in
// mgmtkit's debug log.
//
// # The private view of the machine
//
// TestMain re-executes the test binary in a new mount namespace
// (exec.Cmd with SysProcAttr.Unshareflags CLONE_NEWNS, which also makes
// every mount private) and there mounts overlayfs over /etc, /root, /home,
// /var/lib and /run with their upper directories in a temporary directory.
// Every process the tests start (sshd and its users' sudo, useradd,
// containerd, the registries, dockerd) sees that private view, and the
// machine's own files never change. There is no systemd here, so a
// stand-in script is bind-mounted over /usr/bin/systemctl: it hands
// try-restart, try-reload-or-restart, is-active and daemon-reload to the
// test process, which restarts containerd and sends dockerd SIGHUP, as
// their systemd units do. Everything else is the real program.
//
// # What remains simulated only
//
// containerd 1.7 and 2.x (not packaged in Debian 12), CRI-O, Ubuntu's
// login PATH, the boot that runs cloud-init's renderer and the
// kubelet itself (its credential matching is re-implemented from
// kubernetes/kubernetes pkg/credentialprovider/keyring.go) stay covered
// by the fakes of internal/sim and by registry's own tests.
//
// # Running it
//
// As root on Debian 12 with containerd, runc, docker-registry, docker.io,
// openssh-server and sudo installed (./test.sh installs them with apt-get
// and runs this module too):
//
//	cd realtest && go test -race -count=1 ./...
//
// Not as root, or where a mount namespace or the overlays cannot be made,
// every test skips saying why; a missing program is a failure that says to
// run ./test.sh.
//
// # Ansible (kubespray's inventory and output)
//
// Debian 12's ansible-core 2.14 (installed by test.sh, with sshpass):
// ansible-inventory --list and --host read the hosts.yaml, group_vars and
// login files package kubespray renders, as kubespray would see them
// (groups, host vars, our group_vars over the sample's); ansible-playbook
// -c local runs small playbooks of the tests' own (a failing task, a
// failing loop item, a delegated failure, an unreachable host, kubespray's
// version assert and remove-node confirmation without a terminal, a node
// matching nothing, a missing inventory with and without
// ANSIBLE_INVENTORY_UNPARSED_FAILED), whose output and exit statuses are
// kept as golden files that kubespray's RecapParser is tested on; and,
// as root, Ansible verifies the nodes' host keys against the known_hosts
// mgmtkit writes, refusing a wrong key, with the ssh options package
// kubespray sets over kubespray's ansible.cfg.

package realtest

#!/usr/bin/env bash
# The one test command: installs what the tests need when it is missing,
# then runs every check CI runs.
#
#   ./test.sh            gofmt, go vet, staticcheck, go test -race ./...,
#                        in the SDK's module and in realtest/, then the
#                        conformance suite on the example cluster driver
#                        and the kubeadm scenarios against a real
#                        kube-apiserver, its controllers and etcd
#                        (cloudtest/realkube)
#   ./test.sh -run Foo   extra arguments go to `go test`
#
# The real control plane is k8s.io/kubernetes compiled from source: the
# first run on a machine builds it once (about 11-13 minutes on 2 cores,
# 2.9 GB of build cache); later runs relink in seconds. Run that suite
# alone with: (cd cloudtest/realkube && go test -count=1 ./...)
#
# Needs: Go 1.26. On Debian it installs with apt-get, when it runs as root,
# openssh-server and sudo (the transport tests start a real sshd on
# 127.0.0.1 and skip, saying so, when it is not there) and containerd, runc,
# docker-registry, docker.io and cloud-init (realtest/ checks registry
# trust against them), haproxy and keepalived (kubeadm's load-balancer
# configurations are checked by them), etcd-server and etcd-client
# (kubeadm's etcd member steps run against them), e2fsprogs, util-linux,
# fdisk and xfsprogs (nfs's format guard is checked against mkfs.ext4,
# debugfs, blkid, mkswap, sfdisk and mkfs.xfs on sparse files),
# ansible-core and sshpass (kubespray's inventories are read by
# ansible-inventory, its output parser reads ansible-playbook's real
# output, and password logins over SSH go through sshpass), and
# staticcheck with go install.
#
# exportfs (nfs's exports files are loaded by it) comes from Debian's
# nfs-kernel-server, downloaded with apt-get download and unpacked with
# dpkg -x, not installed: the package's maintainer scripts want systemd
# and start the NFS server, and the unpacked exportfs needs only libc.
# It is kept in ${XDG_CACHE_HOME:-~/.cache}/mgmtkit/nfs-kernel-server
# (Go's os.UserCacheDir; remove it to fetch the package again) and
# handed to realtest as MGMTKIT_EXPORTFS.
set -euo pipefail
cd "$(dirname "$0")"

STATICCHECK_VERSION=v0.8.2 # staticcheck 2026.2.2

missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v sudo >/dev/null || missing+=(sudo)
command -v sftp >/dev/null || missing+=(openssh-client)
[ -x /usr/bin/containerd ] || missing+=(containerd)
[ -x /usr/sbin/runc ] || [ -x /usr/bin/runc ] || missing+=(runc)
[ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
[ -x /usr/sbin/dockerd ] || missing+=(docker.io)
# kubeadm's HAProxy and keepalived configurations are checked by the real
# programs (haproxy -c, keepalived --config-test).
[ -x /usr/sbin/haproxy ] || missing+=(haproxy)
[ -x /usr/sbin/keepalived ] || missing+=(keepalived)
# kubeadm's etcd steps are checked against a real two-member etcd.
[ -x /usr/bin/etcd ] || missing+=(etcd-server)
[ -x /usr/bin/etcdctl ] || missing+=(etcd-client)
# realtest renders the hosts template mgmtkit edits with cloud-init's own
# renderer. Note: on a machine that boots with systemd, an installed
# cloud-init runs at the next boot; the test machines are throwaway.
[ -f /usr/lib/python3/dist-packages/cloudinit/templater.py ] || missing+=(cloud-init)
# nfs's format guard is checked against the real programs on sparse files.
[ -x /usr/sbin/mkfs.ext4 ] && [ -x /usr/sbin/debugfs ] || missing+=(e2fsprogs)
[ -x /usr/sbin/blkid ] && [ -x /usr/sbin/mkswap ] || missing+=(util-linux)
[ -x /usr/sbin/sfdisk ] || missing+=(fdisk)
[ -x /usr/sbin/mkfs.xfs ] || missing+=(xfsprogs)
# kubespray's inventories, group_vars and RECAP parser are checked against
# Debian 12's ansible-core 2.14 (ansible-inventory, ansible-playbook -c
# local); its known_hosts and login files against ansible-playbook over SSH
# with a password, which needs sshpass.
[ -x /usr/bin/ansible-playbook ] && [ -x /usr/bin/ansible-inventory ] || missing+=(ansible-core)
[ -x /usr/bin/sshpass ] || missing+=(sshpass)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "==> installing ${missing[*]} [${SECONDS}s]"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		echo "==> not installing ${missing[*]} (needs root and apt-get): the real-sshd and real-runtime tests will be skipped [${SECONDS}s]"
	fi
fi

nfs_cache=${XDG_CACHE_HOME:-$HOME/.cache}/mgmtkit/nfs-kernel-server
if [ ! -x "$nfs_cache/usr/sbin/exportfs" ] && command -v apt-get >/dev/null; then
	echo "==> unpacking Debian's nfs-kernel-server into $nfs_cache (for exportfs) [${SECONDS}s]"
	tmp=$(mktemp -d)
	# As root, apt drops to the _apt user, who cannot write to $tmp.
	sandbox=()
	[ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
	download() { (cd "$tmp" && apt-get download -qq "${sandbox[@]}" nfs-kernel-server); }
	if { download || { [ "$(id -u)" = 0 ] && apt-get update -qq && download; }; } &&
		dpkg -x "$tmp"/nfs-kernel-server_*.deb "$tmp/root" &&
		mkdir -p "$(dirname "$nfs_cache")" && rm -rf "$nfs_cache" && mv "$tmp/root" "$nfs_cache"; then
		:
	else
		echo "==> could not unpack nfs-kernel-server: realtest's exportfs tests will fail saying so [${SECONDS}s]"
	fi
	rm -rf "$tmp"
fi
if [ -x "$nfs_cache/usr/sbin/exportfs" ]; then
	export MGMTKIT_EXPORTFS="$nfs_cache/usr/sbin/exportfs"
fi

gobin=$(go env GOPATH)/bin
if ! "$gobin/staticcheck" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
	echo "==> installing staticcheck $STATICCHECK_VERSION [${SECONDS}s]"
	GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

echo "==> gofmt [${SECONDS}s]"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"
	echo "$unformatted"
	exit 1
fi

# realtest/ and cloudtest/realkube/ are modules of their own (their
# dependencies, k8s.io/kubernetes with its replace directives above all,
# stay out of the SDK's go.mod), and examples/userdriver is a user's
# module that requires mgmtkit (a replace directive to this checkout), so
# each check runs in every module.
for mod in . realtest cloudtest/realkube examples/userdriver; do
	echo "==> go vet ($mod) [${SECONDS}s]"
	(cd "$mod" && go vet ./...)

	echo "==> staticcheck ($mod) [${SECONDS}s]"
	(cd "$mod" && "$gobin/staticcheck" ./...)
done

echo "==> go test -race (.) [${SECONDS}s]"
go test -race -count=1 "$@" ./...

echo "==> go test -race (examples/userdriver: a user's driver tested with the public kit) [${SECONDS}s]"
(cd examples/userdriver && go test -race -count=1 "$@" ./...)

echo "==> go test -race (realtest) [${SECONDS}s]"
(cd realtest && go test -race -count=1 "$@" ./...)

# Not under -race: the race detector would compile k8s.io/kubernetes a
# second time (another cold build) and slow the API server several-fold;
# the same scenarios run under -race on the in-memory model above.
echo "==> go test (cloudtest/realkube: the conformance suite and the kubeadm scenarios against a real control plane) [${SECONDS}s]"
(cd cloudtest/realkube && go test -count=1 -timeout 45m "$@" ./...)

echo "==> all passed in ${SECONDS}s"

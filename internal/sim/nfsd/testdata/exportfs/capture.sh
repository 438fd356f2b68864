#!/bin/bash
# Captures testdata/exportfs/NAME.out, the real exportfs's output for each
# scenario script NAME.sh.golden, for TestExportfsMatchesTheRealOne.
#
#   apt-get download nfs-kernel-server && dpkg -x nfs-kernel-server_*.deb ROOT
#   sudo testdata/exportfs/capture.sh ROOT
#
# Each script runs as root in a private mount namespace (unshare --mount)
# with overlays on /etc and /var/lib and a tmpfs on /srv, so that the
# machine's own files are untouched; /etc/exports starts as the package's.
set -euo pipefail
root=$(cd "$1" && pwd)
dir=$(cd "$(dirname "$0")" && pwd)
for script in "$dir"/*.sh.golden; do
	name=$(basename "$script" .sh.golden)
	work=$(mktemp -d)
	mkdir -p "$work"/etc.up "$work"/etc.work "$work"/vl.up "$work"/vl.work
	unshare --mount --propagation private bash -c '
		set -e
		mount -t overlay overlay -o lowerdir=/etc,upperdir="$1"/etc.up,workdir="$1"/etc.work /etc
		mount -t overlay overlay -o lowerdir=/var/lib,upperdir="$1"/vl.up,workdir="$1"/vl.work /var/lib
		mount -t tmpfs tmpfs /srv
		mkdir -p /var/lib/nfs && : > /var/lib/nfs/etab
		cp "$2"/usr/share/nfs-kernel-server/conffiles/etc.exports /etc/exports
		PATH="$2/usr/sbin:$PATH" bash "$3" > "$4" 2>&1
	' capture "$work" "$root" "$script" "$dir/$name.out"
	rm -rf "$work"
done

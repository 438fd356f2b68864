#!/usr/bin/env bash
# The one test command: installs what the tests need when it is missing,
# then runs every check CI runs.
#
#   ./test.sh            gofmt, go vet, staticcheck, go test -race ./...
#   ./test.sh -run Foo   extra arguments go to `go test`
#
# Needs: Go 1.26. On Debian it installs openssh-server and sudo with apt-get
# when it runs as root (the transport tests start a real sshd on 127.0.0.1
# and skip, saying so, when it is not there), and staticcheck with go install.
set -euo pipefail
cd "$(dirname "$0")"

STATICCHECK_VERSION=v0.8.2 # staticcheck 2026.2.2

missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v sudo >/dev/null || missing+=(sudo)
command -v sftp >/dev/null || missing+=(openssh-client)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "==> installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		echo "==> not installing ${missing[*]} (needs root and apt-get): the real-sshd tests will be skipped"
	fi
fi

gobin=$(go env GOPATH)/bin
if ! "$gobin/staticcheck" -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
	echo "==> installing staticcheck $STATICCHECK_VERSION"
	GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

echo "==> gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"
	echo "$unformatted"
	exit 1
fi

echo "==> go vet"
go vet ./...

echo "==> staticcheck"
"$gobin/staticcheck" ./...

echo "==> go test -race"
go test -race -count=1 "$@" ./...

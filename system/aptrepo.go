package system

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Where apt finds the repositories it uses and the keys that sign them
// (sources.list(5), apt-secure(8)).
const (
	// AptSourcesDir holds one file per repository, NAME.list (one-line
	// format) or NAME.sources (deb822 format).
	AptSourcesDir = "/etc/apt/sources.list.d"
	// AptKeyringsDir is where keyrings that a source names in signed-by
	// go: apt-secure(8) recommends it for keys that are not the
	// distribution's.
	AptKeyringsDir = "/etc/apt/keyrings"
)

// AptRepositoryOptions configure [AddAptRepository].
type AptRepositoryOptions struct {
	// SourcesFile is the file that names the repository, owned by the
	// step: AptSourcesDir/NAME.list, written in the one-line format
	// ("deb [signed-by=KEYRING] URI SUITE [COMPONENT...]"), or
	// AptSourcesDir/NAME.sources, written in the deb822 format (Types,
	// URIs, Suites, Components, Signed-By), both as sources.list(5)
	// describes them. Required.
	SourcesFile string
	// URI is the repository's http:// or https:// URL
	// ("https://pkgs.k8s.io/core:/stable:/v1.36/deb/"). Required.
	URI string
	// Suite is the distribution ("jammy") or, for a flat repository, an
	// exact path ending in "/" ("/"). Required.
	Suite string
	// Components are the archive's components ("main"); none for a flat
	// repository (a Suite ending in "/"), at least one otherwise.
	Components []string
	// Keyring is the dearmored (binary OpenPGP) keyring the source names
	// in signed-by, a clean absolute path, usually under [AptKeyringsDir].
	// Required.
	Keyring string
	// KeyURL is the http:// or https:// URL of the repository's
	// ASCII-armored signing key, fetched with curl and dearmored with gpg
	// only when Keyring is missing or empty. Required.
	KeyURL string
	// Proxy is the proxy curl fetches the key through: its https_proxy
	// (or, without one, its http_proxy, as apt falls back for https),
	// http_proxy and no_proxy, given to curl in its environment from
	// standard input, never in argv. Nil: directly.
	Proxy *Proxy
	// Comment ends the file's first line, "# Managed by mgmtkit: COMMENT"
	// ("# Managed by mgmtkit." when empty). One line.
	Comment string
	// LockTimeout bounds the wait for the apt lock of `apt-get update`,
	// as [PackagesOptions].LockTimeout does; [DefaultLockTimeout] when
	// zero.
	LockTimeout time.Duration
}

// checkAptWord returns what is wrong with one word of a sources entry
// ("" if nothing): sources.list(5) separates the fields of the one-line
// format with white space and starts a comment at '#', and the deb822
// format's values are white-space-separated lists; '[' and ']' delimit
// the one-line format's options.
func checkAptWord(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if strings.ContainsAny(s, "#[]\"'\\") || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "must not hold white space, control characters, quotes, backslashes, '#', '[' or ']'"
	}
	return ""
}

// checkAptURL returns what is wrong with an http(s) URL of a repository
// or key ("" if nothing).
func checkAptURL(s string) string {
	if msg := checkAptWord(s); msg != "" {
		return msg
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "must be an http:// or https:// URL with a host and no user information"
	}
	return ""
}

// check validates o before anything runs.
func (o AptRepositoryOptions) check() error {
	var probs problems
	dir, name := path.Split(o.SourcesFile)
	if dir != AptSourcesDir+"/" || path.Clean(o.SourcesFile) != o.SourcesFile || checkAptWord(name) != "" ||
		!(strings.HasSuffix(name, ".list") && len(name) > 5 || strings.HasSuffix(name, ".sources") && len(name) > 8) {
		probs.addf("SourcesFile", "%q is not %s/NAME.list or %s/NAME.sources", o.SourcesFile, AptSourcesDir, AptSourcesDir)
	}
	if msg := checkAptURL(o.URI); msg != "" {
		probs.addf("URI", "%q %s", o.URI, msg)
	}
	if msg := checkAptWord(o.Suite); msg != "" {
		probs.addf("Suite", "%q %s", o.Suite, msg)
	}
	flat := strings.HasSuffix(o.Suite, "/")
	switch {
	case flat && len(o.Components) > 0:
		probs.addf("Components", "must be empty for a Suite that is an exact path (%q ends in /; sources.list(5))", o.Suite)
	case !flat && len(o.Components) == 0 && o.Suite != "":
		probs.addf("Components", "at least one is required for Suite %q (a suite without a trailing /)", o.Suite)
	}
	for i, c := range o.Components {
		if msg := checkAptWord(c); msg != "" {
			probs.addf("Components["+strconv.Itoa(i)+"]", "%q %s", c, msg)
		}
	}
	if !path.IsAbs(o.Keyring) || path.Clean(o.Keyring) != o.Keyring || checkAptWord(o.Keyring) != "" || strings.Contains(o.Keyring, ",") {
		probs.addf("Keyring", "%q is not a clean absolute path without white space, ',', quotes, '#', '[' or ']'", o.Keyring)
	}
	if msg := checkAptURL(o.KeyURL); msg != "" {
		probs.addf("KeyURL", "%q %s", o.KeyURL, msg)
	}
	if o.LockTimeout < 0 {
		probs.addf("LockTimeout", "must not be negative (zero means %s)", DefaultLockTimeout)
	}
	if strings.ContainsAny(o.Comment, "\r\n") {
		probs.addf("Comment", "must be one line")
	}
	probs = append(probs, o.Proxy.Check("Proxy")...)
	return probs.err()
}

// AptSources renders the sources file of o: the one-line format for a
// .list SourcesFile, deb822 for a .sources one (sources.list(5)), its
// first line a comment that says who owns it. o is not checked:
// [AddAptRepository] checks it first.
func AptSources(o AptRepositoryOptions) []byte {
	var b bytes.Buffer
	if o.Comment == "" {
		b.WriteString("# Managed by mgmtkit.\n")
	} else {
		b.WriteString("# Managed by mgmtkit: " + o.Comment + "\n")
	}
	if strings.HasSuffix(o.SourcesFile, ".sources") {
		b.WriteString("Types: deb\nURIs: " + o.URI + "\nSuites: " + o.Suite + "\n")
		if len(o.Components) > 0 {
			b.WriteString("Components: " + strings.Join(o.Components, " ") + "\n")
		}
		b.WriteString("Signed-By: " + o.Keyring + "\n")
		return b.Bytes()
	}
	b.WriteString("deb [signed-by=" + o.Keyring + "] " + o.URI + " " + o.Suite)
	for _, c := range o.Components {
		b.WriteString(" " + c)
	}
	b.WriteString("\n")
	return b.Bytes()
}

// keyringScript downloads an armored key ($1) with curl and writes it
// dearmored to $2 (mode 0644, through temporary files in its directory,
// so that a failed download leaves no empty keyring that would make the
// next run skip the key). Standard input holds https_proxy, http_proxy
// and no_proxy, one a line, an empty line for none: curl reads them
// from its environment (curl(1), ENVIRONMENT), and they never reach
// argv.
const keyringScript = `set -eu
umask 022
IFS= read -r https_proxy || true
IFS= read -r http_proxy || true
IFS= read -r no_proxy || true
if [ -n "$https_proxy" ]; then export https_proxy; else unset https_proxy; fi
if [ -n "$http_proxy" ]; then export http_proxy; else unset http_proxy; fi
if [ -n "$no_proxy" ]; then export no_proxy; else unset no_proxy; fi
dir=${2%/*}
mkdir -p -- "$dir"
asc=$(mktemp -p "$dir" .mgmtkit-key.XXXXXX)
tmp=$(mktemp -p "$dir" .mgmtkit-keyring.XXXXXX)
trap 'rm -f -- "$asc" "$tmp"' EXIT
curl -fsSL -o "$asc" "$1"
gpg --dearmor < "$asc" > "$tmp"
chmod 644 "$tmp"
mv -f -- "$tmp" "$2"`

// AddAptRepository makes apt use the repository of opts, each part only
// when needed:
//
//   - the signing key is fetched from opts.KeyURL (`curl -fsSL`, through
//     opts.Proxy) and dearmored (`gpg --dearmor`) into opts.Keyring only
//     when that file is missing or empty: a key in place is kept, so a
//     repository that rotates its key needs the keyring removed;
//   - opts.SourcesFile holds [AptSources] (0644, root), the repository
//     with signed-by opts.Keyring, so that apt trusts that key for this
//     repository only (apt-secure(8));
//   - `apt-get update` runs when either changed, so that apt's lists
//     know the repository (and forget one the file named before); a run
//     that fails after the write leaves that to [InstallPackages], which
//     updates before it installs.
//
// A converged host costs one command (the read of both files). Bad
// options are an *lcm.ParamsError before any command runs; the proxy's
// URLs reach the host only on standard input.
func AddAptRepository(ctx context.Context, h remote.Host, opts AptRepositoryOptions) (lcm.Result, error) {
	if err := opts.check(); err != nil {
		return lcm.Unchanged, err
	}
	files, err := remote.ReadFiles(ctx, h, []string{opts.Keyring, opts.SourcesFile}, remote.FileOptions{Sudo: true})
	if err != nil {
		return lcm.Unchanged, err
	}
	var did []string
	if len(files[opts.Keyring]) == 0 {
		var stdin string
		cmd := remote.Cmd{Args: []string{"sh", "-c", keyringScript, "mgmtkit-apt-key", opts.KeyURL, opts.Keyring}, Sudo: true, Idempotent: true}
		if p := opts.Proxy; p != nil {
			stdin = cmp.Or(p.HTTPSProxy.Reveal(), p.HTTPProxy.Reveal()) + "\n" + p.HTTPProxy.Reveal() + "\n" + p.NoProxy + "\n"
			cmd.Secrets = []remote.Secret{p.HTTPProxy, p.HTTPSProxy}
		}
		cmd.Stdin = strings.NewReader(stdin)
		if _, err := h.Run(ctx, cmd); err != nil {
			return lcm.Unchanged, fmt.Errorf("system: %s: fetching the repository's key %s into %s: %w", h.Name(), opts.KeyURL, opts.Keyring, err)
		}
		did = append(did, "wrote "+opts.Keyring)
	}
	if want := AptSources(opts); !bytes.Equal(files[opts.SourcesFile], want) {
		if _, err := h.WriteFile(ctx, opts.SourcesFile, bytes.NewReader(want), remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true}); err != nil {
			return result(did), err
		}
		did = append(did, "wrote "+opts.SourcesFile)
	}
	if did != nil {
		a := aptRunner{h: h, timeout: cmp.Or(opts.LockTimeout, DefaultLockTimeout), start: time.Now()}
		if err := a.run(ctx, "update", []string{"-q"}); err != nil {
			return result(did), err
		}
		did = append(did, "apt-get update")
	}
	return result(did), nil
}

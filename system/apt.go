package system

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// DefaultLockTimeout is how long [InstallPackages] waits for the dpkg and
// apt locks by default: unattended-upgrades holds them for minutes after
// a cloud image boots.
const DefaultLockTimeout = 300 * time.Second

// PackagesOptions configure [InstallPackages].
type PackagesOptions struct {
	// Packages are the packages to install, each "name" or, pinned,
	// "name=version" (Debian policy syntax, checked before anything runs).
	// An unpinned package is installed at the candidate version unless
	// some version is installed already, and is not held unless Hold
	// names it. A pinned package is installed at exactly that version
	// (up or down) and put on hold (apt-mark hold), so that an upgrade
	// does not move it; one already at its version but not held is only
	// held.
	Packages []string
	// Hold names packages of Packages to put on hold (apt-mark hold) even
	// when they are unpinned, so that an upgrade of the host does not
	// move them (kubeadm's fellow packages, installed at a minor
	// release's newest patch). Whether a package is held is read from
	// dpkg's selection state with the installed versions (dpkg-query's
	// db:Status-Want "hold", which `apt-mark showhold` lists), so a held
	// package costs no further command.
	Hold []string
	// SkipUpdate installs without `apt-get update` first, for a caller
	// that has just updated apt's lists ([AddAptRepository] does when it
	// changed something: its result says so).
	SkipUpdate bool
	// LockTimeout bounds the wait for the dpkg and apt locks, in whole
	// seconds; [DefaultLockTimeout] when zero. apt-get waits for the dpkg
	// lock itself (-o DPkg::Lock::Timeout, given what remains of
	// LockTimeout since the step began); a command that still fails
	// because a lock is held (apt-get update does not wait) is retried
	// until LockTimeout has passed since the step began. No other failure
	// is retried.
	LockTimeout time.Duration
}

// Debian policy 5.6.1 and 5.6.7: "Package names ... must consist only of
// lower case letters (a-z), digits (0-9), plus (+) and minus (-) signs,
// and periods (.). They must be at least two characters long and must
// start with an alphanumeric character."
// https://www.debian.org/doc/debian-policy/ch-controlfields.html#s-f-source
var debName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// Debian policy 5.6.12, Version: [epoch:]upstream_version[-debian_revision].
// The epoch is an unsigned integer; upstream_version "may contain only
// alphanumerics and the characters . + - ~" and "should start with a
// digit" (hyphens only when there is a debian_revision); debian_revision
// "must only contain alphanumerics and the characters + . ~".
// https://www.debian.org/doc/debian-policy/ch-controlfields.html#version
var (
	debEpoch    = regexp.MustCompile(`^[0-9]+$`)
	debUpstream = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~-]*$`)
	debRevision = regexp.MustCompile(`^[A-Za-z0-9+.~]+$`)
)

// checkVersion reports what is wrong with a Debian version ("" if nothing).
func checkVersion(v string) string {
	rest := v
	if e, r, ok := strings.Cut(v, ":"); ok {
		if !debEpoch.MatchString(e) {
			return fmt.Sprintf("version %q: the epoch before ':' must be an unsigned integer", v)
		}
		rest = r
	}
	upstream := rest
	if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		upstream = rest[:i]
		if !debRevision.MatchString(rest[i+1:]) {
			return fmt.Sprintf("version %q: the Debian revision after the last '-' must be letters, digits and + . ~", v)
		}
	}
	if !debUpstream.MatchString(upstream) {
		return fmt.Sprintf("version %q is not a Debian version: [epoch:]upstream[-revision], upstream starting with a digit and holding only letters, digits and . + - ~", v)
	}
	return ""
}

// pkgSpec is one requested package.
type pkgSpec struct{ name, version string }

func (p pkgSpec) String() string {
	if p.version == "" {
		return p.name
	}
	return p.name + "=" + p.version
}

// parsePackages checks the requested packages; nothing runs if they are
// wrong.
func parsePackages(opts PackagesOptions) ([]pkgSpec, error) {
	pkgs := opts.Packages
	var probs problems
	if opts.LockTimeout < 0 {
		probs.addf("LockTimeout", "must not be negative (zero means %s)", DefaultLockTimeout)
	}
	var out []pkgSpec
	seen := map[string]bool{}
	for i, s := range pkgs {
		at := "Packages[" + strconv.Itoa(i) + "]"
		name, version, pinned := strings.Cut(s, "=")
		switch {
		case !debName.MatchString(name):
			probs.addf(at, "%q is not a Debian package name (lower-case letters, digits and + - ., at least two characters, starting with a letter or digit)", name)
			continue
		case pinned && version == "":
			probs.addf(at, "%q: the version after '=' is empty", s)
			continue
		case seen[name]:
			probs.addf(at, "package %s is listed twice", name)
			continue
		}
		if pinned {
			if msg := checkVersion(version); msg != "" {
				probs.addf(at, "%s", msg)
				continue
			}
		}
		seen[name] = true
		out = append(out, pkgSpec{name, version})
	}
	if len(pkgs) == 0 {
		probs.addf("Packages", "no package to install")
	}
	for i, name := range opts.Hold {
		if !seen[name] {
			probs.addf("Hold["+strconv.Itoa(i)+"]", "%q is not a package of Packages", name)
		}
	}
	return out, probs.err()
}

// pkgState is what dpkg says about an installed package.
type pkgState struct {
	version string
	held    bool
}

// queryFormat asks dpkg-query for name, selection (the "want" word:
// install, hold, deinstall, purge), status and version; dpkg-query(1),
// "--showformat" and its db:Status-* virtual fields.
const queryFormat = `${Package}\t${db:Status-Want}\t${db:Status-Status}\t${Version}\n`

// InstalledVersions returns the version of each of names that dpkg has
// fully installed ("installed" status; a half-configured or removed
// package is missing from the map), with one read-only command: what
// [InstallPackages] reads to decide. A name dpkg does not know is
// missing too, not an error.
func InstalledVersions(ctx context.Context, h remote.Host, names ...string) (map[string]string, error) {
	specs := make([]pkgSpec, len(names))
	for i, n := range names {
		specs[i] = pkgSpec{name: n}
	}
	got, err := installed(ctx, h, specs)
	if err != nil {
		return nil, err
	}
	versions := make(map[string]string, len(got))
	for n, st := range got {
		versions[n] = st.version
	}
	return versions, nil
}

// installed returns the requested packages that dpkg has fully installed
// ("installed" status; a half-configured or removed one is not).
func installed(ctx context.Context, h remote.Host, specs []pkgSpec) (map[string]pkgState, error) {
	args := []string{"dpkg-query", "-W", "-f=" + queryFormat}
	for _, s := range specs {
		args = append(args, s.name)
	}
	// dpkg-query exits 1 when a name matches no package it knows
	// (dpkg-query(1), EXIT STATUS).
	out, err := h.Run(ctx, remote.Cmd{Args: args, OKExit: []int{1}, Idempotent: true, Brief: true, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	got := map[string]pkgState{}
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[2] != "installed" {
			continue
		}
		got[f[0]] = pkgState{version: f[3], held: f[1] == "hold"}
	}
	return got, nil
}

// InstallPackages makes opts.Packages installed on h, pinned ones (and
// those of opts.Hold) at their version and on hold. It asks dpkg-query first, so a host that has them
// all runs that one command and nothing else; `apt-get update` and
// `apt-get install` (non-interactive: DEBIAN_FRONTEND=noninteractive,
// -y) run only when a package is missing or at another version than its
// pin (without the update when opts.SkipUpdate), and `apt-mark hold`
// only for pinned packages and those of opts.Hold not held yet. A held
// package whose pin changes is moved to the new version
// (--allow-change-held-packages, --allow-downgrades: the caller asked for
// that version) and stays held. Holds of other unpinned packages are left as
// they are.
//
// In a plan (remote.WithDryRun) the change withheld is the install,
// which names the packages, not the update before it.
//
// Failures while the dpkg or apt lock is held are retried until
// opts.LockTimeout (see [PackagesOptions]); every other failure returns at
// once, as a [*remote.CommandError] with apt's stderr tail.
func InstallPackages(ctx context.Context, h remote.Host, opts PackagesOptions) (lcm.Result, error) {
	specs, err := parsePackages(opts)
	if err != nil {
		return lcm.Unchanged, err
	}
	a := aptRunner{h: h, timeout: cmp.Or(opts.LockTimeout, DefaultLockTimeout), start: time.Now()}
	have, err := installed(ctx, h, specs)
	if err != nil {
		return lcm.Unchanged, err
	}
	var install, hold []string
	var changeHeld, moved bool
	for _, s := range specs {
		st, ok := have[s.name]
		switch {
		case !ok:
			install = append(install, s.String())
		case s.version != "" && st.version != s.version:
			install = append(install, s.String())
			changeHeld = changeHeld || st.held
			moved = true
		}
		if (s.version != "" || slices.Contains(opts.Hold, s.name)) && !st.held {
			hold = append(hold, s.name)
		}
	}
	var did []string
	if len(install) > 0 {
		// A plan withholds the install, which names the packages, rather
		// than the update that would come first.
		if !opts.SkipUpdate && !remote.IsDryRun(ctx) {
			if err := a.run(ctx, "update", []string{"-q"}); err != nil {
				return lcm.Unchanged, err
			}
		}
		flags := []string{"-y", "-q"}
		if moved {
			flags = append(flags, "--allow-downgrades")
		}
		if changeHeld {
			flags = append(flags, "--allow-change-held-packages")
		}
		if err := a.run(ctx, "install", flags, install...); err != nil {
			return lcm.Unchanged, err
		}
		did = append(did, "installed "+strings.Join(install, " "))
	}
	if len(hold) > 0 {
		if err := a.retry(ctx, remote.Cmd{Args: append([]string{"apt-mark", "hold"}, hold...), Sudo: true, Idempotent: true}); err != nil {
			return result(did), err
		}
		did = append(did, "held "+strings.Join(hold, " "))
	}
	return result(did), nil
}

// result is Changed with the things done, or Unchanged.
func result(did []string) lcm.Result {
	if len(did) == 0 {
		return lcm.Unchanged
	}
	return lcm.Changed(strings.Join(did, "; "))
}

// aptRunner runs apt commands, retrying them while a lock is held.
type aptRunner struct {
	h       remote.Host
	timeout time.Duration
	start   time.Time
}

// run runs `apt-get VERB OPTIONS... -o DPkg::Lock::Timeout=N OPERANDS...`
// as root, non-interactively. N is what remains, in whole seconds rounded
// up, of the step's lock timeout when the attempt starts, never negative
// (apt reads a negative timeout as "wait for ever": debsystem.cc,
// GetLockMaybeWait), so that apt's own waits and the retries together
// stay within the timeout (to apt's granularity of a second).
func (a aptRunner) run(ctx context.Context, verb string, opts []string, operands ...string) error {
	return a.retryWith(ctx, func() remote.Cmd {
		left := max(time.Until(a.start.Add(a.timeout)), 0)
		secs := strconv.Itoa(int(math.Ceil(left.Seconds())))
		argv := append(append([]string{"apt-get", verb}, opts...), "-o", "DPkg::Lock::Timeout="+secs)
		argv = append(argv, operands...)
		return remote.Cmd{Args: argv, Env: map[string]string{"DEBIAN_FRONTEND": "noninteractive"}, Sudo: true, Idempotent: true}
	})
}

// retry runs c until it succeeds, fails for another reason than a held
// lock, or the lock timeout has passed since the step began.
func (a aptRunner) retry(ctx context.Context, c remote.Cmd) error {
	return a.retryWith(ctx, func() remote.Cmd { return c })
}

// retryWith is retry with the command made anew for each attempt.
func (a aptRunner) retryWith(ctx context.Context, cmd func() remote.Cmd) error {
	deadline := a.start.Add(a.timeout)
	backoff := 500 * time.Millisecond
	for {
		_, err := a.h.Run(ctx, cmd())
		if err == nil || !IsLockError(err) {
			return err
		}
		wait := min(backoff, time.Until(deadline))
		if wait <= 0 {
			return fmt.Errorf("system: %s: the dpkg/apt lock was still held after %s: %w", a.h.Name(), a.timeout, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// lockMessages are the error lines apt and dpkg print when another
// process holds a lock (and only then: "Could not open lock file" and
// "are you root?" are permission failures, which waiting does not cure):
//
//   - apt-pkg/contrib/fileutl.cc, GetLock: "Could not get lock %s",
//     "Could not get lock %s. It is held by process %d (%s)";
//   - apt-pkg/deb/debsystem.cc, debSystem::Lock: "Unable to acquire the
//     dpkg frontend lock (%s), is another process using it?", "Unable to
//     lock the administration directory (%s), is another process using
//     it?";
//   - dpkg's lib/dpkg/lock.c, file_lock: "%s was locked by another
//     process with pid %d" and "%s was locked by another process", the
//     %s being "dpkg frontend lock" or "dpkg status database"
//     (lib/dpkg/dbmodify.c).
//
// apt prints its errors on standard error as "E: MESSAGE"
// (apt-pkg/contrib/error.cc, GlobalError::DumpErrors to std::cerr) and
// dpkg as "dpkg: error: MESSAGE" (lib/dpkg/ehandle.c). Only such lines
// count: while it waits (DPkg::Lock::Timeout) apt reports "Waiting for
// cache lock: Could not get lock ..." as progress
// (debsystem.cc, GetLockMaybeWait), which names the lock too but says
// nothing about how the command ended. The strings were checked against
// the binaries of Debian bookworm (libapt-pkg 2.6.1, dpkg 1.21) and apt's
// source (3.1.12); apt exits with status 100 on these errors
// (apt-private/private-main.cc, and apt-get(8): "apt-get returns zero on
// normal operation, decimal 100 on error").
var lockMessages = []string{
	"Could not get lock ",
	"is another process using it?",
	"lock was locked by another process",
	"database was locked by another process",
}

// IsLockError reports whether err is a command that failed because
// another process (unattended-upgrades, a concurrent apt-get) held the
// dpkg or apt lock, judging by the error lines ("E: ..." from apt,
// "dpkg: error: ..." from dpkg) on its standard error.
func IsLockError(err error) bool {
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode <= 0 {
		return false
	}
	for _, line := range strings.Split(ce.Stderr, "\n") {
		msg, ok := strings.CutPrefix(line, "E: ")
		if !ok {
			msg, ok = strings.CutPrefix(line, "dpkg: error: ")
		}
		if ok && slices.ContainsFunc(lockMessages, func(m string) bool { return strings.Contains(msg, m) }) {
			return true
		}
	}
	return false
}

package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// readScript is the one command with which ConfigureRegistryTrust learns
// a node: with "detect" as its first argument it first prints the
// runtimes whose daemons are installed ("runtimes dockerd containerd"),
// by the rule of [system.DetectRuntimes] (root's directories, then the
// PATH; it runs under sudo, so that is sudo's secure_path); then what
// `containerd --version` prints after "version " on one line, or
// "version" alone where containerd is not installed or does not answer;
// then, for each further argument, as [remote.ReadFiles] does, "-" on a line for a
// file that does not exist, or its size on a line and exactly that many
// bytes of it. A regular file that is not a symbolic link has its mode,
// owner and group after the size ("644 root root"), so that a run can
// tell that a file it wants already holds its content and attributes
// without asking again.
const readScript = `set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
if [ "$1" = detect ]; then
  runtimes=
  for daemon in dockerd containerd crio; do
    if command -v "$daemon" >/dev/null 2>&1; then runtimes="$runtimes $daemon"; fi
  done
  echo "runtimes$runtimes"
fi
shift
if command -v containerd >/dev/null 2>&1 && v=$(containerd --version 2>/dev/null); then
  echo "version $v" | head -n 1
else
  echo version
fi
for f in "$@"; do
  if [ ! -e "$f" ]; then echo -; continue; fi
  n=$(wc -c < "$f")
  if [ -f "$f" ] && [ ! -L "$f" ]; then echo "$n $(stat -c '%a %U %G' -- "$f")"; else echo "$n"; fi
  head -c "$n" -- "$f"
done`

// fileAttrs are a regular file's permission bits, owner and group.
type fileAttrs struct {
	mode         fs.FileMode
	owner, group string
}

// nodeView is what readNode learned: the runtimes (when detected), the
// files that exist, and the attributes of those that are regular files.
type nodeView struct {
	runtimes []system.Runtime
	// containerdVersion is what `containerd --version` printed; "" when
	// it printed nothing or failed.
	containerdVersion string
	files             map[string][]byte
	attrs             map[string]fileAttrs
}

// readNode runs readScript as root: runtime detection when detect is set,
// and every file of files.
func readNode(ctx context.Context, h remote.Host, detect bool, files []string) (nodeView, error) {
	v := nodeView{files: map[string][]byte{}, attrs: map[string]fileAttrs{}}
	mode := "given"
	if detect {
		mode = "detect"
	}
	args := append([]string{"sh", "-c", readScript, "mgmtkit-trust-read", mode}, files...)
	out, err := h.Run(ctx, remote.Cmd{Args: args, Sudo: true, Idempotent: true, ReadOnly: true})
	if err != nil {
		return v, err
	}
	rest := out.Stdout
	line := func() (string, bool) {
		l, after, ok := bytes.Cut(rest, []byte("\n"))
		rest = after
		return string(l), ok
	}
	if detect {
		l, ok := line()
		names, found := strings.CutPrefix(l, "runtimes")
		if !ok || !found {
			return v, fmt.Errorf("%s: detecting container runtimes: unexpected output %q", h.Name(), l)
		}
		for _, d := range strings.Fields(names) {
			switch d {
			case "dockerd":
				v.runtimes = append(v.runtimes, system.Docker)
			case "containerd":
				v.runtimes = append(v.runtimes, system.Containerd)
			case "crio":
				v.runtimes = append(v.runtimes, system.CRIO)
			}
		}
	}
	l, ok := line()
	version, found := strings.CutPrefix(l, "version")
	if !ok || !found {
		return v, fmt.Errorf("%s: containerd --version: unexpected output %q", h.Name(), l)
	}
	v.containerdVersion = strings.TrimSpace(version)
	for _, f := range files {
		l, ok := line()
		if !ok {
			return v, fmt.Errorf("%s: reading %s: the output ended early", h.Name(), f)
		}
		if l == "-" {
			continue
		}
		fields := strings.Fields(l)
		bad := fmt.Errorf("%s: reading %s: unexpected output (did the file change while it was read?)", h.Name(), f)
		if len(fields) != 1 && len(fields) != 4 {
			return v, bad
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil || n < 0 || n > len(rest) {
			return v, bad
		}
		if len(fields) == 4 {
			m, err := strconv.ParseUint(fields[1], 8, 32)
			if err != nil {
				return v, bad
			}
			v.attrs[f] = fileAttrs{mode: fs.FileMode(m) & fs.ModePerm, owner: fields[2], group: fields[3]}
		}
		v.files[f], rest = rest[:n:n], rest[n:]
	}
	if len(rest) != 0 {
		return v, fmt.Errorf("%s: reading %d files: %d bytes of unexpected output", h.Name(), len(files), len(rest))
	}
	return v, nil
}

// inPlace reports whether the read found every wanted file already
// holding its content with its attributes (those [remote.FileOptions]
// leave zero are kept, as [remote.WriteFiles] keeps them), so that
// writing would change nothing. A file the read did not cover, or found
// as something else than a regular file, is not in place: WriteFiles then
// decides, as always.
func (s *trustState) inPlace() bool {
	for _, w := range s.writes {
		a, ok := s.attrs[w.Path]
		if !ok || !bytes.Equal(s.files[w.Path], w.Content) {
			return false
		}
		o := w.Options
		if (o.Mode != 0 && o.Mode.Perm() != a.mode) || (o.Owner != "" && o.Owner != a.owner) || (o.Group != "" && o.Group != a.group) {
			return false
		}
	}
	return true
}

// tellScript tells the daemons whose configuration changed and logs
// Docker in, in one command. Its arguments come in groups: "reload VERB
// UNIT PENDING" first, then "login USER SERVER". Every daemon is told
// whatever the others do (`systemctl VERB UNIT`), and one that was has
// its pending file removed and is named on standard output ("reloaded
// UNIT"); a failure is named on standard error and the script exits 1
// once all were tried. Only when every daemon was told does it log
// Docker in, one registry after the other, each password read from its
// own line of standard input and given to `docker login --password-stdin`
// through a here-document, never in an argument; it names each registry
// it logged in to ("logged-in SERVER") and stops at the first failure
// with docker's status.
const tellScript = `set -u
failed=0
while [ $# -ge 4 ] && [ "$1" = reload ]; do
  if systemctl "$2" "$3" && rm -f -- "$4"; then echo "reloaded $3"; else echo "systemctl $2 $3 failed" >&2; failed=1; fi
  shift 4
done
[ "$failed" = 0 ] || exit 1
while [ $# -ge 3 ] && [ "$1" = login ]; do
  IFS= read -r pw || { echo "no password for $3 on standard input" >&2; exit 1; }
  docker login --username "$2" --password-stdin "$3" <<EOF || exit
$pw
EOF
  echo "logged-in $3"
  shift 3
done`

// tell reloads the daemons of reloads and logs Docker in to the
// registries of logins, in one command (tellScript), and records what it
// did. A reload that failed is an error naming it (its pending file stays
// for the next run). A login that failed because dockerd could not
// resolve the registry's name is asked again alone, with the rest, as
// [trustState.dockerLoginTo] does; any other failure is final.
func (s *trustState) tell(ctx context.Context, reloads []daemonReload, logins []Connection) error {
	if len(reloads)+len(logins) == 0 {
		return nil
	}
	args := []string{"sh", "-c", tellScript, "mgmtkit-tell"}
	for _, r := range reloads {
		args = append(args, "reload", r.verb, r.unit, r.pending())
	}
	var stdin strings.Builder
	var secrets []remote.Secret
	for _, c := range logins {
		args = append(args, "login", c.Username, c.Server)
		stdin.WriteString(c.Password.Reveal() + "\n")
		secrets = append(secrets, c.Password)
	}
	var out bytes.Buffer
	_, err := s.h.Run(ctx, remote.Cmd{
		Args:    args,
		Sudo:    true,
		Stdin:   strings.NewReader(stdin.String()),
		Stdout:  &out,
		Secrets: secrets,
		// Telling a daemon twice is harmless, and so is logging in again;
		// the passwords are re-read from the start of Stdin.
		Idempotent: true,
	})
	var reloaded, loggedIn []string
	for l := range strings.Lines(out.String()) {
		if unit, ok := strings.CutPrefix(strings.TrimSpace(l), "reloaded "); ok {
			reloaded = append(reloaded, unit)
		} else if srv, ok := strings.CutPrefix(strings.TrimSpace(l), "logged-in "); ok {
			loggedIn = append(loggedIn, srv)
		}
	}
	var failed []error
	for _, r := range reloads {
		if slices.Contains(reloaded, r.unit) {
			s.did("systemctl %s %s", r.verb, r.unit)
		} else if err != nil {
			failed = append(failed, fmt.Errorf("systemctl %s %s: %w", r.verb, r.unit, err))
		}
	}
	for i, c := range logins {
		if slices.Contains(loggedIn, c.Server) {
			s.did("docker logged in to %s", c.Server)
			continue
		}
		if err == nil || len(failed) > 0 {
			break
		}
		// Every daemon was told; this login failed.
		var ce *remote.CommandError
		host, _ := splitServer(c.Server)
		if !errors.As(err, &ce) || ce.Err != nil || !strings.Contains(ce.Stderr, "lookup "+host) {
			return fmt.Errorf("docker login to %s as %s: %w", c.Server, c.Username, err)
		}
		for _, c := range logins[i:] {
			if err := s.dockerLoginTo(ctx, c); err != nil {
				return fmt.Errorf("docker login to %s as %s: %w", c.Server, c.Username, err)
			}
			s.did("docker logged in to %s", c.Server)
		}
		return nil
	}
	return errors.Join(failed...)
}

// containerdRelease is [system.ContainerdRelease] answered from what the
// read printed, or asked on the node when the read got no answer (so that
// a failure says why).
func (s *trustState) containerdRelease(ctx context.Context) (string, int, error) {
	if s.containerdVersion == "" {
		return system.ContainerdRelease(ctx, s.h)
	}
	return system.ContainerdRelease(ctx, printed{s.h, s.containerdVersion})
}

// printed is a host whose commands all print out: what a command the read
// already ran printed, for a parser that takes a host.
type printed struct {
	remote.Host
	out string
}

// Run returns the printed output.
func (p printed) Run(context.Context, remote.Cmd) (remote.Output, error) {
	return remote.Output{Stdout: []byte(p.out + "\n")}, nil
}

package realtest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"al.essio.dev/pkg/shellescape"
)

// systemctlScript is the systemctl stand-in: there is no systemd here, so
// the suite bind-mounts this script over systemctl. It hands its
// arguments to the test process through the FIFO fifo and exits with the
// code the test sends back on a FIFO of its own; the test restarts or
// signals the daemons it started ([units]). Everything else on the
// machine is the real program.
func systemctlScript(fifo string) []byte {
	return fmt.Appendf(nil, `#!/bin/sh
# mgmtkit realtest: systemctl stand-in, bind-mounted over %[1]s in the
# test's private mount namespace. The test process serves the request.
set -eu
reply=$(mktemp -u %[2]s)
mkfifo -m 600 "$reply"
trap 'rm -f "$reply"' EXIT
printf '%%s %%s\n' "$reply" "$*" > %[3]s
{ read -r code; cat >&2; } < "$reply"
exit "$code"
`, systemctlPath, shellescape.Quote(fifo+".reply.XXXXXXXX"), shellescape.Quote(fifo))
}

// unit is a daemon the stand-in can restart, reload and report on.
type unit interface {
	running() bool
	restart() error
	// reload makes the daemon re-read its configuration; restart for a
	// daemon that cannot.
	reload() error
}

// units are the daemons the stand-in knows, by systemd unit name.
var units = struct {
	sync.Mutex
	m     map[string]unit
	calls []string
}{m: map[string]unit{}}

// setUnit registers (or, with nil, forgets) the daemon behind a unit.
func setUnit(name string, u unit) {
	units.Lock()
	defer units.Unlock()
	if u == nil {
		delete(units.m, name)
		return
	}
	units.m[name] = u
}

// systemctlCalls returns the stand-in's invocations so far.
func systemctlCalls() []string {
	units.Lock()
	defer units.Unlock()
	return append([]string(nil), units.calls...)
}

// serveSystemctl answers the stand-in's requests on fifo until the
// process ends. The FIFO is opened read-write so that it never reports
// end-of-file between two writers.
func serveSystemctl(fifo string) error {
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	go func() {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			reply, args, _ := strings.Cut(sc.Text(), " ")
			code, msg := systemctl(strings.Fields(args))
			if w, err := os.OpenFile(reply, os.O_WRONLY, 0); err == nil {
				fmt.Fprintf(w, "%d\n%s", code, msg)
				w.Close()
			}
		}
	}()
	return nil
}

// systemctl carries out one invocation with the semantics of systemctl(1)
// (https://www.freedesktop.org/software/systemd/man/latest/systemctl.html):
// try-restart and try-reload-or-restart do nothing to a unit that is not
// running; reload-or-restart restarts a unit that cannot reload; is-active
// exits 0 for an active unit and 3 otherwise. It returns the exit code and
// what goes to standard error.
func systemctl(args []string) (int, string) {
	units.Lock()
	units.calls = append(units.calls, strings.Join(args, " "))
	var verb string
	var names []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "-"):
		case verb == "":
			verb = a
		default:
			names = append(names, strings.TrimSuffix(a, ".service"))
		}
	}
	var us []unit
	for _, n := range names {
		u, ok := units.m[n]
		if !ok && verb != "is-active" {
			units.Unlock()
			return 5, fmt.Sprintf("Failed to %s %s.service: Unit %s.service not found.\n", verb, n, n)
		}
		us = append(us, u)
	}
	units.Unlock()
	switch verb {
	case "daemon-reload":
		return 0, ""
	case "is-active":
		for _, u := range us {
			if u != nil && u.running() {
				return 0, ""
			}
		}
		return 3, ""
	case "try-restart", "try-reload-or-restart", "reload-or-restart", "restart", "reload":
		for _, u := range us {
			if !u.running() && strings.HasPrefix(verb, "try-") {
				continue
			}
			var err error
			if strings.Contains(verb, "reload") {
				err = u.reload()
			} else {
				err = u.restart()
			}
			if err != nil {
				return 1, fmt.Sprintf("Job for the unit failed: %v\n", err)
			}
		}
		return 0, ""
	}
	return 1, fmt.Sprintf("systemctl stand-in: %q is not implemented\n", verb)
}

// Package sshtest provides a fake SSH host for tests, as net/http/httptest
// provides fake HTTP servers.
//
// A [Server] is a real SSH server (golang.org/x/crypto/ssh through
// github.com/gliderlabs/ssh) listening on loopback, with password,
// keyboard-interactive and public-key authentication, so the code under
// test dials it with its real SSH client. A test hands that client what
// it needs, as httptest hands out a server's URL and client:
//
//	srv := sshtest.Start(t, sshtest.Config{Users: []sshtest.User{{Name: "ubuntu", Password: "pw", Sudo: sshtest.SudoNoPassword}}})
//	h, err := srv.Dial(ctx, "ubuntu") // a connected *remote.SSHHost, the host key pinned
//
// [Server.RemoteConfig] is the [remote.Config] behind it (address, the
// user's login, [Server.HostKeyPolicy]), for a test that sets more;
// a [Router] maps the addresses a VIM reports ("10.0.0.5") to servers
// ([Router.Dial] goes into [remote.Config.Dial], [Router.DialHost] into
// plumbing.Config.Dial), so a driver reaches each fake VM at its address. No test needs golang.org/x/crypto/ssh for
// that. (A step's unit test that needs no shell at all can use the
// in-memory host of package remote/remotetest instead.)
//
// What runs behind the server is simulated:
//
//   - Exec requests are interpreted, as the user's login shell would run
//     them (`bash -c COMMAND`), by the bash interpreter of mvdan.cc/sh/v3:
//     pipes, redirections, set -euo pipefail, functions, traps, heredocs,
//     globbing and builtins behave as in bash.
//   - Every file is in an in-memory POSIX filesystem ([FS]) with owners,
//     groups, permission bits, umask, the sticky and setgid bits, symbolic
//     and hard links and /dev/null, laid out like a merged-/usr Ubuntu
//     (/bin is a link to usr/bin). /etc/passwd, /etc/group, /etc/hostname
//     and /etc/sudoers.d are written from the [Config]. The SFTP subsystem
//     (github.com/pkg/sftp) serves the same filesystem with the user's
//     permissions, so a file uploaded over SFTP is what `cat` prints.
//   - Every program is a fake: a Go function ([Program]) registered at a
//     path with [Server.Handle]. Built in are bash and sh, sudo, env,
//     timeout, and the coreutils and friends the SDK uses (cat, cp, mv, rm,
//     ln, mkdir, install, mktemp, chmod, chown, stat, touch, ls, sha256sum,
//     grep, head, tail, wc, sort, uniq, tr, cut, tee, id, whoami, hostname,
//     uname, which, readlink, realpath, basename, dirname, date, kill,
//     printenv, pwd, sleep, true, false, echo, printf, test). A command that is not installed fails with
//     "bash: line 1: NAME: command not found" and status 127, so a test
//     notices at once that the code under test needs a program nobody
//     modelled. Each built-in fake parses its options like GNU getopt and
//     fails with status 2 and a message naming sshtest on an option it
//     does not model, rather than silently doing something else; fakes
//     registered by other packages parse theirs with [OptionSpec] the
//     same way.
//   - The server records a transcript of exec requests ([Server.Transcript])
//     and of every program run, with the identity it ran as
//     ([Server.Calls]), and injects faults on request: refused dials
//     ([Server.RefuseDials]), a slow handshake ([Server.DelayAccept]),
//     a latency before every command ([Server.DelayCommands]),
//     rejected authentication ([Server.RejectAuth]), a connection dropped
//     while a command runs ([Server.DropConnectionDuring]), connections
//     that stop reading and writing as a SIGSTOPped sshd does
//     ([Server.FreezeConnections]), and programs that fail
//     ([Server.FailProgram]) or hang ([Server.HangProgram]).
//
// # Differences from a real host
//
// The simulation aims at what an SDK driving Ubuntu VMs over SSH can
// observe. Known differences:
//
//   - There are no processes. Programs run as goroutines in the test
//     process; there are no PIDs ($$ is the test process's, kill finds no
//     process), no process groups and no setuid execution. A signal sent by
//     the client, a closed session, a dropped connection or an expiring
//     `timeout` cancels the command's context: fakes end with status 143, as
//     after SIGTERM, and the session reports exit-signal TERM when the
//     client signalled. Cancellation cannot be ignored: a script that traps
//     TERM to ignore it still ends, where a real process would survive
//     SIGTERM.
//   - sudo reads its policy from /etc/sudoers.d/USER only (a rule with ALL,
//     or NOPASSWD:ALL), never caches credentials (every call asks again, as
//     with -k) and has no terminal: a password is read with -S only, one
//     byte at a time up to the newline, so the rest of standard input
//     reaches the command.
//   - Sessions accept exec and the sftp subsystem only: PTY, shell, env
//     (like sshd without AcceptEnv), agent and port-forwarding requests are
//     refused. A connection may have [Config.MaxSessions] (by default
//     sshd's 10) sessions open at once. The server never closes an SFTP
//     session by itself.
//   - The shell's `command -v`, `command -V`, `type` and `hash` look programs
//     up in the fake host's PATH (the interpreter would look at the real
//     machine); they do not see shell functions or aliases. `umask` and
//     `kill` are provided (the interpreter lacks them); a umask set in a
//     subshell also changes its parent's. `cd` errors, failed redirections
//     and programs that cannot be started are reported in bash's words
//     ("bash: line 3: /etc/x: Permission denied"); errors the interpreter
//     itself detects, such as an unbound variable under set -u, are worded
//     as mvdan.cc/sh words them. A script read from standard input (`bash`,
//     `bash -s`) is read whole before it runs, so its commands see an empty
//     standard input. Process substitution (<(cmd)) is not supported.
//   - The interpreter's parser turns CR LF into LF and rejects bytes that
//     are not valid UTF-8, where bash keeps both. The command of an exec
//     request is therefore escaped before parsing and restored in every
//     literal, so that CR before LF and invalid UTF-8 reach programs byte
//     for byte, in single and double quotes, heredocs and unquoted words, as
//     with bash.
//   - Coreutils messages use the quotes of a UTF-8 locale (login sessions
//     have LANG=C.UTF-8) where GNU does. Sorting is by byte value, as in
//     C.UTF-8. grep translates patterns to Go's regexp syntax and has no
//     back-references. `date` prints only +%s. Times are in the test
//     process's time zone.
//   - Not modelled: ACLs, extended attributes, inode numbers, link counts
//     of files (ls -l and stat show 1), access and change times, disk space,
//     devices other than /dev/null (nodes made with [FS.Mknod] exist but
//     cannot be opened), /proc, and /dev/stdin, /dev/stdout and
//     /dev/stderr as files (they work as redirection targets and as program
//     operands, but `test -e /dev/stdin` fails).
//
// Tests elsewhere in the SDK build on sshtest: a simulated cloud installs
// semantic fakes of apt-get, systemctl, kubeadm and the like with
// [Server.Handle], each operating on a shared model of the world.
package sshtest

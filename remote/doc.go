// Package remote is mgmtkit's transport: it runs commands on, and moves files
// to, the VMs of a VNF over SSH.
//
// [Host] is the one seam between steps and machines; [*SSHHost] implements
// it with golang.org/x/crypto/ssh and github.com/pkg/sftp. What it
// guarantees:
//
//   - Commands are argv ([Cmd]), quoted with POSIX single quotes by
//     al.essio.dev/pkg/shellescape; compound commands are [Script]
//     templates whose every value must go through the q function. No value
//     is ever interpolated into a shell string.
//   - Success is judged by exit status, never by output on stderr. A failure
//     is a [*CommandError] with host, command, status and the tail of
//     stderr; a lost connection wraps [ErrConnectionLost]; a deadline wraps
//     the context's error.
//   - Root: none needed when the login user is root, `sudo -n` when sudo
//     needs no password, otherwise `sudo -S` with the password on standard
//     input, never a PTY. The mode is probed once per host.
//   - Secrets ([Secret]) print as [Redacted] everywhere, and every error and
//     log line is scrubbed of the host's passwords and the command's secrets.
//     Secrets travel on standard input or inside files, never in argv.
//   - Host keys are verified by a [HostKeyPolicy] the caller must choose;
//     there is no insecure default.
//   - One connection per host, opened on first use (or by [Dial]), retried
//     with backoff while the VM boots, kept alive, and redialed once by the
//     next command after it drops. Commands share it, at most
//     Config.MaxSessions at a time.
//   - Cancelling a command's context ends it on the host: SIGTERM reaches its
//     whole process group, through sudo too (a `timeout` wrapper relays it),
//     and a context deadline is also enforced on the host, so a command
//     cannot outlive a lost connection by more than a few seconds. A
//     [Cmd.Brief] command, one that ends on its own in moments (the
//     package's own probes, reads and commits), is bounded from the client
//     side only and spares the wrapper's process.
//   - [Host.WriteFile] streams content with concurrent SFTP writes in
//     constant memory, stages it, verifies its SHA-256 on the host as it
//     lands (no second pass after the last byte) and renames it into place,
//     and does nothing (reporting unchanged) when the file already holds
//     those bytes with the wanted mode and owner. Without sudo a file that
//     keeps its owner and group is checked and renamed over SFTP, with no
//     command at all when it is small.
//     [WriteFiles] does the same for several files with one probe and one
//     commit; both run the same engine (plan, probe, stage, verify, commit).
//     [EditBlock] maintains one BEGIN/END-marked block in a line file such
//     as /etc/hosts.
//   - A dry run ([WithDryRun]) changes nothing: hosts run only the
//     commands marked [Cmd.ReadOnly], probe files read-only, and withhold
//     every change, returning a [*WithheldError] (errors.Is
//     [ErrWithheld]) that names the command or the files, never standard
//     input. [SSHHost] honours it; [GuardDryRun] makes any other Host do
//     so, and [Withhold] lets a Host honour it itself. A dry run says
//     what the first change of each step would be; it cannot say what
//     reads would find after a change it withheld (see lcm.Plan for the
//     whole hook).
//
// Tests use the fake host in package remote/sshtest, a real SSH server
// in-process, or, for a step that needs no shell, the in-memory Host of
// package remote/remotetest.
package remote

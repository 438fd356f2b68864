// Package remotetest provides an in-memory [remote.Host] for the unit test
// of a step that needs no shell at all: a [Host] answers each command from
// rules the test sets ("systemctl is-active kubelet" → "active", exit 0),
// keeps files in memory for WriteFile, WriteFiles and ReadFile, and records
// a transcript of what the step did, as k0sproject/rig's MockRunner
// (rigtest/mockrunner.go) does for rig.
//
//	h := remotetest.NewHost("worker-1").
//		On(remotetest.Equal("systemctl", "is-active", "kubelet"), remotetest.Reply{Stdout: "inactive\n", Exit: 3}).
//		On(remotetest.Equal("systemctl", "enable", "--now", "kubelet"), remotetest.Reply{})
//	res, err := MyStep(ctx, h)
//	// h.Commands(): ["systemctl is-active kubelet", "sudo systemctl enable --now kubelet"]
//
// It keeps the contract of [remote.Host] as [*remote.SSHHost] does, so a
// step that passes against it has been held to the same rules:
//
//   - The first rule added whose [Matcher] accepts the command answers it.
//     A command no rule answers fails with an error wrapping
//     [ErrUnmatched] that names the command, and is listed by
//     [Host.Unmatched], so a step that swallows the error is caught too:
//     the double never succeeds silently.
//   - An exit status other than 0 is an error, a [*remote.CommandError]
//     with the host, the command, the status and the tail of stderr, unless
//     [remote.Cmd.OKExit] lists it; stderr alone never is. The Cmd's
//     [remote.Cmd.Secrets] are scrubbed from the error, as remote scrubs
//     them.
//   - Files have content, permission bits, owner and group. WriteFile
//     reports unchanged, and changes nothing, when the file already holds
//     the bytes with the wanted mode and owner; a zero Mode, Owner or
//     Group keeps the existing file's; a new file belongs to root with
//     FileOptions.Sudo and to the login user without (see
//     [Host.SetUser]). ReadFile of a missing file is an error for which
//     errors.Is(err, fs.ErrNotExist) holds.
//   - Without FileOptions.Sudo, the login user (ubuntu by default, as on
//     Ubuntu's cloud images) may write only in their home directory,
//     /tmp and /var/tmp, and read only what the permission bits let
//     them, as on Ubuntu, where /etc is root's: a step that forgot Sudo
//     fails here as it would on a VM.
//   - [remote.ReadFiles] and [remote.RemoveFiles] run shell scripts
//     through Run; when no rule answers them, the host runs them on its
//     in-memory files with the output and exit status of the real scripts
//     under dash, Ubuntu's sh, so steps built on them need no rules. So
//     are answered the read-only probe of RemoveFiles in a dry run and
//     the `stat -L -c '%a %U %G' -- PATH` of [remote.GuardDryRun].
//   - A dry run ([remote.WithDryRun], as lcm.Plan makes) is honoured as
//     [remote.SSHHost] honours it. A command not marked
//     [remote.Cmd.ReadOnly] is neither answered by a rule nor run: Run
//     returns the [*remote.WithheldError] SSHHost returns (Host, Args,
//     Sudo), counted so that [remote.AnyWithheld] reports it. WriteFile
//     and WriteFiles write nothing: they report unchanged when every
//     file already holds its bytes, mode and owner, and otherwise
//     withhold the writes of the files that differ (WithheldError.Write).
//     The transcript records what was withheld ([Call.Withheld],
//     [Host.Withheld]); [Host.Commands] lists only what ran. The host
//     needs no [remote.GuardDryRun]: a guard around it would withhold
//     commands before they reach it, and its transcript would not show
//     them.
//   - The transcript ([Host.Calls], [Host.Commands]) holds every command
//     with its argv, Sudo, environment and standard input (with the Cmd's
//     secrets replaced by [remote.Redacted]), and every file read and
//     write. It is safe for concurrent use, as a step fanning out may
//     run several commands at once.
//
// A rule's reply is static ([Host.On]) or computed ([Host.OnFunc]), which
// lets a test model state: "is-active" answers "active" once "enable
// --now" has run. What it does not model: directories (they exist while a
// file is under them), symbolic links, users and groups other than the
// login user and root, processes, and the host-side time limits of
// [remote.SSHHost] (a reply's context is the caller's).
//
// For a test that needs real programs, a shell and SSH, use package
// remote/sshtest, or the simulated Ubuntu VMs of package cloudtest.
package remotetest

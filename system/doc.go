// Package system holds the host steps every VNF's VMs share, whatever the
// VNF: packages installed with apt, systemd units enabled, started and
// restarted only when their files or inputs changed ([ConfigureUnit]),
// with one restart marker per unit that any step owing a restart shares
// ([PendingMarker]), daemons' configurations checked by the daemon's own
// validator before they replace the old ones ([ConfigureDaemon]),
// containerd's config.toml edited by its settings ([ContainerdConfig]),
// bounded waits, kernel modules and sysctls, the host name, a managed
// block of /etc/hosts, and the OS facts steps branch on (os-release,
// architecture). Domain packages (registry, kubeadm, nfs, kubespray, lb)
// build on it; of the SDK it imports only [lcm] and [remote] (and go-toml
// for config.toml), as k0sproject/rig keeps its OS configurers beside its
// transport.
//
// # The shape of a step
//
// Every step is a plain function: context, the [remote.Host] it acts on,
// typed options; it returns ([lcm.Result], error). It reads the host's
// state first, changes only what differs and reports [lcm.Unchanged] when
// there was nothing to do, so that a second run on a converged host
// changes nothing (the tests pin how many commands that second run
// takes). [Wait] returns only an error and the fact readers
// ([ReadOSRelease], [Architecture]) return values; nothing else here
// returns a bare "changed bool".
//
// Options are checked before any command runs: a bad package name, sysctl
// key, module, host name or address is an [*lcm.ParamsError] whose
// problems name the option field (`Packages[1]: ...`), and the host sees
// no command at all.
//
// Every value reaching a shell goes through [remote.Cmd]'s argv quoting,
// or as a positional argument of a constant script; nothing is formatted
// into a command line.
package system

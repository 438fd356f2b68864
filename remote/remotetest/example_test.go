package remotetest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/remotetest"
	"github.com/mgmtkit/mgmtkit/system"
)

// unitActive is the step under test: it asks systemd whether unit is
// active. `systemctl is-active` exits 0 for active and 3 for inactive
// (systemctl(1), the LSB status codes), so 3 is an answer, not a failure.
func unitActive(ctx context.Context, h remote.Host, unit string) (bool, error) {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"systemctl", "is-active", unit}, OKExit: []int{3}})
	if err != nil {
		return false, err
	}
	return out.ExitCode == 0, nil
}

// Test a step without a shell: the host answers from rules, and the
// transcript shows what the step ran.
func Example() {
	ctx := context.Background()
	h := remotetest.NewHost("worker-1").
		On(remotetest.Equal("systemctl", "is-active", "kubelet"), remotetest.Reply{Stdout: "active\n"}).
		On(remotetest.Equal("systemctl", "is-active", "containerd"), remotetest.Reply{Stdout: "inactive\n", Exit: 3}).
		// What systemctl prints and exits with where systemd is not
		// running (systemd 252, Debian 12, in a container).
		On(remotetest.Program("systemctl"), remotetest.Reply{
			Stderr: "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n",
			Exit:   1,
		})

	for _, unit := range []string{"kubelet", "containerd", "docker"} {
		active, err := unitActive(ctx, h, unit)
		fmt.Println(unit, active, err)
	}
	// A command no rule answers fails; it never succeeds silently.
	_, err := h.Run(ctx, remote.Cmd{Args: []string{"reboot"}, Sudo: true})
	fmt.Println(err)

	fmt.Println(strings.Join(h.Commands(), "\n"))
	fmt.Println("unmatched:", h.Unmatched())
	// Output:
	// kubelet true <nil>
	// containerd false <nil>
	// docker false worker-1: command "systemctl is-active docker" exited with status 1: System has not been booted with systemd as init system (PID 1). Can't operate. | Failed to connect to bus: Host is down
	// worker-1: command "sudo reboot": remotetest: no rule answers the command
	// systemctl is-active kubelet
	// systemctl is-active containerd
	// systemctl is-active docker
	// sudo reboot
	// unmatched: [sudo reboot]
}

// Model state with a computed reply: kubelet is active once the step has
// enabled it. Here the step is the SDK's system.EnsureActive.
func ExampleHost_OnFunc() {
	ctx := context.Background()
	active := false // the step runs its commands one at a time
	h := remotetest.NewHost("worker-1").
		OnFunc(remotetest.Equal("systemctl", "is-active", "kubelet"), func(context.Context, remote.Cmd, []byte) remotetest.Reply {
			if active {
				return remotetest.Reply{Stdout: "active\n"}
			}
			return remotetest.Reply{Stdout: "inactive\n", Exit: 3}
		}).
		OnFunc(remotetest.All(remotetest.Equal("systemctl", "enable", "--now", "kubelet"), remotetest.Sudo()), func(context.Context, remote.Cmd, []byte) remotetest.Reply {
			active = true
			return remotetest.Reply{}
		})

	for range 2 {
		res, err := system.EnsureActive(ctx, h, "kubelet")
		fmt.Println(res, err)
	}
	fmt.Println(strings.Join(h.Commands(), "\n"))
	// Output:
	// changed: started kubelet <nil>
	// unchanged <nil>
	// systemctl is-active kubelet
	// sudo systemctl enable --now kubelet
	// systemctl is-active kubelet
	// systemctl is-active kubelet
}

// Files live in memory: seed them, let the step write, look at them.
// system.SetHostsBlock reads /etc/hosts (and cloud-init's template of it,
// which this host lacks) with remote.ReadFiles, which the host answers
// from its files.
func ExampleHost_SetFile() {
	ctx := context.Background()
	h := remotetest.NewHost("worker-1")
	h.SetFile("/etc/hosts", []byte("127.0.0.1\tlocalhost\n"), 0o644)

	res, err := system.SetHostsBlock(ctx, h, system.HostsOptions{Block: "registry", Entries: []system.HostsEntry{
		{IP: "10.0.0.9", Names: []string{"registry.example.com"}},
	}})
	fmt.Println(res, err)
	hosts, _ := h.File("/etc/hosts")
	fmt.Print(string(hosts))
	for _, c := range h.Calls() {
		fmt.Println(c)
	}
	// Output:
	// changed: updated block registry of /etc/hosts <nil>
	// 127.0.0.1	localhost
	// # BEGIN mgmtkit registry
	// 10.0.0.9	registry.example.com
	// # END mgmtkit registry
	// sudo sh -c ... mgmtkit-read-files /etc/hosts /etc/cloud/templates/hosts.debian.tmpl
	// WriteFile /etc/hosts (sudo)
}

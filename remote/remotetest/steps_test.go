package remotetest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/remotetest"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/system"
)

// kubelet is a host whose kubelet unit is inactive until `systemctl
// enable --now kubelet` runs: `systemctl is-active` prints the state and
// exits 0 for active, 3 for inactive (systemctl(1), "is-active";
// LSB status codes).
func kubelet(enableFails bool) (*remotetest.Host, *atomic.Bool) {
	var active atomic.Bool
	h := remotetest.NewHost("worker-1").
		OnFunc(remotetest.Equal("systemctl", "is-active", "kubelet"), func(context.Context, remote.Cmd, []byte) remotetest.Reply {
			if active.Load() {
				return remotetest.Reply{Stdout: "active\n"}
			}
			return remotetest.Reply{Stdout: "inactive\n", Exit: 3}
		}).
		OnFunc(remotetest.All(remotetest.Equal("systemctl", "enable", "--now", "kubelet"), remotetest.Sudo()), func(context.Context, remote.Cmd, []byte) remotetest.Reply {
			if enableFails {
				return remotetest.Reply{Stderr: "Job for kubelet.service failed because the control process exited with error code.\n", Exit: 1}
			}
			active.Store(true)
			return remotetest.Reply{}
		})
	return h, &active
}

// A real step of the SDK, system.EnsureActive, against the double.
func TestEnsureActive(t *testing.T) {
	ctx := t.Context()

	h, _ := kubelet(false)
	res, err := system.EnsureActive(ctx, h, "kubelet")
	if err != nil || !res.Changed || res.Detail != "started kubelet" {
		t.Fatalf("EnsureActive on an inactive unit = %v, %v", res, err)
	}
	want := []string{"systemctl is-active kubelet", "sudo systemctl enable --now kubelet", "systemctl is-active kubelet"}
	if got := h.Commands(); !slices.Equal(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
	h.ResetTranscript()
	res, err = system.EnsureActive(ctx, h, "kubelet")
	if err != nil || res.Changed {
		t.Fatalf("EnsureActive on an active unit = %v, %v", res, err)
	}
	if got := h.Commands(); !slices.Equal(got, want[:1]) {
		t.Errorf("an active unit cost %q, want one check", got)
	}

	h, active := kubelet(true)
	_, err = system.EnsureActive(ctx, h, "kubelet")
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 1 || !strings.Contains(ce.Stderr, "Job for kubelet.service failed") || active.Load() {
		t.Errorf("EnsureActive when the start fails: %v, want systemctl's failure", err)
	}
}

// A step built on remote.ReadFiles and remote.WriteFiles leaves the same
// file and reports the same results on the double as on a fake SSH host,
// with no rule at all.
func TestSetHostsBlockAsOnSSH(t *testing.T) {
	const seed = "127.0.0.1\tlocalhost\n"
	opts := system.HostsOptions{Block: "k8s-cluster", Entries: []system.HostsEntry{
		{IP: "10.0.0.12", Names: []string{"worker-0"}},
		{IP: "10.0.0.5", Names: []string{"master-0", "master-0.cluster.local"}},
	}}
	ctx := t.Context()
	run := func(h remote.Host) []lcm.Result {
		t.Helper()
		var rs []lcm.Result
		for range 2 {
			res, err := system.SetHostsBlock(ctx, h, opts)
			if err != nil {
				t.Fatalf("%s: %v", h.Name(), err)
			}
			rs = append(rs, res)
		}
		return rs
	}

	srv := sshtest.Start(t, sshtest.Config{Users: []sshtest.User{{Name: "ubuntu", Password: "pw", Sudo: sshtest.SudoNoPassword}}})
	if err := srv.FS().WriteFile("/etc/hosts", []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	ssh, err := srv.Dial(ctx, "ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	defer ssh.Close()
	onSSH := run(ssh)
	sshHosts, err := srv.FS().ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}

	double := remotetest.NewHost("node-1")
	double.SetFile("/etc/hosts", []byte(seed), 0o644)
	onDouble := run(double)
	doubleHosts, _ := double.File("/etc/hosts")

	if !slices.Equal(onSSH, onDouble) || !onDouble[0].Changed || onDouble[1].Changed {
		t.Errorf("results: over SSH %v, on the double %v; want the same, changed then unchanged", onSSH, onDouble)
	}
	if string(doubleHosts) != string(sshHosts) {
		t.Errorf("/etc/hosts on the double:\n%s\nover SSH:\n%s", doubleHosts, sshHosts)
	}
	if f, _ := double.Stat("/etc/hosts"); f.Owner != "root" || f.Mode != 0o644 {
		t.Errorf("/etc/hosts on the double is %+v, want root's 0644 kept", f)
	}
	if u := double.Unmatched(); len(u) != 0 {
		t.Errorf("unmatched: %q", u)
	}
}

package remotetest_test

import (
	"context"
	"errors"
	"path"
	"reflect"
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

// Steps planned in a dry run, as lcm.Plan plans them (lcm.Do under
// remote.WithDryRun), report the same results, withheld changes and all,
// on the double as over SSH, and change nothing on either.
func TestPlanAsOnSSH(t *testing.T) {
	const seed = "127.0.0.1\tlocalhost\n"
	hosts := system.HostsOptions{Block: "k8s-cluster", Entries: []system.HostsEntry{{IP: "10.0.0.5", Names: []string{"master-0"}}}}
	other := system.HostsOptions{Block: "registry", Entries: []system.HostsEntry{{IP: "10.0.0.9", Names: []string{"registry"}}}}
	ctx := t.Context()
	type step struct {
		name string
		fn   func(context.Context, remote.Host) (lcm.Result, error)
	}
	steps := []step{
		{"hosts-set", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.SetHostsBlock(ctx, h, hosts)
		}},
		{"hosts-new", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.SetHostsBlock(ctx, h, other)
		}},
		{"containerd", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.EnsureActive(ctx, h, "containerd")
		}},
		{"kubelet", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return system.EnsureActive(ctx, h, "kubelet")
		}},
		{"remove", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			removed, err := remote.RemoveFiles(ctx, h, []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/pki/ca.crt", "/etc/nosuch"}, []string{"/etc/kubernetes/pki", "/etc/kubernetes"}, remote.FileOptions{Sudo: true})
			if slices.Contains(removed, true) {
				return lcm.Changed("removed"), err
			}
			return lcm.Unchanged, err
		}},
	}
	plan := func(h remote.Host) []lcm.Result {
		t.Helper()
		// /etc/hosts holds the k8s-cluster block already.
		if _, err := system.SetHostsBlock(ctx, h, hosts); err != nil {
			t.Fatalf("%s: %v", h.Name(), err)
		}
		dry := remote.WithDryRun(ctx)
		var rs []lcm.Result
		for _, s := range steps {
			res, err := lcm.Do(dry, s.name, h.Name(), func(ctx context.Context) (lcm.Result, error) { return s.fn(ctx, h) })
			if err != nil {
				t.Fatalf("%s: %s: %v", h.Name(), s.name, err)
			}
			rs = append(rs, res)
		}
		return rs
	}

	// systemctl is-active prints the state and exits 0 for active, 3
	// for inactive (systemctl(1), "is-active"; LSB status codes).
	srv := sshtest.Start(t, sshtest.Config{Users: []sshtest.User{{Name: "ubuntu", Password: "pw", Sudo: sshtest.SudoNoPassword}}})
	srv.Handle("/usr/bin/systemctl", func(_ context.Context, p *sshtest.Process) int {
		switch strings.Join(p.Args[1:], " ") {
		case "is-active containerd":
			p.Stdout.Write([]byte("active\n"))
			return 0
		case "is-active kubelet":
			p.Stdout.Write([]byte("inactive\n"))
			return 3
		}
		return p.Errorf("systemctl %q: not modelled by this test", p.Args[1:])
	})
	for p, data := range map[string]string{"/etc/hosts": seed, "/etc/kubernetes/admin.conf": "apiVersion: v1\n", "/etc/kubernetes/pki/ca.crt": "CA\n", "/etc/kubernetes/manifests/etcd.yaml": "kind: Pod\n"} {
		if err := srv.FS().MkdirAll(path.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := srv.FS().WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := srv.RemoteConfig("ubuntu")
	cfg.Name = "node-1"
	ssh, err := remote.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ssh.Close()
	onSSH := plan(ssh)
	sshHosts, _ := srv.FS().ReadFile("/etc/hosts")
	for _, c := range srv.Calls() {
		if c.Args[0] == "systemctl" && c.Args[1] != "is-active" {
			t.Errorf("the plan ran %q over SSH", c.Args)
		}
	}

	double := remotetest.NewHost("node-1").
		On(remotetest.Equal("systemctl", "is-active", "containerd"), remotetest.Reply{Stdout: "active\n"}).
		On(remotetest.Equal("systemctl", "is-active", "kubelet"), remotetest.Reply{Stdout: "inactive\n", Exit: 3})
	double.SetFile("/etc/hosts", []byte(seed), 0o644)
	double.SetFile("/etc/kubernetes/admin.conf", []byte("apiVersion: v1\n"), 0o644)
	double.SetFile("/etc/kubernetes/pki/ca.crt", []byte("CA\n"), 0o644)
	double.SetFile("/etc/kubernetes/manifests/etcd.yaml", []byte("kind: Pod\n"), 0o644)
	before := double.Paths()
	onDouble := plan(double)
	doubleHosts, _ := double.File("/etc/hosts")

	for i, s := range steps {
		if !reflect.DeepEqual(onSSH[i], onDouble[i]) {
			t.Errorf("%s: over SSH %+v (withheld %+v), on the double %+v (withheld %+v)", s.name, onSSH[i], onSSH[i].Withheld, onDouble[i], onDouble[i].Withheld)
		}
	}
	want := []string{"", "would write /etc/hosts", "", `would run "sudo systemctl enable --now kubelet"`,
		"would remove /etc/kubernetes/admin.conf, /etc/kubernetes/pki/ca.crt, /etc/kubernetes/pki"}
	for i, r := range onDouble {
		if r.Detail != want[i] || r.Changed != (want[i] != "") || (r.Withheld != nil) != (want[i] != "") {
			t.Errorf("%s on the double: %+v, want %q", steps[i].name, r, want[i])
		}
	}
	if string(doubleHosts) != string(sshHosts) || !slices.Equal(double.Paths(), before) {
		t.Errorf("the plan changed the double: /etc/hosts %q (over SSH %q), files %q", doubleHosts, sshHosts, double.Paths())
	}
	if got, want := double.Withheld(), []string{"WriteFile /etc/hosts (sudo)", "sudo systemctl enable --now kubelet"}; !slices.Equal(got, want) {
		t.Errorf("Withheld() = %q, want %q", got, want)
	}
	for _, c := range double.Commands() {
		if strings.Contains(c, "enable") {
			t.Errorf("Commands() lists %q, which the plan withheld", c)
		}
	}
	if u := double.Unmatched(); len(u) != 0 {
		t.Errorf("unmatched: %q", u)
	}
}

package system_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/system"
)

// runtimeNode is a simulated Ubuntu VM with packages installed, with the
// given login PATH, reached over SSH as ubuntu (passwordless sudo).
func runtimeNode(t *testing.T, path ubuntu.LoginPath, containerd2 bool, pkgs ...string) (*remote.SSHHost, *sshtest.Server) {
	t.Helper()
	srv := sshtest.Start(t, sshtest.Config{
		Hostname: "node",
		Users:    []sshtest.User{{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword}},
	})
	cat := ubuntu.DefaultCatalog()
	containers.AddPackages(cat, nil)
	if containerd2 {
		containers.AddContainerd2(cat)
	}
	ubuntu.Install(srv, ubuntu.Options{Catalog: cat, Packages: pkgs, UpdatedLists: true, LoginPath: path})
	h, err := remote.NewSSHHost(remote.Config{Addr: srv.Addr(), Name: "node", User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: srv.HostKeyPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, srv
}

func TestDetectRuntimes(t *testing.T) {
	for _, tc := range []struct {
		name string
		path ubuntu.LoginPath
		pkgs []string
		want []system.Runtime
	}{
		{"none", ubuntu.UbuntuLoginPath, nil, nil},
		{"docker.io", ubuntu.UbuntuLoginPath, []string{"docker.io"}, []system.Runtime{system.Docker, system.Containerd}},
		// Debian's login PATH has no sbin directory, where docker.io puts
		// dockerd: found all the same.
		{"docker.io on Debian", ubuntu.DebianLoginPath, []string{"docker.io"}, []system.Runtime{system.Docker, system.Containerd}},
		{"containerd", ubuntu.UbuntuLoginPath, []string{"containerd"}, []system.Runtime{system.Containerd}},
		{"cri-o", ubuntu.DebianLoginPath, []string{"cri-o"}, []system.Runtime{system.CRIO}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h, srv := runtimeNode(t, tc.path, false, tc.pkgs...)
			before := len(srv.Transcript())
			got, err := system.DetectRuntimes(ctx, h)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("DetectRuntimes = %q, %v; want %q", got, err, tc.want)
			}
			if n := len(srv.Transcript()) - before; n != 1 {
				t.Errorf("%d commands, want 1", n)
			}
		})
	}
}

func TestContainerdRelease(t *testing.T) {
	for _, tc := range []struct {
		name        string
		containerd2 bool
		pkgs        []string
		release     string
		major       int
	}{
		{"ubuntu's containerd", false, []string{"containerd"}, "1.7.12", 1},
		{"docker's containerd.io 1.x", false, []string{"containerd.io"}, "1.7.12", 1},
		{"docker's containerd.io 2.x", true, []string{"containerd.io"}, "2.2.0", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h, _ := runtimeNode(t, ubuntu.UbuntuLoginPath, tc.containerd2, tc.pkgs...)
			release, major, err := system.ContainerdRelease(ctx, h)
			if err != nil || release != tc.release || major != tc.major {
				t.Errorf("ContainerdRelease = %q, %d, %v; want %q, %d", release, major, err, tc.release, tc.major)
			}
		})
	}
	t.Run("not installed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h, _ := runtimeNode(t, ubuntu.UbuntuLoginPath, false)
		if release, _, err := system.ContainerdRelease(ctx, h); err == nil {
			t.Errorf("ContainerdRelease = %q without containerd, want an error", release)
		}
	})
}

package ubuntu

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
)

// The SDK's own SSH client drives the machine as steps will: sudo -n for
// the ubuntu user, exit statuses as errors unless listed in OKExit.
func TestThroughRemoteHost(t *testing.T) {
	v := newVM(t, Options{UpdatedLists: true})
	d := NewDisk(2 << 30)
	v.AttachDisk("/dev/vdb", d)
	h, err := remote.NewSSHHost(remote.Config{Addr: v.Server().Addr(), User: "ubuntu", Password: remote.NewSecret(ubuntuPW), HostKey: v.Server().HostKeyPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	out, err := h.Run(ctx, remote.Cmd{Args: []string{"blkid", "-o", "value", "-s", "TYPE", "/dev/vdb"}, Sudo: true, OKExit: []int{2}})
	if err != nil || out.ExitCode != 2 {
		t.Fatalf("blkid on a blank disk: %v, %+v", err, out)
	}
	_, err = h.Run(ctx, remote.Cmd{Args: []string{"apt-get", "install", "-y", "nosuch"}, Sudo: true})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Unable to locate package nosuch") {
		t.Errorf("unknown package: %v", err)
	}
	for _, args := range [][]string{
		{"apt-get", "install", "-y", "nfs-common"},
		{"mkfs.ext4", "-q", "/dev/vdb"},
		{"mkdir", "-p", "/exports"},
		{"mount", "/dev/vdb", "/exports"},
	} {
		if _, err := h.Run(ctx, remote.Cmd{Args: args, Sudo: true, Env: map[string]string{"DEBIAN_FRONTEND": "noninteractive"}}); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if _, err := h.WriteFile(ctx, "/exports/hello.txt", strings.NewReader("hi\n"), remote.FileOptions{Sudo: true}); err != nil {
		t.Fatal(err)
	}
	if !v.Installed("nfs-common") || !v.Installed("rpcbind") || !v.Service("rpcbind").Active || d.Formats() != 1 {
		t.Errorf("packages %v, rpcbind %+v, %d formats", v.Packages(), v.Service("rpcbind"), d.Formats())
	}
	if data, err := d.ReadFile("hello.txt"); err != nil || string(data) != "hi\n" {
		t.Errorf("the file written over SFTP is not on the disk: %q %v", data, err)
	}
}

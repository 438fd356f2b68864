package ubuntu_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"golang.org/x/crypto/ssh"
)

// daemonKey keys the example daemon's per-machine state in
// Machine.Extension.
type daemonKey struct{}

// daemon is what the fake "exampled" remembers on one machine.
type daemon struct{ port string }

// A package of the simulated cloud brings a fake program and a unit whose
// hooks act on per-machine state; a step under test runs twice over SSH,
// and the test asserts outcomes: installed once, started once, the disk
// formatted once and mounted.
func Example() {
	srv, err := sshtest.NewServer(sshtest.Config{
		Hostname: "storage-1",
		Users:    []sshtest.User{{Name: "ubuntu", Password: "pw", Sudo: sshtest.SudoNoPassword}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	catalog := ubuntu.DefaultCatalog()
	catalog.Add(ubuntu.Package{
		Name: "exampled", Version: "1.0-1",
		Files: map[string]string{"/etc/exampled.conf": "port=8080\n"},
		Tools: map[string]ubuntu.Tool{
			"/usr/bin/examplectl": func(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
				d := m.Extension(daemonKey{}, func() any { return &daemon{} }).(*daemon)
				if !m.Service("exampled").Active {
					fmt.Fprintln(p.Stderr, "examplectl: cannot connect to exampled")
					return 1
				}
				fmt.Fprintln(p.Stdout, "listening on", d.port)
				return 0
			},
		},
		Units: []ubuntu.Unit{{
			Name: "exampled.service",
			OnStart: func(m *ubuntu.Machine) error {
				conf, err := m.Server().FS().ReadFile("/etc/exampled.conf")
				if err != nil {
					return err
				}
				d := m.Extension(daemonKey{}, func() any { return &daemon{} }).(*daemon)
				d.port = strings.TrimSpace(strings.TrimPrefix(string(conf), "port="))
				return nil
			},
		}},
	})
	m := ubuntu.Install(srv, ubuntu.Options{Catalog: catalog, UpdatedLists: true})
	disk := ubuntu.NewDisk(10 << 30)
	m.AttachDisk("/dev/vdb", disk)

	client, err := ssh.Dial("tcp", srv.Addr(), &ssh.ClientConfig{
		User:            "ubuntu",
		Auth:            []ssh.AuthMethod{ssh.Password("pw")},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey()),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// The step: idempotent by construction.
	const step = `set -e
dpkg-query -W -f='${Status}' exampled 2>/dev/null | grep -q 'ok installed' || sudo apt-get install -y -qq exampled >/dev/null
sudo blkid /dev/vdb >/dev/null || sudo mkfs.ext4 -q /dev/vdb
sudo mkdir -p /srv/data
mountpoint -q /srv/data || sudo mount /dev/vdb /srv/data
examplectl`
	for i := 0; i < 2; i++ {
		sess, err := client.NewSession()
		if err != nil {
			log.Fatal(err)
		}
		out, err := sess.CombinedOutput(step)
		sess.Close()
		fmt.Printf("run %d: %s", i+1, out)
		if err != nil {
			log.Fatal(err)
		}
	}

	mounts := m.Mounts()
	last := mounts[len(mounts)-1]
	fmt.Println("installed:", m.Installed("exampled"), "version:", m.Version("exampled"))
	fmt.Println("starts:", m.Service("exampled").Starts, "restarts:", m.Service("exampled").Restarts)
	fmt.Println("formats:", disk.Formats(), disk.FSType())
	fmt.Println("mounted:", last.Source, last.Target, last.FSType)
	// Output:
	// run 1: listening on 8080
	// run 2: listening on 8080
	// installed: true version: 1.0-1
	// starts: 1 restarts: 0
	// formats: 1 ext4
	// mounted: /dev/vdb /srv/data ext4
}

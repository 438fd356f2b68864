package sshtest_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"golang.org/x/crypto/ssh"
)

// run executes one command over SSH and returns its combined output and
// exit status.
func run(client *ssh.Client, command string) (string, int) {
	sess, err := client.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.CombinedOutput(command)
	if exit, ok := err.(*ssh.ExitError); ok {
		return string(out), exit.ExitStatus()
	} else if err != nil {
		log.Fatal(err)
	}
	return string(out), 0
}

// Start a fake host, install a fake program and call it over SSH. In a test,
// sshtest.Start(t, cfg) does the same and closes the server when the test
// ends.
func ExampleNewServer() {
	srv, err := sshtest.NewServer(sshtest.Config{
		Hostname: "worker-1",
		Users:    []sshtest.User{{Name: "ubuntu", Password: "s3cret", Sudo: sshtest.SudoNoPassword}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// A fake kubectl: it answers one query and fails loudly otherwise.
	srv.Handle("/usr/local/bin/kubectl", func(ctx context.Context, p *sshtest.Process) int {
		if strings.Join(p.Args[1:], " ") != "get nodes -o name" {
			return p.Fail(2, "not modelled: %q", p.Args[1:])
		}
		fmt.Fprintln(p.Stdout, "node/worker-1")
		return 0
	})

	client, err := ssh.Dial("tcp", srv.Addr(), &ssh.ClientConfig{
		User:            "ubuntu",
		Auth:            []ssh.AuthMethod{ssh.Password("s3cret")},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey()),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	out, code := run(client, "hostname; command -v kubectl; sudo kubectl get nodes -o name")
	fmt.Print(out)
	fmt.Println("exit", code)
	for _, c := range srv.CallsTo("kubectl") {
		fmt.Println(c.User, c.Args, c.Exit)
	}
	// Output:
	// worker-1
	// /usr/local/bin/kubectl
	// node/worker-1
	// exit 0
	// root [kubectl get nodes -o name] 0
}

// Seed files before the code under test runs, and inspect them after.
func ExampleServer_FS() {
	srv, err := sshtest.NewServer(sshtest.Config{Users: []sshtest.User{{Name: "root", Password: "pw"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	fs := srv.FS()
	if err := fs.WriteFile("/etc/containerd/config.toml", []byte("version = 2\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	client, err := ssh.Dial("tcp", srv.Addr(), &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.Password("pw")}, HostKeyCallback: ssh.FixedHostKey(srv.HostKey()),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	out, _ := run(client, `set -e
install -d -m 0755 /etc/containerd/certs.d/registry:5000
printf '%s\n' 'server = "https://registry:5000"' > /etc/containerd/certs.d/registry:5000/hosts.toml
chown 1000:1000 /etc/containerd/certs.d/registry:5000/hosts.toml
cat /etc/containerd/config.toml`)
	fmt.Print(out)

	data, _ := fs.ReadFile("/etc/containerd/certs.d/registry:5000/hosts.toml")
	fi, _ := fs.Stat("/etc/containerd/certs.d/registry:5000/hosts.toml")
	uid, gid := sshtest.Owner(fi)
	fmt.Printf("%s%v %d:%d\n", data, fi.Mode(), uid, gid)
	// Output:
	// version = 2
	// server = "https://registry:5000"
	// -rw-r--r-- 1000:1000
}

// Make a program fail the way a busy package manager does, then recover.
func ExampleServer_FailProgram() {
	srv, err := sshtest.NewServer(sshtest.Config{Users: []sshtest.User{{Name: "root", Password: "pw"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.Handle("/usr/bin/apt-get", func(ctx context.Context, p *sshtest.Process) int {
		fmt.Fprintln(p.Stdout, "nfs-common is already the newest version")
		return 0
	})
	srv.FailProgram("apt-get", 1, 100, "E: Could not get lock /var/lib/dpkg/lock-frontend\n")

	client, err := ssh.Dial("tcp", srv.Addr(), &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.Password("pw")}, HostKeyCallback: ssh.FixedHostKey(srv.HostKey()),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	for range 2 {
		out, code := run(client, "apt-get install -y nfs-common")
		fmt.Printf("%d: %s", code, out)
	}
	for _, e := range srv.Transcript() {
		fmt.Printf("%s ran %q: %d\n", e.User, e.Command, e.Exit)
	}
	// Output:
	// 100: E: Could not get lock /var/lib/dpkg/lock-frontend
	// 0: nfs-common is already the newest version
	// root ran "apt-get install -y nfs-common": 100
	// root ran "apt-get install -y nfs-common": 0
}

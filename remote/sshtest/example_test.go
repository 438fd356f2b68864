package sshtest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

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

	// The client: package remote, with the server's address, the user's
	// login and its host key pinned.
	ctx := context.Background()
	host, err := srv.Dial(ctx, "ubuntu")
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	out, err := host.Run(ctx, remote.Command("sh", "-c", "hostname; command -v kubectl; sudo kubectl get nodes -o name"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(out.Stdout))
	fmt.Println("exit", out.ExitCode)
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

	ctx := context.Background()
	host, err := srv.Dial(ctx, "root")
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()
	out, err := host.Run(ctx, remote.Command("sh", "-c", `set -e
install -d -m 0755 /etc/containerd/certs.d/registry:5000
printf '%s\n' 'server = "https://registry:5000"' > /etc/containerd/certs.d/registry:5000/hosts.toml
chown 1000:1000 /etc/containerd/certs.d/registry:5000/hosts.toml
cat /etc/containerd/config.toml`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(out.Stdout))

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

	ctx := context.Background()
	host, err := srv.Dial(ctx, "root")
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()
	for range 2 {
		out, err := host.Run(ctx, remote.Command("apt-get", "install", "-y", "nfs-common"))
		var ce *remote.CommandError
		if errors.As(err, &ce) {
			fmt.Printf("%d: %s", ce.ExitCode, ce.Stderr)
			continue
		}
		fmt.Printf("%d: %s", out.ExitCode, out.Stdout)
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

// Route the addresses a VIM reports to fake hosts, so that code dialing
// "10.0.0.5" reaches one: Router.DialHost is what plumbing.Config.Dial
// takes; Router.Dial and Router.HostKeyPolicy go into a remote.Config.
func ExampleRouter() {
	var vms []*sshtest.Server
	router := sshtest.NewRouter()
	for i, ip := range []string{"10.0.0.5", "10.0.0.6"} {
		vm, err := sshtest.NewServer(sshtest.Config{
			Hostname: fmt.Sprintf("worker-%d", i+1),
			Users:    []sshtest.User{{Name: "ubuntu", Password: "s3cret"}},
		})
		if err != nil {
			log.Fatal(err)
		}
		defer vm.Close()
		router.Add(ip, vm)
		vms = append(vms, vm)
	}

	ctx := context.Background()
	for _, ip := range []string{"10.0.0.6", "10.0.0.5"} {
		host, err := router.DialHost(ctx, remote.Config{Addr: ip, User: "ubuntu", Password: remote.NewSecret("s3cret")})
		if err != nil {
			log.Fatal(err)
		}
		out, err := host.Run(ctx, remote.Command("hostname"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(host.Addr(), "is", out.String())
		host.Close()
	}
	fmt.Println(len(vms[0].Transcript()), len(vms[1].Transcript()))
	// Output:
	// 10.0.0.6:22 is worker-2
	// 10.0.0.5:22 is worker-1
	// 1 1
}

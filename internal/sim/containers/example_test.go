package containers_test

import (
	"fmt"
	"log"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// A registry outside the machines, with basic auth, serves app:1 at
// 192.168.0.20:5000. A machine with Docker pulls from it only once its
// /etc/hosts names it, Docker allows plain HTTP for it and root has logged
// in; the test asserts the outcome in the registry's pull log.
func Example() {
	network := &containers.StaticNetwork{}
	reg := containers.NewRegistry(containers.RegistryOptions{Username: "user01", Password: "s3cret"})
	reg.Push("app:1")
	network.AddRegistry("192.168.0.20", 5000, reg)

	srv, err := sshtest.NewServer(sshtest.Config{
		Hostname: "worker-1",
		Users:    []sshtest.User{{Name: "ubuntu", Password: "pw", Sudo: sshtest.SudoNoPassword}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	catalog := ubuntu.DefaultCatalog()
	containers.AddPackages(catalog, network)
	m := ubuntu.Install(srv, ubuntu.Options{Catalog: catalog, Packages: []string{"docker.io"}})
	network.AddMachine("192.168.0.11", m)

	client, err := ssh.Dial("tcp", srv.Addr(), &ssh.ClientConfig{
		User:            "ubuntu",
		Auth:            []ssh.AuthMethod{ssh.Password("pw")},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey()),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	run := func(command string) {
		sess, err := client.NewSession()
		if err != nil {
			log.Fatal(err)
		}
		defer sess.Close()
		out, _ := sess.CombinedOutput(command)
		fmt.Printf("%s", out)
	}

	run("sudo docker pull registry.local:5000/app:1")
	run("echo '192.168.0.20 registry.local' | sudo tee -a /etc/hosts >/dev/null")
	run("sudo docker pull registry.local:5000/app:1")
	run(`sudo mkdir -p /etc/docker && echo '{"insecure-registries": ["registry.local:5000"]}' | sudo tee /etc/docker/daemon.json >/dev/null && sudo systemctl reload docker`)
	run("sudo docker pull registry.local:5000/app:1")
	run("echo s3cret | sudo docker login --username user01 --password-stdin registry.local:5000 2>/dev/null")
	run("sudo docker pull registry.local:5000/app:1 | tail -2")

	for _, p := range reg.Pulls() {
		fmt.Printf("pull by %s (%s) of %s: ok=%v\n", p.Host, p.Runtime, p.Image, p.OK)
	}
	// Output:
	// Error response from daemon: Get "https://registry.local:5000/v2/": dial tcp: lookup registry.local on 127.0.0.53:53: no such host
	// Error response from daemon: Get "https://registry.local:5000/v2/": http: server gave HTTP response to HTTPS client
	// Error response from daemon: Head "http://registry.local:5000/v2/app/manifests/1": no basic auth credentials
	// Login Succeeded
	// Status: Downloaded newer image for registry.local:5000/app:1
	// registry.local:5000/app:1
	// pull by worker-1 (docker) of app:1: ok=false
	// pull by worker-1 (docker) of app:1: ok=true
}

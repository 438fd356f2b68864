package remote_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// startVM starts a fake host standing in for a freshly booted VM.
func startVM() *sshtest.Server {
	srv, err := sshtest.NewServer(sshtest.Config{Users: []sshtest.User{
		{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoPassword},
	}})
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// connect returns a host for the fake VM: the settings the fake hands
// out (address, login, host key pinned), as ExampleDial spells them.
func connect(vm *sshtest.Server) *remote.SSHHost {
	host, err := remote.NewSSHHost(vm.RemoteConfig("ubuntu"))
	if err != nil {
		log.Fatal(err)
	}
	return host
}

func ExampleDial() {
	vm := startVM()
	defer vm.Close()

	// Pin the host key you got from the cloud (the console log, Heat, a
	// config drive) with remote.PinnedHostKey("SHA256:..."), or verify
	// it with remote.KnownHosts; the fake VM hands out its own pin.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, err := remote.Dial(ctx, remote.Config{
		Addr:     vm.Addr(),
		Name:     "master1",
		User:     "ubuntu",
		Password: remote.NewSecret("ubuntu-pw"),
		HostKey:  vm.HostKeyPolicy(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	// sudo gets the password on standard input, never in argv.
	out, err := host.Run(ctx, remote.Cmd{Args: []string{"id", "-un"}, Sudo: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.String())

	_, err = host.Run(ctx, remote.Command("sh", "-c", "echo 'E: no space left' >&2; exit 100"))
	fmt.Println(err)
	// Output:
	// root
	// master1: command "timeout -k 5 61 sh -c 'echo '\"'\"'E: no space left'\"'\"' >&2; exit 100'" exited with status 100: E: no space left
}

func ExampleSSHHost_WriteFile() {
	vm := startVM()
	defer vm.Close()
	ctx := context.Background()
	host := connect(vm)
	defer host.Close()

	config := `{"insecure-registries": ["192.168.0.10:5000"]}` + "\n"
	for range 2 {
		changed, err := host.WriteFile(ctx, "/etc/docker/daemon.json", strings.NewReader(config), remote.FileOptions{Sudo: true, Mode: 0o644})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("changed:", changed)
	}
	// Output:
	// changed: true
	// changed: false
}

func ExampleEditBlock() {
	vm := startVM()
	defer vm.Close()
	ctx := context.Background()
	host := connect(vm)
	defer host.Close()
	vm.FS().WriteFile("/etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644)

	lines := []string{"192.168.0.20 registry.example.com"}
	if _, err := remote.EditBlock(ctx, host, "/etc/hosts", "private-registries", lines, remote.FileOptions{Sudo: true}); err != nil {
		log.Fatal(err)
	}
	hosts, _ := vm.FS().ReadFile("/etc/hosts")
	fmt.Print(string(hosts))
	// Output:
	// 127.0.0.1 localhost
	// # BEGIN mgmtkit private-registries
	// 192.168.0.20 registry.example.com
	// # END mgmtkit private-registries
}

func ExampleScript() {
	exports := remote.MustParseScript("export-nfs", `{{range .}}mkdir -p -- {{q .}}
chown nobody:nogroup {{q .}}
{{end}}exportfs -ra
`)
	text, err := exports.Render([]string{"/volume/nfs/pv1", "/volume/it's here"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(text)

	_, err = remote.ParseScript("unsafe", `rm -rf {{.Dir}}`)
	fmt.Println(err != nil)
	// Output:
	// set -euo pipefail
	// mkdir -p -- /volume/nfs/pv1
	// chown nobody:nogroup /volume/nfs/pv1
	// mkdir -p -- '/volume/it'"'"'s here'
	// chown nobody:nogroup '/volume/it'"'"'s here'
	// exportfs -ra
	// true
}

func ExampleQuote() {
	fmt.Println(remote.Quote("echo", "a b", "$(id)", "it's"))
	// Output: echo 'a b' '$(id)' 'it'"'"'s'
}

func ExampleSecret() {
	password := remote.NewSecret("s3cr3t-value")
	fmt.Printf("%v %q %+v\n", password, password, struct{ Password remote.Secret }{password})
	// Output: [REDACTED] "[REDACTED]" {Password:[REDACTED]}
}

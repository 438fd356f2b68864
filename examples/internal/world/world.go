// Package world prepares what the specs' sample requests assume exists
// around the VNFs in the simulated cloud, and checks outcomes there: the
// private registries the cir-k8s-cluster sample connects to, and image
// pulls from the cluster's nodes. The tour and the drivers' tests share it.
package world

import (
	"context"
	"fmt"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// The registries of the cir-k8s-cluster sample request.
const (
	// RegistryVNFAddress is where the sample's HTTP connection
	// ("192.168.0.10:5000") expects the registry VNF.
	RegistryVNFAddress = "192.168.0.10"
	// RegistryVNFServer is that connection's server.
	RegistryVNFServer = RegistryVNFAddress + ":5000"
	// ExternalRegistryName and ExternalRegistryIP are the sample's HTTPS
	// registry outside Tacker and its hosts_string address.
	ExternalRegistryName = "registry.example.com"
	ExternalRegistryIP   = "192.168.0.20"
	// ExternalRegistryUser and ExternalRegistryPassword are the sample's
	// credentials for it.
	ExternalRegistryUser     = "user01"
	ExternalRegistryPassword = "user01"
	// CAPath is the sample's certificate_path: the CA that signed the
	// external registry's certificate.
	CAPath = "Files/registries/ca.crt"
	// Image is what every node must be able to pull from both registries.
	Image = "app:1"
)

// Images returns the images the sample's nodes must pull: Image from each
// registry.
func Images() []string {
	return []string{RegistryVNFServer + "/" + Image, ExternalRegistryName + "/" + Image}
}

// AddExternalRegistry starts the sample's HTTPS registry outside the
// VNFs: registry.example.com at 192.168.0.20:443, its certificate signed
// by the package's CA, basic auth with the sample's credentials, serving
// Image. The cloud's network reaches it; nodes find it only through the
// hosts_string line in their /etc/hosts. password is what it accepts for
// ExternalRegistryUser (the sample's is ExternalRegistryPassword).
func AddExternalRegistry(cloud *sim.Cloud, pkg *lcm.Package, password string) (*containers.Registry, error) {
	ca, err := pkg.ReadFile(CAPath)
	if err != nil {
		return nil, fmt.Errorf("world: the external registry's CA: %w", err)
	}
	r := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca, Username: ExternalRegistryUser, Password: password})
	r.Push(Image)
	cloud.AddExternalRegistry(ExternalRegistryIP, 443, r)
	return r, nil
}

// PublishRegistryVNF makes the registry VNF's VM answer at
// RegistryVNFAddress (a floating IP the sample assumes) and pushes Image
// into its registry from the VM itself, as an operator would.
func PublishRegistryVNF(ctx context.Context, cloud *sim.Cloud, h *sim.Host) error {
	cloud.Route(RegistryVNFAddress, h)
	vm, err := cloud.Connect(ctx, h.Node(), h.Login.User, h.Login.Password)
	if err != nil {
		return err
	}
	defer vm.Close()
	local := "localhost:5000/" + Image
	for _, args := range [][]string{{"docker", "tag", "registry:latest", local}, {"docker", "push", local}} {
		if _, err := vm.Run(ctx, remote.Cmd{Args: args, Sudo: true}); err != nil {
			return fmt.Errorf("world: publishing %s on the registry VM: %w", Image, err)
		}
	}
	return nil
}

// Pull is one node's attempt to pull one image with one runtime.
type Pull struct {
	Host    string
	Runtime string // "docker" or "containerd (kubelet)"
	Image   string
	Err     error
}

// CheckPulls pulls every image on every host, with `docker pull` over SSH
// (as root, with root's Docker credentials) where Docker is installed, and
// as the kubelet does under containerd (credentials from
// /var/lib/kubelet/config.json). It returns every attempt.
func CheckPulls(ctx context.Context, cloud *sim.Cloud, hosts []*sim.Host, images []string) []Pull {
	var pulls []Pull
	for _, h := range hosts {
		vm, err := cloud.Connect(ctx, h.Node(), h.Login.User, h.Login.Password)
		for _, img := range images {
			if h.Machine.Installed("docker.io") {
				p := Pull{Host: h.Resource, Runtime: "docker", Image: img, Err: err}
				if err == nil {
					_, p.Err = vm.Run(ctx, remote.Cmd{Args: []string{"docker", "pull", img}, Sudo: true})
				}
				pulls = append(pulls, p)
			}
			pulls = append(pulls, Pull{Host: h.Resource, Runtime: "containerd (kubelet)", Image: img,
				Err: containers.KubeletPull(ctx, cloud, h.Machine, img)})
		}
		if vm != nil {
			vm.Close()
		}
	}
	return pulls
}

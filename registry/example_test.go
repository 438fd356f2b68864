package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/samples"
)

// A cluster driver decodes private_registry_connection_info with the rest
// of its parameters, then makes every node trust the registries. This
// node (a bare fake host) runs no container runtime yet, so only
// /etc/hosts and the kubelet's credentials change; the second run changes
// nothing.
func ExampleConfigureRegistryTrust() {
	vm, err := sshtest.NewServer(sshtest.Config{Users: []sshtest.User{{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword}}})
	if err != nil {
		log.Fatal(err)
	}
	defer vm.Close()

	var p registry.ClusterParams
	err = lcm.DecodeParams(json.RawMessage(`{"k8s_cluster_installation_param": {"private_registry_connection_info": [
		{"connection_type": "0", "server": "192.168.0.10:5000"},
		{"connection_type": "1", "server": "registry.example.com", "username": "user01", "password": "s3cret",
		 "hosts_string": "192.168.0.20 registry.example.com"}]}}`),
		lcm.DecodeOptions{}, lcm.Param(registry.ClusterParamKey, &p).Required())
	if err != nil {
		log.Fatal(err) // every problem with its path; nothing has run
	}

	policy, err := remote.PinnedHostKey(ssh.FingerprintSHA256(vm.HostKey()))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := remote.Dial(ctx, remote.Config{Addr: vm.Addr(), Name: "worker1", User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: policy})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	for range 2 {
		res, err := registry.ConfigureRegistryTrust(ctx, h, p.PrivateRegistryConnectionInfo, registry.TrustOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("changed=%v %s\n", res.Changed, res.Detail)
	}
	// Output:
	// changed=true wrote /etc/hosts; wrote /var/lib/kubelet/config.json
	// changed=false
}

// A VNFM registers VNFDriver for the registry VNF and invokes its hooks.
// Plumbing.SSH says how to verify host keys (here: the simulated cloud's
// known_hosts); Heat is reached through the instance's vimConnectionInfo.
func ExampleVNFDriver() {
	cloud, err := sim.New(sim.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cloud.Close()
	req := &lcm.InstantiateVnfRequest{FlavourID: "simple", AdditionalParams: json.RawMessage(`{
		"private_registry_installation_param": {
			"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "ubuntu",
			"image_path": "Files/images/private_registry.tar"}}`)}
	topo, err := sim.RegistryVNF(req.AdditionalParams) // the VM Heat would create
	if err != nil {
		log.Fatal(err)
	}
	vnf, err := cloud.Build(topo)
	if err != nil {
		log.Fatal(err)
	}
	pkg := lcm.NewPackage(samples.VNFPackage())

	driver := &registry.VNFDriver{Plumbing: registry.Plumbing{SSH: cloud.SSHConfigFunc(nil)}}
	ctx := context.Background()
	for range 2 {
		res, err := lcm.Invoke(ctx, driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: vnf.Instance(), Request: req, Package: pkg})
		if err != nil {
			log.Fatal(err)
		}
		for _, step := range res.Steps {
			fmt.Printf("%s changed=%v\n", step.Step, step.Hosts.Changed())
		}
	}
	// Output:
	// install-docker changed=true
	// load-image changed=true
	// run-registry changed=true
	// registry-health changed=false
	// install-docker changed=false
	// load-image changed=false
	// run-registry changed=false
	// registry-health changed=false
}

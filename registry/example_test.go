package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
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

	var p registry.TrustParams
	err = lcm.DecodeParams(json.RawMessage(`{"k8s_cluster_installation_param": {"private_registry_connection_info": [
		{"connection_type": "0", "server": "192.168.0.10:5000"},
		{"connection_type": "1", "server": "registry.example.com", "username": "user01", "password": "s3cret",
		 "hosts_string": "192.168.0.20 registry.example.com"}]}}`),
		lcm.DecodeOptions{}, lcm.Param(registry.ClusterParamKey, &p).Required())
	if err != nil {
		log.Fatal(err) // every problem with its path; nothing has run
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := remote.Dial(ctx, remote.Config{Addr: vm.Addr(), Name: "worker1", User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: vm.HostKeyPolicy()})
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

// A VNFM registers VNFDriver for the registry VNF and invokes its hooks
// with the VNF instance (its vimConnectionInfo says how to reach Heat), the
// request and the VNF package. Plumbing.SSH says how to verify the VM's
// host key: here a known_hosts file the VNFM keeps, read again in every
// hook. The driver runs four steps on the one VM over one connection.
//
// This example is compiled but not run: it needs an OpenStack VIM and a
// VM. registry's tests and the tour (examples/tour) run it against the
// simulated cloud.
func ExampleVNFDriver() {
	driver := &registry.VNFDriver{Plumbing: plumbing.Config{
		SSH: func(context.Context) (remote.Config, error) {
			policy, err := remote.KnownHosts("/var/lib/vnfm/known_hosts")
			return remote.Config{HostKey: policy, Logger: slog.Default()}, err
		},
		// Heat and Stack default to the instance's OpenStack VIM and the
		// stack "vnf-" + instance ID.
	}}

	var inst lcm.VnfInstance // as the VNFM stores it
	if err := json.Unmarshal([]byte(`{"id": "0a1b2c", "vimConnectionInfo": [{"id": "vim-1", "vimType": "openstack",
		"interfaceInfo": {"endpoint": "https://keystone.example.com/identity/v3"},
		"accessInfo": {"username": "nfv_user", "password": "devstack", "project": "nfv", "region": "RegionOne"}}]}`), &inst); err != nil {
		log.Fatal(err)
	}
	req := &lcm.InstantiateVnfRequest{FlavourID: "simple", AdditionalParams: json.RawMessage(`{
		"private_registry_installation_param": {
			"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "ubuntu",
			"image_path": "Files/images/private_registry.tar"}}`)}
	pkg, err := lcm.OpenPackage("/var/lib/vnfm/packages/private-registry.zip")
	if err != nil {
		log.Fatal(err)
	}
	defer pkg.Close()

	res, err := lcm.Invoke(context.Background(), driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: &inst, Request: req, Package: pkg})
	if err != nil {
		log.Fatal(err) // a bad parameter comes back with its path before anything runs
	}
	for _, step := range res.Steps {
		fmt.Printf("%s changed=%v\n", step.Step, step.Hosts.Changed())
	}
	// A first run prints:
	//   install-docker changed=true
	//   load-image changed=true
	//   run-registry changed=true
	//   registry-health changed=false
	// and a second one changed=false for every step.
}

package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// A cluster driver's hook connects to the nodes an operation created (its
// plumbing does so once per hook), then makes them all trust the
// registries at once, at most two at a time here, and reports per node.
// These nodes (bare fake hosts) run no container runtime yet, so only
// /etc/hosts changes.
func ExampleTrustNodes() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var p registry.TrustParams
	err := lcm.DecodeParams(json.RawMessage(`{"k8s_cluster_installation_param": {"private_registry_connection_info": [
		{"connection_type": "0", "server": "registry.example.com:5000", "hosts_string": "192.168.0.10 registry.example.com"}]}}`),
		lcm.DecodeOptions{}, lcm.Param(registry.ClusterParamKey, &p).Required())
	if err != nil {
		log.Fatal(err) // every problem with its path; nothing has run
	}

	var nodes []remote.Host
	for _, name := range []string{"master1", "worker1", "worker2"} {
		vm, err := sshtest.NewServer(sshtest.Config{Users: []sshtest.User{{Name: "ubuntu", Password: "ubuntu-pw", Sudo: sshtest.SudoNoPassword}}})
		if err != nil {
			log.Fatal(err)
		}
		defer vm.Close()
		h, err := remote.Dial(ctx, remote.Config{Addr: vm.Addr(), Name: name, User: "ubuntu", Password: remote.NewSecret("ubuntu-pw"), HostKey: vm.HostKeyPolicy()})
		if err != nil {
			log.Fatal(err)
		}
		defer h.Close()
		nodes = append(nodes, h)
	}

	results, err := registry.TrustNodes(ctx, nodes, p.PrivateRegistryConnectionInfo, registry.TrustOptions{}, lcm.Limit(2))
	for _, r := range results {
		fmt.Printf("%s: changed=%v %s\n", r.Host, r.Result.Changed, r.Result.Detail)
	}
	if err != nil {
		log.Fatal(err) // one error per failed node, each naming it
	}
	// Output:
	// master1: changed=true wrote /etc/hosts
	// worker1: changed=true wrote /etc/hosts
	// worker2: changed=true wrote /etc/hosts
}

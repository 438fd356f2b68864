package lb_test

import (
	"encoding/json"
	"fmt"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// A cluster driver embeds lb.LoadBalancerParams in its parameter struct and
// decodes k8s_cluster_installation_param into it. The block below is the
// kubespray spec's sample, cut to the key this package owns.
func ExampleLoadBalancerParams() {
	additionalParams := json.RawMessage(`{
	  "k8s_cluster_installation_param": {
	    "external_lb_param": {
	      "ssh_cp_name": "externalLB_instance",
	      "ssh_username": "ubuntu",
	      "ssh_password": "ubuntu",
	      "script_path": "./Scripts/ExternalLB_installation.sh"
	    }
	  }
	}`)
	// The VNF package; a driver opens the real one with lcm.OpenPackage.
	pkg := lcm.NewPackage(fstest.MapFS{
		"Scripts/ExternalLB_installation.sh": {Data: []byte("#!/bin/bash\n")},
	})

	var params struct {
		lb.LoadBalancerParams
		// ... and the driver's other parts, like kubespray.AnsibleParams.
	}
	err := lcm.DecodeParams(additionalParams, lcm.DecodeOptions{Package: pkg},
		lcm.Param(lb.ClusterParamKey, &params).Required())
	if err != nil {
		fmt.Println(err)
		return
	}
	p := params.ExternalLBParam
	fmt.Println("load balancer:", p.SSHCPName, p.SSHUsername, p.SSHPassword)
	fmt.Println("script:", p.ScriptPath)
	// Output:
	// load balancer: externalLB_instance ubuntu [REDACTED]
	// script: Scripts/ExternalLB_installation.sh
}

// A driver in native mode builds the load balancer's configuration from
// the cluster's nodes at every operation; ConfigureLB(ctx, lbHost, cfg)
// then puts it on the load balancer VM, reloading HAProxy only when the
// bytes change.
func ExampleRender() {
	masters := []lb.Server{{Name: "master-1", Address: "10.0.0.5"}}
	workers := []lb.Server{{Name: "worker-1", Address: "10.0.0.21"}, {Name: "worker-12", Address: "10.0.0.32"}}
	cfg := lb.NewConfig(masters, workers)
	cfg.Services = []lb.Service{{Namespace: "default", Name: "web", NodePorts: []int{30080}}}

	// Scale-in of worker-1: removed by its exact name.
	cfg = cfg.RemoveNodes("worker-1")

	haproxyCfg, err := lb.Render(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	backends := lb.Backends(haproxyCfg)
	for _, name := range []string{lb.APIBackend, lb.NodePortBackend} {
		fmt.Println(name+":", backends[name])
	}
	fmt.Println("VIM endpoint:", lb.VIMEndpoint("192.0.2.10", cfg.APIPort))
	// Output:
	// kubernetes-apiserver: [{master-1 10.0.0.5:6443}]
	// kubernetes-nodeport: [{master-1 10.0.0.5} {worker-12 10.0.0.32}]
	// VIM endpoint: https://192.0.2.10:8383
}

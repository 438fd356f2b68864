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

package kubespray_test

import (
	"encoding/json"
	"fmt"

	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// A cluster driver embeds kubespray.AnsibleParams in its parameter struct
// and decodes k8s_cluster_installation_param into it. The spec's sample
// block holds placeholders, which are field errors; with the Ansible
// server's real address and paths it decodes.
func ExampleAnsibleParams() {
	decode := func(ansible string) {
		additionalParams := json.RawMessage(`{"k8s_cluster_installation_param": {"ansible": ` + ansible + `}}`)
		var params struct {
			kubespray.AnsibleParams
			// ... and the driver's other parts, like lb.LoadBalancerParams.
		}
		err := lcm.DecodeParams(additionalParams, lcm.DecodeOptions{},
			lcm.Param(kubespray.ClusterParamKey, &params).Required())
		if err != nil {
			fmt.Println(err)
			return
		}
		a := params.Ansible
		fmt.Println("ansible server:", a.IPAddress, a.Username, a.Password)
		fmt.Println("copy", a.SampleInventory(), "to", a.TransferringInventoryPath)
	}

	// As the spec prints it.
	decode(`{
	  "ip_address": "0.0.0.0",
	  "username": "ansible",
	  "password": "ansible",
	  "kubespray_root_path": "",
	  "transferring_inventory_path": ""
	}`)
	fmt.Println()
	// As an operator sends it.
	decode(`{
	  "ip_address": "192.168.10.50",
	  "username": "ansible",
	  "password": "ansible",
	  "kubespray_root_path": "/home/ansible/kubespray-2.16.0",
	  "transferring_inventory_path": "/home/ansible/kubespray-2.16.0/inventory/mycluster"
	}`)
	// Output:
	// k8s_cluster_installation_param.ansible.ip_address: must be the Ansible server's address, got the unspecified address 0.0.0.0 (the spec's sample holds it as a placeholder)
	// k8s_cluster_installation_param.ansible.kubespray_root_path: is required
	// k8s_cluster_installation_param.ansible.transferring_inventory_path: is required
	//
	// ansible server: 192.168.10.50 ansible [REDACTED]
	// copy /home/ansible/kubespray-2.16.0/inventory/sample to /home/ansible/kubespray-2.16.0/inventory/mycluster
}

package kubespray_test

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/mgmtkit/mgmtkit/kubespray"
)

// A playbook's output is fed to a RecapParser line by line as it streams;
// Line's events show progress, and Judge turns the RECAP and the exit
// status into the step's error.
func ExampleRecapParser() {
	output := `
PLAY [Add worker nodes] ********************************************************

TASK [kubernetes/kubeadm : Join to cluster] ************************************
fatal: [worker-10-0-0-22]: FAILED! => {"changed": true, "msg": "non-zero return code", "rc": 1, "stderr": "[preflight] Running pre-flight checks\nerror execution phase preflight: couldn't validate the identity of the API Server"}
changed: [worker-10-0-0-23]

PLAY RECAP *********************************************************************
worker-10-0-0-22           : ok=41   changed=9    unreachable=0    failed=1    skipped=30   rescued=0    ignored=0   
worker-10-0-0-23           : ok=52   changed=12   unreachable=0    failed=0    skipped=30   rescued=0    ignored=0   
`
	var p kubespray.RecapParser
	for line := range strings.SplitSeq(output, "\n") {
		if ev := p.Line(line); ev != "" {
			fmt.Println("event:", ev)
		}
	}
	fmt.Println(p.Recap().Judge(2, []string{"worker-10-0-0-22", "worker-10-0-0-23"}))
	// Output:
	// event: play Add worker nodes
	// event: task kubernetes/kubeadm : Join to cluster
	// event: host worker-10-0-0-22 failed in task kubernetes/kubeadm : Join to cluster: non-zero return code; stderr: [preflight] Running pre-flight checks | error execution phase preflight: couldn't validate the identity of the API Server
	// ansible-playbook exited 2: one or more hosts failed
	// host worker-10-0-0-22 failed in task kubernetes/kubeadm : Join to cluster: non-zero return code; stderr: [preflight] Running pre-flight checks | error execution phase preflight: couldn't validate the identity of the API Server
}

// Scale-in removes a worker by its exact name; scale-out adds one. The
// inventory renders to hosts.yaml and reads back.
func ExampleInventory() {
	host := func(name, ip string) kubespray.Host {
		a := netip.MustParseAddr(ip)
		return kubespray.Host{Name: name, AnsibleHost: a, IP: a}
	}
	inv := kubespray.Inventory{
		ControlPlane: []kubespray.Host{host("master-10-0-0-11", "10.0.0.11")},
		Nodes:        []kubespray.Host{host("worker-10-0-0-1", "10.0.0.1"), host("worker-10-0-0-12", "10.0.0.12")},
	}
	inv = inv.Without("worker-10-0-0-1").WithNodes(host("worker-10-0-0-13", "10.0.0.13"))
	hostsYAML, err := inv.YAML()
	if err != nil {
		fmt.Println(err)
		return
	}
	back, err := kubespray.ParseInventory(hostsYAML)
	fmt.Println(back.Nodes[0].Name, back.Nodes[1].Name, err)

	// Two control-plane hosts are two etcd members: kubespray refuses.
	inv.ControlPlane = append(inv.ControlPlane, host("master-10-0-0-21", "10.0.0.21"))
	fmt.Println(inv.Check())
	// Output:
	// worker-10-0-0-12 worker-10-0-0-13 <nil>
	// inventory has 2 control-plane hosts (master-10-0-0-11, master-10-0-0-21), which are the etcd members: kubespray stops on an even number of etcd hosts; use 1, 3 or 5
}

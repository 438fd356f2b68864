package drivers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

func TestEverySamplesClusterParamsDecode(t *testing.T) {
	pkg := lcm.NewPackage(samples.VNFPackage())
	for _, name := range []string{"instantiate_cir_k8s_cluster.json", "instantiate_pv_k8s_cluster.json", "instantiate_kubespray.json"} {
		b, err := samples.Request(name)
		if err != nil {
			t.Fatal(err)
		}
		var req lcm.InstantiateVnfRequest
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		p, err := DecodeClusterParams(req.AdditionalParams, pkg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.MasterNode.AspectID != "master_instance" || p.WorkerNode == nil || p.WorkerNode.Password.Reveal() != "ubuntu" {
			t.Errorf("%s: %+v", name, p)
		}
	}
	_, err := DecodeClusterParams(json.RawMessage(`{"k8s_cluster_installation_param": {"master_node": {"ssh_cp_name": "m", "username": "u", "password": "p"}, "wroker_node": {}}}`), pkg)
	if err == nil || !strings.Contains(err.Error(), `k8s_cluster_installation_param.wroker_node: unknown key (did you mean "worker_node"?)`) {
		t.Errorf("a misspelt key: %v", err)
	}
}

func TestHeatNamesAreFieldErrors(t *testing.T) {
	_, err := DecodeClusterParams(json.RawMessage(`{"k8s_cluster_installation_param": {
		"master_node": {"aspect_id": "..", "ssh_cp_name": "m?x=1", "cluster_cp_name": "vip/CP", "username": "u", "password": "p"},
		"worker_node": {"ssh_cp_name": "w", "nic_cp_name": "w\tCP", "username": "u", "password": "p"}}}`), nil)
	want := []string{
		`k8s_cluster_installation_param.master_node.aspect_id: ".." must not be ".."`,
		`k8s_cluster_installation_param.master_node.cluster_cp_name: "vip/CP" must not contain "/"`,
		`k8s_cluster_installation_param.worker_node.nic_cp_name: "w\tCP" must not contain control characters`,
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not say %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "ssh_cp_name") {
		t.Errorf("m?x=1 is a name Heat can have, and is escaped: %v", err)
	}
}

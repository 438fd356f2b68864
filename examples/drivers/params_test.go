package drivers_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// additionalParams decodes the additionalParams of a request body.
func additionalParams(t *testing.T, body []byte) json.RawMessage {
	t.Helper()
	params, err := samples.AdditionalParams(body)
	if err != nil {
		t.Fatal(err)
	}
	return params
}

// The specs' samples, as printed, fail at exactly their placeholders; with
// working values there, every part decodes.
func TestEverySamplesClusterParamsDecode(t *testing.T) {
	pkg := lcm.NewPackage(samples.VNFPackage())
	for _, name := range []string{samples.InstantiateCIRCluster, samples.InstantiatePVCluster, samples.InstantiateKubespray} {
		raw, err := samples.Request(name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = drivers.DecodeClusterParams(additionalParams(t, raw), pkg)
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) {
			t.Fatalf("%s as printed: %v, want the placeholders refused", name, err)
		}
		var paths []string
		for _, pr := range pe.Problems {
			paths = append(paths, "additionalParams."+pr.Path)
		}
		if want := samples.Placeholders(name); !slices.Equal(paths, want) {
			t.Errorf("%s as printed: problems at\n%q\nwant the placeholders\n%q\n%v", name, paths, want, err)
		}

		working, err := sim.WorkingRequest(name, "127.0.0.9")
		if err != nil {
			t.Fatal(err)
		}
		p, err := drivers.DecodeClusterParams(additionalParams(t, working), pkg)
		if err != nil {
			t.Errorf("%s with working values: %v", name, err)
			continue
		}
		if p.MasterNode.AspectID != "master_instance" || p.WorkerNode == nil || p.WorkerNode.Password.Reveal() != "ubuntu" {
			t.Errorf("%s: %+v", name, p)
		}
	}
	_, err := drivers.DecodeClusterParams(json.RawMessage(`{"k8s_cluster_installation_param": {"master_node": {"ssh_cp_name": "m", "username": "u", "password": "p"}, "wroker_node": {}}}`), pkg)
	if err == nil || !strings.Contains(err.Error(), `k8s_cluster_installation_param.wroker_node: unknown key (did you mean "worker_node"?)`) {
		t.Errorf("a misspelt key: %v", err)
	}
}

func TestHeatNamesAreFieldErrors(t *testing.T) {
	_, err := drivers.DecodeClusterParams(json.RawMessage(`{"k8s_cluster_installation_param": {
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

// Leaving out every optional placeholder of the kubeadm samples, at the
// path samples.RemovalPath gives, makes a request the cluster driver
// decodes: no proxy block is left half-empty.
func TestSamplesWithoutTheirPlaceholdersDecode(t *testing.T) {
	pkg := lcm.NewPackage(samples.VNFPackage())
	for _, name := range []string{samples.InstantiateCIRCluster, samples.InstantiatePVCluster} {
		raw, err := samples.Request(name)
		if err != nil {
			t.Fatal(err)
		}
		edits := map[string]any{}
		for _, p := range samples.Placeholders(name) {
			edits[samples.RemovalPath(p)] = nil
		}
		body, err := samples.Patch(raw, edits)
		if err != nil {
			t.Fatal(err)
		}
		p, err := drivers.DecodeClusterParams(additionalParams(t, body), pkg)
		if err != nil {
			t.Errorf("%s without its placeholders: %v", name, err)
		} else if p.Proxy != nil {
			t.Errorf("%s: the proxy is still there: %+v", name, p.Proxy)
		}
	}
}

package lb_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lb"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// clusterParams is a kubespray driver's parameter struct: this package's
// part embedded, the keys other packages own taken as they are.
type clusterParams struct {
	lb.LoadBalancerParams
	ScriptPath string          `json:"script_path"`
	VimName    string          `json:"vim_name"`
	Ansible    json.RawMessage `json:"ansible"`
	MasterNode json.RawMessage `json:"master_node"`
	WorkerNode json.RawMessage `json:"worker_node"`
	Proxy      json.RawMessage `json:"proxy"`
}

// decode decodes additionalParams with the sample VNF package.
func decode(t *testing.T, additionalParams []byte) (clusterParams, error) {
	t.Helper()
	var p clusterParams
	err := lcm.DecodeParams(additionalParams, lcm.DecodeOptions{Package: lcm.NewPackage(samples.VNFPackage())},
		lcm.Param(lb.ClusterParamKey, &p).Required())
	return p, err
}

// sample returns the kubespray spec's sample additionalParams with the
// edits (paths below k8s_cluster_installation_param; nil removes).
func sample(t *testing.T, edits map[string]any) []byte {
	t.Helper()
	body, err := samples.Request(samples.InstantiateKubespray)
	if err != nil {
		t.Fatal(err)
	}
	full := map[string]any{}
	for k, v := range edits {
		full["additionalParams."+lb.ClusterParamKey+"."+k] = v
	}
	if body, err = samples.Patch(body, full); err != nil {
		t.Fatal(err)
	}
	params, err := samples.AdditionalParams(body)
	if err != nil {
		t.Fatal(err)
	}
	return params
}

// problems returns the "path: message" lines of a *lcm.ParamsError.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a *lcm.ParamsError", err, err)
	}
	return pe.Lines()
}

func TestTheSpecSampleDecodes(t *testing.T) {
	p, err := decode(t, sample(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	e := p.ExternalLBParam
	if e == nil || e.SSHCPName != "externalLB_instance" || e.SSHUsername != "ubuntu" || e.SSHPassword.Reveal() != "ubuntu" ||
		e.ScriptPath != "Scripts/ExternalLB_installation.sh" { // the sample's "./" dropped
		t.Errorf("external_lb_param: %+v", e)
	}
}

func TestWithoutTheBlockItDecodesToNil(t *testing.T) {
	for _, v := range []any{nil, json.RawMessage("null")} {
		p, err := decode(t, sample(t, map[string]any{"external_lb_param": v}))
		if err != nil {
			t.Fatal(err)
		}
		if p.ExternalLBParam != nil {
			t.Errorf("external_lb_param: %+v", p.ExternalLBParam)
		}
	}
}

func TestEveryProblemHasItsPath(t *testing.T) {
	const lbp = lb.ClusterParamKey + ".external_lb_param."
	for _, tt := range []struct {
		name  string
		edits map[string]any
		want  []string
	}{{
		name:  "required values absent or empty",
		edits: map[string]any{"external_lb_param": map[string]any{"ssh_cp_name": "", "ssh_password": nil}},
		want: []string{
			lbp + "ssh_cp_name: is required",
			lbp + "ssh_username: is required",
			lbp + "ssh_password: is required",
			lbp + "script_path: is required",
		},
	}, {
		name:  "an empty object",
		edits: map[string]any{"external_lb_param": map[string]any{}},
		want: []string{
			lbp + "ssh_cp_name: is required",
			lbp + "ssh_username: is required",
			lbp + "ssh_password: is required",
			lbp + "script_path: is required",
		},
	}, {
		name: "bad values",
		edits: map[string]any{
			"external_lb_param.ssh_cp_name":  "lb/CP",
			"external_lb_param.ssh_username": "root;id",
			"external_lb_param.script_path":  "Scripts/missing.sh",
		},
		want: []string{
			lbp + `ssh_cp_name: "lb/CP" must not contain "/": Heat resource names cannot`,
			lbp + `ssh_username: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "root;id"`,
			lbp + `script_path: "Scripts/missing.sh" does not exist in the VNF package`,
		},
	}, {
		name:  "a script outside the package",
		edits: map[string]any{"external_lb_param.script_path": "../../bin/sh"},
		want: []string{
			lbp + `script_path: invalid VNF package path "../../bin/sh": it leaves the package root; it must be a relative path inside the VNF package, like Files/images/registry.tar`,
		},
	}, {
		name:  "a directory, not a script",
		edits: map[string]any{"external_lb_param.script_path": "./Scripts"},
		want:  []string{lbp + `script_path: "./Scripts" is a directory in the VNF package, not a file`},
	}, {
		name:  "types",
		edits: map[string]any{"external_lb_param.ssh_password": 1234, "external_lb_param.ssh_port": 22},
		want: []string{
			lbp + "ssh_password: expected a string, got a number",
			lbp + "ssh_port: unknown key",
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode(t, sample(t, tt.edits))
			got := problems(t, err)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestThePasswordIsNeverEchoed(t *testing.T) {
	const secret = "s3cr3t-Pa55word"
	for _, edits := range []map[string]any{
		{"external_lb_param.ssh_password": secret, "external_lb_param.ssh_cp_name": "", "external_lb_param.script_path": "x/../y"},
		{"external_lb_param.ssh_password": []any{secret}},
		{"external_lb_param.ssh_password": map[string]any{secret: secret}},
	} {
		_, err := decode(t, sample(t, edits))
		if err == nil {
			t.Fatalf("%v: no error", edits)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error echoes the password:\n%v", err)
		}
	}
	p, err := decode(t, sample(t, map[string]any{"external_lb_param.ssh_password": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v", p, p, p); strings.Contains(s, secret) {
		t.Errorf("formatting the parameters shows the password: %s", s)
	}
	if b, _ := json.Marshal(p.LoadBalancerParams); strings.Contains(string(b), secret) {
		t.Errorf("encoding the parameters shows the password: %s", b)
	}
}

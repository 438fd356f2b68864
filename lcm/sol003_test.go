package lcm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// readJSON decodes a sample request body of the specs (package samples)
// or, for the other names, a file of testdata/.
func readJSON(t *testing.T, name string, into any) []byte {
	t.Helper()
	var b []byte
	var err error
	if slices.Contains(samples.Requests(), name) {
		b, err = samples.Request(name)
	} else {
		b, err = os.ReadFile(filepath.Join("testdata", name))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// The sample InstantiateVnfRequest bodies of the specs, copied unmodified.
var specInstantiateBodies = []struct {
	file, topKey string
}{
	{"instantiate_cir_registry.json", "private_registry_installation_param"},
	{"instantiate_cir_k8s_cluster.json", "k8s_cluster_installation_param"},
	{"instantiate_pv_k8s_cluster.json", "k8s_cluster_installation_param"},
	{"instantiate_kubespray.json", "k8s_cluster_installation_param"},
}

func TestSpecInstantiateRequestsDecode(t *testing.T) {
	for _, tt := range specInstantiateBodies {
		t.Run(tt.file, func(t *testing.T) {
			var req lcm.InstantiateVnfRequest
			readJSON(t, tt.file, &req)
			if req.FlavourID != "simple" {
				t.Errorf("flavourId = %q", req.FlavourID)
			}
			if len(req.VimConnectionInfo) != 1 || req.VimConnectionInfo[0].VimType != "openstack" || req.VimConnectionInfo[0].ID == "" || req.VimConnectionInfo[0].VimID == "" {
				t.Errorf("vimConnectionInfo = %+v", req.VimConnectionInfo)
			}
			var links []map[string]any
			if err := json.Unmarshal(req.ExtVirtualLinks, &links); err != nil || len(links) == 0 {
				t.Errorf("extVirtualLinks = %s (%v)", req.ExtVirtualLinks, err)
			}
			var params map[string]json.RawMessage
			if err := json.Unmarshal(req.AdditionalParams, &params); err != nil || params[tt.topKey] == nil {
				t.Errorf("additionalParams lacks %s: %s", tt.topKey, req.AdditionalParams)
			}
		})
	}
}

func TestSpecScaleRequestsDecode(t *testing.T) {
	for file, want := range map[string]lcm.ScaleType{"scale_out.json": lcm.ScaleOut, "scale_in.json": lcm.ScaleIn} {
		var req lcm.ScaleVnfRequest
		readJSON(t, file, &req)
		if req.Type != want || req.AspectID != "worker_instance" || req.NumberOfSteps != 1 || req.Steps() != 1 {
			t.Errorf("%s: %+v", file, req)
		}
	}
	var req lcm.ScaleVnfRequest
	if err := json.Unmarshal([]byte(`{"type":"SCALE_OUT","aspectId":"a"}`), &req); err != nil || req.Steps() != 1 {
		t.Errorf("default steps: %+v %v", req, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"SCALE_OUT","aspectId":"a","numberOfSteps":3}`), &req); err != nil || req.Steps() != 3 {
		t.Errorf("numeric steps: %+v %v", req, err)
	}
}

func TestRequestsDecodeLeniently(t *testing.T) {
	body := `{
		"vnfcInstanceId": ["vnfc-1"], "cause": "broken", "healScript": "x",
		"additionalParams": {"all": true}, "unknownSol003Field": {"a": 1}
	}`
	var heal lcm.HealVnfRequest
	if err := json.Unmarshal([]byte(body), &heal); err != nil {
		t.Fatal(err)
	}
	if heal.Entire() || heal.VnfcInstanceID[0] != "vnfc-1" || heal.Cause != "broken" || string(heal.AdditionalParams) != `{"all": true}` {
		t.Errorf("heal = %+v", heal)
	}
	if !(&lcm.HealVnfRequest{}).Entire() {
		t.Error("a heal request without vnfcInstanceId is not Entire")
	}

	var term lcm.TerminateVnfRequest
	if err := json.Unmarshal([]byte(`{"terminationType":"GRACEFUL","gracefulTerminationTimeout":"120","x":1}`), &term); err != nil {
		t.Fatal(err)
	}
	if term.TerminationType != lcm.Graceful || term.GracefulTerminationTimeout != 120 {
		t.Errorf("terminate = %+v", term)
	}
}

func TestVnfInstanceDecodes(t *testing.T) {
	var inst lcm.VnfInstance
	readJSON(t, "vnf_instance.json", &inst)
	if inst.ID != "a7f3a6b5-2c43-4c8c-9d0b-c1b0b2f4a1e9" || inst.InstantiationState != lcm.Instantiated || inst.VnfPkgID == "" || inst.Metadata["tenant"] != "nfv" {
		t.Errorf("instance = %+v", inst)
	}
	k8s, ok := inst.VimConnectionInfo.ByID("3cc2c4ff-525c-48b4-94c9-29247223322f")
	if !ok || k8s.VimType != "kubernetes" || k8s.AccessInfo["bearer_token"] != "eyJhbGciOiJSUzI1NiJ9.secret-token" {
		t.Errorf("k8s VIM = %+v, %v", k8s, ok)
	}
	info := inst.InstantiatedVnfInfo
	if info == nil || info.FlavourID != "simple" || info.VnfState != lcm.VnfStarted {
		t.Fatalf("instantiatedVnfInfo = %+v", info)
	}
	if len(info.ScaleStatus) != 2 || info.ScaleStatus[1].ScaleLevel != 2 {
		t.Errorf("scaleStatus = %+v", info.ScaleStatus)
	}
	vnfc := info.VnfcResourceInfo[0]
	if vnfc.VduID != "masterNode" || vnfc.ComputeResource.ResourceID != "2d7e4e2d-6cb2-4d7f-b2f4-0d3a3f9e9b11" ||
		vnfc.ComputeResource.VimLevelResourceType != "OS::Nova::Server" || vnfc.VnfcCpInfo[0].CpdID != "masterNode_CP1" ||
		vnfc.VnfcCpInfo[0].VnfExtCpID != "ext-cp-1" || len(vnfc.VnfcCpInfo[0].CpProtocolInfo) == 0 {
		t.Errorf("vnfcResourceInfo[0] = %+v", vnfc)
	}
	if len(info.ExtCpInfo) == 0 || len(info.VirtualStorageResourceInfo) == 0 || !json.Valid(info.AdditionalParams) {
		t.Errorf("raw members lost: %+v", info)
	}
}

func TestVimConnectionsDecodeBothForms(t *testing.T) {
	var v3 struct {
		VimConnectionInfo lcm.VimConnections `json:"vimConnectionInfo"`
	}
	readJSON(t, "vim_connections_v3.json", &v3)
	vs := v3.VimConnectionInfo
	if len(vs) != 2 || vs[0].ID != "vim1" || vs[1].ID != "k8s" || vs[0].AccessInfo["password"] != "devstack" {
		t.Fatalf("v3 map form: %+v", vs)
	}

	// Encoding always produces the v2 array, which decodes to the same.
	b, err := json.Marshal(vs)
	if err != nil || !bytes.HasPrefix(b, []byte(`[{"id":"vim1",`)) {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var again lcm.VimConnections
	if err := json.Unmarshal(b, &again); err != nil || fmt.Sprint(again) != fmt.Sprint(vs) || again[0].AccessInfo["password"] != "devstack" {
		t.Errorf("array form round trip: %+v, %v", again, err)
	}

	for body, want := range map[string]string{
		`{"a": {"id": "b", "vimType": "openstack"}}`:     `vimConnectionInfo["a"]: id "b" differs from its key`,
		`{"a": {"vimType": "x"}, "a": {"vimType": "y"}}`: `vimConnectionInfo: duplicate key "a"`,
		`"vim1"`:                "vimConnectionInfo: expected an array or an object, got a string",
		`{"a": {"vimType": 1}}`: `vimConnectionInfo["a"]: json: cannot unmarshal number`,
	} {
		var vs lcm.VimConnections
		if err := json.Unmarshal([]byte(body), &vs); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Unmarshal(%s) error = %v, want %q", body, err, want)
		}
	}
	vs = lcm.VimConnections{{ID: "x"}}
	if err := json.Unmarshal([]byte("null"), &vs); err != nil || vs != nil {
		t.Errorf("null: %v %v", vs, err)
	}
}

func TestAccessInfoRedactsWhenPrintedOrLogged(t *testing.T) {
	secrets := []string{"devstack", "nfv_user", "eyJhbGciOiJSUzI1NiJ9.secret-token"}
	var inst lcm.VnfInstance
	readJSON(t, "vnf_instance.json", &inst)
	ai := inst.VimConnectionInfo[0].AccessInfo

	if got, want := ai.String(), "map[password:[REDACTED] project:[REDACTED] region:[REDACTED] username:[REDACTED]]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	printed := []string{
		fmt.Sprint(ai), fmt.Sprintf("%v|%+v|%s|%q|%x|%X|%d|%10v", ai, ai, ai, ai, ai, ai, ai, ai),
		fmt.Sprintf("%#v", ai), fmt.Sprintf("%v %+v", inst.VimConnectionInfo, inst.VimConnectionInfo[1]),
		fmt.Sprintf("%+v", lcm.InstantiateVnfRequest{VimConnectionInfo: inst.VimConnectionInfo}),
	}
	if got, want := fmt.Sprintf("%#v", ai), `lcm.AccessInfo{"password":"[REDACTED]", "project":"[REDACTED]", "region":"[REDACTED]", "username":"[REDACTED]"}`; got != want {
		t.Errorf("%%#v = %s, want %s", got, want)
	}

	var logged bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&logged, nil), slog.NewTextHandler(&logged, nil)} {
		l := slog.New(h)
		l.Info("vim", "accessInfo", ai, "conn", inst.VimConnectionInfo[1], "conns", inst.VimConnectionInfo)
		l.Info("instance", "instance", inst, "info", *inst.InstantiatedVnfInfo)
		req := lcm.InstantiateVnfRequest{VimConnectionInfo: inst.VimConnectionInfo, AdditionalParams: json.RawMessage(`{"p":{"password":"devstack"}}`)}
		l.Info("requests", "instantiate", req,
			"scale", lcm.ScaleVnfRequest{AdditionalParams: req.AdditionalParams},
			"heal", lcm.HealVnfRequest{AdditionalParams: req.AdditionalParams},
			"terminate", lcm.TerminateVnfRequest{AdditionalParams: req.AdditionalParams})
	}
	printed = append(printed, logged.String())
	for _, out := range printed {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("output contains %q:\n%s", s, out)
			}
		}
	}
	// Tacker keeps a Helm password in extra; LogValue leaves extra out.
	if strings.Contains(logged.String(), "masternode_password") {
		t.Errorf("log contains extra:\n%s", logged.String())
	}
	if !strings.Contains(logged.String(), `"accessInfo":{"bearer_token":"[REDACTED]"}`) {
		t.Errorf("JSON log lacks the redacted accessInfo keys:\n%s", logged.String())
	}

	// JSON keeps the values: the VNFM persists them.
	b, err := json.Marshal(inst.VimConnectionInfo[0])
	if err != nil || !strings.Contains(string(b), `"password":"devstack"`) {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	var back lcm.VimConnectionInfo
	if err := json.Unmarshal(b, &back); err != nil || back.AccessInfo["password"] != "devstack" {
		t.Errorf("Unmarshal = %+v, %v", back, err)
	}
	if s := fmt.Sprint(lcm.AccessInfo(nil)); s != "map[]" {
		t.Errorf("nil AccessInfo prints %q", s)
	}
}

func TestInt(t *testing.T) {
	tests := []struct {
		in   string
		want lcm.Int
		err  string
	}{
		{`5000`, 5000, ""},
		{`"5000"`, 5000, ""},
		{`-3`, -3, ""},
		{`"-3"`, -3, ""},
		{`0`, 0, ""},
		{`null`, 7, ""}, // unchanged
		{`1.5`, 7, "expected an integer, got 1.5"},
		{`1e3`, 7, "expected an integer, got 1e3"},
		{`"abc"`, 7, `expected an integer, got the string "abc"`},
		{`" 5"`, 7, `expected an integer, got the string " 5"`},
		{`""`, 7, "expected an integer, got an empty string"},
		{`true`, 7, "expected an integer, got a boolean"},
		{`[1]`, 7, "expected an integer, got an array"},
		{`{}`, 7, "expected an integer, got an object"},
		{`99999999999999999999`, 7, "99999999999999999999 is out of range for an integer"},
	}
	for _, tt := range tests {
		i := lcm.Int(7)
		err := i.UnmarshalJSON([]byte(tt.in))
		if i != tt.want || (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
			t.Errorf("UnmarshalJSON(%s) = %d, %v; want %d, %q", tt.in, i, err, tt.want, tt.err)
		}
	}
	b, _ := json.Marshal(struct{ N lcm.Int }{42})
	if string(b) != `{"N":42}` {
		t.Errorf("Marshal = %s, want a number", b)
	}
	if lcm.Int(3).Int() != 3 {
		t.Error("Int()")
	}
}

func TestBool(t *testing.T) {
	tests := []struct {
		in   string
		want lcm.Bool
		err  bool
	}{
		{`true`, true, false},
		{`false`, false, false},
		{`"true"`, true, false},
		{`"True"`, true, false},
		{`"false"`, false, false},
		{`"False"`, false, false},
		{`null`, true, false}, // unchanged
		{`"yes"`, true, true},
		{`"TRUE"`, true, true},
		{`1`, true, true},
	}
	for _, tt := range tests {
		b := lcm.Bool(true)
		err := b.UnmarshalJSON([]byte(tt.in))
		if b != tt.want || (err != nil) != tt.err {
			t.Errorf("UnmarshalJSON(%s) = %v, %v; want %v, error %v", tt.in, b, err, tt.want, tt.err)
		}
	}
	out, _ := json.Marshal(struct{ B lcm.Bool }{true})
	if string(out) != `{"B":true}` || !lcm.Bool(true).Bool() {
		t.Errorf("Marshal = %s", out)
	}
}

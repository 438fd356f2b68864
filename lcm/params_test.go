package lcm_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// specPackage holds the files the spec samples refer to.
func specPackage() *lcm.Package {
	return lcm.NewPackage(fstest.MapFS{
		"Files/images/private_registry.tar":   {Data: []byte("tar")},
		"Files/registries/ca.crt":             {Data: []byte("PEM")},
		"Scripts/install_k8s_cluster.sh":      {Data: []byte("#!/bin/sh")},
		"Scripts/ExternalLB_installation.sh":  {Data: []byte("#!/bin/sh")},
		"Files/kubernetes/nfs-pv1.yaml":       {Data: []byte("kind: PersistentVolume")},
		"UserData/k8s_cluster_user_data.py":   {Data: []byte("pass")},
		"Definitions/sample_kubernetes.yaml":  {Data: []byte("tosca_definitions_version: x")},
		"TOSCA-Metadata/TOSCA.meta":           {Data: []byte("TOSCA-Meta-File-Version: 1.0")},
		"Files/kubernetes/subdir/placeholder": {Data: []byte("")},
	})
}

// problems returns the problems of a *ParamsError as "path: message"
// lines, failing the test for any other error.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var pe *lcm.ParamsError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a *ParamsError", err, err)
	}
	lines := pe.Lines()
	if pe.Error() != strings.Join(lines, "\n") {
		t.Fatalf("Error() = %q, Lines() = %q", pe.Error(), lines)
	}
	return lines
}

func TestParamsErrorLines(t *testing.T) {
	pe := &lcm.ParamsError{Problems: []lcm.Problem{
		{Path: "p.b", Message: "is required"},
		{Path: "p.a", Message: "must not be empty"},
	}}
	want := []string{"p.b: is required", "p.a: must not be empty"}
	if got := pe.Lines(); !slices.Equal(got, want) {
		t.Errorf("Lines() = %q, want %q", got, want)
	}
	if got := pe.Error(); got != "p.b: is required\np.a: must not be empty" {
		t.Errorf("Error() = %q", got)
	}
}

func checkProblems(t *testing.T, err error, want ...string) {
	t.Helper()
	got := problems(t, err)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeParamsAcceptsSpecSamples(t *testing.T) {
	for _, tt := range specInstantiateBodies {
		t.Run(tt.file, func(t *testing.T) {
			var req lcm.InstantiateVnfRequest
			readJSON(t, tt.file, &req)
			var cluster clusterParams
			var registry registryInstallParams
			err := lcm.DecodeParams(req.AdditionalParams, lcm.DecodeOptions{Package: specPackage()},
				lcm.Param("k8s_cluster_installation_param", &cluster),
				lcm.Param("private_registry_installation_param", &registry),
			)
			if err != nil {
				t.Fatalf("DecodeParams: %v", err)
			}
			switch tt.topKey {
			case "private_registry_installation_param":
				if registry.SSHUsername != "ubuntu" || registry.SSHPassword.Reveal() != "ubuntu" ||
					registry.ImagePath != "Files/images/private_registry.tar" || registry.PortNo != 5000 {
					t.Errorf("registry = %+v", registry)
				}
			default:
				m := cluster.MasterNode
				if m == nil || m.SSHCpName != "masterNode_CP1" || m.Username != "ubuntu" || m.Password.Reveal() != "ubuntu" ||
					m.ClusterCpName != "masterNode_CP1" || m.AspectID != "master_instance" || cluster.WorkerNode.NicCpName != "workerNode_CP2" {
					t.Errorf("master_node = %+v", m)
				}
				if cluster.Proxy == nil || cluster.Proxy.HTTPSProxy != "https://user2:password2@host2:port2" {
					t.Errorf("proxy = %+v", cluster.Proxy)
				}
			}
		})
	}

	// Spot checks of the specific samples.
	var req lcm.InstantiateVnfRequest
	readJSON(t, "instantiate_cir_k8s_cluster.json", &req)
	var cluster clusterParams
	if err := lcm.DecodeParams(req.AdditionalParams, lcm.DecodeOptions{Package: specPackage()}, lcm.Param("k8s_cluster_installation_param", &cluster).Required()); err != nil {
		t.Fatal(err)
	}
	if r := cluster.Registries; len(r) != 2 || r[1].Password.Reveal() != "user01" || r[1].CertificatePath != "Files/registries/ca.crt" || r[1].HostsString != "192.168.0.20 registry.example.com" {
		t.Errorf("registries = %+v", r)
	}
	readJSON(t, "instantiate_pv_k8s_cluster.json", &req)
	cluster = clusterParams{}
	if err := lcm.DecodeParams(req.AdditionalParams, lcm.DecodeOptions{}, lcm.Param("k8s_cluster_installation_param", &cluster)); err != nil {
		t.Fatal(err)
	}
	if s := cluster.StorageServer; s == nil || len(s.NFSExports) != 3 || s.NFSExports[2].ExportDir != "/volume/nfs/pv3" || s.CinderVolumes[0].MountTo != "/volume" || len(cluster.PVs) != 3 {
		t.Errorf("storage = %+v, pvs = %+v", s, cluster.PVs)
	}
	readJSON(t, "instantiate_kubespray.json", &req)
	cluster = clusterParams{}
	if err := lcm.DecodeParams(req.AdditionalParams, lcm.DecodeOptions{}, lcm.Param("k8s_cluster_installation_param", &cluster)); err != nil {
		t.Fatal(err)
	}
	if cluster.Ansible == nil || cluster.Ansible.IPAddress != "0.0.0.0" || cluster.ExternalLB.ScriptPath != "./Scripts/ExternalLB_installation.sh" {
		t.Errorf("kubespray = %+v %+v", cluster.Ansible, cluster.ExternalLB)
	}
}

func TestDecodeParamsReportsEveryProblemWithItsPath(t *testing.T) {
	raw := json.RawMessage(`{
	  "k8s_cluster_installation_param": {
	    "script_path": "Scripts/install_k8s_cluster.sh",
	    "master_node": {
	      "ssh_cp_name": "masterNode_CP1",
	      "username": "ubuntu",
	      "password": 98765432,
	      "pod_cidr": 192,
	      "pod_cdir": "192.168.0.0/16",
	      "cluster_cp_name": ""
	    },
	    "worker_node": {"ssh_cp_name": "workerNode_CP2", "usrname": "ubuntu", "password": "pw"},
	    "private_registry_connection_info": [
	      {"connection_type": "0", "server": "r1:5000"},
	      {"connection_type": "2", "server": "r2:5000", "certificate_path": "../ca.crt"},
	      {"connection_type": 1}
	    ],
	    "storage_server": {
	      "ssh_cp_name": "storage_server_CP", "username": "ubuntu", "password": "ubuntu",
	      "cinder_volume_setup_params": [{"volume_resource_id": "vol", "mount_to": "/volume", "mount_options": "rw"}],
	      "nfs_server_setup_params": "/volume/nfs"
	    },
	    "pv_registration_params": [{"pv_manifest_file_path": "Files/kubernetes/nfs-pv1.yaml"}]
	  },
	  "k8s_cluster_instalation_param": {},
	  "lcm-operation-user-data": "./UserData/k8s_cluster_user_data.py",
	  "lcm-operation-user-data-class": "KubernetesClusterUserData"
	}`)
	var cluster clusterParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{Package: specPackage()}, lcm.Param("k8s_cluster_installation_param", &cluster))
	const p = "k8s_cluster_installation_param."
	checkProblems(t, err,
		p+"master_node.password: expected a string, got a number",
		p+"master_node.pod_cidr: expected a string, got a number",
		p+`master_node.pod_cdir: unknown key (did you mean "pod_cidr"?)`,
		p+"master_node.cluster_cp_name: must not be empty",
		p+`worker_node.usrname: unknown key (did you mean "username"?)`,
		p+"worker_node.username: is required",
		p+`private_registry_connection_info[1].connection_type: must be "0" (HTTP) or "1" (HTTPS)`,
		p+`private_registry_connection_info[1].certificate_path: invalid VNF package path "../ca.crt": it leaves the package root; it must be a relative path inside the VNF package, like Files/images/registry.tar`,
		p+"private_registry_connection_info[2].connection_type: expected a string, got a number",
		p+"private_registry_connection_info[2].server: is required",
		p+"storage_server.cinder_volume_setup_params[0].mount_options: unknown key",
		p+"storage_server.nfs_server_setup_params: expected an array, got a string",
		p+"pv_registration_params[0].nfs_server_cp: is required",
		`k8s_cluster_instalation_param: unknown key (did you mean "k8s_cluster_installation_param"?)`,
	)
	if strings.Contains(err.Error(), "98765432") {
		t.Errorf("error echoes a secret: %v", err)
	}
	if !reflect.DeepEqual(cluster, clusterParams{}) {
		t.Errorf("target partially filled: %+v", cluster)
	}
}

func TestDecodeParamsValidatesAcrossElements(t *testing.T) {
	raw := json.RawMessage(`{"c": {"private_registry_connection_info": [
		{"connection_type": "0", "server": "r1:5000"},
		{"connection_type": "1", "server": "r2:5000", "certificate_path": "./Files/registries/ca.crt"},
		{"connection_type": "0", "server": "r1:5000"}
	]}}`)
	var c clusterParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{Package: specPackage()}, lcm.Param("c", &c))
	checkProblems(t, err, "c.private_registry_connection_info[2].server: duplicates private_registry_connection_info[0]")

	// Without the duplicate it decodes, and Validate's normalisation of the
	// path is kept.
	raw = json.RawMessage(strings.Replace(string(raw), `"r1:5000"}`+"\n\t]", `"r3:5000"}`+"\n\t]", 1))
	if err := lcm.DecodeParams(raw, lcm.DecodeOptions{Package: specPackage()}, lcm.Param("c", &c)); err != nil {
		t.Fatal(err)
	}
	if got := c.Registries[1].CertificatePath; got != "Files/registries/ca.crt" {
		t.Errorf("certificate_path = %q, want the resolved package path", got)
	}
}

// Types whose Validate methods record the order in which they are called.
type leaf struct {
	N int `json:"n"`
}

func (l leaf) Validate(v *lcm.Validator) { v.Errorf("leaf %d", l.N) }

type leaves []leaf

func (ls leaves) Validate(v *lcm.Validator) { v.Errorf("leaves (%d)", len(ls)) }

type name string

func (n name) Validate(v *lcm.Validator) { v.Errorf("name %s", string(n)) }

type tree struct {
	Name   name             `json:"name"`
	Leaves leaves           `json:"leaves"`
	ByKey  map[string]*leaf `json:"by_key"`
	Ptr    *leaf            `json:"ptr"`
	Absent *leaf            `json:"absent"`
	Null   *leaf            `json:"null"`
	Sub    *tree            `json:"sub"`
}

func (tr *tree) Validate(v *lcm.Validator) { v.Errorf("tree") }

func TestDecodeParamsValidatesChildrenBeforeParents(t *testing.T) {
	raw := json.RawMessage(`{"t": {
		"name": "a",
		"leaves": [{"n": 1}, {"n": 2}],
		"by_key": {"x": {"n": 3}, "weird key": {"n": 4}},
		"ptr": {"n": 5},
		"null": null,
		"sub": {"leaves": []}
	}}`)
	var tr tree
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("t", &tr))
	checkProblems(t, err,
		"t.name: name a",
		"t.leaves[0]: leaf 1",
		"t.leaves[1]: leaf 2",
		"t.leaves: leaves (2)",
		`t.by_key["x"]: leaf 3`,
		`t.by_key["weird key"]: leaf 4`,
		"t.ptr: leaf 5",
		"t.sub.leaves: leaves (0)",
		"t.sub: tree",
		"t: tree",
	)
}

func TestDecodeParamsSkipsValidateOfBrokenValues(t *testing.T) {
	raw := json.RawMessage(`{"t": {"leaves": [{"n": 1}, {"n": "two"}], "ptr": {"n": 5}}}`)
	var tr tree
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("t", &tr))
	checkProblems(t, err,
		"t.leaves[0]: leaf 1",
		"t.leaves[1].n: expected an integer, got a string",
		"t.ptr: leaf 5",
	)
}

type flexible struct {
	Port    lcm.Int           `json:"port"`
	Steps   lcm.Int           `json:"steps"`
	Reverse lcm.Bool          `json:"is_reverse"`
	On      lcm.Bool          `json:"on"`
	Plain   int               `json:"plain"`
	Small   uint8             `json:"small"`
	Ratio   float64           `json:"ratio"`
	Name    string            `json:"name"`
	Flag    bool              `json:"flag"`
	CIDR    netip.Prefix      `json:"cidr"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	Labels  map[string]string `json:"labels"`
}

func TestDecodeParamsScalars(t *testing.T) {
	raw := json.RawMessage(`{"f": {
		"port": "5000", "steps": 2, "is_reverse": "True", "on": false,
		"plain": 7, "small": 255, "ratio": 0.5, "name": "n", "flag": true,
		"cidr": "10.96.0.0/12", "any": {"x": [1]}, "raw": {"keep": "as is"},
		"labels": {"CIS-node": "compute1"}
	}}`)
	var f flexible
	if err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("f", &f)); err != nil {
		t.Fatal(err)
	}
	want := flexible{
		Port: 5000, Steps: 2, Reverse: true, Plain: 7, Small: 255, Ratio: 0.5, Name: "n", Flag: true,
		CIDR: netip.MustParsePrefix("10.96.0.0/12"), Any: map[string]any{"x": []any{1.0}},
		Raw: json.RawMessage(`{"keep": "as is"}`), Labels: map[string]string{"CIS-node": "compute1"},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got  %+v\nwant %+v", f, want)
	}

	raw = json.RawMessage(`{"f": {
		"port": "50OO", "steps": 1.5, "is_reverse": "yes", "on": 1,
		"plain": "7", "small": 256, "ratio": "0.5", "name": 5, "flag": "true",
		"cidr": "10.96.0.0/33", "labels": {"a": 1}
	}}`)
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("f", &f))
	checkProblems(t, err,
		`f.port: expected an integer, got the string "50OO"`,
		"f.steps: expected an integer, got 1.5",
		`f.is_reverse: expected true or false (or "true", "false", "True", "False"), got the string "yes"`,
		"f.on: expected true or false, got a number",
		"f.plain: expected an integer, got a string",
		"f.small: 256 is out of range for uint8",
		"f.ratio: expected a number, got a string",
		"f.name: expected a string, got a number",
		"f.flag: expected a boolean, got a string",
		`f.cidr: netip.ParsePrefix("10.96.0.0/33"): prefix length out of range`,
		`f.labels["a"]: expected a string, got a number`,
	)
}

func TestDecodeParamsNeverEchoesSecrets(t *testing.T) {
	type creds struct {
		User     string          `json:"user"`
		Password remote.Secret   `json:"password" params:"required"`
		Token    *remote.Secret  `json:"token"`
		Keys     []remote.Secret `json:"keys"`
	}
	for _, body := range []string{
		`{"c": {"password": 31415926}}`,
		`{"c": {"password": {"value": "hunter2-secret"}}}`,
		`{"c": {"password": ["hunter2-secret"]}}`,
		`{"c": {"password": true, "token": 27182818}}`,
		`{"c": {"password": "hunter2-secret", "keys": ["hunter3-secret", 16180339]}, "x": 1}`,
		`{"c": {"password": "hunter2-secret", "user": 1, "usr": "hunter4-secret"}}`,
	} {
		var c creds
		err := lcm.DecodeParams(json.RawMessage(body), lcm.DecodeOptions{}, lcm.Param("c", &c))
		if err == nil {
			t.Fatalf("%s: no error", body)
		}
		for _, s := range []string{"hunter", "31415926", "27182818", "16180339", "true"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error echoes %q:\n%v", body, s, err)
			}
		}
	}
	var c creds
	err := lcm.DecodeParams(json.RawMessage(`{"c": {"password": 3, "token": {}}}`), lcm.DecodeOptions{}, lcm.Param("c", &c))
	checkProblems(t, err,
		"c.password: expected a string, got a number",
		"c.token: expected a string, got an object",
	)
	err = lcm.DecodeParams(json.RawMessage(`{"c": {"password": ""}}`), lcm.DecodeOptions{}, lcm.Param("c", &c))
	checkProblems(t, err, "c.password: must not be empty")
}

func TestDecodeParamsRequired(t *testing.T) {
	var reg registryInstallParams
	target := func() lcm.Target { return lcm.Param("private_registry_installation_param", &reg).Required() }
	tests := []struct {
		body string
		want []string
	}{
		{``, []string{"private_registry_installation_param: is required"}},
		{`null`, []string{"private_registry_installation_param: is required"}},
		{`{}`, []string{"private_registry_installation_param: is required"}},
		{`{"private_registry_installation_param": null}`, []string{"private_registry_installation_param: is required"}},
		{`{"private_registry_installation_param": {}}`, []string{"private_registry_installation_param: must not be empty"}},
		{`{"private_registry_installation_param": {"ssh_cp_name": "CP1", "ssh_username": null}}`, []string{
			"private_registry_installation_param.ssh_username: is required",
			"private_registry_installation_param.ssh_password: is required",
		}},
		{`{"private_registry_installation_param": {"ssh_cp_name": [], "ssh_username": "u", "ssh_password": "p"}}`, []string{
			"private_registry_installation_param.ssh_cp_name: must not be empty",
		}},
	}
	for _, tt := range tests {
		err := lcm.DecodeParams(json.RawMessage(tt.body), lcm.DecodeOptions{}, target())
		checkProblems(t, err, tt.want...)
	}
	// An optional target may be absent; its required fields apply only
	// when it is present.
	if err := lcm.DecodeParams(nil, lcm.DecodeOptions{}, lcm.Param("private_registry_installation_param", &reg)); err != nil {
		t.Errorf("absent optional target: %v", err)
	}
}

func TestDecodeParamsDoesNotPartiallyFill(t *testing.T) {
	good := registryInstallParams{SSHCpName: "old", PortNo: 1}
	broken := clusterParams{VimName: "old"}
	raw := json.RawMessage(`{
		"private_registry_installation_param": {"ssh_cp_name": "new", "ssh_username": "u", "ssh_password": "p"},
		"k8s_cluster_installation_param": {"vim_name": "new", "master_node": {"pod_cidr": 1}}
	}`)
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{},
		lcm.Param("private_registry_installation_param", &good),
		lcm.Param("k8s_cluster_installation_param", &broken))
	if err == nil {
		t.Fatal("no error")
	}
	if good.SSHCpName != "old" || good.PortNo != 1 || broken.VimName != "old" || broken.MasterNode != nil {
		t.Errorf("targets changed on failure: %+v %+v", good, broken)
	}

	// On success a present key replaces its target entirely; an absent one
	// leaves its target alone.
	untouched := clusterParams{VimName: "keep"}
	good = registryInstallParams{ImagePath: "stale", PortNo: 1}
	raw = json.RawMessage(`{"private_registry_installation_param": {"ssh_cp_name": "new", "ssh_username": "u", "ssh_password": "p"}}`)
	if err := lcm.DecodeParams(raw, lcm.DecodeOptions{},
		lcm.Param("private_registry_installation_param", &good),
		lcm.Param("k8s_cluster_installation_param", &untouched)); err != nil {
		t.Fatal(err)
	}
	if good.SSHCpName != "new" || good.ImagePath != "" || good.PortNo != 5000 || untouched.VimName != "keep" {
		t.Errorf("after success: %+v %+v", good, untouched)
	}
	// null counts as absent.
	raw = json.RawMessage(`{"k8s_cluster_installation_param": null}`)
	if err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("k8s_cluster_installation_param", &untouched)); err != nil || untouched.VimName != "keep" {
		t.Errorf("null: %+v, %v", untouched, err)
	}
}

func TestDecodeParamsTopLevelKeys(t *testing.T) {
	var reg registryInstallParams
	base := `"private_registry_installation_param": {"ssh_cp_name": "c", "ssh_username": "u", "ssh_password": "p"}`
	for _, k := range lcm.TackerKeys() {
		raw := json.RawMessage(`{` + base + `, "` + k + `": ["anything"]}`)
		if err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("private_registry_installation_param", &reg)); err != nil {
			t.Errorf("Tacker key %s: %v", k, err)
		}
	}
	raw := json.RawMessage(`{` + base + `, "k8s_cluster_installation_param": {"x": 1}, "lcm-operation-user-dat": "x", "totally_else": 1, "private_registry_installation_param": {}}`)
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{AllowKeys: []string{"k8s_cluster_installation_param"}},
		lcm.Param("private_registry_installation_param", &reg))
	checkProblems(t, err,
		`lcm-operation-user-dat: unknown key (did you mean "lcm-operation-user-data"?)`,
		"totally_else: unknown key",
		"private_registry_installation_param: duplicate key",
	)
}

func TestDecodeParamsInvalidInput(t *testing.T) {
	var reg registryInstallParams
	tgt := lcm.Param("r", &reg)
	checkProblems(t, lcm.DecodeParams(json.RawMessage(`[1]`), lcm.DecodeOptions{}, tgt), "additionalParams: expected an object, got an array")
	checkProblems(t, lcm.DecodeParams(json.RawMessage(`{"r": `), lcm.DecodeOptions{}, tgt), "additionalParams: is not valid JSON: unexpected end of JSON input")
	checkProblems(t, lcm.DecodeParams(json.RawMessage(`{"r": {"ssh_cp_name": "a", "ssh_cp_name": "b", "ssh_username": "u", "ssh_password": "p"}}`), lcm.DecodeOptions{}, tgt),
		"r.ssh_cp_name: duplicate key")
	checkProblems(t, lcm.DecodeParams(json.RawMessage(`{"r": "CP1"}`), lcm.DecodeOptions{}, tgt), "r: expected an object, got a string")
	checkProblems(t, lcm.DecodeParams(json.RawMessage(`{"r": {"ssh_cp_name": "c", "ssh_username": "u", "ssh_password": "p", "port_no": 70000}}`), lcm.DecodeOptions{}, tgt),
		"r.port_no: must be a TCP port number (1-65535)")
}

func TestDecodeParamsMapPaths(t *testing.T) {
	var regs map[string]registryConnection
	raw := json.RawMessage(`{"regs": {"r1": {"connection_type": "0", "server": "a"}, "r\"2": {"connection_type": "0", "sever": "b"}}}`)
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{}, lcm.Param("regs", &regs))
	checkProblems(t, err,
		`regs["r\"2"].sever: unknown key (did you mean "server"?)`,
		`regs["r\"2"].server: is required`,
	)
}

type keyed struct {
	Hosts map[string]string `json:"hosts"`
}

func (k keyed) Validate(v *lcm.Validator) {
	for name, ip := range k.Hosts {
		if _, err := netip.ParseAddr(ip); err != nil {
			v.At("hosts").Key(name).Errorf("must be an IP address")
		}
	}
	if v.Path() != "k" {
		v.Errorf("Path() = %q", v.Path())
	}
	if v.Package() != nil {
		v.Errorf("Package() is not nil")
	}
	v.Required("missing", " ")
	v.At("").At("deep").Index(3).Errorf("indexed")
}

func TestValidatorNavigation(t *testing.T) {
	var k keyed
	err := lcm.DecodeParams(json.RawMessage(`{"k": {"hosts": {"master1": "not-an-ip"}}}`), lcm.DecodeOptions{}, lcm.Param("k", &k))
	checkProblems(t, err,
		`k.hosts["master1"]: must be an IP address`,
		"k.missing: is required",
		"k.deep[3]: indexed",
	)
}

type fileParam struct {
	Path string `json:"path"`
}

func (f *fileParam) Validate(v *lcm.Validator) {
	if rel, ok := v.PackageFile("path", f.Path); ok {
		f.Path = rel
	}
}

func TestValidatorPackageFile(t *testing.T) {
	tests := []struct {
		path string
		pkg  bool
		want string // resolved path, or the problem
	}{
		{"Files/images/private_registry.tar", true, "Files/images/private_registry.tar"},
		{"./Files/registries/ca.crt", true, "Files/registries/ca.crt"},
		{"Files/missing.tar", true, `f.path: "Files/missing.tar" does not exist in the VNF package`},
		{"Files/kubernetes", true, `f.path: "Files/kubernetes" is a directory in the VNF package, not a file`},
		{"/etc/passwd", true, `f.path: invalid VNF package path "/etc/passwd": it is absolute; it must be a relative path inside the VNF package, like Files/images/registry.tar`},
		{"", true, "f.path: is required"},
		{"Files/missing.tar", false, "Files/missing.tar"},
		{"./Scripts/x.sh", false, "Scripts/x.sh"},
		{"../x", false, `f.path: invalid VNF package path "../x": it leaves the package root; it must be a relative path inside the VNF package, like Files/images/registry.tar`},
	}
	for _, tt := range tests {
		var opts lcm.DecodeOptions
		if tt.pkg {
			opts.Package = specPackage()
		}
		raw, _ := json.Marshal(map[string]any{"f": map[string]string{"path": tt.path}})
		var f fileParam
		err := lcm.DecodeParams(raw, opts, lcm.Param("f", &f))
		if strings.HasPrefix(tt.want, "f.path: ") {
			checkProblems(t, err, tt.want)
			continue
		}
		if err != nil || f.Path != tt.want {
			t.Errorf("PackageFile(%q) = %q, %v; want %q", tt.path, f.Path, err, tt.want)
		}
	}
}

func TestDecodeParamsProgrammerErrors(t *testing.T) {
	type badTag struct {
		X string `json:"x" params:"requried"`
	}
	type badField struct {
		C chan int `json:"c"`
	}
	type badMap struct {
		M map[int]string `json:"m"`
	}
	var reg registryInstallParams
	tests := []struct {
		targets []lcm.Target
		want    string
	}{
		{[]lcm.Target{lcm.Param("a", reg)}, `Param("a") needs a non-nil pointer, got lcm_test.registryInstallParams`},
		{[]lcm.Target{lcm.Param("a", (*registryInstallParams)(nil))}, `Param("a") needs a non-nil pointer`},
		{[]lcm.Target{lcm.Param("a", nil)}, `Param("a") needs a non-nil pointer, got <nil>`},
		{[]lcm.Target{lcm.Param("", &reg)}, "target 0 has an empty key"},
		{[]lcm.Target{lcm.Param("a", &reg), lcm.Param("a", &reg)}, `key "a" is given twice`},
		{[]lcm.Target{lcm.Param("a", &badTag{})}, `unknown params tag option "requried"`},
		{[]lcm.Target{lcm.Param("a", &badField{})}, "cannot decode JSON into chan int"},
		{[]lcm.Target{lcm.Param("a", &badMap{})}, "map keys must be strings"},
	}
	for _, tt := range tests {
		err := lcm.DecodeParams(json.RawMessage(`{}`), lcm.DecodeOptions{}, tt.targets...)
		var pe *lcm.ParamsError
		if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error = %v, want a programming error containing %q", err, tt.want)
		}
	}
}

type embedded struct {
	Base
	*Extra
	Own  string `json:"own"`
	Skip string `json:"-"`
}

type Base struct {
	ID  string `json:"id" params:"required"`
	Own int    `json:"own"` // hidden by embedded.Own
}

type Extra struct {
	Note string `json:"note"`
}

func TestDecodeParamsEmbeddedStructs(t *testing.T) {
	var e embedded
	err := lcm.DecodeParams(json.RawMessage(`{"e": {"id": "x", "own": "mine", "note": "n"}}`), lcm.DecodeOptions{}, lcm.Param("e", &e))
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "x" || e.Own != "mine" || e.Extra == nil || e.Note != "n" {
		t.Errorf("got %+v", e)
	}
	err = lcm.DecodeParams(json.RawMessage(`{"e": {"Skip": "x", "Own": "y"}}`), lcm.DecodeOptions{}, lcm.Param("e", &e))
	checkProblems(t, err,
		"e.Skip: unknown key",
		`e.Own: unknown key (did you mean "own"?)`,
		"e.id: is required",
	)
}

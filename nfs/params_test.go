package nfs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
	"github.com/mgmtkit/mgmtkit/samples"
)

// clusterParams is a cluster driver's parameter struct: this package's
// part embedded, the keys other packages own taken as they are.
type clusterParams struct {
	nfs.StorageParams
	ScriptPath string          `json:"script_path"`
	VimName    string          `json:"vim_name"`
	MasterNode json.RawMessage `json:"master_node"`
	WorkerNode json.RawMessage `json:"worker_node"`
	Proxy      json.RawMessage `json:"proxy"`
}

// decode decodes additionalParams with the sample VNF package.
func decode(t *testing.T, additionalParams []byte) (clusterParams, error) {
	t.Helper()
	var p clusterParams
	err := lcm.DecodeParams(additionalParams, lcm.DecodeOptions{Package: lcm.NewPackage(samples.VNFPackage())},
		lcm.Param(nfs.ClusterParamKey, &p).Required())
	return p, err
}

// sample returns the pv-k8s-cluster spec's sample additionalParams with
// the edits (paths below k8s_cluster_installation_param; nil removes).
func sample(t *testing.T, edits map[string]any) []byte {
	t.Helper()
	body, err := samples.Request(samples.InstantiatePVCluster)
	if err != nil {
		t.Fatal(err)
	}
	full := map[string]any{}
	for k, v := range edits {
		full["additionalParams."+nfs.ClusterParamKey+"."+k] = v
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

const k = nfs.ClusterParamKey + "."

func TestTheSpecSampleDecodes(t *testing.T) {
	p, err := decode(t, sample(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	s := p.StorageServer
	if s == nil || s.SSHCPName != "storage_server_CP" || s.NICCPName != "" || s.Username != "ubuntu" || s.Password.Reveal() != "ubuntu" {
		t.Fatalf("storage_server: %+v", s)
	}
	if len(s.CinderVolumeSetupParams) != 1 || s.CinderVolumeSetupParams[0] != (nfs.CinderVolume{VolumeResourceID: "storage_server_volume", MountTo: "/volume"}) {
		t.Errorf("volumes: %+v", s.CinderVolumeSetupParams)
	}
	net := netip.MustParsePrefix("10.10.0.0/24")
	if len(s.NFSServerSetupParams) != 3 {
		t.Fatalf("exports: %+v", s.NFSServerSetupParams)
	}
	for i, e := range s.NFSServerSetupParams {
		if e.ExportDir != fmt.Sprintf("/volume/nfs/pv%d", i+1) || e.ExportTo.Prefix() != net {
			t.Errorf("export %d: %+v", i, e)
		}
	}
	if len(p.PVRegistrationParams) != 3 {
		t.Fatalf("pv_registration_params: %+v", p.PVRegistrationParams)
	}
	for i, r := range p.PVRegistrationParams {
		if r != (nfs.PVRegistration{PVManifestFilePath: fmt.Sprintf("Files/kubernetes/nfs-pv%d.yaml", i+1), NFSServerCP: "storage_server_CP"}) {
			t.Errorf("pv_registration_params[%d]: %+v", i, r)
		}
	}
}

func TestWithoutNFSTheBlockDecodesToZero(t *testing.T) {
	p, err := decode(t, sample(t, map[string]any{"storage_server": nil, "pv_registration_params": nil}))
	if err != nil {
		t.Fatal(err)
	}
	if p.StorageServer != nil || p.PVRegistrationParams != nil {
		t.Errorf("got %+v", p.StorageParams)
	}
}

func TestValidationNormalises(t *testing.T) {
	p, err := decode(t, sample(t, map[string]any{
		"storage_server.nic_cp_name":                            "storage_server_CP",
		"storage_server.cinder_volume_setup_params[0].mount_to": "/volume/",
		"storage_server.nfs_server_setup_params[0].export_dir":  "/volume//nfs/pv1/",
		"storage_server.nfs_server_setup_params[0].export_to":   "10.10.0.77/24",
		"storage_server.nfs_server_setup_params[1].export_to":   "10.10.0.5",
		"storage_server.nfs_server_setup_params[2].export_to":   "fd00::5/64",
		"pv_registration_params[0].pv_manifest_file_path":       "./Files/kubernetes/nfs-pv1.yaml",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := p.StorageServer
	if s.NICCPName != "storage_server_CP" || s.CinderVolumeSetupParams[0].MountTo != "/volume" || s.NFSServerSetupParams[0].ExportDir != "/volume/nfs/pv1" {
		t.Errorf("storage_server: %+v", s)
	}
	for i, want := range []string{"10.10.0.0/24", "10.10.0.5/32", "fd00::/64"} {
		if got := s.NFSServerSetupParams[i].ExportTo.String(); got != want {
			t.Errorf("export_to[%d] = %s, want %s", i, got, want)
		}
	}
	if got := p.PVRegistrationParams[0].PVManifestFilePath; got != "Files/kubernetes/nfs-pv1.yaml" {
		t.Errorf("pv_manifest_file_path = %q", got)
	}
}

func TestEveryProblemHasItsPath(t *testing.T) {
	const ss = k + "storage_server."
	for _, tt := range []struct {
		name  string
		edits map[string]any
		want  []string
	}{{
		name: "required values absent or empty",
		edits: map[string]any{
			"storage_server": map[string]any{
				"ssh_cp_name": "", "password": "",
				"cinder_volume_setup_params": []any{map[string]any{"volume_resource_id": "", "mount_to": ""}},
				"nfs_server_setup_params":    []any{map[string]any{"export_dir": "", "export_to": ""}},
			},
			"pv_registration_params": []any{map[string]any{"pv_manifest_file_path": ""}},
		},
		want: []string{ // samples.Patch sorts keys: pv_registration_params comes first
			k + "pv_registration_params[0].pv_manifest_file_path: is required",
			k + "pv_registration_params[0].nfs_server_cp: is required",
			ss + "ssh_cp_name: is required",
			ss + "username: is required",
			ss + "password: is required",
			ss + "cinder_volume_setup_params[0].volume_resource_id: is required",
			ss + "cinder_volume_setup_params[0].mount_to: is required",
			ss + "nfs_server_setup_params[0].export_dir: is required",
			ss + "nfs_server_setup_params[0].export_to: is required",
		},
	}, {
		name: "empty lists",
		edits: map[string]any{
			"storage_server.cinder_volume_setup_params": []any{},
			"storage_server.nfs_server_setup_params":    nil,
		},
		want: []string{
			ss + "cinder_volume_setup_params: is required: at least one volume",
			ss + "nfs_server_setup_params: is required: at least one export",
		},
	}, {
		name: "names",
		edits: map[string]any{
			"storage_server.ssh_cp_name":                                      "a/b",
			"storage_server.nic_cp_name":                                      "..",
			"storage_server.username":                                         "-oProxyCommand=x",
			"storage_server.cinder_volume_setup_params[0].volume_resource_id": "vol\n1",
			"pv_registration_params[2].nfs_server_cp":                         "x/y",
		},
		want: []string{
			k + `pv_registration_params[2].nfs_server_cp: "x/y" must not contain "/": Heat resource names cannot`,
			ss + `ssh_cp_name: "a/b" must not contain "/": Heat resource names cannot`,
			ss + `nic_cp_name: ".." must not be ".."`,
			ss + `username: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "-oProxyCommand=x"`,
			ss + `cinder_volume_setup_params[0].volume_resource_id: "vol\n1" must not contain control characters`,
		},
	}, {
		name: "directories",
		edits: map[string]any{
			"storage_server.cinder_volume_setup_params": []any{
				map[string]any{"volume_resource_id": "v1", "mount_to": "/volume"},
				map[string]any{"volume_resource_id": "v2", "mount_to": "/volume/"},
				map[string]any{"volume_resource_id": "v1", "mount_to": "/srv/b"},
			},
			"storage_server.nfs_server_setup_params": []any{
				map[string]any{"export_dir": "/volume/../etc", "export_to": "10.10.0.0/24"},
				map[string]any{"export_dir": "/srv/a", "export_to": "10.10.0.0/24"},
				map[string]any{"export_dir": "/srv/b/x", "export_to": "10.10.0.0/24"},
				map[string]any{"export_dir": "/srv/b/x/", "export_to": "10.10.0.9/24"},
				map[string]any{"export_dir": "/srv/b/x", "export_to": "10.20.0.0/24"},
				map[string]any{"export_dir": "/etc", "export_to": "10.20.0.0/24"},
				map[string]any{"export_dir": "volume", "export_to": "10.20.0.0/24"},
			},
		},
		want: []string{
			ss + `cinder_volume_setup_params[1].mount_to: repeats cinder_volume_setup_params[0].mount_to "/volume"`,
			ss + `cinder_volume_setup_params[2].volume_resource_id: repeats cinder_volume_setup_params[0].volume_resource_id "v1"`,
			ss + `nfs_server_setup_params[0].export_dir: must not have a "." or ".." element, got "/volume/../etc"`,
			ss + `nfs_server_setup_params[1].export_dir: must lie on a volume, in one of the mount_to directories (/volume, /srv/b), got "/srv/a"`,
			ss + `nfs_server_setup_params[3]: repeats nfs_server_setup_params[2]: /srv/b/x to 10.10.0.0/24`,
			ss + `nfs_server_setup_params[5].export_dir: must not be in /etc, which the operating system owns, got "/etc"`,
			ss + `nfs_server_setup_params[6].export_dir: must be an absolute path, got "volume"`,
		},
	}, {
		name: "a bad mount_to leaves export_dir unjudged",
		edits: map[string]any{
			"storage_server.cinder_volume_setup_params[0].mount_to": "/home/ubuntu",
		},
		want: []string{
			ss + `cinder_volume_setup_params[0].mount_to: must not be /home/ubuntu, a home directory: it holds the user's ~/.ssh; use a directory below it`,
		},
	}, {
		name: "networks",
		edits: map[string]any{
			"storage_server.nfs_server_setup_params[0].export_to": "0.0.0.0/0",
			"storage_server.nfs_server_setup_params[1].export_to": "::/0",
			"storage_server.nfs_server_setup_params[2].export_to": "0.0.0.0",
		},
		want: []string{
			ss + "nfs_server_setup_params[0].export_to: must not be 0.0.0.0/0, every address: name the cluster's network",
			ss + "nfs_server_setup_params[1].export_to: must not be ::/0, every address: name the cluster's network",
			ss + "nfs_server_setup_params[2].export_to: must be the cluster's network or a node's address, got 0.0.0.0/32 (a placeholder like the spec's 0.0.0.0 names no host)",
		},
	}, {
		name: "a network that does not parse is a decoding problem",
		edits: map[string]any{
			"storage_server.nfs_server_setup_params[0].export_to": "*.example.com",
			"storage_server.nfs_server_setup_params[1].export_to": "10.10.0.0/33",
			"storage_server.nfs_server_setup_params[2].export_to": 10,
		},
		want: []string{
			ss + `nfs_server_setup_params[0].export_to: must be an IP network like 10.10.0.0/24 or an IP address (host names, wildcards and netgroups are not supported), got "*.example.com"`,
			ss + `nfs_server_setup_params[1].export_to: must be an IP network like 10.10.0.0/24 or an IP address, got "10.10.0.0/33"`,
			ss + `nfs_server_setup_params[2].export_to: expected a string, got a number`,
		},
	}, {
		name: "manifests",
		edits: map[string]any{
			"pv_registration_params": []any{
				map[string]any{"pv_manifest_file_path": "Files/kubernetes/nfs-pv1.yaml", "nfs_server_cp": "storage_server_CP"},
				map[string]any{"pv_manifest_file_path": "./Files/kubernetes/nfs-pv1.yaml", "nfs_server_cp": "storage_server_CP"},
				map[string]any{"pv_manifest_file_path": "Files/kubernetes/missing.yaml", "nfs_server_cp": "storage_server_CP"},
				map[string]any{"pv_manifest_file_path": "../etc/passwd", "nfs_server_cp": "storage_server_CP"},
			},
		},
		want: []string{
			k + `pv_registration_params[2].pv_manifest_file_path: "Files/kubernetes/missing.yaml" does not exist in the VNF package`,
			k + `pv_registration_params[3].pv_manifest_file_path: invalid VNF package path "../etc/passwd": it leaves the package root; it must be a relative path inside the VNF package, like Files/images/registry.tar`,
			k + `pv_registration_params[1].pv_manifest_file_path: repeats pv_registration_params[0].pv_manifest_file_path "Files/kubernetes/nfs-pv1.yaml"`,
		},
	}, {
		name:  "PersistentVolumes without a storage server",
		edits: map[string]any{"storage_server": nil},
		want:  []string{k + "pv_registration_params: needs storage_server: the PersistentVolumes live on its NFS exports"},
	}, {
		name:  "a typo in a key",
		edits: map[string]any{"storage_server.mount_to": "/volume", "storage_server.nfs_server_setup_param": []any{}},
		want: []string{
			ss + "mount_to: unknown key",
			ss + `nfs_server_setup_param: unknown key (did you mean "nfs_server_setup_params"?)`,
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

func TestPasswordsNeverEchoed(t *testing.T) {
	const secret = "s3cr3t-Pa55word"
	for _, edits := range []map[string]any{
		{"storage_server.password": secret, "storage_server.ssh_cp_name": "", "storage_server.username": "a b",
			"storage_server.cinder_volume_setup_params[0].mount_to": "/"},
		{"storage_server.password": secret, "storage_server.nfs_server_setup_params[0].export_to": "0.0.0.0/0"},
		{"storage_server.password": []any{secret}},
		{"storage_server.password": map[string]any{"x": secret}},
	} {
		_, err := decode(t, sample(t, edits))
		if err == nil {
			t.Fatalf("%v: no error", edits)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error echoes the password:\n%v", err)
		}
	}
	p, err := decode(t, sample(t, map[string]any{"storage_server.password": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v", p, p, p); strings.Contains(s, secret) {
		t.Errorf("formatting the parameters shows the password: %s", s)
	}
	if b, _ := json.Marshal(p); strings.Contains(string(b), secret) {
		t.Errorf("encoding the parameters shows the password: %s", b)
	}
}

func TestParseNetwork(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"10.10.0.0/24", "10.10.0.0/24"},
		{"10.10.0.5/24", "10.10.0.0/24"},
		{"10.10.0.5", "10.10.0.5/32"},
		{"::ffff:10.10.0.5", "10.10.0.5/32"},
		{"fd00::1", "fd00::1/128"},
		{"fd00::1/64", "fd00::/64"},
		{"", ""},
	} {
		n, err := nfs.ParseNetwork(tt.in)
		if err != nil || n.String() != tt.want {
			t.Errorf("ParseNetwork(%q) = %v, %v; want %s", tt.in, n, err, tt.want)
		}
		if b, _ := n.MarshalText(); string(b) != tt.want {
			t.Errorf("MarshalText(%q) = %s", tt.in, b)
		}
	}
	for _, in := range []string{"fe80::1%eth0", "host1", "*", "@netgroup", "10.10.0.0/", "10.10.0.0/24 ", "10.10.0.0/24(rw)"} {
		if n, err := nfs.ParseNetwork(in); err == nil {
			t.Errorf("ParseNetwork(%q) = %v, want an error", in, n)
		}
	}
	n, _ := nfs.ParseNetwork("10.10.0.0/24")
	for ip, want := range map[string]bool{"10.10.0.7": true, "::ffff:10.10.0.7": true, "10.10.1.7": false} {
		if got := n.Contains(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Contains(%s) = %v", ip, got)
		}
	}
	if (nfs.Network{}).IsValid() {
		t.Error("the zero Network is valid")
	}
}

// TestPVManifestsAreChecked: each manifest is read from the VNF package
// at validation and must be one NFS PersistentVolume on an exported
// directory; every problem names the parameter and the file.
func TestPVManifestsAreChecked(t *testing.T) {
	fsys := fstest.MapFS{}
	if err := fs.WalkDir(samples.VNFPackage(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(samples.VNFPackage(), p)
		fsys[p] = &fstest.MapFile{Data: data}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pv := func(name, path string) string {
		return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name + "\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  nfs: {server: 0.0.0.0, path: " + path + "}\n"
	}
	for name, content := range map[string]string{
		"deployment.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec: {}\n",
		"elsewhere.yaml":   pv("nfs-elsewhere", "/volume/nfs/other"),
		"two.yaml":         pv("nfs-a", "/volume/nfs/pv1") + "---\n" + pv("nfs-b", "/volume/nfs/pv2"),
		"hostpath.yaml":    "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: local\nspec:\n  hostPath: {path: /data}\n",
		"same-name.yaml":   pv("nfs-pv1", "/volume/nfs/pv2"),
		"trailing.yaml":    "# a comment document\n---\n" + pv("nfs-trailing", "/volume/nfs/pv3/") + "---\n# nothing\n",
		"bad-name.yaml":    pv("NFS_PV", "/volume/nfs/pv1"),
		"relative.yaml":    pv("nfs-rel", "volume/nfs/pv1"),
		"not-object.yaml":  "- a\n- b\n",
		"namespaced.yaml":  strings.Replace(pv("nfs-ns", "/volume/nfs/pv1"), "name: nfs-ns", "name: nfs-ns\n  namespace: default", 1),
		"another-pv2.yaml": pv("nfs-pv2-bis", "/volume/nfs/pv2"),
	} {
		fsys["Files/kubernetes/"+name] = &fstest.MapFile{Data: []byte(content)}
	}
	var list []any
	for _, f := range []string{"nfs-pv1.yaml", "deployment.yaml", "elsewhere.yaml", "two.yaml", "hostpath.yaml", "same-name.yaml",
		"trailing.yaml", "bad-name.yaml", "relative.yaml", "not-object.yaml", "namespaced.yaml", "another-pv2.yaml"} {
		list = append(list, map[string]any{"pv_manifest_file_path": "Files/kubernetes/" + f, "nfs_server_cp": "storage_server_CP"})
	}
	var p clusterParams
	err := lcm.DecodeParams(sample(t, map[string]any{"pv_registration_params": list}), lcm.DecodeOptions{Package: lcm.NewPackage(fsys)},
		lcm.Param(nfs.ClusterParamKey, &p).Required())
	const at = "k8s_cluster_installation_param.pv_registration_params"
	want := []string{
		at + "[1].pv_manifest_file_path: Files/kubernetes/deployment.yaml is a apps/v1 Deployment: want apiVersion v1, kind PersistentVolume",
		at + "[2].pv_manifest_file_path: Files/kubernetes/elsewhere.yaml mounts spec.nfs.path /volume/nfs/other, which no export_dir of storage_server.nfs_server_setup_params exports (/volume/nfs/pv1, /volume/nfs/pv2, /volume/nfs/pv3)",
		at + "[3].pv_manifest_file_path: Files/kubernetes/two.yaml holds 2 YAML documents: want one PersistentVolume",
		at + "[4].pv_manifest_file_path: Files/kubernetes/hostpath.yaml has no spec.nfs: want an NFS PersistentVolume on the storage server's exports",
		at + "[5].pv_manifest_file_path: Files/kubernetes/same-name.yaml names PersistentVolume nfs-pv1, as pv_registration_params[0]'s manifest does",
		at + "[7].pv_manifest_file_path: Files/kubernetes/bad-name.yaml ",
		at + "[8].pv_manifest_file_path: Files/kubernetes/relative.yaml spec.nfs.path must be an absolute directory, got \"volume/nfs/pv1\"",
		at + "[9].pv_manifest_file_path: Files/kubernetes/not-object.yaml is not a YAML object",
		at + "[10].pv_manifest_file_path: Files/kubernetes/namespaced.yaml sets metadata.namespace \"default\": a PersistentVolume belongs to no namespace",
	}
	got := problems(t, err)
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n%s\nwant a line starting:\n%s", i, got[i], want[i])
		}
	}
}

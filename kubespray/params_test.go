package kubespray_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/kubespray"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

// clusterParams is a kubespray driver's parameter struct: this package's
// part embedded, the keys other packages own taken as they are.
type clusterParams struct {
	kubespray.AnsibleParams
	ScriptPath      string          `json:"script_path"`
	VimName         string          `json:"vim_name"`
	MasterNode      json.RawMessage `json:"master_node"`
	WorkerNode      json.RawMessage `json:"worker_node"`
	Proxy           json.RawMessage `json:"proxy"`
	ExternalLBParam json.RawMessage `json:"external_lb_param"`
}

func decode(t *testing.T, additionalParams []byte) (clusterParams, error) {
	t.Helper()
	var p clusterParams
	err := lcm.DecodeParams(additionalParams, lcm.DecodeOptions{}, lcm.Param(kubespray.ClusterParamKey, &p).Required())
	return p, err
}

const (
	k    = kubespray.ClusterParamKey + "."
	ansi = k + "ansible."
	// Values that work, for the sample's placeholders.
	root = "/home/ansible/kubespray-2.16.0"
	inv  = "/home/ansible/kubespray-2.16.0/inventory/mycluster"
)

// sample returns the kubespray spec's sample additionalParams, as printed
// (placeholders included), with the edits (paths below
// k8s_cluster_installation_param; nil removes).
func sample(t *testing.T, edits map[string]any) []byte {
	t.Helper()
	body, err := samples.Request(samples.InstantiateKubespray)
	if err != nil {
		t.Fatal(err)
	}
	full := map[string]any{}
	for key, v := range edits {
		full["additionalParams."+k+key] = v
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

// working is the sample with its ansible placeholders replaced and the
// edits applied.
func working(t *testing.T, edits map[string]any) []byte {
	t.Helper()
	all := map[string]any{
		"ansible.ip_address":                  "192.168.10.50",
		"ansible.kubespray_root_path":         root,
		"ansible.transferring_inventory_path": inv,
	}
	for key, v := range edits {
		all[key] = v
	}
	return sample(t, all)
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

func TestTheSpecSamplesPlaceholdersAreFieldErrors(t *testing.T) {
	_, err := decode(t, sample(t, nil))
	got := problems(t, err)
	want := []string{
		ansi + "ip_address: must be the Ansible server's address, got the unspecified address 0.0.0.0 (the spec's sample holds it as a placeholder)",
		ansi + "kubespray_root_path: is required",
		ansi + "transferring_inventory_path: is required",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Every placeholder of the ansible block that samples lists is one
	// of them, and nothing else is.
	var paths []string
	for _, line := range got {
		path, _, _ := strings.Cut(line, ": ")
		paths = append(paths, "additionalParams."+path)
	}
	var placeholders []string
	for _, p := range samples.Placeholders(samples.InstantiateKubespray) {
		if strings.HasPrefix(p, "additionalParams."+ansi) {
			placeholders = append(placeholders, p)
		}
	}
	if !slices.Equal(paths, placeholders) {
		t.Errorf("problems at %v, placeholders at %v", paths, placeholders)
	}
}

func TestWithWorkingValuesTheSampleDecodes(t *testing.T) {
	p, err := decode(t, working(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Ansible
	if a == nil || a.IPAddress != netip.MustParseAddr("192.168.10.50") || a.Username != "ansible" || a.Password.Reveal() != "ansible" ||
		a.KubesprayRootPath != root || a.TransferringInventoryPath != inv || a.SampleInventory() != root+"/inventory/sample" {
		t.Errorf("ansible: %+v", a)
	}
}

func TestValidationNormalises(t *testing.T) {
	p, err := decode(t, working(t, map[string]any{
		"ansible.ip_address":                  "::ffff:192.168.10.50",
		"ansible.kubespray_root_path":         "/opt//kubespray/",
		"ansible.transferring_inventory_path": "/srv/inventories/cluster1/",
	}))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Ansible
	if a.IPAddress.String() != "192.168.10.50" || a.KubesprayRootPath != "/opt/kubespray" || a.TransferringInventoryPath != "/srv/inventories/cluster1" {
		t.Errorf("ansible: %+v", a)
	}
}

func TestWithoutTheBlockItDecodesToNil(t *testing.T) {
	p, err := decode(t, sample(t, map[string]any{"ansible": nil}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Ansible != nil {
		t.Errorf("ansible: %+v", p.Ansible)
	}
}

func TestEveryProblemHasItsPath(t *testing.T) {
	for _, tt := range []struct {
		name   string
		sample bool // edit the sample as printed, not the working values
		edits  map[string]any
		want   []string
	}{{
		name:   "an empty block",
		sample: true,
		edits:  map[string]any{"ansible": map[string]any{}},
		want: []string{
			ansi + "ip_address: is required",
			ansi + "username: is required",
			ansi + "password: is required",
			ansi + "kubespray_root_path: is required",
			ansi + "transferring_inventory_path: is required",
		},
	}, {
		name:  "addresses",
		edits: map[string]any{"ansible.ip_address": "::"},
		want:  []string{ansi + "ip_address: must be the Ansible server's address, got the unspecified address :: (the spec's sample holds it as a placeholder)"},
	}, {
		name:  "multicast",
		edits: map[string]any{"ansible.ip_address": "224.0.0.1"},
		want:  []string{ansi + "ip_address: must be a unicast address, got 224.0.0.1"},
	}, {
		name:  "a zone",
		edits: map[string]any{"ansible.ip_address": "fe80::1%eth0"},
		want:  []string{ansi + "ip_address: must not have an IPv6 zone, got fe80::1%eth0"},
	}, {
		name:  "not an address",
		edits: map[string]any{"ansible.ip_address": "192.168.10.0/24", "ansible.username": "a:b"},
		want:  []string{ansi + `ip_address: ParseAddr("192.168.10.0/24"): unexpected character (at "/24")`},
	}, {
		name:  "a number",
		edits: map[string]any{"ansible.ip_address": 3232238130},
		want:  []string{ansi + "ip_address: expected a string, got a number"},
	}, {
		name: "relative and system paths",
		edits: map[string]any{
			"ansible.username":                    "ansible user",
			"ansible.kubespray_root_path":         "kubespray",
			"ansible.transferring_inventory_path": "/etc/kubespray",
		},
		want: []string{
			ansi + `username: must be a user name (at most 32 of A-Z a-z 0-9 . _ -, not starting with '-'), got "ansible user"`,
			ansi + `kubespray_root_path: must be an absolute path, got "kubespray"`,
			ansi + `transferring_inventory_path: must not be in /etc, which the operating system owns, got "/etc/kubespray"`,
		},
	}, {
		name:  "an inventory that terminate would remove with the home directory",
		edits: map[string]any{"ansible.transferring_inventory_path": "/home/ansible/"},
		want:  []string{ansi + `transferring_inventory_path: must not be /home/ansible, a home directory: it holds the user's ~/.ssh; use a directory below it`},
	}, {
		name:  "the inventory is kubespray's root",
		edits: map[string]any{"ansible.transferring_inventory_path": root},
		want:  []string{ansi + "transferring_inventory_path: must not be, contain or lie in " + root + "/inventory/sample, kubespray's sample inventory: it is copied to this directory, which terminate removes; use a new directory like " + inv},
	}, {
		name:  "the inventory is the sample",
		edits: map[string]any{"ansible.transferring_inventory_path": root + "/inventory/sample/"},
		want:  []string{ansi + "transferring_inventory_path: must not be, contain or lie in " + root + "/inventory/sample, kubespray's sample inventory: it is copied to this directory, which terminate removes; use a new directory like " + inv},
	}, {
		name:  "the inventory inside the sample",
		edits: map[string]any{"ansible.transferring_inventory_path": root + "/inventory/sample/mine"},
		want:  []string{ansi + "transferring_inventory_path: must not be, contain or lie in " + root + "/inventory/sample, kubespray's sample inventory: it is copied to this directory, which terminate removes; use a new directory like " + inv},
	}, {
		name:  "the inventory contains kubespray",
		edits: map[string]any{"ansible.kubespray_root_path": "/srv/k/kubespray", "ansible.transferring_inventory_path": "/srv/k"},
		want:  []string{ansi + "transferring_inventory_path: must not be, contain or lie in /srv/k/kubespray/inventory/sample, kubespray's sample inventory: it is copied to this directory, which terminate removes; use a new directory like /srv/k/kubespray/inventory/mycluster"},
	}, {
		name:  "dot elements",
		edits: map[string]any{"ansible.kubespray_root_path": "/srv/k/../kubespray", "ansible.transferring_inventory_path": "/srv/./inv"},
		want: []string{
			ansi + `kubespray_root_path: must not have a "." or ".." element, got "/srv/k/../kubespray"`,
			ansi + `transferring_inventory_path: must not have a "." or ".." element, got "/srv/./inv"`,
		},
	}, {
		name:  "a typo",
		edits: map[string]any{"ansible.kubespray_root_pth": "/x"},
		want:  []string{ansi + `kubespray_root_pth: unknown key (did you mean "kubespray_root_path"?)`},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			body := working
			if tt.sample {
				body = sample
			}
			_, err := decode(t, body(t, tt.edits))
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
		{"ansible.password": secret, "ansible.ip_address": "0.0.0.0", "ansible.kubespray_root_path": "rel"},
		{"ansible.password": []any{secret}},
		{"ansible.password": 12345},
	} {
		_, err := decode(t, working(t, edits))
		if err == nil {
			t.Fatalf("%v: no error", edits)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "12345") {
			t.Errorf("the error echoes the password:\n%v", err)
		}
	}
	p, err := decode(t, working(t, map[string]any{"ansible.password": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v", p, p, p); strings.Contains(s, secret) {
		t.Errorf("formatting the parameters shows the password: %s", s)
	}
	if b, _ := json.Marshal(p.AnsibleParams); strings.Contains(string(b), secret) {
		t.Errorf("encoding the parameters shows the password: %s", b)
	}
}

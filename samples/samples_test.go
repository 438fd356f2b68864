package samples_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/samples"
)

func TestEverySampleIsAnObjectWithAdditionalParams(t *testing.T) {
	names := samples.Requests()
	want := []string{samples.InstantiateCIRCluster, samples.InstantiateCIRRegistry, samples.InstantiateKubespray,
		samples.InstantiatePVCluster, samples.ScaleIn, samples.ScaleOut}
	if !slices.Equal(names, want) {
		t.Fatalf("Requests() = %v, want %v", names, want)
	}
	for _, name := range names {
		b, err := samples.Request(name)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			AdditionalParams map[string]json.RawMessage `json:"additionalParams"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if strings.HasPrefix(name, "instantiate_") && len(body.AdditionalParams) == 0 {
			t.Errorf("%s has no additionalParams", name)
		}
	}
}

func TestAdditionalParams(t *testing.T) {
	b, _ := samples.Request(samples.InstantiateCIRRegistry)
	p, err := samples.AdditionalParams(b)
	if err != nil || !strings.HasPrefix(string(p), "{") || !strings.Contains(string(p), `"private_registry_installation_param"`) {
		t.Errorf("AdditionalParams = %s, %v", p, err)
	}
	for body, want := range map[string]string{
		`{"flavourId": "simple"}`:    "samples: the body has no additionalParams",
		`{"additionalParams": null}`: "samples: the body has no additionalParams",
		`[]`:                         "samples: the body: json: cannot unmarshal array",
		`{"additionalParams": {}`:    "samples: the body: unexpected end of JSON input",
	} {
		if p, err := samples.AdditionalParams([]byte(body)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("AdditionalParams(%s) = %s, %v; want %q", body, p, err, want)
		}
	}
}

func TestRequestReturnsAFreshCopy(t *testing.T) {
	a, _ := samples.Request(samples.ScaleOut)
	a[0] = 'x'
	b, _ := samples.Request(samples.ScaleOut)
	if b[0] == 'x' {
		t.Fatal("a caller's edit reached the next caller")
	}
}

func TestUnknownRequestNamesTheSamples(t *testing.T) {
	_, err := samples.Request("../samples.go")
	if err == nil || !strings.Contains(err.Error(), samples.ScaleOut) {
		t.Fatalf("err = %v, want one listing the samples", err)
	}
}

func TestVNFPackageHoldsWhatTheSamplesReferTo(t *testing.T) {
	pkg := samples.VNFPackage()
	for _, name := range []string{
		"TOSCA-Metadata/TOSCA.meta",
		"Files/images/private_registry.tar",
		"Files/registries/ca.crt",
		"Files/kubernetes/nfs-pv1.yaml",
		"Scripts/install_k8s_cluster.sh",
		"Scripts/ExternalLB_installation.sh",
	} {
		if _, err := fs.Stat(pkg, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// get returns the value at a dotted path, or false.
func get(t *testing.T, body []byte, path string) (any, bool) {
	t.Helper()
	var cur any
	if err := json.Unmarshal(body, &cur); err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(path, ".") {
		key, idx, _ := strings.Cut(part, "[")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
		if idx != "" {
			var i int
			fmt.Sscanf(idx, "%d]", &i)
			l, ok := cur.([]any)
			if !ok || i >= len(l) {
				return nil, false
			}
			cur = l[i]
		}
	}
	return cur, true
}

func TestEveryPlaceholderPathExists(t *testing.T) {
	for _, name := range samples.Requests() {
		b, _ := samples.Request(name)
		for _, p := range samples.Placeholders(name) {
			if _, ok := get(t, b, p); !ok {
				t.Errorf("%s: placeholder %s is not in the body", name, p)
			}
		}
	}
}

func TestPatch(t *testing.T) {
	b, _ := samples.Request(samples.InstantiateCIRCluster)
	const k8s = "additionalParams.k8s_cluster_installation_param."
	out, err := samples.Patch(b, map[string]any{
		k8s + "proxy.http_proxy":                           "http://proxy.example.com:3128",
		k8s + "proxy.https_proxy":                          nil,
		k8s + "private_registry_connection_info[1].server": "r.example.com:5043",
		k8s + "worker_node.new_key":                        map[string]any{"a": 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		k8s + "proxy.http_proxy":                           "http://proxy.example.com:3128",
		k8s + "private_registry_connection_info[1].server": "r.example.com:5043",
		k8s + "master_node.username":                       "ubuntu", // untouched
	} {
		if got, ok := get(t, out, path); !ok || got != want {
			t.Errorf("%s = %v, %v; want %v", path, got, ok, want)
		}
	}
	if _, ok := get(t, out, k8s+"proxy.https_proxy"); ok {
		t.Error("https_proxy was not removed")
	}
	if _, ok := get(t, out, k8s+"worker_node.new_key"); !ok {
		t.Error("a new key was not added")
	}
}

func TestPatchErrorsNameThePath(t *testing.T) {
	b, _ := samples.Request(samples.InstantiateCIRCluster)
	for path, want := range map[string]string{
		"additionalParams.nothing.here":     "additionalParams.nothing does not exist",
		"additionalParams[0]":               "additionalParams is an object, not an array",
		"extVirtualLinks.id":                "extVirtualLinks is an array, not an object",
		"extVirtualLinks[9].id":             "extVirtualLinks[9] does not exist",
		"flavourId.x":                       "flavourId is neither an object nor an array",
		"additionalParams..x":               "invalid path",
		"extVirtualLinks[x]":                "invalid path",
		"additionalParams.lcm-operation[1]": "additionalParams.lcm-operation does not exist",
	} {
		_, err := samples.Patch(b, map[string]any{path: "v"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Patch(%s) = %v, want %q", path, err, want)
		}
	}
}

// An operator without a proxy leaves the sample's proxy out: the whole
// block, as RemovalPath says, since a proxy block without its URLs is
// refused.
func ExampleRemovalPath() {
	body, err := samples.Request(samples.InstantiateCIRCluster)
	if err != nil {
		panic(err)
	}
	edits := map[string]any{}
	for _, p := range samples.Placeholders(samples.InstantiateCIRCluster) {
		edits[samples.RemovalPath(p)] = nil
	}
	fmt.Println(slices.Sorted(maps.Keys(edits)))
	body, err = samples.Patch(body, edits)
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Contains(string(body), "no_proxy"))
	// Output:
	// [additionalParams.k8s_cluster_installation_param.proxy]
	// false
}

// An operator, or a test, replaces the spec's placeholders before sending
// the request.
func ExamplePatch() {
	body, err := samples.Request(samples.InstantiateCIRCluster)
	if err != nil {
		panic(err)
	}
	fmt.Println(samples.Placeholders(samples.InstantiateCIRCluster))
	edits := map[string]any{}
	for _, p := range samples.Placeholders(samples.InstantiateCIRCluster) {
		edits[p] = "http://proxy.example.com:3128"
	}
	body, err = samples.Patch(body, edits)
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Count(string(body), "proxy.example.com:3128"))
	// Output:
	// [additionalParams.k8s_cluster_installation_param.proxy.http_proxy additionalParams.k8s_cluster_installation_param.proxy.https_proxy]
	// 2
}

// Package samples holds, once, the request bodies the specifications
// print and the sample VNF package they refer to, so that tests, examples
// and the tour run from the same inputs.
//
// The request bodies are the sample bodies the four specifications mgmtkit
// implements print (cir-k8s-cluster, pv-k8s-cluster,
// k8s-mgmtdriver-kubespray, mgmt-driver-for-k8s-scale: Tacker's
// documentation of its sample management drivers), byte for byte,
// placeholders included: a proxy at "http://user1:password1@host1:port1",
// an Ansible server at 0.0.0.0, empty paths. mgmtkit rejects those with a
// field error, as it must; [Placeholders] lists where each sample holds
// one, [Patch] replaces them with values that work in the caller's cloud,
// as the tour does for the simulated one, and [RemovalPath] says what to
// remove to leave one out.
//
// The VNF package is a directory tree as a CSAR extracts: the VNFD, the
// registry image archive (a `docker save` of registry:latest), the CA of
// the sample's external registry, PersistentVolume manifests and the
// scripts the specs name.
//
// The package embeds its files; a production binary should not import it.
package samples

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The sample request bodies, by file name.
const (
	// InstantiateCIRRegistry instantiates the private registry VNF
	// (cir-k8s-cluster spec, private_registry_installation_param).
	InstantiateCIRRegistry = "instantiate_cir_registry.json"
	// InstantiateCIRCluster instantiates a Kubernetes cluster that trusts
	// two private registries (cir-k8s-cluster spec).
	InstantiateCIRCluster = "instantiate_cir_k8s_cluster.json"
	// InstantiatePVCluster instantiates a Kubernetes cluster with an NFS
	// storage server and PersistentVolumes (pv-k8s-cluster spec).
	InstantiatePVCluster = "instantiate_pv_k8s_cluster.json"
	// InstantiateKubespray instantiates a Kubernetes cluster with
	// kubespray and an external load balancer
	// (k8s-mgmtdriver-kubespray spec).
	InstantiateKubespray = "instantiate_kubespray.json"
	// ScaleOut and ScaleIn scale the worker aspect
	// (mgmt-driver-for-k8s-scale spec).
	ScaleOut = "scale_out.json"
	ScaleIn  = "scale_in.json"
)

//go:embed requests/*.json
var requests embed.FS

//go:embed all:package
var vnfPackage embed.FS

// Requests returns the names of every sample request body, sorted.
func Requests() []string {
	entries, err := fs.ReadDir(requests, "requests")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Request returns a fresh copy of the sample request body name (one of
// the constants above), as the spec prints it.
func Request(name string) ([]byte, error) {
	if !slices.Contains(Requests(), name) {
		return nil, fmt.Errorf("samples: no sample request %q (have %v)", name, Requests())
	}
	return requests.ReadFile("requests/" + name)
}

// AdditionalParams returns the additionalParams member of the request
// body, as the body has it. It is an error for body not to be a JSON
// object or for the member to be absent or null.
func AdditionalParams(body []byte) (json.RawMessage, error) {
	var req struct {
		AdditionalParams json.RawMessage `json:"additionalParams"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("samples: the body: %w", err)
	}
	if req.AdditionalParams == nil || string(req.AdditionalParams) == "null" {
		return nil, errors.New("samples: the body has no additionalParams")
	}
	return req.AdditionalParams, nil
}

// VNFPackage returns the sample VNF package: its root holds Definitions/,
// Files/, Scripts/, TOSCA-Metadata/ and UserData/. Open it with
// lcm.NewPackage.
func VNFPackage() fs.FS {
	sub, err := fs.Sub(vnfPackage, "package")
	if err != nil {
		panic(err) // "package" is a valid path: cannot fail
	}
	return sub
}

// Placeholders returns the paths (in lcm's parameter path notation, from
// the request body's root) of the values in the sample request name that
// the spec prints as placeholders and that mgmtkit rejects: an operator
// must replace each before sending the request.
func Placeholders(name string) []string {
	const k8s = "additionalParams.k8s_cluster_installation_param."
	proxy := []string{k8s + "proxy.http_proxy", k8s + "proxy.https_proxy"}
	switch name {
	case InstantiateCIRCluster, InstantiatePVCluster:
		return proxy
	case InstantiateKubespray:
		return append([]string{
			k8s + "script_path",
			k8s + "ansible.ip_address",
			k8s + "ansible.kubespray_root_path",
			k8s + "ansible.transferring_inventory_path",
		}, proxy...)
	}
	return nil
}

// RemovalPath returns the path to remove (a nil value in [Patch]) to leave
// out the placeholder at path: the whole proxy block for its http_proxy and
// https_proxy, since a proxy block needs one of them (removing both URLs
// alone leaves no_proxy and k8s_node_cidr in a block mgmtkit refuses);
// path itself for any other placeholder. Only optional values can be left
// out: the Ansible server's address and kubespray's paths must be given.
func RemovalPath(path string) string {
	if parent, ok := strings.CutSuffix(path, ".proxy.http_proxy"); ok {
		return parent + ".proxy"
	}
	if parent, ok := strings.CutSuffix(path, ".proxy.https_proxy"); ok {
		return parent + ".proxy"
	}
	return path
}

// Patch returns body with the value at each path (lcm's notation:
// "additionalParams.k8s_cluster_installation_param.proxy.http_proxy",
// "…private_registry_connection_info[1].server") replaced by the edit's
// value, encoded as JSON; a nil value removes the key. Every path's parent
// must exist. The result is indented JSON with its keys sorted.
func Patch(body []byte, edits map[string]any) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("samples: the body: %w", err)
	}
	for _, path := range slices.Sorted(maps.Keys(edits)) {
		if err := set(root, path, edits[path]); err != nil {
			return nil, fmt.Errorf("samples: %s: %w", path, err)
		}
	}
	return json.MarshalIndent(root, "", "  ")
}

// set puts value at path below root; nil removes the key.
func set(root any, path string, value any) error {
	steps, err := splitPath(path)
	if err != nil {
		return err
	}
	cur := root
	for i, s := range steps {
		last := i == len(steps)-1
		switch c := cur.(type) {
		case map[string]any:
			if s.key == "" {
				return fmt.Errorf("%s is an object, not an array", joinSteps(steps[:i]))
			}
			if last {
				if value == nil {
					delete(c, s.key)
				} else {
					c[s.key] = value
				}
				return nil
			}
			next, ok := c[s.key]
			if !ok {
				return fmt.Errorf("%s does not exist", joinSteps(steps[:i+1]))
			}
			cur = next
		case []any:
			if s.key != "" {
				return fmt.Errorf("%s is an array, not an object", joinSteps(steps[:i]))
			}
			if s.index >= len(c) {
				return fmt.Errorf("%s does not exist", joinSteps(steps[:i+1]))
			}
			if last {
				if value == nil {
					return errors.New("an array element cannot be removed")
				}
				c[s.index] = value
				return nil
			}
			cur = c[s.index]
		default:
			return fmt.Errorf("%s is neither an object nor an array", joinSteps(steps[:i]))
		}
	}
	return errors.New("empty path")
}

// step is one element of a path: an object key, or an array index when
// key is empty.
type step struct {
	key   string
	index int
}

// splitPath splits "a.b[1].c" into a, b, [1], c.
func splitPath(path string) ([]step, error) {
	var steps []step
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key == "" && (rest == "" || len(steps) == 0) {
			return nil, fmt.Errorf("invalid path %q", path)
		}
		if key != "" {
			steps = append(steps, step{key: key})
		}
		for rest != "" {
			n, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !ok || err != nil || i < 0 || (after != "" && !strings.HasPrefix(after, "[")) {
				return nil, fmt.Errorf("invalid path %q", path)
			}
			steps = append(steps, step{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return steps, nil
}

// joinSteps formats steps back into a path.
func joinSteps(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		if s.key == "" {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	if b.Len() == 0 {
		return "the body"
	}
	return b.String()
}

package kubeadm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// ApplyCNI applies the pod network's manifest (Calico, Flannel, ...;
// cni_manifest_path in the VNF package) with [Kubectl.Apply]: nothing
// changes when the cluster holds it already. The manifest is checked
// first, before any remote command: YAML documents (or JSON), each an
// object with apiVersion and kind; a manifest that is not is an
// *lcm.ParamsError naming the document. Until a CNI runs, nodes are not
// Ready.
func ApplyCNI(ctx context.Context, k Kubectl, manifest []byte) (lcm.Result, error) {
	if err := checkManifest(manifest); err != nil {
		return lcm.Unchanged, err
	}
	res, err := k.Apply(ctx, manifest)
	if err != nil {
		return res, fmt.Errorf("applying the CNI manifest: %w", err)
	}
	return res, nil
}

// checkManifest checks that manifest holds at least one object and that
// every document is an object with apiVersion and kind, split as kubectl
// splits a YAML stream (k8s.io/apimachinery/pkg/util/yaml's YAMLReader:
// documents separated by "---" lines; empty and comment-only documents
// skipped).
func checkManifest(manifest []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	objects := 0
	for doc := 1; ; doc++ {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return optProblem("manifest", "document %d: %v", doc, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return optProblem("manifest", "document %d is not YAML: %v", doc, err)
		}
		if obj == nil {
			continue // empty or comments only, as kubectl skips it
		}
		for _, key := range []string{"apiVersion", "kind"} {
			if s, _ := obj[key].(string); s == "" {
				return optProblem("manifest", "document %d has no %s: not a Kubernetes object", doc, key)
			}
		}
		objects++
	}
	if objects == 0 {
		return optProblem("manifest", "holds no Kubernetes object")
	}
	return nil
}

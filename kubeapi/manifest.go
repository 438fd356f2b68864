package kubeapi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CheckManifest checks, before anything runs, that manifest is what
// [Kubectl.Apply] can apply: YAML documents (or JSON) split as kubectl
// splits a YAML stream (k8s.io/apimachinery/pkg/util/yaml's YAMLReader:
// documents separated by "---" lines; empty and comment-only documents
// skipped), at least one object, and every document an object with
// apiVersion, kind and metadata.name (kubectl apply refuses an object
// without a name, generateName included: "cannot use generate name with
// apply", staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go). A List's
// items are checked as documents. A bad manifest is an *lcm.ParamsError
// at "manifest" naming the document.
func CheckManifest(manifest []byte) error {
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
		n, msg := checkObject(obj)
		if msg != "" {
			return optProblem("manifest", "document %d %s", doc, msg)
		}
		objects += n
	}
	if objects == 0 {
		return optProblem("manifest", "holds no Kubernetes object")
	}
	return nil
}

// checkObject checks one decoded document: an object, or a List (a kind
// ending in "List" with items, as kubectl's resource builder flattens
// it) of objects. It returns how many objects it holds, or what is wrong.
func checkObject(obj map[string]any) (int, string) {
	for _, key := range []string{"apiVersion", "kind"} {
		if s, _ := obj[key].(string); s == "" {
			return 0, fmt.Sprintf("has no %s: not a Kubernetes object", key)
		}
	}
	if kind := obj["kind"].(string); strings.HasSuffix(kind, "List") {
		if items, ok := obj["items"].([]any); ok {
			n := 0
			for i, it := range items {
				m, ok := it.(map[string]any)
				if !ok {
					return 0, fmt.Sprintf("(a %s): item %d is not an object", kind, i)
				}
				c, msg := checkObject(m)
				if msg != "" {
					return 0, fmt.Sprintf("(a %s): item %d %s", kind, i, msg)
				}
				n += c
			}
			return n, ""
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name == "" {
		return 0, fmt.Sprintf("(%s) has no metadata.name", obj["kind"])
	}
	return 1, ""
}

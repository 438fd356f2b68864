package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// kubeadmConfig is a kubeadm --config file, decoded.
type kubeadmConfig struct {
	Init      *kubeadmInit
	Cluster   *kubeadmCluster
	Join      *kubeadmJoin
	Kubelet   *kubeletConfig
	KubeProxy *kubeProxyConfig
	// Warnings are what kubeadm logs about the file (klog W lines):
	// unknown fields (strict decoding) and ignored documents.
	Warnings []string
}

// configKinds are the documents kubeadm 1.36 decodes: the kubeadm kinds
// (cmd/kubeadm/app/apis/kubeadm/v1beta4) and the component configs it
// passes on (cmd/kubeadm/app/componentconfigs: kubelet, kube-proxy).
var configKinds = map[schema.GroupVersionKind]func(c *kubeadmConfig) any{
	{Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "InitConfiguration"}: func(c *kubeadmConfig) any {
		c.Init = &kubeadmInit{}
		return c.Init
	},
	{Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "ClusterConfiguration"}: func(c *kubeadmConfig) any {
		c.Cluster = &kubeadmCluster{}
		return c.Cluster
	},
	{Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "JoinConfiguration"}: func(c *kubeadmConfig) any {
		c.Join = &kubeadmJoin{}
		return c.Join
	},
	{Group: "kubelet.config.k8s.io", Version: "v1beta1", Kind: "KubeletConfiguration"}: func(c *kubeadmConfig) any {
		c.Kubelet = &kubeletConfig{}
		return c.Kubelet
	},
	{Group: "kubeproxy.config.k8s.io", Version: "v1alpha1", Kind: "KubeProxyConfiguration"}: func(c *kubeadmConfig) any {
		c.KubeProxy = &kubeProxyConfig{}
		return c.KubeProxy
	},
}

// decodeKubeadmConfig decodes a multi-document kubeadm configuration file
// as kubeadm 1.36 does:
//
//   - documents are split on "---" lines and each must name apiVersion
//     and kind, a kind at most once (cmd/kubeadm/app/util/marshal.go
//     SplitYAMLDocuments, with its messages);
//   - a kubeadm.k8s.io version other than v1beta4 is refused
//     (cmd/kubeadm/app/util/config/common.go validateSupportedVersion);
//   - a document of an unknown kind is ignored with a warning
//     ("[config] WARNING: Ignored configuration document with
//     GroupVersionKind ...", initconfiguration.go);
//   - each document is checked strictly: an unknown field is a warning,
//     not an error, for init and join (strict.VerifyUnmarshalStrict's
//     error is logged with klog.Warning unless strictErrors, which only
//     `kubeadm config validate` sets: initconfiguration.go
//     documentMapToInitConfiguration, joinconfiguration.go); the
//     apimachinery serializer words it `strict decoding error: unknown
//     field "path"`;
//   - a value of the wrong type is an error (the non-strict decode into
//     the typed object fails).
func decodeKubeadmConfig(data []byte) (*kubeadmConfig, error) {
	c := &kubeadmConfig{}
	seen := map[string]bool{}
	var errs []string
	for _, doc := range splitYAML(data) {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("error converting YAML to JSON: %v", err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		if err := json.Unmarshal(js, &tm); err != nil {
			return nil, fmt.Errorf("couldn't get version/kind; json parse error: %v", err)
		}
		gv, _ := schema.ParseGroupVersion(tm.APIVersion)
		gvk := gv.WithKind(tm.Kind)
		if gvk.Group == "" && gvk.Version == "" || gvk.Kind == "" {
			return nil, fmt.Errorf("invalid configuration for GroupVersionKind %+v: kind and apiVersion is mandatory information that must be specified", gvk)
		}
		if seen[gvk.Kind] {
			errs = append(errs, fmt.Sprintf("invalid configuration: kind %q is specified twice in YAML file", gvk.Kind))
			continue
		}
		seen[gvk.Kind] = true
		if gvk.Group == "kubeadm.k8s.io" && gvk.Version != "v1beta4" {
			return nil, fmt.Errorf("your configuration file uses an old or unsupported API spec: %q (kind: %q). Use kubeadm.k8s.io/v1beta4", tm.APIVersion, tm.Kind)
		}
		newObj, ok := configKinds[gvk]
		if !ok {
			c.Warnings = append(c.Warnings, fmt.Sprintf("[config] WARNING: Ignored configuration document with GroupVersionKind %v", gvk))
			continue
		}
		obj := newObj(c)
		if err := json.Unmarshal(js, obj); err != nil {
			return nil, fmt.Errorf("error unmarshaling configuration %#v: %v", gvk, err)
		}
		var raw any
		_ = json.Unmarshal(js, &raw)
		var unknown []string
		unknownFields(raw, reflect.TypeOf(obj), "", &unknown)
		if len(unknown) > 0 {
			var parts []string
			for _, u := range unknown {
				parts = append(parts, fmt.Sprintf("unknown field %q", u))
			}
			c.Warnings = append(c.Warnings, fmt.Sprintf("error unmarshaling configuration %#v: strict decoding error: %s", gvk, strings.Join(parts, ", ")))
		}
	}
	if len(errs) > 0 {
		if len(errs) == 1 {
			return nil, fmt.Errorf("%s", errs[0])
		}
		return nil, fmt.Errorf("[%s]", strings.Join(errs, ", "))
	}
	return c, nil
}

// splitYAML splits a YAML stream on its "---" document separators.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			docs = append(docs, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	docs = append(docs, []byte(strings.Join(cur, "\n")))
	return slices.DeleteFunc(docs, func(d []byte) bool { return len(bytes.TrimSpace(d)) == 0 })
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// unknownFields appends the paths of v's fields that t does not have, as
// the apimachinery strict decoder names them ("nodeRegistration.foo",
// "taints[0].bar"). Types with their own JSON decoding
// (metav1.Duration, metav1.Time) are leaves.
func unknownFields(v any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				*out = append(*out, joinPath(path, k))
				continue
			}
			unknownFields(obj[k], ft, joinPath(path, k), out)
		}
	case reflect.Slice, reflect.Array:
		items, ok := v.([]any)
		if !ok {
			return
		}
		for i, it := range items {
			unknownFields(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, it := range obj {
			unknownFields(it, t.Elem(), joinPath(path, k), out)
		}
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonFields maps the JSON names of a struct's fields to their types,
// inline (embedded) structs flattened as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" || strings.Contains(opts, "inline") && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

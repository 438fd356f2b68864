package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// pairArg reports whether a is a KEY=VALUE or KEY- argument rather than
// a resource (GetResourcesAndPairs in
// staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go).
func pairArg(a string) bool {
	return (strings.Contains(a, "=") && a[0] != '=') || (strings.HasSuffix(a, "-") && a != "-")
}

// resourceAndPairs splits label's and annotate's arguments into the one
// object, TYPE NAME or TYPE/NAME, and the pairs after it.
func (s *session) resourceAndPairs(what string) (gvk schema.GroupVersionKind, name string, pairs []string, err error) {
	var res []string
	for _, a := range s.args {
		switch {
		case pairArg(a):
			pairs = append(pairs, a)
		case len(pairs) > 0:
			return gvk, "", nil, fmt.Errorf("all resources must be specified before %s changes: %s", what, a)
		default:
			res = append(res, a)
		}
	}
	if len(res) == 1 && strings.Contains(res[0], "/") {
		t, n, _ := strings.Cut(res[0], "/")
		res = []string{t, n}
	}
	if len(res) != 2 {
		return gvk, "", nil, fmt.Errorf("one or more resources must be specified as <resource> <name> or <resource>/<name>")
	}
	if len(pairs) == 0 {
		return gvk, "", nil, fmt.Errorf("at least one %s update is required", what)
	}
	gvk, ok := resourceTypes[strings.ToLower(res[0])]
	if !ok {
		return gvk, "", nil, fmt.Errorf("the server doesn't have a resource type %q", res[0])
	}
	return gvk, res[1], pairs, nil
}

// parsePairs is ParsePairs in cmd/util/helpers.go: KEY=VALUE (split at
// the first '=') and KEY-; a key both set and removed is refused, as
// label.go's parseLabels and annotate.go's validateAnnotations refuse it.
func parsePairs(pairs []string, what string) (map[string]string, []string, error) {
	set := map[string]string{}
	var remove []string
	for _, a := range pairs {
		if strings.Contains(a, "=") && a[0] != '=' {
			k, v, _ := strings.Cut(a, "=")
			set[k] = v
			continue
		}
		remove = append(remove, strings.TrimSuffix(a, "-"))
	}
	for _, k := range remove {
		if _, ok := set[k]; ok {
			return nil, nil, fmt.Errorf("can not both modify and remove the following %s(s) in the same command: %s", what, k)
		}
	}
	return set, remove, nil
}

// metaChange is `kubectl label` (staging/src/k8s.io/kubectl/pkg/cmd/label/label.go)
// and `kubectl annotate` (cmd/annotate/annotate.go): TYPE NAME
// [--namespace] [--overwrite] KEY=VALUE... KEY-... on one object. Label
// keys and values are validated as parseLabels and the API server do;
// an annotation key as ValidateAnnotations does. Without --overwrite a
// key whose value would change is refused. kubectl patches the object;
// an update conditional on the resourceVersion, retried on a conflict,
// models that. It prints "KIND/NAME labeled|unlabeled|modified|not
// labeled" (updateDataChangeMsg) or "KIND/NAME annotated".
func (s *session) metaChange(label bool) int {
	what := "annotation"
	if label {
		what = "label"
	}
	gvk, name, pairs, err := s.resourceAndPairs(what)
	if err != nil {
		return s.fail(err)
	}
	set, remove, err := parsePairs(pairs, what)
	if err != nil {
		return s.fail(err)
	}
	for k, v := range set {
		if label {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return s.fail(fmt.Errorf("invalid label value: %q: %s", k+"="+v, strings.Join(errs, ";")))
			}
		}
	}
	for _, k := range append(slices.Collect(maps.Keys(set)), remove...) {
		check := k
		if !label {
			check = strings.ToLower(k)
		}
		if errs := validation.IsQualifiedName(check); len(errs) > 0 {
			return s.fail(fmt.Errorf("%s %q is invalid: metadata.%ss: Invalid value: %q: %s", kindString(gvk), name, what, k, strings.Join(errs, "; ")))
		}
	}
	ns := s.ns
	if !Namespaced(gvk) {
		ns = ""
	}
	if err := s.can("get", gvk, ns, name); err != nil {
		return s.fail(err)
	}
	for attempt := 0; ; attempt++ {
		obj, err := s.api.Get(s.ctx, gvk, ns, name)
		if err != nil {
			return s.fail(err)
		}
		current := obj.GetLabels()
		if !label {
			current = obj.GetAnnotations()
		}
		next := maps.Clone(current)
		if next == nil {
			next = map[string]string{}
		}
		var added, removed, refused []string
		for k, v := range set {
			if cur, ok := current[k]; ok && cur != v && !s.on("overwrite") {
				refused = append(refused, fmt.Sprintf("'%s' already has a value (%s)", k, cur))
			}
			if cur, ok := current[k]; !ok || cur != v {
				added = append(added, k)
			}
			next[k] = v
		}
		if len(refused) > 0 {
			slices.Sort(refused)
			if label {
				return s.fail(fmt.Errorf("%s, and --overwrite is false", strings.Join(refused, "; ")))
			}
			return s.fail(fmt.Errorf("--overwrite is false but found the following declared annotation(s): %s", strings.Join(refused, "; ")))
		}
		for _, k := range remove {
			if _, ok := current[k]; ok {
				removed = append(removed, k)
			} else if label {
				s.out("label %q not found.\n", k)
			}
			delete(next, k)
		}
		msg := "annotated"
		if label {
			switch {
			case len(added) > 0 && len(removed) > 0:
				msg = "modified"
			case len(added) > 0:
				msg = "labeled"
			case len(removed) > 0:
				msg = "unlabeled"
			default:
				msg = "not labeled"
			}
		}
		if len(added)+len(removed) == 0 {
			s.out("%s/%s %s\n", kindString(gvk), name, msg)
			return 0
		}
		if err := s.can("patch", gvk, ns, name); err != nil {
			return s.fail(err)
		}
		if !label {
			size := 0
			for k, v := range next {
				size += len(k) + len(v)
			}
			// ValidateAnnotationsSize (TotalAnnotationSizeLimitB, 256 KiB).
			if size > 256*1024 {
				return s.fail(fmt.Errorf("%s %q is invalid: metadata.annotations: Too long: may not be more than 262144 bytes", kindString(gvk), name))
			}
		}
		if label {
			obj.SetLabels(next)
		} else {
			obj.SetAnnotations(next)
		}
		_, err = s.api.Update(s.ctx, obj)
		if apierrors.IsConflict(err) && attempt < maxPatchRetry {
			continue
		}
		if err != nil {
			return s.fail(err)
		}
		s.out("%s/%s %s\n", kindString(gvk), name, msg)
		return 0
	}
}

// parseTaintSpec is parseTaint in
// staging/src/k8s.io/kubectl/pkg/cmd/taint/utils.go: KEY[=VALUE]:EFFECT,
// or for a removal KEY[:EFFECT].
func parseTaintSpec(st string) (corev1.Taint, error) {
	var t corev1.Taint
	parts := strings.Split(st, ":")
	switch len(parts) {
	case 1:
		t.Key = parts[0]
	case 2:
		t.Effect = corev1.TaintEffect(parts[1])
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return t, fmt.Errorf("invalid taint effect: %v, unsupported taint effect", t.Effect)
		}
		kv := strings.Split(parts[0], "=")
		if len(kv) > 2 {
			return t, fmt.Errorf("invalid taint spec: %v", st)
		}
		t.Key = kv[0]
		if len(kv) == 2 {
			t.Value = kv[1]
			if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
				return t, fmt.Errorf("invalid taint spec: %v, %s", st, strings.Join(errs, "; "))
			}
		}
	default:
		return t, fmt.Errorf("invalid taint spec: %v", st)
	}
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return t, fmt.Errorf("invalid taint spec: %v, %s", st, strings.Join(errs, "; "))
	}
	return t, nil
}

// taint is `kubectl taint nodes NODE [--overwrite] KEY[=VALUE]:EFFECT...
// KEY[:EFFECT]-...` (cmd/taint/taint.go, utils.go): a taint is its key
// and effect; an existing one with another value is refused without
// --overwrite; a removal without effect removes the key's taints of
// every effect, and one that matches nothing is an error ("taint %q not
// found"). It prints "node/NAME tainted|untainted|modified"
// (reorganizeTaints: "modified" whenever --overwrite is given).
func (s *session) taint() int {
	if len(s.args) < 3 {
		return s.fail(fmt.Errorf("at least one taint update is required"))
	}
	typ, name := s.args[0], s.args[1]
	specs := s.args[2:]
	if t, n, ok := strings.Cut(typ, "/"); ok {
		typ, name, specs = t, n, s.args[1:]
	}
	if gvk, ok := resourceTypes[strings.ToLower(typ)]; !ok || gvk != KindNode {
		return s.fail(fmt.Errorf("invalid resource type %s, only node types are supported", typ))
	}
	var add, remove []corev1.Taint
	for _, spec := range specs {
		if r, ok := strings.CutSuffix(spec, "-"); ok {
			t, err := parseTaintSpec(r)
			if err != nil {
				return s.fail(err)
			}
			remove = append(remove, t)
			continue
		}
		t, err := parseTaintSpec(spec)
		if err != nil {
			return s.fail(err)
		}
		if t.Effect == "" {
			return s.fail(fmt.Errorf("unknown taint spec: %v", spec))
		}
		add = append(add, t)
	}
	for _, r := range remove {
		for _, a := range add {
			if r.Key == a.Key && (r.Effect == "" || r.Effect == a.Effect) {
				return s.fail(fmt.Errorf("can not both modify and remove the following taint(s) in the same command: %s", r.Key))
			}
		}
	}
	if err := s.can("get", KindNode, "", name); err != nil {
		return s.fail(err)
	}
	for attempt := 0; ; attempt++ {
		o, err := s.api.Get(s.ctx, KindNode, "", name)
		if err != nil {
			return s.fail(err)
		}
		n := o.(*corev1.Node)
		next := slices.Clone(n.Spec.Taints)
		for _, a := range add {
			i := slices.IndexFunc(next, func(t corev1.Taint) bool { return t.Key == a.Key && t.Effect == a.Effect })
			switch {
			case i >= 0 && next[i].Value != a.Value && !s.on("overwrite"):
				return s.fail(fmt.Errorf("node %s already has %v taint(s) with same effect(s) and --overwrite is false", name, a.Key))
			case i >= 0:
				next[i].Value = a.Value
			default:
				next = append(next, a)
			}
		}
		for _, r := range remove {
			before := len(next)
			next = slices.DeleteFunc(next, func(t corev1.Taint) bool { return t.Key == r.Key && (r.Effect == "" || r.Effect == t.Effect) })
			if len(next) == before {
				spec := r.Key
				if r.Effect != "" {
					spec += ":" + string(r.Effect)
				}
				return s.fail(fmt.Errorf("taint %q not found", spec))
			}
		}
		if err := s.can("patch", KindNode, "", name); err != nil {
			return s.fail(err)
		}
		n.Spec.Taints = next
		_, err = s.api.Update(s.ctx, n)
		if apierrors.IsConflict(err) && attempt < maxPatchRetry {
			continue
		}
		if err != nil {
			return s.fail(err)
		}
		msg := "untainted"
		switch {
		case s.on("overwrite") || (len(add) > 0 && len(remove) > 0):
			msg = "modified"
		case len(add) > 0:
			msg = "tainted"
		}
		s.out("node/%s %s\n", name, msg)
		return 0
	}
}

package kubeapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// totalAnnotationSizeLimit is the most all of an object's annotations,
// keys and values, may hold: TotalAnnotationSizeLimitB in
// k8s.io/apimachinery/pkg/api/validation/objectmeta.go (256 KiB).
const totalAnnotationSizeLimit = 256 * 1024

// maxAnnotateArgs bounds the annotations one [Kubectl.Annotate] passes
// on kubectl's command line, which reaches the node as one string that
// Linux caps at 128 KiB (MAX_ARG_STRLEN, 32 pages): larger ones belong
// in a manifest, which [Kubectl.Apply] passes on standard input.
const maxAnnotateArgs = 64 * 1024

// Label makes the labels of the object of kind called name in namespace
// hold every key and value of set and none of the keys of remove: it
// reads the object first and runs `kubectl label KIND NAME
// [--namespace=NAMESPACE] --overwrite KEY=VALUE... KEY-...` with only
// what differs, so that an object that has them already is
// [lcm.Unchanged] and nothing runs but the read. kind and namespace are
// as for [Kubectl.Get]; an object that does not exist is an error.
//
// Keys and values are checked as the API server checks them
// (ValidateLabels in k8s.io/apimachinery/pkg/apis/meta/v1/validation:
// a key is a qualified name, "prefix/name", the prefix a DNS subdomain;
// a value at most 63 characters of letters, digits, '-', '_' and '.',
// starting and ending with a letter or digit, or empty), before
// anything runs; a key both set and removed is refused.
func (k Kubectl) Label(ctx context.Context, kind, namespace, name string, set map[string]string, remove ...string) (lcm.Result, error) {
	return k.setMeta(ctx, "label", kind, namespace, name, set, remove)
}

// Annotate makes the annotations of the object of kind called name in
// namespace hold every key and value of set and none of the keys of
// remove, as [Kubectl.Label] does for labels (`kubectl annotate KIND NAME
// [--namespace=NAMESPACE] --overwrite KEY=VALUE... KEY-...`, only what
// differs; [lcm.Unchanged] when nothing does).
//
// Keys are checked as the API server checks them (ValidateAnnotations in
// k8s.io/apimachinery/pkg/api/validation/objectmeta.go: a qualified name,
// compared in lower case); values may hold anything, up to the API
// server's 256 KiB for all of an object's annotations; and, since they
// travel on kubectl's command line, what one call sets is limited to 64
// KiB (use [Kubectl.Apply] for more). A value must not be a secret: the
// command line shows it.
func (k Kubectl) Annotate(ctx context.Context, kind, namespace, name string, set map[string]string, remove ...string) (lcm.Result, error) {
	return k.setMeta(ctx, "annotate", kind, namespace, name, set, remove)
}

// setMeta is [Kubectl.Label] (verb "label") and [Kubectl.Annotate]
// (verb "annotate").
func (k Kubectl) setMeta(ctx context.Context, verb, kind, namespace, name string, set map[string]string, remove []string) (lcm.Result, error) {
	field := map[string]string{"label": "labels", "annotate": "annotations"}[verb]
	args, err := objectArgs(kind, namespace, name)
	if err != nil {
		return lcm.Unchanged, err
	}
	if err := checkMeta(verb, set, remove); err != nil {
		return lcm.Unchanged, err
	}
	var obj metav1.PartialObjectMetadata
	found, err := k.getJSON(ctx, &obj, args...)
	if err != nil {
		return lcm.Unchanged, err
	}
	if !found {
		return lcm.Unchanged, fmt.Errorf("kubectl %s: %s %q%s does not exist", verb, kind, name, inNamespace(namespace))
	}
	current := obj.Labels
	if verb == "annotate" {
		current = obj.Annotations
	}
	var changes, done []string
	for _, key := range slices.Sorted(maps.Keys(set)) {
		if v, ok := current[key]; !ok || v != set[key] {
			changes = append(changes, key+"="+set[key])
			done = append(done, key+"="+clip(set[key]))
		}
	}
	for _, key := range remove {
		if _, ok := current[key]; ok {
			changes = append(changes, key+"-")
			done = append(done, key+"-")
		}
	}
	if len(changes) == 0 {
		return lcm.Unchanged, nil
	}
	c := k.command(append(append([]string{verb}, args...), append([]string{"--overwrite"}, changes...)...)...)
	// Setting the same labels again changes nothing.
	c.Idempotent = true
	if _, err := k.run(ctx, c); err != nil {
		return lcm.Unchanged, fmt.Errorf("kubectl %s %s: %w", verb, strings.Join(args, " "), err)
	}
	return lcm.Changed(fmt.Sprintf("%s of %s/%s: %s", field, kind, name, strings.Join(done, ", "))), nil
}

// checkMeta checks the keys and values of a label or annotate call.
func checkMeta(verb string, set map[string]string, remove []string) error {
	var p optProblems
	size := 0
	for _, key := range slices.Sorted(maps.Keys(set)) {
		at := fmt.Sprintf("set[%q]", clip(key))
		v := set[key]
		size += len(key) + len(v) + 2
		if verb == "label" {
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				p.addf(at, "is not a label key: %s", strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				p.addf(at, "%q is not a label value: %s", clip(v), strings.Join(errs, "; "))
			}
			continue
		}
		if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
			p.addf(at, "is not an annotation key: %s", strings.Join(errs, "; "))
		}
		if strings.ContainsRune(v, 0) {
			p.addf(at, "must not hold a NUL character")
		}
	}
	for i, key := range remove {
		at := fmt.Sprintf("remove[%d]", i)
		check := key
		if verb == "annotate" {
			check = strings.ToLower(key)
		}
		if errs := validation.IsQualifiedName(check); len(errs) > 0 {
			p.addf(at, "%q is not a key: %s", clip(key), strings.Join(errs, "; "))
		}
		if _, ok := set[key]; ok {
			p.addf(at, "%q is also set: a key is set or removed, not both", clip(key))
		}
	}
	if verb == "annotate" {
		switch {
		case size > totalAnnotationSizeLimit:
			p.addf("set", "the annotations take %d bytes, more than the API server's %d for all of an object's", size, totalAnnotationSizeLimit)
		case size > maxAnnotateArgs:
			p.addf("set", "the annotations take %d bytes, more than the %d one kubectl command line carries: apply a manifest instead", size, maxAnnotateArgs)
		}
	}
	return p.err()
}

// inNamespace is " in namespace NS", or "" without one.
func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// Taint makes the node called node carry every taint of set (a taint is
// its key and effect; its value is overwritten when it differs) and none
// of remove (matched by key and, unless the removal's Effect is empty,
// effect: an empty Effect removes the key's taints of every effect). It
// reads the node first and runs `kubectl taint nodes NODE --overwrite
// KEY=VALUE:EFFECT... KEY[:EFFECT]-...` with only what differs
// (staging/src/k8s.io/kubectl/pkg/cmd/taint/taint.go and utils.go), so
// that a node that carries them already is [lcm.Unchanged]. A node that
// does not exist is an error.
//
// Taints are checked as kubectl's parseTaint and the API server check
// them (validateNodeTaints in pkg/apis/core/validation/validation.go): a
// key is a qualified name, a value a label value, the effect NoSchedule,
// PreferNoSchedule or NoExecute; a taint both set and removed, or set
// twice, is refused. TimeAdded is the API server's to set.
func (k Kubectl) Taint(ctx context.Context, node string, set []corev1.Taint, remove ...corev1.Taint) (lcm.Result, error) {
	var p optProblems
	if msg := ObjectNameProblem(node); msg != "" {
		p.addf("node", "%s", msg)
	}
	type key struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[key]bool{}
	for i, t := range set {
		at := fmt.Sprintf("set[%d]", i)
		if msg := taintMsg(t, false); msg != "" {
			p.addf(at, "%s", msg)
		}
		if seen[key{t.Key, t.Effect}] {
			p.addf(at, "taint %s:%s is set twice", clip(t.Key), t.Effect)
		}
		seen[key{t.Key, t.Effect}] = true
	}
	for i, t := range remove {
		at := fmt.Sprintf("remove[%d]", i)
		if msg := taintMsg(t, true); msg != "" {
			p.addf(at, "%s", msg)
		}
		if slices.ContainsFunc(set, func(s corev1.Taint) bool { return matchTaint(t, s) }) {
			p.addf(at, "taint %s is also set: a taint is set or removed, not both", clip(t.Key))
		}
	}
	if err := p.err(); err != nil {
		return lcm.Unchanged, err
	}
	n, err := k.Node(ctx, node)
	if err != nil {
		return lcm.Unchanged, err
	}
	if n == nil {
		return lcm.Unchanged, fmt.Errorf("kubectl taint: node %q does not exist", node)
	}
	var changes []string
	for _, t := range set {
		i := slices.IndexFunc(n.Spec.Taints, func(c corev1.Taint) bool { return c.Key == t.Key && c.Effect == t.Effect })
		if i < 0 || n.Spec.Taints[i].Value != t.Value {
			spec := t.Key
			if t.Value != "" {
				spec += "=" + t.Value
			}
			changes = append(changes, spec+":"+string(t.Effect))
		}
	}
	for _, t := range remove {
		if slices.ContainsFunc(n.Spec.Taints, func(c corev1.Taint) bool { return matchTaint(t, c) }) {
			spec := t.Key
			if t.Effect != "" {
				spec += ":" + string(t.Effect)
			}
			changes = append(changes, spec+"-")
		}
	}
	if len(changes) == 0 {
		return lcm.Unchanged, nil
	}
	c := k.command(append([]string{"taint", "nodes", node, "--overwrite"}, changes...)...)
	// Setting the same taints again changes nothing.
	c.Idempotent = true
	if _, err := k.run(ctx, c); err != nil {
		return lcm.Unchanged, fmt.Errorf("kubectl taint nodes %s: %w", node, err)
	}
	return lcm.Changed(fmt.Sprintf("taints of node/%s: %s", node, strings.Join(changes, ", "))), nil
}

// matchTaint reports whether the removal r matches the taint t: the same
// key, and the same effect unless r's is empty (kubectl's
// deleteTaints: taint/utils.go).
func matchTaint(r, t corev1.Taint) bool {
	return r.Key == t.Key && (r.Effect == "" || r.Effect == t.Effect)
}

// taintMsg says what is wrong with t, to set or (removal) to remove, ""
// if nothing.
func taintMsg(t corev1.Taint, removal bool) string {
	var msgs []string
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		msgs = append(msgs, fmt.Sprintf("key %q: %s", clip(t.Key), strings.Join(errs, "; ")))
	}
	if !removal {
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			msgs = append(msgs, fmt.Sprintf("value %q: %s", clip(t.Value), strings.Join(errs, "; ")))
		}
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	case "":
		if !removal {
			msgs = append(msgs, "the effect must be NoSchedule, PreferNoSchedule or NoExecute")
		}
	default:
		msgs = append(msgs, fmt.Sprintf("effect %q must be NoSchedule, PreferNoSchedule or NoExecute", clip(string(t.Effect))))
	}
	return strings.Join(msgs, "; ")
}

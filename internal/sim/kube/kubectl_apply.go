package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// lastApplied is the annotation client-side apply keeps the applied
// configuration in (corev1.LastAppliedConfigAnnotation).
const lastApplied = corev1.LastAppliedConfigAnnotation

// builtinGroups are the API groups a kube-apiserver serves without CRDs;
// an object of another group needs a CustomResourceDefinition.
var builtinGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "policy": true, "autoscaling": true,
	"rbac.authorization.k8s.io": true, "apiextensions.k8s.io": true, "storage.k8s.io": true,
	"scheduling.k8s.io": true, "networking.k8s.io": true, "admissionregistration.k8s.io": true,
	"node.k8s.io": true, "coordination.k8s.io": true, "discovery.k8s.io": true,
	"certificates.k8s.io": true, "apiregistration.k8s.io": true, "flowcontrol.apiserver.k8s.io": true,
}

// manifestObject is one object of a manifest, as kubectl's resource
// builder makes it (cli-runtime/pkg/resource).
type manifestObject struct {
	gvk schema.GroupVersionKind
	obj map[string]any
}

// readManifest reads -f (a file, or "-" for standard input) as kubectl
// does: YAML documents separated by "---", or JSON; a List's items are
// objects of their own; empty documents are skipped.
func (s *session) readManifest(file string) (source string, objs []manifestObject, err error) {
	var r io.Reader
	source = file
	if file == "-" {
		source = "STDIN"
		r = s.p.Stdin
	} else {
		b, err := s.p.FS.ReadFile(file)
		if err != nil {
			return source, nil, fmt.Errorf("the path %q does not exist", file)
		}
		r = bytes.NewReader(b)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var add func(m map[string]any) error
	add = func(m map[string]any) error {
		if len(m) == 0 {
			return nil
		}
		u := &unstructured.Unstructured{Object: m}
		var missing []string
		if u.GetAPIVersion() == "" {
			missing = append(missing, "apiVersion not set")
		}
		if u.GetKind() == "" {
			missing = append(missing, "kind not set")
		}
		if len(missing) > 0 {
			return fmt.Errorf("error validating %q: error validating data: [%s]; if you choose to ignore these errors, turn validation off with --validate=false", source, strings.Join(missing, ", "))
		}
		if u.GetKind() == "List" && u.GetAPIVersion() == "v1" {
			items, _, _ := unstructured.NestedSlice(m, "items")
			for _, it := range items {
				if im, ok := it.(map[string]any); ok {
					if err := add(im); err != nil {
						return err
					}
				}
			}
			return nil
		}
		objs = append(objs, manifestObject{gvk: u.GroupVersionKind(), obj: m})
		return nil
	}
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return source, nil, fmt.Errorf("error parsing %s: %v", source, err)
		}
		// Integers as int64, as the API machinery decodes them.
		var m map[string]any
		if len(raw) > 0 && string(raw) != "null" {
			if err := utiljson.Unmarshal(raw, &m); err != nil {
				return source, nil, fmt.Errorf("error parsing %s: %v", source, err)
			}
		}
		if err := add(m); err != nil {
			return source, nil, err
		}
	}
	if len(objs) == 0 {
		return source, nil, errors.New("no objects passed to " + s.cmd)
	}
	return source, objs, nil
}

// prepare resolves an object's namespace (the manifest's, else
// --namespace or the context's; none for a cluster-scoped kind) and
// checks that the server knows its kind.
func (s *session) prepare(source string, mo manifestObject) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(mo.obj)}
	if err := s.kindKnown(mo.gvk); err != nil {
		return nil, fmt.Errorf("resource mapping not found for name: %q namespace: %q from %q: %v\nensure CRDs are installed first", u.GetName(), u.GetNamespace(), source, err)
	}
	if Namespaced(mo.gvk) {
		switch ns := u.GetNamespace(); {
		case ns == "":
			u.SetNamespace(s.ns)
		case s.nsSet && ns != s.ns:
			//lint:ignore ST1005 kubectl's message (cmd/apply: the namespace check of resource.Info)
			return nil, fmt.Errorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.", ns, s.ns, ns)
		}
	} else {
		u.SetNamespace("")
	}
	return u, nil
}

// kindKnown reports whether the API server serves a kind: the typed ones,
// those of the built-in groups, and those a CustomResourceDefinition
// defines.
func (s *session) kindKnown(gvk schema.GroupVersionKind) error {
	if s.k.scheme.Recognizes(gvk) || builtinGroups[gvk.Group] {
		return nil
	}
	crdKind := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	crds, err := s.api.List(s.ctx, crdKind, "")
	if err == nil {
		for _, c := range crds {
			m, err := toMap(c)
			if err != nil {
				continue
			}
			group, _, _ := unstructured.NestedString(m, "spec", "group")
			kind, _, _ := unstructured.NestedString(m, "spec", "names", "kind")
			if group == gvk.Group && kind == gvk.Kind {
				return nil
			}
		}
	}
	return fmt.Errorf("no matches for kind %q in version %q", gvk.Kind, gvk.GroupVersion().String())
}

// strict validates an object against the typed schema, as the API
// server's strict field validation does (kubectl's default since 1.27):
// it refuses fields the typed schema does not have, as
// apimachinery's strict decoding does ("strict decoding error: unknown
// field \"spec.foo\""). A field is unknown when it does not survive a
// round trip through the Go type (fields with empty values are not
// judged: the round trip may drop them legitimately).
func (s *session) strict(gvk schema.GroupVersionKind, m map[string]any) error {
	if !s.k.scheme.Recognizes(gvk) {
		return nil
	}
	typed, err := s.k.scheme.New(gvk)
	if err != nil {
		return nil
	}
	bad := func(detail string) error {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", gvk.Kind, gvk.Version, gvk.Kind, detail))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed); err != nil {
		return bad(err.Error())
	}
	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return bad(err.Error())
	}
	var unknown []string
	missingFields("", m, back, &unknown)
	if len(unknown) > 0 {
		sort.Strings(unknown)
		var parts []string
		for _, u := range unknown {
			parts = append(parts, fmt.Sprintf("unknown field %q", u))
		}
		return bad("strict decoding error: " + strings.Join(parts, ", "))
	}
	return nil
}

func missingFields(prefix string, in, back any, out *[]string) {
	switch iv := in.(type) {
	case map[string]any:
		bv, _ := back.(map[string]any)
		for k, v := range iv {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			b, ok := bv[k]
			if !ok {
				if !emptyValue(v) {
					*out = append(*out, p)
				}
				continue
			}
			missingFields(p, v, b, out)
		}
	case []any:
		bv, _ := back.([]any)
		for i, v := range iv {
			if i < len(bv) {
				missingFields(fmt.Sprintf("%s[%d]", prefix, i), v, bv[i], out)
			}
		}
	}
}

func emptyValue(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.String:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int64, reflect.Int, reflect.Float64:
		return rv.IsZero()
	}
	return false
}

// withLastApplied returns the modified configuration of client-side apply
// (cmd/apply/apply.go → util.GetModifiedConfiguration): the object with
// the annotation holding its own JSON (without that annotation), followed
// by a newline as the JSON encoder writes it.
func withLastApplied(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	c := u.DeepCopy()
	ann := c.GetAnnotations()
	delete(ann, lastApplied)
	if len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	} else {
		c.SetAnnotations(ann)
	}
	b, err := json.Marshal(c.Object)
	if err != nil {
		return nil, err
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[lastApplied] = string(b) + "\n"
	c.SetAnnotations(ann)
	return c, nil
}

// threeWay computes what client-side apply makes of the live object
// (cmd/apply/patcher.go: a three-way merge of the last applied
// configuration, the new one and the live object): fields of the new
// configuration are set, maps merged recursively, lists replaced whole
// (JSON merge patch semantics — kubectl's strategic merge patch merges
// some lists by key, which matters only for list items that someone other
// than apply added), and fields of the last applied configuration that
// the new one dropped are removed.
//
// What the API server owns is kept from the live object whatever the
// configuration says: the status (the status subresource's, which an
// update of the object leaves alone) and the metadata the server sets
// (creationTimestamp, uid, resourceVersion, generation, ...: the
// registry strategies' PrepareForUpdate, e.g. a manifest's
// `creationTimestamp: null` changes nothing).
func threeWay(original, modified, current map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(current)
	mergeInto(out, original, modified)
	if st, ok := current["status"]; ok {
		out["status"] = runtime.DeepCopyJSONValue(st)
	} else {
		delete(out, "status")
	}
	cm, _ := current["metadata"].(map[string]any)
	om, _ := out["metadata"].(map[string]any)
	if om != nil {
		for _, f := range serverMetadata {
			if v, ok := cm[f]; ok {
				om[f] = runtime.DeepCopyJSONValue(v)
			} else {
				delete(om, f)
			}
		}
	}
	return out
}

// serverMetadata are the metadata fields the API server sets.
var serverMetadata = []string{"creationTimestamp", "uid", "resourceVersion", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"}

// forCreate drops what the server sets on creation from a configuration
// (status and server metadata: the strategies' PrepareForCreate).
func forCreate(m map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(m)
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]any); ok {
		for _, f := range serverMetadata {
			delete(md, f)
		}
	}
	return out
}

func mergeInto(cur, orig, mod map[string]any) {
	for k := range orig {
		if _, keep := mod[k]; !keep {
			delete(cur, k)
		}
	}
	for k, mv := range mod {
		mm, mIsMap := mv.(map[string]any)
		cm, cIsMap := cur[k].(map[string]any)
		if mIsMap && cIsMap {
			om, _ := orig[k].(map[string]any)
			mergeInto(cm, om, mm)
			continue
		}
		if mv == nil {
			delete(cur, k)
			continue
		}
		cur[k] = runtime.DeepCopyJSONValue(mv)
	}
}

// apply is `kubectl apply -f FILE` and, with diff, `kubectl diff -f
// FILE` (cmd/apply/apply.go, cmd/diff/diff.go): each object is created
// when absent ("created"), else merged into the live object and updated
// ("configured") unless the merge changes nothing ("unchanged"). diff
// prints what apply would change, as `diff -u -N` of the live and merged
// objects' YAML, and exits 1 when there are differences, 0 when none,
// and >1 on errors.
func (s *session) apply(diff bool) int {
	file, ok := s.flag("filename")
	fail := func(err error) int {
		s.fail(err)
		if diff {
			return 2 // diff.go: errors exit >1, differences 1
		}
		return 1
	}
	if !ok || file == "" {
		return fail(errors.New("must specify one of -f and -k"))
	}
	source, objs, err := s.readManifest(file)
	if err != nil {
		return fail(err)
	}
	differs := false
	code := 0
	for _, mo := range objs {
		u, err := s.prepare(source, mo)
		if err != nil {
			code = fail(err)
			continue
		}
		mod, err := withLastApplied(u)
		if err != nil {
			code = fail(err)
			continue
		}
		gvk, name, ns := mo.gvk, u.GetName(), u.GetNamespace()
		d, err := s.applyOne(gvk, ns, name, source, mod, diff)
		if err != nil {
			code = fail(err)
			continue
		}
		differs = differs || d
	}
	if code != 0 {
		return code
	}
	if differs {
		return 1
	}
	return 0
}

// normalizeMap returns m as the API server stores it: through the Go type
// of a typed kind (unknown kinds as they are).
func (s *session) normalizeMap(gvk schema.GroupVersionKind, m map[string]any) map[string]any {
	if !s.k.scheme.Recognizes(gvk) {
		return m
	}
	typed, err := s.k.scheme.New(gvk)
	if err != nil {
		return m
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed); err != nil {
		return m
	}
	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return m
	}
	back["apiVersion"], back["kind"] = m["apiVersion"], m["kind"]
	return back
}

// applyOne applies (or, with diff, diffs) one object; a conflicting
// update is retried against the fresh object, as kubectl's patcher
// retries a conflicting patch (cmd/apply/patcher.go).
func (s *session) applyOne(gvk schema.GroupVersionKind, ns, name, source string, mod *unstructured.Unstructured, diff bool) (bool, error) {
	for attempt := 0; ; attempt++ {
		op := "creating"
		if err := s.can("get", gvk, ns, name); err != nil {
			return false, withSource("retrieving current configuration of", source, err)
		}
		live, err := s.api.Get(s.ctx, gvk, ns, name)
		var merged, liveMap map[string]any
		switch {
		case apierrors.IsNotFound(err):
			merged = forCreate(mod.Object)
		case err != nil:
			return false, withSource("retrieving current configuration of", source, err)
		default:
			op = "patching"
			if liveMap, err = toMap(live); err != nil {
				return false, err
			}
			var original map[string]any
			if a := live.GetAnnotations()[lastApplied]; a != "" {
				_ = utiljson.Unmarshal([]byte(a), &original)
			} else if !diff && attempt == 0 {
				s.errOut("Warning: resource %s/%s is missing the %s annotation which is required by kubectl apply. kubectl apply should only be used on resources created declaratively by either kubectl create --save-config or kubectl apply. The missing annotation will be patched automatically.\n",
					Resource(gvk).Resource, name, lastApplied)
			}
			merged = threeWay(original, mod.Object, liveMap)
		}
		if err := s.strict(gvk, mod.Object); err != nil {
			return false, withSource(op, source, err)
		}
		// What the server would store: the merged object through its Go
		// type (fields with default values the type omits drop out).
		merged = s.normalizeMap(gvk, merged)
		if diff {
			// kubectl diff asks the server for a dry run, which fails as
			// the creation would in a namespace that does not exist.
			if liveMap == nil && Namespaced(gvk) {
				if _, err := s.api.Get(s.ctx, KindNamespace, "", ns); err != nil {
					return false, err
				}
			}
			return s.diffObjects(gvk, ns, name, liveMap, merged)
		}
		switch {
		case liveMap == nil:
			if err := s.can("create", gvk, ns, name); err != nil {
				return false, withSource(op, source, err)
			}
			if _, err := s.api.Create(s.ctx, &unstructured.Unstructured{Object: merged}); err != nil {
				return false, withSource(op, source, err)
			}
			s.out("%s/%s created\n", kindString(gvk), name)
		case reflect.DeepEqual(merged, liveMap):
			s.out("%s/%s unchanged\n", kindString(gvk), name)
		default:
			if err := s.can("patch", gvk, ns, name); err != nil {
				return false, withSource(op, source, err)
			}
			_, err := s.api.Update(s.ctx, &unstructured.Unstructured{Object: merged})
			if apierrors.IsConflict(err) && attempt < maxPatchRetry {
				continue
			}
			if err != nil {
				return false, withSource(op, source, err)
			}
			s.out("%s/%s configured\n", kindString(gvk), name)
		}
		return false, nil
	}
}

// withSource is cmdutil.AddSourceToErr: an API error's message gains
// `error when <verb> "<source>": `, keeping its status.
func withSource(verb, source string, err error) error {
	var st *apierrors.StatusError
	if errors.As(err, &st) {
		c := *st
		c.ErrStatus.Message = fmt.Sprintf("error when %s %q: %s", verb, source, st.ErrStatus.Message)
		return &c
	}
	return fmt.Errorf("error when %s %q: %v", verb, source, err)
}

// diffObjects prints the diff of one object, as kubectl diff runs
// `diff -u -N` on files named group.version.kind.namespace.name in
// LIVE-* and MERGED-* temporary directories. The merged object is what
// the server's dry run returns: generation bumped when the spec changes.
func (s *session) diffObjects(gvk schema.GroupVersionKind, ns, name string, live, merged map[string]any) (bool, error) {
	strip := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		c := runtime.DeepCopyJSON(m)
		unstructured.RemoveNestedField(c, "metadata", "managedFields")
		return c
	}
	live, merged = strip(live), strip(merged)
	if live != nil && specDiffers(live, merged) {
		if g, ok, _ := unstructured.NestedInt64(live, "metadata", "generation"); ok {
			_ = unstructured.SetNestedField(merged, g+1, "metadata", "generation")
		}
	}
	toYAML := func(m map[string]any) (string, error) {
		if m == nil {
			return "", nil
		}
		b, err := yaml.Marshal(m)
		return string(b), err
	}
	a, err := toYAML(live)
	if err != nil {
		return false, err
	}
	b, err := toYAML(merged)
	if err != nil {
		return false, err
	}
	if a == b {
		return false, nil
	}
	file := strings.Join([]string{gvk.Group, gvk.Version, gvk.Kind, ns, name}, ".")
	file = strings.TrimPrefix(strings.ReplaceAll(file, "..", "."), ".")
	liveName, mergedName := "/tmp/LIVE-2712965094/"+file, "/tmp/MERGED-1529187326/"+file
	s.out("diff -u -N %s %s\n", liveName, mergedName)
	s.out("--- %s\t%s\n+++ %s\t%s\n", liveName, diffStamp, mergedName, diffStamp)
	s.out("%s", unifiedDiff(a, b))
	return true, nil
}

// diffStamp is the modification time diff prints; the simulation's
// temporary files (os.MkdirTemp's random names in real kubectl) carry
// fixed names and times.
const diffStamp = "2026-01-01 00:00:00.000000000 +0000"

func specDiffers(a, b map[string]any) bool {
	for k := range a {
		if k != "metadata" && k != "status" && !reflect.DeepEqual(a[k], b[k]) {
			return true
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && k != "metadata" && k != "status" {
			return true
		}
	}
	return false
}

// unifiedDiff returns the hunks of `diff -u` (three lines of context)
// between two texts, from a longest-common-subsequence alignment.
func unifiedDiff(a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	n, m := len(al), len(bl)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int
		bi   int
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			ops = append(ops, op{' ', al[i], i, j})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', al[i], i, j})
			i++
		default:
			ops = append(ops, op{'+', bl[j], i, j})
			j++
		}
	}
	const ctx = 3
	var out strings.Builder
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-ctx)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(run, end+ctx)
				break
			}
			end = run
		}
		var aStart, bStart, aLen, bLen int
		aStart, bStart = ops[start].ai+1, ops[start].bi+1
		var body strings.Builder
		for _, o := range ops[start:end] {
			switch o.kind {
			case ' ':
				aLen++
				bLen++
			case '-':
				aLen++
			case '+':
				bLen++
			}
			body.WriteString(string(o.kind) + o.text + "\n")
		}
		if aLen == 0 {
			aStart--
		}
		if bLen == 0 {
			bStart--
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n%s", hunkRange(aStart, aLen), hunkRange(bStart, bLen), body.String())
		k = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// deleteManifest is `kubectl delete -f FILE [--ignore-not-found]`, which
// waits as delete does.
func (s *session) deleteManifest(file string, timeout time.Duration) int {
	source, objs, err := s.readManifest(file)
	if err != nil {
		return s.fail(err)
	}
	code := 0
	var deleted []deletedObject
	for _, mo := range objs {
		u, err := s.prepare(source, mo)
		if err != nil {
			code = s.fail(err)
			continue
		}
		d, err := s.deleteOne(mo.gvk, u.GetNamespace(), u.GetName())
		switch {
		case err == nil:
			s.out("%s %q deleted\n", kindString(mo.gvk), u.GetName())
			deleted = append(deleted, d)
		case apierrors.IsNotFound(err) && s.on("ignore-not-found"):
		default:
			code = s.fail(withSource("deleting", source, err))
		}
	}
	if code != 0 {
		return code
	}
	return s.waitDeleted(deleted, timeout)
}

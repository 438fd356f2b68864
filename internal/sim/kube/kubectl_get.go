package kube

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// toMap returns an object as the JSON map kubectl prints, apiVersion and
// kind set (kubectl get decodes into unstructured objects, so its JSON
// and YAML have sorted keys).
func toMap(obj Object) (map[string]any, error) {
	var m map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.Object)
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, err
		}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return m, nil
}

// printJSON prints v as kubectl's JSON printer does
// (cli-runtime/pkg/printers/json.go: four-space indent, a newline).
func (s *session) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	s.out("%s\n", b)
	return nil
}

// fieldFilter is a parsed --field-selector: each term k=v or k!=v.
type fieldFilter []struct {
	key, val string
	neg      bool
}

// supportedFields are the field labels the API server accepts per kind
// (pkg/registry/core/pod/strategy.go ToSelectableFields, node, secret
// and event strategies; metadata.name and metadata.namespace everywhere).
var supportedFields = map[string][]string{
	"Pod":    {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "status.phase", "status.podIP", "status.nominatedNodeName"},
	"Node":   {"spec.unschedulable"},
	"Secret": {"type"},
	"Event": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
		"involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"},
}

func parseFieldSelector(gvk schema.GroupVersionKind, sel string) (fieldFilter, error) {
	var f fieldFilter
	if sel == "" {
		return nil, nil
	}
	for _, term := range strings.Split(sel, ",") {
		var k, v string
		neg := false
		switch {
		case strings.Contains(term, "!="):
			k, v, _ = strings.Cut(term, "!=")
			neg = true
		case strings.Contains(term, "=="):
			k, v, _ = strings.Cut(term, "==")
		case strings.Contains(term, "="):
			k, v, _ = strings.Cut(term, "=")
		default:
			return nil, fmt.Errorf("invalid selector: '%s'; can't understand '%s'", sel, term)
		}
		ok := k == "metadata.name" || k == "metadata.namespace"
		for _, x := range supportedFields[gvk.Kind] {
			ok = ok || x == k
		}
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to find %q that match label selector \"\", field selector %q: field label not supported: %s",
				fmt.Sprintf("%s/%s, Resource=%s", gvk.Group, gvk.Version, Resource(gvk).Resource), sel, k))
		}
		f = append(f, struct {
			key, val string
			neg      bool
		}{k, v, neg})
	}
	return f, nil
}

func (f fieldFilter) matches(obj Object) bool {
	for _, t := range f {
		var got string
		switch t.key {
		case "metadata.name":
			got = obj.GetName()
		case "metadata.namespace":
			got = obj.GetNamespace()
		default:
			switch o := obj.(type) {
			case *corev1.Pod:
				got = map[string]string{
					"spec.nodeName": o.Spec.NodeName, "spec.restartPolicy": string(o.Spec.RestartPolicy),
					"spec.schedulerName": o.Spec.SchedulerName, "spec.serviceAccountName": o.Spec.ServiceAccountName,
					"status.phase": string(o.Status.Phase), "status.podIP": o.Status.PodIP,
					"status.nominatedNodeName": o.Status.NominatedNodeName,
				}[t.key]
			case *corev1.Node:
				got = fmt.Sprint(o.Spec.Unschedulable)
			case *corev1.Secret:
				got = string(o.Type)
			case *corev1.Event:
				r := o.InvolvedObject
				source := o.Source.Component
				if source == "" {
					source = o.ReportingController
				}
				got = map[string]string{
					"involvedObject.kind": r.Kind, "involvedObject.namespace": r.Namespace, "involvedObject.name": r.Name,
					"involvedObject.uid": string(r.UID), "involvedObject.apiVersion": r.APIVersion,
					"involvedObject.resourceVersion": r.ResourceVersion, "involvedObject.fieldPath": r.FieldPath,
					"reason": o.Reason, "reportingComponent": o.ReportingController, "source": source, "type": o.Type,
				}[t.key]
			}
		}
		if (got == t.val) == t.neg {
			return false
		}
	}
	return true
}

// get is `kubectl get TYPE [NAME...]` (staging/src/k8s.io/kubectl/pkg/cmd/get/get.go).
func (s *session) get() int {
	if len(s.args) == 0 {
		s.errOut("You must specify the type of resource to get. Use \"kubectl api-resources\" for a complete list of supported resources.\n\n")
		s.errOut("error: Required resource not specified.\nUse \"kubectl explain <resource>\" for a detailed description of that resource (e.g. kubectl explain pods).\nSee 'kubectl get -h' for help and examples\n")
		return 1
	}
	typ, names := s.args[0], s.args[1:]
	if t, n, ok := strings.Cut(typ, "/"); ok {
		typ, names = t, append([]string{n}, names...)
	}
	gvk, ok := resourceTypes[strings.ToLower(typ)]
	if !ok {
		s.errOut("error: the server doesn't have a resource type %q\n", typ)
		return 1
	}
	output, _ := s.flag("output")
	switch output {
	case "", "json", "yaml", "name", "wide":
	default:
		s.errOut("error: unable to match a printer suitable for the output format %q, allowed formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml\n", output)
		return 1
	}
	ns := s.ns
	if !Namespaced(gvk) || (s.on("all-namespaces") && len(names) == 0) {
		ns = ""
	}
	fsel, _ := s.flag("field-selector")
	filter, err := parseFieldSelector(gvk, fsel)
	if err != nil {
		return s.fail(err)
	}
	lsel, _ := s.flag("selector")
	lfilter, err := labels.Parse(lsel)
	if err != nil {
		return s.fail(err)
	}
	var objs []Object
	var errs []error
	if len(names) > 0 {
		for _, n := range names {
			if err := s.can("get", gvk, ns, n); err != nil {
				errs = append(errs, err)
				continue
			}
			o, err := s.api.Get(s.ctx, gvk, ns, n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			objs = append(objs, o)
		}
	} else {
		if err := s.can("list", gvk, ns, ""); err != nil {
			return s.fail(err)
		}
		all, err := s.api.List(s.ctx, gvk, ns)
		if err != nil {
			return s.fail(err)
		}
		for _, o := range all {
			if filter.matches(o) && lfilter.Matches(labels.Set(o.GetLabels())) {
				objs = append(objs, o)
			}
		}
	}
	code := 0
	if err := s.print(gvk, objs, output, len(names) == 1 && len(errs) == 0, ns == "" && Namespaced(gvk)); err != nil {
		code = s.fail(err)
	}
	if len(names) == 0 && len(objs) == 0 && (output == "" || output == "wide") {
		if ns != "" {
			s.errOut("No resources found in %s namespace.\n", ns)
		} else {
			s.errOut("No resources found\n")
		}
	}
	for _, err := range errs {
		code = s.fail(err)
	}
	return code
}

// print prints objects as get's printers do: one object alone when a
// single name was asked for, else a List.
func (s *session) print(gvk schema.GroupVersionKind, objs []Object, output string, single, withNS bool) error {
	switch output {
	case "json", "yaml":
		var v any
		if single && len(objs) == 1 {
			m, err := toMap(objs[0])
			if err != nil {
				return err
			}
			v = m
		} else {
			items := []any{}
			for _, o := range objs {
				m, err := toMap(o)
				if err != nil {
					return err
				}
				items = append(items, m)
			}
			v = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
		}
		if output == "json" {
			return s.printJSON(v)
		}
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		s.out("%s", b)
	case "name":
		for _, o := range objs {
			s.out("%s/%s\n", kindString(gvk), o.GetName())
		}
	default:
		if len(objs) == 0 {
			return nil
		}
		s.table(gvk, objs, withNS)
	}
	return nil
}

// table is the default human-readable printer
// (pkg/printers/internalversion/printers.go; cli-runtime's
// printers.GetNewTabWriter: minimum width 6, padding 3), for the columns
// the simulation fills.
func (s *session) table(gvk schema.GroupVersionKind, objs []Object, withNS bool) {
	w := tabwriter.NewWriter(s.p.Stdout, 6, 4, 3, ' ', 0)
	defer w.Flush()
	age := func(o Object) string {
		t := o.GetCreationTimestamp()
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(time.Since(t.Time))
	}
	prefix := func(o Object) string {
		if withNS {
			return o.GetNamespace() + "\t"
		}
		return ""
	}
	header := ""
	if withNS {
		header = "NAMESPACE\t"
	}
	switch gvk.Kind {
	case "Node":
		fmt.Fprintln(w, header+"NAME\tSTATUS\tROLES\tAGE\tVERSION")
		for _, o := range objs {
			n := o.(*corev1.Node)
			// printNode: "Ready" when True, "NotReady" otherwise (Unknown
			// included), "Unknown" without the condition.
			status := "Unknown"
			switch nodeReady(n) {
			case corev1.ConditionTrue:
				status = "Ready"
			case corev1.ConditionFalse, corev1.ConditionUnknown:
				status = "NotReady"
			}
			if n.Spec.Unschedulable {
				status += ",SchedulingDisabled"
			}
			var roles []string
			for l := range n.Labels {
				if r, ok := strings.CutPrefix(l, "node-role.kubernetes.io/"); ok && r != "" {
					roles = append(roles, r)
				}
			}
			role := "<none>"
			if len(roles) > 0 {
				role = strings.Join(sortStrings(roles), ",")
			}
			fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\n", prefix(o), n.Name, status, role, age(o), n.Status.NodeInfo.KubeletVersion)
		}
	case "Pod":
		fmt.Fprintln(w, header+"NAME\tREADY\tSTATUS\tRESTARTS\tAGE")
		for _, o := range objs {
			p := o.(*corev1.Pod)
			ready := 0
			for _, c := range p.Status.ContainerStatuses {
				if c.Ready {
					ready++
				}
			}
			fmt.Fprintf(w, "%s%s\t%d/%d\t%s\t0\t%s\n", prefix(o), p.Name, ready, len(p.Spec.Containers), podStatusColumn(p), age(o))
		}
	case "Event":
		// printEvent: LAST SEEN (lastTimestamp, else firstTimestamp),
		// TYPE, REASON, OBJECT (kind/name), MESSAGE (trimmed).
		fmt.Fprintln(w, header+"LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
		for _, o := range objs {
			e := o.(*corev1.Event)
			seen := e.LastTimestamp
			if seen.IsZero() {
				seen = e.FirstTimestamp
			}
			last := "<unknown>"
			if !seen.IsZero() {
				last = duration.HumanDuration(time.Since(seen.Time))
			}
			target := strings.ToLower(e.InvolvedObject.Kind)
			if e.InvolvedObject.Name != "" {
				target += "/" + e.InvolvedObject.Name
			}
			fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\n", prefix(o), last, e.Type, e.Reason, target, strings.TrimSpace(e.Message))
		}
	default:
		fmt.Fprintln(w, header+"NAME\tAGE")
		for _, o := range objs {
			fmt.Fprintf(w, "%s%s\t%s\n", prefix(o), o.GetName(), age(o))
		}
	}
}

// podStatusColumn is the STATUS column of a pod (printers.go printPod):
// the phase, or status.reason; the first init container not done
// ("Init:REASON" when it waits for another reason than PodInitializing,
// else "Init:I/N"); otherwise the reason a container waits for
// (ContainerCreating) or terminated with; "Terminating" once deleted.
func podStatusColumn(p *corev1.Pod) string {
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	initializing := false
	for i, c := range p.Status.InitContainerStatuses {
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != reasonPodInitializing:
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing {
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := p.Status.ContainerStatuses[i]
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			}
		}
	}
	if p.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	return reason
}

// cordon is `kubectl cordon|uncordon NODE...` (cmd/drain/drain.go
// RunCordonOrUncordon, pkg/drain/cordon.go): it sets
// spec.unschedulable and prints "node/NAME cordoned", or "already
// cordoned" when there is nothing to change.
func (s *session) cordon(desired bool) int {
	verb := "cordon"
	if !desired {
		verb = "uncordon"
	}
	if len(s.args) == 0 {
		s.errOut("error: USAGE: %s NODE [flags]\nSee 'kubectl %s -h' for help and examples\n", verb, verb)
		return 1
	}
	code := 0
	for _, name := range s.args {
		if _, err := s.setUnschedulable(name, desired); err != nil {
			code = s.fail(err)
		}
	}
	return code
}

// setUnschedulable cordons or uncordons one node and prints what it did;
// it returns the node as it is afterwards.
func (s *session) setUnschedulable(name string, desired bool) (*corev1.Node, error) {
	if err := s.can("get", KindNode, "", name); err != nil {
		return nil, err
	}
	word := map[bool]string{true: "cordoned", false: "uncordoned"}[desired]
	// kubectl patches spec.unschedulable (pkg/drain/cordon.go
	// PatchOrReplace); a patch applies to the object as it is then, which
	// an update conditional on the resourceVersion, retried on a
	// conflict, models.
	for attempt := 0; ; attempt++ {
		o, err := s.api.Get(s.ctx, KindNode, "", name)
		if err != nil {
			return nil, err
		}
		n := o.(*corev1.Node)
		if n.Spec.Unschedulable == desired {
			if attempt == 0 {
				s.out("node/%s already %s\n", name, word)
			} else {
				s.out("node/%s %s\n", name, word)
			}
			return n, nil
		}
		if err := s.can("patch", KindNode, "", name); err != nil {
			return nil, err
		}
		n.Spec.Unschedulable = desired
		u, err := s.api.Update(s.ctx, n)
		if apierrors.IsConflict(err) && attempt < maxPatchRetry {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("unable to %s node %q: %w", strings.TrimSuffix(word, "ed"), name, err)
		}
		s.out("node/%s %s\n", name, word)
		return u.(*corev1.Node), nil
	}
}

// maxPatchRetry is how often kubectl retries a patch that conflicts
// (cmd/apply/patcher.go maxPatchRetry).
const maxPatchRetry = 5

// delete is `kubectl delete TYPE NAME... [--ignore-not-found]
// [--wait=false] [--timeout=D]` and `kubectl delete -f - ...`
// (cmd/delete/delete.go: prints `KIND "NAME" deleted` once the API
// server accepted the deletion, then waits, see waitDeleted).
func (s *session) delete() int {
	timeout, err := s.timeoutFlag(0)
	if err != nil {
		s.errOut("error: %v\nSee 'kubectl %s --help' for usage.\n", err, s.cmd)
		return 1
	}
	if f, ok := s.flag("filename"); ok {
		return s.deleteManifest(f, timeout)
	}
	if len(s.args) < 2 {
		if len(s.args) == 1 && strings.Contains(s.args[0], "/") {
			t, n, _ := strings.Cut(s.args[0], "/")
			s.args = []string{t, n}
		} else {
			s.errOut("error: You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'\n")
			return 1
		}
	}
	gvk, ok := resourceTypes[strings.ToLower(s.args[0])]
	if !ok {
		s.errOut("error: the server doesn't have a resource type %q\n", s.args[0])
		return 1
	}
	ns := s.ns
	if !Namespaced(gvk) {
		ns = ""
	}
	code := 0
	var deleted []deletedObject
	for _, name := range s.args[1:] {
		d, err := s.deleteOne(gvk, ns, name)
		switch {
		case err == nil:
			s.out("%s %q deleted\n", kindString(gvk), name)
			deleted = append(deleted, d)
		case apierrors.IsNotFound(err) && s.on("ignore-not-found"):
		default:
			code = s.fail(err)
		}
	}
	if code != 0 {
		return code
	}
	return s.waitDeleted(deleted, timeout)
}

// deletedObject is an object kubectl delete waits for.
type deletedObject struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	uid       types.UID
}

// deleteOne deletes an object, after the authorization check, and
// returns what waitDeleted waits for (kubectl takes the uid from the
// DELETE's response; here it is read just before).
func (s *session) deleteOne(gvk schema.GroupVersionKind, ns, name string) (deletedObject, error) {
	d := deletedObject{gvk: gvk, namespace: ns, name: name}
	if err := s.can("delete", gvk, ns, name); err != nil {
		return d, err
	}
	if o, err := s.api.Get(s.ctx, gvk, ns, name); err == nil {
		d.uid = o.GetUID()
	}
	return d, s.api.Delete(s.ctx, gvk, ns, name)
}

// deleteWaitPoll is how often the waiting kubectl delete looks again at
// an object held by a finalizer (real kubectl watches it).
const deleteWaitPoll = 100 * time.Millisecond

// waitDeleted is kubectl delete's --wait (true by default): unless
// --wait=false, it waits until each deleted object is gone or replaced by
// one of another uid (cmd/delete/delete.go RunDelete: cmdwait.IsDeleted,
// cmd/wait/delete.go). An object a finalizer holds (a Bound
// PersistentVolume's kubernetes.io/pv-protection, a claim a pod uses)
// stays until someone releases it. With --timeout=0 (the default, which
// kubectl makes a week) kubectl waits for that, or until its process
// ends (ctx: the SSH session closed); with a timeout it fails at once
// with "error: timed out waiting for the condition on RESOURCE/NAME",
// exit 1: nothing in the simulation changes while time passes, so what
// holds the object now would hold it when the timeout expired (as
// `kubectl drain` with a timeout does here).
func (s *session) waitDeleted(objs []deletedObject, timeout time.Duration) int {
	if v, ok := s.flag("wait"); ok && v == "false" {
		return 0
	}
	for _, d := range objs {
		for {
			cur, err := s.api.Get(s.ctx, d.gvk, d.namespace, d.name)
			if apierrors.IsNotFound(err) || (err == nil && d.uid != "" && cur.GetUID() != d.uid) {
				break
			}
			if err != nil {
				return s.fail(err)
			}
			if timeout > 0 {
				// cmd/wait/condition.go extendErrWaitTimeout of
				// wait.ErrorInterrupted: "timed out waiting for the
				// condition".
				return s.fail(fmt.Errorf("timed out waiting for the condition on %s/%s", Resource(d.gvk).Resource, d.name))
			}
			select {
			case <-s.ctx.Done():
				return s.fail(s.ctx.Err())
			case <-time.After(deleteWaitPoll):
			}
		}
	}
	return 0
}

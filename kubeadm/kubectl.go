package kubeadm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// AdminKubeconfig is the kubeconfig kubeadm writes for the cluster's
// administrator on every control-plane node (root, 0600); [Kubectl] runs
// kubectl with it under sudo.
const AdminKubeconfig = "/etc/kubernetes/admin.conf"

// Kubectl runs kubectl on a control-plane node over that node's SSH
// connection, as `sudo kubectl --kubeconfig=/etc/kubernetes/admin.conf
// ...`, so that nothing but SSH has to be reachable from the VNFM. Every
// answer is requested as `-o json` and decoded into the k8s.io/api types;
// arguments are an argv, never a shell string, and manifests travel on
// standard input.
//
// The zero value is not usable: set Host to a control-plane node.
type Kubectl struct {
	// Host is the control-plane node kubectl runs on.
	Host remote.Host
}

// command returns the remote command of `kubectl ARGS...` as root with
// the admin kubeconfig.
func (k Kubectl) command(args ...string) remote.Cmd {
	return remote.Cmd{Args: append([]string{"kubectl", "--kubeconfig=" + AdminKubeconfig}, args...), Sudo: true}
}

// run runs kubectl with args; read-only calls are marked idempotent, so
// that a dropped connection is retried once.
func (k Kubectl) run(ctx context.Context, c remote.Cmd) (remote.Output, error) {
	if k.Host == nil {
		return remote.Output{}, errors.New("kubeadm: Kubectl has no Host")
	}
	return k.Host.Run(ctx, c)
}

// notFoundPrefix starts the message kubectl prints for an API error whose
// reason is NotFound: StandardErrorMessage in
// staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go formats a
// StatusError as "Error from server (<Reason>): <message>" and
// CheckErr exits with status 1 (DefaultErrorExitCode). kubectl has no
// structured error output, so this is the one place a message is
// matched.
const notFoundPrefix = "Error from server (NotFound)"

// IsNotFound reports whether err is kubectl's failure for an object that
// does not exist: exit status 1 with "Error from server (NotFound)" on
// standard error.
func IsNotFound(err error) bool {
	var ce *remote.CommandError
	return errors.As(err, &ce) && ce.ExitCode == 1 && strings.Contains(ce.Stderr, notFoundPrefix)
}

// getJSON runs `kubectl get ARGS... -o json` and decodes the answer into
// into. It reports found=false, and no error, when kubectl says NotFound.
func (k Kubectl) getJSON(ctx context.Context, into any, args ...string) (found bool, err error) {
	c := k.command(append(append([]string{"get"}, args...), "-o", "json")...)
	c.Idempotent = true
	out, err := k.run(ctx, c)
	if err != nil {
		if IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("kubectl get %s: %w", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out.Stdout, into); err != nil {
		return false, fmt.Errorf("%s: kubectl get %s: decoding its JSON: %w", k.Host.Name(), strings.Join(args, " "), err)
	}
	return true, nil
}

// Nodes returns every Node of the cluster (`kubectl get nodes -o json`).
func (k Kubectl) Nodes(ctx context.Context) ([]corev1.Node, error) {
	var list corev1.NodeList
	if _, err := k.getJSON(ctx, &list, "nodes"); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Node returns the Node called name, or nil and no error when there is
// none (`kubectl get node NAME -o json`).
func (k Kubectl) Node(ctx context.Context, name string) (*corev1.Node, error) {
	if err := checkObjectName("name", name); err != nil {
		return nil, err
	}
	var n corev1.Node
	found, err := k.getJSON(ctx, &n, "node", name)
	if !found || err != nil {
		return nil, err
	}
	return &n, nil
}

// PodsOn returns the pods of every namespace bound to the node called
// node (`kubectl get pods --all-namespaces
// --field-selector=spec.nodeName=NODE -o json`), mirror and DaemonSet
// pods included.
func (k Kubectl) PodsOn(ctx context.Context, node string) ([]corev1.Pod, error) {
	if err := checkObjectName("node", node); err != nil {
		return nil, err
	}
	var list corev1.PodList
	if _, err := k.getJSON(ctx, &list, "pods", "--all-namespaces", "--field-selector=spec.nodeName="+node); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// secret returns the Secret namespace/name, nil when there is none.
func (k Kubectl) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	found, err := k.getJSON(ctx, &s, "secret", name, "--namespace="+namespace)
	if !found || err != nil {
		return nil, err
	}
	return &s, nil
}

// Apply makes the cluster hold the objects of manifest (YAML documents
// or JSON), as `kubectl apply -f -` does, and changes nothing when it
// already does: `kubectl diff -f -` runs first, and only a difference
// (its exit status 1; 0 means none, above 1 a failure: see
// staging/src/k8s.io/kubectl/pkg/cmd/diff/diff.go, whose errors go
// through CheckDiffErr in staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go,
// which adds 1 to kubectl's exit status) leads to the apply.
// The result's detail is kubectl apply's report ("serviceaccount/x
// created"). The manifest travels on standard input and must not hold
// secrets that kubectl would print.
func (k Kubectl) Apply(ctx context.Context, manifest []byte) (lcm.Result, error) {
	if len(bytes.TrimSpace(manifest)) == 0 {
		return lcm.Unchanged, optProblem("manifest", "must not be empty")
	}
	diff := k.command("diff", "-f", "-")
	diff.Stdin = bytes.NewReader(manifest)
	diff.OKExit = []int{1}
	diff.Idempotent = true
	out, err := k.run(ctx, diff)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("kubectl diff: %w", err)
	}
	if out.ExitCode == 0 {
		return lcm.Unchanged, nil
	}
	apply := k.command("apply", "-f", "-")
	apply.Stdin = bytes.NewReader(manifest)
	// Applying the same manifest twice converges on the same objects.
	apply.Idempotent = true
	out, err = k.run(ctx, apply)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("kubectl apply: %w", err)
	}
	return lcm.Changed("kubectl apply: " + applied(out.Stdout)), nil
}

// applied condenses kubectl apply's report to the lines that changed
// something ("<kind>/<name> created|configured"), at most five of them
// and a count of the rest.
func applied(stdout []byte) string {
	var changed []string
	for line := range strings.Lines(string(stdout)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasSuffix(line, " unchanged") {
			changed = append(changed, line)
		}
	}
	switch n := len(changed); {
	case n == 0:
		return "applied"
	case n > 5:
		return fmt.Sprintf("%s and %d more", strings.Join(changed[:5], ", "), n-5)
	}
	return strings.Join(changed, ", ")
}

// optProblem is the *lcm.ParamsError of one bad option.
func optProblem(path, format string, args ...any) error {
	return &lcm.ParamsError{Problems: []lcm.Problem{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// optProblems collects what is wrong with a step's options, by field
// path, before any remote command runs.
type optProblems []lcm.Problem

func (p *optProblems) addf(path, format string, args ...any) {
	*p = append(*p, lcm.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns the problems as an *lcm.ParamsError, nil if there are none.
func (p optProblems) err() error { return paramsErr(p) }

// objectNameMsg says what is wrong with name as the name of a Node (a
// DNS subdomain, RFC 1123, at most 253 characters: ValidateNodeName in
// pkg/apis/core/validation/validation.go), "" if nothing. The same rule
// keeps a name from being read by kubectl as an option.
func objectNameMsg(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > 253:
		return fmt.Sprintf("%q is longer than 253 characters", name)
	case !lcm.IsDNSName(name) || strings.ToLower(name) != name:
		return fmt.Sprintf("%q is not a Kubernetes object name (RFC 1123 subdomain: lower-case letters, digits, '-' and '.')", name)
	}
	return ""
}

// checkObjectName returns an *lcm.ParamsError naming path when name is
// not an object name.
func checkObjectName(path, name string) error {
	if msg := objectNameMsg(name); msg != "" {
		return optProblem(path, "%s", msg)
	}
	return nil
}

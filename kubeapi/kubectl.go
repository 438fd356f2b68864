package kubeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// AdminKubeconfig is the kubeconfig of the cluster's administrator on
// every control-plane node (root, 0600): kubeadm init and join
// --control-plane write it, and so does kubespray. [Kubectl] runs kubectl
// with it under sudo unless told another.
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
	// Kubeconfig is the kubeconfig file on Host that kubectl reads, as
	// root; [AdminKubeconfig] when empty. It must be an absolute path.
	Kubeconfig string
}

// kubeconfig returns the kubeconfig kubectl runs with.
func (k Kubectl) kubeconfig() string {
	if k.Kubeconfig == "" {
		return AdminKubeconfig
	}
	return k.Kubeconfig
}

// command returns the remote command of `kubectl ARGS...` as root with
// the kubeconfig.
func (k Kubectl) command(args ...string) remote.Cmd {
	return remote.Cmd{Args: append([]string{"kubectl", "--kubeconfig=" + k.kubeconfig()}, args...), Sudo: true}
}

// check returns what makes k unusable, before any remote command.
func (k Kubectl) check() error {
	if k.Host == nil {
		return errors.New("kubeapi: Kubectl has no Host")
	}
	if c := k.Kubeconfig; c != "" && (!path.IsAbs(c) || strings.ContainsAny(c, "\x00\n\r")) {
		return optProblem("Kubectl.Kubeconfig", "must be an absolute path on the host, got %q", clip(c))
	}
	return nil
}

// run runs kubectl's command c on the host. Read-only calls are marked
// idempotent by their callers, so that a dropped connection is retried
// once.
func (k Kubectl) run(ctx context.Context, c remote.Cmd) (remote.Output, error) {
	if err := k.check(); err != nil {
		return remote.Output{}, err
	}
	return k.Host.Run(ctx, c)
}

// hostName is the host's name for messages, "" without a host.
func (k Kubectl) hostName() string {
	if k.Host == nil {
		return ""
	}
	return k.Host.Name()
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
	c.Idempotent, c.ReadOnly = true, true
	out, err := k.run(ctx, c)
	if err != nil {
		if IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("kubectl get %s: %w", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out.Stdout, into); err != nil {
		return false, fmt.Errorf("%s: kubectl get %s: decoding its JSON: %w", k.hostName(), strings.Join(args, " "), err)
	}
	return true, nil
}

// Get reads the object of kind called name in namespace (`kubectl get
// KIND NAME [--namespace=NAMESPACE] -o json`) into into, which is a
// pointer to its k8s.io/api type (*corev1.ConfigMap,
// *corev1.PersistentVolume, ...) or to a map. It reports found=false,
// and no error, when there is no such object; into is then untouched.
//
// kind is what kubectl takes: a resource name ("node", "configmaps",
// "persistentvolume", "deployments.apps"). namespace is "" for a
// cluster-scoped kind; for a namespaced kind "" means the kubeconfig's
// namespace ("default" in kubeadm's).
func (k Kubectl) Get(ctx context.Context, into any, kind, namespace, name string) (found bool, err error) {
	args, err := objectArgs(kind, namespace, name)
	if err != nil {
		return false, err
	}
	if into == nil {
		return false, optProblem("into", "must be a pointer to decode the object into")
	}
	return k.getJSON(ctx, into, args...)
}

// ListOptions select what [Kubectl.List] lists; empty selects every
// object of the kind.
type ListOptions struct {
	// FieldSelector is kubectl's --field-selector ("type=...",
	// "spec.nodeName=..."): the fields the API server can select the
	// kind by.
	FieldSelector string
	// LabelSelector is kubectl's --selector ("app=web,tier!=db").
	LabelSelector string
	// AllNamespaces lists the kind in every namespace
	// (--all-namespaces); List's namespace must then be "".
	AllNamespaces bool
}

// List reads the objects of kind in namespace that o selects (`kubectl
// get KIND [--namespace=NAMESPACE] [--field-selector=...] [--selector=...]
// -o json`) into into, a pointer to the kind's list type
// (*corev1.SecretList, *corev1.PersistentVolumeList, ...). kind and
// namespace are as for [Kubectl.Get]. The selectors are arguments of
// kubectl, never of a shell.
func (k Kubectl) List(ctx context.Context, into any, kind, namespace string, o ListOptions) error {
	if into == nil {
		return optProblem("into", "must be a pointer to decode the list into")
	}
	if o.AllNamespaces && namespace != "" {
		return optProblem("namespace", "must be empty with ListOptions.AllNamespaces")
	}
	args, err := kindArgs(kind, namespace, nil)
	if err != nil {
		return err
	}
	if o.AllNamespaces {
		args = append(args, "--all-namespaces")
	}
	if o.FieldSelector != "" {
		args = append(args, "--field-selector="+o.FieldSelector)
	}
	if o.LabelSelector != "" {
		args = append(args, "--selector="+o.LabelSelector)
	}
	_, err = k.getJSON(ctx, into, args...)
	return err
}

// Delete deletes the object of kind called name in namespace, as
// `kubectl delete KIND NAME [--namespace=NAMESPACE] --ignore-not-found`
// does, waiting until it is gone (kubectl delete's --wait, true by
// default: finalizers run first; the context bounds the wait). An object
// that does not exist is [lcm.Unchanged]; kubectl prints nothing for it
// (--ignore-not-found), and a line per deleted object otherwise
// (`KIND "NAME" deleted`: staging/src/k8s.io/kubectl/pkg/cmd/delete/delete.go),
// which is the result's detail. kind and namespace are as for [Kubectl.Get].
func (k Kubectl) Delete(ctx context.Context, kind, namespace, name string) (lcm.Result, error) {
	args, err := objectArgs(kind, namespace, name)
	if err != nil {
		return lcm.Unchanged, err
	}
	c := k.command(append([]string{"delete"}, append(args, "--ignore-not-found")...)...)
	// Deleting again what is gone changes nothing.
	c.Idempotent = true
	out, err := k.run(ctx, c)
	if err != nil {
		return lcm.Unchanged, fmt.Errorf("kubectl delete %s: %w", strings.Join(args, " "), err)
	}
	if report := strings.TrimSpace(string(out.Stdout)); report != "" {
		return lcm.Changed("kubectl delete: " + report), nil
	}
	return lcm.Unchanged, nil
}

// objectArgs checks kind, namespace and name and returns them as
// kubectl's arguments: KIND NAME [--namespace=NAMESPACE].
func objectArgs(kind, namespace, name string) ([]string, error) {
	return kindArgs(kind, namespace, &name)
}

// kindArgs checks kind, namespace and, when not nil, name, and returns
// them as kubectl's arguments: KIND [NAME] [--namespace=NAMESPACE].
func kindArgs(kind, namespace string, name *string) ([]string, error) {
	var p optProblems
	if msg := kindMsg(kind); msg != "" {
		p.addf("kind", "%s", msg)
	}
	if namespace != "" {
		if msg := namespaceMsg(namespace); msg != "" {
			p.addf("namespace", "%s", msg)
		}
	}
	if name != nil {
		if msg := ObjectNameProblem(*name); msg != "" {
			p.addf("name", "%s", msg)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	args := []string{kind}
	if name != nil {
		args = append(args, *name)
	}
	if namespace != "" {
		args = append(args, "--namespace="+namespace)
	}
	return args, nil
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
	if err := CheckObjectName("name", name); err != nil {
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
	if err := CheckObjectName("node", node); err != nil {
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
// secrets that kubectl would print. Check a manifest from outside with
// [CheckManifest] first: Apply refuses only an empty one itself.
func (k Kubectl) Apply(ctx context.Context, manifest []byte) (lcm.Result, error) {
	if len(bytes.TrimSpace(manifest)) == 0 {
		return lcm.Unchanged, optProblem("manifest", "must not be empty")
	}
	diff := k.command("diff", "-f", "-")
	diff.Stdin = bytes.NewReader(manifest)
	diff.OKExit = []int{1}
	// kubectl diff asks the API server for a server-side dry run of the
	// apply: it changes no object (its temporary files on the host are
	// its own and removed when it ends).
	diff.Idempotent, diff.ReadOnly = true, true
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

// ExecOptions says how [Kubectl.Exec] runs a command in a pod.
type ExecOptions struct {
	// Container is the container the command runs in (--container);
	// empty: the pod's default container (its first, or the one its
	// kubectl.kubernetes.io/default-container annotation names).
	Container string
	// Stdin, when set, is the command's standard input (--stdin).
	Stdin io.Reader
	// Idempotent marks a command that may run twice: a connection
	// dropped while it runs is then retried once (see [remote.Cmd]).
	Idempotent bool
	// ReadOnly marks a command that changes nothing, in the container or
	// elsewhere (`etcdctl member list`): a plan runs it (see
	// [remote.Cmd.ReadOnly]).
	ReadOnly bool
	// Secrets are values that may appear in the command's output or
	// errors and are redacted from them (see [remote.Cmd]). They must not
	// be in argv, which kubectl and the node's process table show: pass
	// them on Stdin.
	Secrets []remote.Secret
}

// Exec runs argv in a container of the pod namespace/pod, as `kubectl
// exec --namespace=NAMESPACE POD [--container=C] [--stdin] -- ARGV...`
// does (staging/src/k8s.io/kubectl/pkg/cmd/exec/exec.go): argv is the
// container's argv, never a shell string, after "--" so that kubectl
// reads none of it as its own flags. A command that exits non-zero is a
// *remote.CommandError with kubectl's exit status, which is the
// command's ("command terminated with exit code N" on standard error).
func (k Kubectl) Exec(ctx context.Context, namespace, pod string, argv []string, o ExecOptions) (remote.Output, error) {
	var p optProblems
	if msg := namespaceMsg(namespace); msg != "" {
		p.addf("namespace", "%s", msg)
	}
	if msg := ObjectNameProblem(pod); msg != "" {
		p.addf("pod", "%s", msg)
	}
	if o.Container != "" {
		if msg := labelMsg(o.Container); msg != "" {
			p.addf("ExecOptions.Container", "%s", msg)
		}
	}
	if len(argv) == 0 || argv[0] == "" {
		p.addf("argv", "must name the program to run")
	}
	if err := p.err(); err != nil {
		return remote.Output{}, err
	}
	args := []string{"exec", "--namespace=" + namespace, pod}
	if o.Container != "" {
		args = append(args, "--container="+o.Container)
	}
	if o.Stdin != nil {
		args = append(args, "--stdin")
	}
	c := k.command(append(append(args, "--"), argv...)...)
	c.Stdin = o.Stdin
	c.Idempotent, c.ReadOnly = o.Idempotent, o.ReadOnly
	c.Secrets = o.Secrets
	return k.run(ctx, c)
}

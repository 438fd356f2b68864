package kubeapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// DefaultDrainTimeout bounds a drain whose [DrainOptions] name no
// timeout: five minutes, enough for pods that stop within their default
// grace period of 30 seconds and for evictions retried meanwhile.
const DefaultDrainTimeout = 300 * time.Second

// DrainOptions says how [DrainNode] drains.
type DrainOptions struct {
	// Timeout bounds the drain (kubectl drain --timeout); 0 means
	// [DefaultDrainTimeout]. The context must leave it time to finish.
	Timeout time.Duration
	// Force evicts pods that no controller manages too (--force): they
	// are gone for good. Without it such a pod stops the drain.
	Force bool
}

// DrainError is the error of a drain that did not finish: the pods
// still on the node that stop it (an eviction a PodDisruptionBudget
// refuses, a pod no controller manages, a pod that did not stop in
// time). The node stays cordoned and is not deleted.
type DrainError struct {
	// Node is the node's name.
	Node string
	// Pods are the pods still on the node that a drain evicts, as
	// "namespace/name" (DaemonSet pods, mirror pods and finished pods,
	// which a drain leaves, are not listed).
	Pods []string
	// Err is kubectl drain's failure.
	Err error
}

// Error names the node, the pods that stop the drain and kubectl's
// failure.
func (e *DrainError) Error() string {
	pods := "no pod left to evict"
	switch n := len(e.Pods); {
	case n == 1:
		pods = "1 pod still on it: " + e.Pods[0]
	case n > 1:
		pods = fmt.Sprintf("%d pods still on it: %s", n, strings.Join(e.Pods, ", "))
	}
	return fmt.Sprintf("drain of node %s did not finish, %s: %v", e.Node, pods, e.Err)
}

// Unwrap returns kubectl drain's failure.
func (e *DrainError) Unwrap() error { return e.Err }

// DrainNode cordons the node called name and evicts its pods, as
// `kubectl cordon NAME` and `kubectl drain NAME --ignore-daemonsets
// --delete-emptydir-data --timeout=<o.Timeout>s [--force]` do
// (staging/src/k8s.io/kubectl/pkg/drain/drain.go and filters.go: evictions
// through the Eviction API, which a PodDisruptionBudget can refuse;
// DaemonSet and mirror pods left; pods no controller manages refused
// without --force; emptyDir data deleted).
//
// A node that does not exist is [lcm.Unchanged] (a node that never
// joined, a name misspelt: a test that drains must check the result's
// Changed), and so is one that is cordoned and holds no pod a drain
// evicts. When the drain fails, the
// error is a [*DrainError] listing the pods still on the node.
func DrainNode(ctx context.Context, k Kubectl, name string, o DrainOptions) (lcm.Result, error) {
	if err := CheckObjectName("name", name); err != nil {
		return lcm.Unchanged, err
	}
	switch {
	case o.Timeout < 0:
		return lcm.Unchanged, optProblem("DrainOptions.Timeout", "must not be negative, got %s", o.Timeout)
	case o.Timeout == 0:
		o.Timeout = DefaultDrainTimeout
	}
	node, err := k.Node(ctx, name)
	if err != nil || node == nil {
		return lcm.Unchanged, err
	}
	res := lcm.Unchanged
	if !node.Spec.Unschedulable {
		c := k.command("cordon", name)
		c.Idempotent = true
		if _, err := k.run(ctx, c); err != nil {
			return res, fmt.Errorf("cordon node %s: %w", name, err)
		}
		res = lcm.Changed("cordoned " + name)
	}
	pods, err := k.PodsOn(ctx, name)
	if err != nil {
		return res, err
	}
	if len(evictable(pods)) == 0 {
		return res, nil
	}
	args := []string{"drain", name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=" + kubectlDuration(o.Timeout)}
	if o.Force {
		args = append(args, "--force")
	}
	c := k.command(args...)
	c.Idempotent = true
	if _, err := k.run(ctx, c); err != nil {
		derr := &DrainError{Node: name, Err: err}
		if left, lerr := k.PodsOn(ctx, name); lerr == nil {
			derr.Pods = evictable(left)
		} else {
			derr.Err = fmt.Errorf("%w (and listing the pods left: %v)", err, lerr)
		}
		return res, derr
	}
	return res.And(lcm.Changed(fmt.Sprintf("drained %s: %d pods evicted", name, len(evictable(pods))))), nil
}

// evictable returns, as "namespace/name", the pods a drain evicts:
// neither DaemonSet pods (daemonSetFilter), mirror pods (mirrorPodFilter:
// the kubelet's static pods) nor finished ones (a Succeeded or Failed pod
// is deleted without blocking anything), as in
// staging/src/k8s.io/kubectl/pkg/drain/filters.go.
func evictable(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" {
			continue
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return names
}

// DeleteNode deletes the Node object called name (`kubectl delete node
// NAME --ignore-not-found`): the cluster forgets it. A node that does not
// exist is [lcm.Unchanged], whether it was deleted before or never
// joined: a test must check the result's Changed. Drain it first ([DrainNode]); deleting it
// does not stop what runs on the VM (kubeadm's ResetNode does).
func DeleteNode(ctx context.Context, k Kubectl, name string) (lcm.Result, error) {
	node, err := k.Node(ctx, name)
	if err != nil || node == nil {
		return lcm.Unchanged, err
	}
	c := k.command("delete", "node", name, "--ignore-not-found")
	c.Idempotent = true
	if _, err := k.run(ctx, c); err != nil {
		return lcm.Unchanged, fmt.Errorf("delete node %s: %w", name, err)
	}
	return lcm.Changed("deleted node " + name), nil
}

// kubectlDuration formats d as kubectl's duration flags take it, in
// whole seconds rounded up ("300s"); they are parsed by
// time.ParseDuration (pflag's DurationVar).
func kubectlDuration(d time.Duration) string {
	s := (d + time.Second - 1) / time.Second
	return fmt.Sprintf("%ds", s)
}

package kube

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The messages of staging/src/k8s.io/kubectl/pkg/drain/filters.go.
const (
	daemonSetFatal      = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
	daemonSetWarning    = "ignoring DaemonSet-managed Pods"
	localStorageFatal   = "Pods with local storage (use --delete-emptydir-data to override)"
	localStorageWarning = "deleting Pods with local storage"
	unmanagedFatal      = "cannot delete Pods that declare no controller (use --force to override)"
	unmanagedWarning    = "deleting Pods that declare no controller"
)

// podVerdict is drain's PodDeleteStatus.
type podVerdict struct {
	pod     *corev1.Pod
	delete  bool
	reason  string // Okay, Skip, Warning, Error
	message string
}

// podsForDeletion is pkg/drain/drain.go GetPodsForDeletion: the node's
// pods through the filters (daemonSet, mirror, localStorage,
// unreplicated; the first that refuses decides), and the errors, grouped
// by message (filters.go errors()).
func (s *session) podsForDeletion(node string) ([]podVerdict, []error, error) {
	if err := s.can("list", KindPod, "", ""); err != nil {
		return nil, nil, err
	}
	objs, err := s.api.List(s.ctx, KindPod, "")
	if err != nil {
		return nil, nil, err
	}
	force, ignoreDS, emptyDir := s.on("force"), s.on("ignore-daemonsets"), s.on("delete-emptydir-data")
	var list []podVerdict
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.Spec.NodeName != node {
			continue
		}
		finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		v := podVerdict{pod: p, delete: true, reason: "Okay"}
		filters := []func() podVerdict{
			func() podVerdict { // daemonSetFilter
				ref := metav1.GetControllerOf(p)
				if ref == nil || ref.Kind != "DaemonSet" || finished {
					return podVerdict{delete: true, reason: "Okay"}
				}
				if _, err := s.api.Get(s.ctx, KindDaemonSet, p.Namespace, ref.Name); err != nil {
					if apierrors.IsNotFound(err) && force {
						return podVerdict{delete: true, reason: "Warning", message: err.Error()}
					}
					return podVerdict{reason: "Error", message: err.Error()}
				}
				if !ignoreDS {
					return podVerdict{reason: "Error", message: daemonSetFatal}
				}
				return podVerdict{reason: "Warning", message: daemonSetWarning}
			},
			func() podVerdict { // mirrorPodFilter
				if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
					return podVerdict{reason: "Skip"}
				}
				return podVerdict{delete: true, reason: "Okay"}
			},
			func() podVerdict { // localStorageFilter
				local := false
				for _, vol := range p.Spec.Volumes {
					local = local || vol.EmptyDir != nil
				}
				if !local || finished {
					return podVerdict{delete: true, reason: "Okay"}
				}
				if !emptyDir {
					return podVerdict{reason: "Error", message: localStorageFatal}
				}
				return podVerdict{delete: true, reason: "Warning", message: localStorageWarning}
			},
			func() podVerdict { // unreplicatedFilter
				if finished || metav1.GetControllerOf(p) != nil {
					return podVerdict{delete: true, reason: "Okay"}
				}
				if force {
					return podVerdict{delete: true, reason: "Warning", message: unmanagedWarning}
				}
				return podVerdict{reason: "Error", message: unmanagedFatal}
			},
		}
		for _, f := range filters {
			v = f()
			if !v.delete {
				break
			}
		}
		v.pod = p
		list = append(list, v)
	}
	failed := map[string][]string{}
	for _, v := range list {
		if v.reason == "Error" {
			failed[v.message] = append(failed[v.message], v.pod.Namespace+"/"+v.pod.Name)
		}
	}
	var errs []error
	for _, msg := range sortedKeys(failed) {
		if strings.HasPrefix(strings.ToLower(msg), "cannot delete") {
			errs = append(errs, fmt.Errorf("%s: %s", msg, strings.Join(failed[msg], ", ")))
		} else {
			errs = append(errs, fmt.Errorf("cannot delete %s: %s", msg, strings.Join(failed[msg], ", ")))
		}
	}
	return list, errs, nil
}

func sortedKeys(m map[string][]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// warnings is filters.go Warnings.
func warnings(list []podVerdict) string {
	ps := map[string][]string{}
	for _, v := range list {
		if v.reason == "Warning" {
			ps[v.message] = append(ps[v.message], v.pod.Namespace+"/"+v.pod.Name)
		}
	}
	var msgs []string
	for _, k := range sortedKeys(ps) {
		msgs = append(msgs, fmt.Sprintf("%s: %s", k, strings.Join(ps[k], ", ")))
	}
	return strings.Join(msgs, "; ")
}

// drain is `kubectl drain NODE` (cmd/drain/drain.go RunDrain and
// deleteOrEvictPodsSimple, pkg/drain/drain.go evictPods): cordon, list
// the node's pods through the filters, evict each through the eviction
// API. A refused eviction (429, a PodDisruptionBudget) is retried every
// 5 s until --timeout in real kubectl; time does not pass here, so the
// first refusal is reported with the retry message and the global
// timeout error follows at once. A pod whose kubelet does not confirm
// its deletion (a node whose Ready condition is Unknown) is waited for
// until the timeout as well. --timeout=0 means no timeout: real kubectl
// then retries forever, and so this one blocks until its context ends.
// The node stays cordoned when the drain fails.
func (s *session) drain() int {
	if len(s.args) == 0 {
		s.errOut("error: USAGE: drain NODE [flags]\nSee 'kubectl drain -h' for help and examples\n")
		return 1
	}
	timeout, err := s.timeoutFlag(0)
	if err != nil {
		return s.fail(err)
	}
	// Every node is looked up and cordoned first (RunCordonOrUncordon).
	for _, name := range s.args {
		if _, err := s.setUnschedulable(name, true); err != nil {
			if apierrors.IsNotFound(err) {
				return s.fail(err)
			}
			s.errOut("error: unable to cordon node %q: %v\n", name, err)
		}
	}
	for i, name := range s.args {
		if err := s.drainOne(name, timeout); err != nil {
			s.errOut("error: unable to drain node %q, aborting command...\n\n", name)
			s.errOut("There are pending nodes to be drained:\n")
			for _, r := range s.args[i:] {
				s.errOut(" %s\n", r)
			}
			return s.fail(err)
		}
		s.out("node/%s drained\n", name)
	}
	return 0
}

func (s *session) drainOne(node string, timeout time.Duration) error {
	list, errs, err := s.podsForDeletion(node)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return aggregate(errs)
	}
	if w := warnings(list); w != "" {
		s.errOut("Warning: %s\n", w)
	}
	var failures []error
	for _, v := range list {
		if !v.delete {
			continue
		}
		p := v.pod
		s.out("evicting pod %s/%s\n", p.Namespace, p.Name)
		err := s.can("evict", KindPod, p.Namespace, p.Name)
		if err == nil {
			err = s.api.Evict(s.ctx, p.Namespace, p.Name)
		}
		switch {
		case err == nil:
			// waitForDelete: the pod must be gone (or replaced by one of
			// another uid) before it counts as evicted.
			if cur, gerr := s.api.Get(s.ctx, KindPod, p.Namespace, p.Name); gerr == nil && cur.GetUID() == p.UID {
				if timeout == 0 {
					<-s.ctx.Done()
					return s.ctx.Err()
				}
				failures = append(failures, fmt.Errorf("error when waiting for pod %q in namespace %q to terminate: global timeout reached: %v", p.Name, p.Namespace, timeout))
				continue
			}
			s.out("pod/%s evicted\n", p.Name)
		case apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			s.errOut("error when evicting pods/%q -n %q (will retry after 5s): %v\n", p.Name, p.Namespace, err)
			if timeout == 0 {
				<-s.ctx.Done()
				return s.ctx.Err()
			}
			failures = append(failures, fmt.Errorf("error when evicting pods/%q -n %q: global timeout reached: %v", p.Name, p.Namespace, timeout))
		default:
			failures = append(failures, fmt.Errorf("error when evicting pods/%q -n %q: %v", p.Name, p.Namespace, err))
		}
	}
	if len(failures) == 0 {
		return nil
	}
	err = aggregate(failures)
	// deleteOrEvictPodsSimple: the pods still to go.
	if pending, _, lerr := s.podsForDeletion(node); lerr == nil {
		var names []string
		for _, v := range pending {
			if v.delete {
				names = append(names, v.pod.Name)
			}
		}
		if len(names) > 0 {
			s.errOut("There are pending pods in node %q when an error occurred: %v\n", node, err)
			for _, n := range names {
				s.errOut("pod/%s\n", n)
			}
		}
	}
	return err
}

package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// execIn is `kubectl exec [--namespace=NS] POD [-c CONTAINER] -- CMD...`
// (staging/src/k8s.io/kubectl/pkg/cmd/exec/exec.go): the pod must exist
// and be running; the command runs through the registered
// [ExecHandler], whose non-zero status kubectl reports as "command
// terminated with exit code N" and exits with.
func (s *session) execIn() int {
	if len(s.args) == 0 {
		s.errOut("error: pod, type/name or --filename must be specified\n")
		return 1
	}
	if len(s.after) == 0 {
		s.errOut("error: you must specify at least one command for the container\n")
		return 1
	}
	name := strings.TrimPrefix(strings.TrimPrefix(s.args[0], "pod/"), "pods/")
	if err := s.can("get", KindPod, s.ns, name); err != nil {
		return s.fail(err)
	}
	o, err := s.api.Get(s.ctx, KindPod, s.ns, name)
	if err != nil {
		return s.fail(err)
	}
	pod := o.(*corev1.Pod)
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		s.errOut("error: cannot exec into a container in a completed pod; current phase is %s\n", pod.Status.Phase)
		return 1
	}
	container, _ := s.flag("container")
	if container == "" && len(pod.Spec.Containers) > 0 {
		container = pod.Spec.Containers[0].Name
		if len(pod.Spec.Containers) > 1 {
			var names []string
			for _, c := range pod.Spec.Containers {
				names = append(names, c.Name)
			}
			s.errOut("Defaulted container %q out of: %s\n", container, strings.Join(names, ", "))
		}
	}
	found := false
	for _, c := range pod.Spec.Containers {
		found = found || c.Name == container
	}
	if !found {
		return s.fail(apierrors.NewBadRequest("container " + container + " is not valid for pod " + name))
	}
	if err := s.can("exec", KindPod, s.ns, name); err != nil {
		return s.fail(err)
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
		s.errOut("error: unable to upgrade connection: container not found (%q)\n", container)
		return 1
	}
	code := 126
	if s.k.exec != nil {
		code = s.k.exec(s.ctx, s.p, pod, s.after)
	} else {
		s.errOut("OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown\n", s.after[0])
	}
	if code != 0 {
		s.errOut("command terminated with exit code %d\n", code)
	}
	return code
}

package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// admitPodLocked is the ServiceAccount admission plugin
// (plugin/pkg/admission/serviceaccount/admission.go Admit): a pod without
// serviceAccountName gets "default", and the service account it names
// must exist, else the pod is Forbidden ("error looking up service
// account NS/NAME: serviceaccount \"NAME\" not found"). Mirror pods (the
// kubelet's copies of static pods, annotated kubernetes.io/config.mirror)
// are not given one and are not checked. The token volume the plugin
// mounts is not modelled.
func (m *MemoryAPI) admitPodLocked(p *corev1.Pod) error {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = "default"
	}
	if _, ok := m.objs[KindServiceAccount][key(p.Namespace, p.Spec.ServiceAccountName)]; !ok {
		notFound := apierrors.NewNotFound(corev1.Resource("serviceaccount"), p.Spec.ServiceAccountName)
		return apierrors.NewForbidden(corev1.Resource("pods"), p.Name,
			fmt.Errorf("error looking up service account %s/%s: %v", p.Namespace, p.Spec.ServiceAccountName, notFound))
	}
	return nil
}

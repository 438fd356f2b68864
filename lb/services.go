package lb

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ServicesFrom returns the Services to publish on the load balancer
// ([Config].Services) of a list of Kubernetes Services: those of type
// NodePort or LoadBalancer (which has node ports too), each with the
// node ports of its TCP ports. UDP and SCTP ports are left out (HAProxy
// proxies TCP), and so is a Service without a TCP node port. Read the
// Services with kubeapi on a master:
//
//	var list corev1.ServiceList
//	err := kubectl.List(ctx, &list, "services", namespace, kubeapi.ListOptions{})
//	cfg.Services = lb.ServicesFrom(list.Items)
//
// Which namespaces are published is the driver's choice (Tacker's
// configure_lb.sh is given each CNF's Services by the CNF's own
// management driver).
func ServicesFrom(svcs []corev1.Service) []Service {
	var out []Service
	for _, s := range svcs {
		if s.Spec.Type != corev1.ServiceTypeNodePort && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		var ports []int
		for _, p := range s.Spec.Ports {
			// An empty protocol is TCP (the API server defaults it).
			if (p.Protocol == corev1.ProtocolTCP || p.Protocol == "") && p.NodePort != 0 && !slices.Contains(ports, int(p.NodePort)) {
				ports = append(ports, int(p.NodePort))
			}
		}
		if len(ports) > 0 {
			out = append(out, Service{Namespace: s.Namespace, Name: s.Name, NodePorts: ports})
		}
	}
	return out
}

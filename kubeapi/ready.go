package kubeapi

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/system"
)

// readyPollInterval is how often [WaitNodeReady] asks.
const readyPollInterval = 2 * time.Second

// WaitNodeReady waits, for at most timeout, until the node called name
// is registered and its Ready condition is True (what `kubectl wait
// --for=condition=Ready node/NAME` waits for). Its error, a
// [*system.WaitError], carries the last thing seen: not registered, or
// the Ready condition's status, reason and message (a kubelet without a
// CNI says "container runtime network not ready: NetworkReady=false").
func WaitNodeReady(ctx context.Context, k Kubectl, name string, timeout time.Duration) error {
	if err := CheckObjectName("name", name); err != nil {
		return err
	}
	return system.Wait(ctx, fmt.Sprintf("node %s to be Ready", name), timeout, readyPollInterval, func(ctx context.Context) (bool, error) {
		node, err := k.Node(ctx, name)
		if err != nil {
			return false, err
		}
		if node == nil {
			return false, fmt.Errorf("node %s is not registered", name)
		}
		c := ReadyCondition(node)
		switch {
		case c == nil:
			return false, fmt.Errorf("node %s has no Ready condition yet", name)
		case c.Status != corev1.ConditionTrue:
			return false, fmt.Errorf("node %s: Ready=%s (%s): %s", name, c.Status, c.Reason, c.Message)
		}
		return true, nil
	})
}

// ReadyCondition returns the node's Ready condition, nil when its kubelet
// has reported none yet. Its Status is Unknown once the kubelet stopped
// reporting (the node lifecycle controller sets it after the grace
// period: pkg/controller/nodelifecycle), which is how a hook tells a dead
// VM's node from a live one.
func ReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

package kubeapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgmtkit/mgmtkit/internal/scripted"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
	"github.com/mgmtkit/mgmtkit/system"
)

func TestWaitNodeReady(t *testing.T) {
	n := scripted.New(t, "master-10-0-0-5", "kubectl")
	calls := 0
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		calls++
		switch {
		case calls == 1:
			return scripted.NotFound("nodes", "worker-10-0-0-12")
		case calls == 2:
			return scripted.OK(scripted.AsJSON(t, scripted.ReadyNode("worker-10-0-0-12", corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized")))
		}
		return scripted.OK(scripted.AsJSON(t, scripted.ReadyNode("worker-10-0-0-12", corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")))
	})
	if err := kubeapi.WaitNodeReady(n.Ctx, n.Kubectl(), "worker-10-0-0-12", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Fatalf("%d polls, want 3", calls)
	}

	// Never Ready: the error carries the condition's message.
	n.Set("kubectl", func(inv scripted.Invocation, _ *sshtest.FS) scripted.Reply {
		return scripted.OK(scripted.AsJSON(t, scripted.ReadyNode("worker-10-0-0-12", corev1.ConditionFalse, "KubeletNotReady", "cni plugin not initialized")))
	})
	err := kubeapi.WaitNodeReady(n.Ctx, n.Kubectl(), "worker-10-0-0-12", 300*time.Millisecond)
	var we *system.WaitError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "cni plugin not initialized") || !strings.Contains(err.Error(), "Ready=False") {
		t.Fatalf("never Ready: %v", err)
	}
	// A cancelled context ends the wait.
	ctx, cancel := context.WithCancel(n.Ctx)
	cancel()
	if err := kubeapi.WaitNodeReady(ctx, n.Kubectl(), "worker-10-0-0-12", time.Minute); err == nil {
		t.Fatal("no error after cancel")
	}
}

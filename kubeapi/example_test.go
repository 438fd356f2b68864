package kubeapi_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Remove a worker: drain it from a master and delete its node, but keep
// it when the drain cannot finish (a PodDisruptionBudget, a pod no
// controller manages) and say which pods stop it.
func ExampleDrainNode() {
	ctx := context.Background()
	var master remote.Host // connected with remote.NewSSHHost
	k := kubeapi.Kubectl{Host: master}

	_, err := kubeapi.DrainNode(ctx, k, "worker-10-0-0-12", kubeapi.DrainOptions{Timeout: kubeapi.DefaultDrainTimeout})
	var blocked *kubeapi.DrainError
	if errors.As(err, &blocked) {
		fmt.Println("kept", blocked.Node, "because of", blocked.Pods)
		return
	}
	if err != nil {
		panic(err)
	}
	if _, err := kubeapi.DeleteNode(ctx, k, "worker-10-0-0-12"); err != nil {
		panic(err)
	}
}

package kubeapi_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

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
	res, err := kubeapi.DeleteNode(ctx, k, "worker-10-0-0-12")
	if err != nil {
		panic(err)
	}
	if !res.Changed {
		fmt.Println("no such node: it never joined, or was deleted before")
	}
}

// Register a PersistentVolume from a manifest, checked before anything
// runs, then read it back and label the node that serves it. Run twice,
// nothing changes the second time.
func ExampleKubectl_Apply() {
	ctx := context.Background()
	var master remote.Host // connected with remote.NewSSHHost
	k := kubeapi.Kubectl{Host: master}

	manifest := []byte(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: nfs-pv-1
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  nfs: {server: 10.0.0.30, path: /exports/pv-1}
`)
	if err := kubeapi.CheckManifest(manifest); err != nil {
		panic(err) // an *lcm.ParamsError naming the document
	}
	if _, err := k.Apply(ctx, manifest); err != nil {
		panic(err)
	}
	var pv corev1.PersistentVolume
	found, err := k.Get(ctx, &pv, "persistentvolume", "", "nfs-pv-1")
	if err != nil || !found {
		panic(fmt.Sprint("not registered: ", err))
	}
	fmt.Println(pv.Name, pv.Spec.Capacity.Storage(), pv.Status.Phase)

	node, err := k.Node(ctx, "worker-10-0-0-12")
	if err != nil || node == nil {
		panic(fmt.Sprint("no such node: ", err))
	}
	if _, err := k.Label(ctx, "node", "", node.Name, map[string]string{"mgmtkit.io/nfs-client": "true"}); err != nil {
		panic(err)
	}
}

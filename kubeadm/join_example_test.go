package kubeadm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Join a worker: fresh credentials from a master, the join, and a bounded
// wait until the node is Ready. Each step is idempotent: on a member, the
// join changes nothing.
func ExampleJoinNode() {
	ctx := context.Background()
	var master, worker remote.Host // connected with remote.NewSSHHost

	info, err := kubeadm.NewJoinInfo(ctx, master, "10.0.0.5", "10.0.0.5:6443", false)
	if err != nil {
		panic(err)
	}
	name := kubeadm.NodeName(lcm.RoleWorker, "10.0.0.12")
	res, err := kubeadm.JoinNode(ctx, worker, kubeadm.JoinOptions{NodeName: name, AdvertiseAddress: "10.0.0.12", Info: info})
	if err != nil {
		panic(err) // the error names the node and kubeadm's stderr; never the token
	}
	fmt.Println(res)
	if err := kubeapi.WaitNodeReady(ctx, kubeapi.Kubectl{Host: master}, name, 5*time.Minute); err != nil {
		panic(err) // the last Ready condition's message
	}
}

package drivers_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/mgmtkit/mgmtkit/examples/drivers"
	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// A VNFM written in Go runs the cluster driver against a real OpenStack:
// the VMs' host keys from a known_hosts file it keeps, Heat reached with
// the credentials of clouds.yaml's cloud "mycloud" (OS_CLOUD=mycloud), or,
// leaving Heat unset, with the OpenStack entry of each instance's
// vimConnectionInfo. The request, instance and VNF package are the VNFM's
// own. (Compiled, not run: there is no OpenStack here.)
func Example_openStack() {
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	cfg := plumbing.Config{
		SSH: func(context.Context) (remote.Config, error) {
			hostKeys, err := remote.KnownHosts("/var/lib/vnfm/known_hosts")
			return remote.Config{HostKey: hostKeys, Logger: logger}, err
		},
		Heat: func(ctx context.Context, _ *lcm.VnfInstance) (*heat.Client, error) {
			return heat.Connect(ctx) // clouds.yaml, as the openstack CLI finds it
		},
		Limit: 16, // nodes a step works on at once
	}
	driver := &drivers.ClusterDriver{Cluster: kubeadm.Hooks{Plumbing: cfg}}

	inst, req, pkg := vnfmRecords()
	res, err := lcm.Invoke(lcm.WithLogger(ctx, logger), driver, lcm.InstantiateEnd,
		&lcm.InstantiateOp{Instance: inst, Request: req, Package: pkg})
	if err != nil {
		fmt.Println("instantiate_end:", err) // every problem with its path, or the step and host that failed
		return
	}
	for _, vim := range res.AddVimConnections {
		fmt.Println("store the Kubernetes VIM", vim.ID, "in the instance's vimConnectionInfo")
	}
}

// vnfmRecords stands for what the VNFM has stored: the VNF instance, the
// InstantiateVnfRequest being processed and the instance's VNF package.
func vnfmRecords() (*lcm.VnfInstance, *lcm.InstantiateVnfRequest, *lcm.Package) {
	pkg, err := lcm.OpenPackage("/var/lib/vnfm/packages/k8s-cluster")
	if err != nil {
		panic(err)
	}
	return &lcm.VnfInstance{ID: "vnf-1"}, &lcm.InstantiateVnfRequest{}, pkg
}

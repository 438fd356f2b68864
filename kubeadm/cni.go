package kubeadm

import (
	"context"
	"fmt"

	"github.com/mgmtkit/mgmtkit/kubeapi"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// ApplyCNI applies the pod network's manifest (Calico, Flannel, ...;
// cni_manifest_path in the VNF package) with [kubeapi.Kubectl.Apply]:
// nothing changes when the cluster holds it already. The manifest is
// checked first, before any remote command, by [kubeapi.CheckManifest]:
// YAML documents (or JSON), each an object with apiVersion, kind and
// metadata.name; a manifest that is not is an *lcm.ParamsError naming
// the document. Until a CNI runs, nodes are not Ready.
func ApplyCNI(ctx context.Context, k kubeapi.Kubectl, manifest []byte) (lcm.Result, error) {
	if err := kubeapi.CheckManifest(manifest); err != nil {
		return lcm.Unchanged, err
	}
	res, err := k.Apply(ctx, manifest)
	if err != nil {
		return res, fmt.Errorf("applying the CNI manifest: %w", err)
	}
	return res, nil
}

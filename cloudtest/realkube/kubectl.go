package realkube

import (
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// kubectl returns the kubectl program of the hosts of w: kubectl's own
// code against the real API servers (see kubectlTool).
func (b *Backend) kubectl(w *kube.World) ubuntu.Tool {
	return kubectlTool(w)
}

package kubeadm

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Paths [ResetNode] looks at and cleans.
const (
	// ConfigDir holds the kubeadm configuration files mgmtkit writes
	// (init.yaml, join.yaml, upload-certs.yaml), root 0600.
	ConfigDir = "/etc/kubernetes/mgmtkit"
	// KubeletKubeconfig is written by kubeadm init and join: a node that
	// has it is, or was, a member of a cluster.
	KubeletKubeconfig = "/etc/kubernetes/kubelet.conf"
	// APIServerManifest is the static pod of a control-plane node.
	APIServerManifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"
	// CNIConfigDir holds the pod network's configuration, which kubeadm
	// reset leaves.
	CNIConfigDir = "/etc/cni/net.d"
)

// resetProbeScript prints, under sudo, "kubeadm" when kubeadm is on the
// PATH, "member" when $1 or $2 exists (the node was joined or
// initialised), then for each further argument "present PATH" when it
// exists.
const resetProbeScript = `set -eu
if command -v kubeadm >/dev/null 2>&1; then echo kubeadm; fi
if [ -e "$1" ] || [ -e "$2" ]; then echo member; fi
shift 2
for p in "$@"; do
  if [ -e "$p" ] || [ -L "$p" ]; then printf 'present %s\n' "$p"; fi
done`

// homeScript prints the login user's home directory.
const homeScript = `printf '%s\n' "$HOME"`

// ResetNode undoes what kubeadm init or join did on a node, so that it
// can join again (heal) or leave cleanly (scale-in):
//
//   - `kubeadm reset --force` when kubeadm is installed and the node was
//     a member ([KubeletKubeconfig] or [APIServerManifest] exists). On a
//     control-plane node it also removes the node's etcd member, as the
//     real reset does (cmd/kubeadm/app/cmd/phases/reset/removeetcdmember.go);
//   - then what kubeadm reset says it leaves (cmd/kubeadm/app/cmd/reset.go:
//     "The reset process does not clean CNI configuration. To do so, you
//     must remove /etc/cni/net.d", "...does not clean your kubeconfig
//     files... check the contents of the $HOME/.kube/config file"):
//     [CNIConfigDir] and the login user's $HOME/.kube, with mgmtkit's
//     own [ConfigDir], which holds a join token and certificate key.
//
// iptables and IPVS rules are left, as kubeadm leaves them: the node is
// rebuilt or rejoined, and kube-proxy rewrites its rules. A node with
// nothing to reset is Unchanged after two commands. A member without
// kubeadm (removed by hand) is an error: nothing can reset it.
//
// A node that never joined is [lcm.Unchanged] with a nil error, exactly
// as one already reset: a caller or a test that means to see a reset
// happen must check the result's Changed (or [Joined] beforehand), or it
// passes vacuously against a node that was never a member.
func ResetNode(ctx context.Context, h remote.Host) (lcm.Result, error) {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"sh", "-c", homeScript, "mgmtkit-home"}, Idempotent: true, ReadOnly: true})
	if err != nil {
		return lcm.Unchanged, stepErr(h, "finding the login user's home", err)
	}
	home := strings.TrimSpace(string(out.Stdout))
	cleanup := []string{ConfigDir, CNIConfigDir}
	if path.IsAbs(home) && path.Clean(home) != "/" {
		cleanup = append(cleanup, path.Join(home, ".kube"))
	}
	args := append([]string{"sh", "-c", resetProbeScript, "mgmtkit-reset-probe", KubeletKubeconfig, APIServerManifest}, cleanup...)
	out, err = h.Run(ctx, remote.Cmd{Args: args, Sudo: true, Idempotent: true, ReadOnly: true})
	if err != nil {
		return lcm.Unchanged, stepErr(h, "probing the node's Kubernetes state", err)
	}
	var hasKubeadm, member bool
	var present []string
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		switch {
		case line == "kubeadm":
			hasKubeadm = true
		case line == "member":
			member = true
		case strings.HasPrefix(line, "present ") && slices.Contains(cleanup, line[len("present "):]):
			present = append(present, line[len("present "):])
		}
	}
	res := lcm.Unchanged
	if member {
		if !hasKubeadm {
			return res, fmt.Errorf("kubeadm: %s: the node has %s or %s but no kubeadm to reset it: install kubeadm or rebuild the node", h.Name(), KubeletKubeconfig, APIServerManifest)
		}
		if _, err := h.Run(ctx, remote.Cmd{Args: []string{"kubeadm", "reset", "--force"}, Sudo: true, Idempotent: true}); err != nil {
			return res, stepErr(h, "kubeadm reset", err)
		}
		res = lcm.Changed("kubeadm reset")
	}
	if len(present) > 0 {
		// Only paths of cleanup reach rm: the constants and the home
		// directory's .kube.
		if _, err := h.Run(ctx, remote.Cmd{Args: append([]string{"rm", "-rf", "--"}, present...), Sudo: true, Idempotent: true}); err != nil {
			return res, stepErr(h, "removing what kubeadm reset leaves", err)
		}
		res = res.And(lcm.Changed("removed " + strings.Join(present, ", ")))
	}
	return res, nil
}

package kubeadm_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/kubeadm"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// fakeKubeadmReset installs a kubeadm whose `reset --force` removes what
// init and join write, as the real reset's cleanup-node phase does
// (cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go: the kubeconfig files,
// the contents of /etc/kubernetes/manifests and pki, /var/lib/kubelet),
// and refuses without root (cmd/kubeadm/app/preflight IsPrivilegedUser
// check: "user is not running as root"). It counts its runs.
func fakeKubeadmReset(n *simNode) *int {
	runs := new(int)
	n.host.SSH.Handle("/usr/bin/kubeadm", func(_ context.Context, p *sshtest.Process) int {
		if !slices.Equal(p.Args[1:], []string{"reset", "--force"}) {
			return p.Fail(2, "sshtest kubeadm: only reset --force is modelled here")
		}
		if p.User != "root" {
			return p.Fail(1, "[preflight] Some fatal errors occurred:\n\t[ERROR IsPrivilegedUser]: user is not running as root")
		}
		*runs++
		fs := p.Host.FS()
		for _, f := range []string{kubeadm.KubeletKubeconfig, "/etc/kubernetes/admin.conf", kubeadm.APIServerManifest, "/var/lib/kubelet/config.yaml"} {
			_ = fs.Remove(f)
		}
		return 0
	})
	return runs
}

func TestResetNode(t *testing.T) {
	n := newSimNode(t, sim.Options{})
	if res, err := kubeadm.ResetNode(n.ctx, n.ssh); err != nil || res.Changed {
		t.Fatalf("a fresh node: %v, %v", res, err)
	}
	n.commands() // the connection's first sudo probes how to sudo
	if res, err := kubeadm.ResetNode(n.ctx, n.ssh); err != nil || res.Changed {
		t.Fatalf("a fresh node: %v, %v", res, err)
	}
	if cmds := n.commands(); len(cmds) != 2 {
		t.Errorf("a fresh node took %d commands, want 2", len(cmds))
	}

	// A joined control plane: kubeadm resets it, mgmtkit removes the rest.
	for _, f := range []string{kubeadm.KubeletKubeconfig, kubeadm.APIServerManifest, kubeadm.ConfigDir + "/join.yaml",
		kubeadm.CNIConfigDir + "/10-calico.conflist", "/home/ubuntu/.kube/config"} {
		n.write(f, "x")
	}
	n.write("/etc/kubernetes/mgmtkit-unrelated", "keep")
	_, err := kubeadm.ResetNode(n.ctx, n.ssh)
	if err == nil || !strings.Contains(err.Error(), "no kubeadm to reset it") {
		t.Errorf("a member without kubeadm: %v", err)
	}
	runs := fakeKubeadmReset(n)
	res := n.twice("ResetNode", func() (lcm.Result, error) { return kubeadm.ResetNode(n.ctx, n.ssh) })
	if *runs != 1 {
		t.Errorf("kubeadm reset ran %d times, want once", *runs)
	}
	for _, f := range []string{kubeadm.KubeletKubeconfig, kubeadm.APIServerManifest, kubeadm.ConfigDir, kubeadm.CNIConfigDir, "/home/ubuntu/.kube"} {
		if n.host.FS().Exists(f) {
			t.Errorf("%s stays", f)
		}
	}
	if !n.host.FS().Exists("/etc/kubernetes/mgmtkit-unrelated") || !n.host.FS().Exists("/home/ubuntu") {
		t.Error("removed more than it should")
	}
	if !strings.Contains(res.Detail, "kubeadm reset") || !strings.Contains(res.Detail, "/home/ubuntu/.kube") {
		t.Errorf("detail %q", res.Detail)
	}
}

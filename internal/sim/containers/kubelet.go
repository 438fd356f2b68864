package containers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// The kubelet's files that say how it pulls.
const (
	kubeletAuthFile  = "/var/lib/kubelet/config.json"
	kubeletFlagsFile = "/var/lib/kubelet/kubeadm-flags.env"
	kubeletConfig    = "/var/lib/kubelet/config.yaml"
	kubeletDefaults  = "/etc/default/kubelet"
)

// PullError is an image pull the kubelet reports as ErrImagePull.
type PullError struct {
	// Image is the image as the pod names it.
	Image string
	// Message is the runtime's error ("rpc error: code = Unknown desc =
	// failed to pull and unpack image ...").
	Message string
}

// Error is the kubelet's event message: `Failed to pull image "IMAGE":
// MESSAGE`.
func (e *PullError) Error() string {
	return fmt.Sprintf("Failed to pull image %q: %s", e.Image, e.Message)
}

// KubeletPull pulls image on m as the kubelet does for a pod: through the
// CRI runtime its --container-runtime-endpoint names (CRI-O when
// kubeadm-flags.env, /etc/default/kubelet or config.yaml names crio.sock;
// containerd otherwise), with the credentials of
// /var/lib/kubelet/config.json ({"auths": {"SERVER": {"auth": base64}}},
// or "username"/"password"; /.docker/config.json when it is absent, as the
// kubelet, which has no HOME, looks there). Every matching credential is
// tried in turn (none at all without one). The error is a *PullError.
func KubeletPull(ctx context.Context, net Network, m *ubuntu.Machine, image string) error {
	if net == nil {
		net = &StaticNetwork{}
	}
	r, err := parseRef(image)
	if err != nil {
		return &PullError{Image: image, Message: (&criError{"Unknown", fmt.Sprintf("failed to pull and unpack image %q: %v", image, err)}).Error()}
	}
	endpoint := "unix://" + containerdSock
	for _, f := range []string{kubeletFlagsFile, kubeletDefaults, kubeletConfig} {
		if data, err := m.Server().FS().ReadFile(f); err == nil && strings.Contains(string(data), "crio.sock") {
			endpoint = "unix://" + crioSock
		}
	}
	rt, _ := runtimeAt(m, endpoint)
	if err := rt.available("runtime.v1.ImageService"); err != nil {
		return &PullError{Image: image, Message: err.Error()}
	}
	auths, ok := readAuths(m, kubeletAuthFile)
	if !ok {
		auths, _ = readAuths(m, "/.docker/config.json")
	}
	var tries []creds
	for _, k := range sortedKeys(auths) {
		if serverKey(k) == r.domain {
			if c, ok := auths[k].creds(); ok {
				tries = append(tries, c)
			}
		}
	}
	if len(tries) == 0 {
		if _, err := rt.pull(ctx, net, r, creds{}); err != nil {
			return &PullError{Image: image, Message: err.Error()}
		}
		return nil
	}
	// With credentials, the kubelet tries each and reports them all.
	var msgs []string
	for _, c := range tries {
		_, err := rt.pull(ctx, net, r, c)
		if err == nil {
			return nil
		}
		msgs = append(msgs, err.Error())
	}
	msg := msgs[0]
	if len(msgs) > 1 {
		msg = "[" + strings.Join(msgs, ", ") + "]"
	}
	return &PullError{Image: image, Message: msg}
}

func sortedKeys(m map[string]authEntry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

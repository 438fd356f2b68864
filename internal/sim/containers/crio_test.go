package containers_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

func TestCRIO(t *testing.T) {
	w := newWorld(t)
	registryVM(w, "192.168.0.10")
	ca := containers.GenerateCA("test CA")
	tlsReg := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca, Username: "user01", Password: "s3cret"})
	tlsReg.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 443, tlsReg)
	n := w.node("worker", "192.168.0.11", "cri-o", "cri-tools")
	const pull = "crictl pull 192.168.0.10:5000/app:1"

	// cri-o's /etc/crictl.yaml sends crictl to crio.sock.
	n.fails(pull, 1, `rpc error: code = Unknown desc = initializing source docker://192.168.0.10:5000/app:1: pinging container registry 192.168.0.10:5000: Get \"https://192.168.0.10:5000/v2/\": http: server gave HTTP response to HTTPS client`)
	if got := n.ok("crictl version"); !strings.Contains(got, "RuntimeName:  cri-o\n") {
		t.Errorf("crictl version: %q", got)
	}
	n.write("/etc/containers/registries.conf.d/50-registry.conf", "[[registry]]\nlocation = \"192.168.0.10:5000\"\ninsecure = true\n")
	n.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
	n.ok("systemctl reload crio")
	if c := containers.CRIO(n.Machine).Config(); len(c.Registries) != 1 || !c.Registries[0].Insecure || c.Registries[0].Location != "192.168.0.10:5000" {
		t.Errorf("loaded %+v", c)
	}
	if got := n.ok(pull); got != "Image is up to date for "+sampleID+"\n" {
		t.Errorf("pull: %q", got)
	}
	if img, ok := containers.CRIO(n.Machine).Image("192.168.0.10:5000/app:1"); !ok || img.ID != sampleID {
		t.Errorf("cri-o's image %+v %v", img, ok)
	}
	// A bad file on reload keeps the loaded configuration; on start, fails.
	n.write("/etc/containers/registries.conf.d/60-bad.conf", "[[registry]\n")
	n.ok("systemctl reload crio")
	n.ok(pull)
	n.fails("systemctl restart crio", 1, "Job for crio.service failed")
	n.ok("rm /etc/containers/registries.conf.d/60-bad.conf && systemctl start crio")

	// HTTPS: the CA in /etc/containers/certs.d, credentials from the
	// request only.
	const pullTLS = "crictl pull --creds user01:s3cret registry.example.com/app:1"
	n.ok("echo '192.168.0.20 registry.example.com' >> /etc/hosts")
	n.fails(pullTLS, 1, "x509: certificate signed by unknown authority")
	n.write("/etc/containers/certs.d/registry.example.com/ca.crt", string(ca))
	n.fails("crictl pull registry.example.com/app:1", 1, "reading manifest 1 in registry.example.com/app: unauthorized: authentication required")
	n.ok(pullTLS)
	n.fails("crictl pull --creds user01:s3cret registry.example.com/app:2", 1, "reading manifest 2 in registry.example.com/app: manifest unknown: manifest unknown")

	// The kubelet pulls through CRI-O when kubeadm's flags name it.
	n.write("/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/crio/crio.sock\"\n")
	if err := containers.KubeletPull(w.ctx, w.net, n.Machine, "registry.example.com/app:1"); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("kubelet pull without credentials: %v", err)
	}
	n.write("/var/lib/kubelet/config.json", `{"auths": {"registry.example.com": {"auth": "dXNlcjAxOnMzY3JldA=="}}}`)
	if err := containers.KubeletPull(w.ctx, w.net, n.Machine, "registry.example.com/app:1"); err != nil {
		t.Errorf("kubelet pull: %v", err)
	}
	if got := tlsReg.Pulls(); len(got) == 0 || got[len(got)-1].Runtime != "cri-o" || !got[len(got)-1].OK {
		t.Errorf("pulls %+v", got)
	}
	n.ok("systemctl stop crio")
	n.fails(pull, 1, "dial unix /var/run/crio/crio.sock: connect: no such file or directory")
}

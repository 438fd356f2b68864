package containers_test

import (
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

func TestCRIOReadsTheFirstCertsDirAndOnlyV2DropIns(t *testing.T) {
	w := newWorld(t)
	ca := containers.GenerateCA("test CA")
	tlsReg := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca})
	tlsReg.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 443, tlsReg)
	n := w.node("worker", "192.168.0.11", "cri-o", "cri-tools")
	n.ok("echo '192.168.0.20 registry.example.com' >> /etc/hosts")
	const pull = "crictl pull registry.example.com/app:1"

	// The CA in /etc/docker/certs.d is read while it is the only one...
	n.ok("mkdir -p /etc/docker/certs.d/registry.example.com /etc/containers/certs.d")
	n.write("/etc/docker/certs.d/registry.example.com/ca.crt", string(ca))
	n.ok(pull)
	// ...and not once /etc/containers/certs.d/HOST exists, even empty.
	n.ok("mkdir /etc/containers/certs.d/registry.example.com && crictl rmi registry.example.com/app:1")
	n.fails(pull, 1, "x509: certificate signed by unknown authority")

	// A version 1 drop-in stops CRI-O from starting.
	n.write("/etc/containers/registries.conf.d/60-v1.conf", "[registries.insecure]\nregistries = ['192.168.0.10:5000']\n")
	n.fails("systemctl restart crio", 1, "Job for crio.service failed")
}

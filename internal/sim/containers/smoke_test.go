package containers_test

import (
	"strings"
	"testing"
)

func TestSmoke(t *testing.T) {
	w := newWorld(t)
	reg := w.node("registry", "192.168.0.10", "docker.io")
	wk := w.node("worker", "192.168.0.11", "docker.io")
	if got := reg.ok("docker version --format '{{.Server.Version}}'"); got != "24.0.7\n" {
		t.Fatalf("version %q", got)
	}
	reg.write("/tmp/r.tar", string(sampleTar(t)))
	t.Log(reg.ok("docker load -i /tmp/r.tar"))
	if got := reg.ok("docker image inspect --format '{{.Id}}' registry:latest"); strings.TrimSpace(got) != sampleID {
		t.Fatalf("id %q", got)
	}
	t.Log(reg.ok("docker run -d -p 5000:5000 -v /var/lib/private-registry:/var/lib/registry --restart=always --name private_registry registry:latest"))
	reg.ok("docker inspect --type container private_registry")
	reg.ok("docker tag registry:latest localhost:5000/app:1")
	t.Log(reg.ok("docker push localhost:5000/app:1"))
	t.Log(reg.ok("cat /var/lib/private-registry/docker/registry/v2/repositories/app/_manifests/tags/1/current/link"))
	r := wk.root("docker pull 192.168.0.10:5000/app:1")
	t.Log(r)
	wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["192.168.0.10:5000"]}`)
	wk.ok("systemctl reload docker")
	t.Log(wk.ok("docker pull 192.168.0.10:5000/app:1"))
	t.Log(wk.ok("docker images; docker info"))
	t.Log(reg.ok("docker ps; curl -sS http://192.168.0.10:5000/v2/_catalog"))
}

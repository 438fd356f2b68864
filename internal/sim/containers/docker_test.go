package containers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
)

func TestInstallingDockerBringsTheDaemonUp(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5")
	n.fails("docker version", 127, "docker: command not found")
	n.ok("DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io")
	if !n.Installed("containerd") || !n.Installed("runc") {
		t.Errorf("docker.io's dependencies are missing: %v", n.Packages())
	}
	if s := n.Service("docker"); !s.Active || !s.Enabled || !containers.Docker(n.Machine).Running() {
		t.Fatalf("docker.service %+v, daemon running %v", s, containers.Docker(n.Machine).Running())
	}
	if !containers.Containerd(n.Machine).Running() {
		t.Error("containerd is not running")
	}
	if got := n.ok("docker version --format '{{.Server.Version}}'"); got != "24.0.7\n" {
		t.Errorf("server version %q", got)
	}
	if got := n.ok("command -v dockerd containerd"); got != "/usr/sbin/dockerd\n/usr/bin/containerd\n" {
		t.Errorf("daemons at %q", got)
	}
	if got := n.ok("containerd --version"); got != "containerd github.com/containerd/containerd 1.7.12 \n" {
		t.Errorf("containerd --version %q", got)
	}

	// The socket is root's and the docker group's.
	r := n.run(false, "docker ps")
	if r.code != 1 || !strings.Contains(r.stderr, "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock") {
		t.Errorf("docker ps as ubuntu: %+v", r)
	}
	if !strings.Contains(n.ok("cat /etc/group"), "\ndocker:x:") {
		t.Error("no docker group")
	}

	n.ok("systemctl stop docker")
	n.fails("docker images", 1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
	n.fails("docker version --format '{{.Server.Version}}'", 1, "Is the docker daemon running?")
}

func TestLoadAndInspectImages(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5", "docker.io")
	n.write("/var/tmp/registry.tar", string(sampleTar(t)))

	r := n.fails("docker image inspect --format '{{.Id}}' registry:latest", 1, "")
	if r.stdout != "" || r.stderr != "Error: No such image: registry:latest\n" {
		t.Errorf("absent image: %+v", r)
	}
	if got := n.ok("docker load -i /var/tmp/registry.tar"); got != "Loaded image: registry:latest\n" {
		t.Errorf("docker load: %q", got)
	}
	for _, name := range []string{"registry", "registry:latest", "docker.io/library/registry:latest", "b9de31fcec10"} {
		if got := n.ok("docker image inspect --format '{{.Id}}' " + name); got != sampleID+"\n" {
			t.Errorf("image inspect %s: %q", name, got)
		}
	}
	var docs []struct {
		ID       string `json:"Id"`
		RepoTags []string
		Config   struct{ ExposedPorts map[string]any }
		RootFS   struct{ Layers []string }
	}
	if err := json.Unmarshal([]byte(n.ok("docker image inspect registry")), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("image inspect JSON: %v %v", docs, err)
	}
	if d := docs[0]; d.ID != sampleID || len(d.RepoTags) != 1 || d.RepoTags[0] != "registry:latest" || d.Config.ExposedPorts["5000/tcp"] == nil || len(d.RootFS.Layers) != 1 {
		t.Errorf("image inspect: %+v", d)
	}
	if img, ok := containers.Docker(n.Machine).Image("registry"); !ok || img.ID != sampleID || img.Source != "docker load" {
		t.Errorf("state: %+v %v", img, ok)
	}

	// From standard input, a second time: the same image, nothing renamed.
	if got := n.ok("docker load < /var/tmp/registry.tar"); got != "Loaded image: registry:latest\n" {
		t.Errorf("docker load from stdin: %q", got)
	}
	// A tag that pointed elsewhere is moved, as docker says.
	containers.Docker(n.Machine).AddImage("other:1")
	n.ok("docker tag other:1 registry:latest")
	if got := n.ok("docker load -i /var/tmp/registry.tar"); !strings.HasPrefix(got, "The image registry:latest already exists, renaming the old one with ID sha256:") {
		t.Errorf("reload over another image: %q", got)
	}

	n.fails("docker load -i /var/tmp/nosuch.tar", 1, "open /var/tmp/nosuch.tar: no such file or directory")
	n.write("/var/tmp/bad.tar", "not a tar at all, but long enough to be read as a header block by archive/tar? no")
	n.fails("docker load -i /var/tmp/bad.tar", 1, "Error response from daemon: ")
	n.ok("tar -cf /var/tmp/empty.tar /etc/hostname 2>/dev/null || cp /etc/hostname /var/tmp/empty.tar")
	n.fails("docker load -i /var/tmp/empty.tar", 1, "Error response from daemon: ")
	n.fails("docker load", 1, "requested load from stdin, but stdin is empty")

	// images and rmi.
	if got := n.ok("docker images --format '{{.Repository}}:{{.Tag}} {{.ID}}'"); !strings.Contains(got, "registry:latest b9de31fcec10\n") {
		t.Errorf("docker images: %q", got)
	}
	n.ok("docker rmi other:1")
	if _, ok := containers.Docker(n.Machine).Image("other:1"); ok {
		t.Error("other:1 survived docker rmi")
	}
	n.fails("docker rmi other:1", 1, "Error response from daemon: No such image: other:1")
}

// runRegistry starts the registry container as the registry steps do.
const runRegistry = "docker run -d -p 5000:5000 -v /var/lib/private-registry:/var/lib/registry --restart=always --name private_registry registry:latest"

func TestRegistryContainer(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5", "docker.io")
	n.write("/var/tmp/registry.tar", string(sampleTar(t)))
	n.ok("docker load -i /var/tmp/registry.tar")

	r := n.fails("docker inspect --type container private_registry", 1, "")
	if r.stdout != "[]\n" || r.stderr != "Error: No such container: private_registry\n" {
		t.Errorf("absent container: %+v", r)
	}
	if r := n.fails("docker inspect private_registry", 1, ""); r.stdout != "[]\n" || r.stderr != "Error: No such object: private_registry\n" {
		t.Errorf("absent object: %+v", r)
	}

	id := strings.TrimSpace(n.ok(runRegistry))
	if len(id) != 64 || !n.Server().FS().Exists("/var/lib/private-registry") {
		t.Fatalf("docker run printed %q; data directory created: %v", id, n.Server().FS().Exists("/var/lib/private-registry"))
	}
	var docs []struct {
		ID    string `json:"Id"`
		Name  string
		Image string
		State struct {
			Status  string
			Running bool
		}
		Config     struct{ Image string }
		HostConfig struct {
			PortBindings  map[string][]struct{ HostIP, HostPort string }
			RestartPolicy struct {
				Name              string
				MaximumRetryCount int
			}
			Binds []string
		}
		Mounts []struct{ Type, Source, Destination string }
	}
	if err := json.Unmarshal([]byte(n.ok("docker inspect --type container private_registry")), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("inspect: %v", err)
	}
	d := docs[0]
	pb := d.HostConfig.PortBindings["5000/tcp"]
	if d.ID != id || d.Name != "/private_registry" || d.Image != sampleID || d.Config.Image != "registry:latest" ||
		d.State.Status != "running" || !d.State.Running || len(pb) != 1 || pb[0].HostIP != "" || pb[0].HostPort != "5000" ||
		d.HostConfig.RestartPolicy.Name != "always" || len(d.HostConfig.Binds) != 1 || d.HostConfig.Binds[0] != "/var/lib/private-registry:/var/lib/registry" ||
		len(d.Mounts) != 1 || d.Mounts[0].Type != "bind" || d.Mounts[0].Destination != "/var/lib/registry" {
		t.Errorf("inspect: %+v", d)
	}
	if got := n.ok("docker inspect --format '{{.State.Status}} {{.State.Running}} {{.Name}}' private_registry"); got != "running true /private_registry\n" {
		t.Errorf("inspect --format: %q", got)
	}
	if got := n.ok("docker ps --filter name=private_registry --format '{{.Names}}'"); got != "private_registry\n" {
		t.Errorf("ps --filter: %q", got)
	}
	if v, ok := containers.RegistryAt(w.net, "10.0.0.5", 5000); !ok || v.TLS() || v.Auth() {
		t.Errorf("no plain registry at 10.0.0.5:5000: %v %v", v, ok)
	}

	// The name is taken.
	r = n.fails("docker run -d -p 5001:5000 --name private_registry registry:latest", 125,
		`docker: Error response from daemon: Conflict. The container name "/private_registry" is already in use by container "`+id+`". You have to remove (or rename) that container to be able to reuse that name.`)
	if !strings.Contains(r.stderr, "See 'docker run --help'.") {
		t.Errorf("no hint: %q", r.stderr)
	}

	// The port is taken by the registry: the new container is created,
	// not started.
	r = n.fails("docker run -d -p 5000:5000 --name second registry:latest", 125,
		"docker: Error response from daemon: driver failed programming external connectivity on endpoint second (")
	if !strings.Contains(r.stderr, "Bind for 0.0.0.0:5000 failed: port is already allocated.") {
		t.Errorf("port error: %q", r.stderr)
	}
	if c, ok := containers.Docker(n.Machine).Container("second"); !ok || c.Status != "created" {
		t.Errorf("second: %+v %v", c, ok)
	}
	n.ok("docker rm second")

	// A host process holds a port.
	containers.TakePort(n.Machine, 8080)
	n.fails("docker run -d -p 8080:5000 --name third registry:latest", 125, "Error starting userland proxy: listen tcp4 0.0.0.0:8080: bind: address already in use")

	// Restart policies across daemon restarts and reboots.
	n.ok("docker run -d --name plain registry:latest")
	n.ok("systemctl restart docker")
	status := func(name string) string {
		return strings.TrimSpace(n.ok("docker inspect -f '{{.State.Status}}' " + name))
	}
	if status("private_registry") != "running" || status("plain") != "exited" {
		t.Errorf("after a restart of docker: private_registry %s, plain %s", status("private_registry"), status("plain"))
	}
	n.ok("docker stop private_registry")
	if status("private_registry") != "exited" {
		t.Error("docker stop did not stop it")
	}
	if err := n.Reboot(); err != nil {
		t.Fatal(err)
	}
	if status("private_registry") != "running" {
		t.Error("a stopped --restart=always container did not come back at boot")
	}
	if _, ok := containers.RegistryAt(w.net, "10.0.0.5", 5000); !ok {
		t.Error("no registry after the reboot")
	}

	// A running container is removed only with -f.
	n.fails("docker rm private_registry", 1, "Error response from daemon: You cannot remove a running container "+id+". Stop the container before attempting removal or force remove")
	if got := n.ok("docker rm -f private_registry"); got != "private_registry\n" {
		t.Errorf("rm -f: %q", got)
	}
	n.fails("docker rm private_registry", 1, "Error response from daemon: No such container: private_registry")
	if _, ok := containers.RegistryAt(w.net, "10.0.0.5", 5000); ok {
		t.Error("a removed container still serves")
	}
	n.fails("docker start nosuch", 1, "Error: failed to start containers: nosuch")
	n.fails("docker run -d --restart=sometimes registry", 125, "invalid restart policy format")
	n.fails("docker run -d --frobnicate registry", 125, "unknown flag: --frobnicate")
}

func TestPushedImagesLiveInTheBoundDirectory(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5", "docker.io")
	n.write("/var/tmp/registry.tar", string(sampleTar(t)))
	n.ok("docker load -i /var/tmp/registry.tar")
	n.ok(runRegistry)

	containers.Docker(n.Machine).AddImage("app:1")
	n.ok("docker tag app:1 localhost:5000/app:1")
	out := n.ok("docker push localhost:5000/app:1")
	if !strings.HasPrefix(out, "The push refers to repository [localhost:5000/app]\n") || !strings.Contains(out, "1: digest: sha256:") {
		t.Errorf("push: %q", out)
	}
	link := n.ok("cat /var/lib/private-registry/docker/registry/v2/repositories/app/_manifests/tags/1/current/link")
	if !strings.HasPrefix(link, "sha256:") {
		t.Errorf("tag link %q", link)
	}
	if got := n.ok("docker image inspect -f '{{index .RepoDigests 0}}' localhost:5000/app:1"); got != "localhost:5000/app@"+link+"\n" {
		t.Errorf("RepoDigests %q, link %q", got, link)
	}

	// A new container on the same directory serves what the old one had.
	n.ok("docker rm -f private_registry")
	n.ok(runRegistry)
	v, ok := containers.RegistryAt(w.net, "10.0.0.5", 5000)
	if !ok || !v.Has("app:1") || strings.Join(v.Images(), " ") != "app:1" {
		t.Fatalf("after re-creation: %v %v", v, ok)
	}
	// Without a bind, an anonymous volume: gone for the next container.
	n.ok("docker rm -f private_registry")
	n.ok("docker run -d -p 5000:5000 --name anon registry:latest")
	n.ok("docker push localhost:5000/app:1")
	n.ok("docker rm -f -v anon")
	n.ok("docker run -d -p 5000:5000 --name anon registry:latest")
	if v, _ := containers.RegistryAt(w.net, "10.0.0.5", 5000); v.Has("app:1") {
		t.Error("an anonymous volume survived docker rm -v")
	}
	n.fails("docker push localhost:5000/nosuch:1", 1, "An image does not exist locally with the tag: localhost:5000/nosuch")
}

// registryVM is a VM running the registry container with app:1 pushed.
func registryVM(w *world, ip string) *node {
	w.t.Helper()
	n := w.node("registry", ip, "docker.io")
	n.write("/var/tmp/registry.tar", string(sampleTar(w.t)))
	n.ok("docker load -i /var/tmp/registry.tar")
	n.ok(runRegistry)
	n.ok("docker tag registry:latest localhost:5000/app:1 && docker push localhost:5000/app:1")
	return n
}

func TestPullFromAnHTTPRegistryNeedsInsecureRegistries(t *testing.T) {
	w := newWorld(t)
	reg := registryVM(w, "192.168.0.10")
	wk := w.node("worker", "192.168.0.11", "docker.io")
	const pull = "docker pull 192.168.0.10:5000/app:1"

	wk.fails(pull, 1, `Error response from daemon: Get "https://192.168.0.10:5000/v2/": http: server gave HTTP response to HTTPS client`)
	// Written but not loaded: dockerd reads it at start and on SIGHUP.
	wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["192.168.0.10:5000"]}`)
	wk.fails(pull, 1, "http: server gave HTTP response to HTTPS client")
	wk.ok("systemctl reload docker")
	if got := containers.Docker(wk.Machine).Config().InsecureRegistries; len(got) != 1 || got[0] != "192.168.0.10:5000" {
		t.Errorf("loaded insecure registries %v", got)
	}
	out := wk.ok(pull)
	want := "1: Pulling from app\n"
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "\nDigest: sha256:") || !strings.HasSuffix(out, "Status: Downloaded newer image for 192.168.0.10:5000/app:1\n192.168.0.10:5000/app:1\n") {
		t.Errorf("pull output %q", out)
	}
	if !strings.Contains(wk.ok(pull), "Status: Image is up to date for 192.168.0.10:5000/app:1\n") {
		t.Error("a second pull is not up to date")
	}
	if img, ok := containers.Docker(wk.Machine).Image("192.168.0.10:5000/app:1"); !ok || img.ID != sampleID || img.Source != "192.168.0.10:5000" {
		t.Errorf("pulled image %+v %v", img, ok)
	}
	wk.fails("docker pull 192.168.0.10:5000/app:2", 1, "Error response from daemon: manifest for 192.168.0.10:5000/app:2 not found: manifest unknown: manifest unknown")
	v, _ := containers.RegistryAt(w.net, "192.168.0.10", 5000)
	pulls := v.Pulls()
	if len(pulls) != 3 || pulls[0] != (containers.PullRecord{Host: "worker", Runtime: "docker", Image: "app:1", OK: true}) || pulls[2].OK {
		t.Errorf("pulls %+v", pulls)
	}

	// A CIDR works too; a bad file on reload keeps what was loaded; a bad
	// file on restart stops the daemon.
	wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["192.168.0.0/24"]}`)
	wk.ok("systemctl reload docker")
	wk.ok("docker pull 192.168.0.10:5000/app:1")
	wk.write("/etc/docker/daemon.json", `{"insecure-registries": [`)
	wk.ok("systemctl reload docker")
	if got := containers.Docker(wk.Machine).Config().InsecureRegistries; len(got) != 1 || got[0] != "192.168.0.0/24" {
		t.Errorf("a bad daemon.json changed the loaded config: %v", got)
	}
	wk.fails("systemctl restart docker", 1, "Job for docker.service failed")
	wk.fails("docker ps", 1, "Is the docker daemon running?")
	wk.write("/etc/docker/daemon.json", `{"insecure-registry": ["192.168.0.10:5000"]}`)
	wk.fails("systemctl restart docker", 1, "Job for docker.service failed")
	wk.write("/etc/docker/daemon.json", `{}`)
	wk.ok("systemctl restart docker")
	wk.fails(pull, 1, "http: server gave HTTP response to HTTPS client")

	// Nothing listens at another port or address.
	wk.fails("docker pull 192.168.0.10:5001/app:1", 1, `Get "https://192.168.0.10:5001/v2/": dial tcp 192.168.0.10:5001: connect: connection refused`)
	_ = reg
}

func TestNamesResolveOnlyThroughEtcHosts(t *testing.T) {
	w := newWorld(t)
	registryVM(w, "192.168.0.10")
	wk := w.node("worker", "192.168.0.11", "docker.io")
	const pull = "docker pull registry.local:5000/app:1"
	wk.fails(pull, 1, `Error response from daemon: Get "https://registry.local:5000/v2/": dial tcp: lookup registry.local on 127.0.0.53:53: no such host`)
	// For an insecure registry, dockerd reports its last try: HTTP.
	wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["registry.local:5000"]}`)
	wk.ok("systemctl restart docker")
	wk.fails(pull, 1, `Error response from daemon: Get "http://registry.local:5000/v2/": dial tcp: lookup registry.local on 127.0.0.53:53: no such host`)
	wk.ok("echo '192.168.0.10 registry.local' >> /etc/hosts")
	wk.ok(pull)
	// The network's address of a machine is not loopback, whatever the
	// simulation's address: only localhost is insecure by default.
	if got := wk.ok("docker info -f '{{json .RegistryConfig.InsecureRegistryCIDRs}}'"); got != `["127.0.0.0/8"]`+"\n" {
		t.Errorf("insecure CIDRs %q", got)
	}
}

func TestHTTPSRegistryNeedsItsCA(t *testing.T) {
	w := newWorld(t)
	ca := containers.GenerateCA("test CA")
	r := containers.NewRegistry(containers.RegistryOptions{TLS: true, CA: ca})
	r.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 443, r)
	wk := w.node("worker", "192.168.0.11", "docker.io")
	wk.ok("echo '192.168.0.20 registry.example.com' >> /etc/hosts")
	const pull = "docker pull registry.example.com/app:1"

	wk.fails(pull, 1, `Error response from daemon: Get "https://registry.example.com/v2/": tls: failed to verify certificate: x509: certificate signed by unknown authority`)
	wk.write("/etc/docker/certs.d/registry.example.com/ca.crt", string(containers.GenerateCA("another CA")))
	wk.fails(pull, 1, "x509: certificate signed by unknown authority")
	// certs.d is read on every pull: no reload.
	wk.write("/etc/docker/certs.d/registry.example.com/ca.crt", string(ca))
	wk.ok(pull)

	// insecure-registries accepts an unverified certificate too.
	wk2 := w.node("worker2", "192.168.0.12", "docker.io")
	wk2.ok("echo '192.168.0.20 registry.example.com' >> /etc/hosts")
	wk2.write("/etc/docker/daemon.json", `{"insecure-registries": ["registry.example.com"]}`)
	wk2.ok("systemctl reload docker")
	wk2.ok(pull)
	if got := len(r.Pulls()); got != 2 {
		t.Errorf("%d pulls reached the registry", got)
	}
}

func TestRegistryWithBasicAuth(t *testing.T) {
	w := newWorld(t)
	r := containers.NewRegistry(containers.RegistryOptions{Username: "user01", Password: "s3cret"})
	r.Push("app:1")
	w.net.AddRegistry("192.168.0.20", 5000, r)
	wk := w.node("worker", "192.168.0.11", "docker.io")
	wk.write("/etc/docker/daemon.json", `{"insecure-registries": ["192.168.0.20:5000"]}`)
	wk.ok("systemctl reload docker")
	const pull = "docker pull 192.168.0.20:5000/app:1"

	wk.fails(pull, 1, `Error response from daemon: Head "http://192.168.0.20:5000/v2/app/manifests/1": no basic auth credentials`)
	r0 := wk.root("docker login --username user01 --password-stdin 192.168.0.20:5000", "wrong\n")
	if r0.code != 1 || r0.stderr != "Error response from daemon: login attempt to http://192.168.0.20:5000/v2/ failed with status: 401 Unauthorized\n" {
		t.Errorf("wrong password: %+v", r0)
	}
	if wk.Server().FS().Exists("/root/.docker/config.json") {
		t.Error("a failed login wrote config.json")
	}
	r1 := wk.root("docker login --username user01 --password-stdin 192.168.0.20:5000", "s3cret\n")
	if r1.code != 0 || r1.stdout != "Login Succeeded\n" || !strings.HasPrefix(r1.stderr, "WARNING! Your password will be stored unencrypted in /root/.docker/config.json.") {
		t.Errorf("login: %+v", r1)
	}
	fi, err := wk.Server().FS().Stat("/root/.docker/config.json")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.json: %v %v", fi, err)
	}
	var cfg struct {
		Auths map[string]struct{ Auth string }
	}
	json.Unmarshal([]byte(wk.ok("cat /root/.docker/config.json")), &cfg)
	if cfg.Auths["192.168.0.20:5000"].Auth != "dXNlcjAxOnMzY3JldA==" {
		t.Errorf("config.json %+v", cfg)
	}
	wk.ok(pull)

	// Wrong stored credentials.
	wk.write("/root/.docker/config.json", `{"auths": {"192.168.0.20:5000": {"auth": "dXNlcjAxOndyb25n"}}}`)
	wk.fails(pull, 1, `Head "http://192.168.0.20:5000/v2/app/manifests/1": unauthorized: authentication required`)
	// --password works as well, with docker's warning.
	r2 := wk.root("docker login -u user01 --password s3cret 192.168.0.20:5000")
	if r2.code != 0 || !strings.HasPrefix(r2.stderr, "WARNING! Using --password via the CLI is insecure. Use --password-stdin.\n") {
		t.Errorf("login --password: %+v", r2)
	}
	wk.ok(pull)
	if got := wk.ok("docker logout 192.168.0.20:5000"); got != "Removing login credentials for 192.168.0.20:5000\n" {
		t.Errorf("logout: %q", got)
	}
	wk.fails(pull, 1, "no basic auth credentials")
	wk.fails("docker login --password-stdin 192.168.0.20:5000", 1, "Must provide --username with --password-stdin")
}

func TestDockerHub(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5", "docker.io")
	out := n.ok("docker pull registry")
	if !strings.HasPrefix(out, "latest: Pulling from library/registry\n") || !strings.HasSuffix(out, "Status: Downloaded newer image for registry:latest\ndocker.io/library/registry:latest\n") {
		t.Errorf("pull registry: %q", out)
	}
	n.ok("docker pull registry:2")
	if a, _ := containers.Docker(n.Machine).Image("registry:2"); a.ID == "" || a.Source != "docker.io" {
		t.Errorf("registry:2 %+v", a)
	}
	n.fails("docker pull nosuch/thing", 1, "pull access denied for nosuch/thing, repository does not exist or may require 'docker login'")
	n.fails("docker pull registry:nosuch", 1, "manifest for registry:nosuch not found: manifest unknown")

	w.net.SetInternet(false)
	n.fails("docker pull hello-world", 1, `Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 127.0.0.53:53: server misbehaving`)
	// A proxy reaches it; systemd sees a drop-in only after daemon-reload.
	n.write("/etc/systemd/system/docker.service.d/http-proxy.conf", "[Service]\nEnvironment=\"HTTPS_PROXY=http://proxy.example.com:3128\" \"NO_PROXY=localhost\"\n")
	n.ok("systemctl restart docker")
	n.fails("docker pull hello-world", 1, "server misbehaving")
	n.ok("systemctl daemon-reload && systemctl restart docker")
	if c := containers.Docker(n.Machine).Config(); c.HTTPSProxy != "http://proxy.example.com:3128" || c.NoProxy != "localhost" {
		t.Errorf("proxy config %+v", c)
	}
	n.ok("docker pull hello-world")
	// An EnvironmentFile= overrides Environment=; a missing one fails the
	// start unless it is marked optional with "-".
	n.write("/etc/docker/proxy.env", "# proxy\nHTTPS_PROXY=http://file.example.com:3128\n")
	n.write("/etc/systemd/system/docker.service.d/zz-env.conf", "[Service]\nEnvironmentFile=/etc/docker/proxy.env\nEnvironmentFile=-/etc/docker/optional.env\n")
	n.ok("systemctl daemon-reload && systemctl restart docker")
	if c := containers.Docker(n.Machine).Config(); c.HTTPSProxy != "http://file.example.com:3128" || c.NoProxy != "localhost" {
		t.Errorf("proxy config from the environment file %+v", c)
	}
	n.write("/etc/systemd/system/docker.service.d/zz-env.conf", "[Service]\nEnvironmentFile=/etc/docker/missing.env\n")
	n.fails("systemctl daemon-reload && systemctl restart docker", 1, "")
	n.write("/etc/systemd/system/docker.service.d/zz-env.conf", "[Service]\nEnvironmentFile=/etc/docker/proxy.env\n")
	n.write("/etc/docker/proxy.env", "HTTPS_PROXY=http://proxy.example.com:3128\n")
	n.ok("systemctl daemon-reload && systemctl restart docker")
	if got := n.ok("docker info"); !strings.Contains(got, " HTTPS Proxy: http://proxy.example.com:3128\n") || !strings.Contains(got, " Insecure Registries:\n  127.0.0.0/8\n") {
		t.Errorf("docker info:\n%s", got)
	}
	// run pulls what is missing.
	r := n.root("docker run --rm hello-world")
	if r.code != 0 || !strings.Contains(r.stdout, "Hello from Docker!") {
		t.Errorf("run hello-world: %+v", r)
	}
	r = n.root("docker run -d -p 5000:5000 registry:2.8")
	if r.code != 0 || !strings.Contains(r.stderr, "Unable to find image 'registry:2.8' locally") {
		t.Errorf("run pulling: %+v", r)
	}
}

// The simulated cloud's VMs have loopback addresses standing for real
// ones: Docker's 127.0.0.0/8 default does not make them insecure.
func TestAMachinesLoopbackAddressIsNotInsecure(t *testing.T) {
	w := newWorld(t)
	registryVM(w, "127.0.1.7")
	wk := w.node("worker", "127.0.1.8", "docker.io")
	wk.fails("docker pull 127.0.1.7:5000/app:1", 1, `Get "https://127.0.1.7:5000/v2/": http: server gave HTTP response to HTTPS client`)
	// Nothing listens on the worker's own loopback port 5000.
	wk.fails("docker pull 127.0.0.1:5000/app:1", 1, `Get "http://127.0.0.1:5000/v2/": dial tcp 127.0.0.1:5000: connect: connection refused`)
}

// Docker's own packages: docker-ce from its repository, with
// containerd.io, whose config.toml disables the CRI plugin.
func TestDockerCE(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5", "cri-tools")
	n.write("/etc/apt/sources.list.d/docker.list", "deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.gpg] https://download.docker.com/linux/ubuntu jammy stable\n")
	n.fails("apt-get install -y docker-ce", 100, "Unable to locate package docker-ce")
	n.ok("apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-ce")
	if !n.Installed("containerd.io") || !n.Installed("docker-ce-cli") || n.Installed("docker.io") {
		t.Errorf("packages %v", n.Packages())
	}
	if got := n.ok("dockerd --version; containerd --version; command -v dockerd"); got != "Docker version 24.0.7, build 311b9ff\ncontainerd containerd.io 1.7.12 71909c1814c544ac47ab91d2e8b84718e517bb99\n/usr/bin/dockerd\n" {
		t.Errorf("versions: %q", got)
	}
	n.ok("docker pull registry:2")
	if c := containers.Containerd(n.Machine).Config(); !c.CRIDisabled || !c.Exists {
		t.Errorf("containerd.io's config: %+v", c)
	}
	n.fails("crictl --runtime-endpoint unix:///run/containerd/containerd.sock images", 1, "unknown service runtime.v1.ImageService")
}

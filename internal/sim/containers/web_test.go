package containers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

const (
	k8sSource  = "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.36/deb/ /\n"
	releaseKey = "https://pkgs.k8s.io/core:/stable:/v1.36/deb/Release.key"
	getKey     = "curl -fsSL " + releaseKey + " | gpg --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg"
)

// withKubeadm puts a kubeadm package in the v1.36 repository of n's
// catalog, as internal/sim/kube's catalog does.
func withKubeadm(n *node) {
	n.Catalog().Add(ubuntu.Package{Name: "kubeadm", Version: "1.36.2-1.1", Repo: containers.KubernetesCoreRepo("1.36")})
}

// The documented way to install Kubernetes' apt repository works; apt
// refuses the repository until the keyring holds its key.
func TestKubernetesRepositoryKey(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5")
	withKubeadm(n)
	n.write("/etc/apt/sources.list.d/kubernetes.list", k8sSource)
	r := n.fails("apt-get update", 100, "NO_PUBKEY B00EB89D1452643D\nE: The repository 'https://pkgs.k8s.io/core:/stable:/v1.36/deb  InRelease' is not signed.\n")
	if !strings.Contains(r.stdout, "Err:5 https://pkgs.k8s.io/core:/stable:/v1.36/deb  InRelease\n") {
		t.Errorf("update's progress: %q", r.stdout)
	}
	n.fails("apt-get install -y kubeadm", 100, "E: Unable to locate package kubeadm")

	// The key as https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/install-kubeadm/ fetches it.
	n.ok(getKey)
	data, _ := n.Server().FS().ReadFile("/etc/apt/keyrings/kubernetes-apt-keyring.gpg")
	if bin, _ := ubuntu.Dearmor([]byte(containers.KubernetesReleaseKey)); string(data) != string(bin) {
		t.Errorf("the keyring holds %d bytes, not the dearmored key", len(data))
	}
	if out := n.ok("apt-get update"); !strings.Contains(out, "Hit:5 https://pkgs.k8s.io/core:/stable:/v1.36/deb  InRelease\n") {
		t.Errorf("update: %q", out)
	}
	n.ok("apt-get install -y kubeadm")
	// Every minor's key is there, the same key; a run that finds the
	// keyring there fails without --yes, as gpg does in batch mode.
	if out := n.ok("curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.35/deb/Release.key"); out != containers.KubernetesReleaseKey {
		t.Errorf("v1.35's key: %q", out)
	}
	n.fails("curl -fsSL "+releaseKey+" | gpg --batch --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg", 2, "gpg: dearmoring failed: File exists")
	// A wrong URL gives curl's 404 and nothing gpg accepts.
	n.fails("curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.36/Release.key", 22, "curl: (22) The requested URL returned error: 404")
	n.fails("curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.36/Release.key | gpg --dearmor -o /tmp/k.gpg", 2, "gpg: no valid OpenPGP data found.")
}

// proxied is a world whose machines reach the Internet only through a
// proxy at 10.0.0.100:3128 that wants proxyUser's credentials.
func proxied(t *testing.T) (*world, *containers.Proxy) {
	w := newWorld(t)
	w.net.SetDirectInternet(false)
	p := containers.NewProxy(containers.ProxyOptions{Username: "proxyuser", Password: proxyPW})
	w.net.AddProxy("10.0.0.100", 3128, p)
	return w, p
}

const (
	proxyPW  = "Pr0xy-s3cret"
	proxyURL = "http://proxyuser:" + proxyPW + "@10.0.0.100:3128"
)

// noPassword checks that the proxy's records never hold the password.
func noPassword(t *testing.T, p *containers.Proxy) {
	t.Helper()
	if s := fmt.Sprintf("%+v", p.Requests()); strings.Contains(s, proxyPW) {
		t.Errorf("the proxy kept the password: %s", s)
	}
}

func TestCurlThroughAProxy(t *testing.T) {
	w, p := proxied(t)
	n := w.node("vm", "10.0.0.5")
	n.fails("curl -fsSL "+releaseKey, 6, "curl: (6) Could not resolve host: pkgs.k8s.io")
	if out := n.ok("https_proxy=" + proxyURL + " curl -fsSL " + releaseKey); out != containers.KubernetesReleaseKey {
		t.Errorf("through the proxy: %q", out)
	}
	if out := n.ok("curl -fsSL --proxy " + proxyURL + " " + releaseKey); out != containers.KubernetesReleaseKey {
		t.Errorf("with --proxy: %q", out)
	}
	want := containers.ProxyRequest{Client: "vm", Method: "CONNECT", Target: "pkgs.k8s.io:443", User: "proxyuser", Status: 200}
	if got := p.Requests(); len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("the proxy saw %+v", got)
	}
	n.fails("https_proxy=http://proxyuser:wrong@10.0.0.100:3128 curl -fsSL "+releaseKey, 56, "curl: (56) Received HTTP code 407 from proxy after CONNECT")
	n.fails("curl -fsSL --proxy 10.0.0.100 "+releaseKey, 7, "curl: (7) Failed to connect to 10.0.0.100 port 1080 after 0 ms: Connection refused")
	n.fails("curl -fsSL --proxy http://proxy.corp:3128 "+releaseKey, 5, "curl: (5) Could not resolve proxy: proxy.corp")
	n.write("/etc/hosts", "127.0.0.1 localhost\n10.0.0.100 proxy.corp\n")
	if out := n.ok("curl -fsSL --proxy http://proxyuser:" + proxyPW + "@proxy.corp:3128 " + releaseKey); out != containers.KubernetesReleaseKey {
		t.Errorf("a proxy by name: %q", out)
	}
	// no_proxy sends the request direct, which cannot resolve the name
	// here; HTTP_PROXY in upper case is not curl's.
	n.fails("https_proxy="+proxyURL+" no_proxy=.k8s.io curl -fsSL "+releaseKey, 6, "Could not resolve host")
	n.fails("HTTP_PROXY="+proxyURL+" curl -fsSL http://pkgs.k8s.io/core:/stable:/v1.36/deb/Release.key", 6, "Could not resolve host")
	if out := n.ok("http_proxy=" + proxyURL + " curl -fsSL http://pkgs.k8s.io/core:/stable:/v1.36/deb/Release.key"); out != containers.KubernetesReleaseKey {
		t.Errorf("http through the proxy: %q", out)
	}
	// The proxy reaches the Internet only.
	registryVM(w, "10.0.0.7")
	n.fails("http_proxy="+proxyURL+" curl -fsS http://10.0.0.7:5000/v2/", 22, "curl: (22) The requested URL returned error: 503")
	if out := n.ok("http_proxy=" + proxyURL + " no_proxy=10.0.0.7 curl -fsS http://10.0.0.7:5000/v2/"); out != "{}" {
		t.Errorf("a private registry, direct: %q", out)
	}
	noPassword(t, p)
}

func TestAptThroughAProxy(t *testing.T) {
	w, p := proxied(t)
	n := w.node("vm", "10.0.0.5")
	withKubeadm(n)
	n.write("/etc/apt/sources.list.d/kubernetes.list", k8sSource)
	n.ok("https_proxy=" + proxyURL + " " + getKey)
	r := n.root("apt-get update")
	if r.code != 0 || !strings.Contains(r.stdout, "Err:5 https://pkgs.k8s.io/core:/stable:/v1.36/deb  InRelease\n  Temporary failure resolving 'pkgs.k8s.io'\n") ||
		!strings.Contains(r.stderr, "W: Some index files failed to download.") {
		t.Errorf("update without a proxy: %+v", r)
	}
	n.fails("apt-get install -y kubeadm", 100, "Unable to locate package kubeadm")

	// As the node steps configure it: /etc/apt/apt.conf.d/95mgmtkit-proxy.
	n.write("/etc/apt/apt.conf.d/95mgmtkit-proxy", `Acquire::http::Proxy "`+proxyURL+`";`+"\n"+`Acquire::https::Proxy "`+proxyURL+`";`+"\n")
	if r := n.root("apt-get update"); r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "Hit:5 https://pkgs.k8s.io/core:/stable:/v1.36/deb  InRelease\n") {
		t.Errorf("update through the proxy: %+v", r)
	}
	n.ok("apt-get install -y kubeadm")
	if !slices.ContainsFunc(p.Requests(), func(r containers.ProxyRequest) bool {
		return r.Method == "GET" && r.Target == "http://archive.ubuntu.com/ubuntu/dists/jammy/InRelease" && r.Status == 200
	}) {
		t.Errorf("the archive's GET is not in %+v", p.Requests())
	}
	// A wrong password: apt's message for a CONNECT the proxy refuses.
	n.write("/etc/apt/apt.conf.d/95mgmtkit-proxy", `Acquire::https::Proxy "http://proxyuser:wrong@10.0.0.100:3128";`+"\n")
	r = n.root("apt-get update")
	if !strings.Contains(r.stdout, "  Invalid response from proxy: HTTP/1.1 407 Proxy Authentication Required  Server: squid  Proxy-Authenticate: Basic realm=\"proxy\"  Content-Length: 0     [IP: 10.0.0.100 3128]\n") {
		t.Errorf("update with a wrong password: %+v", r)
	}
	noPassword(t, p)
}

func TestContainerdThroughAProxy(t *testing.T) {
	w, p := proxied(t)
	registryVM(w, "10.0.0.7")
	n := w.node("worker", "10.0.0.11", "containerd", "cri-tools")
	n.write("/etc/containerd/config.toml", configPath)
	n.write("/etc/containerd/certs.d/10.0.0.7:5000/hosts.toml", "server = \"http://10.0.0.7:5000\"\n")
	n.ok("systemctl restart containerd")
	pull := func(image string) error { return containers.KubeletPull(w.ctx, w.net, n.Machine, image) }
	if err := containers.ContainerdReaches(w.net, n.Machine, "registry.k8s.io"); err == nil || err.Error() != `failed to do request: Head "https://registry.k8s.io/v2/": dial tcp: lookup registry.k8s.io on 127.0.0.53:53: server misbehaving` {
		t.Errorf("registry.k8s.io without a proxy: %v", err)
	}

	// Docker Hub is not reachable without the proxy; the private registry is.
	if err := pull("registry:2"); err == nil || !strings.Contains(err.Error(), "server misbehaving") {
		t.Errorf("Docker Hub without a proxy: %v", err)
	}
	if err := pull("10.0.0.7:5000/app:1"); err != nil {
		t.Errorf("the private registry without a proxy: %v", err)
	}

	// The drop-in kubeadm's docs show, without the registry in NO_PROXY:
	// the registry's request goes to the proxy, which cannot reach it.
	dropIn := func(noProxy string) {
		n.write("/etc/systemd/system/containerd.service.d/http-proxy.conf",
			"[Service]\nEnvironment=\"HTTP_PROXY="+proxyURL+"\"\nEnvironment=\"HTTPS_PROXY="+proxyURL+"\"\nEnvironment=\"NO_PROXY="+noProxy+"\"\n")
		n.ok("systemctl daemon-reload && systemctl restart containerd")
	}
	dropIn("localhost,127.0.0.1")
	if c := containers.Containerd(n.Machine).Config(); c.HTTPSProxy != proxyURL || c.NoProxy != "localhost,127.0.0.1" {
		t.Errorf("containerd's proxy settings %+v", c)
	}
	if err := pull("registry:2"); err != nil {
		t.Errorf("Docker Hub through the proxy: %v", err)
	}
	if err := containers.ContainerdReaches(w.net, n.Machine, "registry.k8s.io"); err != nil {
		t.Errorf("registry.k8s.io through the proxy: %v", err)
	}
	err := pull("10.0.0.7:5000/app:1")
	if err == nil || !strings.Contains(err.Error(), `unexpected status from HEAD request to http://10.0.0.7:5000/v2/app/manifests/1: 503 Service Unavailable`) {
		t.Errorf("the private registry through the proxy: %v", err)
	}
	last := p.Requests()[len(p.Requests())-1]
	if last.Method != "GET" || last.Target != "http://10.0.0.7:5000/v2/" || last.Status != 503 || last.Client != "worker" {
		t.Errorf("the proxy's last request %+v", last)
	}
	// NO_PROXY by CIDR, as Go's httpproxy matches it; and by address.
	for _, np := range []string{"localhost,10.0.0.0/8", "10.0.0.7", "10.0.0.7:5000"} {
		dropIn(np)
		if err := pull("10.0.0.7:5000/app:1"); err != nil {
			t.Errorf("NO_PROXY=%s: %v", np, err)
		}
	}
	dropIn("10.0.0.7:443")
	if err := pull("10.0.0.7:5000/app:1"); err == nil {
		t.Error("NO_PROXY for another port bypassed the proxy")
	}
	// A registry named in /etc/hosts: NO_PROXY by domain suffix.
	n.write("/etc/hosts", "127.0.0.1 localhost\n10.0.0.7 registry.corp.example\n")
	n.write("/etc/containerd/certs.d/registry.corp.example:5000/hosts.toml", "server = \"http://registry.corp.example:5000\"\n")
	dropIn(".corp.example")
	if err := pull("registry.corp.example:5000/app:1"); err != nil {
		t.Errorf("NO_PROXY by domain: %v", err)
	}
	dropIn("example.org")
	if err := pull("registry.corp.example:5000/app:1"); err == nil {
		t.Error("a registry outside NO_PROXY's domains bypassed the proxy")
	}
	// A proxy address where nothing listens.
	n.write("/etc/systemd/system/containerd.service.d/http-proxy.conf", "[Service]\nEnvironment=\"HTTPS_PROXY=http://10.0.0.99:3128\"\n")
	n.ok("systemctl daemon-reload && systemctl restart containerd")
	if err := pull("registry:2"); err == nil || !strings.Contains(err.Error(), "proxyconnect tcp: dial tcp 10.0.0.99:3128: connect: connection refused") {
		t.Errorf("Docker Hub through a missing proxy: %v", err)
	}
	n.write("/etc/systemd/system/containerd.service.d/http-proxy.conf", "[Service]\nEnvironment=\"HTTPS_PROXY=http://proxy.nowhere:3128\"\n")
	n.ok("systemctl daemon-reload && systemctl restart containerd")
	if err := pull("registry:2"); err == nil || !strings.Contains(err.Error(), "proxyconnect tcp: dial tcp: lookup proxy.nowhere on 127.0.0.53:53: no such host") {
		t.Errorf("Docker Hub through a proxy whose name does not resolve: %v", err)
	}
	noPassword(t, p)
}

// dockerd honours its unit's proxy environment the same way.
func TestDockerThroughAProxy(t *testing.T) {
	w, p := proxied(t)
	n := w.node("vm", "10.0.0.5", "docker.io")
	n.fails("docker pull hello-world", 1, "server misbehaving")
	n.write("/etc/systemd/system/docker.service.d/http-proxy.conf", "[Service]\nEnvironment=\"HTTPS_PROXY="+proxyURL+"\" \"NO_PROXY=localhost\"\n")
	n.ok("systemctl daemon-reload && systemctl restart docker")
	n.ok("docker pull hello-world")
	if got := p.Requests(); len(got) != 1 || got[0].Target != "registry-1.docker.io:443" || got[0].Status != 200 {
		t.Errorf("the proxy saw %+v", got)
	}
	noPassword(t, p)
}

// CRI-O too reads its unit's proxy environment.
func TestCRIOThroughAProxy(t *testing.T) {
	w, p := proxied(t)
	n := w.node("worker", "10.0.0.11", "cri-o", "cri-tools")
	n.fails("crictl pull registry:2", 1, "server misbehaving")
	n.write("/etc/systemd/system/crio.service.d/http-proxy.conf", "[Service]\nEnvironment=\"HTTPS_PROXY="+proxyURL+"\"\n")
	n.ok("systemctl daemon-reload && systemctl restart crio")
	n.ok("crictl pull registry:2")
	if got := p.Requests(); len(got) != 1 || got[0].Target != "registry-1.docker.io:443" || got[0].Client != "worker" {
		t.Errorf("the proxy saw %+v", got)
	}
}

// raw.githubusercontent.com serves Calico's manifest of the pinned release
// at the address Calico's docs give, and 404 for another release or file.
func TestCalicoManifest(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5")
	url := containers.CalicoManifestURL(containers.CalicoVersion)
	if out := n.ok("curl -fsSL " + url); out != string(containers.CalicoManifest()) {
		t.Errorf("curl %s: %d bytes, not the manifest", url, len(out))
	}
	if !strings.Contains(string(containers.CalicoManifest()), "image: quay.io/calico/node:"+containers.CalicoVersion+"\n") {
		t.Error("the manifest's calico-node is not of the release it is served as")
	}
	n.fails("curl -fsSL "+containers.CalicoManifestURL("v3.0.99"), 22, "curl: (22) The requested URL returned error: 404")
	n.fails("curl -fsSL https://raw.githubusercontent.com/projectcalico/calico/"+containers.CalicoVersion+"/manifests/flannel.yaml", 22, "curl: (22) The requested URL returned error: 404")
}

// pkgs.k8s.io serves each repository's package index from the catalog:
// the versions the catalog publishes there; a repository the catalog
// does not have is a 404.
func TestKubernetesPackagesIndex(t *testing.T) {
	w := newWorld(t)
	n := w.node("vm", "10.0.0.5")
	withKubeadm(n)
	out := n.ok("curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.36/deb/Packages")
	for _, want := range []string{
		"Package: kubeadm\nVersion: 1.36.2-1.1\nArchitecture: amd64\n",
		"Package: kubeadm\nVersion: 1.36.2-1.1\nArchitecture: arm64\n",
		"Filename: amd64/kubeadm_1.36.2-1.1_amd64.deb\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the v1.36 index lacks %q:\n%s", want, out)
		}
	}
	if out := n.ok("curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.35/deb/Packages"); strings.Contains(out, "kubeadm") {
		t.Errorf("the v1.35 index has v1.36's kubeadm:\n%s", out)
	}
	n.fails("curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.99/deb/Packages", 22, "curl: (22) The requested URL returned error: 404")
}

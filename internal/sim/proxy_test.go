package sim_test

import (
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/samples"
)

// A cloud whose only way out is a proxy: curl and apt-get on its hosts
// reach pkgs.k8s.io through it once told to, and the proxy records who
// asked, without the password.
func TestCloudBehindAProxy(t *testing.T) {
	w := newWorld(t)
	if sim.Start(t, sim.Options{ProxyOnly: true}).DirectInternet() {
		t.Error("Options.ProxyOnly left the Internet direct")
	}
	w.cloud.SetDirectInternet(false)
	p := w.cloud.AddProxy("10.10.0.1", 3128, containers.ProxyOptions{Username: "vnfm", Password: "proxy-Pw-1"})
	if w.cloud.Proxy("10.10.0.1", 3128) != p || w.cloud.DirectInternet() {
		t.Fatal("the proxy is not at its address, or the Internet is direct")
	}
	v := w.build(samples.InstantiateCIRCluster, sim.ClusterShape{Masters: 1, Workers: 1, Packages: []string{"containerd", "cri-tools"}})
	master := v.HostsWithRole(lcm.RoleMaster)[0]
	h := w.connect(master.Node())
	run := func(script string) (remote.Output, error) {
		return h.Run(w.ctx, remote.Cmd{Args: []string{"bash", "-c", script}, Sudo: true})
	}
	const key = "https://pkgs.k8s.io/core:/stable:/v1.36/deb/Release.key"
	if _, err := run("curl -fsSL " + key); err == nil || !strings.Contains(err.Error(), "Could not resolve host: pkgs.k8s.io") {
		t.Errorf("curl without the proxy: %v", err)
	}
	const proxy = "http://vnfm:proxy-Pw-1@10.10.0.1:3128"
	if _, err := run("curl -fsSL --proxy " + proxy + " " + key + " | gpg --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg"); err != nil {
		t.Fatalf("the key through the proxy: %v", err)
	}
	if _, err := run("echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.36/deb/ /' > /etc/apt/sources.list.d/kubernetes.list && " +
		`printf 'Acquire::http::Proxy "%s";\nAcquire::https::Proxy "%s";\n' ` + proxy + " " + proxy + " > /etc/apt/apt.conf.d/95mgmtkit-proxy"); err != nil {
		t.Fatal(err)
	}
	out, err := run("apt-get update")
	if err != nil || !strings.Contains(string(out.Stdout), "Hit:5 https://pkgs.k8s.io/core:/stable:/v1.36/deb  InRelease") || len(out.Stderr) != 0 {
		t.Errorf("apt-get update through the proxy: %v\n%s%s", err, out.Stdout, out.Stderr)
	}
	reqs := p.Requests()
	if len(reqs) != 6 || reqs[0].Client != master.SSH.Hostname() || reqs[0].Target != "pkgs.k8s.io:443" || reqs[0].User != "vnfm" {
		t.Errorf("the proxy saw %+v", reqs)
	}
	for _, r := range reqs {
		if r.Status != 200 {
			t.Errorf("refused: %+v", r)
		}
	}
	// The proxy does not reach the cloud's own addresses.
	worker := v.HostsWithRole(lcm.RoleWorker)[0]
	if _, err := run("curl -fsS --proxy " + proxy + " http://" + worker.NICAddress + ":5000/v2/"); err == nil || !strings.Contains(err.Error(), "returned error: 503") {
		t.Errorf("a private address through the proxy: %v", err)
	}

	// A private registry outside the proxy: containerd reaches it only
	// when NO_PROXY names it.
	reg := containers.NewRegistry(containers.RegistryOptions{})
	reg.Push("app:1")
	w.cloud.AddExternalRegistry("192.168.0.20", 5000, reg)
	setup := `mkdir -p /etc/containerd/certs.d/192.168.0.20:5000 /etc/systemd/system/containerd.service.d && ` +
		`printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n' > /etc/containerd/config.toml && ` +
		`printf 'server = "http://192.168.0.20:5000"\n' > /etc/containerd/certs.d/192.168.0.20:5000/hosts.toml`
	if _, err := run(setup); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		noProxy string
		ok      bool
	}{{"localhost,127.0.0.1", false}, {"localhost,192.168.0.0/16", true}} {
		dropIn := `printf '[Service]\nEnvironment="HTTP_PROXY=` + proxy + `" "HTTPS_PROXY=` + proxy + `" "NO_PROXY=` + c.noProxy + `"\n' > /etc/systemd/system/containerd.service.d/http-proxy.conf && systemctl daemon-reload && systemctl restart containerd`
		if _, err := run(dropIn); err != nil {
			t.Fatal(err)
		}
		err := containers.KubeletPull(w.ctx, w.cloud, master.Machine, "192.168.0.20:5000/app:1")
		if c.ok != (err == nil) || !c.ok && !strings.Contains(err.Error(), "503 Service Unavailable") {
			t.Errorf("NO_PROXY=%s: pull: %v", c.noProxy, err)
		}
	}
	if err := containers.KubeletPull(w.ctx, w.cloud, master.Machine, "registry:2"); err != nil {
		t.Errorf("Docker Hub through the proxy: %v", err)
	}
}

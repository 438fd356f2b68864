package system_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/golden"
	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// kubernetesRepo is pkgs.k8s.io's 1.36 repository as a deb822 source.
func kubernetesRepo(file string) system.AptRepositoryOptions {
	uri := containers.KubernetesCoreRepo("1.36")
	return system.AptRepositoryOptions{
		SourcesFile: file, URI: uri, Suite: "/",
		Keyring: system.AptKeyringsDir + "/kubernetes-apt-keyring.gpg", KeyURL: uri + "Release.key",
		Comment: "Kubernetes 1.36 packages.",
	}
}

// The repository step in the simulated cloud, whose apt checks a
// source's signed-by keyring against the repository's key (apt-secure(8))
// and reads deb822 .sources files: the key and the file are written once,
// apt-get update runs only then, and InstallPackages, skipping its own
// update, installs from the repository and holds an unpinned package
// named in Hold.
func TestAddAptRepositoryAndHold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cloud := sim.Start(t, sim.Options{Catalog: func() *ubuntu.Catalog {
		c := ubuntu.DefaultCatalog()
		c.Add(ubuntu.Package{Name: "kubectl", Version: "1.36.3-1.1", Repo: containers.KubernetesCoreRepo("1.36")})
		return c
	}})
	host, h, err := cloud.SampleNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cmds := func() []string {
		var out []string
		for _, e := range host.SSH.Transcript() {
			out = append(out, e.Command)
		}
		return out
	}
	opts := kubernetesRepo(system.AptSourcesDir + "/kubernetes.sources")
	before := len(cmds())
	res, err := system.AddAptRepository(ctx, h, opts)
	if err != nil || !res.Changed {
		t.Fatalf("%v, %v", res, err)
	}
	if ran := cmds()[before:]; count(ran, "apt-get update") != 1 {
		t.Errorf("apt-get update ran %d times: %q", count(ran, "apt-get update"), ran)
	}
	if got, _ := host.FS().ReadFile(opts.SourcesFile); string(got) != string(system.AptSources(opts)) {
		t.Errorf("%s:\n%s", opts.SourcesFile, got)
	}
	if key, _ := host.FS().ReadFile(opts.Keyring); len(key) == 0 || strings.Contains(string(key), "BEGIN PGP") {
		t.Errorf("keyring not dearmored: %q", key)
	}
	before = len(cmds())
	if res, err := system.AddAptRepository(ctx, h, opts); err != nil || res.Changed || len(cmds())-before != 1 {
		t.Errorf("converged: %v, %v, %q", res, err, cmds()[before:])
	}
	before = len(cmds())
	res, err = system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{"kubectl"}, Hold: []string{"kubectl"}, SkipUpdate: true})
	if err != nil || !res.Changed || host.Machine.Version("kubectl") != "1.36.3-1.1" || !host.Machine.Held("kubectl") {
		t.Fatalf("%v, %v, kubectl %q held %v", res, err, host.Machine.Version("kubectl"), host.Machine.Held("kubectl"))
	}
	if ran := cmds()[before:]; count(ran, "apt-get update") != 0 {
		t.Errorf("apt-get update ran despite SkipUpdate: %q", ran)
	}
	before = len(cmds())
	if res, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{"kubectl"}, Hold: []string{"kubectl"}}); err != nil || res.Changed || len(cmds())-before != 1 {
		t.Errorf("held and installed: %v, %v, %q", res, err, cmds()[before:])
	}

	// Bad options: nothing runs.
	for _, tc := range []struct {
		edit func(*system.AptRepositoryOptions)
		want string
	}{
		{func(o *system.AptRepositoryOptions) { o.SourcesFile = "/etc/apt/sources.list" }, "SourcesFile: "},
		{func(o *system.AptRepositoryOptions) { o.SourcesFile = system.AptSourcesDir + "/k8s.txt" }, "SourcesFile: "},
		{func(o *system.AptRepositoryOptions) { o.URI = "https://pkgs.k8s.io/ main" }, "URI: "},
		{func(o *system.AptRepositoryOptions) { o.Components = []string{"main"} }, "Components: "},
		{func(o *system.AptRepositoryOptions) { o.Suite = "jammy" }, "Components: at least one"},
		{func(o *system.AptRepositoryOptions) { o.Keyring = "/etc/apt/keyrings/k 8s.gpg" }, "Keyring: "},
		{func(o *system.AptRepositoryOptions) { o.KeyURL = "ftp://x/Release.key" }, "KeyURL: "},
		{func(o *system.AptRepositoryOptions) { o.Proxy = &system.Proxy{} }, "Proxy.HTTPProxy: "},
	} {
		o := kubernetesRepo(system.AptSourcesDir + "/kubernetes.sources")
		tc.edit(&o)
		before := len(cmds())
		_, err := system.AddAptRepository(ctx, h, o)
		paramsError(t, err, tc.want)
		if len(cmds()) != before {
			t.Errorf("%s: commands ran", tc.want)
		}
	}
	_, err = system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{"kubectl"}, Hold: []string{"kubeadm"}})
	paramsError(t, err, `Hold[0]: "kubeadm" is not a package of Packages`)
}

// TestGoldenHostRenderings pins every file the host steps render: the
// proxy's environment file and apt configuration, the hosts block in
// /etc/hosts and in cloud-init's template, and a repository's sources
// file in both formats.
//
//	go test ./system -run TestGoldenHostRenderings -update
func TestGoldenHostRenderings(t *testing.T) {
	proxy := &system.Proxy{
		HTTPProxy:  remote.NewSecret("http://user:pa;ss@proxy.example.com:3128"),
		HTTPSProxy: remote.NewSecret("http://user:pa;ss@proxy.example.com:3128"),
		NoProxy:    "localhost,127.0.0.1,::1,10.0.0.0/24,registry.example.com,.example.com",
	}
	golden.Assert(t, "proxy-env", proxy.EnvFile())
	golden.Assert(t, "apt-proxy-conf", proxy.AptConf())
	files, _ := system.ProxyUnitFiles("containerd", proxy)
	golden.Assert(t, "proxy-drop-in", []byte(files[system.UnitDir+"/containerd.service.d/mgmtkit-proxy.conf"]))

	opts := system.HostsOptions{Block: "mgmtkit-k8s", Entries: []system.HostsEntry{
		{IP: "fd00::5", Names: []string{"master-fd00--5"}},
		{IP: "10.0.0.12", Names: []string{"worker-10-0-0-12"}},
		{IP: "10.0.0.5", Names: []string{"master-10-0-0-5", "k8s-api.example.com"}},
	}}
	current := map[string][]byte{
		system.HostsFile:          []byte("127.0.0.1 localhost\n127.0.1.1 node-1\n"),
		system.CloudHostsTemplate: []byte(ubuntu.HostsDebianTmpl),
	}
	writes, err := system.PlanHostsBlock(current, opts)
	if err != nil || len(writes) != 2 {
		t.Fatalf("%d writes, %v", len(writes), err)
	}
	for _, w := range writes {
		name := map[string]string{system.HostsFile: "hosts", system.CloudHostsTemplate: "hosts.debian.tmpl"}[w.Path]
		golden.Assert(t, name, w.Content)
	}
	golden.Assert(t, "kubernetes.list", system.AptSources(kubernetesRepo(system.AptSourcesDir+"/kubernetes.list")))
	golden.Assert(t, "kubernetes.sources", system.AptSources(kubernetesRepo(system.AptSourcesDir+"/kubernetes.sources")))
	archive := system.AptRepositoryOptions{SourcesFile: system.AptSourcesDir + "/example.sources", URI: "http://archive.example.com/ubuntu/",
		Suite: "jammy", Components: []string{"main", "universe"}, Keyring: system.AptKeyringsDir + "/example.gpg", KeyURL: "https://archive.example.com/key.asc"}
	golden.Assert(t, "example.sources", system.AptSources(archive))
}

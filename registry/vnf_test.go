package registry_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/samples"
)

func samplePackage(t testing.TB) *lcm.Package {
	t.Helper()
	return lcm.NewPackage(samples.VNFPackage())
}

func sampleRequest(t testing.TB, name string) *lcm.InstantiateVnfRequest {
	t.Helper()
	b, err := samples.Request(name)
	if err != nil {
		t.Fatal(err)
	}
	var req lcm.InstantiateVnfRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// registryVNF is the registry VNF of the CIR spec in the simulated cloud,
// built from a request, with its driver and a log of its events.
type registryVNF struct {
	t      *testing.T
	ctx    context.Context
	cloud  *sim.Cloud
	vnf    *sim.VNF
	req    *lcm.InstantiateVnfRequest
	pkg    *lcm.Package
	driver *registry.VNFDriver
	log    *bytes.Buffer
}

func newRegistryVNF(t *testing.T, req *lcm.InstantiateVnfRequest) *registryVNF {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	log := &bytes.Buffer{}
	ctx = lcm.WithLogger(ctx, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	cloud := sim.Start(t, sim.Options{})
	p, err := registry.DecodeInstallParams(req.AdditionalParams, samplePackage(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := cloud.Build(sim.RegistryVNF(p, req.AdditionalParams))
	if err != nil {
		t.Fatal(err)
	}
	r := &registryVNF{t: t, ctx: ctx, cloud: cloud, vnf: v, req: req, pkg: samplePackage(t), log: log}
	r.driver = &registry.VNFDriver{Plumbing: plumbing.Config{SSH: cloud.SSHConfigFunc(slog.New(slog.NewTextHandler(log, nil)))}}
	return r
}

func (r *registryVNF) host() *sim.Host { return r.vnf.HostsWithRole(lcm.RoleRegistry)[0] }

func (r *registryVNF) instantiate() (*lcm.HookResult, error) {
	return lcm.Invoke(r.ctx, r.driver, lcm.InstantiateEnd, &lcm.InstantiateOp{Instance: r.vnf.Instance(), Request: r.req, Package: r.pkg})
}

func (r *registryVNF) heal() (*lcm.HookResult, error) {
	inst := r.vnf.Instance()
	vnfc := inst.InstantiatedVnfInfo.VnfcResourceInfo[0].ID
	if _, err := r.vnf.Heal(r.host().ServerID, sim.HealOptions{}); err != nil {
		r.t.Fatal(err)
	}
	return lcm.Invoke(r.ctx, r.driver, lcm.HealEnd, &lcm.HealOp{Instance: r.vnf.Instance(), Request: &lcm.HealVnfRequest{VnfcInstanceID: []string{vnfc}}, Package: r.pkg})
}

// assertServing checks the outcome: Docker runs the registry container
// from the sample image on the port, and it answers on the VM's address.
func (r *registryVNF) assertServing(port int) {
	r.t.Helper()
	h := r.host()
	if !h.Machine.Installed("docker.io") {
		r.t.Fatal("docker.io is not installed")
	}
	d := containers.Docker(h.Machine)
	c, ok := d.Container(registry.ContainerName)
	if !ok || c.Status != "running" || !c.Registry || c.Restart != "always" {
		r.t.Fatalf("container %s: %+v", registry.ContainerName, c)
	}
	if _, ok := containers.RegistryAt(r.cloud, h.NICAddress, port); !ok {
		r.t.Errorf("no registry answers at %s:%d", h.NICAddress, port)
	}
}

func TestRegistryVNFInstantiateIsIdempotent(t *testing.T) {
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	res, err := r.instantiate()
	if err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, r.log)
	}
	if !res.Changed() {
		t.Error("the first run reports no change")
	}
	r.assertServing(registry.DefaultPort)
	h := r.host()
	if img, _ := containers.Docker(h.Machine).Image("registry:latest"); !strings.HasPrefix(img.ID, "sha256:b9de31fcec10") {
		t.Errorf("registry:latest is %+v, want the image of the package's tar", img)
	}
	before := h.Machine.Service("docker")
	calls := len(h.SSH.Transcript())

	res, err = r.instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() {
		t.Errorf("the second run changed something: %+v", res.Steps)
	}
	after := h.Machine.Service("docker")
	if after.Restarts != before.Restarts || after.Starts != before.Starts || after.Reloads != before.Reloads {
		t.Errorf("the second run touched docker: %+v → %+v", before, after)
	}
	for _, e := range h.SSH.Transcript()[calls:] {
		for _, verb := range []string{"docker load", "docker run", "docker rm", "apt-get install", "systemctl restart", " mv "} {
			if strings.Contains(e.Command, verb) {
				t.Errorf("the second run ran %q", e.Command)
			}
		}
	}
}

func TestRegistryVNFHealRecreatesTheRegistry(t *testing.T) {
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	if _, err := r.instantiate(); err != nil {
		t.Fatal(err)
	}
	old := r.host()
	res, err := r.heal()
	if err != nil {
		t.Fatalf("heal_end: %v\n%s", err, r.log)
	}
	if r.host() == old || !res.Changed() {
		t.Fatal("heal_end did not act on a new VM")
	}
	r.assertServing(registry.DefaultPort)
}

func TestRegistryVNFPullsTheImageWithoutImagePath(t *testing.T) {
	req := sampleRequest(t, "instantiate_cir_registry.json")
	req.AdditionalParams = json.RawMessage(`{"private_registry_installation_param": {"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "ubuntu", "port_no": "5050"}}`)
	r := newRegistryVNF(t, req)
	if _, err := r.instantiate(); err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, r.log)
	}
	r.assertServing(5050)
}

func TestRegistryVNFPortInUse(t *testing.T) {
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	containers.TakePort(r.host().Machine, registry.DefaultPort)
	_, err := r.instantiate()
	if !errors.Is(err, registry.ErrPortInUse) || !strings.Contains(err.Error(), "5000") {
		t.Fatalf("err = %v, want ErrPortInUse naming port 5000", err)
	}
}

func TestRegistryVNFBadInputRunsNothing(t *testing.T) {
	for _, params := range []string{
		`{"private_registry_installation_param": {"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "ubuntu", "image_path": "Files/images/missing.tar"}}`,
		`{"private_registry_installation_param": {"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "ubuntu", "port_no": 0.5}}`,
		`{"private_registry_installation_param": {"ssh_cp_name": "CP1", "ssh_username": "ubuntu"}}`,
	} {
		req := sampleRequest(t, "instantiate_cir_registry.json")
		req.AdditionalParams = json.RawMessage(params)
		r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
		r.req = req
		_, err := r.instantiate()
		var pe *lcm.ParamsError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a *lcm.ParamsError", params, err)
		}
		if n := len(r.host().SSH.Transcript()); n != 0 {
			t.Errorf("%s: %d commands ran", params, n)
		}
	}
}

// withManifest returns the sample image tar with manifest.json replaced.
func withManifest(t *testing.T, manifest string) []byte {
	t.Helper()
	b, err := fs.ReadFile(samples.VNFPackage(), "Files/images/private_registry.tar")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(b)), tar.NewWriter(&out)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if hdr.Name == "manifest.json" {
			data = []byte(manifest)
			hdr.Size = int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestRegistryVNFBadImageRunsNothing: an image archive whose manifest
// would break a step (a tag docker takes as an option, a config digest
// too short for the staging name) is a field error at image_path before
// the driver even dials the VM.
func TestRegistryVNFBadImageRunsNothing(t *testing.T) {
	const sample = `[{"Config": "b9de31fcec104ad0dafdf36628113f648ad068c5316abf1b70fc078bda0706ef.json", "RepoTags": ["registry:latest"], "Layers": ["a06ba05beb7fa02af4b75c642c7ae0d082dccd9a66321ce664dfc926ca3af684/layer.tar"]}]`
	good := withManifest(t, sample)
	for _, tt := range []struct{ name, tar, want string }{
		{"an option as the tag", string(withManifest(t, strings.Replace(sample, "registry:latest", "--privileged", 1))),
			`.image_path: docker save archive: manifest.json: RepoTags[0] "--privileged": invalid reference format`},
		{"a short config digest", string(withManifest(t, strings.Replace(sample, "b9de31fcec104ad0dafdf36628113f648ad068c5316abf1b70fc078bda0706ef.json", "b9de31.json", 1))),
			`.image_path: docker save archive: manifest.json: Config "b9de31.json"`},
		{"a truncated archive", string(good[:len(good)/2+100]), `.image_path: docker save archive: not a tar archive, or a truncated one`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
			r.pkg = lcm.NewPackage(fstest.MapFS{"Files/images/private_registry.tar": {Data: []byte(tt.tar)}})
			_, err := r.instantiate()
			var pe *lcm.ParamsError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), registry.InstallParamKey+tt.want) {
				t.Errorf("err = %v\nwant a *lcm.ParamsError with %q", err, registry.InstallParamKey+tt.want)
			}
			h := r.host()
			if n := len(h.SSH.Transcript()); n != 0 || h.SSH.Dials() != 0 {
				t.Errorf("%d commands ran over %d connections", n, h.SSH.Dials())
			}
		})
	}
	// The rewritten sample itself installs: the failures above are the
	// manifests'.
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	r.pkg = lcm.NewPackage(fstest.MapFS{"Files/images/private_registry.tar": {Data: good}})
	if _, err := r.instantiate(); err != nil {
		t.Fatalf("instantiate_end with the rewritten sample: %v\n%s", err, r.log)
	}
	r.assertServing(registry.DefaultPort)
}

func TestRegistryVNFReplacesAContainerThatDiffers(t *testing.T) {
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	if _, err := r.instantiate(); err != nil {
		t.Fatal(err)
	}
	first, _ := containers.Docker(r.host().Machine).Container(registry.ContainerName)
	req := *r.req
	req.AdditionalParams = json.RawMessage(strings.Replace(string(r.req.AdditionalParams), `"image_path"`, `"port_no": 5001, "image_path"`, 1))
	r.req = &req
	res, err := r.instantiate()
	if err != nil {
		t.Fatalf("instantiate_end with port_no 5001: %v\n%s", err, r.log)
	}
	if !res.Changed() {
		t.Error("changing the port changed nothing")
	}
	second, _ := containers.Docker(r.host().Machine).Container(registry.ContainerName)
	if second.ID == first.ID {
		t.Error("the container was not replaced")
	}
	r.assertServing(5001)
	if _, ok := containers.RegistryAt(r.cloud, r.host().NICAddress, registry.DefaultPort); ok {
		t.Error("the old port still serves a registry")
	}
}

func TestRegistryVNFProxy(t *testing.T) {
	const proxyPW = "Pr0xy-Pa55"
	req := sampleRequest(t, "instantiate_cir_registry.json")
	req.AdditionalParams = json.RawMessage(`{"private_registry_installation_param": {"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "ubuntu",
		"proxy": {"http_proxy": "http://user1:` + proxyPW + `@proxy.example.com:3128", "https_proxy": "http://user1:` + proxyPW + `@proxy.example.com:3128", "no_proxy": "localhost,127.0.0.1"}}}`)
	r := newRegistryVNF(t, req)
	if _, err := r.instantiate(); err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, r.log)
	}
	h := r.host()
	fi, err := h.FS().Stat(registry.ProxyEnvFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("environment file: %v, %v; want mode 0600", fi, err)
	}
	// No Environment= in a unit: systemd shows those to every user over
	// D-Bus (systemctl show -p Environment), whatever the file's mode.
	if dropIn, err := h.FS().ReadFile(registry.ProxyDropIn); err != nil || strings.Contains(string(dropIn), proxyPW) {
		t.Errorf("drop-in %q, %v: want one that names the environment file only", dropIn, err)
	}
	cfg := containers.Docker(h.Machine).Config()
	if cfg.HTTPProxy != "http://user1:"+proxyPW+"@proxy.example.com:3128" || cfg.NoProxy != "localhost,127.0.0.1" {
		t.Errorf("Docker runs with proxy %q / %q", cfg.HTTPProxy, cfg.NoProxy)
	}
	restarts := h.Machine.Service("docker").Restarts
	if _, err := r.instantiate(); err != nil {
		t.Fatal(err)
	}
	if got := h.Machine.Service("docker").Restarts; got != restarts {
		t.Errorf("the second run restarted docker (%d → %d)", restarts, got)
	}
	for _, e := range h.SSH.Transcript() {
		if strings.Contains(e.Command, proxyPW) {
			t.Errorf("a command shows the proxy password: %q", e.Command)
		}
	}
	for _, c := range h.SSH.Calls() {
		if strings.Contains(strings.Join(c.Args, " "), proxyPW) {
			t.Errorf("argv shows the proxy password: %q", c.Args)
		}
	}
	if strings.Contains(r.log.String(), proxyPW) {
		t.Error("the log shows the proxy password")
	}
	// Without the proxy, the drop-in goes and Docker restarts once.
	req2 := *req
	req2.AdditionalParams = json.RawMessage(`{"private_registry_installation_param": {"ssh_cp_name": "CP1", "ssh_username": "ubuntu", "ssh_password": "ubuntu"}}`)
	r.req = &req2
	if _, err := r.instantiate(); err != nil {
		t.Fatal(err)
	}
	if h.FS().Exists(registry.ProxyDropIn) || h.FS().Exists(registry.ProxyEnvFile) || containers.Docker(h.Machine).Config().HTTPProxy != "" {
		t.Error("the proxy drop-in is still in effect")
	}
}

func TestRegistryVNFRidesOutABootingVM(t *testing.T) {
	r := newRegistryVNF(t, sampleRequest(t, "instantiate_cir_registry.json"))
	h := r.host()
	h.SSH.RefuseDials(3)          // sshd not up yet
	h.Machine.HoldDpkgLock(2)     // unattended-upgrades holds the dpkg lock after boot
	h.SSH.DropConnectionDuring(1) // and the network blips once
	if _, err := r.instantiate(); err != nil {
		t.Fatalf("instantiate_end: %v\n%s", err, r.log)
	}
	r.assertServing(registry.DefaultPort)
	if h.SSH.Dials() < 4 {
		t.Errorf("%d dials, want the 3 refused ones and more", h.SSH.Dials())
	}
}

package ubuntu

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSignedRepositoryOnTheRealAptGet checks the fake's signature errors
// against the real apt-get and gpg of this machine: a flat repository
// whose InRelease a fresh key signs, served on loopback, updated in an apt
// root of the test's own (-o Dir=...). The fake's NO_PUBKEY key ID
// (KeyID) and its W: and E: lines are the real ones. Skipped without
// apt-get, gpg or root.
func TestSignedRepositoryOnTheRealAptGet(t *testing.T) {
	aptGet, err1 := exec.LookPath("apt-get")
	gpg, err2 := exec.LookPath("gpg")
	if err1 != nil || err2 != nil || os.Geteuid() != 0 {
		t.Skip("needs apt-get, gpg and root")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, name string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home, "LC_ALL=C")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatalf("%s: %v", name, err)
		}
		return out.String(), errb.String(), code
	}
	if _, stderr, code := run("", gpg, "--batch", "--passphrase", "", "--quick-gen-key", "Sim Test <sim@example.com>", "ed25519", "sign", "0"); code != 0 {
		t.Fatalf("gpg --quick-gen-key: %s", stderr)
	}
	armored, _, _ := run("", gpg, "--armor", "--export")
	release := "Origin: sim\nLabel: sim\nArchitectures: amd64\nDate: Mon, 23 Nov 2026 12:00:00 UTC\nSHA256:\n e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 Packages\n"
	inRelease, stderr, code := run(release, gpg, "--batch", "--clearsign", "-o", "-")
	if code != 0 {
		t.Fatalf("gpg --clearsign: %s", stderr)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/repo/InRelease":
			w.Write([]byte(inRelease))
		case "/repo/Packages":
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	repo := srv.URL + "/repo/"

	root := filepath.Join(dir, "root")
	for _, d := range []string{"var/lib/dpkg", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/apt.conf.d", "etc/apt/trusted.gpg.d", "etc/apt/keyrings"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status := filepath.Join(root, "var/lib/dpkg/status")
	os.WriteFile(status, nil, 0o644)
	keyring := filepath.Join(root, "etc/apt/keyrings/sim.gpg")
	os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte("deb [signed-by="+keyring+"] "+repo+" /\n"), 0o644)
	realUpdate := func() (string, int) {
		t.Helper()
		_, stderr, code := run("", aptGet, "-o", "Dir="+root, "-o", "Dir::State::status="+status, "-o", "APT::Sandbox::User=root",
			"-o", "Dir::Etc::trusted="+filepath.Join(root, "etc/apt/trusted.gpg"), "-o", "Dir::Etc::trustedparts="+filepath.Join(root, "etc/apt/trusted.gpg.d"),
			"-o", "Acquire::Retries=0", "update")
		return stderr, code
	}

	// The fake, with the same key and repository.
	c := DefaultCatalog()
	c.AddRepository(Repository{URI: repo, Key: armored})
	v := newVM(t, Options{Catalog: c})
	fakeKeyring := "/etc/apt/keyrings/sim.gpg"
	v.Server().FS().WriteFile("/etc/apt/sources.list", []byte("deb [signed-by="+fakeKeyring+"] "+repo+" /\n"), 0o644)
	v.Server().FS().WriteFile("/tmp/Release.key", []byte(armored), 0o644)

	// No keyring.
	realErr, realCode := realUpdate()
	fake := v.root("apt-get update")
	if realCode != 100 || fake.code != realCode || fake.stderr != realErr {
		t.Errorf("without the key:\nreal apt-get: exit %d\n%s\nfake: exit %d\n%s", realCode, realErr, fake.code, fake.stderr)
	}
	bin, _ := Dearmor([]byte(armored))
	if !strings.Contains(realErr, "NO_PUBKEY "+KeyID(bin)+"\n") {
		t.Errorf("the real apt-get names another key than %s:\n%s", KeyID(bin), realErr)
	}

	// The dearmored key: both update.
	dearmored, _, _ := run(armored, gpg, "--dearmor")
	os.WriteFile(keyring, []byte(dearmored), 0o644)
	v.mustOK("gpg --dearmor -o " + fakeKeyring + " < /tmp/Release.key")
	realErr, realCode = realUpdate()
	fake = v.root("apt-get update")
	if realCode != 0 || realErr != "" || fake.code != 0 || fake.stderr != "" {
		t.Errorf("with the key:\nreal apt-get: exit %d\n%s\nfake: exit %d\n%s", realCode, realErr, fake.code, fake.stderr)
	}
	if got, _ := v.Server().FS().ReadFile(fakeKeyring); string(got) != dearmored {
		t.Error("the fake gpg's keyring differs from the real one's")
	}
}

// TestPackagesIndexOnTheRealApt has this machine's apt-get read the
// index PackagesIndex renders, as a flat file: repository ("deb
// [trusted=yes] file:DIR /") in an apt root of the test's own, and
// apt-cache madison list every version of every package of the
// repository, and none of another. Skipped without apt-get and
// apt-cache.
func TestPackagesIndexOnTheRealApt(t *testing.T) {
	aptGet, err1 := exec.LookPath("apt-get")
	aptCache, err2 := exec.LookPath("apt-cache")
	if err1 != nil || err2 != nil {
		t.Skip("needs apt-get and apt-cache")
	}
	c := &Catalog{}
	c.AddRepository(Repository{URI: k8sRepo, Key: testKey})
	for _, v := range []string{"1.36.0-1.1", "1.36.2-1.1", "1.36.10-1.1"} {
		c.Add(Package{Name: "kubeadm", Version: v, Repo: strings.TrimSuffix(k8sRepo, "/"), Depends: []string{"cri-tools"}, Description: "Command-line utility for administering a Kubernetes cluster"})
		c.Add(Package{Name: "kubectl", Version: v, Repo: k8sRepo})
	}
	c.Add(Package{Name: "kubeadm", Version: "1.35.0-1.1", Repo: "https://pkgs.k8s.io/core:/stable:/v1.35/deb/"})
	c.Add(Package{Name: "curl", Version: "7.81.0-1ubuntu1.16"})
	index, ok := c.PackagesIndex(k8sRepo)
	if !ok {
		t.Fatal("no index of a repository the catalog has")
	}
	if _, ok := c.PackagesIndex("https://pkgs.k8s.io/core:/stable:/v1.99/deb/"); ok {
		t.Error("an index of a repository the catalog does not have")
	}

	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	root := filepath.Join(dir, "root")
	for _, d := range []string{repo, root + "/var/lib/dpkg", root + "/var/lib/apt/lists/partial", root + "/var/cache/apt/archives/partial", root + "/etc/apt/sources.list.d", root + "/etc/apt/preferences.d", root + "/etc/apt/apt.conf.d"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status := filepath.Join(root, "var/lib/dpkg/status")
	for name, data := range map[string]string{
		filepath.Join(repo, "Packages"): string(index),
		status:                          "",
		filepath.Join(root, "etc/apt/sources.list"): "deb [trusted=yes] file:" + repo + " /\n",
	} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := []string{"-o", "Dir=" + root, "-o", "Dir::State::status=" + status, "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root",
		"-o", "APT::Architecture=amd64", "-o", "APT::Architectures::=amd64", "-o", "APT::Architectures::=arm64"}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, append(slices.Clone(opts), args...)...)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run(aptGet, "update"); strings.Contains(out, "W:") || strings.Contains(out, "E:") {
		t.Errorf("apt-get update:\n%s", out)
	}
	for pkg, want := range map[string][]string{
		"kubeadm":       {"1.36.10-1.1", "1.36.2-1.1", "1.36.0-1.1"},
		"kubectl":       {"1.36.10-1.1", "1.36.2-1.1", "1.36.0-1.1"},
		"kubectl:arm64": {"1.36.10-1.1", "1.36.2-1.1", "1.36.0-1.1"},
		"curl":          nil,
	} {
		var got []string
		for line := range strings.Lines(run(aptCache, "madison", pkg)) {
			if f := strings.Split(line, "|"); len(f) == 3 {
				got = append(got, strings.TrimSpace(f[1]))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("apt-cache madison %s: %q, want %q", pkg, got, want)
		}
	}
	if out := run(aptCache, "show", "kubeadm=1.36.2-1.1"); !strings.Contains(out, "Depends: cri-tools\n") || !strings.Contains(out, "Filename: amd64/kubeadm_1.36.2-1.1_amd64.deb\n") {
		t.Errorf("apt-cache show kubeadm=1.36.2-1.1:\n%s", out)
	}
}

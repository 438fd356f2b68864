package ubuntu

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

const k8sRepo = "https://pkgs.k8s.io/core:/stable:/v1.36/deb/"

// signedVM is a machine whose catalog has kubeadm in a signed
// pkgs.k8s.io-like repository, with the armored key in /tmp/Release.key.
func signedVM(t *testing.T) (*vm, *Catalog) {
	t.Helper()
	c := DefaultCatalog()
	c.Add(Package{Name: "kubeadm", Version: "1.36.2-1.1", Repo: k8sRepo})
	c.AddRepository(Repository{URI: k8sRepo, Key: testKey})
	v := newVM(t, Options{Catalog: c, UpdatedLists: true})
	if err := v.Server().FS().WriteFile("/tmp/Release.key", []byte(testKey), 0o644); err != nil {
		t.Fatal(err)
	}
	// One archive source instead of the image's four, for short
	// expectations.
	if err := v.Server().FS().WriteFile("/etc/apt/sources.list", []byte("deb http://archive.ubuntu.com/ubuntu jammy main restricted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return v, c
}

func TestAptSignedRepository(t *testing.T) {
	v, _ := signedVM(t)
	v.mustOK("echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] " + k8sRepo + " /' > /etc/apt/sources.list.d/kubernetes.list")

	// No keyring: apt 2.4's NO_PUBKEY, the repository is not used.
	const shown = "https://pkgs.k8s.io/core:/stable:/v1.36/deb "
	noKey := "The following signatures couldn't be verified because the public key is not available: NO_PUBKEY " + testKeyID
	want(t, "update without the key", v.root("apt-get update"),
		"Hit:1 http://archive.ubuntu.com/ubuntu jammy InRelease\nGet:2 "+shown+" InRelease [1186 B]\nErr:2 "+shown+" InRelease\n  "+noKey+"\nReading package lists...\n",
		"W: GPG error: "+shown+" InRelease: "+noKey+"\n"+
			"E: The repository '"+shown+" InRelease' is not signed.\n", 100)
	want(t, "install without the key", v.root("apt-get install -y kubeadm"), "Reading package lists...\nBuilding dependency tree...\nReading state information...\n", "E: Unable to locate package kubeadm\n", 100)

	// The armored key where a binary keyring belongs: ignored.
	v.mustOK("cp /tmp/Release.key /etc/apt/keyrings/kubernetes-apt-keyring.gpg")
	wantCode(t, "armored .gpg", v.root("apt-get update"), 100, "", "W: "+strings.TrimSuffix(k8sRepo, "/")+"/InRelease: The key(s) in the keyring /etc/apt/keyrings/kubernetes-apt-keyring.gpg are ignored as the file has an unsupported filetype.\n")

	// The dearmored key: the repository's lists are fetched.
	v.mustOK("gpg --batch --yes --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg < /tmp/Release.key")
	want(t, "update with the key", v.root("apt-get update"), "Hit:1 http://archive.ubuntu.com/ubuntu jammy InRelease\nHit:2 "+shown+" InRelease\nReading package lists...\n", "", 0)
	wantCode(t, "install", v.root("apt-get install -y kubeadm"), 0, "Setting up kubeadm (1.36.2-1.1) ...", "")

	// An armored key in an .asc file is accepted (apt >= 1.4), and so is a
	// trusted.gpg.d keyring for a source without signed-by.
	v.mustOK("rm /etc/apt/keyrings/kubernetes-apt-keyring.gpg && cp /tmp/Release.key /etc/apt/keyrings/k8s.asc")
	v.mustOK("echo 'deb [signed-by=/etc/apt/keyrings/k8s.asc] " + k8sRepo + " /' > /etc/apt/sources.list.d/kubernetes.list")
	wantCode(t, "asc", v.root("apt-get update"), 0, "Hit:2 "+shown+" InRelease", "")
	v.mustOK("echo 'deb " + k8sRepo + " /' > /etc/apt/sources.list.d/kubernetes.list")
	wantCode(t, "no signed-by, no trusted key", v.root("apt-get update"), 100, "", "NO_PUBKEY "+testKeyID)
	v.mustOK("gpg --dearmor -o /etc/apt/trusted.gpg.d/kubernetes.gpg < /tmp/Release.key")
	wantCode(t, "trusted.gpg.d", v.root("apt-get update"), 0, "Hit:2 "+shown+" InRelease", "")

	// deb822 Signed-By.
	v.mustOK("rm /etc/apt/trusted.gpg.d/kubernetes.gpg /etc/apt/sources.list.d/kubernetes.list")
	v.mustOK("printf 'Types: deb\\nURIs: " + k8sRepo + "\\nSuites: /\\nSigned-By: /etc/apt/keyrings/k8s.asc\\n' > /etc/apt/sources.list.d/kubernetes.sources")
	wantCode(t, "deb822 Signed-By", v.root("apt-get update"), 0, "Hit:2 "+shown+" InRelease", "")
}

// fetchLog is a fake AptTransport that records what apt fetched, through
// which proxy, and fails for the hosts in down.
type fetchLog struct {
	mu   sync.Mutex
	got  []string
	down map[string]string
}

func (f *fetchLog) transport(_ context.Context, _ *Machine, rawURL, proxy string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, rawURL+" via "+proxy)
	for h, why := range f.down {
		if strings.Contains(rawURL, h) {
			return errors.New(why)
		}
	}
	return nil
}

func (f *fetchLog) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.got
	f.got = nil
	return got
}

func TestAptTransportAndProxy(t *testing.T) {
	v, c := signedVM(t)
	f := &fetchLog{down: map[string]string{}}
	c.SetTransport(f.transport)
	v.mustOK("gpg --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg < /tmp/Release.key")
	v.mustOK("echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] " + k8sRepo + " /' > /etc/apt/sources.list.d/kubernetes.list")
	v.mustOK("apt-get update")
	if got := strings.Join(f.take(), "\n"); got != "http://archive.ubuntu.com/ubuntu/dists/jammy/InRelease via \nhttps://pkgs.k8s.io/core:/stable:/v1.36/deb/InRelease via " {
		t.Errorf("fetched without proxy:\n%s", got)
	}

	// Acquire::http::Proxy in apt.conf.d serves http and, unless
	// Acquire::https::Proxy is set, https; a per-host DIRECT bypasses it.
	v.mustOK(`printf 'Acquire::http::Proxy "http://user:pw@10.9.0.1:3128";\n' > /etc/apt/apt.conf.d/95proxy`)
	v.mustOK("apt-get update")
	if got := strings.Join(f.take(), "\n"); got != "http://archive.ubuntu.com/ubuntu/dists/jammy/InRelease via http://user:pw@10.9.0.1:3128\nhttps://pkgs.k8s.io/core:/stable:/v1.36/deb/InRelease via http://user:pw@10.9.0.1:3128" {
		t.Errorf("fetched through the http proxy:\n%s", got)
	}
	v.mustOK(`printf 'Acquire {\n  https { Proxy "http://10.9.0.2:3128"; };\n  http::Proxy::archive.ubuntu.com "DIRECT"; // the mirror is near\n};\n' > /etc/apt/apt.conf.d/96proxy`)
	v.mustOK("apt-get update")
	if got := strings.Join(f.take(), "\n"); got != "http://archive.ubuntu.com/ubuntu/dists/jammy/InRelease via \nhttps://pkgs.k8s.io/core:/stable:/v1.36/deb/InRelease via http://10.9.0.2:3128" {
		t.Errorf("fetched with nested settings:\n%s", got)
	}
	// -o on the command line wins.
	v.mustOK("apt-get -o Acquire::https::Proxy=http://10.9.0.3:8080 update")
	if got := f.take(); len(got) != 2 || got[1] != "https://pkgs.k8s.io/core:/stable:/v1.36/deb/InRelease via http://10.9.0.3:8080" {
		t.Errorf("fetched with -o: %q", got)
	}
	// The environment, when apt.conf sets nothing; no_proxy bypasses it.
	v.mustOK("rm /etc/apt/apt.conf.d/95proxy /etc/apt/apt.conf.d/96proxy")
	v.mustOK("https_proxy=http://10.9.0.4:3128 http_proxy=http://10.9.0.4:3128 no_proxy=ubuntu.com apt-get update")
	if got := strings.Join(f.take(), "\n"); got != "http://archive.ubuntu.com/ubuntu/dists/jammy/InRelease via \nhttps://pkgs.k8s.io/core:/stable:/v1.36/deb/InRelease via http://10.9.0.4:3128" {
		t.Errorf("fetched with the environment:\n%s", got)
	}

	// A repository apt cannot reach: a warning, exit 0, and the lists of
	// the last update still used.
	f.down["pkgs.k8s.io"] = "Could not resolve 'pkgs.k8s.io'"
	want(t, "unreachable", v.root("apt-get update"),
		"Hit:1 http://archive.ubuntu.com/ubuntu jammy InRelease\nErr:2 https://pkgs.k8s.io/core:/stable:/v1.36/deb  InRelease\n  Could not resolve 'pkgs.k8s.io'\nReading package lists...\n",
		"W: Failed to fetch https://pkgs.k8s.io/core:/stable:/v1.36/deb/InRelease  Could not resolve 'pkgs.k8s.io'\n"+
			"W: Some index files failed to download. They have been ignored, or old ones used instead.\n", 0)
	wantCode(t, "old lists", v.root("apt-cache policy kubeadm"), 0, "Candidate: 1.36.2-1.1", "")
	// A fresh machine that never reached it has no candidate.
	v2, c2 := signedVM(t)
	c2.SetTransport(f.transport)
	v2.mustOK("gpg --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg < /tmp/Release.key")
	v2.mustOK("echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] " + k8sRepo + " /' > /etc/apt/sources.list.d/kubernetes.list")
	wantCode(t, "fresh unreachable", v2.root("apt-get update"), 0, "Err:2", "W: Failed to fetch")
	wantCode(t, "nothing to install", v2.root("apt-get install -y kubeadm"), 100, "", "E: Unable to locate package kubeadm")
}

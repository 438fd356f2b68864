package realtest

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// TestRegistryTrust runs ConfigureRegistryTrust over a real sshd against
// this machine and pulls through the real containerd's CRI image service
// from real registries, as the kubelet does.
func TestRegistryTrust(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.checkNoSecrets(t) })
	// Started first: it takes a while to answer, and its turn comes last.
	dockerd, err := e.startDockerd(t)
	if err != nil {
		t.Logf("dockerd does not run here: %v", err)
	}

	t.Run("containerd", func(t *testing.T) {
		e.freshNode(t, e.origConfig)
		res := e.mustTrust(t, system.Containerd)
		if !res.Changed {
			t.Fatalf("first run on a fresh node reports unchanged: %s", res.Detail)
		}
		t.Logf("first run: %s", res.Detail)
		t.Run("pulls", e.checkPulls)
		t.Run("cloud_init_renders_the_hosts_block", e.checkHostsTemplate)

		t.Run("second_run_unchanged", func(t *testing.T) {
			pid := e.containerd.pid()
			res := e.mustTrust(t, system.Containerd)
			if res.Changed {
				t.Errorf("second run reports a change: %s", res.Detail)
			}
			if now := e.containerd.pid(); now != pid {
				t.Errorf("containerd restarted by the second run: pid %d, was %d", now, pid)
			}
		})

		t.Run("without_mgmtkit_files_pulls_fail", func(t *testing.T) {
			restore := e.moveAside(t)
			e.removeImages(t)
			for _, r := range e.registries() {
				if ref, err := e.kubelet.pull(context.Background(), r.image()); err == nil {
					t.Errorf("CRI PullImage %s succeeded without mgmtkit's files (%s): the pull checks prove nothing", r.image(), ref)
				} else {
					t.Logf("without mgmtkit's files, %s: %v", r.image(), err)
				}
			}
			restore()
			e.checkPulls(t)
		})

		// The CA and the name alone do not get the private image: the
		// credentials the kubelet reads from mgmtkit's config.json do.
		t.Run("without_kubelet_credentials_private_pull_fails", func(t *testing.T) {
			aside := registry.KubeletAuthFile + ".aside"
			if err := os.Rename(registry.KubeletAuthFile, aside); err != nil {
				t.Fatal(err)
			}
			defer os.Rename(aside, registry.KubeletAuthFile)
			if err := e.kubelet.remove(context.Background(), e.private.image()); err != nil {
				t.Fatal(err)
			}
			if _, err := e.kubelet.pull(context.Background(), e.private.image()); err == nil {
				t.Errorf("CRI PullImage %s succeeded without credentials", e.private.image())
			} else if !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "nauthorized") {
				t.Errorf("CRI PullImage %s without credentials: %v, want an authorization failure", e.private.image(), err)
			}
		})
	})

	// Bug 1 of issue #9: containerd 2.x's own default config_path lists two
	// directories, which containerd 1.6 splits with filepath.SplitList
	// (pkg/cri/server/image_pull.go, registryHosts). mgmtkit writes the
	// hosts.toml files under the first directory and, for 2.x's transfer
	// service (containerd#12808), under the whole list as one directory:
	// the real 1.6 must pull through the first copy alone.
	t.Run("containerd_config_path_list_bug1", func(t *testing.T) {
		const literal = "/etc/containerd/certs.d:/etc/docker/certs.d"
		e.freshNode(t, []byte(`version = 2

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "`+literal+`"
`))
		e.mustTrust(t, system.Containerd)
		if err := os.Rename(literal, literal+".aside"); err != nil {
			t.Fatalf("the copy under the whole list: %v", err)
		}
		defer os.Rename(literal+".aside", literal)
		e.checkPulls(t)
	})

	// Bug 4 of issue #9: a legacy registry.configs entry holding only
	// credentials, which containerd accepts beside config_path (only
	// mirrors and configs.<host>.tls are refused).
	t.Run("containerd_credentials_only_legacy_config_bug4", func(t *testing.T) {
		e.freshNode(t, []byte(`version = 2

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"

[plugins."io.containerd.grpc.v1.cri".registry.configs."`+e.private.server()+`".auth]
  username = "`+e.private.user+`"
  password = "legacy-password-not-used"
`))
		e.mustTrust(t, system.Containerd)
		e.checkPulls(t)
	})

	t.Run("docker", func(t *testing.T) { testDocker(t, e, dockerd) })
}

// moveAside moves mgmtkit's files out of the way (the hosts.toml
// directories, the /etc/hosts block, the kubelet's config.json) and
// returns the function that puts them back.
func (e *env) moveAside(t *testing.T) (restore func()) {
	t.Helper()
	// Renamed within their directories: the overlays are file systems of
	// their own.
	moved := [][2]string{
		{registry.ContainerdCertsDir, registry.ContainerdCertsDir + ".aside"},
		{registry.KubeletAuthFile, registry.KubeletAuthFile + ".aside"},
	}
	for _, m := range moved {
		if err := os.Rename(m[0], m[1]); err != nil {
			t.Fatalf("moving mgmtkit's file aside: %v", err)
		}
	}
	hosts, err := os.ReadFile(registry.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := remote.ReplaceBlock(hosts, registry.HostsBlock, nil)
	if err != nil || bytes.Equal(stripped, hosts) {
		t.Fatalf("no managed block in %s (%v):\n%s", registry.HostsFile, err, hosts)
	}
	writeFile(t, registry.HostsFile, stripped, 0o644)
	return func() {
		for _, m := range moved {
			if err := os.Rename(m[1], m[0]); err != nil {
				t.Fatalf("restoring mgmtkit's file: %v", err)
			}
		}
		writeFile(t, registry.HostsFile, hosts, 0o644)
	}
}

package realtest

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/registry"
	"github.com/mgmtkit/mgmtkit/system"
)

// dockerdProgram is Debian's dockerd (docker.io 20.10 in Debian 12), in
// /usr/sbin, which a non-root user's PATH lacks on Debian.
const dockerdProgram = "/usr/sbin/dockerd"

// dockerSocket is dockerd's default socket, in the private /run.
const dockerSocket = "/run/docker.sock"

// startDockerd runs the real dockerd without touching the machine's
// network (--iptables=false --bridge=none), its data and exec roots under
// the test's directory, reading the node's /etc/docker/daemon.json, and
// registers it as the unit "docker" (reload: SIGHUP). It returns nil
// and the reason when dockerd cannot run here.
func (e *env) startDockerd(t *testing.T) (*daemon, error) {
	t.Helper()
	need(t, "/usr/bin/docker")
	d := &daemon{
		name: "dockerd", path: need(t, dockerdProgram),
		args: []string{"--iptables=false", "--bridge=none", "--ip-masq=false",
			"--data-root", filepath.Join(base, "docker", "root"), "--exec-root", filepath.Join(base, "docker", "exec"),
			"--pidfile", filepath.Join(base, "docker", "docker.pid"), "--host", "unix://" + dockerSocket},
		log:   filepath.Join(e.dir, "dockerd.log"),
		ready: dockerPing,
	}
	t.Cleanup(d.stop)
	if err := d.start(); err != nil {
		return nil, err
	}
	setUnit("docker", hupDaemon{d})
	t.Cleanup(func() { setUnit("docker", nil) })
	return d, nil
}

// dockerPing asks dockerd's API for GET /_ping.
func dockerPing(ctx context.Context) error {
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", dockerSocket)
	}}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// docker runs the real docker CLI as root (HOME=/root, whose
// .docker/config.json holds what mgmtkit's `docker login` stored).
func docker(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/docker", args...)
	cmd.Env = append(os.Environ(), "HOME=/root", "DOCKER_HOST=unix://"+dockerSocket)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// testDocker configures a node running dockerd and
// containerd, then pulls with the real docker CLI.
func testDocker(t *testing.T, e *env, d *daemon) {
	if d == nil {
		t.Skip("dockerd does not run here, so the Docker checks are skipped")
	}
	e.freshNode(t, e.origConfig)
	// dockerd resolves names with Go's resolver, which answers from the
	// /etc/hosts it read up to 5 s before (Go's net/hosts.go,
	// cacheMaxAge): make it read the file now, before mgmtkit adds the
	// registry names, as a node's dockerd that just pulled something
	// would. mgmtkit's `docker login` must wait the stale cache out.
	if out, err := docker(t, "pull", e.private.image()); err == nil || !strings.Contains(out, "lookup "+e.private.host) {
		t.Fatalf("docker pull %s before trust: %v: %s, want a failed lookup of %s", e.private.image(), err, out, e.private.host)
	}

	// Bug 2 of issue #9: detection as the login user must find dockerd
	// in /usr/sbin, which Debian's login PATH lacks; the runs below rely
	// on it.
	t.Run("detected_as_login_user_bug2", func(t *testing.T) {
		rts, err := system.DetectRuntimes(context.Background(), e.host)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []system.Runtime{system.Docker, system.Containerd} {
			if !slices.Contains(rts, want) {
				t.Errorf("DetectRuntimes = %q, missing %q", rts, want)
			}
		}
	})

	pid := d.pid()
	res := e.mustTrust(t) // the runtimes DetectRuntimes finds
	t.Logf("first run: %s", res.Detail)
	if !slices.Contains(systemctlCalls(), "try-reload-or-restart docker") {
		t.Errorf("docker was not reloaded; systemctl calls: %q", systemctlCalls())
	}
	if now := d.pid(); now != pid {
		t.Errorf("dockerd restarted (pid %d, was %d): a reload is a SIGHUP", now, pid)
	}

	for _, c := range []struct {
		name string
		r    *registryServer
	}{{"insecure_registries_reload_http_by_name", e.plain}, {"https_with_ca", e.secure}, {"login_password_stdin_then_pull", e.private}} {
		t.Run(c.name, func(t *testing.T) {
			if out, err := docker(t, "pull", c.r.image()); err != nil {
				t.Fatalf("docker pull %s: %v: %s\ndaemon.json: %s\ndockerd log:\n%s", c.r.image(), err, out, readOr(registry.DockerDaemonJSON), d.logTail())
			}
		})
	}

	t.Run("second_run_unchanged", func(t *testing.T) {
		res := e.mustTrust(t) // the runtimes DetectRuntimes finds
		if res.Changed {
			t.Errorf("second run reports a change: %s", res.Detail)
		}
	})

	// registry.ReadImageArchive has only been checked against hand-made
	// archives: read a real `docker save` of the image just pulled.
	t.Run("read_image_archive_of_docker_save", func(t *testing.T) {
		dir := t.TempDir()
		if out, err := docker(t, "save", "-o", filepath.Join(dir, "tiny.tar"), e.plain.image()); err != nil {
			t.Fatalf("docker save: %v: %s", err, out)
		}
		id, err := docker(t, "image", "inspect", "--format", "{{.Id}}", e.plain.image())
		if err != nil {
			t.Fatalf("docker image inspect: %v: %s", err, id)
		}
		a, err := registry.ReadImageArchive(os.DirFS(dir), "tiny.tar")
		if err != nil {
			t.Fatalf("ReadImageArchive of a real docker save: %v", err)
		}
		if a.ID != id || !slices.Contains(a.Tags, e.plain.image()) {
			t.Errorf("ReadImageArchive = %+v, want ID %s and tag %s", a, id, e.plain.image())
		}
	})
}

// readOr returns a file's content, or why it cannot.
func readOr(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

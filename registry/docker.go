package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Names and paths on the registry VM.
const (
	// ContainerName is the registry container's name, as in the reference.
	ContainerName = "private_registry"
	// DefaultDataDir is the host directory the registry stores images in,
	// bound to the container's /var/lib/registry.
	DefaultDataDir = "/var/lib/private-registry"
	// DefaultImage is the image pulled from Docker Hub when the parameters
	// give no image_path.
	DefaultImage = "registry:latest"
	// DockerPackage is the apt package InstallDocker installs: Ubuntu's own
	// Docker, which needs no third-party repository or signing key.
	DockerPackage = "docker.io"
	// ProxyDropIn is the systemd drop-in InstallDocker owns: it names
	// ProxyEnvFile in EnvironmentFile= ([system.ProxyUnitFiles]).
	ProxyDropIn = "/etc/systemd/system/docker.service.d/mgmtkit-proxy.conf"
	// ProxyEnvFile holds Docker's proxy variables ([system.Proxy.EnvFile]),
	// root-only (0600). The
	// URLs may carry a password: in Environment= they would be shown to
	// every local user by `systemctl show docker -p Environment`
	// (systemd.exec(5)); the variables of an environment file are not.
	ProxyEnvFile = "/etc/systemd/system/docker.service.d/mgmtkit-proxy.env"
)

// sudo is a command as root that may run again after a dropped
// connection: every command of this package is, except `docker run`.
func sudo(args ...string) remote.Cmd { return remote.Cmd{Args: args, Sudo: true, Idempotent: true} }

// DockerOptions configure InstallDocker.
type DockerOptions struct {
	// Proxy, when set, is given to docker.service through a root-only
	// environment file ([ProxyEnvFile]) that a drop-in ([ProxyDropIn])
	// names, since its URLs may hold credentials; when nil, the files an
	// earlier run wrote are removed.
	Proxy *system.Proxy
	// Package is the apt package to install; [DockerPackage] by default.
	Package string
	// Wait bounds how long to wait for the daemon to answer; 2 minutes by
	// default.
	Wait time.Duration
}

// InstallDocker makes Docker run on h: the package installed unless a
// Docker daemon already is ([system.InstallPackages], which waits out a
// dpkg lock held by unattended-upgrades), the proxy drop-in as opts say
// and the service enabled and active ([system.ConfigureUnit]), and the
// daemon answering `docker version`. It restarts Docker only when the
// drop-in changed, and a restart that a failed run owes is paid by the
// next one. A converged host costs three commands.
func InstallDocker(ctx context.Context, h remote.Host, opts DockerOptions) (lcm.Result, error) {
	res := lcm.Unchanged
	// Any Docker will do (docker.io, or docker-ce from Docker's repository
	// on a prepared image): installing a second one would conflict.
	rts, err := system.DetectRuntimes(ctx, h)
	if err != nil {
		return res, err
	}
	if !slices.Contains(rts, system.Docker) {
		r, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{cmp.Or(opts.Package, DockerPackage)}})
		if err != nil {
			return res, err
		}
		res = res.And(r)
	}
	// Root-only, since the proxy URLs may hold credentials.
	unit := system.UnitOptions{Unit: "docker", Mode: 0o600}
	unit.Files, unit.Absent = system.ProxyUnitFiles("docker", opts.Proxy)
	r, err := system.ConfigureUnit(ctx, h, unit)
	res = res.And(r)
	if err != nil {
		return res, err
	}
	err = system.Wait(ctx, "the Docker daemon to answer", cmp.Or(opts.Wait, 2*time.Minute), time.Second, func(ctx context.Context) (bool, error) {
		_, err := h.Run(ctx, remote.Cmd{Args: []string{"docker", "version", "--format", "{{.Server.Version}}"}, Sudo: true, Idempotent: true, ReadOnly: true})
		return err == nil, err
	})
	return res, err
}

func result(did []string) lcm.Result {
	if len(did) == 0 {
		return lcm.Unchanged
	}
	return lcm.Changed(strings.Join(did, "; "))
}

// imageID returns the ID of a local image, or "" when it is absent.
func imageID(ctx context.Context, h remote.Host, image string) (string, error) {
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"docker", "image", "inspect", "--format", "{{.Id}}", image}, OKExit: []int{1}, Sudo: true, Idempotent: true, ReadOnly: true})
	if err != nil {
		return "", err
	}
	if out.ExitCode != 0 {
		if !strings.Contains(string(out.Stderr), "No such image") {
			return "", fmt.Errorf("docker image inspect %s: %s", image, strings.TrimSpace(string(out.Stderr)))
		}
		return "", nil
	}
	return strings.TrimSpace(string(out.Stdout)), nil
}

// PullImage makes image present on h, pulling it only when it is absent.
func PullImage(ctx context.Context, h remote.Host, image string) (lcm.Result, error) {
	id, err := imageID(ctx, h, image)
	if err != nil || id != "" {
		return lcm.Unchanged, err
	}
	if _, err := h.Run(ctx, remote.Cmd{Args: []string{"docker", "pull", image}, Sudo: true, Idempotent: true}); err != nil {
		return lcm.Unchanged, err
	}
	return lcm.Changed("pulled " + image), nil
}

// RunOptions describe the registry container.
type RunOptions struct {
	// Image is the registry image; [DefaultImage] by default.
	Image string
	// Port is the host port the registry answers on; [DefaultPort] by
	// default.
	Port int
	// DataDir is the host directory for the registry's storage;
	// [DefaultDataDir] by default.
	DataDir string
}

func (o RunOptions) withDefaults() RunOptions {
	o.Image = cmp.Or(o.Image, DefaultImage)
	o.DataDir = cmp.Or(o.DataDir, DefaultDataDir)
	o.Port = cmp.Or(o.Port, DefaultPort)
	return o
}

// containerInfo is the part of `docker inspect` RunRegistry compares.
type containerInfo struct {
	Image string // the image ID
	State struct {
		Running bool
		Status  string
	}
	HostConfig struct {
		Binds         []string
		PortBindings  map[string][]struct{ HostIP, HostPort string }
		RestartPolicy struct{ Name string }
	}
}

// ErrPortInUse is returned (wrapped) by RunRegistry when the host port is
// taken by another container or process.
var ErrPortInUse = errors.New("port already in use")

// RunRegistry makes the container private_registry run opts.Image with
// `-p PORT:5000`, opts.DataDir bound to /var/lib/registry and
// `--restart=always`. A running container with that configuration (and
// the image's current ID) is left alone; a stopped one is started; one
// that differs is replaced. A port held by something else is
// [ErrPortInUse].
func RunRegistry(ctx context.Context, h remote.Host, opts RunOptions) (lcm.Result, error) {
	o := opts.withDefaults()
	want, err := imageID(ctx, h, o.Image)
	if err != nil {
		return lcm.Unchanged, err
	}
	if want == "" {
		return lcm.Unchanged, fmt.Errorf("image %s is not on the host: load or pull it first", o.Image)
	}
	out, err := h.Run(ctx, remote.Cmd{Args: []string{"docker", "inspect", "--type", "container", ContainerName}, OKExit: []int{1}, Sudo: true, Idempotent: true, ReadOnly: true})
	if err != nil {
		return lcm.Unchanged, err
	}
	var did []string
	if out.ExitCode == 0 {
		var infos []containerInfo
		if err := json.Unmarshal(out.Stdout, &infos); err != nil || len(infos) != 1 {
			return lcm.Unchanged, fmt.Errorf("docker inspect %s: unexpected output: %v", ContainerName, err)
		}
		c := infos[0]
		if c.Image == want && matches(c, o) {
			if c.State.Running {
				return lcm.Unchanged, nil
			}
			if _, err := h.Run(ctx, sudo("docker", "start", ContainerName)); err != nil {
				return lcm.Unchanged, portError(err, o.Port)
			}
			return lcm.Changed("started " + ContainerName), nil
		}
		if _, err := h.Run(ctx, sudo("docker", "rm", "-f", ContainerName)); err != nil {
			return lcm.Unchanged, err
		}
		did = append(did, "removed the outdated "+ContainerName)
	}
	run := sudo("docker", "run", "-d",
		"-p", fmt.Sprintf("%d:5000", o.Port),
		"-v", o.DataDir+":/var/lib/registry",
		"--restart=always",
		"--name", ContainerName,
		o.Image)
	run.Idempotent = false // a second run would find the name taken
	if _, err := h.Run(ctx, run); err != nil {
		return result(did), portError(err, o.Port)
	}
	did = append(did, fmt.Sprintf("started %s (%s on port %d)", ContainerName, o.Image, o.Port))
	return result(did), nil
}

func matches(c containerInfo, o RunOptions) bool {
	ports := c.HostConfig.PortBindings["5000/tcp"]
	portOK := len(ports) == 1 && ports[0].HostPort == strconv.Itoa(o.Port) && (ports[0].HostIP == "" || ports[0].HostIP == "0.0.0.0")
	return portOK && len(c.HostConfig.PortBindings) == 1 &&
		slices.Equal(c.HostConfig.Binds, []string{o.DataDir + ":/var/lib/registry"}) &&
		c.HostConfig.RestartPolicy.Name == "always"
}

// portError turns Docker's "port is already allocated" into ErrPortInUse.
func portError(err error, port int) error {
	var ce *remote.CommandError
	if errors.As(err, &ce) && (strings.Contains(ce.Stderr, "port is already allocated") || strings.Contains(ce.Stderr, "address already in use")) {
		return fmt.Errorf("registry port %d on %s: %w by another container or process (%s)", port, ce.Host, ErrPortInUse, lastLine(ce.Stderr))
	}
	return err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// WaitHealthy waits until the registry answers `GET /v2/` with 200 at
// http://addr:port, asking from the VM itself (the VNFM may have no route
// to the registry's port), for at most wait (1 minute when 0). Its error
// is a [*system.WaitError] naming the URL and the last answer.
func WaitHealthy(ctx context.Context, h remote.Host, addr string, port int, wait time.Duration) error {
	url := "http://" + net.JoinHostPort(addr, strconv.Itoa(port)) + "/v2/"
	// curl(1) EXIT CODES: 6 cannot resolve, 7 cannot connect, 28 timeout,
	// 52 empty reply, 56 failure receiving: "not yet", not failures.
	curl := remote.Cmd{Args: []string{"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", url}, OKExit: []int{6, 7, 28, 52, 56}, Idempotent: true, ReadOnly: true}
	return system.Wait(ctx, "the registry at "+url+" to become healthy", cmp.Or(wait, time.Minute), time.Second, func(ctx context.Context) (bool, error) {
		out, err := h.Run(ctx, curl)
		switch {
		case err != nil:
			return false, err
		case out.ExitCode != 0:
			return false, errors.New(strings.TrimSpace(string(out.Stderr)))
		case strings.TrimSpace(string(out.Stdout)) != "200":
			return false, errors.New("HTTP " + strings.TrimSpace(string(out.Stdout)))
		}
		return true, nil
	})
}

package kube

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim/containers"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The files kubeadm reads and writes (cmd/kubeadm/app/constants/constants.go).
const (
	kubernetesDir        = "/etc/kubernetes"
	pkiDir               = "/etc/kubernetes/pki"
	manifestsDir         = "/etc/kubernetes/manifests"
	adminConf            = "/etc/kubernetes/admin.conf"
	superAdminConf       = "/etc/kubernetes/super-admin.conf"
	kubeletConf          = "/etc/kubernetes/kubelet.conf"
	bootstrapKubeletConf = "/etc/kubernetes/bootstrap-kubelet.conf"
	controllerMgrConf    = "/etc/kubernetes/controller-manager.conf"
	schedulerConf        = "/etc/kubernetes/scheduler.conf"
	kubeletDir           = "/var/lib/kubelet"
	kubeletConfigFile    = "/var/lib/kubelet/config.yaml"
	kubeletFlagsFile     = "/var/lib/kubelet/kubeadm-flags.env"
	etcdDataDir          = "/var/lib/etcd"
	containerdSocket     = "unix:///var/run/containerd/containerd.sock"
	defaultBindPort      = 6443
	clusterInfoKey       = "kubeconfig"
	jwsPrefix            = "jws-kubeconfig-"
	kubeadmCertsSecret   = "kubeadm-certs"
	defaultTokenGroup    = "system:bootstrappers:kubeadm:default-node-token"
	controlPlaneLabel    = "node-role.kubernetes.io/control-plane"
	excludeLBLabel       = "node.kubernetes.io/exclude-from-external-load-balancers"
	clusterAdminsGroup   = "kubeadm:cluster-admins"
)

// kubeadmOptions are the options of the kubeadm subcommands the fake
// models (cmd/kubeadm/app/cmd/options/constant.go names them).
var kubeadmOptions = sshtest.OptionSpec{
	Short:    "fo:",
	Long:     []string{"config=", "upload-certs", "skip-token-print", "skip-certificate-key-print", "force", "ttl=", "description=", "kubeconfig=", "output="},
	Modeller: "internal/sim/kube",
}

// kubeadmRun is one kubeadm invocation.
type kubeadmRun struct {
	w   *World
	m   *ubuntu.Machine
	p   *sshtest.Process
	ctx context.Context
	c   sshtest.CommandLine
}

func (r *kubeadmRun) out(format string, args ...any) { fmt.Fprintf(r.p.Stdout, format+"\n", args...) }

// fail prints kubeadm's error of a workflow phase (cmd/kubeadm/app/cmd/
// phases/workflow/runner.go wraps it as "error execution phase NAME";
// cmd/kubeadm/app/util/errors/handle.go adds the --v=5 hint) and returns
// 1.
func (r *kubeadmRun) fail(phase, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if phase != "" {
		msg = "error execution phase " + phase + ": " + msg
	}
	fmt.Fprintf(r.p.Stderr, "%s\nTo see the stack trace of this error execute with --v=5 or higher\n", msg)
	return 1
}

// klogWarning prints a klog warning line ("W1123 16:20:00.000000    4321
// file.go:123] message") as kubeadm logs them to standard error.
func (r *kubeadmRun) klogWarning(source string, msg string) {
	fmt.Fprintf(r.p.Stderr, "W%s    4321 %s] %s\n", r.w.now().Format("0102 15:04:05.000000"), source, msg)
}

// KubeadmTool returns the fake kubeadm 1.36 of the kubeadm package, bound
// to the world. It models:
//
//	kubeadm version [-o short]
//	kubeadm init --config FILE [--upload-certs] [--skip-token-print] [--skip-certificate-key-print]
//	kubeadm init phase upload-certs --upload-certs --config FILE [--skip-certificate-key-print]
//	kubeadm token create [--ttl DURATION] [--description TEXT] [--kubeconfig FILE]
//	kubeadm join --config FILE
//	kubeadm reset [--force]
//	kubeadm certs certificate-key
//
// and fails loudly on anything else. See kubeadm_init.go, kubeadm_join.go.
func KubeadmTool(w *World) ubuntu.Tool {
	return func(ctx context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
		c, code, ok := kubeadmOptions.Parse(p, p.Args[1:], false)
		if !ok {
			return code
		}
		r := &kubeadmRun{w: w, m: m, p: p, ctx: ctx, c: c}
		ops := c.Operands
		switch {
		case len(ops) == 1 && ops[0] == "version":
			return r.version()
		case len(ops) == 1 && ops[0] == "init":
			return r.init()
		case len(ops) == 3 && ops[0] == "init" && ops[1] == "phase" && ops[2] == "upload-certs":
			return r.uploadCertsPhase()
		case len(ops) == 2 && ops[0] == "token" && ops[1] == "create":
			return r.tokenCreate()
		case len(ops) == 1 && ops[0] == "join":
			return r.join()
		case len(ops) == 1 && ops[0] == "reset":
			return r.reset()
		case len(ops) == 2 && ops[0] == "certs" && ops[1] == "certificate-key":
			return r.certificateKey()
		}
		return p.Fail(2, "%s: this form of kubeadm is not modelled by internal/sim/kube", strings.Join(p.Args[1:], " "))
	}
}

// kubeVersion is the Kubernetes version of an installed package
// ("1.36.2-1.1" → "v1.36.2"), "" when it is not installed.
func kubeVersion(m *ubuntu.Machine, pkg string) string {
	v := m.Version(pkg)
	if v == "" {
		return ""
	}
	v, _, _ = strings.Cut(v, "-")
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	return "v" + v
}

func (r *kubeadmRun) version() int {
	v := kubeVersion(r.m, "kubeadm")
	switch o, _ := r.c.Value("-o", "--output"); o {
	case "short":
		r.out("%s", v)
	case "":
		var major, minor, patch int
		fmt.Sscanf(v, "v%d.%d.%d", &major, &minor, &patch)
		r.out(`kubeadm version: &version.Info{Major:"%d", Minor:"%d", EmulationMajor:"", EmulationMinor:"", MinCompatibilityMajor:"", MinCompatibilityMinor:"", GitVersion:"%s", GitCommit:"0000000000000000000000000000000000000000", GitTreeState:"clean", BuildDate:"2026-01-01T00:00:00Z", GoVersion:"go1.25.5", Compiler:"gc", Platform:"linux/%s"}`, major, minor, v, r.m.Arch())
	default:
		return r.fail("", "error: invalid output format: %s", o)
	}
	return 0
}

// readConfig reads and decodes --config, printing kubeadm's warnings.
func (r *kubeadmRun) readConfig(source string) (*kubeadmConfig, int, bool) {
	file, ok := r.c.Value("--config")
	if !ok {
		return nil, r.p.Fail(2, "kubeadm without --config is not modelled by internal/sim/kube (the SDK passes a configuration file)"), false
	}
	data, err := r.p.FS.ReadFile(file)
	if err != nil {
		return nil, r.fail("", "unable to read config from %q : %v", file, err), false
	}
	cfg, err := decodeKubeadmConfig(data)
	if err != nil {
		return nil, r.fail("", "%v", err), false
	}
	for _, w := range cfg.Warnings {
		r.klogWarning(source, w)
	}
	r.w.warn(cfg.Warnings...)
	return cfg, 0, true
}

// preflightCheck is one failed preflight check: its name (what
// --ignore-preflight-errors takes) and message.
type preflightCheck struct{ name, msg string }

// preflight runs the checks kubeadm 1.36 runs that the simulation
// models (cmd/kubeadm/app/preflight/checks.go): errors unless ignored,
// warnings printed. It returns false (after printing kubeadm's error)
// when an error remains.
func (r *kubeadmRun) preflight(phase string, ignore []string, errs, warns []preflightCheck) bool {
	r.out("[preflight] Running pre-flight checks")
	ignored := func(name string) bool {
		return slices.ContainsFunc(ignore, func(s string) bool { return strings.EqualFold(s, name) || strings.EqualFold(s, "all") })
	}
	for _, w := range warns {
		fmt.Fprintf(r.p.Stderr, "\t[WARNING %s]: %s\n", w.name, w.msg)
	}
	var fatal []preflightCheck
	for _, e := range errs {
		if ignored(e.name) {
			fmt.Fprintf(r.p.Stderr, "\t[WARNING %s]: %s\n", e.name, e.msg)
			continue
		}
		fatal = append(fatal, e)
	}
	if len(fatal) == 0 {
		return true
	}
	var b strings.Builder
	b.WriteString("[preflight] Some fatal errors occurred:\n")
	for _, e := range fatal {
		fmt.Fprintf(&b, "\t[ERROR %s]: %s\n", e.name, e.msg)
	}
	b.WriteString("[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`")
	r.fail(phase, "%s", b.String())
	return false
}

// commonChecks are the checks of init and join the simulation models:
// root (IsPrivilegedUserCheck), ip_forward (FileContentCheck), the CRI
// runtime (ContainerRuntimeCheck, through the CRI API since 1.28), swap
// (SwapCheck: a warning since kubeadm 1.28; the kubelet refuses to start
// with swap unless failSwapOn is false), the kubelet service enabled
// (ServiceCheck, a warning), and files kubeadm would overwrite
// (FileAvailableCheck).
func (r *kubeadmRun) commonChecks(files []string) (errs, warns []preflightCheck) {
	if r.p.FS.Cred().UID != 0 {
		return []preflightCheck{{"IsPrivilegedUser", "user is not running as root"}}, nil
	}
	if v, _ := r.m.Sysctl("net.ipv4.ip_forward"); strings.TrimSpace(v) != "1" {
		errs = append(errs, preflightCheck{"FileContent--proc-sys-net-ipv4-ip_forward", "/proc/sys/net/ipv4/ip_forward contents are not set to 1"})
	}
	if err := criError(r.m); err != "" {
		errs = append(errs, preflightCheck{"CRI", "could not connect to the container runtime: validate service connection: validate CRI v1 runtime API for endpoint \"" + containerdSocket + "\": " + err})
	}
	if swapOn(r.m) {
		warns = append(warns, preflightCheck{"Swap", "swap is enabled; production deployments should disable swap unless testing the NodeSwap feature gate of the kubelet"})
	}
	if !r.m.Service("kubelet").Enabled {
		warns = append(warns, preflightCheck{"Service-Kubelet", "kubelet service is not enabled, please run 'systemctl enable kubelet.service'"})
	}
	for _, f := range files {
		if r.m.Server().FS().Exists(f) {
			errs = append(errs, preflightCheck{"FileAvailable-" + strings.ReplaceAll(f, "/", "-"), f + " already exists"})
		}
	}
	return errs, warns
}

// criError is why the CRI runtime service of containerd does not answer
// ("" when it does), as a CRI client sees it.
func criError(m *ubuntu.Machine) string {
	st := containers.Containerd(m)
	if !st.Running() {
		return "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /var/run/containerd/containerd.sock: connect: no such file or directory\""
	}
	if cfg := st.Config(); cfg.CRIDisabled || cfg.CRIError != "" {
		return "rpc error: code = Unimplemented desc = unknown service runtime.v1.RuntimeService"
	}
	return ""
}

// swapOn reports whether /proc/swaps lists a swap area.
func swapOn(m *ubuntu.Machine) bool {
	data, _ := m.Server().FS().ReadFile("/proc/swaps")
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return len(lines) > 1
}

// writeFile writes a file as kubeadm does, creating its directory.
func (r *kubeadmRun) writeFile(name string, data []byte, perm fs.FileMode) error {
	if err := r.p.FS.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	if err := r.p.FS.WriteFile(name, data, perm); err != nil {
		return err
	}
	return r.p.FS.Chmod(name, perm)
}

// restartKubelet is kubeadm's kubelet-start phase: `systemctl restart
// kubelet` (cmd/kubeadm/app/phases/kubelet/kubelet.go TryRestartKubelet),
// whose failure is only a warning.
func (r *kubeadmRun) restartKubelet() {
	q := *r.p
	q.Stdout, q.Stderr = io.Discard, io.Discard
	q.Stdin = strings.NewReader("")
	if q.Exec(r.ctx, "systemctl", "restart", "kubelet") != 0 {
		r.klogWarning("kubelet.go:61", "[kubelet-start] WARNING: unable to start the kubelet service: couldn't restart kubelet.service")
	}
}

// kubeletHealthy is the kubelet's /healthz as kubeadm's wait for the
// kubelet sees it: the service runs with a configuration, and has not
// refused swap (pkg/kubelet/cm/container_manager_linux.go: "running with
// swap on is not supported, please disable swap or set --fail-swap-on
// flag to false").
func kubeletHealthy(m *ubuntu.Machine) error {
	const refused = `Get "http://127.0.0.1:10248/healthz": dial tcp 127.0.0.1:10248: connect: connection refused`
	if !m.Service("kubelet").Active {
		return fmt.Errorf("%s", refused)
	}
	kc, ok := readKubeletConfig(m)
	if !ok {
		return fmt.Errorf("%s", refused)
	}
	if swapOn(m) && kc.failSwapOn {
		return fmt.Errorf("%s", refused)
	}
	return nil
}

// kubeletWaitError is kubeadm's message when the kubelet does not come up
// (cmd/kubeadm/app/phases/kubelet; apiclient.WaitForKubelet).
func kubeletWaitError(err error) string {
	return fmt.Sprintf("failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: %v\n\n"+
		"Unfortunately, an error has occurred, likely caused by:\n\t- The kubelet is not running\n\t- The kubelet is unhealthy due to a misconfiguration of the node in some way (required cgroups disabled)\n\n"+
		"If you are on a systemd-powered system, you can try to troubleshoot the error with the following commands:\n\t- 'systemctl status kubelet'\n\t- 'journalctl -xeu kubelet'", err)
}

// certificateKey is `kubeadm certs certificate-key`: 32 random bytes, hex.
func (r *kubeadmRun) certificateKey() int {
	r.out("%s", newCertificateKey())
	return 0
}

// now is the world's time (bootstrap token expirations).
func (r *kubeadmRun) now() time.Time { return r.w.now() }

// kubeletVersionCheck is preflight's KubeletVersionCheck
// (cmd/kubeadm/app/preflight/checks.go): the installed kubelet must not
// be of a newer minor than the control plane (init: its
// kubernetesVersion; join: kubeadm's own version). An error, or nil.
func kubeletVersionCheck(m *ubuntu.Machine, controlPlane string) *preflightCheck {
	kv := kubeVersion(m, "kubelet")
	if kv == "" {
		return &preflightCheck{"KubeletVersion", "couldn't get kubelet version: cannot execute 'kubelet --version': executable file not found in $PATH"}
	}
	var kmaj, kmin, kpat, cmaj, cmin, cpat int
	fmt.Sscanf(kv, "v%d.%d.%d", &kmaj, &kmin, &kpat)
	fmt.Sscanf(controlPlane, "v%d.%d.%d", &cmaj, &cmin, &cpat)
	if kmaj > cmaj || kmin > cmin {
		return &preflightCheck{"KubeletVersion", fmt.Sprintf("the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: %q Control plane version: %q",
			strings.TrimPrefix(kv, "v"), strings.TrimPrefix(controlPlane, "v"))}
	}
	return nil
}

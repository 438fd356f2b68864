package realkube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/kubectl/pkg/cmd/annotate"
	"k8s.io/kubectl/pkg/cmd/apply"
	"k8s.io/kubectl/pkg/cmd/delete"
	"k8s.io/kubectl/pkg/cmd/diff"
	"k8s.io/kubectl/pkg/cmd/drain"
	kexec "k8s.io/kubectl/pkg/cmd/exec"
	"k8s.io/kubectl/pkg/cmd/get"
	"k8s.io/kubectl/pkg/cmd/label"
	"k8s.io/kubectl/pkg/cmd/taint"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/cmd/version"
	utilexec "k8s.io/utils/exec"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The hosts' kubectl on a real control plane is kubectl's own code
// (k8s.io/kubectl/pkg/cmd: get, apply, diff, delete, drain, cordon,
// uncordon, label, annotate, taint, exec, version) run in-process for each invocation, with the
// kubeconfig the simulated host holds and the process's standard streams.
// Four things differ from the kubectl binary, each because the host is
// simulated:
//
//   - the kubeconfig and the files it names are read from the host's
//     filesystem, as the invoking user (its permissions hold); of the
//     kubeconfig flags, --kubeconfig, --namespace, --context and
//     --request-timeout are honoured;
//   - the files of -f, and standard input for "-f -", are copied from the
//     host to a private directory first (see materializeFiles);
//   - connections go where the simulated network sends them
//     ([kube.World.Dial]: the address, a VIP, HAProxy, a control plane
//     whose API server runs) and end at the real API server of that
//     cluster on loopback, whose certificate the kubeconfig's CA verifies
//     under the name "kubernetes" (a SAN of every kubeadm API server
//     certificate);
//   - exec is not streamed through the API server to a kubelet (there is
//     none): the API server's RBAC decides whether the user may create
//     pods/exec and the pod must exist, then the command runs as the
//     world runs it in that pod ([kube.World.EtcdExec]: etcdctl against
//     the cluster's real etcd).

// exitPanic carries kubectl's fatal error (cmdutil.CheckErr) out of the
// command: kubectl would print msg and exit with code.
type exitPanic struct {
	msg  string
	code int
}

// serverName is the name the API server certificate is verified under.
const serverName = "kubernetes"

var fatalOnce sync.Once

// kubectlTool returns the hosts' kubectl for the clusters of w.
func kubectlTool(w *kube.World) ubuntu.Tool {
	fatalOnce.Do(func() {
		// cmdutil's fatal handler prints to os.Stderr and exits the
		// process; it is global, so it only carries the message out to
		// the invocation that failed (each recovers its own panic).
		cmdutil.BehaviorOnFatal(func(msg string, code int) { panic(exitPanic{msg, code}) })
	})
	return func(ctx context.Context, m *ubuntu.Machine, p *sshtest.Process) (code int) {
		streams := genericiooptions.IOStreams{In: p.Stdin, Out: p.Stdout, ErrOut: p.Stderr}
		if streams.In == nil {
			streams.In = strings.NewReader("")
		}
		defer func() {
			if r := recover(); r != nil {
				e, ok := r.(exitPanic)
				if !ok {
					panic(r)
				}
				if e.msg != "" {
					if !strings.HasSuffix(e.msg, "\n") {
						e.msg += "\n"
					}
					fmt.Fprint(p.Stderr, e.msg)
				}
				code = e.code
			}
		}()
		// What the kubelets of the world did by now is done before kubectl
		// looks, as for the model's kubectl (kube.World.ResolveKubeconfig).
		if err := w.Sync(ctx); err != nil {
			fmt.Fprintf(p.Stderr, "error: %v\n", err)
			return 1
		}
		flags := genericclioptions.NewConfigFlags(true)
		g := &hostGetter{w: w, m: m, p: p, flags: flags}
		// As kubectl does (k8s.io/kubectl/pkg/cmd/cmd.go): the match-version
		// wrapper also sets the REST defaults exec's client needs.
		f := cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(g))
		root := &cobra.Command{
			Use:           "kubectl",
			SilenceUsage:  true,
			SilenceErrors: true,
			Run:           func(cmd *cobra.Command, _ []string) { _ = cmd.Help() },
		}
		root.SetIn(streams.In)
		root.SetOut(streams.Out)
		root.SetErr(streams.ErrOut)
		flags.AddFlags(root.PersistentFlags())
		root.AddCommand(
			get.NewCmdGet("kubectl", f, streams),
			apply.NewCmdApply("kubectl", f, streams),
			diff.NewCmdDiff(f, streams),
			delete.NewCmdDelete(f, streams),
			drain.NewCmdDrain(f, streams),
			drain.NewCmdCordon(f, streams),
			drain.NewCmdUncordon(f, streams),
			version.NewCmdVersion(f, streams),
			label.NewCmdLabel(f, streams),
			annotate.NewCmdAnnotate("kubectl", f, streams),
			taint.NewCmdTaint(f, streams),
			execCommand(f, streams, w, m, p),
		)
		args, cleanup, err := materializeFiles(p)
		defer cleanup()
		if err != nil {
			fmt.Fprintf(p.Stderr, "error: %v\n", err)
			return 1
		}
		root.SetArgs(args)
		if err := root.ExecuteContext(ctx); err != nil {
			// cobra's own errors (unknown command or flag), as kubectl
			// prints them (k8s.io/component-base/cli/run.go).
			fmt.Fprintf(p.Stderr, "error: %v\n", err)
			return 1
		}
		return 0
	}
}

// hostGetter is genericclioptions.RESTClientGetter over the kubeconfig of
// a simulated host, dialling through the simulated network.
type hostGetter struct {
	w     *kube.World
	m     *ubuntu.Machine
	p     *sshtest.Process
	flags *genericclioptions.ConfigFlags

	once   sync.Once
	loader clientcmd.ClientConfig
	err    error
}

// kubeconfigFile is the file kubectl loads (client-go/tools/clientcmd/
// loader.go: --kubeconfig, else the first of $KUBECONFIG, else
// ~/.kube/config) and whether it was named explicitly.
func (g *hostGetter) kubeconfigFile() (string, bool) {
	if f := g.flags.KubeConfig; f != nil && *f != "" {
		return *f, true
	}
	if env := g.p.Getenv("KUBECONFIG"); env != "" {
		return strings.Split(env, ":")[0], true
	}
	if home := g.p.Getenv("HOME"); home != "" {
		return path.Join(home, ".kube", "config"), false
	}
	return "", false
}

// load reads the kubeconfig from the host, inlining the files it names
// (certificates, keys, token files), as the loader resolves them.
func (g *hostGetter) load() (clientcmd.ClientConfig, error) {
	g.once.Do(func() {
		cfg := clientcmdapi.NewConfig()
		file, explicit := g.kubeconfigFile()
		if file != "" {
			data, err := g.p.FS.ReadFile(file)
			switch {
			case err == nil:
				if cfg, err = clientcmd.Load(data); err != nil {
					g.err = fmt.Errorf("error loading config file %q: %v", file, err)
					return
				}
				if err := g.inline(cfg); err != nil {
					g.err = err
					return
				}
			case errors.Is(err, fs.ErrNotExist) && !explicit:
			case errors.Is(err, fs.ErrNotExist):
				g.err = fmt.Errorf("stat %s: no such file or directory", file)
				return
			default:
				g.err = fmt.Errorf("error loading config file %q: %v", file, err)
				return
			}
		}
		overrides := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}
		if v := g.flags.Namespace; v != nil {
			overrides.Context.Namespace = *v
		}
		if v := g.flags.Context; v != nil {
			overrides.CurrentContext = *v
		}
		if v := g.flags.Timeout; v != nil {
			overrides.Timeout = *v
		}
		g.loader = clientcmd.NewDefaultClientConfig(*cfg, overrides)
	})
	return g.loader, g.err
}

// inline replaces the file names of a kubeconfig by their content, read
// from the host as the invoking user.
func (g *hostGetter) inline(cfg *clientcmdapi.Config) error {
	read := func(name string) ([]byte, error) {
		data, err := g.p.FS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("unable to read %s: %w", name, err)
		}
		return data, nil
	}
	var err error
	for _, c := range cfg.Clusters {
		if c.CertificateAuthority != "" {
			if c.CertificateAuthorityData, err = read(c.CertificateAuthority); err != nil {
				return err
			}
			c.CertificateAuthority = ""
		}
	}
	for _, a := range cfg.AuthInfos {
		if a.ClientCertificate != "" {
			if a.ClientCertificateData, err = read(a.ClientCertificate); err != nil {
				return err
			}
			a.ClientCertificate = ""
		}
		if a.ClientKey != "" {
			if a.ClientKeyData, err = read(a.ClientKey); err != nil {
				return err
			}
			a.ClientKey = ""
		}
		if a.TokenFile != "" {
			tok, err := read(a.TokenFile)
			if err != nil {
				return err
			}
			a.Token, a.TokenFile = strings.TrimSpace(string(tok)), ""
		}
	}
	return nil
}

// ToRawKubeConfigLoader implements genericclioptions.RESTClientGetter.
func (g *hostGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	l, err := g.load()
	if err != nil {
		return errConfig{err}
	}
	return l
}

// ToRESTConfig implements genericclioptions.RESTClientGetter: the
// kubeconfig's, dialling through the simulated network.
func (g *hostGetter) ToRESTConfig() (*rest.Config, error) {
	l, err := g.load()
	if err != nil {
		return nil, err
	}
	cfg, err := l.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Dial = g.dial
	// The proxy of the test process's environment has nothing to do
	// with the host's.
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	if cfg.TLSClientConfig.ServerName == "" {
		cfg.TLSClientConfig.ServerName = serverName
	}
	cfg.WarningHandler = rest.NewWarningWriter(g.p.Stderr, rest.WarningWriterOptions{})
	return cfg, nil
}

// dial connects, from the host, to addr of the simulated network: to the
// real API server of the cluster that answers there, or fails as a Go
// client does ("connect: connection refused", "no route to host").
func (g *hostGetter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := g.w.Dial(g.m, addr)
	if err != nil {
		if errors.Is(err, kube.ErrNoAPIServer) {
			// utilnet.IsConnectionRefused looks for ECONNREFUSED: kubectl
			// then prints "The connection to the server ... was refused".
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		return nil, err
	}
	cp, ok := c.ControlPlane().(*ControlPlane)
	if !ok {
		return nil, fmt.Errorf("dial tcp %s: the cluster there is not a real control plane", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", cp.Addr())
}

// ToDiscoveryClient implements genericclioptions.RESTClientGetter.
func (g *hostGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	cfg, err := g.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

// ToRESTMapper implements genericclioptions.RESTClientGetter.
func (g *hostGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	m := restmapper.NewDeferredDiscoveryRESTMapper(dc)
	return restmapper.NewShortcutExpander(m, dc, nil), nil
}

// errConfig is a clientcmd.ClientConfig that only fails.
type errConfig struct{ err error }

func (e errConfig) RawConfig() (clientcmdapi.Config, error) { return clientcmdapi.Config{}, e.err }
func (e errConfig) ClientConfig() (*rest.Config, error)     { return nil, e.err }
func (e errConfig) Namespace() (string, bool, error)        { return "", false, e.err }
func (e errConfig) ConfigAccess() clientcmd.ConfigAccess    { return nil }

// execCommand is kubectl exec with the executor of the simulation: its
// flags and checks are kubectl's (the pod must exist and run), the
// command runs where the world runs it.
func execCommand(f cmdutil.Factory, streams genericiooptions.IOStreams, w *kube.World, m *ubuntu.Machine, p *sshtest.Process) *cobra.Command {
	cmd := kexec.NewCmdExec(f, streams)
	cmd.Run = func(cmd *cobra.Command, args []string) {
		o := &kexec.ExecOptions{
			StreamOptions: kexec.StreamOptions{IOStreams: streams},
			Executor:      &worldExecutor{w: w, p: p},
		}
		fl := cmd.Flags()
		o.ContainerName, _ = fl.GetString("container")
		o.Stdin, _ = fl.GetBool("stdin")
		o.TTY, _ = fl.GetBool("tty")
		o.Quiet, _ = fl.GetBool("quiet")
		o.FilenameOptions.Filenames, _ = fl.GetStringSlice("filename")
		cmdutil.CheckErr(o.Complete(f, cmd, args, cmd.ArgsLenAtDash()))
		cmdutil.CheckErr(o.Validate())
		cmdutil.CheckErr(o.Run())
	}
	return cmd
}

// worldExecutor is kexec.RemoteExecutor for the simulation: where a real
// API server would stream to the kubelet of the pod's node, it asks the
// API server whether the user may (RBAC on pods/exec), reads the pod, and
// runs the command with [kube.World.EtcdExec].
type worldExecutor struct {
	w *kube.World
	p *sshtest.Process
}

func (e *worldExecutor) Execute(u *url.URL, cfg *rest.Config, stdin io.Reader, stdout, stderr io.Writer, tty bool, tsq remotecommand.TerminalSizeQueue) error {
	return e.ExecuteWithContext(context.Background(), u, cfg, stdin, stdout, stderr, tty, tsq)
}

func (e *worldExecutor) ExecuteWithContext(ctx context.Context, u *url.URL, cfg *rest.Config, stdin io.Reader, stdout, stderr io.Writer, _ bool, _ remotecommand.TerminalSizeQueue) error {
	// /api/v1/namespaces/NS/pods/NAME/exec?command=...
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 7 || parts[2] != "namespaces" || parts[4] != "pods" || parts[6] != "exec" {
		return fmt.Errorf("unexpected exec URL %s", u.Path)
	}
	ns, name := parts[3], parts[5]
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec", Name: name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if !review.Status.Allowed {
		return fmt.Errorf("pods %q is forbidden: cannot create resource \"pods/exec\" in API group \"\" in the namespace %q", name, ns)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	q := *e.p
	q.Stdin, q.Stdout, q.Stderr = stdin, stdout, stderr
	if q.Stdin == nil {
		q.Stdin = strings.NewReader("")
	}
	if code := e.w.EtcdExec(ctx, &q, pod, u.Query()["command"]); code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// materializeFiles returns kubectl's arguments with the files of -f
// (--filename) copied from the host to a private directory of this
// machine, because kubectl's resource builder opens them with os.Open and
// reads "-" from os.Stdin (k8s.io/cli-runtime/pkg/resource/visitor.go
// FileVisitor.Visit): "-" becomes a file holding the process's standard
// input, a path a copy of the host's file read as the invoking user.
func materializeFiles(p *sshtest.Process) (args []string, cleanup func(), err error) {
	cleanup = func() {}
	in := p.Args[1:]
	var dir string
	n := 0
	copyOf := func(name string) (string, error) {
		var data []byte
		var err error
		if name == "-" {
			if p.Stdin != nil {
				data, err = io.ReadAll(p.Stdin)
			}
		} else {
			data, err = p.FS.ReadFile(name)
		}
		if err != nil {
			return "", fmt.Errorf("the path %q cannot be read: %v", name, err)
		}
		if dir == "" {
			if dir, err = os.MkdirTemp("", "mgmtkit-kubectl-"); err != nil {
				return "", err
			}
			d := dir
			cleanup = func() { _ = os.RemoveAll(d) }
		}
		n++
		f := path.Join(dir, fmt.Sprintf("%d.yaml", n))
		return f, os.WriteFile(f, data, 0o600)
	}
	for i := 0; i < len(in); i++ {
		a := in[i]
		if a == "--" {
			args = append(args, in[i:]...)
			break
		}
		for _, flag := range []string{"-f", "--filename"} {
			switch {
			case a == flag && i+1 < len(in):
				f, err := copyOf(in[i+1])
				if err != nil {
					return nil, cleanup, err
				}
				args = append(args, flag, f)
				i++
				a = ""
			case strings.HasPrefix(a, flag+"="):
				f, err := copyOf(strings.TrimPrefix(a, flag+"="))
				if err != nil {
					return nil, cleanup, err
				}
				args = append(args, flag+"="+f)
				a = ""
			}
			if a == "" {
				break
			}
		}
		if a != "" {
			args = append(args, a)
		}
	}
	return args, cleanup, nil
}

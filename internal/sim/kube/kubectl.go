package kube

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// ExecHandler runs a command in a pod's container for `kubectl exec`
// (simnode registers one that answers etcdctl in etcd pods). It writes to
// p.Stdout and p.Stderr and returns the command's exit status; kubectl
// passes a non-zero status on as real kubectl does ("command terminated
// with exit code N").
type ExecHandler func(ctx context.Context, p *sshtest.Process, pod *corev1.Pod, argv []string) int

// KubectlOption configures [KubectlTool].
type KubectlOption func(*kubectlTool)

// WithExec makes h answer `kubectl exec`. Without it exec fails as a
// container without the program does.
func WithExec(h ExecHandler) KubectlOption { return func(k *kubectlTool) { k.exec = h } }

// WithVersion sets the version `kubectl version` reports for the client
// and the server ("v1.36.6", the default).
func WithVersion(v string) KubectlOption { return func(k *kubectlTool) { k.version = v } }

type kubectlTool struct {
	scheme  *runtime.Scheme // read-only once built
	resolve func(m *ubuntu.Machine, kubeconfig string) (API, error)
	exec    ExecHandler
	version string
}

// KubectlTool returns the fake kubectl: it reads the kubeconfig (the
// --kubeconfig flag, else $KUBECONFIG, else ~/.kube/config) with the
// invoking user's permissions, as real kubectl does, and hands its path
// to resolve (World.ResolveKubeconfig), which returns the API the
// kubeconfig's server reaches (an error wrapping [ErrNoAPIServer] when
// nothing answers there). A kubeconfig whose user has a bearer token is authenticated and
// authorized through the API on every request; one with a client
// certificate (kubeadm's admin.conf, whose user is in the
// kubeadm:cluster-admins group bound to cluster-admin) may do everything.
//
// The command lines are those of the contract, with real kubectl 1.36's
// output and errors (staging/src/k8s.io/kubectl/pkg/cmd/...): get,
// cordon, uncordon, drain, delete, apply, diff, exec, label, annotate,
// taint, version.
func KubectlTool(resolve func(m *ubuntu.Machine, kubeconfig string) (API, error), opts ...KubectlOption) ubuntu.Tool {
	k := &kubectlTool{scheme: NewScheme(), resolve: resolve, version: "v1.36.6"}
	for _, o := range opts {
		o(k)
	}
	return k.run
}

// kubeconfig is the part of a kubeconfig file kubectl reads here
// (client-go/tools/clientcmd/api/v1 types).
type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server string `json:"server"`
		} `json:"cluster"`
	} `json:"clusters"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster   string `json:"cluster"`
			User      string `json:"user"`
			Namespace string `json:"namespace"`
		} `json:"context"`
	} `json:"contexts"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Token                 string `json:"token"`
			ClientCertificateData string `json:"client-certificate-data"`
			ClientCertificate     string `json:"client-certificate"`
		} `json:"user"`
	} `json:"users"`
}

// current returns the current context's server, user token, whether the
// user has a client certificate, and the context's namespace.
func (c *kubeconfig) current() (server, token string, cert bool, ns string) {
	for _, x := range c.Contexts {
		if x.Name != c.CurrentContext {
			continue
		}
		ns = x.Context.Namespace
		for _, cl := range c.Clusters {
			if cl.Name == x.Context.Cluster {
				server = cl.Cluster.Server
			}
		}
		for _, u := range c.Users {
			if u.Name == x.Context.User {
				token = u.User.Token
				cert = u.User.ClientCertificateData != "" || u.User.ClientCertificate != ""
			}
		}
	}
	return server, token, cert, ns
}

// KubeconfigServer returns the server URL of a kubeconfig's current
// context ("https://10.0.0.5:6443"), for a resolve function.
func KubeconfigServer(content string) (string, error) {
	var c kubeconfig
	if err := yaml.Unmarshal([]byte(content), &c); err != nil {
		return "", err
	}
	s, _, _, _ := c.current()
	if s == "" {
		return "", errors.New("no server in the current context")
	}
	return s, nil
}

// session is one kubectl invocation.
type session struct {
	k      *kubectlTool
	ctx    context.Context
	m      *ubuntu.Machine
	p      *sshtest.Process
	api    API
	admin  bool
	user   string
	groups []string
	ns     string // --namespace, else the context's, else "default"
	nsSet  bool
	flags  map[string]string
	args   []string
	after  []string // after "--"
	cmd    string
}

// kubectl's flags: those taking a value, and the boolean ones, by long
// name; shorthand → long name.
var (
	valueFlags = map[string]bool{
		"kubeconfig": true, "namespace": true, "output": true, "field-selector": true, "filename": true,
		"timeout": true, "selector": true, "container": true, "context": true, "grace-period": true,
	}
	boolFlags = map[string]bool{
		"all-namespaces": true, "force": true, "ignore-daemonsets": true, "delete-emptydir-data": true,
		"ignore-not-found": true, "client": true, "stdin": true, "tty": true, "quiet": true, "overwrite": true,
		"wait": true,
	}
	shorthands = map[string]string{
		"n": "namespace", "o": "output", "f": "filename", "A": "all-namespaces", "l": "selector",
		"c": "container", "i": "stdin", "t": "tty", "q": "quiet",
	}
)

// parse splits argv as cobra/pflag do: flags anywhere before "--",
// --name=value, --name value, -n value, -nvalue.
func (s *session) parse(argv []string) error {
	s.flags = map[string]string{}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			s.after = argv[i+1:]
			return nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if s.cmd == "" {
				s.cmd = a
			} else {
				s.args = append(s.args, a)
			}
			continue
		}
		var name, val string
		hasVal := false
		if strings.HasPrefix(a, "--") {
			name, val, hasVal = strings.Cut(a[2:], "=")
		} else {
			short := a[1:2]
			long, ok := shorthands[short]
			if !ok {
				return fmt.Errorf("unknown shorthand flag: '%s' in %s", short, a)
			}
			name = long
			if len(a) > 2 {
				val, hasVal = strings.TrimPrefix(a[2:], "="), true
			}
		}
		switch {
		case valueFlags[name]:
			if !hasVal {
				if i+1 >= len(argv) {
					return fmt.Errorf("flag needs an argument: --%s", name)
				}
				i++
				val = argv[i]
			}
		case boolFlags[name]:
			if !hasVal {
				val = "true"
			} else if val != "true" && val != "false" {
				return fmt.Errorf("invalid argument %q for \"--%s\" flag: strconv.ParseBool: parsing %q: invalid syntax", val, name, val)
			}
		default:
			return fmt.Errorf("unknown flag: --%s", name)
		}
		s.flags[name] = val
	}
	return nil
}

func (s *session) flag(name string) (string, bool) {
	v, ok := s.flags[name]
	return v, ok
}

func (s *session) on(name string) bool { return s.flags[name] == "true" }

// out and errOut are the process's streams.
func (s *session) out(format string, a ...any)    { fmt.Fprintf(s.p.Stdout, format, a...) }
func (s *session) errOut(format string, a ...any) { fmt.Fprintf(s.p.Stderr, format, a...) }

// fail prints err as kubectl's cmdutil.CheckErr does
// (staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go
// StandardErrorMessage) and returns 1.
func (s *session) fail(err error) int {
	var st apierrors.APIStatus
	switch {
	case err == nil:
		return 0
	case apierrors.IsUnauthorized(err):
		s.errOut("error: You must be logged in to the server (%s)\n", err.Error())
	case errors.As(err, &st) && st.Status().Reason != "" && st.Status().Code != 0:
		s.errOut("Error from server (%s): %s\n", st.Status().Reason, err.Error())
	case errors.As(err, &st):
		s.errOut("Error from server: %s\n", err.Error())
	default:
		msg := err.Error()
		if !strings.HasPrefix(msg, "error: ") {
			msg = "error: " + msg
		}
		s.errOut("%s\n", msg)
	}
	return 1
}

func (k *kubectlTool) run(ctx context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	s := &session{k: k, ctx: ctx, m: m, p: p}
	if err := s.parse(p.Args[1:]); err != nil {
		s.errOut("error: %v\nSee 'kubectl %s --help' for usage.\n", err, s.cmd)
		return 1
	}
	switch s.cmd {
	case "":
		s.errOut("kubectl controls the Kubernetes cluster manager.\n\nUsage:\n  kubectl [flags] [options]\n")
		return 0
	case "version":
		if s.on("client") {
			s.out("Client Version: %s\nKustomize Version: v5.7.1\n", k.version)
			return 0
		}
	case "get", "cordon", "uncordon", "drain", "delete", "apply", "diff", "exec", "label", "annotate", "taint":
	default:
		s.errOut("error: unknown command %q for \"kubectl\"\n", s.cmd)
		return 1
	}
	if code, ok := s.connect(); !ok {
		return code
	}
	switch s.cmd {
	case "version":
		s.out("Client Version: %s\nKustomize Version: v5.7.1\nServer Version: %s\n", k.version, k.version)
		return 0
	case "get":
		return s.get()
	case "cordon", "uncordon":
		return s.cordon(s.cmd == "cordon")
	case "drain":
		return s.drain()
	case "delete":
		return s.delete()
	case "apply":
		return s.apply(false)
	case "diff":
		return s.apply(true)
	case "exec":
		return s.execIn()
	case "label", "annotate":
		return s.metaChange(s.cmd == "label")
	case "taint":
		return s.taint()
	}
	return 1
}

// connect loads the kubeconfig (client-go/tools/clientcmd/loader.go: the
// --kubeconfig file, else $KUBECONFIG, else ~/.kube/config; without any,
// the insecure default localhost:8080) and resolves its server.
func (s *session) connect() (int, bool) {
	file, explicit := s.flag("kubeconfig")
	if !explicit {
		if env := s.p.Getenv("KUBECONFIG"); env != "" {
			file, explicit = strings.Split(env, ":")[0], true
		} else if home := s.p.Getenv("HOME"); home != "" {
			file = path.Join(home, ".kube", "config")
		}
	}
	var content []byte
	if file != "" {
		b, err := s.p.FS.ReadFile(file)
		switch {
		case err == nil:
			content = b
		case errors.Is(err, fs.ErrNotExist) && !explicit:
		case errors.Is(err, fs.ErrNotExist):
			s.errOut("error: stat %s: no such file or directory\n", file)
			return 1, false
		default:
			s.errOut("error: error loading config file %q: open %s: %v\n", file, file, unwrapPathErr(err))
			return 1, false
		}
	}
	if content == nil {
		s.errOut("The connection to the server localhost:8080 was refused - did you specify the right host or port?\n")
		return 1, false
	}
	var cfg kubeconfig
	if err := yaml.Unmarshal(content, &cfg); err != nil {
		s.errOut("error: error loading config file %q: %v\n", file, err)
		return 1, false
	}
	server, token, cert, ns := cfg.current()
	if server == "" {
		s.errOut("The connection to the server localhost:8080 was refused - did you specify the right host or port?\n")
		return 1, false
	}
	api, err := s.k.resolve(s.m, file)
	if err != nil {
		if errors.Is(err, ErrNoAPIServer) {
			host := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
			s.errOut("The connection to the server %s was refused - did you specify the right host or port?\n", host)
		} else {
			s.errOut("Unable to connect to the server: %v\n", err)
		}
		return 1, false
	}
	s.api = api
	switch {
	case token != "":
		user, groups, err := api.Authenticate(s.ctx, token)
		if err != nil {
			return s.fail(err), false
		}
		s.user, s.groups = user, groups
	case cert:
		s.admin = true
	default:
		// Anonymous requests are system:anonymous, which RBAC allows
		// nothing of interest here.
		s.user, s.groups = "system:anonymous", []string{"system:unauthenticated"}
	}
	s.ns = "default"
	if ns != "" {
		s.ns = ns
	}
	if v, ok := s.flag("namespace"); ok && v != "" {
		s.ns, s.nsSet = v, true
	}
	return 0, true
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// can checks that the user may do verb on a kind, as the API server's
// authorizer does before every request, and returns the Forbidden error it
// would (apiserver/pkg/endpoints/handlers/responsewriters/errors.go
// ForbiddenStatusError).
func (s *session) can(verb string, gvk schema.GroupVersionKind, ns, name string) error {
	if s.admin {
		return nil
	}
	gr := Resource(gvk)
	switch verb {
	case "evict":
		verb, gr = "create", schema.GroupResource{Resource: "pods/eviction"}
	case "exec":
		verb, gr = "create", schema.GroupResource{Resource: "pods/exec"}
	}
	if !Namespaced(gvk) {
		ns = ""
	}
	ok, err := s.api.Authorize(s.ctx, s.user, s.groups, verb, gr.Group, gr.Resource, ns)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	scope := "at the cluster scope"
	if ns != "" {
		scope = fmt.Sprintf("in the namespace %q", ns)
	}
	res, sub, _ := strings.Cut(gr.Resource, "/")
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q %s", s.user, verb, res, gr.Group, scope)
	if sub != "" {
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q %s", s.user, verb, res+"/"+sub, gr.Group, scope)
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: gr.Group, Resource: res}, name, errors.New(msg))
}

// resourceTypes maps what `kubectl get` takes (plural, singular, short
// name; api-resources) to a kind.
var resourceTypes = func() map[string]schema.GroupVersionKind {
	t := map[string]schema.GroupVersionKind{}
	add := func(gvk schema.GroupVersionKind, names ...string) {
		for _, n := range names {
			t[n] = gvk
		}
	}
	add(KindNode, "nodes", "node", "no")
	add(KindPod, "pods", "pod", "po")
	add(KindNamespace, "namespaces", "namespace", "ns")
	add(KindServiceAccount, "serviceaccounts", "serviceaccount", "sa")
	add(KindSecret, "secrets", "secret")
	add(KindConfigMap, "configmaps", "configmap", "cm")
	add(KindDeployment, "deployments", "deployment", "deploy", "deployments.apps", "deployment.apps")
	add(KindReplicaSet, "replicasets", "replicaset", "rs", "replicasets.apps")
	add(KindDaemonSet, "daemonsets", "daemonset", "ds", "daemonsets.apps")
	add(KindPersistentVolume, "persistentvolumes", "persistentvolume", "pv")
	add(KindPersistentVolumeClaim, "persistentvolumeclaims", "persistentvolumeclaim", "pvc")
	add(KindPodDisruptionBudget, "poddisruptionbudgets", "poddisruptionbudget", "pdb", "poddisruptionbudgets.policy")
	add(KindEvent, "events", "event", "ev")
	add(KindService, "services", "service", "svc")
	add(KindClusterRole, "clusterroles", "clusterrole", "clusterroles.rbac.authorization.k8s.io")
	add(KindClusterRoleBinding, "clusterrolebindings", "clusterrolebinding", "clusterrolebindings.rbac.authorization.k8s.io")
	add(KindRole, "roles", "role", "roles.rbac.authorization.k8s.io")
	add(KindRoleBinding, "rolebindings", "rolebinding", "rolebindings.rbac.authorization.k8s.io")
	return t
}()

// kindString is how kubectl names a kind in its messages: the lower-case
// kind, dotted with the group unless core ("deployment.apps",
// "clusterrole.rbac.authorization.k8s.io", "node").
func kindString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return strings.ToLower(gvk.Kind)
	}
	return strings.ToLower(gvk.Kind) + "." + gvk.Group
}

// sortStrings returns a sorted copy.
func sortStrings(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// aggregate formats errors as utilerrors.NewAggregate does: one error as
// itself, several as "[a, b]".
func aggregate(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New("[" + strings.Join(msgs, ", ") + "]")
}

// timeoutFlag parses --timeout (a Go duration; a bare number is seconds,
// as kubectl's duration flags accept only units — "0" is the exception).
func (s *session) timeoutFlag(def time.Duration) (time.Duration, error) {
	v, ok := s.flag("timeout")
	if !ok {
		return def, nil
	}
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("invalid argument %q for \"--timeout\" flag: %v", v, err)
	}
	return d, nil
}

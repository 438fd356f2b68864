package realkube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/mgmtkit/mgmtkit/cloudtest"
	"github.com/mgmtkit/mgmtkit/internal/sim/kube"
	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
)

// Backend is a kube.Backend whose clusters run a real control plane in
// the test process: see the package documentation.
type Backend struct {
	t testing.TB

	mu     sync.Mutex
	planes []*ControlPlane // started, for the kubectl of kubectl.go
}

var _ cloudtest.KubeBackend = (*Backend)(nil)

// New returns a Backend for the test t, the Kubernetes of a simulated
// cloud (cloudtest.KubeBackend, conformance.Options.Kube): control
// planes log through t and are closed by t.Cleanup. It silences klog for
// the whole process (see the package documentation for REALKUBE_LOG).
func New(t testing.TB) *Backend {
	quietLogs()
	return &Backend{t: t}
}

// Kubectl returns the kubectl program of the hosts of w (kubectl.go).
func (b *Backend) Kubectl(w *kube.World) ubuntu.Tool { return b.kubectl(w) }

// ControlPlane is a running control plane: embedded etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and the node simulator, all in
// this process. It implements kube.ControlPlane.
type ControlPlane struct {
	name   string
	dir    string
	addr   string
	admin  *rest.Config
	api    *clientAPI
	etcd   *etcdCluster
	logf   func(format string, args ...any)
	cancel context.CancelFunc

	apiserver, controllers, scheduler *component
	nodes                             *nodeSimulator

	phases []string // startup times, for the log

	closeOnce sync.Once
	closeErr  error
}

var _ kube.ControlPlane = (*ControlPlane)(nil)

// API returns the API server as cluster-admin: a client certificate of
// the cluster CA with O=system:masters, CN=kubernetes-admin.
func (c *ControlPlane) API() kube.API { return c.api }

// Etcd returns the cluster's etcd: the real membership of the embedded
// members.
func (c *ControlPlane) Etcd() kube.Etcd { return c.etcd }

// RunsBootstrapControllers reports true: kube-controller-manager runs
// bootstrapsigner and tokencleaner (--controllers=*,bootstrapsigner,
// tokencleaner, as kubeadm configures it).
func (c *ControlPlane) RunsBootstrapControllers() bool { return true }

// SyncPods queues the pods waiting for their NFS mounts for an
// immediate retry by the node simulator (which otherwise retries every
// second); it returns before the retries are done.
func (c *ControlPlane) SyncPods(context.Context) error {
	c.nodes.retryWaiting()
	return nil
}

// Addr returns the API server's address, "127.0.0.1:port".
func (c *ControlPlane) Addr() string { return c.addr }

// RESTConfig returns a client configuration of the API server as
// cluster-admin (a copy: callers may change it).
func (c *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(c.admin) }

// ServerName returns "kubernetes", a name of the API server's serving
// certificate that a client dialling Addr verifies.
func (c *ControlPlane) ServerName() string { return "kubernetes" }

// Close stops the node simulator, the scheduler, the controller manager,
// the API server and etcd, and removes their files. It is idempotent and
// also runs at the end of the test.
func (c *ControlPlane) Close() error {
	c.closeOnce.Do(func() {
		start := time.Now()
		defer func() {
			c.logf("realkube: control plane %s closed in %s", c.name, time.Since(start).Round(time.Millisecond))
		}()
		var errs []error
		c.nodes.stop()
		errs = append(errs, c.scheduler.stop(time.Minute), c.controllers.stop(time.Minute), c.apiserver.stop(time.Minute))
		if c.cancel != nil {
			c.cancel()
		}
		if c.etcd != nil {
			c.etcd.close()
		}
		if c.dir != "" {
			errs = append(errs, os.RemoveAll(c.dir))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

var quietOnce sync.Once

// quietLogs silences klog, which all the components log through, unless
// REALKUBE_LOG is set (to a klog verbosity: REALKUBE_LOG=2 logs what
// the components log at -v=2 to stderr).
func quietLogs() {
	quietOnce.Do(func() {
		v := os.Getenv("REALKUBE_LOG")
		if v == "" {
			klog.SetLogger(logr.Discard())
			return
		}
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", v)
	})
}

// StartControlPlane starts a control plane with spec's PKI and networks
// and returns a *ControlPlane once its API server is ready, the
// controllers and scheduler serve, and the service account controller
// has made the default ServiceAccount of the default namespace.
func (b *Backend) StartControlPlane(ctx context.Context, spec kube.ControlPlaneSpec) (kube.ControlPlane, error) {
	start := time.Now()
	c, err := b.start(ctx, spec)
	if err != nil {
		if c != nil {
			_ = c.Close()
		}
		return nil, fmt.Errorf("realkube: control plane %s: %w", spec.Name, err)
	}
	b.mu.Lock()
	b.planes = append(b.planes, c)
	b.mu.Unlock()
	b.t.Cleanup(func() {
		if err := c.Close(); err != nil {
			b.t.Logf("realkube: closing control plane %s: %v", c.name, err)
		}
	})
	c.logf("realkube: control plane %s: API server https://%s ready in %s (%s)", c.name, c.addr, time.Since(start).Round(time.Millisecond), strings.Join(c.phases, ", "))
	return c, nil
}

func (b *Backend) start(ctx context.Context, spec kube.ControlPlaneSpec) (*ControlPlane, error) {
	ca, err := parseAuthority(spec.CACert, spec.CAKey)
	if err != nil {
		return nil, err
	}
	if len(spec.ServiceAccountKey) == 0 || len(spec.ServiceAccountPub) == 0 {
		return nil, errors.New("no service account key pair")
	}
	serviceSubnet := spec.ServiceSubnet
	if !serviceSubnet.IsValid() {
		serviceSubnet = netip.MustParsePrefix("10.96.0.0/12") // kubeadm's default
	}
	dir, err := os.MkdirTemp("", "realkube-"+dnsLabel(spec.Name)+"-")
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &ControlPlane{name: spec.Name, dir: dir, cancel: cancel, logf: b.t.Logf}
	last := time.Now()
	phase := func(name string) {
		c.phases = append(c.phases, fmt.Sprintf("%s %s", name, time.Since(last).Round(time.Millisecond)))
		last = time.Now()
	}
	runCtx = klog.NewContext(runCtx, klog.Background().WithValues("cluster", spec.Name))

	// PKI, as kubeadm's /etc/kubernetes/pki.
	frontProxy, err := newAuthority("front-proxy-ca")
	if err != nil {
		return c, err
	}
	servingCert, servingKey, err := ca.sign(servingLeaf(spec.Name, serviceSubnet))
	if err != nil {
		return c, err
	}
	proxyCert, proxyKey, err := frontProxy.sign(leaf{cn: "front-proxy-client"})
	if err != nil {
		return c, err
	}
	adminCert, adminKey, err := ca.sign(leaf{cn: "kubernetes-admin", orgs: []string{"system:masters"}})
	if err != nil {
		return c, err
	}
	pki := filepath.Join(dir, "pki")
	if err := os.Mkdir(pki, 0o700); err != nil {
		return c, err
	}
	if err := writeFiles(pki, map[string][]byte{
		"ca.crt": ca.certPEM, "ca.key": ca.keyPEM,
		"apiserver.crt": servingCert, "apiserver.key": servingKey,
		"sa.key": spec.ServiceAccountKey, "sa.pub": spec.ServiceAccountPub,
		"front-proxy-ca.crt":     frontProxy.certPEM,
		"front-proxy-client.crt": proxyCert, "front-proxy-client.key": proxyKey,
	}); err != nil {
		return c, err
	}
	p := func(name string) string { return filepath.Join(pki, name) }

	// etcd.
	token := "realkube-" + randomHex(8)
	if c.etcd, err = startEtcd(dir, token, spec.FirstEtcdMember); err != nil {
		return c, err
	}
	phase("etcd")

	// kube-apiserver, with kubeadm's flags
	// (cmd/kubeadm/app/phases/controlplane/manifests.go getAPIServerCommand)
	// on a loopback port, and no kubelet client certificate: this API
	// server never dials a node (no exec, logs or port-forward).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return c, err
	}
	c.addr = l.Addr().String()
	server := "https://" + c.addr
	c.admin = &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.certPEM, CertData: adminCert, KeyData: adminKey},
		QPS:             1000,
		Burst:           2000,
		UserAgent:       "realkube",
		WarningHandler:  rest.NoWarnings{},
	}
	apiFlags := []string{
		"--advertise-address=127.0.0.1",
		"--bind-address=127.0.0.1",
		"--enable-admission-plugins=NodeRestriction",
		"--service-cluster-ip-range=" + serviceSubnet.Masked().String(),
		"--service-account-key-file=" + p("sa.pub"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--client-ca-file=" + p("ca.crt"),
		"--tls-cert-file=" + p("apiserver.crt"),
		"--tls-private-key-file=" + p("apiserver.key"),
		"--enable-bootstrap-token-auth=true",
		"--allow-privileged=true",
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-client-ca-file=" + p("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--proxy-client-cert-file=" + p("front-proxy-client.crt"),
		"--proxy-client-key-file=" + p("front-proxy-client.key"),
		"--authorization-mode=Node,RBAC",
		"--etcd-servers=" + c.etcd.clientURL(),
		"--profiling=false",
	}
	if c.apiserver, err = startAPIServer(runCtx, l, filepath.Join(dir, "apiserver"), apiFlags, c.admin); err != nil {
		return c, err
	}
	phase("kube-apiserver")
	if c.api, err = newClientAPI(c.admin); err != nil {
		return c, err
	}

	// kube-controller-manager and kube-scheduler, with kubeadm's flags
	// (manifests.go getControllerManagerCommand, getSchedulerCommand)
	// and kubeconfigs like controller-manager.conf and scheduler.conf,
	// but without leader election: with it, a scheduler whose context is
	// cancelled exits the process (cmd/kube-scheduler/app/server.go
	// OnStoppedLeading: os.Exit(0)).
	kcmConf, err := b.componentKubeconfig(ca, server, "system:kube-controller-manager")
	if err != nil {
		return c, err
	}
	schedConf, err := b.componentKubeconfig(ca, server, "system:kube-scheduler")
	if err != nil {
		return c, err
	}
	if err := writeFiles(dir, map[string][]byte{"controller-manager.conf": kcmConf, "scheduler.conf": schedConf}); err != nil {
		return c, err
	}
	kcmFlags := []string{
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--kubeconfig=" + filepath.Join(dir, "controller-manager.conf"),
		"--authentication-kubeconfig=" + filepath.Join(dir, "controller-manager.conf"),
		"--authorization-kubeconfig=" + filepath.Join(dir, "controller-manager.conf"),
		"--client-ca-file=" + p("ca.crt"),
		"--requestheader-client-ca-file=" + p("front-proxy-ca.crt"),
		"--root-ca-file=" + p("ca.crt"),
		"--service-account-private-key-file=" + p("sa.key"),
		"--cluster-signing-cert-file=" + p("ca.crt"),
		"--cluster-signing-key-file=" + p("ca.key"),
		"--use-service-account-credentials=true",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--profiling=false",
		// Not kubeadm's: the default 20 QPS make the start of the
		// controllers, each with its own ServiceAccount, take 5 s.
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
	}
	if spec.PodSubnet.IsValid() {
		kcmFlags = append(kcmFlags,
			"--allocate-node-cidrs=true",
			"--cluster-cidr="+spec.PodSubnet.Masked().String(),
			"--service-cluster-ip-range="+serviceSubnet.Masked().String())
		if spec.NodeCIDRMaskSize > 0 {
			kcmFlags = append(kcmFlags, "--node-cidr-mask-size="+strconv.Itoa(spec.NodeCIDRMaskSize))
		}
	}
	// One more start after a failed one: on a loaded machine a controller
	// manager has been seen to serve /healthz and then not start its
	// controllers within the minute startControllerManager waits (a
	// failed start leaves nothing behind for the next: see there).
	for attempt := 0; ; attempt++ {
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return c, err
		}
		c.controllers, err = startControllerManager(runCtx, l, filepath.Join(dir, "controller-manager"), kcmFlags)
		if err == nil || attempt == 1 || runCtx.Err() != nil {
			break
		}
		c.logf("realkube: control plane %s: kube-controller-manager did not start (%v); starting it again", spec.Name, err)
	}
	if err != nil {
		return c, err
	}
	phase("kube-controller-manager")
	schedFlags := []string{
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--kubeconfig=" + filepath.Join(dir, "scheduler.conf"),
		"--authentication-kubeconfig=" + filepath.Join(dir, "scheduler.conf"),
		"--authorization-kubeconfig=" + filepath.Join(dir, "scheduler.conf"),
		"--profiling=false",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
	}
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return c, err
	}
	if c.scheduler, err = startScheduler(runCtx, l, filepath.Join(dir, "scheduler"), schedFlags); err != nil {
		return c, err
	}

	phase("kube-scheduler")

	// The kubelets' part.
	simCfg := rest.CopyConfig(c.admin)
	simCfg.UserAgent = "realkube-node-simulator"
	client, err := kubernetes.NewForConfig(simCfg)
	if err != nil {
		return c, err
	}
	if c.nodes, err = startNodeSimulator(runCtx, client, spec.PodSubnet.IsValid(), spec.MountNFS); err != nil {
		return c, err
	}

	// What MemoryAPI has at once: the system namespaces and the default
	// ServiceAccount (pkg/controller/serviceaccount/serviceaccounts_controller.go),
	// which the ServiceAccount admission plugin needs before a pod of the
	// namespace can be created.
	var missing error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.controllers.done:
			return false, fmt.Errorf("kube-controller-manager exited: %v", c.controllers.err)
		default:
		}
		for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
			if _, missing = client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); missing != nil {
				return false, ignoreNotFound(missing)
			}
		}
		_, missing = client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return missing == nil, ignoreNotFound(missing)
	})
	if err != nil {
		return c, fmt.Errorf("waiting for the default ServiceAccount: %w (last: %v)", err, missing)
	}
	phase("node simulator and default ServiceAccount")
	return c, nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// componentKubeconfig is the kubeconfig of a control plane component:
// a client certificate of the cluster CA with CN user (kubeadm's
// controller-manager.conf and scheduler.conf, whose users the API
// server's bootstrap RBAC policy binds, plugin/pkg/auth/authorizer/rbac/
// bootstrappolicy/policy.go).
func (b *Backend) componentKubeconfig(ca *authority, server, user string) ([]byte, error) {
	cert, key, err := ca.sign(leaf{cn: user})
	if err != nil {
		return nil, err
	}
	return kubeconfig(server, ca.certPEM, cert, key, user)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// dnsLabel makes s usable in a file name.
func dnsLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
}

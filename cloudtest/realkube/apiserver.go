package realkube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// component is a control plane program running in this process: cancel
// stops it, done is closed when it has returned.
type component struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // valid once done is closed
}

// stop cancels the component and waits up to timeout for it to return.
func (c *component) stop(timeout time.Duration) error {
	if c == nil {
		return nil
	}
	c.cancel()
	select {
	case <-c.done:
		if c.err != nil && !errors.Is(c.err, context.Canceled) {
			return fmt.Errorf("%s: %w", c.name, c.err)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not stop within %s", c.name, timeout)
	}
}

// newComponentGlobals returns a ComponentGlobalsRegistry of its own for
// one component, with a copy of the process's feature gates and the
// effective version of a build without version stamping, as the upstream
// test servers do (cmd/kube-apiserver/app/testing/testserver.go: "set up
// new instance of ComponentGlobalsRegistry instead of using the
// DefaultComponentGlobalsRegistry to avoid contention in parallel
// tests").
func newComponentGlobals() (basecompatibility.ComponentGlobalsRegistry, error) {
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := compatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	effectiveVersion.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	r := basecompatibility.NewComponentGlobalsRegistry()
	if err := r.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, err
	}
	return r, nil
}

// startAPIServer runs kube-apiserver with flags on l, the way
// cmd/kube-apiserver/app/testing/testserver.go StartTestServer does
// (options, Complete, Validate, NewConfig, CreateServerChain,
// PrepareRun, Run), but without its fixed service account key and issuer:
// StartTestServer overwrites --service-account-key-file,
// --service-account-signing-key-file and --service-account-issuer after
// parsing the flags, and the cluster's tokens must verify against
// sa.pub. It returns once admin (a client of the server) sees /readyz
// answer ok.
func startAPIServer(ctx context.Context, l net.Listener, certDir string, flags []string, admin *rest.Config) (*component, error) {
	s := options.NewServerRunOptions()
	registry, err := newComponentGlobals()
	if err != nil {
		l.Close()
		return nil, err
	}
	s.Options.GenericServerRunOptions.ComponentGlobalsRegistry = registry
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	s.SecureServing.Listener = l
	s.SecureServing.BindPort = l.Addr().(*net.TCPAddr).Port
	s.SecureServing.ServerCert.CertDirectory = certDir
	if err := fs.Parse(flags); err != nil {
		l.Close()
		return nil, err
	}
	if err := registry.Set(); err != nil {
		l.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &component{name: "kube-apiserver", cancel: cancel, done: make(chan struct{})}
	completed, err := s.Complete(ctx)
	if err != nil {
		cancel()
		l.Close()
		return nil, fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		cancel()
		l.Close()
		return nil, fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		cancel()
		l.Close()
		return nil, err
	}
	cc, err := config.Complete()
	if err != nil {
		cancel()
		l.Close()
		return nil, err
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		cancel()
		l.Close()
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		cancel()
		l.Close()
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	go func() {
		defer close(c.done)
		c.err = prepared.Run(ctx)
	}()
	if err := waitHealthy(ctx, c, admin, "/readyz", time.Minute); err != nil {
		_ = c.stop(time.Minute)
		return nil, err
	}
	return c, nil
}

// waitHealthy polls path of the server of cfg until it answers 200.
func waitHealthy(ctx context.Context, c *component, cfg *rest.Config, path string, timeout time.Duration) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.done:
			return false, fmt.Errorf("%s exited: %v", c.name, c.err)
		default:
		}
		status := 0
		body, _ := client.CoreV1().RESTClient().Get().AbsPath(path).Do(ctx).StatusCode(&status).Raw()
		last = string(body)
		return status == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s: waiting for %s: %w (last answer: %.500s)", c.name, path, err, last)
	}
	return nil
}

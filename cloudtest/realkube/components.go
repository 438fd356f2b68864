package realkube

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
	_ "unsafe" // go:linkname informerNameRegistry

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
	kcm "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// configzMu serializes the start of controller managers and schedulers.
// Their Run registers the component's configuration in a process-wide
// table (k8s.io/component-base/configz: configz.New fails with "register
// config %q twice"), which would keep a second control plane of the
// process from starting. So each start holds the lock until the
// component serves /healthz (it has registered by then) and deletes its
// entry again: /configz is the only thing that loses.
var configzMu sync.Mutex

// informerNameRegistry is client-go's table of informer names
// (k8s.io/client-go/tools/cache/identity.go: "Names must be globally
// unique across a process"). kube-controller-manager registers
// "kube-controller-manager" in it when it starts its controllers
// (cmd/kube-controller-manager/app/controllermanager.go
// CreateControllerContext) and never releases it, so a second controller
// manager of the process would fail with "informer name ... is already
// registered". startControllerManager forgets the name once a controller
// manager has registered it; the first one keeps its InformerName, which
// only decides which informers publish metrics. The declaration must
// match client-go v0.36's layout: checkInformerNames verifies it.
//
//go:linkname informerNameRegistry k8s.io/client-go/tools/cache.informerNameRegistry
var informerNameRegistry struct {
	sync.Mutex
	names map[string]*cache.InformerName
}

const kcmInformerName = "kube-controller-manager"

var informerNamesOK = sync.OnceValue(func() error {
	probe := "realkube-layout-probe-" + randomHex(4)
	n, err := cache.NewInformerName(probe)
	if err != nil {
		return err
	}
	defer n.Release()
	informerNameRegistry.Lock()
	defer informerNameRegistry.Unlock()
	if informerNameRegistry.names[probe] != n {
		return errors.New("client-go's informer name registry is not laid out as realkube expects (k8s.io/client-go/tools/cache/identity.go changed)")
	}
	delete(informerNameRegistry.names, probe)
	return nil
})

// informerNameRegistered reports whether name is in client-go's table,
// removing it when forget.
func informerNameRegistered(name string, forget bool) bool {
	informerNameRegistry.Lock()
	defer informerNameRegistry.Unlock()
	_, ok := informerNameRegistry.names[name]
	if forget {
		delete(informerNameRegistry.names, name)
	}
	return ok
}

// startControllerManager runs kube-controller-manager with flags in this
// process, as cmd/kube-controller-manager/app/testing/testserver.go
// StartTestServer does (options, Config, app.Run), serving on l.
func startControllerManager(ctx context.Context, l net.Listener, certDir string, flags []string) (*component, error) {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		l.Close()
		return nil, err
	}
	registry, err := newComponentGlobals()
	if err != nil {
		l.Close()
		return nil, err
	}
	s.ComponentGlobalsRegistry = registry
	all, disabled, aliases := kcm.KnownControllers(), kcm.ControllersDisabledByDefault(), kcm.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(flags); err != nil {
		l.Close()
		return nil, err
	}
	s.ParsedFlags = &named
	if err := registry.Set(); err != nil {
		l.Close()
		return nil, err
	}
	s.SecureServing.Listener = l
	s.SecureServing.BindPort = l.Addr().(*net.TCPAddr).Port
	s.SecureServing.ServerCert.CertDirectory = certDir
	ctx, cancel := context.WithCancel(ctx)
	config, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		cancel()
		l.Close()
		return nil, fmt.Errorf("kube-controller-manager options: %w", err)
	}
	if err := informerNamesOK(); err != nil {
		cancel()
		l.Close()
		return nil, err
	}
	c := &component{name: "kube-controller-manager", cancel: cancel, done: make(chan struct{})}
	configzMu.Lock()
	defer configzMu.Unlock()
	informerNameRegistered(kcmInformerName, true)
	// Whatever happens, the next controller manager of the process must be
	// able to register again: a start that failed after Run registered
	// would otherwise fail every start after it. On the failure paths
	// below Run has ended (c.stop waits for it) before these run.
	defer func() {
		configz.Delete(kcm.ConfigzName)
		informerNameRegistered(kcmInformerName, true)
	}()
	go func() {
		defer close(c.done)
		c.err = kcm.Run(ctx, config.Complete())
	}()
	if err := waitServing(ctx, c, l.Addr().String()); err != nil {
		_ = c.stop(time.Minute)
		return nil, err
	}
	// Run registers the informer name after it serves /healthz.
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-c.done:
			return false, fmt.Errorf("kube-controller-manager exited: %v", c.err)
		default:
		}
		return informerNameRegistered(kcmInformerName, true), nil
	})
	if err != nil {
		_ = c.stop(time.Minute)
		return nil, err
	}
	return c, nil
}

// startScheduler runs kube-scheduler with flags in this process, as
// cmd/kube-scheduler/app/testing/testserver.go StartTestServer does
// (options, app.Setup, app.Run), serving on l.
func startScheduler(ctx context.Context, l net.Listener, certDir string, flags []string) (*component, error) {
	opts := scheduleroptions.NewOptions()
	registry, err := newComponentGlobals()
	if err != nil {
		l.Close()
		return nil, err
	}
	opts.ComponentGlobalsRegistry = registry
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(flags); err != nil {
		l.Close()
		return nil, err
	}
	if err := registry.Set(); err != nil {
		l.Close()
		return nil, err
	}
	opts.SecureServing.Listener = l
	opts.SecureServing.BindPort = l.Addr().(*net.TCPAddr).Port
	opts.SecureServing.ServerCert.CertDirectory = certDir
	ctx, cancel := context.WithCancel(ctx)
	cc, sched, err := scheduler.Setup(ctx, opts)
	if err != nil {
		cancel()
		l.Close()
		return nil, fmt.Errorf("kube-scheduler options: %w", err)
	}
	c := &component{name: "kube-scheduler", cancel: cancel, done: make(chan struct{})}
	configzMu.Lock()
	defer configzMu.Unlock()
	defer configz.Delete("componentconfig") // also after a failed start: see startControllerManager
	go func() {
		defer close(c.done)
		err := scheduler.Run(ctx, cc, sched)
		if ctx.Err() == nil {
			c.err = err
		}
		// Without leader election Run ends with "finished without
		// leader elect" when its context is cancelled (server.go).
	}()
	if err := waitServing(ctx, c, l.Addr().String()); err != nil {
		_ = c.stop(time.Minute)
		return nil, err
	}
	return c, nil
}

// waitServing polls https://addr/healthz of a controller manager or
// scheduler (a self-signed certificate; /healthz is always allowed,
// --authorization-always-allow-paths) until it answers 200.
func waitServing(ctx context.Context, c *component, addr string) error {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // our own loopback server's self-signed certificate
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.done:
			return false, fmt.Errorf("%s exited: %v", c.name, c.err)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/healthz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s: waiting for /healthz: %w (last: %s)", c.name, err, last)
	}
	return nil
}

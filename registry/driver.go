package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// Plumbing is how a driver reaches the VIM and the VMs; every field has a
// default except SSH.
type Plumbing struct {
	// SSH returns the SSH settings shared by the VNF's VMs (host-key
	// policy, dialer, timeouts, logger); it is called once per hook, so a
	// known_hosts file updated after a heal is read again. Required.
	SSH func(ctx context.Context) (remote.Config, error)
	// Heat connects to the VNF's VIM; [heat.ConnectInstance] by default.
	Heat func(ctx context.Context, inst *lcm.VnfInstance) (*heat.Client, error)
	// Stack returns the name or ID of the VNF's top-level stack;
	// [heat.StackName] by default.
	Stack func(inst *lcm.VnfInstance) string
}

// HeatClient returns the Heat client and top-level stack of inst.
func (p Plumbing) HeatClient(ctx context.Context, inst *lcm.VnfInstance) (*heat.Client, string, error) {
	connect := p.Heat
	if connect == nil {
		connect = func(ctx context.Context, inst *lcm.VnfInstance) (*heat.Client, error) {
			return heat.ConnectInstance(ctx, inst, nil)
		}
	}
	c, err := connect(ctx, inst)
	if err != nil {
		return nil, "", err
	}
	stack := heat.StackName
	if p.Stack != nil {
		stack = p.Stack
	}
	return c, stack(inst), nil
}

// Dial connects to a node as user.
func (p Plumbing) Dial(ctx context.Context, n lcm.Node, user string, password remote.Secret) (*remote.SSHHost, error) {
	if p.SSH == nil {
		return nil, errors.New("registry: Plumbing.SSH is not set: it says how to verify host keys")
	}
	base, err := p.SSH(ctx)
	if err != nil {
		return nil, err
	}
	return remote.Dial(ctx, base.For(n.SSHAddress, n.Resource, user, password))
}

// VNFDriver is the management driver of the private registry VNF
// (cir-k8s-cluster spec): instantiate_end installs Docker on the VM,
// loads or pulls the registry image and runs the registry; heal_end does
// the same on the new VM with the parameters stored at instantiation.
// Other hooks do nothing. It is safe for concurrent use.
type VNFDriver struct {
	lcm.NopDriver
	Plumbing
	// Run tunes the container (DataDir); Image and Port come from the
	// parameters.
	Run RunOptions
	// DockerWait bounds the wait for the Docker daemon (2 minutes) and
	// HealthWait the wait for the registry to answer (1 minute).
	DockerWait, HealthWait time.Duration
}

// InstantiateEnd installs the registry from the request's
// private_registry_installation_param.
func (d *VNFDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	if op.Request == nil {
		return nil, errors.New("registry: instantiate_end without a request")
	}
	return d.install(ctx, lcm.InstantiateEnd, op.Instance, op.Request.AdditionalParams, op.Package)
}

// HealEnd re-creates the registry on the healed VM from the
// additionalParams the VNF was instantiated with.
func (d *VNFDriver) HealEnd(ctx context.Context, op *lcm.HealOp) (*lcm.HookResult, error) {
	if op.Instance == nil || op.Instance.InstantiatedVnfInfo == nil {
		return nil, errors.New("registry: heal_end: the VNF instance has no instantiatedVnfInfo with the stored additionalParams")
	}
	return d.install(ctx, lcm.HealEnd, op.Instance, op.Instance.InstantiatedVnfInfo.AdditionalParams, op.Package)
}

// DecodeInstallParams decodes and validates
// private_registry_installation_param: image_path must name a valid
// `docker save` archive in pkg, read into InstallParams.Image.
func DecodeInstallParams(raw json.RawMessage, pkg *lcm.Package) (InstallParams, error) {
	var p InstallParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{Package: pkg}, lcm.Param(InstallParamKey, &p).Required())
	return p, err
}

func (d *VNFDriver) install(ctx context.Context, hook lcm.Hook, inst *lcm.VnfInstance, raw json.RawMessage, pkg *lcm.Package) (*lcm.HookResult, error) {
	p, err := DecodeInstallParams(raw, pkg)
	if err != nil {
		return nil, err // nothing has run
	}
	if p.ImagePath != "" && p.Image == nil {
		return nil, fmt.Errorf("registry: %s.image_path: no VNF package to read it from", InstallParamKey)
	}
	ctx = lcm.WithHook(ctx, hook)
	hc, stack, err := d.HeatClient(ctx, inst)
	if err != nil {
		return nil, err
	}
	nodes, err := hc.Nodes(ctx, stack, heat.Group{Role: lcm.RoleRegistry, SSHCP: p.SSHCPName})
	if err != nil {
		return nil, err
	}
	node := nodes[0]
	h, err := d.Dial(ctx, node, p.SSHUsername, p.SSHPassword)
	if err != nil {
		return nil, err
	}
	defer h.Close()

	res := &lcm.HookResult{Hook: hook}
	hosts := []remote.Host{h}
	step := func(name string, fn func(ctx context.Context, h remote.Host) (lcm.Result, error)) error {
		rs, err := lcm.OnHosts(ctx, name, hosts, fn)
		res.Add(name, rs)
		return err
	}
	if err := step("install-docker", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return InstallDocker(ctx, h, DockerOptions{Proxy: p.Proxy, Wait: d.DockerWait})
	}); err != nil {
		return res, err
	}
	run := d.Run
	run.Port = p.Port()
	if p.Image != nil {
		err = step("load-image", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			image, r, err := LoadImageArchive(ctx, h, pkg, *p.Image)
			run.Image = image
			return r, err
		})
	} else {
		run.Image = cmp.Or(run.Image, DefaultImage)
		err = step("pull-image", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return PullImage(ctx, h, run.Image)
		})
	}
	if err != nil {
		return res, err
	}
	if err := step("run-registry", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return RunRegistry(ctx, h, run)
	}); err != nil {
		return res, err
	}
	err = step("registry-health", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
		return lcm.Unchanged, WaitHealthy(ctx, h, node.NICAddress, run.withDefaults().Port, d.HealthWait)
	})
	return res, err
}

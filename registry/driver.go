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
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// VNFDriver is the management driver of the private registry VNF
// (cir-k8s-cluster spec): instantiate_end installs Docker on the VM,
// loads or pulls the registry image and runs the registry; heal_end does
// the same on the new VM with the parameters stored at instantiation.
// Other hooks do nothing. It is safe for concurrent use.
type VNFDriver struct {
	lcm.NopDriver
	// Plumbing reaches Heat and the VM; its SSH field is required.
	Plumbing plumbing.Config
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
	creds := plumbing.Credentials{lcm.RoleRegistry: {Username: p.SSHUsername, Password: p.SSHPassword}}
	return d.Plumbing.Run(ctx, hook, inst, creds, func(ctx context.Context, r *plumbing.Runner) error {
		nodes, err := r.Session().Nodes(ctx, heat.Group{Role: lcm.RoleRegistry, SSHCP: p.SSHCPName})
		if err != nil {
			return err
		}
		node := nodes[0] // every step below shares its connection
		step := func(name string, fn func(ctx context.Context, h remote.Host) (lcm.Result, error)) error {
			return r.OnNodes(ctx, name, nodes[:1], func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
				return fn(ctx, h)
			})
		}
		if err := step("install-docker", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return InstallDocker(ctx, h, DockerOptions{Proxy: p.Proxy, Wait: d.DockerWait})
		}); err != nil {
			return err
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
			return err
		}
		if err := step("run-registry", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return RunRegistry(ctx, h, run)
		}); err != nil {
			return err
		}
		return step("registry-health", func(ctx context.Context, h remote.Host) (lcm.Result, error) {
			return lcm.Unchanged, WaitHealthy(ctx, h, node.NICAddress, run.withDefaults().Port, d.HealthWait)
		})
	})
}

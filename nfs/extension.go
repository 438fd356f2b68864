package nfs

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// The step names the extension's work is recorded under.
const (
	// StepClient is the NFS client on a node that joins.
	StepClient = "nfs-client"
	// StepStorage is the storage server's setup: its volumes, the NFS
	// server and the exports.
	StepStorage = "nfs-storage"
	// StepRegisterPV is the PersistentVolumes' registration, recorded
	// on the control plane that applied them.
	StepRegisterPV = "pv-register"
	// StepDeletePV is their deletion before the storage server heals.
	StepDeletePV = "pv-delete"
)

// ExtensionOptions say what the storage extension needs besides the
// parameters.
type ExtensionOptions struct {
	// Instance is the VNF instance's ID: the owner recorded on each
	// PersistentVolume ([OwnerAnnotation]). Required with
	// pv_registration_params.
	Instance string
	// Proxy is the proxy apt goes through on the storage server (the
	// cluster's proxy); nil for none.
	Proxy *system.Proxy
	// Volume tunes [SetupVolume].
	Volume VolumeOptions
	// PVTimeout bounds each wait for a PersistentVolume;
	// [DefaultPVTimeout] when zero.
	PVTimeout time.Duration
}

// Extensions returns the pv-k8s-cluster spec's work as two extensions of
// a Kubernetes cluster's hooks (kubeadm's, kubespray's; see
// [plumbing.Extension]): the NFS client on the nodes ([StepClient]), and
// the storage server, its own VM, with the PersistentVolumes on it
// ([StepStorage]); no storage_server, no extensions:
//
//   - Check (before anything changes, when the hook will set up the
//     storage server): every volume_resource_id is a Cinder volume of the
//     VNF's stack attached to the storage server, every nfs_server_cp a
//     port with an address, and every export_to admits at least one of
//     the cluster's nodes; a problem is an [*lcm.ParamsError] at the
//     parameter's path.
//   - BeforeJoin, on every master and worker that joins (instantiate_end,
//     scale_end, heal_end): [InstallNFSClient].
//   - Ready (instantiate_end, heal_end of the entire VNF): on the storage
//     server apt's proxy, [SetupVolume] for each volume, [InstallNFSServer]
//     and [ExportNFS]; then each PersistentVolume registered
//     ([RegisterPV]) at the first fixed IP of its nfs_server_cp.
//   - HealStart of the storage server: the heal is refused while one of
//     the VNF's PersistentVolumes is Bound ([CheckPVsNotInUse]: the
//     error names each and its claim); otherwise they are deleted
//     ([DeletePVs]) while the old server still serves them.
//   - HealEnd of the storage server: its new VM set up as at Ready and
//     the PersistentVolumes registered again at its address. A volume
//     Heat kept keeps its data: [SetupVolume] never formats a file
//     system.
//
// Scale-in needs nothing: a worker's mounts go with it.
func (p StorageParams) Extensions(pkg *lcm.Package, opts ExtensionOptions) plumbing.Extensions {
	s := p.StorageServer
	if s == nil {
		return nil
	}
	x := &storage{params: p, server: *s, pkg: pkg, opts: opts}
	return plumbing.Extensions{{
		Name: StepClient,
		BeforeJoin: func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
			return InstallNFSClient(ctx, h, system.PackagesOptions{})
		},
	}, {
		Name:  StepStorage,
		VMs:   s.VMs(),
		Check: x.check,
		Ready: func(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster) error {
			return x.setUp(ctx, r, c, c.WithRole(lcm.RoleStorage))
		},
		HealStart: x.healStart,
		HealEnd:   x.setUp,
	}}
}

// storage is the extension's state: the parameters and what it needs to
// act on them.
type storage struct {
	params StorageParams
	server StorageServer
	pkg    *lcm.Package
	opts   ExtensionOptions
}

// paramPath is the full path of a key below k8s_cluster_installation_param.
func paramPath(rest string) string { return ClusterParamKey + "." + rest }

// check is the extension's Check.
func (x *storage) check(ctx context.Context, r *plumbing.Runner, vms []lcm.Node) error {
	var probs []lcm.Problem
	add := func(path, format string, args ...any) {
		probs = append(probs, lcm.Problem{Path: paramPath(path), Message: fmt.Sprintf(format, args...)})
	}
	if len(x.params.PVRegistrationParams) > 0 && x.opts.Instance == "" {
		return errors.New("nfs: ExtensionOptions.Instance is required to register PersistentVolumes: it is their owner")
	}
	servers := lcm.NodesWithRole(vms, lcm.RoleStorage)
	if len(servers) != 1 {
		return fmt.Errorf("nfs: Heat reports %d storage servers for ssh_cp_name %s, want one", len(servers), x.server.SSHCPName)
	}
	server := servers[0]
	s := r.Session()
	for i, v := range x.server.CinderVolumeSetupParams {
		vol, err := s.Heat().Volume(ctx, s.Stack(), v.VolumeResourceID)
		at := fmt.Sprintf("storage_server.cinder_volume_setup_params[%d].volume_resource_id", i)
		switch {
		case isTopologyError(err):
			add(at, "%v", err)
		case err != nil:
			return fmt.Errorf("nfs: %w", err)
		case vol.ServerID != server.ServerID:
			add(at, "volume %s is attached to server %s, not to the storage server %s (%s)", v.VolumeResourceID, vol.ServerID, server.Resource, server.ServerID)
		}
	}
	checked := map[string]bool{}
	for i, reg := range x.params.PVRegistrationParams {
		if checked[reg.NFSServerCP] {
			continue // one problem per port is enough
		}
		checked[reg.NFSServerCP] = true
		if _, err := s.Heat().CPAddress(ctx, s.Stack(), reg.NFSServerCP); isTopologyError(err) {
			add(fmt.Sprintf("pv_registration_params[%d].nfs_server_cp", i), "%v", err)
		} else if err != nil {
			return fmt.Errorf("nfs: %w", err)
		}
	}
	var nodes []netip.Addr
	var shown []string
	for _, n := range vms {
		if n.Role != lcm.RoleMaster && n.Role != lcm.RoleWorker {
			continue
		}
		if a, err := netip.ParseAddr(n.NICAddress); err == nil {
			nodes = append(nodes, a)
			shown = append(shown, a.String())
		}
	}
	for i, e := range x.server.NFSServerSetupParams {
		admits := false
		for _, a := range nodes {
			admits = admits || e.ExportTo.Contains(a)
		}
		if !admits && len(nodes) > 0 {
			add(fmt.Sprintf("storage_server.nfs_server_setup_params[%d].export_to", i), "%s admits none of the cluster's nodes (%s): their pods could not mount %s", e.ExportTo, strings.Join(shown, ", "), e.ExportDir)
		}
	}
	if len(probs) > 0 {
		return &lcm.ParamsError{Problems: probs}
	}
	return nil
}

// isTopologyError reports whether err is Heat saying that a resource the
// parameters name is missing or of the wrong kind (the request's fault),
// rather than that Heat could not be asked.
func isTopologyError(err error) bool {
	return errors.Is(err, heat.ErrNotFound) || errors.Is(err, heat.ErrWrongType) || errors.Is(err, heat.ErrInvalidName)
}

// setUp sets up the storage servers servers (their volumes, the NFS
// server, the exports) and registers the PersistentVolumes on them.
func (x *storage) setUp(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster, servers []lcm.Node) error {
	if len(servers) == 0 {
		return errors.New("nfs: Heat reports no storage server")
	}
	s := r.Session()
	var volumes []heat.Volume
	for _, v := range x.server.CinderVolumeSetupParams {
		vol, err := s.Heat().Volume(ctx, s.Stack(), v.VolumeResourceID)
		if err != nil {
			return fmt.Errorf("nfs: %w", err)
		}
		volumes = append(volumes, vol)
	}
	err := r.OnNodes(ctx, StepStorage, servers, func(ctx context.Context, n lcm.Node, h remote.Host) (lcm.Result, error) {
		res, err := system.SetAptProxy(ctx, h, system.AptProxyOptions{Proxy: x.opts.Proxy})
		if err != nil {
			return res, fmt.Errorf("nfs: %w", err)
		}
		for i, v := range volumes {
			if v.ServerID != n.ServerID {
				return res, fmt.Errorf("nfs: volume %s (%s) is attached to server %s, not to %s (%s)", v.Resource, v.ID, v.ServerID, n.Resource, n.ServerID)
			}
			vol := Volume{ID: v.ID, Device: v.Device, MountTo: x.server.CinderVolumeSetupParams[i].MountTo}
			r, err := SetupVolume(ctx, h, vol, x.opts.Volume)
			res = res.And(r)
			if err != nil {
				return res, err
			}
		}
		r, err := InstallNFSServer(ctx, h, ServerOptions{})
		res = res.And(r)
		if err != nil {
			return res, err
		}
		r, err = ExportNFS(ctx, h, x.server.NFSServerSetupParams, ExportsOptions{})
		return res.And(r), err
	})
	if err != nil {
		return err
	}
	return x.register(ctx, r, c)
}

// pvs reads the PersistentVolume manifests from the VNF package.
func (x *storage) pvs() ([]PV, error) {
	var out []PV
	for i, reg := range x.params.PVRegistrationParams {
		pv, err := ReadPV(x.pkg, reg.PVManifestFilePath)
		if err != nil {
			return nil, fmt.Errorf("nfs: %s: %s %w", paramPath(fmt.Sprintf("pv_registration_params[%d].pv_manifest_file_path", i)), reg.PVManifestFilePath, err)
		}
		out = append(out, pv)
	}
	return out, nil
}

// register registers every PersistentVolume through the cluster's API,
// each at the address of its nfs_server_cp.
func (x *storage) register(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster) error {
	if len(x.params.PVRegistrationParams) == 0 {
		return nil
	}
	pvs, err := x.pvs()
	if err != nil {
		return err
	}
	s := r.Session()
	servers := make([]string, len(pvs))
	addrs := map[string]string{} // by nfs_server_cp: the manifests often share one
	for i, reg := range x.params.PVRegistrationParams {
		addr, ok := addrs[reg.NFSServerCP]
		if !ok {
			if addr, err = s.Heat().CPAddress(ctx, s.Stack(), reg.NFSServerCP); err != nil {
				return fmt.Errorf("nfs: %w", err)
			}
			addrs[reg.NFSServerCP] = addr
		}
		servers[i] = addr
	}
	return r.Once(ctx, StepRegisterPV, c.ControlPlane, func(ctx context.Context) (lcm.Result, error) {
		res := lcm.Unchanged
		for i, pv := range pvs {
			r, err := RegisterPV(ctx, c.API, pv, servers[i], x.pvOptions())
			res = res.And(r)
			if err != nil {
				return res, err
			}
		}
		return res, nil
	})
}

// healStart refuses the storage server's heal while a PersistentVolume
// of the VNF is Bound, and deletes them otherwise.
func (x *storage) healStart(ctx context.Context, r *plumbing.Runner, c plumbing.Cluster, _ []lcm.Node) error {
	if len(x.params.PVRegistrationParams) == 0 {
		return nil
	}
	pvs, err := x.pvs()
	if err != nil {
		return err
	}
	var names []string
	for _, pv := range pvs {
		names = append(names, pv.Name)
	}
	return r.Once(ctx, StepDeletePV, c.ControlPlane, func(ctx context.Context) (lcm.Result, error) {
		return DeletePVs(ctx, c.API, names, x.pvOptions())
	})
}

// pvOptions are the PersistentVolume steps' options.
func (x *storage) pvOptions() PVOptions {
	return PVOptions{Instance: x.opts.Instance, Timeout: x.opts.PVTimeout}
}

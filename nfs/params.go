package nfs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// ClusterParamKey is the top-level additionalParams key of a Kubernetes
// cluster VNF's parameters, whose storage_server and
// pv_registration_params this package owns ([StorageParams]).
const ClusterParamKey = "k8s_cluster_installation_param"

// StorageParams is this package's part of k8s_cluster_installation_param.
// A Kubernetes cluster driver embeds it in its own parameter struct, so
// that the one object decodes strictly into every domain package's part.
// Its name is its own, not ClusterParams, because Go names an embedded
// field after its type: two embedded ClusterParams of different packages
// in one struct do not compile.
type StorageParams struct {
	// StorageServer is storage_server: the VM that exports its Cinder
	// volumes over NFS. nil when the request has none.
	StorageServer *StorageServer `json:"storage_server"`
	// PVRegistrationParams is pv_registration_params: the
	// PersistentVolumes to register on the storage server's exports.
	PVRegistrationParams []PVRegistration `json:"pv_registration_params"`
}

// Validate checks what involves both keys: pv_registration_params needs
// a storage_server, and no manifest is registered twice. Each key's own
// fields are checked by its type's Validate.
func (p *StorageParams) Validate(v *lcm.Validator) {
	if len(p.PVRegistrationParams) == 0 {
		return
	}
	if p.StorageServer == nil {
		v.At("pv_registration_params").Errorf("needs storage_server: the PersistentVolumes live on its NFS exports")
	}
	seen := map[string]int{}
	for i, r := range p.PVRegistrationParams {
		if r.PVManifestFilePath == "" {
			continue
		}
		if j, dup := seen[r.PVManifestFilePath]; dup {
			v.At("pv_registration_params").Index(i).At("pv_manifest_file_path").Errorf("repeats pv_registration_params[%d].pv_manifest_file_path %q", j, r.PVManifestFilePath)
			continue
		}
		seen[r.PVManifestFilePath] = i
	}
	p.validateManifests(v)
}

// validateManifests reads each PersistentVolume manifest from the VNF
// package ([ReadPV]) and checks it against the exports: its spec.nfs.path
// must be one of the export_dirs (a PersistentVolume on a directory
// nobody exports would never mount), and no two manifests name the same
// PersistentVolume. Without a package (validation of the form alone) or
// with a path already refused, there is nothing to read.
func (p *StorageParams) validateManifests(v *lcm.Validator) {
	pkg := v.Package()
	if pkg == nil {
		return
	}
	var exported []string
	s := p.StorageServer
	judge := s != nil && s.exportDirsOK
	if judge {
		for _, e := range s.NFSServerSetupParams {
			if !slices.Contains(exported, e.ExportDir) {
				exported = append(exported, e.ExportDir)
			}
		}
	}
	names := map[string]int{}
	files := map[string]bool{}
	for i, r := range p.PVRegistrationParams {
		fv := v.At("pv_registration_params").Index(i).At("pv_manifest_file_path")
		if r.PVManifestFilePath == "" || files[r.PVManifestFilePath] {
			continue // a repeated file is reported as such
		}
		files[r.PVManifestFilePath] = true
		if _, err := pkg.Stat(r.PVManifestFilePath); err != nil {
			continue // PVRegistration.Validate reported it
		}
		pv, err := ReadPV(pkg, r.PVManifestFilePath)
		if err != nil {
			fv.Errorf("%s %v", r.PVManifestFilePath, err)
			continue
		}
		if j, dup := names[pv.Name]; dup {
			fv.Errorf("%s names PersistentVolume %s, as pv_registration_params[%d]'s manifest does", r.PVManifestFilePath, pv.Name, j)
			continue
		}
		names[pv.Name] = i
		if judge && !slices.Contains(exported, pv.Path) {
			fv.Errorf("%s mounts spec.nfs.path %s, which no export_dir of storage_server.nfs_server_setup_params exports (%s)", r.PVManifestFilePath, pv.Path, strings.Join(exported, ", "))
		}
	}
}

// StorageServer is storage_server: how to reach the storage server VM, the
// Cinder volumes to mount on it and the directories to export.
type StorageServer struct {
	// SSHCPName is ssh_cp_name, the connection point (a port, or a
	// floating IP) the driver connects to.
	SSHCPName string `json:"ssh_cp_name"`
	// NICCPName is nic_cp_name, the storage server's port on the cluster
	// network. Optional; not in the spec's table, but Tacker reads it to
	// recognise the storage server among heal targets.
	NICCPName string `json:"nic_cp_name"`
	// Username and Password are the VM's login.
	Username string        `json:"username"`
	Password remote.Secret `json:"password"`
	// CinderVolumeSetupParams is cinder_volume_setup_params: the volumes
	// to mount, at least one.
	CinderVolumeSetupParams []CinderVolume `json:"cinder_volume_setup_params"`
	// NFSServerSetupParams is nfs_server_setup_params: the directories to
	// export, at least one.
	NFSServerSetupParams []Export `json:"nfs_server_setup_params"`

	// exportDirsOK says that validation found every export_dir valid, so
	// that the manifests' paths are judged against them.
	exportDirsOK bool
}

// CinderVolume is one entry of cinder_volume_setup_params.
type CinderVolume struct {
	// VolumeResourceID is volume_resource_id: the OS::Cinder::Volume's
	// resource name in the VNF's Heat template.
	VolumeResourceID string `json:"volume_resource_id"`
	// MountTo is mount_to: the directory the volume is mounted on, clean
	// and absolute after validation.
	MountTo string `json:"mount_to"`
}

// Export is one entry of nfs_server_setup_params: one line of the
// storage server's exports.
type Export struct {
	// ExportDir is export_dir: the directory to export, on one of the
	// volumes, clean and absolute after validation.
	ExportDir string `json:"export_dir"`
	// ExportTo is export_to: the clients the directory is exported to.
	ExportTo Network `json:"export_to"`
}

// Validate checks every field of the storage server and its lists; see
// the package documentation for the rules.
func (s *StorageServer) Validate(v *lcm.Validator) {
	if v.Required("ssh_cp_name", s.SSHCPName) {
		heat.ValidateResourceName(v, "ssh_cp_name", s.SSHCPName)
	}
	heat.ValidateResourceName(v, "nic_cp_name", s.NICCPName)
	if v.Required("username", s.Username) {
		v.Username("username", s.Username)
	}
	v.Required("password", s.Password.Reveal()) // "is required" never quotes the value

	mounts, mountsOK := s.validateVolumes(v.At("cinder_volume_setup_params"))
	s.validateExports(v.At("nfs_server_setup_params"), mounts, mountsOK)
}

// validateVolumes checks cinder_volume_setup_params (v is at the list)
// and returns the clean mount_to directories, and whether every volume's
// mount_to was valid.
func (s *StorageServer) validateVolumes(v *lcm.Validator) (mounts []string, allOK bool) {
	if len(s.CinderVolumeSetupParams) == 0 {
		v.Errorf("is required: at least one volume")
		return nil, false
	}
	allOK = true
	ids, dirs := map[string]int{}, map[string]int{}
	for i := range s.CinderVolumeSetupParams {
		vol := &s.CinderVolumeSetupParams[i]
		ev := v.Index(i)
		if ev.Required("volume_resource_id", vol.VolumeResourceID) {
			heat.ValidateResourceName(ev, "volume_resource_id", vol.VolumeResourceID)
			if j, dup := ids[vol.VolumeResourceID]; dup {
				ev.At("volume_resource_id").Errorf("repeats cinder_volume_setup_params[%d].volume_resource_id %q", j, vol.VolumeResourceID)
			} else {
				ids[vol.VolumeResourceID] = i
			}
		}
		if !ev.Required("mount_to", vol.MountTo) {
			allOK = false
			continue
		}
		dir, ok := ev.HostDataDir("mount_to", vol.MountTo)
		if !ok {
			allOK = false
			continue
		}
		vol.MountTo = dir
		if j, dup := dirs[dir]; dup {
			ev.At("mount_to").Errorf("repeats cinder_volume_setup_params[%d].mount_to %q", j, dir)
			continue
		}
		dirs[dir] = i
		mounts = append(mounts, dir)
	}
	return mounts, allOK
}

// validateExports checks nfs_server_setup_params (v is at the list)
// against the volumes' mount directories; mountsOK says whether every
// mount_to was valid, without which "lies on a volume" is not judged.
func (s *StorageServer) validateExports(v *lcm.Validator, mounts []string, mountsOK bool) {
	if len(s.NFSServerSetupParams) == 0 {
		v.Errorf("is required: at least one export")
		return
	}
	type pair struct{ dir, to string }
	seen := map[pair]int{}
	s.exportDirsOK = true
	for i := range s.NFSServerSetupParams {
		e := &s.NFSServerSetupParams[i]
		ev := v.Index(i)
		dirOK := false
		if ev.Required("export_dir", e.ExportDir) {
			if dir, ok := ev.HostDataDir("export_dir", e.ExportDir); ok {
				e.ExportDir, dirOK = dir, true
				if !mountsOK {
					s.exportDirsOK = false
				} else if !onVolume(dir, mounts) {
					s.exportDirsOK = false
					ev.At("export_dir").Errorf("must lie on a volume, in one of the mount_to directories (%s), got %q", strings.Join(mounts, ", "), dir)
				}
			}
		}
		if !dirOK {
			s.exportDirsOK = false
		}
		switch {
		case !e.ExportTo.IsValid():
			ev.At("export_to").Errorf("is required")
			continue
		case e.ExportTo.Prefix().Bits() == 0:
			ev.At("export_to").Errorf("must not be %s, every address: name the cluster's network", e.ExportTo)
			continue
		case e.ExportTo.Prefix().Addr().IsUnspecified() || e.ExportTo.Prefix().Addr().IsMulticast() ||
			netip.MustParsePrefix("0.0.0.0/8").Overlaps(e.ExportTo.Prefix()):
			ev.At("export_to").Errorf("must be the cluster's network or a node's address, got %s (a placeholder like the spec's 0.0.0.0 names no host)", e.ExportTo)
			continue
		}
		if !dirOK {
			continue
		}
		key := pair{e.ExportDir, e.ExportTo.String()}
		if j, dup := seen[key]; dup {
			ev.Errorf("repeats nfs_server_setup_params[%d]: %s to %s", j, key.dir, key.to)
			continue
		}
		seen[key] = i
	}
}

// onVolume reports whether dir is one of mounts or lies below one.
func onVolume(dir string, mounts []string) bool {
	for _, m := range mounts {
		if lcm.PathWithin(dir, m) {
			return true
		}
	}
	return false
}

// Network is export_to: the clients an export admits, an IP network. It
// decodes from a JSON string holding a network in CIDR notation
// ("10.10.0.0/24"), whose host bits it clears ("10.10.0.5/24" is
// "10.10.0.0/24"), or a single IP address ("10.10.0.5", which is
// "10.10.0.5/32"). The zero Network is not valid; it is what an empty
// string decodes to, which validation reports as required.
type Network struct {
	prefix netip.Prefix
}

// ParseNetwork parses export_to as [Network] decodes it.
func ParseNetwork(s string) (Network, error) {
	var n Network
	if err := n.UnmarshalText([]byte(s)); err != nil {
		return Network{}, err
	}
	return n, nil
}

// UnmarshalText implements [encoding.TextUnmarshaler]; see [Network]. An
// empty text is the zero Network.
func (n *Network) UnmarshalText(text []byte) error {
	s := string(text)
	if s == "" {
		*n = Network{}
		return nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("must be an IP network like 10.10.0.0/24 or an IP address, got %q", s)
		}
		*n = Network{p.Masked()}
		return nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return fmt.Errorf("must be an IP network like 10.10.0.0/24 or an IP address (host names, wildcards and netgroups are not supported), got %q", s)
	}
	ip = ip.Unmap()
	*n = Network{netip.PrefixFrom(ip, ip.BitLen())}
	return nil
}

// MarshalText implements [encoding.TextMarshaler]: the network in CIDR
// notation, "" for the zero Network.
func (n Network) MarshalText() ([]byte, error) {
	if !n.IsValid() {
		return []byte{}, nil
	}
	return []byte(n.prefix.String()), nil
}

// Prefix returns the network, its host bits cleared.
func (n Network) Prefix() netip.Prefix { return n.prefix }

// IsValid reports whether n holds a network: false for the zero Network.
func (n Network) IsValid() bool { return n.prefix.IsValid() }

// Contains reports whether the client address ip is in the network, as
// the NFS server judges it.
func (n Network) Contains(ip netip.Addr) bool { return n.prefix.Contains(ip.Unmap()) }

// String returns the network in CIDR notation ("10.10.0.0/24",
// "10.10.0.5/32"), as it goes into an exports line.
func (n Network) String() string {
	if !n.IsValid() {
		return ""
	}
	return n.prefix.String()
}

// PVRegistration is one entry of pv_registration_params: a
// PersistentVolume manifest to register on the storage server's exports.
type PVRegistration struct {
	// PVManifestFilePath is pv_manifest_file_path: the PersistentVolume
	// manifest in the VNF package, its canonical package path after
	// validation.
	PVManifestFilePath string `json:"pv_manifest_file_path"`
	// NFSServerCP is nfs_server_cp: the port (a resource of the VNF's
	// top-level Heat stack) whose first fixed IP becomes the manifest's
	// NFS server address.
	NFSServerCP string `json:"nfs_server_cp"`
}

// Validate checks that the manifest is in the VNF package and that
// nfs_server_cp is a Heat resource name.
func (r *PVRegistration) Validate(v *lcm.Validator) {
	if resolved, ok := v.PackageFile("pv_manifest_file_path", r.PVManifestFilePath); ok {
		r.PVManifestFilePath = resolved
	}
	if v.Required("nfs_server_cp", r.NFSServerCP) {
		heat.ValidateResourceName(v, "nfs_server_cp", r.NFSServerCP)
	}
}

// Group returns where Heat keeps the storage server: a server of the
// top-level stack, found by its ssh_cp_name (and nic_cp_name).
func (s StorageServer) Group() heat.Group {
	return heat.Group{Role: lcm.RoleStorage, SSHCP: s.SSHCPName, NICCP: s.NICCPName}
}

// Login returns the storage server's SSH login.
func (s StorageServer) Login() plumbing.Login {
	return plumbing.Login{Username: s.Username, Password: s.Password}
}

// VMs returns the storage server's group and login: the VMs an NFS
// extension brings to a cluster's hooks.
func (s StorageServer) VMs() plumbing.VMs {
	return plumbing.VMs{Groups: []heat.Group{s.Group()}, Logins: plumbing.Credentials{lcm.RoleStorage: s.Login()}}
}

package kubeadm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Files [InstallContainerd] owns or edits.
const (
	// ContainerdConfig is containerd's configuration; InstallContainerd
	// edits the keys it needs and keeps every other (the registry
	// package's config_path among them).
	ContainerdConfig = system.ContainerdConfigFile
	// CrictlConfig is crictl's configuration (kubernetes-sigs/cri-tools
	// docs/crictl.md): the runtime and image endpoints.
	CrictlConfig = "/etc/crictl.yaml"
	// ContainerdSocket is containerd's CRI endpoint: its default
	// grpc address (containerd defaults/defaults_unix.go), which kubeadm
	// finds by itself (cmd/kubeadm/app/constants/constants_unix.go
	// CRISocketContainerd, the same socket through the /var/run link).
	ContainerdSocket = "unix:///run/containerd/containerd.sock"
	// DefaultContainerdPackage is the package [InstallContainerd]
	// installs by default: the Ubuntu archive's containerd.
	DefaultContainerdPackage = "containerd"
)

// SandboxImage returns the pause image kubeadm of version v expects the
// runtime to use for pod sandboxes (kubeadm's preflight warns when the
// runtime's differs): registry.k8s.io/pause with PauseVersion of
// kubernetes/kubernetes cmd/kubeadm/app/constants/constants.go of that
// release ("3.10" from v1.31, "3.10.1" in v1.35).
func SandboxImage(v Version) string {
	minor := 0
	if _, m, ok := strings.Cut(string(v.Minor()), "."); ok {
		minor, _ = strconv.Atoi(m)
	}
	switch {
	case minor >= 35:
		return "registry.k8s.io/pause:3.10.1"
	case minor >= 31:
		return "registry.k8s.io/pause:3.10"
	default:
		return "registry.k8s.io/pause:3.9"
	}
}

// RuntimeOptions configure [InstallContainerd].
type RuntimeOptions struct {
	// Version is the Kubernetes release the node runs: it picks the
	// sandbox (pause) image ([SandboxImage]). [DefaultKubernetesVersion]
	// when empty.
	Version Version
	// Proxy is the proxy containerd pulls public images through; nil
	// removes mgmtkit's proxy drop-in.
	Proxy *system.Proxy
	// Package is the package that brings containerd:
	// [DefaultContainerdPackage] when empty; "containerd.io" on a node
	// that has Docker's repository.
	Package string
}

// InstallContainerd makes containerd the node's CRI runtime, as kubeadm
// wants it (kubernetes.io docs "Container Runtimes", containerd
// section):
//
//   - the package is installed (system.InstallPackages);
//   - [ContainerdConfig] has, besides whatever it held, the runc runtime
//     with SystemdCgroup = true (the kubelet's cgroupDriver is systemd,
//     which kubeadm sets; the two must agree) and the sandbox image
//     [SandboxImage], and the CRI plugin is not disabled. A version 2
//     file (containerd 1.x) keeps them under
//     plugins."io.containerd.grpc.v1.cri", a version 3 file (containerd
//     2.x) under plugins."io.containerd.cri.v1.runtime" and
//     "io.containerd.cri.v1.images".pinned_images (containerd
//     docs/cri/config.md). A missing file is created in the version of
//     the installed containerd. The file is edited as TOML by
//     system.ContainerdConfig, its one editor, which
//     registry.ConfigureRegistryTrust shares, so its config_path and
//     every other key stay; comments are lost when it is rewritten, and
//     it is rewritten only when a value differs;
//   - [CrictlConfig] points crictl at containerd;
//   - containerd runs with the proxy of o.Proxy (a drop-in naming a
//     root-only environment file), and is restarted only when its
//     configuration or drop-ins changed (system.ConfigureUnit, which
//     writes both under containerd's restart marker), also when the
//     change was made by a run that failed before the restart.
//
// A converged node costs three commands.
func InstallContainerd(ctx context.Context, h remote.Host, o RuntimeOptions) (lcm.Result, error) {
	pkg := o.Package
	if pkg == "" {
		pkg = DefaultContainerdPackage
	}
	var probs []lcm.Problem
	if pkg != "containerd" && pkg != "containerd.io" {
		probs = append(probs, lcm.Problem{Path: "Package", Message: fmt.Sprintf(`must be "containerd" or "containerd.io", got %q`, pkg)})
	}
	version := o.Version
	if version == "" {
		version = DefaultKubernetesVersion
	} else if _, msg := parseVersion(string(version)); msg != "" {
		probs = append(probs, lcm.Problem{Path: "Version", Message: fmt.Sprintf("%s, got %q", msg, version)})
	}
	probs = append(probs, o.Proxy.Check("Proxy")...)
	if probs != nil {
		return lcm.Unchanged, &lcm.ParamsError{Problems: probs}
	}

	res, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: []string{pkg}})
	if err != nil {
		return res, stepErr(h, "installing "+pkg, err)
	}
	files, err := remote.ReadFiles(ctx, h, []string{ContainerdConfig, CrictlConfig}, remote.FileOptions{Sudo: true})
	if err != nil {
		return res, stepErr(h, "reading containerd's configuration", err)
	}
	config, changes, err := containerdConfig(ctx, h, files[ContainerdConfig], SandboxImage(version))
	if err != nil {
		return res, stepErr(h, "editing containerd's configuration", err)
	}
	if crictl := crictlYAML(); !bytes.Equal(files[CrictlConfig], crictl) {
		if _, err := h.WriteFile(ctx, CrictlConfig, bytes.NewReader(crictl), remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true}); err != nil {
			return res, stepErr(h, "writing "+CrictlConfig, err)
		}
		res = res.And(lcm.Changed("wrote " + CrictlConfig))
	}
	unitFiles, absent := system.ProxyUnitFiles("containerd", o.Proxy)
	r, err := system.ConfigureUnit(ctx, h, system.UnitOptions{
		Unit: "containerd", Files: unitFiles, Absent: absent, Mode: 0o600,
		Inputs: map[string]string{ContainerdConfig: string(config)},
		Modes:  map[string]fs.FileMode{ContainerdConfig: 0o644},
		// containerd reads config.toml only at start.
		InputsNeedRestart: true,
	})
	res = res.And(r)
	if err != nil {
		return res, stepErr(h, "containerd.service", err)
	}
	if changes != nil {
		res = res.And(lcm.Changed(ContainerdConfig + ": " + strings.Join(changes, ", ")))
	}
	return res, nil
}

// crictlYAML is [CrictlConfig]'s content.
func crictlYAML() []byte {
	return []byte("# Managed by mgmtkit: crictl talks to containerd.\nruntime-endpoint: " + ContainerdSocket + "\nimage-endpoint: " + ContainerdSocket + "\n")
}

// containerdConfigHeader heads a config.toml InstallContainerd edited.
const containerdConfigHeader = "# Edited by mgmtkit: the CRI settings kubeadm needs; other settings are kept.\n"

// containerdConfig returns config.toml with kubeadm's settings
// (system.ContainerdConfig.Edit), and what it changed; old itself when it
// already has them. It asks containerd its release only when the file
// does not say its schema version.
func containerdConfig(ctx context.Context, h remote.Host, old []byte, sandbox string) ([]byte, []string, error) {
	cfg, err := system.ParseContainerdConfig(old)
	if err != nil {
		return nil, nil, err
	}
	changes, err := cfg.Edit(system.ContainerdSettings{EnableCRI: true, SystemdCgroup: true, SandboxImage: sandbox}, func() (int, error) {
		_, major, err := system.ContainerdRelease(ctx, h)
		return major, err
	})
	if err != nil || changes == nil {
		return old, nil, err
	}
	b, err := cfg.Encode()
	if err != nil {
		return nil, nil, err
	}
	return append([]byte(containerdConfigHeader), b...), changes, nil
}

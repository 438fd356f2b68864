package kubeadm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// Files [InstallContainerd] owns or edits.
const (
	// ContainerdConfig is containerd's configuration; InstallContainerd
	// edits the keys it needs and keeps every other (the registry
	// package's config_path among them).
	ContainerdConfig = "/etc/containerd/config.toml"
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
//     the installed containerd. The file is edited as TOML (go-toml v2),
//     so registry.ConfigureRegistryTrust's config_path and every other
//     key stay; comments are lost when it is rewritten, and it is
//     rewritten only when a value differs;
//   - [CrictlConfig] points crictl at containerd;
//   - containerd runs with the proxy of o.Proxy (a drop-in naming a
//     root-only environment file), and is restarted only when its
//     configuration or drop-ins changed (system.ConfigureUnit), also
//     when the change was made by a run that failed before the restart.
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
	marker := system.PendingDir + "/mgmtkit-containerd-config"
	files, err := remote.ReadFiles(ctx, h, []string{ContainerdConfig, CrictlConfig, marker}, remote.FileOptions{Sudo: true})
	if err != nil {
		return res, stepErr(h, "reading containerd's configuration", err)
	}
	config, changes, err := containerdConfig(ctx, h, files[ContainerdConfig], SandboxImage(version))
	if err != nil {
		return res, stepErr(h, ContainerdConfig, err)
	}
	// A restart owed for config.toml survives a run that fails before
	// it: the marker is written before the file and removed once
	// ConfigureUnit has taken the change (see configureDaemon).
	_, owed := files[marker]
	if config != nil {
		if !owed {
			if _, err := h.WriteFile(ctx, marker, strings.NewReader(ContainerdConfig+"\n"), remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true}); err != nil {
				return res, stepErr(h, "writing "+marker, err)
			}
			owed = true
		}
		if _, err = h.WriteFile(ctx, ContainerdConfig, bytes.NewReader(config), remote.FileOptions{Sudo: true}); err != nil {
			return res, stepErr(h, "writing "+ContainerdConfig, err)
		}
		res = res.And(lcm.Changed(ContainerdConfig + ": " + strings.Join(changes, ", ")))
	}
	if crictl := crictlYAML(); !bytes.Equal(files[CrictlConfig], crictl) {
		if _, err := h.WriteFile(ctx, CrictlConfig, bytes.NewReader(crictl), remote.FileOptions{Mode: 0o644, Owner: "root", Group: "root", Sudo: true}); err != nil {
			return res, stepErr(h, "writing "+CrictlConfig, err)
		}
		res = res.And(lcm.Changed("wrote " + CrictlConfig))
	}
	unitFiles, absent := proxyUnitFiles("containerd", o.Proxy)
	r, err := system.ConfigureUnit(ctx, h, system.UnitOptions{
		Unit: "containerd", Files: unitFiles, Absent: absent, Mode: 0o600,
		// containerd reads config.toml only at start.
		InputsChanged: owed, InputsNeedRestart: true,
	})
	res = res.And(r)
	if err != nil {
		return res, stepErr(h, "containerd.service", err)
	}
	if owed {
		if _, err := remote.RemoveFiles(ctx, h, []string{marker}, nil, remote.FileOptions{Sudo: true}); err != nil {
			return res, stepErr(h, "removing "+marker, err)
		}
	}
	return res, nil
}

// crictlYAML is [CrictlConfig]'s content.
func crictlYAML() []byte {
	return []byte("# Managed by mgmtkit: crictl talks to containerd.\nruntime-endpoint: " + ContainerdSocket + "\nimage-endpoint: " + ContainerdSocket + "\n")
}

// criPluginNames returns the names by which disabled_plugins can turn off
// containerd's CRI: the plugin ID "cri" (containerd.io's packaged
// config.toml, docker/containerd-packaging common/containerd.toml), its
// URI, and containerd 2's image and runtime plugins.
func criPluginNames() []string {
	return []string{"cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime"}
}

// containerdConfig returns config.toml with kubeadm's settings, and what
// it changed; nil when old already has them. It asks containerd its
// release only when the file does not say its schema version.
func containerdConfig(ctx context.Context, h remote.Host, old []byte, sandbox string) ([]byte, []string, error) {
	cfg := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := toml.Unmarshal(old, &cfg); err != nil {
			return nil, nil, fmt.Errorf("not valid TOML (%v): fix it by hand; mgmtkit will not overwrite it", err)
		}
	}
	var changes []string
	if list, ok := cfg["disabled_plugins"].([]any); ok {
		kept := slices.DeleteFunc(slices.Clone(list), func(v any) bool {
			s, _ := v.(string)
			return slices.Contains(criPluginNames(), s)
		})
		if len(kept) != len(list) {
			changes = append(changes, "CRI plugin enabled")
			if len(kept) == 0 {
				delete(cfg, "disabled_plugins")
			} else {
				cfg["disabled_plugins"] = kept
			}
		}
	}
	version, _ := cfg["version"].(int64)
	switch {
	case version > 3:
		return nil, nil, fmt.Errorf("version %d, which no containerd reads: fix it by hand", version)
	case version < 2 && len(cfg) > 0:
		// containerd.io's packaged file (disabled_plugins = ["cri"] and
		// nothing else) was emptied above: that one is rewritten.
		return nil, nil, errors.New("no version (schema version 1), which mgmtkit does not edit: write `version = 2` (containerd 1.x) or convert it with `containerd config migrate` (2.x), then run again")
	case version < 2:
		_, major, err := system.ContainerdRelease(ctx, h)
		if err != nil {
			return nil, nil, err
		}
		version = 2
		if major >= 2 {
			version = 3
		}
		cfg["version"] = version
		changes = append(changes, "version "+strconv.FormatInt(version, 10))
	}
	runtimePlugin, imagesPlugin, sandboxKeys := "io.containerd.grpc.v1.cri", "io.containerd.grpc.v1.cri", []string{"sandbox_image"}
	if version == 3 {
		runtimePlugin, imagesPlugin, sandboxKeys = "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", []string{"pinned_images", "sandbox"}
	}
	runc := []string{"plugins", runtimePlugin, "containerd", "runtimes", "runc"}
	for _, s := range []struct {
		keys []string
		val  any
		what string
	}{
		{append(slices.Clone(runc), "runtime_type"), "io.containerd.runc.v2", "runc runtime"},
		{append(slices.Clone(runc), "options", "SystemdCgroup"), true, "SystemdCgroup = true"},
		{append([]string{"plugins", imagesPlugin}, sandboxKeys...), sandbox, "sandbox image " + sandbox},
	} {
		changed, err := setKey(cfg, s.val, s.keys...)
		if err != nil {
			return nil, nil, err
		}
		if changed {
			changes = append(changes, s.what)
		}
	}
	if changes == nil {
		return nil, nil, nil
	}
	b, err := toml.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	return append([]byte("# Edited by mgmtkit: the CRI settings kubeadm needs; other settings are kept.\n"), b...), changes, nil
}

// setKey sets the value at the dotted keys of cfg, creating tables, and
// reports whether it differed. A key on the way that is not a table is
// an error: mgmtkit does not replace what it does not understand.
func setKey(cfg map[string]any, val any, keys ...string) (bool, error) {
	t := cfg
	for i, k := range keys[:len(keys)-1] {
		switch next := t[k].(type) {
		case map[string]any:
			t = next
		case nil:
			n := map[string]any{}
			t[k] = n
			t = n
		default:
			return false, fmt.Errorf("%s is a %T, not a table: fix it by hand", strings.Join(keys[:i+1], "."), next)
		}
	}
	last := keys[len(keys)-1]
	if reflect.DeepEqual(t[last], val) {
		return false, nil
	}
	t[last] = val
	return true, nil
}

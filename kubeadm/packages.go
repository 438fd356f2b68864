package kubeadm

import (
	"context"
	"fmt"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
	"github.com/mgmtkit/mgmtkit/system"
)

// The Kubernetes package repository (pkgs.k8s.io, one repository per
// minor release; kubernetes.io docs "Installing kubeadm", Debian-based
// distributions).
const (
	// KubernetesKeyring is the repository's signing key, dearmored.
	KubernetesKeyring = "/etc/apt/keyrings/kubernetes-apt-keyring.gpg"
	// KubernetesSourcesList names the repository for apt.
	KubernetesSourcesList = "/etc/apt/sources.list.d/kubernetes.list"
)

// kubernetesPackages returns what [InstallKubernetes] installs and holds.
// Of their dependencies (kubernetes/release
// cmd/krel/templates/latest/metadata.yaml and the packages' .spec files)
// apt brings kubernetes-cni (kubelet's, >= 1.2.0 from 1.28), util-linux
// and mount; kubeadm has none from 1.32 on, so cri-tools, which crictl
// and [CrictlConfig] are for, is installed by name (unpinned, not held:
// it is not versioned with Kubernetes). kubeadm's fellow packages come
// first: apt installs every named package at its pin in any order, the
// simulated apt only when a pinned package is named before what depends
// on it.
func kubernetesPackages() []string { return []string{"kubelet", "kubectl", "kubeadm"} }

// KubernetesRepo returns the pkgs.k8s.io repository of v's minor
// release, "https://pkgs.k8s.io/core:/stable:/v1.36/deb/".
func KubernetesRepo(v Version) string {
	return "https://pkgs.k8s.io/core:/stable:/v" + string(v.Minor()) + "/deb/"
}

// PackageVersion returns the Debian version pkgs.k8s.io gives the
// kubeadm, kubelet and kubectl packages of a patch release: "1.36.3" is
// "1.36.3-1.1" (the OBS build's "-1.1" revision).
func PackageVersion(v Version) string { return string(v) + "-1.1" }

// PackagesOptions configure [InstallKubernetes].
type PackagesOptions struct {
	// Version is the Kubernetes release: a minor ("1.36", the newest
	// patch the repository has when first installed) or a patch
	// ("1.36.3", installed exactly). [DefaultKubernetesVersion] when
	// empty.
	Version Version
	// Proxy is the proxy curl fetches the repository key through, and
	// the kubelet's; nil removes mgmtkit's kubelet proxy drop-in. apt
	// uses [PrepareNode]'s apt proxy.
	Proxy *system.Proxy
}

// InstallKubernetes installs kubeadm, kubelet and kubectl from
// pkgs.k8s.io, as kubernetes.io's "Installing kubeadm" does, each part
// only when needed:
//
//   - the repository of o.Version's minor, with its key
//     (`curl -fsSL KubernetesRepo/Release.key`, `gpg --dearmor`, only when
//     [KubernetesKeyring] is missing), named in [KubernetesSourcesList]
//     (system.AddAptRepository, which runs `apt-get update` when either
//     changed);
//   - the packages are installed, with cri-tools (pinned to
//     [PackageVersion] for a patch release) and held (`apt-mark hold`,
//     pinned or not; cri-tools is not), so that an upgrade of the node
//     does not move Kubernetes under kubeadm (system.InstallPackages);
//   - the kubelet is enabled, with o.Proxy in a root-only environment
//     file. It is not started: it runs once kubeadm init or join has
//     configured it (kubeadm's kubelet-start phase restarts it); if it
//     already runs and its proxy changed, it is restarted.
//
// Moving an installed node to another minor release is an upgrade
// (kubeadm upgrade), which this step does not do: it writes the new
// repository but leaves installed packages of a minor-only Version as
// they are.
func InstallKubernetes(ctx context.Context, h remote.Host, o PackagesOptions) (lcm.Result, error) {
	version := o.Version
	var probs []lcm.Problem
	if version == "" {
		version = DefaultKubernetesVersion
	} else if canonical, msg := parseVersion(string(version)); msg != "" {
		probs = append(probs, lcm.Problem{Path: "Version", Message: fmt.Sprintf("%s, got %q", msg, version)})
	} else {
		version = canonical
	}
	probs = append(probs, o.Proxy.Check("Proxy")...)
	if probs != nil {
		return lcm.Unchanged, &lcm.ParamsError{Problems: probs}
	}
	repo, err := system.AddAptRepository(ctx, h, system.AptRepositoryOptions{
		SourcesFile: KubernetesSourcesList, URI: KubernetesRepo(version), Suite: "/",
		Keyring: KubernetesKeyring, KeyURL: KubernetesRepo(version) + "Release.key", Proxy: o.Proxy,
		Comment: "Kubernetes " + string(version.Minor()) + " packages.",
	})
	res := repo
	if err != nil {
		return res, stepErr(h, "the Kubernetes package repository", err)
	}
	pkgs := kubernetesPackages()
	if version.IsPatch() {
		for i := range pkgs {
			pkgs[i] += "=" + PackageVersion(version)
		}
	}
	pkgs = append(pkgs, "cri-tools")
	r, err := system.InstallPackages(ctx, h, system.PackagesOptions{Packages: pkgs, Hold: kubernetesPackages(), SkipUpdate: repo.Changed})
	res = res.And(r)
	if err != nil {
		return res, stepErr(h, "installing kubeadm, kubelet and kubectl", err)
	}
	r, err = kubeletUnit(ctx, h, o.Proxy)
	res = res.And(r)
	if err != nil {
		return res, stepErr(h, "kubelet.service", err)
	}
	return res, nil
}

// kubeletUnit gives the kubelet its proxy drop-in (or removes it) and
// enables it without starting it: kubeadm's kubelet-start phase starts it
// once it has configured it (system.ConfigureUnit with NoStart). A
// running kubelet whose drop-ins changed is restarted, also when the
// change was made by a run that failed before the restart (the unit's
// restart marker).
func kubeletUnit(ctx context.Context, h remote.Host, p *system.Proxy) (lcm.Result, error) {
	files, absent := system.ProxyUnitFiles("kubelet", p)
	return system.ConfigureUnit(ctx, h, system.UnitOptions{Unit: "kubelet", Files: files, Absent: absent, Mode: 0o600, NoStart: true})
}

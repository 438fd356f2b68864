package kube

import (
	"context"
	"fmt"
	"strings"

	"github.com/mgmtkit/mgmtkit/internal/sim/ubuntu"
	"github.com/mgmtkit/mgmtkit/remote/sshtest"
)

// The Kubernetes package repositories of pkgs.k8s.io, as their
// sources.list entries name them (kubernetes.io/docs/setup/production-
// environment/tools/kubeadm/install-kubeadm: "deb [signed-by=...]
// https://pkgs.k8s.io/core:/stable:/v1.36/deb/ /").
const (
	// KubernetesRepo136 is the v1.36 repository.
	KubernetesRepo136 = "https://pkgs.k8s.io/core:/stable:/v1.36/deb/"
	// KubernetesRepo135 is the v1.35 repository.
	KubernetesRepo135 = "https://pkgs.k8s.io/core:/stable:/v1.35/deb/"
)

// kubernetesVersions are the kubeadm, kubelet and kubectl versions of a
// repository, as pkgs.k8s.io names them; the last is the newest, which
// apt-get installs without a pin.
func kubernetesVersions(repo string) []string {
	if repo == KubernetesRepo135 {
		return []string{"1.35.0-1.1", "1.35.3-1.1"}
	}
	return []string{"1.36.0-1.1", "1.36.1-1.1", "1.36.2-1.1"}
}

// kubeletUnitFile is the kubelet package's unit (kubernetes/release
// packages/deb kubelet/lib/systemd/system/kubelet.service).
const kubeletUnitFile = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`

// kubeadmDropIn is the kubeadm package's drop-in for kubelet.service
// (kubernetes/release: kubeadm/10-kubeadm.conf): the kubeconfig and
// configuration kubeadm writes, and kubeadm-flags.env.
const kubeadmDropIn = `# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`

const haproxyUnitFile = `[Unit]
Description=HAProxy Load Balancer
Documentation=man:haproxy(1)
Documentation=file:/usr/share/doc/haproxy/configuration.txt.gz
After=network-online.target rsyslog.service
Wants=network-online.target

[Service]
EnvironmentFile=-/etc/default/haproxy
EnvironmentFile=-/etc/sysconfig/haproxy
Environment="CONFIG=/etc/haproxy/haproxy.cfg" "PIDFILE=/run/haproxy.pid" "EXTRAOPTS=-S /run/haproxy-master.sock"
ExecStartPre=/usr/sbin/haproxy -Ws -f $CONFIG -c -q $EXTRAOPTS
ExecStart=/usr/sbin/haproxy -Ws -f $CONFIG -p $PIDFILE $EXTRAOPTS
ExecReload=/usr/sbin/haproxy -Ws -f $CONFIG -c -q $EXTRAOPTS
ExecReload=/bin/kill -USR2 $MAINPID
KillMode=mixed
Restart=always
SuccessExitStatus=143
Type=notify

[Install]
WantedBy=multi-user.target
`

// haproxyDefaultCfg is Ubuntu's packaged haproxy.cfg, less its
// errorfile lines: no frontend, so nothing listens.
const haproxyDefaultCfg = `global
	log /dev/log	local0
	log /dev/log	local1 notice
	chroot /var/lib/haproxy
	stats socket /run/haproxy/admin.sock mode 660 level admin expose-fd listeners
	stats timeout 30s
	user haproxy
	group haproxy
	daemon

defaults
	log	global
	mode	http
	option	httplog
	option	dontlognull
	timeout connect 5000
	timeout client  50000
	timeout server  50000
`

const keepalivedUnitFile = `[Unit]
Description=Keepalive Daemon (LVS and VRRP)
After=network-online.target
Wants=network-online.target
# Only start if there is a configuration file
ConditionFileNotEmpty=/etc/keepalived/keepalived.conf

[Service]
Type=notify
# Read configuration variable file if it is present
EnvironmentFile=-/etc/default/keepalived
ExecStart=/usr/sbin/keepalived --dont-fork $DAEMON_ARGS
ExecReload=/bin/kill -HUP $MAINPID

[Install]
WantedBy=multi-user.target
`

// AddPackages adds the Kubernetes packages to a catalog, their programs
// bound to the world:
//
//   - from the pkgs.k8s.io repositories v1.36 ([KubernetesRepo136]:
//     1.36.0, 1.36.1, 1.36.2, "-1.1") and v1.35 ([KubernetesRepo135]:
//     1.35.0, 1.35.3): kubeadm ([KubeadmTool]; Depends:
//     cri-tools, and ships kubelet.service's 10-kubeadm.conf drop-in),
//     kubelet (kubelet.service, `kubelet --version`; Depends: iptables,
//     kubernetes-cni, libc6, mount, util-linux), kubectl (the kubectl
//     tool given, or one that only answers `kubectl version --client`
//     when nil), cri-tools (1.36.0-1.1, 1.35.0-1.1: crictl, reusing the
//     crictl of the cri-tools already in the catalog, from
//     containers.AddPackages) and kubernetes-cni (1.8.0-1.1 in v1.36;
//     the catalog holds one repository per package version, so v1.35's
//     is 1.7.1-1.1 here while pkgs.k8s.io publishes 1.8.0-1.1 in both).
//     The dependencies are those of the published Packages indexes
//     (pkgs.k8s.io core:/stable:/v1.35: kubeadm "cri-tools (>= 1.30.0)";
//     kubelet "iptables (>= 1.4.21), kubernetes-cni (>= 1.2.0), libc6,
//     mount, util-linux"), without the version constraints the catalog
//     does not model: kubeadm does not bring kubelet or kubectl, which
//     the install guide installs together;
//   - from the Ubuntu archive: haproxy 2.4.24-0ubuntu0.22.04.1
//     (haproxy.service, /etc/haproxy/haproxy.cfg, `haproxy -c -f`) and
//     keepalived 1:2.2.4-0.2build1 (keepalived.service, `keepalived
//     --config-test -f`), jammy's versions.
func AddPackages(cat *ubuntu.Catalog, w *World, kubectl ubuntu.Tool) {
	if kubectl == nil {
		kubectl = kubectlVersionTool
	}
	var crictl ubuntu.Tool
	for _, p := range cat.Versions("cri-tools") {
		if t := p.Tools["/usr/bin/crictl"]; t != nil {
			crictl = t
			break
		}
	}
	kubeletUnit := ubuntu.Unit{Name: "kubelet.service", File: kubeletUnitFile}
	repos := []struct{ repo, criTools, cni string }{
		{KubernetesRepo136, "1.36.0-1.1", "1.8.0-1.1"},
		{KubernetesRepo135, "1.35.0-1.1", "1.7.1-1.1"},
	}
	for _, r := range repos {
		repo := strings.TrimSuffix(r.repo, "/")
		ct := ubuntu.Package{Name: "cri-tools", Version: r.criTools, Repo: repo, Description: "Command-line utility for interacting with a container runtime"}
		if crictl != nil {
			ct.Tools = map[string]ubuntu.Tool{"/usr/bin/crictl": crictl}
		}
		cat.Add(ct)
		cat.Add(ubuntu.Package{Name: "kubernetes-cni", Version: r.cni, Repo: repo, Description: "Binaries required to provision kubernetes container networking",
			Files: map[string]string{
				"/opt/cni/bin/bridge": "ELF", "/opt/cni/bin/host-local": "ELF", "/opt/cni/bin/loopback": "ELF",
				"/opt/cni/bin/portmap": "ELF", "/opt/cni/bin/bandwidth": "ELF", "/opt/cni/bin/firewall": "ELF",
			}})
		for _, v := range kubernetesVersions(r.repo) {
			cat.Add(ubuntu.Package{Name: "kubeadm", Version: v, Repo: repo, Depends: []string{"cri-tools"},
				Description: "Command-line utility for administering a Kubernetes cluster",
				Files:       map[string]string{"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": kubeadmDropIn},
				Tools:       map[string]ubuntu.Tool{"/usr/bin/kubeadm": KubeadmTool(w)}})
			cat.Add(ubuntu.Package{Name: "kubelet", Version: v, Repo: repo, Depends: []string{"iptables", "kubernetes-cni", "libc6", "mount", "util-linux"},
				Description: "Node agent for Kubernetes clusters",
				Files:       map[string]string{"/etc/default/kubelet": "KUBELET_EXTRA_ARGS=\n"},
				Tools:       map[string]ubuntu.Tool{"/usr/bin/kubelet": kubeletVersionTool},
				Units:       []ubuntu.Unit{kubeletUnit}})
			cat.Add(ubuntu.Package{Name: "kubectl", Version: v, Repo: repo,
				Description: "Command-line utility for interacting with a Kubernetes cluster",
				Tools:       map[string]ubuntu.Tool{"/usr/bin/kubectl": kubectl}})
		}
	}
	cat.Add(ubuntu.Package{Name: "haproxy", Version: haproxyVersion, Description: "fast and reliable load balancing reverse proxy",
		Files: map[string]string{haproxyCfgFile: haproxyDefaultCfg},
		Tools: map[string]ubuntu.Tool{"/usr/sbin/haproxy": haproxyTool},
		Units: []ubuntu.Unit{{Name: "haproxy.service", File: haproxyUnitFile, OnStart: w.haproxyStart, OnStop: haproxyStop, OnReload: w.haproxyStart}}})
	cat.Add(ubuntu.Package{Name: "keepalived", Version: keepalivedVersion, Description: "Failover and monitoring daemon for LVS clusters",
		Tools: map[string]ubuntu.Tool{"/usr/sbin/keepalived": keepalivedTool},
		Units: []ubuntu.Unit{{Name: "keepalived.service", File: keepalivedUnitFile, OnStart: w.keepalivedStart, OnStop: keepalivedStop, OnReload: w.keepalivedStart}}})
}

// kubeletVersionTool is /usr/bin/kubelet: --version ("Kubernetes
// v1.36.2"); the daemon is kubelet.service.
func kubeletVersionTool(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	if len(p.Args) == 2 && p.Args[1] == "--version" {
		fmt.Fprintf(p.Stdout, "Kubernetes %s\n", kubeVersion(m, "kubelet"))
		return 0
	}
	return p.Fail(2, "%s: not modelled by internal/sim/kube (the kubelet runs as kubelet.service)", strings.Join(p.Args[1:], " "))
}

// kubectlVersionTool is a kubectl that only tells its version.
func kubectlVersionTool(_ context.Context, m *ubuntu.Machine, p *sshtest.Process) int {
	if len(p.Args) >= 2 && p.Args[1] == "version" {
		fmt.Fprintf(p.Stdout, "Client Version: %s\nKustomize Version: v5.7.1\n", kubeVersion(m, "kubectl"))
		return 0
	}
	return p.Fail(2, "%s: this kubectl only answers `kubectl version` (internal/sim/kube AddPackages without a kubectl tool)", strings.Join(p.Args[1:], " "))
}
